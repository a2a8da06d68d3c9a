"""Pull mode with no single point of compromise, through the CLI (``rocm-fleet publish`` in a
process of its own): k-of-n root and targets keys made, a publication staged short of a
threshold then signed, nodes' targets sealed. The protocol's cases (thresholds, delegations,
sealing, the freeze bound) run on a simulated mirror in tests/unit/pull/test_pull_keys.py."""

from __future__ import annotations

import shutil
import subprocess
import sys

from tuf.api import metadata as tuf
from tuf.api.metadata import Metadata

from rocm_fleet.model import pulled
from rocm_fleet.pull import sealed
from rocm_fleet.pull.repository import PullRepository
from unit.pullrepo import NODE


def test_init_makes_k_of_n_root_and_targets_keys_the_root_names(tmp_path):
    repository, keys = tmp_path / "repository", tmp_path / "keys"
    made = subprocess.run(
        [sys.executable, "-m", "rocm_fleet.cli", "publish", "--init", "--repository",
         str(repository), "--keys", str(keys), "--root-keys", "3", "--root-threshold", "2",
         "--targets-keys", "3", "--targets-threshold", "2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "root 2 of 3, targets 2 of 3" in made.stdout
    names = sorted(p.name for p in keys.iterdir())
    assert names == ["online.pem", "root-1.pem", "root-2.pem", "root-3.pem",
                     "targets-1.pem", "targets-2.pem", "targets-3.pem"]  # fmt: skip
    assert all((keys / n).stat().st_mode & 0o777 == 0o600 for n in names)
    root = Metadata[tuf.Root].from_file(str(repository / "metadata/root.json"))
    for role in ("root", "targets"):
        assert (len(root.signed.roles[role].keyids), root.signed.roles[role].threshold) == (3, 2)
    assert len(root.signatures) == 3  # every root key signed the first root
    bad = subprocess.run(
        [sys.executable, "-m", "rocm_fleet.cli", "publish", "--init", "--repository",
         str(tmp_path / "r2"), "--keys", str(tmp_path / "k2"), "--targets-keys", "2",
         "--targets-threshold", "3"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 4 and "threshold of 3 of 2 keys" in bad.stderr
    assert not (tmp_path / "k2").exists()


def test_publish_seals_each_node_named_by_rocm_pull_seal_keys(tmp_path):
    """The CLI: the inventory's rocm_pull_seal_keys makes the node's key there (0600) and
    seals its target; a node without it stays readable; threshold options need --init."""
    from integration.pull.test_pull_tuf import inventory, rocm_fleet

    repository, keys, seal_keys = tmp_path / "repository", tmp_path / "keys", tmp_path / "seal"
    made = rocm_fleet("publish", "--init", "--repository", str(repository), "--keys", str(keys))
    assert made.returncode == 0, made.stderr
    root = repository / "metadata/root.json"
    args = ["publish", str(inventory(tmp_path, root, rocm_pull_seal_keys=str(seal_keys))),
            "--repository", str(repository), "--keys", str(keys)]  # fmt: skip
    first = rocm_fleet(*args)
    assert first.returncode == 0, first.stderr
    assert (seal_keys / f"{NODE}.pem").stat().st_mode & 0o777 == 0o600
    assert not (seal_keys / "gpu-2.pem").exists()
    (mine,) = (repository / "targets/nodes").glob(f"*.{NODE}.json")
    (theirs,) = (repository / "targets/nodes").glob("*.gpu-2.json")
    assert sealed.is_sealed(mine.read_bytes()) and not sealed.is_sealed(theirs.read_bytes())
    opened = sealed.open_sealed(mine.read_bytes(), NODE, sealed.load_key(seal_keys / "node1.pem"))
    assert "rocm_pull_seal_keys" not in pulled.parse(opened, NODE, None).settings
    assert "Nothing changed" in rocm_fleet(*args).stdout
    late = rocm_fleet(*args, "--root-keys", "3")
    assert late.returncode == 4 and "give them with --init" in late.stderr


def test_the_cli_stages_short_of_a_threshold_and_publishes_once_signed(tmp_path):
    from integration.pull.test_pull_tuf import inventory, rocm_fleet

    repository, keys, holder = tmp_path / "repository", tmp_path / "keys", tmp_path / "holder"
    made = rocm_fleet("publish", "--init", "--repository", str(repository), "--keys", str(keys),
                      "--targets-keys", "2", "--targets-threshold", "2")  # fmt: skip
    assert made.returncode == 0, made.stderr
    holder.mkdir(mode=0o700)
    shutil.move(keys / "targets-2.pem", holder / "targets-2.pem")
    where = ["--repository", str(repository), "--keys", str(keys)]
    staged = rocm_fleet("publish", str(inventory(tmp_path, repository / "metadata/root.json")),
                        *where)  # fmt: skip
    assert staged.returncode == 0, staged.stderr
    assert "short of its thresholds (2.targets.json: 1 more signature)" in staged.stdout
    assert PullRepository(repository, []).node_targets() == {}  # nothing published yet
    signed = rocm_fleet("publish", "--sign", *where, "--keys", str(holder))
    assert signed.returncode == 0, signed.stderr
    assert "The staged publication is published." in signed.stdout
    assert sorted(PullRepository(repository, []).node_targets()) == ["gpu-2", NODE]
    again = rocm_fleet("publish", "--sign", *where)
    assert again.returncode == 4 and "holds no publication waiting" in again.stderr
