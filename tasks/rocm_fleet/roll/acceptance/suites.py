"""The acceptance suites (``suites.json``): each level's steps, each GPU model's thresholds (AMD's
figures, cited there) under a site's overrides, and which level a change needs."""

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
    floats = {key: float(value) for key, value in thresholds.items()}
    return Suite(level, tuple(data["levels"][level]), gfx, model.get("rvs_conf_dir"), floats)


def needed_level(
    setting: str, last_fingerprint: dict[str, str] | None, fingerprint: dict[str, str]
) -> str | None:
    """The level a node needs: None when ``off``; ``quick`` when its fingerprint is its last
    passing run's, else ``full``; capped at the setting."""
    if setting == "off":
        return None
    moved = last_fingerprint is None or last_fingerprint != fingerprint
    wanted = "full" if moved else "quick"
    return min(wanted, setting, key=LEVELS.index)
