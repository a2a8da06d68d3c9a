"""End to end: a desired state is the whole state (issue 19). A Debian 13 host on the ROCm
Core SDK 7.14.1 gets its RX 7900 XTX (gfx1100) swapped for an RX 9070 XT (gfx1201) and
``expected_gfx`` updated: the audit and ``--dry`` flag the old target's packages, one run
leaves only the new target's (``amdrocm7.14-gfx1201``, none of ``*-gfx1100``), and the next
changes nothing; a lower-case ``rocm_key_fingerprint`` changes nothing either.
"""

from __future__ import annotations

import runpy

import pytest

from e2e.support import (
    as_drift,
    audit,
    changed,
    deploy,
    inventory_with,
    running_lab,
    sh,
    succeeded,
)
from lab import HostSpec
from rocm_fleet.model import streams

pytestmark = pytest.mark.e2e

GFX1100 = {"rocm_version": "7.14.1", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
           "pytorch_install": False}  # fmt: skip
HOSTS = [HostSpec("swap", suite="trixie", profile="rx7900xtx", data=dict(GFX1100))]
PACKAGES_OP = "ROCm packages | Install the ROCm packages of the release"


@pytest.fixture(scope="module")
def lab():
    yield from running_lab(HOSTS, ["7.14.1"])


def core_sdk(lab) -> list[str]:
    out = sh(lab, "swap", "dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n'")
    rows = [line.split() for line in out.splitlines()]
    return sorted(w[1] for w in rows if w[0][0] == "i" and streams.CORE_SDK.owns(w[1], w[2]))


def test_the_card_swap_leaves_only_the_new_targets_packages(lab, tmp_path):
    succeeded(deploy(lab))
    before = core_sdk(lab)
    assert "amdrocm7.14-gfx1100" in before and "amdrocm-core7.14-gfx1100" in before, before

    lab.set_profile("swap", "rx9070xt")
    inventory = inventory_with(lab, tmp_path / "lab.py", {"expected_gfx": "gfx1201"})
    report = audit(lab, inventory=inventory)
    (row,) = report.json["hosts"]
    assert report.returncode == 1 and row["status"] == "drift", row
    assert as_drift("ROCm packages | Install the ROCm packages of the release") in row["drift"], row
    dry = deploy(lab, inventory=inventory, dry=True)
    assert changed(dry).get(PACKAGES_OP) == ["swap"], dry.output[-3000:]

    run = deploy(lab, inventory=inventory)
    succeeded(run)
    print(f"card swap: {run.seconds:.1f}s")
    after = core_sdk(lab)
    print(f"Core SDK packages after the swap: {after}")
    assert "amdrocm7.14-gfx1201" in after, after
    assert [name for name in after if name.endswith("-gfx1100")] == [], after
    assert "amdrocm7.14" not in after  # the every-target package never came

    again = deploy(lab, inventory=inventory)
    succeeded(again)
    assert changed(again) == {}, changed(again)
    report = audit(lab, inventory=inventory)
    assert report.returncode == 0 and report.json["hosts"][0]["status"] == "ok", report.stdout

    # The fingerprint the lab's inventory gives (its doubles' key), in lower case.
    ((_, data),) = runpy.run_path(str(lab.inventory))["lab"]
    fingerprint = data["rocm_key_fingerprint"]
    lower = inventory_with(
        lab,
        tmp_path / "lab.py",
        {"expected_gfx": "gfx1201", "rocm_key_fingerprint": fingerprint.lower()},
    )
    quiet = deploy(lab, inventory=lower)
    succeeded(quiet)
    assert changed(quiet) == {}, changed(quiet)
