"""End to end: GPU health in the node checks. An 8x MI300X host deployed with the ``rocm``
meta package (which brings amd-smi, the lab's double serving real amd-smi JSON) passes the
health check; a GPU whose link narrows to x8, or that counts an uncorrectable ECC error, fails
it with the GPU, its slot and the reason; the audit reads the same and reports it."""

from __future__ import annotations

import sys

import pytest

from e2e.support import audit, deploy, running_lab, succeeded
from lab import HostSpec, smi

pytestmark = pytest.mark.e2e

HOST = HostSpec("mi300", suite="trixie", profile="mi300x-8",
                data={"rocm_version": "7.2.1", "expected_gfx": "gfx942", "expected_gpu_count": 8,
                      "rocm_packages": ["rocm"], "pytorch_install": False})  # fmt: skip


@pytest.fixture(scope="module")
def lab():
    yield from running_lab([HOST], ["7.2.1"])


def check(lab):
    return lab.run([sys.executable, "-m", "rocm_fleet.cli", "check", str(lab.inventory),
                    "--limit", "mi300", "-v"], timeout=600)  # fmt: skip


def test_health_passes_then_fails_for_a_narrowed_link_and_an_ecc_error(lab):
    succeeded(deploy(lab, limit="mi300"))
    good = check(lab)
    print(good.stdout[-3000:])
    assert good.returncode == 0, good.stdout[-4000:] + good.stderr[-2000:]
    # check's own report: one line per host and check (docs/check.md)
    assert "ok           mi300  gpus are healthy" in good.stdout.splitlines()

    smi.set_gpu(lab.root("mi300"), 5, pcie={"width": 8})
    smi.set_gpu(lab.root("mi300"), 2, ecc={"total_uncorrectable_count": 1})
    bad = check(lab)
    print(bad.stdout[-3000:])
    assert bad.returncode != 0
    assert "GPU 2 (0000:23:00.0): 1 uncorrectable ECC errors" in bad.stdout
    assert "GPU 5 (0000:53:00.0): PCIe link x8, the card has x16" in bad.stdout

    # the audit reads the same amd-smi over SSH: the problems in its health cell, as drift,
    # and every GPU's counters in the metrics
    report = audit(lab, "--limit", "mi300")
    assert report.json is not None, report.stdout + report.stderr[-3000:]
    (row,) = report.json["hosts"]
    health = row["cells"]["health"]
    assert health["drift"] and row["status"] == "drift" and "health" in row["drift"], row
    assert health["problems"] == [
        "GPU 2 (0000:23:00.0): 1 uncorrectable ECC errors",
        "GPU 5 (0000:53:00.0): PCIe link x8, the card has x16",
    ]
    assert len(row["health"]["gpus"]) == 8 and report.returncode == 1
    metrics = lab.run([sys.executable, "-m", "rocm_fleet.cli", "audit", str(lab.inventory),
                       "--limit", "mi300", "--format", "openmetrics"], timeout=600)  # fmt: skip
    assert 'rocm_fleet_gpu_healthy{bdf="0000:23:00.0",gpu="2",host="mi300"} 0.0' in metrics.stdout
    assert 'rocm_fleet_gpu_pcie_link_width{bdf="0000:53:00.0",gpu="5",host="mi300"} 8.0' in (
        metrics.stdout
    )
