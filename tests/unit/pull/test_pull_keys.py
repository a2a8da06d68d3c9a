"""Pull mode with no single point of compromise, as attacks: root and targets keys of a
threshold held apart, each node's target in its own delegated role signed by its own key,
sealed to the node's own key, and the freeze a holder of the online key alone can hold a node
in bounded by the node role's expiry. A real repository (``pull/repository.py``) on a
simulated mirror (``unit.pullsim``), the node's client (``pull/client.py``) fetching from it,
as in ``test_pull_tuf``; forged metadata is made as python-tuf's repository simulator makes it
(``tests/repository_simulator.py``): ``Metadata`` edited and signed with the attacker's keys.
The CLI's cases are in tests/integration/pull/test_pull_keys.py.

Each attack names who does it and with what, and asserts that the node changed nothing (the
serial it applied unchanged) and the refusal's result and reason.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from securesystemslib.signer import CryptoSigner
from tuf.api import metadata as tuf
from tuf.api.metadata import Metadata

from rocm_fleet.model import pulled
from rocm_fleet.model.pulled import PullRefused
from rocm_fleet.pull import repository as pull_repository
from rocm_fleet.pull import sealed
from rocm_fleet.pull.keyring import RepositoryError
from rocm_fleet.pull.repository import PullRepository
from unit.pullrepo import NODE, OTHER, SETTINGS, refused
from unit.pullsim import SimulatedFleet, signer, tuf_now, unsynced

EVIL = {**SETTINGS, "rocm_users": ["mallory"], "rocm_pull": False}


@pytest.fixture
def fleet(tmp_path, monkeypatch):
    unsynced(monkeypatch)
    return SimulatedFleet(tmp_path)


@pytest.fixture
def apart(tmp_path, monkeypatch):
    """2 of 3 root keys and 2 of 3 targets keys, each pair on its own holder's medium
    (``holder-N``: root-N.pem and targets-N.pem); the online key and the node keys with the
    publisher (``keys``)."""
    unsynced(monkeypatch)
    made = SimulatedFleet(tmp_path, root=(3, 2), targets=(3, 2))
    made.holders = []
    for n in (1, 2, 3):
        holder = tmp_path / f"holder-{n}"
        holder.mkdir(mode=0o700)
        for role in ("root", "targets"):
            shutil.move(made.keys / f"{role}-{n}.pem", holder / f"{role}-{n}.pem")
        made.holders.append(holder)
    return made


def with_keys(fleet: SimulatedFleet, *holders: Path) -> PullRepository:
    """The repository as the publisher with ``holders``' media plugged in sees it."""
    return PullRepository(fleet.repository.directory, [fleet.keys, *holders])


# --- thresholds --------------------------------------------------------------------------------


def test_a_threshold_is_signed_by_holders_apart_then_published(apart):
    """A node added (a new delegation) with one targets key at hand is staged, not served;
    a second holder adds their signature on their own machine (--sign) and it is published;
    the node pulls it."""
    first = with_keys(apart, apart.holders[0])
    published = first.publish({NODE: SETTINGS}, 24)
    assert published.waiting == ["2.targets.json: 1 more signature"]
    apart.mirror()
    assert "no target" in refused(apart, "no-target")  # nothing of it is served yet
    with pytest.raises(RepositoryError, match="waits for signatures"):
        first.publish({NODE: SETTINGS, OTHER: SETTINGS}, 24)
    # The second holder, on their own machine, with their own medium alone:
    second = PullRepository(apart.repository.directory, [apart.holders[1]])
    assert second.sign_staged(24) == ["the online key (online.pem) to publish it"]
    apart.mirror()
    assert "no target" in refused(apart, "no-target")  # still nothing served
    assert apart.repository.sign_staged(24) == []  # the publisher, with the online key
    apart.mirror()
    assert not (apart.repository.directory / "staged").exists()
    targets = apart.sim.newest(tuf.Targets.type)
    assert len(targets.signatures) == 2
    assert apart.pull().settings == SETTINGS
    # A change of the node's settings alone needs its own key, no targets key.
    apart.publish({NODE: {**SETTINGS, "rocm_users": ["alice"]}})
    assert apart.pull().settings["rocm_users"] == ["alice"]


