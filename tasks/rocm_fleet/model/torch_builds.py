"""Where a ROCm release's PyTorch comes from: PyTorch's download.pytorch.org indexes and the
builds each carries, AMD's own wheel index for the Core SDK 10.x, and the ROCm runtime torch
brings from pip. The builds are data (torch_builds.json beside this module, written by
tools/matrix_update.py tables from the stored records of those indexes); model/matrix.py
joins them to the release rows."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocm_fleet.model import upstream_data

# PyTorch's wheel indexes, https://download.pytorch.org/whl/rocmX.Y[.Z]
# (pytorch.org/get-started/previous-versions; fact sheet §7.1).
PYTORCH_INDEX_BASE_URL = "https://download.pytorch.org/whl"
# Some of those indexes' dependency pages link PyPI's file host rather than a copy of their
# own (download.pytorch.org/whl/mpmath -> files.pythonhosted.org, quoted by PyTorch's
# release manager in pytorch/pytorch#197552, 2026-09): a fleet mirror must carry it too.
PYTORCH_INDEX_FILE_HOSTS = ("files.pythonhosted.org",)


# --- PyTorch ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TorchBuild:
    torch: str
    torchvision: str
    torchaudio: str | None  # torchaudio stopped at 2.11 (pytorch/pytorch.github.io PR #2074)


def _builds(rows: list[list[str | None]]) -> tuple[TorchBuild, ...]:
    """A data file's [torch, torchvision, torchaudio or null] rows, oldest first."""
    return tuple(TorchBuild(*row) for row in rows)


# What each download.pytorch.org ROCm index carries, oldest first. Which index a torch
# release is built for: pytorch.org's "previous versions" page and pytorch RELEASE.md (fact
# sheet §7.1), and from 2.10 on the ROCm list of pytorch/test-infra
# tools/scripts/generate_binary_build_matrix.py, which the release builds follow: #7430
# (2025-10-31, "7.0 7.1", torch 2.10), #7763 ("Move ROCm 7.0,7.1->7.1,7.2", torch 2.11 to
# 2.13: "they still describe GA 2.13", #8498), #8498 (2026-08-11: release/2.14 builds
# ROCM_ARCHES = ["7.2", "7.14"], "7.1 is not built for 2.14"). torchvision pairs 0.(minor+15)
# with torch 2.minor (PyPI release lists). torchaudio: "There is no new release of
# torchaudio for now" (PyTorch's release manager, pytorch.github.io PR #2074, 2026-05): 2.11
# is the last, so builds from torch 2.12 on carry none. Patch versions are
# listed where wheels were seen; which ones (3p, installs from these very indexes) is said
# per index.
TORCH_INDEXES: dict[str, tuple[TorchBuild, ...]] = {
    row["index"]: _builds(row["builds"]) for row in upstream_data.TORCH_BUILD_ROWS["indexes"]
}

# The ROCm runtime a torch wheel of the index doesn't bundle but requires from pip, from the
# same index (the wheels of the other indexes bundle theirs: torch/lib/libamdhip64.so).
# rocm7.14: "Matrix generator sets "7.14": ("rocm[libraries,device-all]==7.14")"
# (pytorch/pytorch issue #191688, the RFC moving ROCm wheels to pip-installed ROCm, closed
# 2026-08-24); pip's resolution as a PyTorch maintainer logged it: "Collecting
# rocm-sdk-device-gfx1011==7.14.0 (from rocm[device-all,libraries]==7.14.*->torch)"
# (pytorch/pytorch issue #193979). (3p) a 2.14.1+rocm7.14 venv holds
# rocm==7.14.0.post1, rocm-sdk-core, rocm-sdk-libraries, rocm-sdk-device-gfx1100 (id
# 70373962142).
TORCH_RUNTIME: dict[str, str] = {
    row["index"]: row["runtime"]
    for row in upstream_data.TORCH_BUILD_ROWS["indexes"]
    if row["runtime"]
}
# The distributions such a runtime consists of: the ``rocm`` meta package and its
# rocm-sdk-core / -libraries / -device-<gfx> / -devel wheels (TheRock
# build_tools/packaging/python/templates/rocm/src/rocm_sdk/_dist_info.py).
TORCH_RUNTIME_WHEELS = re.compile(r"^rocm(-sdk-.+)?$")
# The distributions published as source distributions only, built on the installing host:
# AMD's ``rocm`` meta package (TheRock build_tools/packaging/python/templates/rocm/setup.py,
# release/therock-10.0: "we only distribute it as an sdist: it is intended to be built
# implicitly on a target machine"; recorded in tests/fixtures/upstream/repo.amd.com-whl.toml
# ``rocm_dist``). A lock or a bundle pins an sdist of these alone: building one runs its code
# as root on every host, so any other distribution must come as a wheel.
SDIST_ONLY: frozenset[str] = frozenset({"rocm"})


