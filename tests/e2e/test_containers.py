"""End to end: GPU containers (issue 36) on a Debian 13 MI300X node with Debian's own Docker
(26, CDI) and Podman (5, CDI, rootless as alice), AMD's container toolkit from its repository's
double; and on a Debian 12 Radeon PRO node, whose Docker 20.10 gets AMD's runtime. A fresh
node converges; a container on each engine sees the GPUs as root and, with Podman, as alice
(``rocm-fleet check``); a second run changes nothing; after each drift (the spec deleted, four
GPUs pulled, daemon.json edited, alice out of ``render``) the audit flags it, one run makes
exactly the changes that put it back (``--dry`` names them first, for the spec) and the
audit is clean again; the setting removed leaves nothing of rocm-fleet's behind. One test
per host, each in order (each step needs the last). A third Debian 12 host is air-gapped:
the toolkit reaches it from a bundle it serves as the fleet's mirror, with no request to
AMD's doubles.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from e2e.support import (
    audit,
    changed,
    deploy,
    inventory_with,
    rocm_fleet,
    running_lab,
    sh,
    succeeded,
)
from lab import HostSpec, engines
from lab.upstreams import DOUBLES
from rocm_fleet.model import container_toolkit

pytestmark = pytest.mark.e2e

NODE = "ctr"
DATA = {
    "rocm_version": "7.2.1", "expected_gfx": "gfx942", "expected_gpu_count": 8,
    "pytorch_install": False, "rocm_containers_engines": ["docker", "podman"],
    "rocm_containers_rootless_users": ["alice"],
}  # fmt: skip
#: Debian 12: Docker 20.10 reads no CDI spec, so it gets AMD's runtime. (Not Podman: Debian 12's
#: 4.3 refuses the spec amd-ctk writes, cdiVersion 0.6.0; see the record's [engines].)
OLD = "ctr12"
OLD_DATA = {
    "rocm_version": "7.2.1", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
    "pytorch_install": False, "rocm_containers_engines": ["docker"],
}  # fmt: skip
#: A Debian 12 node of an air-gapped site, its own fleet mirror serving a bundle.
OFF = "ctroff"
HOSTS = [
    HostSpec(NODE, suite="trixie", profile="mi300x-8", data=dict(DATA), containers=True),
    HostSpec(OLD, suite="bookworm", profile="w7900", data=dict(OLD_DATA), containers=True),
    HostSpec(OFF, suite="bookworm", profile="w7900", data=dict(OLD_DATA), containers=True),
]
SPEC = "/etc/cdi/amd.json"
#: What rocm-fleet leaves of the container side once the setting goes: none of these.
OURS = [SPEC, "/etc/apt/sources.list.d/amd-container-toolkit.list",
        "/etc/apt/keyrings/amd-container-toolkit.gpg",
        "/etc/apt/preferences.d/rocm-fleet-amd-container-toolkit",
        "/usr/local/bin/amd-ctk", "/usr/local/bin/amd-container-runtime"]  # fmt: skip


@pytest.fixture(scope="module")
def lab():
    yield from running_lab(HOSTS, ["7.2.1"])


#: Docker's daemon.json and its restart, one operation.
DAEMON_OP = "Give Docker the GPUs in /etc/docker/daemon.json (restarted for a change)"
#: The deploy gpu_containers() names its operations under (rocm_node's are tested elsewhere).
DEPLOY = "GPU containers | "


def ops(result) -> list[str]:
    """The GPU-container operations a run changed (or a dry run would), named without the
    deploy's prefix; the node deploy's are printed."""
    found = changed(result)
    others = sorted(name for name in found if not name.startswith(DEPLOY))
    if others:
        print(f"node deploy operations changed: {others}")
    return sorted(name.removeprefix(DEPLOY) for name in found if name.startswith(DEPLOY))


#: What dropping Docker changes (and nothing else).
KEYS_OP = "Take rocm-fleet's keys out of /etc/docker/daemon.json (Docker restarted)"
#: The removal's operations that change the node left with Podman alone; apt's update
#: (``FORGET``) follows the source's removal (``_if``: run, and maybe not planned as a change).
REMOVAL = {f"Remove {SPEC}", "Purge AMD's container toolkit", "Remove the container toolkit's pin",
           "Remove the container toolkit's keyring", "Remove the container toolkit's source",
           "Remove rocm-fleet's containers state"}  # fmt: skip
FORGET = "Forget the container toolkit's package lists"


def removal(result) -> list[str]:
    """The GPU-container removal's operations a run changed (or a dry run would), by name."""
    return sorted(name.rsplit(" | ", 1)[-1] for name in changed(result) if "GPU containers" in name)


