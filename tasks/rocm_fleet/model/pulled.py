"""A pull-mode node's target (``nodes/<name>.json``) and the checks publisher and node both
apply: it names this node, holds only pullable settings and a site file, its serial never
goes back."""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from rocm_fleet.model import paths, site_data
from rocm_fleet.model.setting_types import PullNodeName
from rocm_fleet.model.settings import SETTINGS

FORMAT = "rocm-fleet-pull/1"
#: Settings only a push gives a pull node; pulled data naming one is refused.
PUSH_ONLY = (
    "rocm_pull_source",
    "rocm_pull_trusted_root",
    "rocm_pull_node",
    "rocm_pull_seal_keys",
    "rocm_matrix_data",
)
#: The largest target a node downloads.
MAX_TARGET_BYTES = 1024 * 1024


class PullRefused(Exception):
    """Pulled data the node does not apply; ``result``: the pull metric's label."""

    def __init__(self, result: str, message: str):
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class PulledState:
    """A node's desired state as published: its name, serial and settings."""

    node: str
    serial: int
    settings: dict[str, Any]
    matrix_data: str | None = None  #: the site matrix data's text; None: the committed matrix


_NODE_NAME = TypeAdapter(PullNodeName)


def target_path(node: str) -> str:
    """Where ``node``'s target is in the repository."""
    try:
        _NODE_NAME.validate_python(node)
    except ValidationError as exc:
        expected = exc.errors()[0]["msg"]
        raise ValueError(
            f"{node!r} can't name a pull node's target: expected {expected} (set rocm_pull_node)"
        ) from None
    return f"nodes/{node}.json"


def seal_key_file(keys: str, node: str) -> str:
    """``node``'s own key in ``keys`` (``rocm_pull_seal_keys``, where pyinfra runs)."""
    return str(Path(keys) / f"{node}.pem")


def settings_problem(settings: Mapping[str, Any]) -> str | None:
    """Why ``settings`` can't be a pull node's data (naming the first bad key), or None."""
    for key in settings:
        if not isinstance(key, str):
            return f"key {key!r} is not a setting"
        if key.startswith(("_", "ssh_")):
            return (
                f"key {key!r} is a pyinfra global argument or connection setting: pulled data "
                "never carries one"
            )
        if key in PUSH_ONLY:
            return f"key {key!r} is given by a push only, never by pulled data"
        if key not in SETTINGS:
            return f"key {key!r} is not a rocm-fleet setting (rocm-fleet settings lists them)"
    return None


def pullable(data: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a host's data its target carries (less ``PUSH_ONLY``)."""
    return {k: v for k, v in data.items() if k in SETTINGS and k not in PUSH_ONLY}


def matrix_data_problem(text: Any) -> str | None:
    """Why ``text`` can't be a target's site matrix data; None when it is a site file."""
    if not isinstance(text, str):
        return f"matrix_data is {type(text).__name__}, not the text of a site file"
    if len(text.encode()) > site_data.MAX_BYTES:
        return f"matrix_data is over {site_data.MAX_BYTES} bytes: not a site file"
    try:
        site_data.parse(text.encode(), Path(paths.PULL_MATRIX_DATA))
    except site_data.SiteDataError as exc:
        return f"matrix_data: {exc}"
    return None


def render(
    node: str, serial: int, settings: Mapping[str, Any], matrix_data: str | None = None
) -> bytes:
    """A node's target, as ``parse`` reads it back."""
    problem = settings_problem(settings) or (
        matrix_data_problem(matrix_data) if matrix_data is not None else None
    )
    if problem:
        raise ValueError(f"{node}: {problem}")
    document = {"format": FORMAT, "node": node, "serial": serial, "settings": dict(settings)}
    if matrix_data is not None:
        document["matrix_data"] = matrix_data
    return (json.dumps(document, indent=1, sort_keys=True) + "\n").encode()


def parse(content: bytes, node: str, applied: int | None) -> PulledState:
    """A verified target as ``node``'s state; raises PullRefused when it is malformed, names
    another node, carries a forbidden key or is older than serial ``applied``."""
    try:
        document = json.loads(content)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PullRefused("invalid-data", f"the target is not JSON ({exc})") from None
    fields = {"format", "node", "serial", "settings"}
    if not isinstance(document, dict) or not fields <= set(document) <= {*fields, "matrix_data"}:
        raise PullRefused("invalid-data", f"the target is not a JSON object of {sorted(fields)} "
                          "and, optionally, matrix_data")  # fmt: skip
    if document["format"] != FORMAT:
        raise PullRefused("invalid-data", f"the target's format is {document['format']!r}, "
                          f"not {FORMAT!r}")  # fmt: skip
    if document["node"] != node:
        raise PullRefused(
            "other-node", f"the target names node {document['node']!r}, not this node ({node!r})"
        )
    serial, settings = document["serial"], document["settings"]
    if type(serial) is not int or serial < 1:
        raise PullRefused("invalid-data", f"the target's serial {serial!r} is not a positive "
                          "integer")  # fmt: skip
    if not isinstance(settings, dict):
        raise PullRefused("invalid-data", "the target's settings are not a JSON object")
    matrix_data = document.get("matrix_data")
    in_data = matrix_data_problem(matrix_data) if "matrix_data" in document else None
    if problem := settings_problem(settings) or in_data:
        raise PullRefused("invalid-data", f"the target's {problem}")
    if applied is not None and serial < applied:
        raise PullRefused(
            "rollback",
            f"the target's serial {serial} is older than the {applied} this node applied "
            "(a replay of older data)",
        )
    return PulledState(node, serial, settings, matrix_data)
