"""AMD's container toolkit as AMD publishes it (a hand-kept table, each fact cited in
``SOURCE``), the engine versions that read CDI, and whether a CDI spec names KFD's GPUs."""

import json
import re
from typing import Any

from rocm_fleet.model import paths

_REPO = "ROCm/container-toolkit @ 192fe8e9e7044562440ae99ba44f913f7ebb81c9 (2026-07-09)"
SOURCE = (
    f"{_REPO}: docs/container-runtime/release-notes.rst (Compatibility Matrix: 1.0.0 to 1.3.0, "
    "Ubuntu 22.04 and 24.04), quick-start-guide.rst Step 3 (the apt line: "
    "repo.radeon.com/amd-container-toolkit/apt/ <VERSION_CODENAME> main, signed by "
    "repo.radeon.com/rocm/rocm.gpg.key), cmd/amd-ctk/runtime/engine/docker/docker.go (daemon.json: "
    'features.cdi and runtimes.amd = {"path": "amd-container-runtime", "args": []}), '
    "internal/cdi/cdi.go (the spec: kind amd.com/gpu, one device per GPU and 'all')"
)
RELEASES = ("1.0.0", "1.1.0", "1.2.0", "1.3.0")
DEFAULT_RELEASE = RELEASES[-1]
PACKAGE = "amd-container-toolkit"
APT_URL = "https://repo.radeon.com/amd-container-toolkit/apt"
# Ubuntu suite -> the distro AMD supports it on; a Debian release with that ROCm suite takes it.
SUITES = {"jammy": "ubuntu 22.04", "noble": "ubuntu 24.04"}
RUNTIME_NAME = "amd"  # the OCI runtime Docker gets where it has no CDI
RUNTIME_PATH = "amd-container-runtime"
CDI_KIND = "amd.com/gpu"
CDI_SPEC = paths.CDI_SPEC
# The first engine versions that read CDI specs, the CDI version amd-ctk writes and the oldest
# Podman that reads it (docs/decisions/gpu-containers.md).
DOCKER_CDI = (25, 0)
PODMAN_CDI = (4, 1)
AMD_CDI_VERSION = "0.6.0"
PODMAN_AMD_CDI = (4, 4)

_VERSION = re.compile(r"(?:^|\s)(?:[0-9]+:)?([0-9]+)\.([0-9]+)(?:\.([0-9]+))?")


def engine_version(text: str | None) -> tuple[int, int, int] | None:
    """The first version in a tool's or apt's words (``podman version 4.3.1``,
    ``5:25.0.3-1~ubuntu.22.04~jammy``); None if none."""
    match = _VERSION.search(text or "")
    return None if match is None else (int(match[1]), int(match[2]), int(match[3] or 0))


def shown(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def podman_problem(version: tuple[int, ...]) -> str | None:
    """Why a Podman of ``version`` can't give containers the GPUs AMD's toolkit describes (it
    reads no CDI, or not AMD's CDI version); None from ``PODMAN_AMD_CDI`` on."""
    if version[:2] < PODMAN_CDI:
        return (f"Podman {shown(version)} predates CDI (4.1) and AMD's runtime serves Docker "
                "only: install a newer Podman, or use docker")  # fmt: skip
    if version[:2] < PODMAN_AMD_CDI:
        return (
            f"Podman {shown(version)} can't read the CDI spec AMD's toolkit writes "
            f"(CDI {AMD_CDI_VERSION}; Debian 12's 4.3 refuses it: `--device "
            "amd.com/gpu=all` is unresolvable) and AMD's runtime serves Docker only: "
            "use docker (with AMD's runtime where it reads no CDI), or install Podman "
            f"{shown(PODMAN_AMD_CDI)} or newer"
        )
    return None


def suite_for(key: str, suite: str) -> tuple[str | None, str | None]:
    """(the toolkit's suite, a warning) for the matrix row ``key`` whose ROCm suite is
    ``suite``; (None, None) when AMD builds the toolkit for neither."""
    if suite not in SUITES:
        return None, None
    if SUITES[suite] == key:
        return suite, None
    return suite, (
        f"AMD's container toolkit supports {', '.join(sorted(SUITES.values()))}; {key} takes "
        f"its {suite} packages, as it does ROCm's (unofficial)"
    )


def cdi_render_nodes(spec_text: str | None) -> list[str] | None:
    """The render nodes an AMD CDI spec gives its numbered devices, sorted; None when there
    is no spec or it isn't one of AMD's (``kind`` amd.com/gpu)."""
    try:
        spec = json.loads(spec_text or "")
    except ValueError:
        return None
    if not isinstance(spec, dict) or spec.get("kind") != CDI_KIND:
        return None
    found = []
    for device in spec.get("devices") or []:
        named = isinstance(device, dict) and device.get("name") != "all"
        edits = (device.get("containerEdits") or {}) if named else {}
        for node in edits.get("deviceNodes") or [] if isinstance(edits, dict) else []:
            path = node.get("path") if isinstance(node, dict) else None
            if isinstance(path, str) and path.startswith(paths.RENDER_NODE_PREFIX):
                found.append(path)
    return sorted(found)


def survey_render_nodes(kfd: list[dict[str, Any]] | None) -> list[str] | None:
    """The render nodes of the GPUs KFD reports, sorted; None when KFD isn't there."""
    if kfd is None:
        return None
    return sorted(
        f"{paths.RENDER_NODE_PREFIX}{node['drm_render_minor']}"
        for node in kfd
        if node.get("drm_render_minor") is not None
    )


def cdi_spec_state(spec_text: str | None, kfd: list[dict[str, Any]] | None) -> str:
    """``missing`` (no spec, or not AMD's), ``stale`` (its GPUs aren't the ones KFD reports),
    ``current``, or ``unknown`` (KFD not there to compare)."""
    named, found = cdi_render_nodes(spec_text), survey_render_nodes(kfd)
    if named is None:
        return "missing"
    return "unknown" if found is None else "current" if named == found else "stale"