def cell(report) -> dict:
    (row,) = report.json["hosts"]
    return row["cells"].get("containers") or {}


def check(lab, inventory, name: str = NODE) -> str:
    result = lab.run(
        [sys.executable, "-m", "rocm_fleet.cli", "check", str(inventory), "--limit", name,
         "--", "-k", "gpu_containers"], timeout=900,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "ok" in output and "gpu containers" in output.lower(), output
    return output


def in_container(lab, command: str, name: str = NODE) -> list[str]:
    """The render nodes a container sees (and /dev/kfd), as ``ls`` lists them."""
    out = sh(lab, name, f"{command} {engines.IMAGE} ls /dev/kfd /dev/dri")
    return [w for w in out.split() if w.startswith(("renderD", "/dev/kfd"))]


def drift_then_back(lab, inventory, expected_ops: list[str], says: str, dry: bool = False) -> None:
    """The audit flags the drift (its GPU CONTAINERS cell says ``says``), (with ``dry``)
    ``--dry`` names exactly ``expected_ops``, one run makes exactly those changes and the
    audit finds no drift after it. (A second run after each, changing nothing, was the same
    proof as the run's exact JSON and the clean audit; idempotence is the converge's
    ``again`` below and test_fleet.py's.)"""
    report = audit(lab, "--limit", NODE, inventory=inventory)
    found = cell(report)
    assert found.get("drift") is True and says in found["text"], report.stdout
    if dry:
        would = deploy(lab, inventory=inventory, dry=True, limit=NODE)
        assert ops(would) == sorted(expected_ops), (ops(would), would.output[-3000:])
    run = deploy(lab, inventory=inventory, limit=NODE)
    succeeded(run)
    assert ops(run) == sorted(expected_ops), ops(run)
    report = audit(lab, "--limit", NODE, inventory=inventory)
    assert cell(report).get("drift") is False, report.stdout


def test_gpu_containers_converge_run_see_the_gpus_drift_back_and_go(lab, tmp_path):
    engines.site_storage(lab.root(NODE))
    # A lab root has no apt lists (the sshbase is built without them); the deploy reads which
    # Docker and Podman apt would install while planning, as on an installed Debian, which has
    # its lists.
    sh(lab, NODE, "apt-get update -qq")
    first = deploy(lab, limit=NODE)
    succeeded(first)
    print(f"converge: {first.seconds:.1f}s, {len(changed(first))} operations changed")
    spec = json.loads(sh(lab, NODE, f"cat {SPEC}"))
    assert spec["kind"] == "amd.com/gpu" and [d["name"] for d in spec["devices"]] == [
        *map(str, range(8)),
        "all",
    ]
    assert json.loads(sh(lab, NODE, "cat /etc/docker/daemon.json"))["storage-driver"] == "vfs"

    # The image, as a site's registry would have given it (the lab has none), then named.
    for engine, user in (("docker", None), ("podman", None), ("podman", "alice")):
        engines.load_image(lab, NODE, engine, user)
    images = {"rocm_containers_images": [engines.IMAGE]}
    inventory = inventory_with(lab, tmp_path / "lab.py", images)
    again = deploy(lab, "-vv", inventory=inventory, limit=NODE)  # -vv: each command it sent
    succeeded(again)
    assert changed(again) == {}, changed(again)  # the images are there: nothing to pull
    sent = re.findall(rf"^\[{NODE}\]\s+>>> ", re.sub(r"\x1b\[[0-9;]*m", "", again.output), re.M)
    print(f"converged run: {len(sent)} round trips to {NODE}, {again.seconds:.1f}s")
    assert len(sent) == 1  # the survey read everything, the containers' reads too

    render = [f"renderD{128 + i}" for i in range(8)]
    seen = in_container(lab, "docker run --rm --network none --device amd.com/gpu=all")
    assert seen == ["/dev/kfd", *render], seen
    seen = in_container(lab, "podman run --rm --network none --device amd.com/gpu=all")
    assert seen == ["/dev/kfd", *render], seen
    print(check(lab, inventory))
    report = audit(lab, "--limit", NODE, inventory=inventory)
    assert cell(report)["text"] == "ok (docker, podman; CDI spec current)", report.stdout

    # The spec deleted.
    sh(lab, NODE, f"rm {SPEC}")
    drift_then_back(lab, inventory, ["Generate /etc/cdi/amd.json from the node's GPUs"],
                    "no CDI spec", dry=True)  # fmt: skip

    # Four GPUs pulled (an RMA), the inventory told: the spec names GPUs that are gone.
    lab.set_profile(NODE, "mi300x-4")
    inventory = inventory_with(
        lab, tmp_path / "lab.py",
        {"rocm_containers_images": [engines.IMAGE], "expected_gpu_count": 4},
    )  # fmt: skip
    drift_then_back(lab, inventory, ["Generate /etc/cdi/amd.json from the node's GPUs"],
                    "the CDI spec names GPUs that are gone")  # fmt: skip
    seen = in_container(lab, "podman run --rm --network none --device amd.com/gpu=all")
    assert seen == ["/dev/kfd", *render[:4]], seen
    check(lab, inventory)

    # daemon.json edited: rocm-fleet's key taken out by hand, the site's kept.
    sh(lab, NODE, """printf '{"storage-driver": "vfs"}\\n' > /etc/docker/daemon.json""")
    drift_then_back(lab, inventory, [DAEMON_OP], "lacks features.cdi")
    daemon = json.loads(sh(lab, NODE, "cat /etc/docker/daemon.json"))
    assert daemon["storage-driver"] == "vfs" and daemon["features"]["cdi"] is True, daemon

    # alice taken out of render by hand.
    sh(lab, NODE, "gpasswd -d alice render")
    drift_then_back(lab, inventory, ["Give the rootless container users video and render"],
                    "rootless user alice is not in render")  # fmt: skip
    check(lab, inventory)

    # alice no longer rootless: useradd gave her subordinate IDs, rocm-fleet none (its ledger
    # is empty), so nothing is to take back and the audit is clean (her groups are the site's).
    fewer = {"rocm_containers_images": [engines.IMAGE], "expected_gpu_count": 4}
    rootful = inventory_with(lab, tmp_path / "rootful.py",
                             {**fewer, "rocm_containers_rootless_users": []})  # fmt: skip
    assert sh(lab, NODE, "cat /var/lib/rocm-fleet-containers/subids 2>/dev/null; true") == ""
    report = audit(lab, "--limit", NODE, inventory=rootful)
    assert cell(report).get("drift") is False, report.stdout
    assert ops(deploy(lab, inventory=rootful, dry=True, limit=NODE)) == []
    # Docker no longer wanted: its keys are drift until one run takes back exactly them.
    podman = inventory_with(lab, tmp_path / "podman.py", {
        **fewer, "rocm_containers_rootless_users": [], "rocm_containers_engines": ["podman"],
    })  # fmt: skip
    drift_then_back(lab, podman, [KEYS_OP], "rocm-fleet's keys are still in", dry=True)
    assert "features" not in json.loads(sh(lab, NODE, "cat /etc/docker/daemon.json"))

    # The setting removed: the audit sees the setup left (the host wants no engine) and --dry
    # names the removal until one run took it; nothing of rocm-fleet's container side stays,
    # the engines and the site's own daemon.json keys do (they are the site's).
    none = {
        "rocm_containers_engines": [],
        "rocm_containers_rootless_users": [],
        "expected_gpu_count": 4,
    }
    gone = inventory_with(lab, tmp_path / "gone.py", none)
    found = cell(audit(lab, "--limit", NODE, inventory=gone))
    assert found.get("drift") is True and found.get("leftovers"), found
    would = removal(deploy(lab, inventory=gone, dry=True, limit=NODE))
    assert set(would) - {FORGET} == REMOVAL, would
    run = deploy(lab, inventory=gone, limit=NODE)
    succeeded(run)
    assert set(removal(run)) == REMOVAL | {FORGET}, removal(run)
    report = audit(lab, "--limit", NODE, inventory=gone)
    assert cell(report) == {} and report.json["hosts"][0]["status"] == "ok", report.stdout
    left = sh(lab, NODE, "for f in " + " ".join(OURS) + "; do [ -e $f ] && echo $f; done; true")
    assert left.split() == [], left
    assert sh(lab, NODE, "ls -d /var/lib/rocm-fleet-containers 2>/dev/null; true").strip() == ""
    assert json.loads(sh(lab, NODE, "cat /etc/docker/daemon.json")) == {"storage-driver": "vfs"}
    assert "amd-container-toolkit" not in sh(lab, NODE, "dpkg-query -W -f='${Package}\\n'")
    assert changed(deploy(lab, inventory=gone, limit=NODE)) == {}


def test_debian_12s_docker_gets_the_gpus_through_amds_runtime(lab, tmp_path):
    engines.site_storage(lab.root(OLD))
    sh(lab, OLD, "apt-get update -qq")  # as above: an installed Debian has its lists
    succeeded(deploy(lab, limit=OLD))
    daemon = json.loads(sh(lab, OLD, "cat /etc/docker/daemon.json"))
    assert daemon["runtimes"] == {"amd": {"path": "amd-container-runtime", "args": []}}, daemon
    assert daemon["storage-driver"] == "vfs", daemon  # the site's key kept
    engines.load_image(lab, OLD, "docker")
    images = {"rocm_containers_images": [engines.IMAGE]}
    inventory = inventory_with(lab, tmp_path / "lab.py", images)
    again = deploy(lab, inventory=inventory, limit=OLD)
    succeeded(again)
    assert changed(again) == {}, changed(again)
    run = "docker run --rm --network none --runtime=amd -e AMD_VISIBLE_DEVICES=all"
    assert in_container(lab, run, OLD) == ["/dev/kfd", "renderD128"]
    plain = lab.ssh(OLD, f"docker run --rm --network none {engines.IMAGE} ls /dev/kfd")
    assert plain.returncode != 0, plain.stdout  # without the runtime no GPU: it gave them
    check(lab, inventory, OLD)
    report = audit(lab, "--limit", OLD, inventory=inventory)
    assert cell(report)["text"] == "ok (docker; CDI spec current)", report.stdout


def test_an_air_gapped_node_gets_the_toolkit_from_a_bundle_its_mirror_serves(lab):
    engines.site_storage(lab.root(OFF))
    sh(lab, OFF, "apt-get update -qq")  # as above; Debian's mirror is the site's, never closed
    bundle = lab.workdir / "containers-bundle"
    lab.open_upstreams()  # made beforehand, where upstream is reachable: the client
    made = rocm_fleet(lab, "bundle", str(lab.inventory), "--output", str(bundle), "--limit", OFF,
                      env={"REQUESTS_CA_BUNDLE": str(lab.ca_cert)})  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert [
        (r["suite"], r["packages"])
        for r in manifest["repositories"]
        if r["url"] == container_toolkit.APT_URL
    ] == [("jammy", [f"{container_toolkit.PACKAGE}={container_toolkit.DEFAULT_RELEASE}*"])]
    (deb,) = [p.rsplit("/", 1)[1] for p in manifest["files"]
              if p.rsplit("/", 1)[1].startswith(f"{container_toolkit.PACKAGE}_")]  # fmt: skip
    version = deb.split("_")[1]
    assert version.startswith(container_toolkit.DEFAULT_RELEASE), version  # the pinned release

    lab.close_upstreams(hosts=[OFF])
    try:
        since = len(lab.server.requests())
        data = [f"rocm_mirror={OFF}", f"rocm_mirror_bundle={bundle}"]
        first = deploy(lab, limit=OFF, data=data)
        succeeded(first)
        assert "GPU containers | Install AMD's container toolkit at its release" in changed(first)
        served = f"http://{lab.address(OFF)}:8080"
        source = sh(lab, OFF, "cat /etc/apt/sources.list.d/amd-container-toolkit.list")
        assert f"{served}/{container_toolkit.APT_URL.split('://')[1]} jammy " in source, source
        assert "signed-by=/etc/apt/keyrings/amd-container-toolkit.gpg" in source, source
        assert "trusted" not in source and "https://" not in source, source
        installed = sh(lab, OFF, f"dpkg-query -W -f='${{Version}}' {container_toolkit.PACKAGE}")
        assert installed == version, (installed, deb)
        daemon = json.loads(sh(lab, OFF, "cat /etc/docker/daemon.json"))
        assert daemon["runtimes"] == {"amd": {"path": "amd-container-runtime", "args": []}}
        dry = deploy(lab, limit=OFF, data=data, dry=True)
        succeeded(dry)
        assert changed(dry) == {}, changed(dry)
        # The node asked no double for anything (it can't: its routes are closed; had the
        # deploy tried, apt would have failed it), and its apt checked AMD's signature itself.
        asked = [r for r in lab.server.requests()[since:] if r["host"] in DOUBLES]
        assert not [r for r in asked if r["client"] == lab.address(OFF)], asked
    finally:
        lab.open_upstreams(hosts=[OFF])