def test_a_single_stolen_targets_key_publishes_nothing(apart):
    """Who: a thief of one targets key (threshold 2) who also holds the online key (it lives
    on the mirror) and writes the mirror. With what: a targets version re-delegating node1's
    path to a key of their own, signed with the stolen key, and a target signed by their own
    key, under a fresh snapshot and timestamp. Refused: the targets role is 1 of 2."""
    with_keys(apart, *apart.holders[:2]).publish({NODE: SETTINGS}, 24)
    apart.mirror()
    applied = apart.pull().serial
    stolen = signer(apart.holders[0] / "targets-1.pem")
    own = CryptoSigner.generate_ed25519()
    targets = apart.sim.newest(tuf.Targets.type)
    targets.signed.version += 1
    delegations = targets.signed.delegations
    delegations.keys[own.public_key.keyid] = own.public_key
    delegations.roles[f"node-{NODE}"] = tuf.DelegatedRole(
        f"node-{NODE}", [own.public_key.keyid], 1, True, [pulled.target_path(NODE)]
    )
    targets.signatures.clear()
    targets.sign(stolen)
    role = Metadata(tuf.Targets(version=99, expires=datetime.now(UTC) + timedelta(days=1)))
    forged = apart.sim.put_target(NODE, pulled.render(NODE, applied + 9, EVIL))
    role.signed.targets[pulled.target_path(NODE)] = forged
    role.sign(own)
    online = signer(apart.keys / "online.pem")
    apart.sim.forge({f"{targets.signed.version}.targets.json": targets,
                         f"99.node-{NODE}.json": role}, online)  # fmt: skip
    assert "targets was signed by 1/2 keys" in refused(apart, "bad-signature")
    assert apart.applied() == applied


def test_a_root_rotation_of_a_threshold_is_staged_then_followed(apart):
    """root-1 rotated by its holder: the new root needs 2 of the old root keys (and 2 of the
    new): staged with one, published with a second holder's, then followed by the node."""
    with_keys(apart, *apart.holders[:2]).publish({NODE: SETTINGS}, 24)
    apart.mirror()
    apart.pull()
    version, waiting = with_keys(apart, apart.holders[0]).rotate("root-1", 24)
    assert version == 2 and waiting == ["2.root.json: 2 more signatures"]
    assert with_keys(apart, apart.holders[1]).sign_staged(24) == []
    apart.mirror()
    assert apart.pull().settings == SETTINGS
    verified = Metadata[tuf.Root].from_file(str(apart.metadata / "root.json"))
    assert verified.signed.version == 2
    new_key = signer(apart.holders[0] / "root-1.pem").public_key.keyid
    assert new_key in verified.signed.roles["root"].keyids


# --- delegations: each node's own role, its own key ----------------------------------------


def serve_role_signed_by(fleet: SimulatedFleet, role_of: str, key_of: str) -> None:
    """Serve a new version of ``role_of``'s role naming node1's path with the attacker's
    settings, signed by ``key_of``'s node key, under a snapshot the online key signs."""
    fleet.publish({NODE: SETTINGS, OTHER: SETTINGS})
    fleet.pull()
    role = fleet.sim.newest(f"node-{role_of}")
    role.signed.version += 1
    forged = fleet.sim.put_target(NODE, pulled.render(NODE, 50, EVIL))
    role.signed.targets[pulled.target_path(NODE)] = forged
    role.signatures.clear()
    role.sign(signer(fleet.keys / "nodes" / f"{key_of}.pem"))
    fleet.sim.forge({f"{role.signed.version}.node-{role_of}.json": role},
                 signer(fleet.keys / "online.pem"))  # fmt: skip


def test_node_b_key_signing_node_a_target_in_its_own_role_is_ignored(fleet):
    """Who: a thief of node2's key (or node2's administrator) who writes the mirror and holds
    the online key. With what: node2's role, validly signed by node2's key, naming node1's
    path with settings of theirs. node1 looks for its path in node-node1 alone (the
    delegation's path is terminating): it gets its own target, never theirs."""
    serve_role_signed_by(fleet, OTHER, OTHER)
    assert fleet.pull().settings == SETTINGS


def test_node_b_key_signing_node_a_role_is_refused(fleet):
    """Who: as above. With what: a new version of node1's own role, signed by node2's key."""
    serve_role_signed_by(fleet, NODE, OTHER)
    assert f"node-{NODE} was signed by 0/1 keys" in refused(fleet, "bad-signature")


