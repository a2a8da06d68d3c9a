"""What a pull-mode node is given: its target in the fleet's TUF repository, and its checks.

A node's target (``nodes/<name>.json``) is a JSON object naming the node, the serial it was
published in (the targets metadata's version, so it only grows) and the node's settings.
TUF vouches that the administrators' targets key signed it; what it may say is checked
here, the same on the controller that publishes it and on the node that applies it:

* it names this node (a target copied under another node's path is refused);
* its settings are settings of the model a pull may set: never pyinfra's global arguments
  (``_sudo``, ``_env``, ...), SSH settings or an unknown key, and never the settings that
  say where the pull gets its data and whom it trusts (``PUSH_ONLY``), which only a push
  gives (the data can't move the node to another repository or other keys);
* its serial is not below the one the node last applied (a replay of older data);
* the site matrix data it may carry (``matrix_data``: the text of the file
  ``rocm_matrix_data`` names where the administrators publish, so a pull node can run a
  release published after its rocm-fleet) is a site file ``model.site_data`` reads: only
  added releases, by name, never a host, key or path. The node writes it beside its
  settings and its deploy checks the rows against upstream before using one, as a push does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from rocm_fleet.model import paths, site_data
from rocm_fleet.model.settings import SETTINGS, PullNodeName

#: What a target's content says it is (a format changed incompatibly gets a new one).
FORMAT = "rocm-fleet-pull/1"
#: The settings a push alone gives a pull node: where its repository is, which TUF root it
#: starts from and the name its target has. Pulled data naming one of them is refused.
# rocm_matrix_data names a file on the controller: a pulled target naming a path on the
# node would have root's pull read whatever file that is. The file's content travels instead
# (the target's ``matrix_data``), and pull-fetch names the copy it writes.
PUSH_ONLY = ("rocm_pull_source", "rocm_pull_trusted_root", "rocm_pull_node", "rocm_matrix_data")
#: The largest target a node downloads (TUF checks the signed length; this bounds it).
MAX_TARGET_BYTES = 1024 * 1024


class PullRefused(Exception):
    """Pulled data the node does not apply: ``result`` is the metric's label
    (``rocm_fleet_pull_last_run{result=...}``), the message says why, naming what."""

    def __init__(self, result: str, message: str):
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class PulledState:
    """A node's desired state as published: its name, serial and settings."""

    node: str
    serial: int
    settings: dict[str, Any]
    # The site matrix data's text, as the administrators' file has it; None: the committed
    # matrix alone.
    matrix_data: str | None = None


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


def settings_problem(settings: Mapping[str, Any]) -> str | None:
    """Why ``settings`` can't be a pull node's data, naming the first key that can't; None
    when each key is a setting a pull may set."""
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
    """What of a host's inventory data its target carries: its settings, less the ones a
    push alone gives; connection settings, pyinfra's arguments and other deploys' keys are
    the controller's business, not the node's."""
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
    if matrix_data is not None:  # absent otherwise: a target without it reads as before
        document["matrix_data"] = matrix_data
    return (json.dumps(document, indent=1, sort_keys=True) + "\n").encode()


def parse(content: bytes, node: str, applied: int | None) -> PulledState:
    """``content`` (a verified target) as ``node``'s state; PullRefused when it is not one,
    names another node, carries a key pulled data never carries, or is older than the
    serial ``applied`` last."""
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
    problem = settings_problem(settings)
    if problem:
        raise PullRefused("invalid-data", f"the target's {problem}")
    matrix_data = document.get("matrix_data")
    problem = matrix_data_problem(matrix_data) if "matrix_data" in document else None
    if problem:
        raise PullRefused("invalid-data", f"the target's {problem}")
    if applied is not None and serial < applied:
        raise PullRefused(
            "rollback",
            f"the target's serial {serial} is older than the {applied} this node applied "
            "(a replay of older data)",
        )
    return PulledState(node, serial, settings, matrix_data)
