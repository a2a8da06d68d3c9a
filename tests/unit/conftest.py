"""Unit tests run in one process beside the lab's threads (pytest collects tests/e2e first,
and its fleet lives for the whole session): none may monkey-patch the process for gevent,
which importing pyinfra's CLI does. Code that needs the CLI runs in a child process."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _process_stays_unpatched():
    yield
    from gevent import monkey

    assert not monkey.is_module_patched("threading"), (
        "this test imported pyinfra_cli (gevent's monkey patching) into the test process: "
        "run that code in a subprocess"
    )


@pytest.fixture
def plain_inventories(monkeypatch):
    """``rocm-fleet bundle``'s plan reads a plain inventory file (``hosts = [...]``) in this
    process: the real loader imports pyinfra's CLI (test_cli runs that in a subprocess)."""
    import runpy

    from pyinfra.api import Inventory

    from rocm_fleet.bundle import command as bundle

    def inventory_of(path, limits, check_for_changes):
        hosts = runpy.run_path(path)["hosts"]
        return None, list(Inventory((hosts, {})))

    monkeypatch.setattr(bundle, "load_inventory", inventory_of)


@pytest.fixture(autouse=True)
def upstream_locks(monkeypatch, tmp_path_factory):
    """Every plan in this process locks wheels with ``UpstreamLocks``; a child process
    gets an empty lock cache and lock key of its own (never the user's)."""
    from rocm_fleet.deploy import pytorch
    from unit.locks import UpstreamLocks

    locks = UpstreamLocks()
    monkeypatch.setattr(pytorch, "controller_locks", lambda: locks)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    return locks


@pytest.fixture
def fleet_rows(monkeypatch):
    """The audit's rows of five hosts: clean, drifted, refused, invalid, unreachable."""
    from pyinfra.api.exceptions import ConnectError

    from rocm_fleet.model import paths
    from rocm_fleet.model.host_survey import HostSurvey
    from unit.audit.test_audit import DATA, UNREACHABLE, SurveyHost, converged, fresh_survey
    from unit.audit.test_audit import gather as audit_gather

    pending = {"required": True, "packages": ["linux-image-6.1.0-28-amd64"], "reasons": []}
    return audit_gather(
        monkeypatch,
        {
            "clean.lab.example.org": (DATA, SurveyHost(converged())),
            "drifty.lab.example.org": (
                DATA,
                SurveyHost(converged(files={paths.ROCM_PIN: None}, reboot=pending)),
            ),
            "refused.lab.example.org": (DATA, SurveyHost(fresh_survey("debian-12", "arm64"))),
            "typo": ({**DATA, "rocm_verison": "6.4.3"}, SurveyHost(HostSurvey())),
            "gone": (DATA, ConnectError(UNREACHABLE)),
        },
    )


@pytest.fixture
def group_rows(monkeypatch):
    """Four MI300X hosts of one inventory group: one with an uncorrectable ECC error, one
    running another kernel than the other three."""
    from unit.audit.test_audit import DATA, SurveyHost, amd_smi_health, converged, gather

    other_kernel = {"kernel": "6.1.0-99-amd64"}
    hosts = {
        "mi-a": (DATA, SurveyHost(converged(), health=amd_smi_health())),
        "mi-b": (DATA, SurveyHost(converged(), health=amd_smi_health())),
        "mi-c": (DATA, SurveyHost(converged(**other_kernel), health=amd_smi_health())),
        "mi-d": (
            DATA,
            SurveyHost(converged(), health=amd_smi_health("metric_mi300x_ecc_errors.json")),
        ),
    }
    return gather(monkeypatch, hosts, groups={"mi300": list(hosts)})


# A site's own matrix data adding a release no rocm-fleet commits and whose driver AMD has
# named nowhere (synthetic: AMD has published no 10.9.0): what a host naming a release the
# matrix knows no driver for is planned from.
DRIVERLESS_SITE = Path(__file__).resolve().parents[1] / "fixtures" / "site" / "future-10.9.0.json"
DRIVERLESS = {"rocm_version": "10.9.0", "rocm_matrix_data": str(DRIVERLESS_SITE)}


@pytest.fixture
def upstream_publishes_site_rows(monkeypatch):
    """The deploy asks upstream (upstream.site_check) whether it publishes a site file's rows
    before it plans a host from one; upstream's hosts are the lab's doubles, not here: every
    check holds."""
    from rocm_fleet.upstream import site_check

    monkeypatch.setattr(site_check, "_VERIFIED", {})
    monkeypatch.setattr(site_check, "release_checks", lambda releases, upstream, keys: [])
