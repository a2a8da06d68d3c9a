"""The acceptance suites (``suites.json``): each level's steps, each GPU model's thresholds
(AMD's published figures, cited there) with a site's overrides on top, and which level a
change needs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from rocm_fleet.model.acceptance import LEVELS


@cache
def _data() -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath("suites.json").read_text())


@dataclass(frozen=True)
class Suite:
    """What one node runs: the level's steps and the thresholds for its GPU model."""

    level: str
    steps: tuple[str, ...]
    gfx: str | None
    rvs_conf_dir: str | None  #: AMD's configuration folder for the model; None: not known
    thresholds: dict[str, float]

    def gst_floor(self, action: str) -> float | None:
        return self.thresholds.get(f"gst:{action}")


def suite(level: str, gfx: str | None, overrides: dict[str, float] | None = None) -> Suite:
    """The suite at ``level`` for GPUs of ``gfx``, the site's ``overrides`` over AMD's figures."""
    if level not in LEVELS:
        raise ValueError(f"acceptance level {level!r} is not one of {LEVELS}")
    data = _data()
    model = data["models"].get(gfx or "", {})
    thresholds = {**data["defaults"], **model.get("thresholds", {}), **(overrides or {})}
    return Suite(
        level,
        tuple(data["levels"][level]),
        gfx,
        model.get("rvs_conf_dir"),
        {key: float(value) for key, value in thresholds.items()},
    )


def needed_level(
    setting: str, last_fingerprint: dict[str, str] | None, fingerprint: dict[str, str]
) -> str | None:
    """The level a node needs now: none with the setting ``off``; ``quick`` when its ROCm,
    kernel, driver and GPUs are those of its last passing run; else (a move, a card swap, no
    passing run) ``full``, capped at the setting (``quick`` never runs ``full``)."""
    if setting == "off":
        return None
    moved = last_fingerprint is None or last_fingerprint != fingerprint
    wanted = "full" if moved else "quick"
    return min(wanted, setting, key=LEVELS.index)


def threshold_names() -> str:
    """The names a site may override, in words (for the settings reference and errors)."""
    return "'gst:<RVS action name>', " + ", ".join(repr(k) for k in _data()["site_thresholds"])
