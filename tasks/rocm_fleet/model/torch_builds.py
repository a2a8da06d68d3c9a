"""Where a ROCm release's PyTorch comes from: a PyTorch index or AMD's own (torch_builds.json)."""

import re
from dataclasses import dataclass

from rocm_fleet.model import upstream_data

# pytorch.org/get-started/previous-versions.
PYTORCH_INDEX_BASE_URL = "https://download.pytorch.org/whl"
# Linked from those indexes' dependency pages (pytorch/pytorch#197552): a mirror carries it too.
PYTORCH_INDEX_FILE_HOSTS = ("files.pythonhosted.org",)


@dataclass(frozen=True)
class TorchBuild:
    torch: str
    torchvision: str
    torchaudio: str | None  # None from torch 2.12


def _builds(rows: list[list[str | None]]) -> tuple[TorchBuild, ...]:
    return tuple(TorchBuild(*row) for row in rows)


_INDEXES = upstream_data.TORCH_BUILD_ROWS["indexes"]  # torch_builds.json, each row cited
# What each download.pytorch.org ROCm index carries, oldest first.
TORCH_INDEXES = {row["index"]: _builds(row["builds"]) for row in _INDEXES}
# The ROCm runtime an index's torch requires from pip instead of bundling it.
TORCH_RUNTIME: dict[str, str] = {row["index"]: row["runtime"] for row in _INDEXES if row["runtime"]}
# Such a runtime's distributions (TheRock templates/rocm/src/rocm_sdk/_dist_info.py).
TORCH_RUNTIME_WHEELS = re.compile(r"^rocm(-sdk-.+)?$")
# Published as sdists only (TheRock templates/rocm/setup.py, release/therock-10.0); the only
# sdists a lock or bundle may pin: every other distribution must be a wheel.
SDIST_ONLY: frozenset[str] = frozenset({"rocm"})


# AMD's 10.x PyTorch install pages' |PKG_REPO|; TheRock build_tools/setup_venv.py @ 89553ce3
# (tests/fixtures/upstream/repo.amd.com-whl.toml).
AMD_STABLE_WHEEL_INDEX = "https://stable.repo.amd.com/rocm/whl-next/"


@dataclass(frozen=True)
class AmdWheels:
    """AMD's own index for a Core SDK release: its builds (oldest first), the targets with a
    ``[device-<gfx>]`` extra, and the targets offered fewer builds (gfx, torch versions)."""

    url: str
    release: str  # "10.0.0"
    builds: tuple[TorchBuild, ...]
    targets: tuple[str, ...]
    target_builds: tuple[tuple[str, tuple[str, ...]], ...] = ()
    device_extra_on: tuple[str, ...] = ("torch", "torchvision")

    @property
    def label(self) -> str:
        """The wheels' local version label, ``rocm10.0.0`` (TheRock build_prod_wheels.py)."""
        return f"rocm{self.release}"

    @property
    def runtime(self) -> str:
        """What torch requires from the index, ``rocm[libraries]==10.0.0`` (the same)."""
        return f"rocm[libraries]=={self.release}"

    def builds_for(self, gfx: list[str] | tuple[str, ...]) -> tuple[TorchBuild, ...]:
        """The builds AMD offers every one of ``gfx``."""
        limits = dict(self.target_builds)
        return tuple(
            b for b in self.builds if all(b.torch in limits.get(g, [b.torch]) for g in gfx)
        )


def _amd_wheels(row: dict) -> AmdWheels:
    limits = tuple((gfx, tuple(versions)) for gfx, versions in row["target_builds"].items())
    builds, targets, extra_on = _builds(row["builds"]), row["targets"], row["device_extra_on"]
    return AmdWheels(row["url"], row["release"], builds, tuple(targets), limits, tuple(extra_on))


# Rows: torch_builds.json (AMD's 10.x install pages, tests/fixtures/upstream/repo.amd.com-whl.toml).
AMD_WHEELS: dict[str, AmdWheels] = {
    row["release"]: _amd_wheels(row) for row in upstream_data.TORCH_BUILD_ROWS["amd_wheels"]
}


@dataclass(frozen=True)
class TorchSource:
    """A release's torch source: a PyTorch index (``rocm6.4``) or AMD's (``amd``); ``label``: the
    wheels' local version label, ``runtime``: the pip requirement for its ROCm (None: bundled).
    AMD's index gives device extras (``targets``); PyTorch's none."""

    name: str
    label: str
    builds: tuple[TorchBuild, ...]  # oldest first
    runtime: str | None = None
    amd: AmdWheels | None = None

    @property
    def targets(self) -> tuple[str, ...]:
        return self.amd.targets if self.amd else ()

    def url(self, index_base_url: str) -> str:
        """AMD's own index, or the PyTorch index under ``index_base_url``."""
        return self.amd.url if self.amd else f"{index_base_url.rstrip('/')}/{self.name}"

    def unknown_targets(self, gfx: list[str] | tuple[str, ...]) -> list[str]:
        return [g for g in gfx if g not in self.amd.targets] if self.amd else []

    def builds_for(self, gfx: list[str] | tuple[str, ...]) -> tuple[TorchBuild, ...]:
        return self.amd.builds_for(gfx) if self.amd else self.builds

    def extras(self, gfx: list[str] | tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(distribution, its extras) for ``gfx``: ``device-<gfx>`` per expected target,
        ``device-all`` when none is named."""
        if self.amd is None:
            return ()
        extras = tuple(f"device-{g}" for g in sorted(set(gfx))) or ("device-all",)
        return tuple((name, extras) for name in self.amd.device_extra_on)


# Per PyTorch index, the torch releases PyTorch's build matrix (pytorch/test-infra) built for it.
TORCH_BUILT_FOR = {row["index"]: frozenset(row.get("built_for", {})) for row in _INDEXES}


def unrecorded_build(source: TorchSource, torch: str) -> TorchBuild | None:
    """``torch`` (X.Y.Z) on ``source`` where the data lags the index (the lock reads the live
    page); None where PyTorch's build matrix built it for other indexes only, or no pairing is
    known (docs/decisions/wheel-locks.md)."""
    parts = torch.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    if source.amd is None and any(torch in built for built in TORCH_BUILT_FOR.values()):
        return None
    rows = [w.builds for w in AMD_WHEELS.values()] if source.amd else TORCH_INDEXES.values()
    known = next((b for builds in rows for b in builds if b.torch == torch), None)
    if known is not None or source.amd is not None or parts[0] != "2":
        return known
    return TorchBuild(torch, f"0.{int(parts[1]) + 15}.{parts[2]}", None)


def torch_source(torch_index: str | None, amd: AmdWheels | None) -> TorchSource | None:
    """The torch source of a release row: its PyTorch index, else AMD's, else none."""
    if index := torch_index:
        return TorchSource(index, index, TORCH_INDEXES[index], TORCH_RUNTIME.get(index))
    if amd is not None:
        return TorchSource(amd.url, amd.label, amd.builds, amd.runtime, amd)
    return None
