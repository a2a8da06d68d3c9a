"""One validated, typed view of a host's inventory data, built before any operation is planned.

``load_config(host.data.dict(), host.name)`` checks every key declared in
``rocm_fleet.model.settings``, refuses renamed keys and near-misses of known keys
(``rocm_verison``), applies the defaults and resolves the matrix rows the tasks need
(release, torch build). Any problem raises :class:`ConfigError` naming the host, the key,
the bad value and what would be valid; pyinfra then stops the whole run before a single
operation executes, so bad input changes nothing on any host.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rocm_fleet.model import paths
from rocm_fleet.model.matrix import (
    AMDGPU_KEYRING,
    RELEASES,
    Release,
    Repository,
    Stream,
    TorchBuild,
    release,
    release_versions,
)
from rocm_fleet.model.settings import PREFIXES, RENAMED, SETTINGS, Settings
from rocm_fleet.model.versions import release_key

if TYPE_CHECKING:
    from rocm_fleet.model.sources import Mirror


class ConfigError(ValueError):
    """Bad inventory data. The message says which host, key and value, and what is valid.
    (The deploy raises it to pyinfra as a ``DeployError``, which stops the run.)"""


@dataclass(frozen=True, kw_only=True)
class Config(Settings):
    """A host's settings, validated, plus what the matrix says about them."""

    release: Release
    torch_build: TorchBuild | None
    # The fleet mirror this host uses, resolved with the rest of the inventory
    # (deploy/mirror.py).
    mirror: Mirror | None = None

    @property
    def expected_gfx_list(self) -> list[str]:
        gfx = self.expected_gfx
        return [gfx] if isinstance(gfx, str) else list(gfx or [])

    @property
    def stream(self) -> Stream:
        return self.release.stream

    @property
    def repository(self) -> Repository:
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
        return (self.rocm_key_fingerprint or self.stream.key_fingerprint).upper()

    def wanted_packages(self, host_gfx: list[str | None] | None) -> list[str]:
        """The packages to install: ``rocm_packages``, else the stream's default, which may
        depend on the host's GPUs. ``host_gfx``: the gfx targets of every GPU the host has
        (preflight's survey), None when unknown. The per-target choice is made only when
        ``expected_gfx`` names every one of them."""
        if self.rocm_packages is not None:
            return list(self.rocm_packages)
        expected = self.expected_gfx_list
        names_all = bool(expected) and host_gfx is not None and set(host_gfx) <= set(expected)
        return self.stream.default_packages(self.release, expected if names_all else None)

    @property
    def amdgpu_keyring(self) -> str | None:
        """The keyring AMD's driver source is signed with (``rocm_driver: dkms``), else None:
        repo.radeon.com's, whichever stream the release is of."""
        return AMDGPU_KEYRING if self.rocm_driver == "dkms" else None

    @property
    def torch_index_url(self) -> str:
        return f"{self.pytorch_index_base_url.rstrip('/')}/{self.release.torch_index}"

    @property
    def venv_python(self) -> str:
        return paths.venv_python(self.pytorch_venv)


def without_credentials(value: Any) -> Any:
    """``value`` with the user and password of a URL in it replaced by ``***``: an error
    message must not put a secret in a log."""
    if isinstance(value, str):
        return re.sub(r"(?<=://)[^/@\s]*@", "***@", value)
    return value


def load_config(data: dict[str, Any], host_name: str = "host") -> Config:
    def fail(key: str, value: Any, valid: str) -> ConfigError:
        return ConfigError(
            f"{host_name}: inventory key {key!r} has value {without_credentials(value)!r}; "
            f"expected {valid}"
        )

    for key in data:
        if key in SETTINGS or key.startswith(("_", "ssh_")):
            continue
        if key in RENAMED:
            raise ConfigError(f"{host_name}: inventory key {key!r} was renamed to {RENAMED[key]!r}")
        near = difflib.get_close_matches(key, SETTINGS, n=1, cutoff=0.8)
        if near or key.startswith(PREFIXES):
            hint = f"did you mean {near[0]!r}?" if near else "it is not a rocm-fleet setting"
            raise ConfigError(f"{host_name}: unknown inventory key {key!r}: {hint}")

    values = {key: data.get(key, field.default) for key, field in SETTINGS.items()}
    for key, field in SETTINGS.items():
        if key not in data and callable(field.default_factory):
            values[key] = field.default_factory()
        problem = field.metadata["check"](values[key])
        if problem:
            raise fail(key, values[key], problem)

    version = values["rocm_version"]
    try:
        rel = release(version)
    except KeyError:
        known = release_versions()
        newer = _newer_than_matrix(version)
        raise fail(
            "rocm_version",
            version,
            f"a ROCm release the matrix knows ({', '.join(known)}); `rocm-fleet matrix` lists "
            "them"
            + (
                " (`rocm-fleet matrix check` says whether AMD has published a newer one)"
                if newer
                else ""
            ),
        ) from None

    torch_build = None
    if values["pytorch_install"]:
        if not rel.torch_builds:
            raise fail(
                "rocm_version",
                version,
                f"a release with a PyTorch index ({rel.no_torch_reason}); "
                "or set pytorch_install: False",
            )
        wanted = values["torch_version"]
        if wanted is None:
            torch_build = rel.torch_builds[-1]
        else:
            matches = [b for b in rel.torch_builds if b.torch == wanted]
            if not matches:
                published = ", ".join(b.torch for b in rel.torch_builds)
                raise fail(
                    "torch_version",
                    wanted,
                    f"a torch published on {rel.torch_index} for ROCm {version} ({published})",
                )
            torch_build = matches[0]

    return Config(**values, release=rel, torch_build=torch_build)


def _newer_than_matrix(version: str) -> bool:
    try:
        return release_key(version) > max(release_key(r.version) for r in RELEASES)
    except ValueError:
        return False


def settings_table() -> str:
    """The README's settings table, generated from ``rocm_fleet.model.settings``."""
    rows = ["| Key | Default | Meaning |", "|---|---|---|"]
    concern = None
    for key, field in SETTINGS.items():
        if field.metadata["concern"] != concern:
            concern = field.metadata["concern"]
            rows.append(f"| **{concern}** | | |")
        default = field.default_factory() if callable(field.default_factory) else field.default
        shown = "*(required)*" if key == "rocm_version" else f"`{default!r}`"
        rows.append(f"| `{key}` | {shown} | {field.metadata['meaning']} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(settings_table())
