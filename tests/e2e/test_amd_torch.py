"""End to end: torch for the ROCm Core SDK 10.x from AMD's own stable wheel index
(https://stable.repo.amd.com/rocm/whl-next/, doubled at its real URL from the recorded facts,
tests/lab/amd_wheels.py), where download.pytorch.org publishes none.

A Debian 13 host with a PRO W7900 (gfx1100) asks for 10.0.0 with ``pytorch_install``: the
run (pip from AMD's index with the ``[device-gfx1100]`` extras) installs the builds AMD's
10.0.0 page pins, the ROCm runtime torch requires and the target's device wheels, verifies
the GPU through torch, the node checks pass, and a torchvision removed behind rocm-fleet's
back is put back, nothing else changed. Then the same release for an air-gapped host:
``rocm-fleet bundle`` (made where the doubles are reachable) resolves AMD's index with the
host's extras and pins every wheel by hash; the air-gapped host serves it as its fleet's mirror and
converges from it without reaching any double, and a second run changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e import support
from e2e.support import changed, deploy, rocm_fleet, running_lab, sh, succeeded, wheels
from lab import HostSpec
from lab.upstreams import DOUBLES

pytestmark = pytest.mark.e2e

AMD = "https://stable.repo.amd.com/rocm/whl-next/"
DATA = {"rocm_version": "10.0.0", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip
TORCH_OP = "PyTorch | Install the torch wheels built for the ROCm release"
VERIFY = "Verify | Check rocminfo and torch see the expected GPUs"
HOST = HostSpec("amdtorch", suite="trixie", profile="w7900", data=DATA)
AIRGAP = HostSpec("airgap", suite="trixie", profile="w7900", data=DATA)


@pytest.fixture(scope="module")
def lab():
    yield from running_lab([HOST, AIRGAP], ["10.0.0"])


def test_10x_torch_comes_from_amds_index_verifies_and_then_changes_nothing(lab):
    # The run installs torch (its pip command, AMD's index and the extras, is what
    # tests/unit/test_amd_torch.py plans; --dry reporting exactly that is test_fleet.py's).
    assert not lab.root("amdtorch").joinpath(support.VENV_PYTHON.lstrip("/")).exists()
    since = len(lab.server.requests())
    result = deploy(lab, limit="amdtorch")
    succeeded(result)
    assert changed(result)[TORCH_OP] == ["amdtorch"]
    assert changed(result)[VERIFY] == ["amdtorch"]
    assert wheels(lab, "amdtorch") == {"torch": "2.13.0+rocm10.0.0",
                                       "torchvision": "0.28.0+rocm10.0.0",
                                       "torchaudio": "2.11.0.2+rocm10.0.0"}  # fmt: skip
    freeze = sh(lab, "amdtorch", f"{support.VENV_PYTHON} -m pip list --format=freeze").lower()
    freeze = freeze.replace("_", "-")
    for dist in (
        "rocm==10.0.0",
        "rocm-sdk-core==10.0.0",
        "rocm-sdk-libraries==10.0.0",
        "rocm-sdk-device-gfx1100==10.0.0",
        "amd-torch-device-gfx1100==2.13.0+rocm10.0.0",
        "amd-torchvision-device-gfx1100==0.28.0+rocm10.0.0",
    ):
        assert dist in freeze, freeze  # fmt: skip
    assert "rocm-sdk-device-gfx942" not in freeze  # only the host's target
    requests = lab.server.requests()[since:]
    fetched = [r["path"] for r in requests if r["host"] == "stable.repo.amd.com"]
    assert "/rocm/whl-next/torch/" in fetched, fetched
    # rocm, published only as an sdist, was built on the host from the locked sdist with
    # the locked setuptools (no wheel of it exists on the index)...
    assert "/rocm/whl-next/rocm-10.0.0.tar.gz" in fetched, fetched
    assert any(p.startswith("/rocm/whl-next/setuptools-") for p in fetched), fetched
    # setuptools built it from a scratch directory: the venv holds only the set.
    from importlib.metadata import version  # the lab packs its own setuptools for the index

    assert f"setuptools=={version('setuptools')}" not in freeze, freeze
    assert not [r for r in lab.server.requests()[since:] if r["host"] == "download.pytorch.org"]

    check = [str(Path(lab.env()["PATH"].split(":")[0]) / "python"), "-m", "rocm_fleet.cli",
             "check", str(lab.inventory), "--limit", "amdtorch"]  # fmt: skip
    checked = lab.run(check, timeout=600)
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]

    # drift: torchvision removed by hand; the next run puts back the pinned build and
    # changes nothing else (the converged node's second run; the torch install's own second
    # run, changing nothing, is the air-gap test's last)
    sh(lab, "amdtorch", f"{support.VENV_PYTHON} -m pip uninstall --yes torchvision")
    repaired = deploy(lab, limit="amdtorch")
    succeeded(repaired)
    assert set(changed(repaired)) <= {TORCH_OP, VERIFY}, changed(repaired)
    assert changed(repaired)[TORCH_OP] == ["amdtorch"]
    assert wheels(lab, "amdtorch")["torchvision"] == "0.28.0+rocm10.0.0"


def test_an_air_gapped_10x_host_gets_amds_torch_from_a_bundle(lab):
    """airgap serves the bundle itself, as its fleet's mirror (test_containers.py's air-gapped
    node does the same; a mirror serving other hosts is test_offline.py's): amdtorch is not
    touched, so each test runs alone and in any order."""
    bundle = lab.workdir / "bundle"
    lab.open_upstreams()
    made = rocm_fleet(lab, "bundle", str(lab.inventory), "--output", str(bundle),
                      "--limit", "airgap",
                      env={"REQUESTS_CA_BUNDLE": str(lab.ca_cert)})  # fmt: skip
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    manifest = json.loads((bundle / "manifest.json").read_text())
    (wheel_set,) = manifest["wheel_sets"]
    assert wheel_set["index_url"] == AMD
    pins = {name: pin["version"] for name, pin in wheel_set["pins"].items()}
    assert pins["torch"] == "2.13.0+rocm10.0.0"
    assert pins["amd-torch-device-gfx1100"] == "2.13.0+rocm10.0.0"
    assert pins["rocm"] == "10.0.0" and pins["rocm-sdk-device-gfx1100"] == "10.0.0"
    # rocm as AMD publishes it, an sdist, and the setuptools wheel that builds it on the host.
    assert wheel_set["pins"]["rocm"]["path"].endswith("/rocm-10.0.0.tar.gz")
    assert wheel_set["pins"]["setuptools"]["build"] is True
    assert wheel_set["pins"]["setuptools"]["runtime"] is False  # only to build rocm
    assert not [p for p in pins if p.endswith("-gfx942")]  # the hosts' target only

    # The air gap closes (Debian's mirror is the site's, never closed: airgap, not yet a ROCm
    # node, has no AMD source for apt to reach when it installs nginx).
    data = ["rocm_mirror=airgap", f"rocm_mirror_bundle={bundle}"]
    lab.close_upstreams(hosts=["airgap"])
    try:
        since = len(lab.server.requests())
        first = deploy(lab, limit="airgap", data=data)
        succeeded(first)
        reached = {r["client"] for r in lab.server.requests()[since:] if r["host"] in DOUBLES}
        again = deploy(lab, limit="airgap", data=data)
    finally:
        lab.open_upstreams(hosts=["airgap"])
    assert wheels(lab, "airgap") == {"torch": "2.13.0+rocm10.0.0",
                                     "torchvision": "0.28.0+rocm10.0.0",
                                     "torchaudio": "2.11.0.2+rocm10.0.0"}  # fmt: skip
    freeze = sh(lab, "airgap", f"{support.VENV_PYTHON} -m pip list --format=freeze").lower()
    assert "amd-torch-device-gfx1100==2.13.0+rocm10.0.0" in freeze.replace("_", "-"), freeze
    assert "rocm==10.0.0" in freeze, freeze  # built on the host, from the bundled sdist
    assert lab.address("airgap") not in reached, reached
    succeeded(again)
    assert changed(again) == {}
