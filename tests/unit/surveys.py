"""NodeSurvey results for plan and preflight tests: what a freshly installed host reports."""

from __future__ import annotations

import copy
from typing import Any

# One RX 7900 XTX on PCI (device 0x744c, tests/fixtures/sysfs/rx7900xtx), amdgpu not
# loaded yet, nothing of ROCm, NVIDIA or torch, plenty of space, connected as root.
FRESH: dict[str, Any] = {
    "distro": {"id": "debian", "id_like": [], "version_id": "12", "codename": "bookworm",
               "point_release": "12.9", "pretty_name": "Debian GNU/Linux 12 (bookworm)"},
    "arch": "amd64",
    "kernel": "6.12.38+deb13-amd64",  # new enough for every matrix distro
    "machine": "x86_64",
    "uid": 0,
    "user": "root",
    "kernels": ["6.12.38+deb13-amd64"],
    "pci": [{"slot": "0000:03:00.0", "device": "0x744c", "class": "0x030000",
             "driver": None}],
    "kfd": None,
    "secure_boot": {"state": "absent", "shim_validation_disabled": False, "setup_mode": False,
                    "message": ""},
    "mok": {"dkms": {"state": "absent", "message": ""},
            "shim": {"state": "absent", "message": ""}},
    "rocm_version": None,
    "packages": {"curl": "7.88.1-10+deb12u14"},
    "nvidia": {"packages": [], "modules": []},
    "sources": [],
    "pin": False,
    "amdgpu": {"loaded": False, "version": None, "initstate": None},
    "wsl": False,
    "reboot_required": False,
    "reboot_packages": [],
    "groups": {},
    "torch": None,
    "disk": [{"path": "/opt", "mount": "/", "avail": 80 * 10**9},
             {"path": "/var/cache/apt/archives", "mount": "/", "avail": 80 * 10**9}],
    "apt_need": None,
    "apt_message": "E: Unable to locate package rocm-hip-runtime",
}  # fmt: skip


def fresh_survey(os_release: dict[str, str] | None = None, arch: str = "amd64", **changes):
    """FRESH with the distro from an os-release mapping, the arch, and any top-level keys."""
    survey = copy.deepcopy(FRESH)
    if os_release is not None:
        survey["distro"] = {
            "id": os_release.get("ID", "").lower(),
            "id_like": os_release.get("ID_LIKE", "").split(),
            "version_id": os_release.get("VERSION_ID"),
            "codename": os_release.get("VERSION_CODENAME"),
            "point_release": None,
            "pretty_name": os_release.get("PRETTY_NAME"),
        }
    survey["arch"] = arch
    survey.update(changes)
    return survey
