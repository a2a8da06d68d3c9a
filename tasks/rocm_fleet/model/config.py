"""A host's inventory data validated and typed, with its matrix rows: ``load_config``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from rocm_fleet.model import matrix, paths, site_data, streams, torch_builds
from rocm_fleet.model.decisions import TorchInstall, torch_install
from rocm_fleet.model.settings import (
    Origin,
    Settings,
    bad_value,
    set_in,
    validated,
    without_credentials,
)
from rocm_fleet.model.settings_reference import settings_table
from rocm_fleet.model.site_data import SiteData
from rocm_fleet.model.versions import release_key

#: AMD's ROCm Validation Suite, in each classic release's repository (its install guide:
#: https://rocm.docs.amd.com/projects/ROCmValidationSuite/en/docs-6.4.0/install/installation.html)
RVS_PACKAGE = "rocm-validation-suite"

if TYPE_CHECKING:
    from rocm_fleet.model.decisions import Mirror


class ConfigError(ValueError):
    """Bad inventory data, one line per bad key; ``key`` is the first (None: not one key's)."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True, kw_only=True)
class Config(Settings):
    """A host's settings, validated, plus what the matrix says about them."""

    release: matrix.Release
    torch: TorchInstall | None  #: None without ``pytorch_install``
    mirror: Mirror | None = None  #: resolved by ``model.fleet``
    matrix_data: SiteData | None = None  #: None: the committed matrix

    @property
    def matrix_source(self) -> str:
        """Where the host's release row comes from, for the audit and --dry."""
        if self.matrix_data is None:
            return "rocm-fleet's committed matrix"
        return f"site matrix data {self.matrix_data.provenance}"

    @property
    def torch_build(self) -> torch_builds.TorchBuild | None:
        return self.torch.build if self.torch else None

    @property
    def expected_gfx_list(self) -> list[str]:
        return _gfx(self.expected_gfx)

    @property
    def stream(self) -> streams.Stream:
        return self.release.stream

    @property
    def repository(self) -> streams.Repository:
        return self.release.repository

    @property
    def apt_base_url(self) -> str:
        """The release's repository, or the mirror the inventory names for it."""
        return self.rocm_apt_base_url or self.repository.base_url

    @property
    def key_url(self) -> str:
        return self.rocm_key_url or self.repository.key_url

    @property
    def key_fingerprint(self) -> str:
        return self.rocm_key_fingerprint or self.stream.key_fingerprint.upper()

    def wanted_packages(self, host_gfx: list[str | None] | None) -> list[str]:
        """``rocm_packages``, else the stream's default for ``host_gfx`` (None: unknown);
        per-target only when ``expected_gfx`` names every one."""
        if self.rocm_packages is not None:
            return list(self.rocm_packages)
        expected = self.expected_gfx_list
        names_all = bool(expected) and host_gfx is not None and set(host_gfx) <= set(expected)
        return self.stream.default_packages(self.release, expected if names_all else None)

    @property
    def acceptance_packages(self) -> list[str]:
        """AMD's packages ``rocm_acceptance`` needs: a classic release's RVS (docs/acceptance)."""
        if self.rocm_acceptance == "off" or self.stream is not streams.CLASSIC:
            return []
        return [RVS_PACKAGE]

    @property
    def amdgpu_keyring(self) -> str | None:
        """The amdgpu source's keyring with ``rocm_driver: dkms``, else None."""
        return matrix.AMDGPU_KEYRING if self.rocm_driver == "dkms" else None

    @property
    def venv_python(self) -> str:
        return paths.venv_python(self.pytorch_venv)


def load_config(
    data: dict[str, Any], host_name: str = "host", origin: Origin | None = None
) -> Config:
    """``data``'s settings, checked, defaulted, with their matrix rows; raises ConfigError.
    ``origin(key)`` names where a key was set, for errors."""

    def fail(key: str, value: Any, valid: str) -> ConfigError:
        return ConfigError(bad_value(host_name, key, value, valid, origin), key)

    try:
        settings = validated(data, host_name, origin)
    except ValidationError as exc:
        lines = [error["msg"] for error in exc.errors()]
        raise ConfigError("\n".join(lines), exc.errors()[0]["loc"][0]) from None
    gfx = _gfx(settings.expected_gfx)
    if settings.rocm_slurm_health_check and settings.expected_gpu_count == 0:
        raise fail(
            "rocm_slurm_health_check",
            True,
            "False on a host with expected_gpu_count 0 (the health program checks GPUs)",
        )
    version = settings.rocm_version
    site = _site_data(settings.rocm_matrix_data, origin, host_name)
    try:
        rel = site.release(version) if site else matrix.release(version)
    except KeyError:
        known = site.release_versions() if site else matrix.release_versions()
        raise fail("rocm_version", version, _known_release(version, known)) from None

    torch_build = None
    if settings.pytorch_install:
        source = rel.torch_source
        if source is None or not source.builds:
            raise fail(
                "rocm_version",
                version,
                f"a release with a PyTorch index ({rel.no_torch_reason}); "
                "or set pytorch_install: False",
            )
        if unknown := source.unknown_targets(gfx):
            raise fail(
                "expected_gfx",
                settings.expected_gfx,
                f"GPU targets AMD's index gives a torch device extra for ROCm {version} "
                f"({', '.join(source.targets)}; {unknown[0]} has none on AMD's install "
                "page); or set pytorch_install: False",
            )
        builds = source.builds_for(gfx)
        if (wanted := settings.torch_version) is None:
            torch_build = builds[-1]
        else:
            torch_build = next((b for b in builds if b.torch == wanted), None)
            if torch_build is None and len(builds) == len(source.builds):
                # the data may lag the index: the lock (the live page) says
                torch_build = torch_builds.unrecorded_build(source, wanted)
            if torch_build is None:
                published = [b.torch for b in builds]
                newest = _newest_of_series(wanted, published)
                hint = f"did you mean {newest!r}? expected " if newest else ""
                also = ""
                if len(builds) < len(source.builds):
                    also = f" for expected_gfx {settings.expected_gfx!r} (AMD's Linux page)"
                raise fail(
                    "torch_version",
                    wanted,
                    f"{hint}a torch published on {source.name} for ROCm {version}{also} "
                    f"({', '.join(published)})",
                )
    index = settings.pytorch_index_base_url
    torch = torch_install(rel, torch_build, index, gfx) if torch_build else None
    from_site = site if site is not None and site.adds(version) else None
    return Config(**vars(settings), release=rel, torch=torch, matrix_data=from_site)


def _site_data(setting: str | None, origin: Origin | None, host_name: str) -> SiteData | None:
    """The host's parsed site matrix data, or None; raises ConfigError naming the setting."""
    path = site_data.where_set(setting)
    if path is None:
        return None
    try:
        return site_data.load(path)
    except site_data.SiteDataError as exc:
        given = (
            f"inventory key 'rocm_matrix_data'{set_in(origin, 'rocm_matrix_data')}"
            if setting
            else f"environment variable {site_data.ENVIRONMENT}"
        )
        raise ConfigError(f"{host_name}: {given}: {exc}", "rocm_matrix_data") from None


def _gfx(gfx: str | list[str] | None) -> list[str]:
    return [gfx] if isinstance(gfx, str) else list(gfx or [])


def _newest_of_series(version: str, known: list[str]) -> str | None:
    """The newest of ``known`` in ``version``'s X.Y series: '7.14' -> '7.14.1', '6.4.9' ->
    '6.4.4'; None when there is none."""
    parts = version.split(".")
    series = ".".join(parts[:2]) + "."
    if len(parts) < 2:
        return None
    candidates = [k for k in known if k.startswith(series)]
    try:
        return max(candidates, key=release_key) if candidates else None
    except ValueError:
        return candidates[-1]


def _known_release(version: str, known: list[str]) -> str:
    """The refusal of an unknown ``rocm_version``; ``X.Y`` is never read as the newest X.Y.z."""
    newest = _newest_of_series(version, known)
    if newest:
        series = ".".join(version.split(".")[:2])
        short = len(version.split(".")) == 2
        why = (
            "; a release is X.Y.Z: X.Y is not read as the newest X.Y.z, so a matrix update "
            "never moves a host"
            if short
            else ""
        )
        return (
            f"did you mean {newest!r} (the newest {series}.z the matrix knows{why})? "
            "`rocm-fleet matrix` lists every release"
        )
    try:
        newer = release_key(version) > max(release_key(r.version) for r in matrix.RELEASES)
    except ValueError:
        newer = False
    if newer:
        return (
            f"a ROCm release the matrix knows ({known[0]} to {known[-1]}): "
            "`rocm-fleet matrix check` says whether AMD has published a newer one, and "
            "`rocm-fleet matrix update --output FILE` writes it into a site file "
            "(rocm_matrix_data) until rocm-fleet commits it"
        )
    return (
        f"a ROCm release the matrix knows ({known[0]} to {known[-1]}; "
        "`rocm-fleet matrix` lists them)"
    )


__all__ = ["Config", "ConfigError", "load_config", "settings_table", "without_credentials"]
