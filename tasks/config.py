"""One validated view of a host's inventory data, built before any operation is planned.

``load_config(host.data.dict())`` checks every key the tasks declare, rejects near-misses
of known keys (``rocm_verison``), applies the defaults and resolves the matrix rows the
tasks need (release, torch build). Any problem raises :class:`ConfigError` naming the host,
the key, the bad value and what would be valid; pyinfra then stops the whole run before a
single operation executes, so bad input changes nothing on any host.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from pyinfra.api.exceptions import DeployError

from tasks import (
    cuda,
    driver,
    groups,
    kernel,
    preflight,
    pytorch,
    reboot,
    repository,
    rocm,
    secureboot,
    verify,
)
from tasks.matrix import GFX_NAME, Release, TorchBuild, release, release_versions
from tasks.settings import Setting

# Order matters only for the README table.
CONCERNS = (
    repository,
    rocm,
    groups,
    pytorch,
    verify,
    preflight,
    kernel,
    driver,
    secureboot,
    reboot,
    cuda,
)

# Prefixes that mark a key as ours: an unknown key with one of them is a typo, not the
# user's own data.
OUR_PREFIXES = ("rocm_", "pytorch_", "torch_", "expected_", "gpu_", "preflight_")


class ConfigError(DeployError):
    """Bad inventory data. The message says which host, key and value, and what is valid."""


def all_settings() -> tuple[Setting, ...]:
    return tuple(s for concern in CONCERNS for s in concern.SETTINGS)


@dataclass(frozen=True)
class Config:
    """Everything the tasks read, validated, with defaults applied."""

    values: dict[str, Any]
    release: Release
    torch_build: TorchBuild | None

    def __getattr__(self, key: str) -> Any:
        try:
            return self.values[key]
        except KeyError:
            raise AttributeError(key) from None

    @property
    def expected_gfx_list(self) -> list[str]:
        gfx = self.values["expected_gfx"]
        return [gfx] if isinstance(gfx, str) else list(gfx or [])

    @property
    def torch_index_url(self) -> str:
        return f"{self.values['pytorch_index_base_url'].rstrip('/')}/{self.release.torch_index}"


def load_config(data: dict[str, Any], host_name: str = "host") -> Config:
    settings = {s.key: s for s in all_settings()}

    def fail(key: str, value: Any, valid: str) -> ConfigError:
        return ConfigError(
            f"{host_name}: inventory key {key!r} has value {value!r}; expected {valid}"
        )

    for key in data:
        if key in settings or key.startswith(("_", "ssh_")):
            continue
        near = difflib.get_close_matches(key, settings, n=1, cutoff=0.8)
        if near or key.startswith(OUR_PREFIXES):
            hint = f"did you mean {near[0]!r}?" if near else "it is not a rocm-fleet setting"
            raise ConfigError(f"{host_name}: unknown inventory key {key!r}: {hint}")

    values = {key: data.get(key, s.default) for key, s in settings.items()}
    for key, s in settings.items():
        problem = s.check(values[key])
        if problem:
            raise fail(key, values[key], problem)

    version = values["rocm_version"]
    try:
        rel = release(version)
    except KeyError:
        known = release_versions()
        raise fail(
            "rocm_version",
            version,
            f"a classic ROCm release from {known[0]} to {known[-1]} "
            f"(known: {', '.join(known)}); the ROCm Core SDK (7.9+, repo.amd.com) is not supported",
        ) from None

    gfx_problem = _check_gfx(values["expected_gfx"])
    if gfx_problem:
        raise fail("expected_gfx", values["expected_gfx"], gfx_problem)

    torch_build = None
    if values["pytorch_install"]:
        if not rel.torch_builds:
            raise fail(
                "rocm_version",
                version,
                "a release with a verified PyTorch index (ROCm 7.0.x has none in the matrix); "
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

    return Config(values=values, release=rel, torch_build=torch_build)


def _check_gfx(value: Any) -> str | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items:
        return "a gfx target name such as 'gfx1100', or a list of them"
    for item in items:
        if not isinstance(item, str) or not GFX_NAME.match(item):
            return f"gfx target names such as 'gfx1100' or 'gfx942' ({item!r} is not one)"
    return None


def settings_table() -> str:
    """The README's settings table, generated from the tasks' SETTINGS."""
    rows = ["| Key | Default | Meaning |", "|---|---|---|"]
    for concern in CONCERNS:
        for s in concern.SETTINGS:
            default = (
                "*(required)*"
                if s.default is None and s.key == "rocm_version"
                else (f"`{s.default!r}`")
            )
            rows.append(f"| `{s.key}` | {default} | {s.meaning} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(settings_table())