def test_node_a_served_node_b_target_is_refused(fleet):
    """Who: the mirror's operator. With what: node2's signed target file served under
    node1's hashed name (TUF's hash refuses it); and node2's target signed for node1's path
    by node1's own key (an administrator's slip): its content names node2, refused."""
    fleet.publish({NODE: SETTINGS, OTHER: {**SETTINGS, "rocm_users": ["bob"]}})
    theirs = fleet.sim.files[fleet.sim.target(OTHER)]
    fleet.sim.files[fleet.sim.target(NODE)] = theirs
    refused(fleet, "unverified")
    fleet.mirror()
    role = fleet.sim.newest(f"node-{NODE}")
    role.signed.version += 1
    role.signed.targets[pulled.target_path(NODE)] = fleet.sim.put_target(NODE, theirs)
    role.signatures.clear()
    role.sign(signer(fleet.keys / "nodes" / f"{NODE}.pem"))
    fleet.sim.forge({f"{role.signed.version}.node-{NODE}.json": role},
                 signer(fleet.keys / "online.pem"))  # fmt: skip
    assert "names node 'node2'" in refused(fleet, "other-node")


def test_a_node_key_signs_no_other_node_through_the_tooling(fleet, tmp_path):
    """The publisher holding node2's key alone (its group's administrator) can change node2's
    settings, and nothing of node1's."""
    fleet.publish({NODE: SETTINGS, OTHER: SETTINGS})
    group = tmp_path / "group-2"
    (group / "nodes").mkdir(parents=True, mode=0o700)
    shutil.copy(fleet.keys / "nodes" / f"{OTHER}.pem", group / "nodes" / f"{OTHER}.pem")
    shutil.copy(fleet.keys / "online.pem", group / "online.pem")
    theirs = PullRepository(fleet.repository.directory, [group])
    assert theirs.publish({NODE: SETTINGS, OTHER: {**SETTINGS, "rocm_users": ["bob"]}},
                          24).changed == [OTHER]  # fmt: skip
    with pytest.raises(RepositoryError, match=r"no nodes/node1\.pem"):
        theirs.publish({NODE: EVIL, OTHER: SETTINGS}, 24)


# --- a node's target sealed to the node's own key -----------------------------------------


@pytest.fixture
def sealed_fleet(fleet, tmp_path):
    seal_keys = tmp_path / "seal-keys"
    keys = {node: sealed.node_key(seal_keys, node) for node in (NODE, OTHER)}
    recipients = {node: key.public_key() for node, key in keys.items()}
    fleet.repository.publish({NODE: SETTINGS, OTHER: {**SETTINGS, "rocm_users": ["bob"]}},
                             24, recipients=recipients)  # fmt: skip
    fleet.mirror()
    fleet.seal_keys = seal_keys
    return fleet


def test_a_sealed_target_is_opened_by_its_node_alone(sealed_fleet):
    fleet = sealed_fleet
    mine = fleet.seal_keys / f"{NODE}.pem"
    assert mine.stat().st_mode & 0o777 == 0o600
    assert fleet.pull(NODE, mine).settings == SETTINGS
    # What anyone fetching from the mirror reads: ciphertext, never the settings.
    for path, content in fleet.sim.files.items():
        if path.startswith("targets/"):
            assert b"rocm_users" not in content and b"gfx1100" not in content
    # The administrators read the plain copy, never served (copy targets/ and metadata/).
    assert pulled.parse(fleet.repository.node_targets()[OTHER], OTHER, None).settings[
        "rocm_users"
    ] == ["bob"]
    # Sealing to the same key again changes nothing.
    again = fleet.repository.publish(
        {NODE: SETTINGS, OTHER: {**SETTINGS, "rocm_users": ["bob"]}}, 24,
        recipients={n: sealed.node_key(fleet.seal_keys, n).public_key() for n in (NODE, OTHER)},
    )  # fmt: skip
    assert again.changed == []


