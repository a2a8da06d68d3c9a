"""Pull mode's signed data, as attacks: a real TUF repository (``rocm-fleet publish``'s,
pull/repository.py) in a temporary directory, served by a simulated mirror (``unit.pullsim``,
as python-tuf's own tests serve theirs) and the node's client (pull/client.py) fetching its
target from it. What needs real HTTP (a redirect) is in tests/integration/pull/test_pull_tuf.py.

Each attack names who does it, from where, with what, and asserts that the node changed
nothing: no data handed to the deploy, the serial it applied unchanged, and the refusal's
result (the metric's label) and reason.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime, timedelta

import pytest
from tuf.api.metadata import Metadata, Targets, Timestamp

from rocm_fleet.model import pulled
from rocm_fleet.model.pulled import PullRefused
from rocm_fleet.pull.keyring import RepositoryError
from rocm_fleet.pull.repository import PullRepository
from unit.conftest import DRIVERLESS_SITE
from unit.pullrepo import NODE, OTHER, SETTINGS, refused
from unit.pullsim import RepositorySimulator, SimulatedFleet, signer, tuf_now, unsynced


@pytest.fixture
def fleet(tmp_path, monkeypatch):
    unsynced(monkeypatch)
    return SimulatedFleet(tmp_path)


def test_the_administrators_signed_settings_reach_the_node(fleet):
    fleet.publish({NODE: SETTINGS, OTHER: {**SETTINGS, "rocm_users": ["bob"]}})
    state = fleet.pull()
    assert (state.node, state.settings) == (NODE, SETTINGS)
    version = fleet.publish({NODE: {**SETTINGS, "rocm_users": ["alice"]}, OTHER: SETTINGS})
    state = fleet.pull()
    assert state.serial == version and state.settings["rocm_users"] == ["alice"]
    assert fleet.pull().serial == version  # the same data again: applied again, idempotent


def test_an_unchanged_publication_signs_nothing(fleet):
    version = fleet.publish({NODE: SETTINGS})
    again = fleet.repository.publish({NODE: SETTINGS}, 24)
    assert (again.version, again.changed, again.removed) == (version, [], [])


def test_forged_data_signed_by_a_key_of_the_attackers_own_is_refused(fleet, tmp_path):
    """Who: anyone who can write the mirror's published directory (or answer for the
    mirror on the network). With what: a repository of their own, well-formed TUF
    metadata signed by their own keys, saying rocm_pull: false for the node."""
    fleet.publish({NODE: SETTINGS})
    fleet.pull()
    attacker = PullRepository(tmp_path / "attacker", [tmp_path / "attacker-keys"])
    attacker.create(tmp_path / "attacker-keys")
    attacker.publish({NODE: {**SETTINGS, "rocm_pull": False}}, 24)
    theirs = RepositorySimulator()
    theirs.serve(attacker.directory)
    # Their root cannot replace the node's; their targets and timestamp over the real root:
    fleet.sim.files |= {p: data for p, data in theirs.files.items() if p.startswith("targets/")}
    for name in ("timestamp.json", "2.snapshot.json", "2.targets.json"):
        fleet.sim.files[f"metadata/{name}"] = theirs.files[f"metadata/{name}"]
    assert "timestamp was signed by 0/1 keys" in refused(fleet, "bad-signature")


def test_rocm_pull_false_published_unsigned_does_nothing(fleet):
    """Who: someone with write access to the mirror, no key. With what: the node's target
    edited in place to rocm_pull: false (taking the node out of management)."""
    fleet.publish({NODE: SETTINGS})
    fleet.pull()
    target = fleet.sim.target(NODE)
    document = json.loads(fleet.sim.files[target])
    document["settings"]["rocm_pull"] = False
    fleet.sim.files[target] = json.dumps(document).encode()
    assert "LengthOrHashMismatch" in refused(fleet, "unverified")


def test_a_replayed_older_repository_is_refused(fleet):
    """Who: the mirror's operator or anyone on the path. With what: the whole repository as
    it was before the last publication, every signature valid (a replay of old data)."""
    fleet.publish({NODE: SETTINGS})
    old = dict(fleet.sim.files)
    fleet.publish({NODE: {**SETTINGS, "rocm_users": ["alice"]}})
    applied = fleet.pull().serial
    fleet.sim.files = old
    refused(fleet, "rollback")
    assert fleet.applied() == applied


def test_a_replayed_target_older_than_the_one_applied_is_refused_by_its_serial(fleet):
    """TUF's own rollback protection lives in the metadata the node keeps; the serial the
    node applied is a second record (it holds when that metadata is lost)."""
    fleet.publish({NODE: SETTINGS})
    fleet.publish({NODE: {**SETTINGS, "rocm_users": ["alice"]}})
    applied = fleet.pull().serial
    state_old = json.dumps({"format": pulled.FORMAT, "node": NODE, "serial": applied - 1,
                            "settings": SETTINGS}).encode()  # fmt: skip
    with pytest.raises(PullRefused) as caught:
        pulled.parse(state_old, NODE, applied)
    assert caught.value.result == "rollback" and f"older than the {applied}" in str(caught.value)


def test_an_expired_timestamp_is_refused_the_freeze_bound(fleet, monkeypatch):
    """Who: the mirror, serving the same repository forever (a freeze: the node never sees
    what the administrators published since). The timestamp's expiry bounds it: the same
    files, a second after it, are refused."""
    fleet.publish({NODE: SETTINGS}, hours=1)
    fleet.pull()
    frozen = dict(fleet.sim.files)
    fleet.publish({NODE: {**SETTINGS, "rocm_users": ["alice"]}})  # never served: the freeze
    fleet.sim.files = frozen
    timestamp = fleet.sim.metadata("timestamp.json")
    tuf_now(monkeypatch, timestamp.signed.expires + timedelta(seconds=1))
    said = refused(fleet, "expired")
    assert "timestamp.json is expired" in said and "(rocm-fleet publish --timestamp)" in said


def test_expired_targets_name_the_publication_that_renews_them(fleet, monkeypatch):
    """Who: a thief of the online key, who keeps the timestamp fresh over targets nobody
    re-signed. The targets' expiry (offline key) bounds it; the reason names the fix."""
    fleet.publish({NODE: SETTINGS})
    fleet.pull()
    later = fleet.sim.newest(Targets.type).signed.expires + timedelta(seconds=1)
    fleet.sim.forge({}, signer(fleet.keys / "online.pem"), expires=later + timedelta(days=1))
    tuf_now(monkeypatch, later)
    said = refused(fleet, "expired")
    assert "New targets is expired" in said and "(rocm-fleet publish)" in said


