"""What AMD's ROCm Validation Suite prints on the lab's GPUs: recorded GST logs in a host root.

The ``rvs`` double (amd_repo.py's ``rocm-validation-suite``, POSIX sh) prints, for ``rvs -c
<conf>/<GPU folder>/gst_single.conf``, the log kept for that GPU folder here (the recorded
outputs of tests/fixtures/acceptance, README there); a folder with none gets RVS's own
"no platform support" error. :func:`set_below` is the knob per host: that node's GST falls
below AMD's target (its recorded FAIL log) until it is set back.
"""

from __future__ import annotations

from pathlib import Path

from ._util import REPO_ROOT

#: in the host root; the double prints ``<GPU folder>.log`` from here
DATA_DIR = "etc/rocm-fleet-lab/rvs"
FIXTURES = REPO_ROOT / "tests/fixtures/acceptance"
#: AMD's configuration folder -> (the passing log, the log below target)
LOGS = {"nv31": ("rvs_gst_nv31_pass.log", "rvs_gst_nv31_hgemm_low.log")}
#: the configurations the package ships (AMD's folders and action names, targets not needed
#: by the double; the real files: ROCm/ROCmValidationSuite rvs/conf/<folder>/gst_single.conf)
CONFS = {
    folder: "actions:\n" + "".join(f"- name: {a}\n  module: gst\n" for a in actions)
    for folder, actions in {
        "nv31": [
            "gpustress-10000-sgemm-false", "gpustress-10000-sgemm-true",
            "gpustress-4096-hgemm-false", "gpustress-4096-hgemm-true",
            "gpustress-8000-device-false",
        ],
    }.items()
}  # fmt: skip


def write(root: Path, below: bool = False) -> None:
    """The host's RVS logs: each folder's passing one, or the one below target."""
    directory = root / DATA_DIR
    directory.mkdir(parents=True, exist_ok=True)
    for folder, (passing, low) in LOGS.items():
        path = directory / f"{folder}.log"
        path.write_text((FIXTURES / (low if below else passing)).read_text())
        path.chmod(0o644)


def set_below(root: Path, below: bool) -> None:
    """The knob: this host's GST below AMD's target (True) or meeting it (False)."""
    write(root, below)


RVS = f"""#!/bin/sh
# rvs double (rocm-fleet lab): ``rvs -c FILE`` prints the recorded log of FILE's GPU folder
# from /{DATA_DIR} (tests/lab/rvs.py). Other options and modules are not doubled.
conf=
while [ $# -gt 0 ]; do
    case $1 in -c) conf=$2; shift ;; esac
    shift
done
if [ -z "$conf" ] || [ ! -r "$conf" ]; then
    echo "RVS-ERROR [CLI] Missing or invalid configuration file: $conf" >&2
    exit 1
fi
folder=$(basename "$(dirname "$conf")")
log=/{DATA_DIR}/$folder.log
if [ ! -r "$log" ]; then
    echo "RVS-ERROR [CLI] No platform support for the detected GPU or no GPU detected !" >&2
    exit 1
fi
cat "$log"
"""
