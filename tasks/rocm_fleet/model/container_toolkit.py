"""AMD's container toolkit (``amd-container-toolkit``: ``amd-ctk``, ``amd-container-runtime``) as
AMD publishes it: releases, the apt suites it is built for, its repository and key; and the
engine versions that read CDI; and whether a CDI spec still names the GPUs KFD reports. A
hand-kept table (AMD publishes it as prose, not data), each fact cited in ``SOURCE``."""

from __future__ import annotations

import json
from typing import Any

from rocm_fleet.model import paths

_REPO = "ROCm/container-toolkit @ 192fe8e9e7044562440ae99ba44f913f7ebb81c9 (2026-07-09)"
#: Where each fact below comes from.
SOURCE = (
    f"{_REPO}: docs/container-runtime/release-notes.rst (Compatibility Matrix: 1.0.0 to 1.3.0, "
    "Ubuntu 22.04 and 24.04), quick-start-guide.rst Step 3 (the apt line: "
    "repo.radeon.com/amd-container-toolkit/apt/ <VERSION_CODENAME> main, signed by "
    "repo.radeon.com/rocm/rocm.gpg.key), cmd/amd-ctk/runtime/engine/docker/docker.go (daemon.json: "
    'features.cdi and runtimes.amd = {"path": "amd-container-runtime", "args": []}), '
    "internal/cdi/cdi.go (the spec: kind amd.com/gpu, one device per GPU and 'all')"
)
#: The releases, oldest first; the default is the newest.
RELEASES = ("1.0.0", "1.1.0", "1.2.0", "1.3.0")
DEFAULT_RELEASE = RELEASES[-1]
PACKAGE = "amd-container-toolkit"
APT_URL = "https://repo.radeon.com/amd-container-toolkit/apt"
#: Ubuntu suite -> the distro AMD supports it on. A Debian release whose ROCm suite is one of
#: these (the matrix's ``suite``) takes it too, warned as AMD doesn't list Debian.
SUITES = {"jammy": "ubuntu 22.04", "noble": "ubuntu 24.04"}
#: Signed by the classic ROCm key (``SOURCE``): the key of ``rocm_amdgpu_key_url`` and
#: ``rocm_amdgpu_key_fingerprint``, the matrix's by default.
#: The OCI runtime Docker gets where it has no CDI.
RUNTIME_NAME = "amd"
RUNTIME_PATH = "amd-container-runtime"
#: The CDI spec's kind and file.
CDI_KIND = "amd.com/gpu"
CDI_SPEC = paths.CDI_SPEC

#: The first engine versions that read CDI specs: Docker 25.0 with daemon.json's
#: ``features.cdi`` (AMD's requirements.rst: "Docker 25.0+"; its docker.go sets that key),
#: Podman 4.1 natively, reading /etc/cdi with no configuration (running-workloads.rst shows
#: ``podman run --device amd.com/gpu=all``; the 4.1 floor is not yet cited).
DOCKER_CDI = (25, 0)
PODMAN_CDI = (4, 1)
#: The CDI version of the spec ``amd-ctk`` writes (ROCm/container-toolkit internal/cdi/cdi.go),
#: and the oldest Podman taken to read it: Debian 12's Podman 4.3.1 refuses it ("invalid CDI
#: Spec: invalid version", measured with Debian's own package:
#: tests/fixtures/upstream/amd-container-toolkit.toml), Debian 13's 5.4 reads it; the floor is
#: the minor after the one known to fail. Preflight refuses an older Podman.
AMD_CDI_VERSION = "0.6.0"
PODMAN_AMD_CDI = (4, 4)


def suite_for(key: str, suite: str) -> tuple[str | None, str | None]:
    """(the toolkit's suite for a distro row, a warning) for the matrix row ``key`` whose ROCm
    suite is ``suite``; (None, None) when AMD builds the toolkit for neither."""
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
        if not isinstance(device, dict) or device.get("name") == "all":
            continue
        edits = device.get("containerEdits") or {}
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
    """``missing`` (no spec, or not AMD's), ``stale`` (its GPUs aren't the ones KFD reports:
    a card swapped, added or gone), ``current``, or ``unknown`` (KFD not there to compare)."""
    named = cdi_render_nodes(spec_text)
    if named is None:
        return "missing"
    found = survey_render_nodes(kfd)
    if found is None:
        return "unknown"
    return "current" if named == found else "stale"
