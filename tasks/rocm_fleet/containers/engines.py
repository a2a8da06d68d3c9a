"""What a node's container engines need, decided from what the node reports (pure): engine
versions, how Docker gets the GPUs, daemon.json merged and unmerged, missing subordinate IDs."""

import json
from dataclasses import dataclass
from typing import Any

from rocm_fleet.assets import render
from rocm_fleet.model import container_toolkit as toolkit
from rocm_fleet.model import gpu_containers, paths
from rocm_fleet.model.container_toolkit import engine_version

DAEMON_JSON = paths.DOCKER_DAEMON_JSON
STATE_DIR = paths.CONTAINERS_STATE_DIR
DAEMON_LEDGER = gpu_containers.DAEMON_LEDGER
SUBID_LEDGER = gpu_containers.SUBID_LEDGER
DOCKER_STAMP = f"{STATE_DIR}/docker-restarted.stamp"
LISTS_STAMP = f"{STATE_DIR}/apt-lists.stamp"
SOURCE = paths.CONTAINER_TOOLKIT_SOURCE
KEYRING = paths.CONTAINER_TOOLKIT_KEYRING
PIN = paths.CONTAINER_TOOLKIT_PIN
SUBUID = paths.SUBUID
SUBGID = paths.SUBGID
#: The distribution's packages of each engine (``--group-add keep-groups`` needs crun).
ENGINE_PACKAGES = {"docker": ("docker.io",), "podman": ("podman", "crun")}


#: useradd's SUB_UID_COUNT default
SUBID_COUNT = 65536


def version_of(engine: str, facts: dict[str, Any], install: bool) -> tuple[int, int, int] | None:
    """An engine's installed version (``ContainerEngines``), else (``install``) apt's
    candidate's; None when neither is known."""
    installed = engine_version(facts["installed"].get(engine))
    if installed is not None or not install:
        return installed
    return engine_version(facts["candidate"].get(ENGINE_PACKAGES[engine][0]))


def docker_mode(version: tuple[int, int, int]) -> str:
    """``cdi`` for a Docker that reads CDI specs, else ``runtime`` (AMD's OCI runtime)."""
    return "cdi" if version[:2] >= toolkit.DOCKER_CDI else "runtime"


def docker_fragment(mode: str) -> dict[str, Any]:
    """The daemon.json keys Docker needs for ``mode`` (AMD's docker.go writes the same)."""
    if mode == "cdi":
        return {"features": {"cdi": True}}
    return {"runtimes": {toolkit.RUNTIME_NAME: {"path": toolkit.RUNTIME_PATH, "args": []}}}


class NotJson(ValueError):
    """A daemon.json that isn't a JSON object: the site's to fix, never overwritten."""


def parse_daemon_json(text: str | None) -> dict[str, Any]:
    """The file's object ({} for no file or an empty one); NotJson otherwise."""
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise NotJson(f"{DAEMON_JSON} is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise NotJson(f"{DAEMON_JSON} is not a JSON object")
    return value


def merged(current: dict[str, Any], fragment: dict[str, Any]) -> dict[str, Any]:
    """``current`` with ``fragment``'s keys set, nested objects merged (the site's keys kept)."""
    result = dict(current)
    for key, value in fragment.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result


def unmerged(current: dict[str, Any], fragment: dict[str, Any]) -> dict[str, Any]:
    """``current`` without the keys of ``fragment`` that still hold its values; an object left
    empty goes too."""
    result = dict(current)
    for key, value in fragment.items():
        if key not in result:
            continue
        if isinstance(value, dict) and isinstance(result[key], dict):
            inner = unmerged(result[key], value)
            if inner:
                result[key] = inner
            else:
                del result[key]
        elif result[key] == value:
            del result[key]
    return result


@dataclass(frozen=True)
class DaemonJson:
    """daemon.json as the deploy leaves it (None: no file), and the fragment recorded as
    rocm-fleet's (None: none)."""

    text: str | None
    ours: dict[str, Any] | None


def daemon_json(
    current_text: str | None, recorded: dict[str, Any] | None, fragment: dict[str, Any] | None
) -> DaemonJson:
    """daemon.json with ``fragment`` (None: none) in place of what was ``recorded`` as
    rocm-fleet's, the site's keys kept, its text untouched when its content would not change;
    NotJson when the file holds something else."""
    current = parse_daemon_json(current_text)
    wanted = unmerged(current, recorded) if recorded else current
    if fragment is not None:
        wanted = merged(wanted, fragment)
    if wanted == current:
        return DaemonJson(current_text, fragment)
    if not wanted and fragment is None:
        return DaemonJson(None, None)  # the file held rocm-fleet's keys alone
    return DaemonJson(json.dumps(wanted, indent=4) + "\n", fragment)


def _ranges(lines: list[str]) -> dict[str, list[tuple[int, int]]]:
    """user -> (start, count) of subuid(5)/subgid(5) lines; malformed lines skipped."""
    found: dict[str, list[tuple[int, int]]] = {}
    for line in lines:
        parts = line.strip().split(":")
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            found.setdefault(parts[0], []).append((int(parts[1]), int(parts[2])))
    return found


@dataclass(frozen=True)
class SubIds:
    """A range rocm-fleet gives ``user`` in ``kind`` (``uid`` or ``gid``)."""

    user: str
    kind: str
    start: int
    count: int = SUBID_COUNT

    @property
    def line(self) -> str:
        return f"{self.user} {self.kind} {self.start} {self.count}"


def subids_needed(users: list[str], subuid: list[str], subgid: list[str]) -> list[SubIds]:
    """The ranges ``users`` lack: for each user without a line in a file, the next free
    ``SUBID_COUNT`` IDs above every range either file holds (one start for both files)."""
    uids, gids = _ranges(subuid), _ranges(subgid)
    ends = [start + count for table in (uids, gids) for spans in table.values() for start, count
            in spans]  # fmt: skip
    start = max([100000, *ends])  # useradd's SUB_UID_MIN default
    needed = []
    for user in users:
        missing = [kind for kind, table in (("uid", uids), ("gid", gids)) if user not in table]
        needed += [SubIds(user, kind, start) for kind in missing]
        if missing:
            start += SUBID_COUNT
    return needed


def rootless_problems(engines: list[str], users: list[str], absent: list[str]) -> list[str]:
    """Why rootless users can't be set up: no Podman to run them, or users that don't exist."""
    problems = []
    if users and "podman" not in engines:
        problems.append("rocm_containers_rootless_users needs 'podman' in rocm_containers_engines "
                        "(AMD's toolkit doesn't support rootless Docker)")  # fmt: skip
    if absent:
        problems.append(f"rocm_containers_rootless_users: no user {', '.join(absent)} on the host: "
                        "create them first (rocm-fleet adds existing users to video and render, "
                        "never creates one)")  # fmt: skip
    return problems


def pin_text(version: str) -> str:
    """apt's pin holding the toolkit at ``version`` (1001: above any source, down included)."""
    return render("apt-package-pin.pref.j2", package=toolkit.PACKAGE, version=version,
                  priority=1001)  # fmt: skip
