"""Access to the product's release matrix (tasks.matrix), which drives what the doubles serve.

The lab serves exactly what the product says a ROCm release is (apt path, numeric tag,
torch index and builds), so a change in the matrix is tested against matching doubles.
While tasks/matrix.py does not exist yet (it is written in parallel), a small stand-in
with the same API is used and a warning says so; it is never used once the module exists.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from typing import Any, Protocol

from ._util import REPO_ROOT


class TorchBuild(Protocol):
    torch: str
    torchvision: str
    torchaudio: str | None


class Release(Protocol):
    version: str
    numeric_tag: str
    apt_path: str
    torch_index: str
    torch_builds: tuple[Any, ...]


@dataclass(frozen=True)
class _Build:
    torch: str
    torchvision: str
    torchaudio: str | None


@dataclass(frozen=True)
class _Release:
    version: str
    torch_index: str
    torch_builds: tuple[_Build, ...]

    @property
    def numeric_tag(self) -> str:
        major, minor, patch = (int(p) for p in self.version.split("."))
        return f"{major}{minor:02d}{patch:02d}"

    @property
    def apt_path(self) -> str:
        return self.version[:-2] if self.version.endswith(".0") else self.version


_STAND_IN = {
    "6.4.3": _Release(
        "6.4.3", "rocm6.4", (_Build("2.9.1", "0.24.1", "2.9.1"), _Build("2.8.0", "0.23.0", "2.8.0"))
    ),
    "7.2.1": _Release("7.2.1", "rocm7.2", (_Build("2.11.0", "0.26.0", "2.11.0"),)),
    "6.2.0": _Release("6.2.0", "rocm6.2", (_Build("2.5.1", "0.20.1", "2.5.1"),)),
}


def release(version: str) -> Release:
    """tasks.matrix.release(version), or the stand-in while the product lacks it."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    try:
        from tasks.matrix import release as product_release  # type: ignore[import-not-found]
    except ModuleNotFoundError as exc:
        if exc.name not in ("tasks", "tasks.matrix"):
            raise
        warnings.warn(
            "tasks.matrix not found: the lab uses its stand-in release table", stacklevel=2
        )
        return _STAND_IN[version]
    return product_release(version)