def test_node_a_asking_for_node_b_target_can_not_open_it(sealed_fleet):
    """Who: node1 (a compromised node, root on itself, with its own key). With what: a pull of
    node2's target: it verifies (anyone may fetch it) but node1's key can't open it."""
    fleet = sealed_fleet
    said = refused(fleet, "sealed", node=OTHER, seal_key=fleet.seal_keys / f"{NODE}.pem")
    assert "can't be opened with this node's key" in said
    assert "sealed to a node key this node doesn't have" in refused(fleet, "sealed", node=OTHER)


def test_a_sealed_target_moved_to_another_node_does_not_open(sealed_fleet, tmp_path):
    """The node's name is bound into the sealing (HPKE's info): node2's sealed bytes, even
    if node1 held node2's key, don't open as node1's."""
    fleet = sealed_fleet
    theirs = fleet.sim.files[fleet.sim.target(OTHER)]
    key = sealed.load_key(fleet.seal_keys / f"{OTHER}.pem")
    with pytest.raises(PullRefused, match="can't be opened"):
        sealed.open_sealed(theirs, NODE, key)
    assert b"bob" in sealed.open_sealed(theirs, OTHER, key)


# --- the freeze bound ---------------------------------------------------------------------


def test_the_online_key_alone_freezes_a_node_until_its_role_expires(fleet, monkeypatch):
    """Who: a thief of the online key (kept on the mirror), serving the node's last
    publication forever under timestamps and snapshots they keep signing. The node's role,
    signed by its own key, expires NODE_DAYS after it was signed: past that, refused."""
    fleet.publish({NODE: SETTINGS})
    fleet.pull()
    role = fleet.sim.newest(f"node-{NODE}")
    days = (role.signed.expires - datetime.now(UTC)).days
    assert pull_repository.NODE_DAYS - 1 <= days <= pull_repository.NODE_DAYS
    later = role.signed.expires + timedelta(seconds=1)
    online = signer(fleet.keys / "online.pem")
    fleet.sim.forge({}, online, expires=later + timedelta(days=365))
    tuf_now(monkeypatch, later)
    said = refused(fleet, "expired")
    assert f"node-{NODE} is expired" in said and "(rocm-fleet publish)" in said


def test_a_publication_re_signs_node_roles_past_half_their_life(fleet, monkeypatch):
    fleet.publish({NODE: SETTINGS, OTHER: SETTINGS})
    assert fleet.repository.publish({NODE: SETTINGS, OTHER: SETTINGS}, 24).changed == []
    monkeypatch.setattr(pull_repository, "NODE_DAYS", 1000)  # every role now past half
    again = fleet.repository.publish({NODE: SETTINGS, OTHER: SETTINGS}, 24)
    assert again.changed == []
    fleet.mirror()
    role = fleet.sim.newest(f"node-{NODE}")
    assert role.signed.version == 2
    assert role.signed.expires - datetime.now(UTC) > timedelta(days=900)
    assert fleet.pull().serial == again.version


def test_the_online_key_replaying_a_nodes_older_role_is_refused(fleet):
    """Who: a thief of the online key who writes the mirror. With what: a fresh snapshot
    naming node1's older role (still on the mirror: consistent snapshots keep it), validly
    signed by node1's key, to give it back its earlier settings."""
    fleet.publish({NODE: SETTINGS})
    fleet.publish({NODE: {**SETTINGS, "rocm_users": ["alice"]}})
    applied = fleet.pull().serial
    old = fleet.sim.metadata(f"1.node-{NODE}.json")
    fleet.sim.forge({f"1.node-{NODE}.json": old}, signer(fleet.keys / "online.pem"))
    assert f"node-{NODE}" in refused(fleet, "rollback")
    assert fleet.applied() == applied


def test_a_node_taken_out_and_put_back_follows_on_with_a_newer_role(fleet):
    fleet.publish({NODE: SETTINGS, OTHER: SETTINGS})
    fleet.publish({NODE: {**SETTINGS, "rocm_users": ["alice"]}, OTHER: SETTINGS})
    assert fleet.pull().settings["rocm_users"] == ["alice"]
    fleet.publish({OTHER: SETTINGS})
    assert "no target" in refused(fleet, "no-target")
    fleet.publish({NODE: SETTINGS, OTHER: SETTINGS})
    assert fleet.pull().settings == SETTINGS  # role version 3, after the 2 it had seen
    assert fleet.sim.newest(f"node-{NODE}").signed.version == 3