# --- AMD's own wheels for the Core SDK ----------------------------------------------------

# AMD's stable wheel index for the Core SDK from 10.0 on: the "explicit-device-extras"
# variant (whl-next) of the stable stream. AMD's 10.0.0 and 10.1.0 PyTorch install pages
# (the docs' include files, index ids 60119073944 and 70276838118): ``.. |PKG_REPO|
# replace:: https://stable.repo.amd.com/rocm/whl-next/`` then ``python -m pip install
# --index-url |PKG_REPO| "torch[device-gfx942]==2.13.0+rocm10.0.0"
# "torchvision[device-gfx942]==0.28.0+rocm10.0.0" "torchaudio==2.11.0.2+rocm10.0.0"``;
# TheRock build_tools/setup_venv.py @ 89553ce3 ("stable": this URL, since 2026-08-22). The
# older https://repo.amd.com/rocm/whl-multi-arch/ serves the stable releases before 10.0
# (TheRock 1a70157f2, docs/packaging/legacy_multi_arch_releases.md). Recorded, with what is
# uncertain, in tests/fixtures/upstream/repo.amd.com-whl.toml.
AMD_STABLE_WHEEL_INDEX = "https://stable.repo.amd.com/rocm/whl-next/"


@dataclass(frozen=True)
class AmdWheels:
    """What AMD's own index holds for a Core SDK release that PyTorch builds nothing for
    (10.x): the torch / torchvision / torchaudio builds of AMD's install page for the
    release, exact, each with the local label ``+rocm<release>``; the GPU targets the page
    gives a ``[device-<gfx>]`` extra (on torch and torchvision: ``device_extra_on``), which
    brings ``amd-torch-device-<gfx>`` and through it ``rocm-sdk-device-<gfx>``; and the
    targets the page offers fewer builds for (``target_builds``: gfx1150 on Linux gets torch
    2.12.0 only). torch requires the ROCm runtime of its release from the same index:
    ``runtime``. One index, no second one (AMD's commands use ``--index-url`` alone)."""

    url: str
    release: str  # "10.0.0"
    builds: tuple[TorchBuild, ...]  # oldest first
    targets: tuple[str, ...]
    target_builds: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (gfx, torch versions)
    device_extra_on: tuple[str, ...] = ("torch", "torchvision")

    @property
    def label(self) -> str:
        """The local version label of every wheel built for the release: ``rocm10.0.0``
        (TheRock build_prod_wheels.py: "+rocm" + the rocm version it was built against)."""
        return f"rocm{self.release}"

    @property
    def runtime(self) -> str:
        """What torch requires from the index: ``rocm[libraries]==10.0.0`` (TheRock
        build_prod_wheels.py, release/therock-10.0: ``f"rocm[libraries]=={sdk_version}"``)."""
        return f"rocm[libraries]=={self.release}"

    @staticmethod
    def device_extras(gfx: list[str] | tuple[str, ...]) -> list[str]:
        """``device-<gfx>`` per expected target, ``device-all`` when none is named."""
        return [f"device-{g}" for g in sorted(set(gfx))] or ["device-all"]

    def builds_for(self, gfx: list[str] | tuple[str, ...]) -> tuple[TorchBuild, ...]:
        """The builds AMD offers every one of ``gfx`` (all of them for ``device-all``)."""
        limits = dict(self.target_builds)
        return tuple(
            b for b in self.builds if all(b.torch in limits.get(g, (b.torch,)) for g in gfx)
        )


