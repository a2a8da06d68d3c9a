"""rocm-fleet audit (rocm_fleet.audit.rows, audit.screens): the cells of what the
survey saw, the drift the plan finds per concern, the rows ``gather`` builds, the table and
the exit status.

``gather`` runs for real against an inventory of harness hosts (``unit.surveys``): each
host answers preflight's survey from a converged or drifted survey, or fails to connect;
only the loading of the inventory file and the connection are stood in for.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from pyinfra.api import Config, Inventory, State
from pyinfra.api.exceptions import ConnectError

from rocm_fleet.audit import rows as audit_reads
from rocm_fleet.audit import rows as audit_rows
from rocm_fleet.audit import screens as audit_screens
from rocm_fleet.audit.cells import OBSERVED, OPTIONAL, AuditRow
from rocm_fleet.engine.host_plans import planned_operations
from rocm_fleet.facts.apt import DpkgInterrupted, InstalledPackages
from rocm_fleet.facts.round_trip import Survey
from rocm_fleet.model import paths
from rocm_fleet.model.config import load_config
from rocm_fleet.model.host_survey import HostSurvey
from rocm_fleet.model.observed import observe
from rocm_fleet.model.slurm import SlurmNodeView
from unit.surveys import SurveyHost, changed, converged_survey, fresh_survey, plan

DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip
REPO = "ROCm apt repository"
REPO_ID = "rocm_apt_repository"
PIN = "Pin AMD's repository above the distribution's own ROCm packages"
CONCERNS = [REPO, "ROCm packages", "GPU groups", "PyTorch", "Reboot", "Verify"]


def converged(**changes):
    return changed(converged_survey(DATA, "debian-12"), **changes)


def observed_cells(config, survey):
    return audit_rows.seen_cells(config, observe(survey, config))


def cells(data=None, **changes):
    return observed_cells(load_config({**DATA, **(data or {})}, "n"), converged(**changes))


# --- observed cells ---------------------------------------------------------------------------


def test_a_converged_host_shows_what_it_runs_without_drift():
    shown = cells()
    assert {key: c.text for key, c in shown.items()} == {
        "distro": "debian 12",
        "kernel": "6.1.0-31-amd64",
        "secure_boot": "unknown (no mokutil)",
        "rocm": "6.4.3-128",
        "torch": "2.9.1+rocm6.4 (hip 6.4.43482-0f2d60242)",
        "gpus": "1 x gfx1100 / 1 x gfx1100",
        "driver": "amdgpu (inbox)",
        "reboot": "no",
        "slurm": "off",
    }
    assert [key for key, c in shown.items() if c.drift] == []
    assert shown.torch.build == "rocm" and shown.gpus.found == ("gfx1100",)
    json.dumps(shown.to_json())  # --json prints them


def test_an_apus_gpu_column_says_it_is_an_apu_with_its_carve_out_and_gtt():
    # amdgpu's totals of a Strix Halo (tests/fixtures/sysfs/strixhalo), on its PCI device
    pci = [
        {
            "slot": "0000:c6:00.0",
            "vendor": "0x1002",
            "device": "0x1586",
            "class": "0x038000",
            "driver": "amdgpu",
            "vram_total": 4294967296,
            "gtt_total": 103079215104,
        }
    ]
    kfd = [{"node": 1, "gfx": "gfx1151", "device_id": "0x1586", "slot": "0000:c6:00.0"}]
    shown = cells({"expected_gfx": "gfx1151"}, pci=pci, kfd=kfd).gpus
    assert shown.text == ("1 x gfx1151 / 1 x gfx1151 (APU: 4.0 GiB VRAM carve-out, 96.0 GiB GTT)")
    assert shown.to_json()["apus"] == [
        {
            "gfx": "gfx1151",
            "slot": "0000:c6:00.0",
            "vram_total": 4294967296,
            "gtt_total": 103079215104,
        }
    ]
    assert cells().gpus.apus == ()  # an RX 7900 XTX is no APU


def test_a_newer_installed_kernel_is_shown_not_drift():
    survey = converged()
    survey.packages["linux-image-6.1.0-28-amd64"] = "6.1.119-1"  # older: not shown
    survey.packages["linux-image-6.12.38+deb12-amd64"] = "6.12.38-1~bpo12+1"
    shown = observed_cells(load_config(DATA, "n"), survey).kernel
    assert shown.to_json() == {"text": "6.1.0-31-amd64 (newer installed: 6.12.38+deb12-amd64)",
                     "drift": False, "running": "6.1.0-31-amd64",
                     "newer": "6.12.38+deb12-amd64"}  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "key", "text"),
    [
        ({"reboot": {"required": True, "packages": ["amdgpu-dkms"],
                     "reasons": ["new driver amdgpu-dkms"]}},
         "reboot", "pending: new driver amdgpu-dkms; amdgpu-dkms"),
        ({"reboot": {"required": True, "packages": [], "reasons": []}}, "reboot", "pending"),
        ({"pci": [{"slot": "0000:03:00.0", "vendor": "0x1002", "device": "0x744c",
                   "class": "0x030000", "driver": None}], "amdgpu": {"loaded": False}},
         "driver", "none (GPU not bound to amdgpu)"),
    ],
)  # fmt: skip
def test_only_an_undriven_gpu_and_a_pending_reboot_are_observed_drift(changes, key, text):
    shown = cells(**changes)
    assert [k for k, c in shown.items() if c.drift] == [key]
    assert shown.get(key).text == text


def test_a_next_kernel_the_driver_is_not_ready_for_is_drift_even_without_a_pending_reboot():
    survey = converged()
    (running,) = survey.boot.kernels
    newer = replace(running, release="6.1.0-99-amd64", dkms_module=None)
    # an unattended upgrade's kernel, no DKMS build
    survey = replace(survey, boot=replace(survey.boot, kernels=(running, newer)))
    config = load_config({**DATA, "rocm_driver": "dkms"}, "n")
    shown = observed_cells(config, survey).reboot
    assert shown.drift and shown.text.startswith(
        "no | NOT SAFE: next boot 6.1.0-99-amd64 (newest installed kernel (no /boot/grub/"
        "grub.cfg)): amdgpu-dkms is not built for kernel 6.1.0-99-amd64"
    )
    assert [(k.kernel, k.ready) for k in shown.boot.kernels] == [
        ("6.1.0-99-amd64", False),
        (running.release, running.dkms_module is not None),
    ]
    # The kernel's own driver is in both: nothing to report.
    ready = observed_cells(load_config(DATA, "n"), survey).reboot
    assert (ready.text, ready.drift, ready.boot.next) == ("no", False, "6.1.0-99-amd64")


def test_a_host_whose_next_kernel_cant_be_told_is_said_not_drift_nor_a_pending_reboot():
    """Seen on a real Ubuntu 24.04 cloud host (the lent CUDA machine, kernel
    6.18.44-fc-v1252-gpu, booted by its hypervisor): no /boot/grub/grub.cfg and no kernel in
    /boot. The audit says the next boot can't be told; no reboot is pending and nothing on the
    host could repair it, so it is no drift, and the reboot_pending metric stays 0."""
    from rocm_fleet.audit import metrics
    from rocm_fleet.audit.cells import AuditRow, ObservedCells

    survey = converged()
    survey = replace(survey, boot=replace(survey.boot, kernels=(), grub_cfg=None, grubenv={}))
    survey = replace(survey, kernel="6.18.44-fc-v1252-gpu")
    shown = observed_cells(load_config(DATA, "n"), survey).reboot
    assert shown.boot.next is None and shown.boot.refused
    assert not shown.drift and not shown.pending and not shown.unsafe
    assert shown.text.startswith("no | can't tell which kernel the node boots next")
    row = AuditRow("vm", "ok", cells=ObservedCells(reboot=shown))
    families = {name: samples for name, _, samples, _ in metrics.families([row], 0.0)}
    assert families["rocm_fleet_reboot_pending"] == [({"host": "vm"}, 0.0)]
    assert families["rocm_fleet_reboot_unsafe"] == [({"host": "vm"}, 0.0)]


def test_observed_cells_describe_what_no_operation_enforces():
    sb = {"state": "enabled", "shim_validation_disabled": False, "setup_mode": False,
          "message": "SecureBoot enabled"}  # fmt: skip
    shown = cells(
        secure_boot=sb,
        mok={paths.MOK_KEYS["debian"][0]: {"state": "pending"}},
        amdgpu={"loaded": True, "version": "6.12.12", "initstate": "live"},
        venv={"torch": "2.9.1+cu128"},
        torch_build={"hip": None, "cuda": "12.8"},
        kfd=None,
        pci=[],
    )
    assert shown.secure_boot.text == "enabled, MOK pending"
    assert shown.driver.text == "amdgpu 6.12.12"
    assert shown.torch.text == "2.9.1+cu128" and shown.torch.build == "cuda"
    assert shown.gpus.text == "1 x gfx1100 / no AMD GPU"
    assert [k for k, c in shown.items() if c.drift] == []  # the plan reports those
    gpu_less = cells({"expected_gpu_count": 0, "expected_gfx": None}, pci=[], kfd=None)
    assert gpu_less.gpus.text == "none / no AMD GPU"


def test_slurm_gres_that_is_not_what_the_gpus_make_is_the_slurm_cells_drift(monkeypatch):
    """rocm_slurm_gres: Slurm's Gres= for the node against its GPUs (one RX 7900 XTX), as the
    node check judges it; the deploy can only warn (slurm.conf is the site's)."""
    slurm = {**DATA, "rocm_slurm_gres": True, "rocm_slurm_node_name": "gpu-a07"}
    agreed = converged(slurm_node=SlurmNodeView("gpu-a07", "gpu:gfx1100:1(S:0)"))
    unset = converged(slurm_node=SlurmNodeView("gpu-a07", "(null)"))
    unknown = converged(slurm_node=SlurmNodeView("gpu-a07", None, "Node gpu-a07 not found"))
    found = {
        row.host: row
        for row in gather(
            monkeypatch,
            {
                "agreed": (slurm, SurveyHost(agreed)),
                "unset": (slurm, SurveyHost(unset)),
                "unknown": (slurm, SurveyHost(unknown)),
                "off": (DATA, SurveyHost(unset)),
            },
        )
    }
    cell = found["agreed"].cells.slurm
    assert (cell.text, cell.drift) == ("gpu-a07: Gres=gpu:gfx1100:1(S:0)", False)
    assert "slurm" not in found["agreed"].drift
    cell = found["unset"].cells.slurm
    assert cell.drift and (cell.gres, cell.needs) == ("(null)", "gpu:gfx1100:1")
    assert cell.text.startswith(
        "! Slurm's node gpu-a07 has Gres=(null); its GPUs need Gres=gpu:gfx1100:1"
    )
    assert found["unset"].status == "drift" and "slurm" in found["unset"].drift
    assert found["unset"].to_json()["cells"]["slurm"]["needs"] == "gpu:gfx1100:1"
    cell = found["unknown"].cells.slurm
    assert cell.drift and "could not be asked about node gpu-a07" in cell.text
    assert found["off"].cells.slurm.text == "off" and "slurm" not in found["off"].drift


# --- drift from the plan ----------------------------------------------------------------------


def no_drift(concerns: list[str]) -> dict[str, list[str]]:
    return {concern: [] for concern in concerns}


def drift(survey, data=DATA):
    planned = plan(data, SurveyHost(survey))
    host = planned.state.inventory.get_host("node")
    return audit_rows.drift_by_concern(planned_operations(planned.state, host))


def test_a_converged_plan_has_every_concern_and_no_drift():
    assert drift(converged()) == no_drift(CONCERNS)


@pytest.mark.parametrize(
    ("changes", "concern", "operations"),
    [
        ({"files": {paths.ROCM_PIN: None}}, REPO, [PIN]),
        ({"keyrings": {paths.ROCM_KEYRING: None}}, REPO,
         ["Install AMD's signing key (fingerprint checked)"]),
        ({"groups": {"groups": ["video", "render"], "users": {"alice": ["alice", "video"]}}},
         "GPU groups", ["Give the GPU users video and render"]),
        ({"venv": {"torch": "2.9.1+rocm6.4", "torchvision": "0.24.1+cu128",
                   "torchaudio": "2.9.1+rocm6.4"}},
         "PyTorch", ["Install the torch wheels built for the ROCm release"]),
        ({"files": {paths.LD_CONF: None}}, "ROCm packages",
         ["Put /opt/rocm/lib on the dynamic loader path"]),  # not the ldconfig it gates
    ],
)  # fmt: skip
def test_a_drifted_resource_is_its_concerns_drift(changes, concern, operations):
    assert drift(converged(**changes)) == {**no_drift(CONCERNS), concern: operations}


def test_packages_of_another_release_are_rocm_packages_drift():
    survey = converged()
    survey.packages.update(
        {"rocm-hip-runtime": "7.2.1.70201-81~22.04", "rocm-core": "7.2.1.70201-81~22.04"}
    )
    assert drift(survey) == {
        **no_drift(CONCERNS),
        "ROCm packages": ["Install the ROCm packages of the release"],
    }


DKMS_CONCERNS = [REPO, "amdgpu driver", "Secure Boot", *CONCERNS[1:]]


def test_the_driver_concerns_appear_with_rocm_driver_dkms():
    data = {**DATA, "rocm_driver": "dkms"}
    assert drift(converged_survey(data, "debian-12"), data) == no_drift(DKMS_CONCERNS)


def test_a_key_secure_boot_would_reject_is_secure_boot_drift(monkeypatch):
    monkeypatch.setenv("ROCM_FLEET_MOK_PASSWORD", "correct horse battery staple")
    data = {**DATA, "rocm_driver": "dkms"}
    survey = converged_survey(data, "debian-12")
    cert = paths.MOK_KEYS["debian"][0]
    survey = replace(survey, secure_boot={"state": "enabled", "shim_validation_disabled": False,
                             "setup_mode": False, "message": "SecureBoot enabled"})  # fmt: skip
    survey.files[cert] = {"mode": "644", "sha256": "ab" * 32, "mtime": 1_700_000_000}
    survey.mok[cert] = {"state": "not_enrolled", "message": f"{cert} is not enrolled"}
    survey.mok_pending[cert] = {"pending": False, "fingerprint": "c8:39:a7", "requests": []}
    assert drift(survey, data) == {
        **no_drift(DKMS_CONCERNS),
        "Secure Boot": ["Queue the DKMS signing key for MOK enrollment"],
    }


# --- rows, table, exit status -----------------------------------------------------------------


def gather(
    monkeypatch,
    hosts: dict[str, tuple[dict, SurveyHost | Exception]],
    groups: dict[str, list[str]] | None = None,
    detail: bool = False,
) -> list[AuditRow]:
    """``audit_rows.gather`` over an inventory of these hosts (in ``groups``, when given):
    each answers its facts from a SurveyHost, or fails to connect with the exception."""
    inventory = Inventory(
        ([(name, dict(data)) for name, (data, _) in hosts.items()], {}),
        **{group: (names, {}) for group, names in (groups or {}).items()},
    )
    state = State(check_for_changes=True)
    state.init(inventory, Config())
    chosen = list(inventory)
    for host in chosen:
        answer = hosts[host.name][1]

        def connect(*args, _host=host, _answer=answer, **kwargs):
            if isinstance(_answer, Exception):
                raise _answer
            _host.connected = True

        host.connect = connect
        host.get_fact = answer
    monkeypatch.setattr(audit_rows, "load_inventory", lambda *args, **kwargs: (state, chosen))
    return audit_rows.gather("inventories/lab.py", [], detail=detail)


UNREACHABLE = "Could not connect ([Errno None] Unable to connect to port 22 on 10.213.0.16)"


@pytest.fixture
def rows(monkeypatch):
    return gather(
        monkeypatch,
        {
            "clean": (DATA, SurveyHost(converged())),
            "drifty": (
                DATA,
                SurveyHost(
                    converged(
                        files={paths.ROCM_PIN: None},
                        reboot={"required": True, "packages": [], "reasons": []},
                    )
                ),
            ),
            "refused": (DATA, SurveyHost(fresh_survey("debian-12", "arm64"))),
            "typo": ({**DATA, "rocm_verison": "6.4.3"}, SurveyHost(HostSurvey())),
            "nomirror": ({**DATA, "rocm_mirror": "mirror01"}, SurveyHost(HostSurvey())),
            "gone": (DATA, ConnectError(UNREACHABLE)),
        },
    )


def test_gather_gives_each_host_its_status_and_drift(rows):
    by_host = {row.host: row.to_json() for row in rows}  # as --format json prints them
    assert [row.host for row in rows] == [
        "clean", "drifty", "refused", "typo", "nomirror", "gone"
    ]  # fmt: skip
    assert {name: row["status"] for name, row in by_host.items()} == {
        "clean": "ok", "drifty": "drift", "refused": "refused", "typo": "invalid",
        "nomirror": "invalid", "gone": "unreachable",
    }  # fmt: skip
    # concerns by their stable ids in the rows (the JSON): their names only for the table
    assert by_host["clean"]["drift"] == [] and by_host["clean"]["concerns"][REPO_ID] == {
        "text": "ok", "drift": False, "name": REPO, "operations": []
    }  # fmt: skip
    assert by_host["drifty"]["drift"] == ["reboot", f"{REPO_ID}: {PIN}"]
    assert by_host["drifty"]["concerns"][REPO_ID]["text"] == f"! {PIN}"
    assert by_host["refused"]["error"] == (
        "architecture is arm64; AMD publishes ROCm for amd64 only: use an x86-64 machine"
    )
    assert by_host["typo"]["error"] == (
        "typo: unknown inventory key 'rocm_verison': did you mean 'rocm_version'?"
    )
    assert by_host["nomirror"]["error"].startswith(
        "nomirror: inventory key 'rocm_mirror' has value 'mirror01'; expected a host of the"
    )
    assert by_host["gone"]["error"] == UNREACHABLE
    json.dumps(list(by_host.values()))  # --json prints them


def test_the_json_keeps_the_keys_scripts_read(rows):
    """``--format json``'s host objects (``AuditRow.to_json``): the same keys, in the same
    order, whatever the rows' types are inside."""
    hosts = json.loads(audit_screens.render_json(rows, audit_rows.exit_status(rows)))["hosts"]
    common = ["host", "error", "drift", "cells", "concerns"]
    surveyed = [*common, "health", "outliers", "status"]
    # matrix_data: every host whose settings were read (not "typo" and "nomirror")
    assert {host["host"]: list(host) for host in hosts} == {
        "clean": [*surveyed, "warnings", "verified_at", "matrix_data"],
        "drifty": [*surveyed, "warnings", "verified_at", "matrix_data"],
        "refused": [*surveyed, "matrix_data"],
        "typo": [*common, "status"], "nomirror": [*common, "status"],
        "gone": [*common, "status", "matrix_data"],
    }  # fmt: skip
    assert {host.get("matrix_data") for host in hosts} == {"rocm-fleet's committed matrix", None}
    clean = hosts[0]
    # (an optional column, GPU containers, only where the inventory wants it)
    assert list(clean["cells"]) == [key for key in OBSERVED if key not in OPTIONAL]
    assert {key: list(found) for key, found in clean["cells"].items()} == {
        "distro": ["text", "drift"],
        "kernel": ["text", "drift", "running", "newer"],
        "secure_boot": ["text", "drift", "state", "mok"],
        "rocm": ["text", "drift", "installed"],
        "torch": ["text", "drift", "torch", "hip", "cuda", "build"],
        "gpus": ["text", "drift", "expected", "expected_count", "found", "apus"],
        "driver": ["text", "drift", "bound"],
        "reboot": ["text", "drift", "pending", "unsafe", "reasons", "boot"],
        "slurm": ["text", "drift", "node", "gres", "needs"],
        "health": ["text", "drift", "status", "problems"],
        "outlier": ["text", "drift"],
        "acceptance": ["text", "drift", "level", "passed", "finished_at"],
    }
    assert clean["cells"]["acceptance"]["text"] == "off"
    boot = clean["cells"]["reboot"]["boot"]
    assert list(boot) == ["next", "how", "refused", "kernels"]
    assert [list(kernel) for kernel in boot["kernels"]] == [["kernel", "ready", "problems"]]
    assert list(clean["concerns"][REPO_ID]) == ["text", "drift", "name", "operations"]


def test_hosts_whose_plans_branch_differently_share_each_operation(monkeypatch):
    # One host gets the DKMS driver's operations, the other none: planned in one state, as
    # the audit does, an operation must not be mistaken for another one because it sits at
    # the same position of another host's plan ("Cannot have different values ...").
    dkms = {**DATA, "rocm_driver": "dkms"}
    rows = gather(
        monkeypatch,
        {
            "inbox": (DATA, SurveyHost(converged())),
            "dkms": (dkms, SurveyHost(converged_survey(dkms, "debian-12"))),
        },
    )
    assert [(row.host, row.status, row.error) for row in rows] == [
        ("inbox", "ok", None),
        ("dkms", "ok", None),
    ]
    assert "amdgpu_driver" in rows[1].concerns and "amdgpu_driver" not in rows[0].concerns


def test_exit_status():
    ok = AuditRow("a", "ok")
    assert audit_rows.exit_status([]) == 0
    assert audit_rows.exit_status([ok]) == 0
    assert audit_rows.exit_status([ok, AuditRow("b", "drift")]) == 1
    assert audit_rows.exit_status([ok, AuditRow("b", "refused")]) == 1
    # cli.exits: bad input first, then findings, then what could not be checked
    for bad, status in (("unreachable", 1), ("failed", 1), ("invalid", 4)):
        assert audit_rows.exit_status([ok, AuditRow("b", "drift"), AuditRow("c", bad)]) == status
    assert audit_rows.exit_status([ok, AuditRow("c", "unreachable")]) == 2
    assert audit_rows.exit_status([ok, AuditRow("c", "failed")]) == 2


def test_exit_status_of_the_gathered_fleet(rows):
    assert audit_rows.exit_status(rows) == 4  # typo and nomirror: invalid inventory data
    assert audit_rows.exit_status([r for r in rows if r.status in ("ok", "unreachable")]) == 2
    assert audit_rows.exit_status([r for r in rows if r.status in ("ok", "drift")]) == 1
    assert audit_rows.exit_status([r for r in rows if r.status == "ok"]) == 0


def test_columns_are_the_observed_ones_then_the_concerns_in_plan_order(rows):
    shown = audit_screens.columns(rows)
    assert [(c.kind, c.key) for c in shown] == [
        *(("observed", key) for key in OBSERVED if key not in OPTIONAL),
        *(("concern", audit_rows.concern_id(name)) for name in CONCERNS),
    ]
    assert shown[len(OBSERVED) - len(OPTIONAL)].header == "ROCM APT REPOSITORY"
    headers = [c.header for c in shown]
    assert len(headers) == len(set(headers)), headers  # every column can be told apart


def test_table_marks_drift_and_explains_the_hosts_without_a_row(rows):
    table = audit_screens.render_table(rows).splitlines()
    header = table[0].split("  ")
    assert header[0] == "HOST" and "ROCM APT REPOSITORY" in table[0]
    lines = {line.split()[0]: line for line in table[1:-1]}
    assert "!" not in lines["clean"]
    assert f"! {PIN}" in lines["drifty"] and "! pending" in lines["drifty"]
    assert lines["refused"].split(None, 1)[1] == "! REFUSED: " + rows[2].error
    # bad inventory data: its keys are on stderr, one line each (audit.command prints them)
    invalid = "! INVALID: its inventory data is not valid (each bad key on stderr)"
    assert lines["typo"].split(None, 1)[1] == lines["nomirror"].split(None, 1)[1] == invalid
    assert lines["gone"].split(None, 1)[1] == f"! UNREACHABLE: {UNREACHABLE}"
    # The cells of the rows with data line up under their headers.
    start = table[0].index("ROCM APT REPOSITORY")
    assert lines["clean"][start:].startswith("ok ") and lines["drifty"][start:].startswith("! ")
    assert table[-1] == (
        "6 hosts: 1 as the inventory says, 1 drifted, 1 refused, 3 unreachable/failed/invalid"
    )
    coloured = audit_screens.render_table(rows, colour=True)
    assert f"\x1b[1;31m! {PIN}" in coloured and "\x1b[1;31m" not in coloured.splitlines()[1]


# --- the command line -------------------------------------------------------------------------
# Loading an inventory imports pyinfra's CLI, which monkey-patches the whole process for
# gevent: that runs in a child process here, never in the test process (the CLI's usage
# errors are tested the same way in test_cli.py).

SELECT = """
import sys
from rocm_fleet.cli.inventory import UsageError, load_inventory
for limit in sys.argv[1:]:
    try:
        print(limit, [h.name for h in load_inventory("lab.py", [limit], True)[1]])
    except UsageError as exc:
        print(limit, "UsageError:", exc)
"""


CLEAN_ABSENT = {InstalledPackages: {"curl": "7.88.1-10+deb12u14"}, DpkgInterrupted: []}


def test_a_decommissioned_host_audits_as_the_inventory_says(monkeypatch):
    """``rocm_state: absent`` has no preflight: a cleanly uninstalled host is ok (not
    "failed (preflight did not run)"), one with ROCm left on it drifts from absent."""
    absent = {**DATA, "rocm_state": "absent"}
    packages = {**CLEAN_ABSENT[InstalledPackages], "rocm-core": "6.4.3.60403-128~22.04"}
    left = {**CLEAN_ABSENT, InstalledPackages: packages}
    rows = gather(
        monkeypatch,
        {
            "gone": (absent, SurveyHost(HostSurvey(), other=CLEAN_ABSENT)),
            "leftover": (absent, SurveyHost(HostSurvey(), other=left)),
        },
    )
    by_host = {row.host: row for row in rows}
    assert by_host["gone"].status == "ok" and by_host["gone"].error is None
    assert by_host["gone"].cells.rocm.text == "absent (rocm_state)"
    assert by_host["leftover"].status == "drift"
    assert by_host["leftover"].drift == (
        "remove_rocm_packages: Purge AMD's ROCm packages (every release and stream)",
    )
    assert audit_rows.exit_status([by_host["gone"]]) == 0
    assert audit_rows.exit_status(rows) == 1


# --- GPU health and outliers ------------------------------------------------------------------


def amd_smi_health(metric="metric_mi300x_healthy.json", xgmi="xgmi_mi300x_up.json"):
    """What amd-smi's real output (tests/fixtures/amd-smi) reads as on an 8x MI300X."""
    from rocm_fleet.model.health import HostHealth, gpu_health
    from unit.facts.support import fixture

    gpus = gpu_health(*(fixture("amd-smi", name) for name in (metric, "static_mi300x.json", xgmi)))
    return HostHealth(status="ok", tool="/opt/rocm/bin/amd-smi", gpus=tuple(gpus))


def test_the_health_cell_says_ok_what_is_wrong_or_why_it_is_unknown():
    from rocm_fleet.model.health import HostHealth

    ok = audit_reads.health_cell(amd_smi_health())
    assert (ok.text, ok.drift) == ("ok (8 GPUs)", False)
    ecc = audit_reads.health_cell(amd_smi_health("metric_mi300x_ecc_errors.json"))
    assert ecc.drift and ecc.text.startswith("! GPU ")
    assert "uncorrectable ECC errors" in ecc.text and ecc.problems
    down = audit_reads.health_cell(amd_smi_health(xgmi="xgmi_mi300x_link_down.json"))
    assert down.drift and "XGMI links down" in down.text
    assert audit_reads.health_cell(HostHealth(status="no_tool")).text == "unknown (no amd-smi)"
    broken = HostHealth(status="error", message="amd-smi metric: exited 1")
    assert audit_reads.health_cell(broken).to_json() == {
        "text": "unknown (amd-smi metric: exited 1)", "drift": False, "status": "error",
        "problems": [],
    }  # fmt: skip
    assert audit_reads.health_cell(None).text == "unknown (the read failed)"


def test_the_audit_reads_health_and_reports_the_peers_outlier(group_rows):
    by_host = {row.host: row.to_json() for row in group_rows}  # as --format json prints them
    assert by_host["mi-a"]["status"] == "ok"
    assert by_host["mi-a"]["cells"]["health"]["text"] == "ok (8 GPUs)"
    assert by_host["mi-a"]["cells"]["outlier"] == {"text": "no", "drift": False}
    assert by_host["mi-a"]["health"]["gpus"][0]["ecc"] == {"correctable": 0, "uncorrectable": 0}
    sick = by_host["mi-d"]
    assert sick["status"] == "drift" and "health" in sick["drift"]
    assert sick["cells"]["health"]["drift"] and sick["outliers"] == []
    odd = by_host["mi-c"]
    # The deploy does not change a running kernel: the outlier is reported, not drift.
    assert "outlier: kernel" not in odd["drift"]
    (outlier,) = odd["outliers"]
    group = outlier["group"]  # the peers: distro release, GPU model, settings
    assert group.startswith("debian 12 / gfx1100 / settings ") and len(group) == 39
    assert (outlier["cell"], outlier["drift"]) == ("kernel", False)
    running = converged().kernel
    assert outlier["sentence"] == (
        f"mi-c: kernel 6.1.0-99-amd64, but 3 of 4 hosts in group {group} have {running}"
    )
    assert odd["cells"]["outlier"] == {
        "text": f"kernel 6.1.0-99-amd64 (3 of 4 in group {group} have {running})",
        "drift": False,
    }
    json.dumps(list(by_host.values()))  # --json prints them


def sick_problems(rows):
    return next(r for r in rows if r.host == "mi-d").cells.health.problems


def test_health_and_outliers_on_screen(group_rows):
    summary = audit_screens.render_summary(group_rows, width=160)
    header, *lines = summary.splitlines()
    assert header.split()[-1] == "HEALTH"
    mi_d = next(line for line in lines if line.startswith("mi-d"))
    assert len(sick_problems(group_rows)) == 1  # the fixture's one GPU with an error
    assert mi_d.endswith("! 1 problem")
    assert "  OUTLIER: kernel 6.1.0-99-amd64" in summary  # said, not drift
    assert "! GPU HEALTH: GPU " in summary
    wide = audit_screens.render_table(group_rows)
    assert "GPU HEALTH" in wide and "OUTLIER" in wide


# --- outliers among peers: a mixed fleet ------------------------------------------------------
# Two distros (Debian 12, Ubuntu 24.04: tests/fixtures/os-release) and two GPU models (an RX 7900
# XTX, 0x744c, tests/fixtures/sysfs/rx7900xtx; an MI300X, 0x74a1, tests/fixtures/sysfs/mi300x_x8)
# in one inventory group, each host converged: four Debian RX hosts, one of each other kind.
# Compared as one group, the Debian kernel (4 of 7) would make every other host an outlier.

MI300X_PCI = [{"slot": "0000:0c:00.0", "vendor": "0x1002", "device": "0x74a1",
               "class": "0x038000", "driver": None}]  # fmt: skip
RADEON = {**DATA, "pytorch_install": False}
INSTINCT = {**RADEON, "expected_gfx": "gfx942"}


def mixed_fleet(monkeypatch, **debian_rx_changes):
    """The mixed fleet's rows; ``rx-4`` (Debian, RX) with ``debian_rx_changes``."""
    debian_rx = converged_survey(RADEON, "debian-12")
    kinds = {
        "rx-1": (RADEON, debian_rx),
        "rx-2": (RADEON, debian_rx),
        "rx-3": (RADEON, debian_rx),
        "rx-4": (RADEON, changed(debian_rx, **debian_rx_changes)),
        "mi-deb": (INSTINCT, converged_survey(INSTINCT, "debian-12", pci=MI300X_PCI)),
        "rx-ubu": (RADEON, converged_survey(RADEON, "ubuntu-24.04")),
        "mi-ubu": (INSTINCT, converged_survey(INSTINCT, "ubuntu-24.04", pci=MI300X_PCI)),
    }
    hosts = {
        name: (data, SurveyHost(survey, health=amd_smi_health() if "mi" in name else None))
        for name, (data, survey) in kinds.items()
    }
    return gather(monkeypatch, hosts, groups={"gpu_nodes": list(hosts)})


def test_a_converged_mixed_fleet_has_no_outlier_and_exits_0(monkeypatch):
    rows = mixed_fleet(monkeypatch)
    assert {row.host: (row.status, row.drift) for row in rows} == {
        row.host: ("ok", ()) for row in rows
    }
    assert [o for row in rows for o in row.outliers] == []
    assert audit_rows.exit_status(rows) == 0
    distros = {row.cells.distro.text for row in rows}
    assert distros == {"debian 12", "ubuntu 24.04"}


def test_an_outlier_among_peers_is_named_with_the_majoritys_value(monkeypatch):
    rows = mixed_fleet(monkeypatch, kernel="6.1.0-99-amd64")
    by_host = {row.host: row.to_json() for row in rows}
    (outlier,) = by_host["rx-4"]["outliers"]
    assert outlier["group"].startswith("debian 12 / gfx1100 / settings ")
    assert (outlier["value"], outlier["majority"], outlier["hosts_with_majority"]) == (
        "6.1.0-99-amd64", "6.1.0-31-amd64", 3)  # fmt: skip
    assert (outlier["cell"], outlier["drift"]) == ("kernel", False)
    # Reported in its cell and on screen; the deploy would not change it: no drift.
    assert by_host["rx-4"]["cells"]["outlier"]["text"].startswith("kernel 6.1.0-99-amd64 (3 of 4")
    assert "outlier: kernel" not in by_host["rx-4"]["drift"]
    assert all(not by_host[h]["outliers"] for h in by_host if h != "rx-4")
    summary = audit_screens.render_summary(rows, width=200)
    assert "  OUTLIER: kernel 6.1.0-99-amd64 (3 of 4 in group debian 12 / gfx1100" in summary


def test_an_outlier_the_deploy_would_change_is_drift():
    from rocm_fleet.audit.outliers import HostVersions, outliers, with_drift

    hosts = {name: HostVersions("6.12.12", None, "k1", "6.4.3-128") for name in "abc"}
    hosts["d"] = HostVersions("6.12.12", None, "k1", "6.4.1-83")
    found = outliers({"debian 12 / gfx942 / settings 0123abcd": list(hosts)}, hosts)
    (rocm,) = with_drift(found, {"d": {"rocm_packages"}, "a": {"kernel"}})
    assert (rocm.host, rocm.cell, rocm.drift, rocm.majority) == ("d", "rocm", True, "6.4.3-128")
    (same,) = with_drift(found, {"d": {"kernel"}})  # another concern's drift: not this one's
    assert not same.drift
    row = AuditRow("d", "ok", cells=cells(), outliers=())
    (flagged,) = audit_rows.flag_outliers([row], [rocm])
    assert flagged.status == "drift" and flagged.drift == ("outlier: rocm",)
    assert flagged.cells.outlier.text.startswith("! rocm 6.4.1-83 (3 of 4 in group debian 12")


def test_the_json_carries_each_surveyed_hosts_changes_in_detail(monkeypatch):
    """``--format json`` (``gather(detail=True)``): a drifted host's packages and files, as
    ``--dry --diff`` shows them; a converged host's empty; the other keys as before."""

    from rocm_fleet.facts.apt import CandidateVersions
    from rocm_fleet.facts.files import FileText
    from unit.surveys import digest, fact_key

    pin = paths.ROCM_PIN
    old = "Package: *\nPin: release o=repo.radeon.com\nPin-Priority: 500\n"
    # rocm-core of 6.4.1 (repo.radeon.com/rocm/apt/6.4.1, jammy) where 6.4.3's is wanted
    packages = {**converged().packages, "rocm-core": "6.4.1.60401-83~22.04"}
    drifty = SurveyHost(
        converged(files={pin: digest(old)}, packages=packages),
        other={fact_key(FileText, path=pin): old,
               CandidateVersions: {"rocm-core": "6.4.3.60403-128~22.04"}},
    )  # fmt: skip
    hosts = {"clean": (DATA, SurveyHost(converged())), "drifty": (DATA, drifty),
             "gone": (DATA, ConnectError(UNREACHABLE))}  # fmt: skip
    plain = {row.host: row.to_json() for row in gather(monkeypatch, hosts)}
    found = {row.host: row.to_json() for row in gather(monkeypatch, hosts, detail=True)}
    assert found["clean"]["changes"] == {"packages": [], "files": []}
    assert found["drifty"]["changes"] == {
        "packages": [{"action": "upgrade", "name": "rocm-core", "old": "6.4.1.60401-83~22.04",
                      "new": "6.4.3.60403-128~22.04"}],
        "files": [{"action": "modify", "path": pin, "diff": [
            f"--- {pin}", f"+++ {pin}", "@@ -1,3 +1,3 @@", " Package: *",
            " Pin: release o=repo.radeon.com", "-Pin-Priority: 500", "+Pin-Priority: 600",
        ]}],
    }  # fmt: skip
    assert "changes" not in found["gone"]
    assert {
        name: {k: v for k, v in row.items() if k != "changes"} for name, row in found.items()
    } == plain


def test_a_host_wanting_gpu_containers_is_audited_and_their_absence_is_drift(monkeypatch):
    """The audit plans the node's core (``rocm_node``, told the containers are judged by their
    cell, so their keys are not refused) and reports containers never deployed, as running
    ``rocm_node`` alone used to leave such a host, as the containers cell's drift."""
    wants = {**DATA, "rocm_containers_engines": ["docker"]}
    (row,) = gather(monkeypatch, {"node": (wants, SurveyHost(converged()))})
    assert row.status == "drift", row
    assert row.cells.containers.text == "! docker is not installed; no CDI spec (/etc/cdi/amd.json)"


def test_the_audit_reads_health_containers_and_acceptance_in_the_surveys_one_round_trip(
    monkeypatch,
):
    class Counted(SurveyHost):
        surveys: list[list[str]] = []

        def __call__(self, fact, *args, **kwargs):
            if fact is Survey:
                self.surveys.append([read.name for read in kwargs["reads"]])
            return super().__call__(fact, *args, **kwargs)

    wants = {**DATA, "rocm_containers_engines": ["docker"], "rocm_acceptance": "quick"}
    node = Counted(converged(), health=amd_smi_health())
    (row,) = gather(monkeypatch, {"node": (wants, node)})
    assert len(node.surveys) == 1, node.surveys  # one round trip, nothing read apart
    assert node.surveys[0][-3:] == ["health", "containers", "acceptance"]
    assert row.health == amd_smi_health()  # the survey's answers are the row's
    assert row.cells.containers.text.startswith("! docker is not installed")
    assert row.cells.acceptance.text.startswith("never")