def test_another_nodes_target_is_refused(fleet):
    """Who: the mirror's operator. With what: node2's signed target (rocm_users: bob)
    served at node1's path, the metadata naming it as node1's re-signed... they can't;
    so they serve node2's file under node1's hashed name: TUF refuses the hash. Within a
    repository signed by the targets key, a target naming another node is refused too."""
    fleet.publish({NODE: SETTINGS, OTHER: {**SETTINGS, "rocm_users": ["bob"]}})
    fleet.sim.files[fleet.sim.target(NODE)] = fleet.sim.files[fleet.sim.target(OTHER)]
    refused(fleet, "unverified")
    content = pulled.render(OTHER, 3, SETTINGS)
    with pytest.raises(PullRefused) as caught:
        pulled.parse(content, NODE, None)
    assert caught.value.result == "other-node" and "'node2'" in str(caught.value)


# --- mix and match: files of different publications served together -------------------------


@pytest.mark.parametrize("role", ["snapshot", "targets", f"node-{NODE}"])
def test_metadata_of_an_older_publication_mixed_into_the_newer_is_refused(fleet, role):
    """Who: the mirror's operator. With what: the newest publication served with one file of
    the one before it in its place (validly signed, under the newer file's name): the version
    the timestamp or snapshot names refuses it. Served whole again, the node follows."""
    fleet.publish({NODE: SETTINGS})
    fleet.publish({NODE: SETTINGS, OTHER: SETTINGS})
    applied = fleet.pull().serial
    # node1's settings changed and a node added: a new version of every role
    version = fleet.publish({NODE: {**SETTINGS, "rocm_users": ["alice"]}, OTHER: SETTINGS,
                             "node3": SETTINGS})  # fmt: skip
    published = dict(fleet.sim.files)
    newer = fleet.sim.newest(role).signed.version
    older = fleet.sim.files[f"metadata/{newer - 1}.{role}.json"]
    fleet.sim.files[f"metadata/{newer}.{role}.json"] = older
    said = refused(fleet, "rollback")
    assert re.search(rf"Expected {role} v(ersion )?{newer}, got v?{newer - 1}\b", said), said
    assert fleet.applied() == applied
    fleet.sim.files = published
    assert fleet.pull().serial == version