def _amd_wheels(row: dict) -> AmdWheels:
    """AmdWheels from a row of the data file's ``amd_wheels``."""
    return AmdWheels(
        row["url"],
        row["release"],
        _builds(row["builds"]),
        tuple(row["targets"]),
        tuple((gfx, tuple(versions)) for gfx, versions in row["target_builds"].items()),
        tuple(row["device_extra_on"]),
    )


# AMD's 10.0.0 page (index id 60119073944; TheRock release/therock-10.0 builds release/2.11,
# 2.12 and 2.13) and its 10.1.0 page (index id 70276838118; no gfx908 or gfx1030 on it;
# TheRock main builds release/2.12, 2.13 and 2.14), as tests/fixtures/upstream/
# repo.amd.com-whl.toml records them. torchaudio: 2.11.0.2 and 2.11.0.3 are AMD's rebuilds of
# 2.11 (PyTorch released no torchaudio after 2.11); torchvision 0.29.0a0 is what AMD's 10.1
# page pins for torch 2.14.0. gfx1150 on Linux: both pages print torch 2.12.0 under the
# newer torch selectors.
AMD_WHEELS: dict[str, AmdWheels] = {
    row["release"]: _amd_wheels(row) for row in upstream_data.TORCH_BUILD_ROWS["amd_wheels"]
}


@dataclass(frozen=True)
class TorchSource:
    """Where a release's torch comes from, decided once per release (``Release.torch_source``)
    and asked by everyone after: a PyTorch index (``rocm6.4``, under the host's
    ``pytorch_index_base_url``), or, for a release PyTorch builds nothing for, AMD's own index
    (``amd``), whose builds depend on the GPU targets and come with ``[device-<gfx>]`` extras.
    ``name`` is the index's name in messages (AMD's: its URL); ``label`` the local version label
    of its wheels; ``runtime`` the pip requirement torch brings for its ROCm runtime (None:
    bundled in the wheels)."""

    name: str
    label: str
    builds: tuple[TorchBuild, ...]  # oldest first
    runtime: str | None = None
    amd: AmdWheels | None = None

    @property
    def targets(self) -> tuple[str, ...]:
        """The GPU targets the index gives a device extra for; none for a PyTorch index."""
        return self.amd.targets if self.amd else ()

    def url(self, index_base_url: str) -> str:
        """The index's URL: AMD's own, or the PyTorch index under ``index_base_url``."""
        return self.amd.url if self.amd else f"{index_base_url.rstrip('/')}/{self.name}"

    def unknown_targets(self, gfx: list[str] | tuple[str, ...]) -> list[str]:
        """The targets of ``gfx`` AMD's index has no device extra for (a PyTorch index builds
        one wheel for every target: none)."""
        return [g for g in gfx if g not in self.amd.targets] if self.amd else []

    def builds_for(self, gfx: list[str] | tuple[str, ...]) -> tuple[TorchBuild, ...]:
        """The builds the index offers every one of ``gfx``."""
        return self.amd.builds_for(gfx) if self.amd else self.builds

    def extras(self, gfx: list[str] | tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(distribution, its extras) for ``gfx``: AMD's ``[device-<gfx>]`` on torch and
        torchvision; none on a PyTorch index."""
        if self.amd is None:
            return ()
        extras = tuple(self.amd.device_extras(gfx))
        return tuple((name, extras) for name in self.amd.device_extra_on)


def torch_source(torch_index: str | None, amd: AmdWheels | None) -> TorchSource | None:
    """The torch source of a release row: its PyTorch index, else AMD's, else none."""
    if torch_index:
        return TorchSource(
            torch_index, torch_index, TORCH_INDEXES[torch_index], TORCH_RUNTIME.get(torch_index)
        )
    if amd is not None:
        return TorchSource(amd.url, amd.label, amd.builds, amd.runtime, amd)
    return None


# The wheels a device extra of AMD's torch installs (``amd-torch-device-<gfx>``, and for
# torchvision, (3p) ``amd-torchvision-device-<gfx>``): pip manages them with their torch.
AMD_DEVICE_WHEELS = re.compile(r"^amd-torch(vision)?-device-.+$")
