"""NVIDIA's driver and CUDA stack, as package names and loaded modules tell it: what
preflight refuses (or the CUDA migration removes) and the NvidiaStack fact answers."""

from __future__ import annotations

import fnmatch
import re
from typing import TypedDict

# NVIDIA's driver and CUDA stack as Debian and Ubuntu package it (Debian non-free:
# nvidia-driver, nvidia-kernel-dkms, libcuda1, libnvidia-*; Ubuntu: nvidia-driver-<branch>,
# nvidia-dkms-<branch>, libnvidia-compute-<branch>, xserver-xorg-video-nvidia-<branch>;
# NVIDIA's own CUDA repository: cuda, cuda-*, libcudnn*, libnccl*, and CUDA's libraries and
# tools under their own names, as on a real Ubuntu 24.04 CUDA 13 host (tests/fixtures/
# cuda-host: libcublas-13-0, libcufft-13-0, libcufile-13-0, libcurand-13-0,
# libcusolver-13-0, libcusparse-13-0, libnpp-13-0, libnvfatbin-13-0, libnvjitlink-13-0,
# libnvjpeg-13-0, libnvptxcompiler-13-0, libnvvm-13-0, nsight-compute-2025.3.1 and their
# -dev packages). Left out, those make apt's simulation of purging the rest fail: they
# depend on cuda-toolkit-config-common.
NVIDIA_PACKAGE_PATTERNS = (
    "nvidia-*",
    "libnvidia-*",
    "cuda",
    "cuda-*",
    "libcuda*",
    "libcudnn*",
    "libnccl*",
    "xserver-xorg-video-nvidia*",
    "libcublas*",
    "libcufft*",
    "libcufile*",
    "libcurand*",
    "libcusolver*",
    "libcusparse*",
    "libnpp*",
    "libnvfatbin*",
    "libnvjitlink*",
    "libnvjpeg*",
    "libnvptxcompiler*",
    "libnvvm*",
    "nsight-compute*",
)
# Names the patterns catch that are not NVIDIA's driver or CUDA: the free EGL platform
# libraries in Debian/Ubuntu main (source egl-wayland, egl-gbm, egl-x11) that Mesa
# desktops carry, and nvidia-texture-tools (image tools, no driver). Globs, as the
# patterns, so the host-side purge simulation (facts.apt.PackagePurge) uses them too.
NVIDIA_PACKAGE_EXCEPTIONS = (
    "libnvidia-egl-wayland*",
    "libnvidia-egl-gbm*",
    "libnvidia-egl-xcb*",
    "libnvidia-egl-xlib*",
    "nvidia-texture-tools",
)


class NvidiaStackDict(TypedDict):
    packages: list[str]
    modules: list[str]


# The patterns as one expression each: every installed package is tested, twice a host.
_NVIDIA = re.compile("|".join(fnmatch.translate(p) for p in NVIDIA_PACKAGE_PATTERNS))
_NOT_NVIDIA = re.compile("|".join(fnmatch.translate(p) for p in NVIDIA_PACKAGE_EXCEPTIONS))


def is_nvidia_package(name: str) -> bool:
    """Whether a package is part of NVIDIA's driver or CUDA stack (the patterns above)."""
    return bool(_NVIDIA.match(name)) and not _NOT_NVIDIA.match(name)


def nvidia_stack(packages: dict[str, str], modules: list[str]) -> NvidiaStackDict:
    """``NvidiaStack``'s answer from an ``InstalledPackages`` listing and ``LoadedModules``."""
    names = sorted(name for name in packages if is_nvidia_package(name))
    loaded = sorted({m.strip() for m in modules if m.strip().startswith("nvidia")})
    return {"packages": names, "modules": loaded}