# --- the data a target may carry --------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("_sudo", True, "pyinfra global argument"),
        ("_env", {"LD_PRELOAD": "/tmp/x.so"}, "pyinfra global argument"),
        ("_shell_executable", "/tmp/sh", "pyinfra global argument"),
        ("ssh_hostname", "attacker.example", "connection setting"),
        ("rocm_pull_source", "http://attacker.example/", "given by a push only"),
        ("rocm_pull_trusted_root", "/tmp/root.json", "given by a push only"),
        ("apt_keyring_url", "http://attacker.example/key", "not a rocm-fleet setting"),
    ],
)
def test_pulled_data_carrying_global_arguments_or_unknown_keys_is_refused(key, value, said):
    """Who: an administrator's own slip, or anyone with the targets key. With what: a
    signed target whose settings carry pyinfra's arguments (root's environment, sudo, the
    shell), the keys that say whom the node trusts, or keys no setting has."""
    content = json.dumps({"format": pulled.FORMAT, "node": NODE, "serial": 5,
                          "settings": {**SETTINGS, key: value}}).encode()  # fmt: skip
    with pytest.raises(PullRefused) as caught:
        pulled.parse(content, NODE, None)
    assert caught.value.result == "invalid-data"
    assert repr(key) in str(caught.value) and said in str(caught.value)


def test_publish_never_signs_data_a_node_would_refuse(fleet):
    with pytest.raises(ValueError, match="'_sudo' is a pyinfra global argument"):
        fleet.repository.publish({NODE: {**SETTINGS, "_sudo": True}}, 24)


def test_a_node_without_a_target_changes_nothing(fleet):
    fleet.publish({OTHER: SETTINGS})
    assert "no target for this node" in refused(fleet, "no-target")


# --- sizes: what the node downloads is bounded before it reads it -----------------------------


def test_a_target_signed_over_the_size_limit_is_refused_unfetched(fleet):
    """Who: a thief of node1's key who writes the mirror and holds the online key. With what:
    node1's role naming a target of 1 MiB and a byte: refused from its signed length, the
    target never downloaded."""
    fleet.publish({NODE: SETTINGS})
    role = fleet.sim.newest(f"node-{NODE}")
    role.signed.version += 1
    big = pulled.render(NODE, 9, SETTINGS).ljust(pulled.MAX_TARGET_BYTES + 1)
    role.signed.targets[pulled.target_path(NODE)] = fleet.sim.put_target(NODE, big)
    role.signatures.clear()
    role.sign(signer(fleet.keys / "nodes" / f"{NODE}.pem"))
    fleet.sim.forge({f"{role.signed.version}.node-{NODE}.json": role},
                    signer(fleet.keys / "online.pem"))  # fmt: skip
    said = refused(fleet, "invalid-data")
    assert f"the target is {pulled.MAX_TARGET_BYTES + 1} bytes, over" in said
    assert not [p for p in fleet.sim.fetched if p.startswith("targets/")]


