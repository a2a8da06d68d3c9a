"""NVIDIA's driver and CUDA stack, as package names and loaded modules tell it."""

import fnmatch
import functools
import re
from typing import TypedDict

# As Debian non-free, Ubuntu and NVIDIA's CUDA repository name them (a real Ubuntu 24.04
# CUDA 13 host: tests/fixtures/cuda-host); a CUDA library left out fails the purge simulation.
NVIDIA_PACKAGE_PATTERNS = (
    "nvidia-*", "libnvidia-*", "cuda", "cuda-*", "libcuda*", "libcudnn*", "libnccl*",
    "xserver-xorg-video-nvidia*", "libcublas*", "libcufft*", "libcufile*", "libcurand*",
    "libcusolver*", "libcusparse*", "libnpp*", "libnvfatbin*", "libnvjitlink*", "libnvjpeg*",
    "libnvptxcompiler*", "libnvvm*", "nsight-compute*",
)  # fmt: skip
# Caught by the patterns but not driver or CUDA: free EGL libraries (main), nvidia-texture-tools.
NVIDIA_PACKAGE_EXCEPTIONS = (
    "libnvidia-egl-wayland*", "libnvidia-egl-gbm*", "libnvidia-egl-xcb*", "libnvidia-egl-xlib*",
    "nvidia-texture-tools",
)  # fmt: skip


class NvidiaStackDict(TypedDict):
    packages: list[str]
    modules: list[str]


_NVIDIA, _NOT_NVIDIA = (
    re.compile("|".join(map(fnmatch.translate, p)))
    for p in (NVIDIA_PACKAGE_PATTERNS, NVIDIA_PACKAGE_EXCEPTIONS)
)


@functools.lru_cache(maxsize=8192)  # asked of every installed package
def is_nvidia_package(name: str) -> bool:
    """Whether a package is part of NVIDIA's driver or CUDA stack."""
    return bool(_NVIDIA.match(name)) and not _NOT_NVIDIA.match(name)


def nvidia_stack(packages: dict[str, str], modules: list[str]) -> NvidiaStackDict:
    """``NvidiaStack``'s answer from an ``InstalledPackages`` listing and ``LoadedModules``."""
    names = sorted(name for name in packages if is_nvidia_package(name))
    loaded = sorted({m.strip() for m in modules if m.strip().startswith("nvidia")})
    return {"packages": names, "modules": loaded}
