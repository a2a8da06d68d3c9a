"""The pure tier: no test here starts a process or connects a socket (a hook below fails one
that does, naming the tier it belongs in), and none may monkey-patch the process for gevent,
which importing pyinfra's CLI does (tests/integration runs after this tier in one process).
The fixtures below are tests/integration's too (its conftest imports them)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

PURE = Path(__file__).resolve().parent
MOVE = (
    "{what} in the pure tier (tests/unit): a test that needs it belongs in tests/integration "
    "(move it to the file of the same name there)"
)


def _refused(what: str):
    def refuse(*args, **kwargs):
        pytest.fail(MOVE.format(what=what), pytrace=True)

    return refuse


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Processes and sockets are refused from the test's setup (fixtures of every scope) to
    its teardown; the failure is a BaseException, so code under test can't swallow it."""
    if PURE not in item.path.parents:
        return (yield)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", _refused("a process started"))
        for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
            patch.setattr(os, name, _refused(f"os.{name}"))
        for name in ("connect", "connect_ex"):
            patch.setattr(socket.socket, name, _refused("a socket connected"))
        return (yield)


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
    """The deploy asks upstream (upstream.matrix_check) whether it publishes a site file's rows
    before it plans a host from one; upstream's hosts are the lab's doubles, not here: every
    check holds."""
    from rocm_fleet.upstream import matrix_check

    monkeypatch.setattr(matrix_check, "_VERIFIED", {})
    monkeypatch.setattr(matrix_check, "release_checks", lambda releases, upstream, keys: [])