@pytest.mark.parametrize("served", ["target", "timestamp"])
def test_a_file_served_longer_than_its_bound_is_refused_as_it_arrives(fleet, served):
    """Who: the mirror's operator. With what: node1's target with bytes appended past its
    signed length, or a timestamp far over the client's bound (16 KiB, TUF's default): the
    download stops past the bound, nothing verified is used."""
    fleet.publish({NODE: SETTINGS})
    fleet.pull()
    path = fleet.sim.target(NODE) if served == "target" else "metadata/timestamp.json"
    fleet.sim.files[path] += b" " * (4 << 20)
    said = refused(fleet, "unverified")
    assert "DownloadLengthMismatchError" in said
    assert "maximum allowed length of" in said or "Downloaded" in said, said


# --- rotation ---------------------------------------------------------------------------------


def test_a_root_rotation_signed_by_the_old_and_new_root_keys_is_followed(fleet):
    """The root key rotated (root v2, signed by the v1 and v2 keys) and published: the
    node, still holding the v1 root a push gave it, follows to v2 through the pull, then
    trusts v2's keys alone."""
    fleet.publish({NODE: SETTINGS})
    fleet.pull()
    old_root_key = (fleet.keys / "root.pem").read_bytes()
    assert fleet.repository.rotate("root", 24) == (2, [])
    assert (fleet.keys / "root.pem").read_bytes() != old_root_key
    assert (fleet.keys / "root.pem.retired-v1").read_bytes() == old_root_key
    root = Metadata.from_file(str(fleet.repository.metadata / "2.root.json"))
    assert len(root.signatures) == 2
    version = fleet.publish({NODE: {**SETTINGS, "rocm_users": ["alice"]}})
    state = fleet.pull()
    assert state.serial == version and state.settings["rocm_users"] == ["alice"]
    verified = Metadata.from_file(str(fleet.metadata / "root.json"))
    assert verified.signed.version == 2
    # The push's root is still v1: the node keeps the v2 it verified.
    assert Metadata.from_file(str(fleet.trusted_root)).signed.version == 1
    assert fleet.pull().serial == version


def test_a_node_that_missed_two_root_rotations_walks_them_in_order(fleet):
    """Two root rotations published while the node did not pull: it verifies root v2 with v1,
    v3 with v2 (each in turn, as TUF's client does), and asks for v4, which is not there."""
    fleet.publish({NODE: SETTINGS})
    fleet.pull()
    assert fleet.repository.rotate("root", 24) == (2, [])
    assert fleet.repository.rotate("root", 24) == (3, [])
    version = fleet.publish({NODE: {**SETTINGS, "rocm_users": ["alice"]}})
    fleet.sim.fetched.clear()
    assert fleet.pull().serial == version
    roots = [p for p in fleet.sim.fetched if p.endswith(".root.json")]
    assert roots == [f"metadata/{n}.root.json" for n in (2, 3, 4)]
    assert Metadata.from_file(str(fleet.metadata / "root.json")).signed.version == 3


def test_online_and_targets_key_rotations_are_followed_and_the_old_keys_refused(fleet):
    fleet.publish({NODE: SETTINGS})
    fleet.pull()
    retired = {}
    for name in ("online", "targets"):
        retired[name] = fleet.keys / f"{name}.pem"
        before = retired[name].read_bytes()
        fleet.repository.rotate(name, 24)
        assert retired[name].read_bytes() != before
    fleet.mirror()
    version = fleet.publish({NODE: {**SETTINGS, "rocm_users": ["carol"]}})
    assert fleet.pull().serial == version
    # A thief of the retired online key signs a fresh snapshot and timestamp: refused.
    served = dict(fleet.sim.files)
    (old_online,) = fleet.keys.glob("online.pem.retired-v*")
    fleet.sim.forge({}, signer(old_online))
    assert "timestamp was signed by 0/1 keys" in refused(fleet, "bad-signature")
    fleet.sim.files = served
    # A thief of the retired targets key signs new targets: refused (the root no longer
    # names it).
    stolen = PullRepository(fleet.repository.directory, [fleet.keys])
    for old in fleet.keys.glob("targets.pem.retired-v*"):
        shutil.copy(old, fleet.keys / "targets.pem")
    with pytest.raises(RepositoryError, match="is not a targets key"):
        stolen.publish({NODE: SETTINGS, "intruder": {**SETTINGS, "rocm_users": ["x"]}}, 24)


