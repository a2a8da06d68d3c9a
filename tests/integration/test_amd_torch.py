"""The tests of tests/unit/test_amd_torch.py that start a process or a loopback server (the
integration tier; the pure ones stay there)."""

from __future__ import annotations

from rocm_fleet.model import matrix
from rocm_fleet.model.config import load_config
from rocm_fleet.model.sources import torch_wheels
from unit.test_amd_torch import DATA


def test_a_bundle_resolves_amds_index_with_the_device_extras(tmp_path):
    """``rocm-fleet bundle``'s resolver over the double of AMD's stable index (the lab's,
    built from the recorded facts) on a loopback server: the [device-gfx1100] extras bring
    that target's wheels only, every wheel pinned with its hash for the host's pip."""
    from dataclasses import replace

    from lab import amd_wheels
    from rocm_fleet.bundle.build import Plan, make_bundle
    from rocm_fleet.model.matrix import DISTROS, HOST_RUNTIMES
    from rocm_fleet.model.sources import HostNeeds
    from rocm_fleet.upstream.http import Fetcher
    from rocm_fleet.upstream.manifest import locked_requirements, missing
    from unit.bundle.test_bundle import Quiet
    from unit.loopback import serve_trusted as serve

    www = tmp_path / "www"
    amd_wheels.build(www, [matrix.release("10.0.0")])
    config = load_config({**DATA, "rocm_version": "10.0.0"})
    bookworm = next(d for d in DISTROS if d.key == "debian 12")
    with serve(www) as served:
        url = f"{served.url}/{amd_wheels.PATH}/"
        need = replace(torch_wheels(config, HOST_RUNTIMES[bookworm.key]), index_url=url)
        plan_ = Plan()
        plan_.add("n", HostNeeds(wheels=(need,)), {})
        out = tmp_path / "bundle"
        manifest = make_bundle(plan_, out, Fetcher(progress=Quiet()))
    (wheel_set,) = manifest["wheel_sets"]
    pins = {name: pin["version"] for name, pin in wheel_set["pins"].items()}
    # rocm is AMD's sdist (the double serves it so): setuptools, its build backend, beside it.
    backend = pins.pop("setuptools")
    assert wheel_set["pins"]["setuptools"]["build"] is True
    assert pins == {
        "torch": "2.13.0+rocm10.0.0", "torchvision": "0.28.0+rocm10.0.0",
        "torchaudio": "2.11.0.2+rocm10.0.0", "amd-torch-device-gfx1100": "2.13.0+rocm10.0.0",
        "amd-torchvision-device-gfx1100": "0.28.0+rocm10.0.0", "filelock": "3.13.1",
        "rocm": "10.0.0", "rocm-sdk-core": "10.0.0", "rocm-sdk-libraries": "10.0.0",
        "rocm-sdk-device-gfx1100": "10.0.0",
    }  # fmt: skip
    assert wheel_set["pins"]["rocm"]["path"].endswith("/rocm-10.0.0.tar.gz")
    assert missing(str(out), HostNeeds(wheels=(need,))) == []
    locked = locked_requirements(str(out), need.index_url, need.runtime.python, need.requirements())
    assert "torch==2.13.0+rocm10.0.0 --hash=sha256:" in " ".join(locked)
    assert f"setuptools=={backend} --hash=sha256:" in " ".join(locked)
    assert locked[-1] == "--no-binary=rocm"