def test_a_forged_root_rotation_signed_by_its_own_key_alone_is_refused(fleet, tmp_path):
    """Who: the mirror's operator. With what: a 2.root.json naming their own keys, signed
    by their own root key (not by the v1 root's)."""
    fleet.publish({NODE: SETTINGS})
    fleet.pull()
    attacker = PullRepository(tmp_path / "attacker", [tmp_path / "attacker-keys"])
    attacker.create(tmp_path / "attacker-keys")
    forged = attacker.root()
    forged.signed.version = 2
    forged.signatures.clear()
    forged.sign(attacker.signer("root"))
    fleet.sim.put("2.root.json", forged)
    assert "root was signed by 0/1 keys" in refused(fleet, "bad-signature")


def test_keys_are_private_and_a_readable_key_is_refused(fleet):
    for key in fleet.keys.glob("*.pem"):
        assert key.stat().st_mode & 0o777 == 0o600
    assert fleet.keys.stat().st_mode & 0o777 == 0o700
    (fleet.keys / "targets.pem").chmod(0o644)
    with pytest.raises(RepositoryError, match="mode 0644: a private key must be 0600"):
        fleet.repository.publish({NODE: SETTINGS}, 24)


def test_the_timestamp_alone_is_refreshed_with_the_online_key(fleet, tmp_path):
    fleet.publish({NODE: SETTINGS}, hours=1)
    offline = tmp_path / "online-only"
    offline.mkdir(mode=0o700)
    shutil.move(fleet.keys / "online.pem", offline / "online.pem")
    online = PullRepository(fleet.repository.directory, [offline])
    before = Metadata.from_file(str(fleet.repository.metadata / "timestamp.json")).signed
    version = online.refresh_timestamp(48)
    after = Metadata.from_file(str(fleet.repository.metadata / "timestamp.json")).signed
    assert version == before.version + 1
    assert after.expires - datetime.now(UTC) > timedelta(hours=47)
    # The online key alone signs no node's settings, nor a new node's delegation.
    with pytest.raises(RepositoryError, match=r"no nodes/node1\.pem \(node node1's key\)"):
        online.publish({NODE: {**SETTINGS, "rocm_users": ["x"]}}, 24)
    with pytest.raises(RepositoryError, match=r"no targets\.pem"):
        online.publish({NODE: SETTINGS, OTHER: SETTINGS}, 24)
    fleet.mirror()
    assert fleet.pull().settings == SETTINGS


def test_each_node_is_a_delegated_role_of_its_own_path_and_key(fleet):
    fleet.publish({NODE: SETTINGS, OTHER: SETTINGS})
    metadata = fleet.repository.metadata
    versions = [p.name for p in metadata.glob("*.targets.json")]
    newest = max(versions, key=lambda n: int(n.split(".")[0]))
    targets = Metadata[Targets].from_file(str(metadata / newest)).signed
    assert targets.targets == {}  # the top-level role delegates, never signs settings
    roles = targets.delegations.roles
    assert sorted(roles) == [f"node-{NODE}", f"node-{OTHER}"]
    for node in (NODE, OTHER):
        role = roles[f"node-{node}"]
        assert (role.paths, role.threshold, role.terminating) == ([f"nodes/{node}.json"], 1, True)
        assert len(role.keyids) == 1
        assert (fleet.keys / "nodes" / f"{node}.pem").stat().st_mode & 0o777 == 0o600
        own = Metadata[Targets].from_file(str(metadata / f"1.node-{node}.json")).signed
        assert sorted(own.targets) == [f"nodes/{node}.json"]
    assert roles[f"node-{NODE}"].keyids != roles[f"node-{OTHER}"].keyids
    # The node reads its own role and target alone, never another node's.
    fleet.pull()
    assert [p for p in fleet.sim.fetched if OTHER in p] == []
    assert f"metadata/1.node-{NODE}.json" in fleet.sim.fetched


# --- a site's own matrix data, carried by the target ---------------------------------------

SITE = DRIVERLESS_SITE.read_text()


def test_site_matrix_data_reaches_the_node_signed_with_its_settings(fleet):
    """A pull node runs a release published after its rocm-fleet: the administrators' site
    file travels in the node's signed target, byte for byte (its SHA-256 is the file's)."""
    version = fleet.publish({NODE: SETTINGS, OTHER: SETTINGS}, matrix_data={NODE: SITE})
    state = fleet.pull()
    assert (state.serial, state.settings, state.matrix_data) == (version, SETTINGS, SITE)
    assert fleet.pull(OTHER).matrix_data is None  # the other node's target carries none
    # the same again signs nothing; another file, or none, is a change of the node's data
    unchanged = fleet.repository.publish({NODE: SETTINGS, OTHER: SETTINGS}, 24, {NODE: SITE})
    assert unchanged.changed == []
    edited = SITE.replace('"2.15.0"', '"2.15.1"')
    assert fleet.repository.publish({NODE: SETTINGS}, 24, {NODE: edited}).changed == [NODE]
    assert fleet.repository.publish({NODE: SETTINGS}, 24).changed == [NODE]


@pytest.mark.parametrize(
    ("matrix_data", "said"),
    [
        # the site file's rule holds in the target: no host of the attacker's own
        (SITE.replace('"stable.repo.amd.com"', '"evil.example"'),
         "field 'releases[0].repository' has value \"evil.example\""),
        # a committed release's row changed (to move hosts that name it)
        (SITE.replace('"10.9.0"', '"10.0.0"'), "releases[0]"),
        ({"format": "rocm-fleet site matrix data 1", "releases": []},
         "matrix_data is dict, not the text of a site file"),
        ("x" * (2 << 20), "matrix_data is over 1048576 bytes"),
    ],
    ids=["other-host", "committed-row", "not-text", "oversize"],
)  # fmt: skip
def test_a_target_whose_matrix_data_is_no_site_file_is_refused(matrix_data, said):
    """Signed or not, what the target carries is read as a site file: the node refuses a
    target whose matrix data the site file's own rules refuse (and publish never signs one)."""
    document = {"format": pulled.FORMAT, "node": NODE, "serial": 3, "settings": SETTINGS,
                "matrix_data": matrix_data}  # fmt: skip
    with pytest.raises(PullRefused) as caught:
        pulled.parse(json.dumps(document).encode(), NODE, None)
    assert caught.value.result == "invalid-data"
    assert said in str(caught.value), str(caught.value)
    if isinstance(matrix_data, str):
        with pytest.raises(ValueError, match="matrix_data"):
            pulled.render(NODE, 3, SETTINGS, matrix_data)


def test_a_target_never_names_a_site_file_on_the_node(fleet):
    """The target carries the data, never a path: pulled settings naming rocm_matrix_data
    (root's pull would read whatever file that names) are refused."""
    with pytest.raises(ValueError, match="rocm_matrix_data' is given by a push only"):
        fleet.publish({NODE: {**SETTINGS, "rocm_matrix_data": "/etc/shadow"}})


def test_the_simulated_mirror_serves_what_was_published_and_nothing_else(fleet):
    """The simulator's own contract: the metadata and targets the publisher wrote, byte for
    byte; not its staged or plain copies; a path it lacks is TUF's 404."""
    from tuf.api.exceptions import DownloadHTTPError

    from unit.pullsim import URL

    fleet.publish({NODE: SETTINGS})
    served = fleet.repository.directory / fleet.sim.target(NODE)
    assert fleet.sim.files[fleet.sim.target(NODE)] == served.read_bytes()
    assert {p.split("/", 1)[0] for p in fleet.sim.files} == {"metadata", "targets"}
    assert Timestamp.type in fleet.sim.metadata("timestamp.json").signed.type
    with pytest.raises(DownloadHTTPError):
        fleet.sim.download_bytes(f"{URL}/metadata/9.root.json", 1000)
    with pytest.raises(DownloadHTTPError):
        fleet.sim.download_bytes(f"https://elsewhere.invalid/fleet/{fleet.sim.target(NODE)}", 10)
