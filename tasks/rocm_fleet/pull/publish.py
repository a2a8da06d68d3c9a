"""``rocm-fleet publish INVENTORY --repository DIR --keys KEYS``: pull nodes' signed settings.

Renders each pull node's settings from the inventory (the same data and model a push
validates: a host the push would refuse is refused here) and publishes each as the target of
its own delegated role in the fleet's TUF repository in DIR, signed with that node's key
(``nodes/NODE.pem``, made for a new node), sealed to the node's own key where
``rocm_pull_seal_keys`` names a directory of them; then a new snapshot and timestamp with the
online key. Adding or removing a node changes the delegations, signed by the targets keys'
threshold. Copy DIR's ``targets/`` and ``metadata/`` to the fleet mirror's published
directory (``/srv/rocm-fleet-published``, served under ``/fleet/``) or any static host; each
node's ``rocm_pull_source`` is its URL and ``rocm_pull_trusted_root`` the root metadata
(``DIR/metadata/root.json``) a push installs.

``--init`` makes the repository and its keys in KEYS (mode 0700, each key 0600): ``root.pem``
(only for --init and --rotate: keep it offline), ``targets.pem`` (the delegations) and
``online.pem`` (the snapshot and the timestamp); with ``--root-keys N --root-threshold K``
(and ``--targets-keys``, ``--targets-threshold``) ``root-1.pem`` .. ``root-N.pem`` of which K
must sign: give each to its own holder. Short of a threshold, a publication or rotation is
staged (``DIR/staged/``) and each other holder adds their signatures with ``--sign``; the
last one publishes it. ``--timestamp`` re-signs the timestamp alone, with the online key: run
it more often than ``--timestamp-hours`` (the longest a node can be kept on old data).
``--rotate NAME`` replaces a key (root, targets, online, root-2...), in a new root version
the nodes follow on their next pull. ``--keys`` may be given more than once (the first that
holds a key wins), so each key can stay on its own medium.

Exit status (``cli.exits``): 0 published (or nothing to publish), 4 a problem to fix in the
inventory, the keys or an option (one line).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rocm_fleet.cli.exits import Command, described, epilog, option
from rocm_fleet.cli.inventory import UsageError, load_inventory

if TYPE_CHECKING:
    from rocm_fleet.model.site_data import SiteData


def run(args: Any) -> int:
    from rocm_fleet.pull.keyring import RepositoryError
    from rocm_fleet.pull.repository import PullRepository

    repository = PullRepository(args.repository.resolve(), [k.resolve() for k in args.keys])
    if args.timestamp_hours <= 0:
        raise UsageError(f"--timestamp-hours {args.timestamp_hours}: expected a positive number")
    sizes = (args.root_keys, args.root_threshold, args.targets_keys, args.targets_threshold)
    if not args.init and sizes != (1, 1, 1, 1):
        raise UsageError("--root-keys, --root-threshold, --targets-keys and --targets-threshold "
                         "make a repository: give them with --init")  # fmt: skip
    try:
        if args.init:
            made = repository.create(args.keys[0].resolve(), args.root_keys, args.root_threshold,
                                     args.targets_keys, args.targets_threshold)  # fmt: skip
            if len(made) == 3:
                print(f"Made the repository {repository.directory} and its keys in "
                      f"{args.keys[0]}: move root.pem offline now.")  # fmt: skip
            else:
                print(f"Made the repository {repository.directory} and its keys in "
                      f"{args.keys[0]} ({', '.join(made)}): root {args.root_threshold} of "
                      f"{args.root_keys}, targets {args.targets_threshold} of "
                      f"{args.targets_keys}; give each root and targets key to its own holder "
                      "and medium, offline, now.")  # fmt: skip
            print(f"Give the pull nodes rocm_pull_trusted_root = "
                  f'"{repository.metadata / "root.json"}"')  # fmt: skip
            return 0
        if not repository.exists():
            raise UsageError(f"{repository.directory} holds no repository: make it with --init")
        if args.timestamp:
            version = repository.refresh_timestamp(args.timestamp_hours)
            print(f"Timestamp version {version}, valid {args.timestamp_hours:g} hours.")
            return 0
        if args.sign:
            return _waiting(repository, repository.sign_staged(args.timestamp_hours),
                            "The staged publication is published.")  # fmt: skip
        if args.rotate:
            version, waiting = repository.rotate(args.rotate, args.timestamp_hours)
            done = (f"Root version {version} names the new {args.rotate} key; the nodes "
                    "follow it on their next pull.")  # fmt: skip
            return _waiting(repository, waiting, done)
        if not args.inventory:
            raise UsageError("an INVENTORY is needed to publish the nodes' settings")
        nodes, matrix_data, recipients = _nodes(args, repository)
        published = repository.publish(nodes, args.timestamp_hours, matrix_data, recipients)
    except RepositoryError as exc:
        raise UsageError(str(exc)) from None
    if published.waiting:
        return _waiting(repository, published.waiting, "")
    if not published.changed and not published.removed:
        print(f"Nothing changed: the repository's targets version {published.version} stands.")
        return 0
    removed = f"; removed {', '.join(published.removed)}" if published.removed else ""
    changed = ", ".join(published.changed) or "none"
    print(f"Targets version {published.version}: {changed} changed{removed}.")
    return 0


def _waiting(repository: Any, waiting: list[str], done: str) -> int:
    """Say what a publication still waits for (it is staged), or ``done``."""
    if not waiting:
        print(done)
        return 0
    print(f"Staged in {repository.staged}, short of its thresholds ({'; '.join(waiting)}): "
          "each other key holder adds theirs with rocm-fleet publish --sign --repository "
          "DIR --keys THEIR-KEYS; then the online key's holder publishes it the same "
          "way.")  # fmt: skip
    return 0


def _nodes(args: Any, repository: Any) -> tuple[dict[str, dict[str, Any]], dict[str, str],
                                                dict[str, Any]]:  # fmt: skip
    """The settings, site matrix texts and sealing keys, by target name, of every host with
    rocm_pull or already published, and the repository's other nodes unless --limit leaves them."""
    from rocm_fleet.engine.inventory_fleet import fleet_of
    from rocm_fleet.model import pulled
    from rocm_fleet.pull import sealed

    limits = [p.strip() for item in args.limit for p in item.split(",") if p.strip()]
    _state, hosts = load_inventory(args.inventory, limits, check_for_changes=False)
    fleet = fleet_of(hosts[0].inventory)
    states = [pulled.parse(content, name, None)
              for name, content in repository.node_targets().items()]  # fmt: skip
    existing = {state.node: state.settings for state in states}
    nodes = dict(existing) if limits else {}
    recipients: dict[str, Any] = {}
    matrix_data = {s.node: s.matrix_data for s in states if limits and s.matrix_data is not None}
    bad = [str(exc) for exc in fleet.invalid(host.name for host in hosts)]
    if bad:  # every host's, one line per bad key
        raise UsageError("\n".join(bad))
    for host in hosts:
        config = fleet.config(host.name)
        name = config.rocm_pull_node or host.name
        if not config.rocm_pull and name not in existing:
            continue
        try:
            pulled.target_path(name)
            settings = pulled.pullable(host.data.dict())
            json.dumps(settings)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{host.name}: {exc}") from None
        nodes[name] = settings
        if config.rocm_pull_seal_keys:
            try:
                key = sealed.node_key(Path(config.rocm_pull_seal_keys), name)
                recipients[name] = key.public_key()
            except (OSError, ValueError) as exc:
                raise UsageError(f"{host.name}: rocm_pull_seal_keys: {exc}") from None
        matrix_data.pop(name, None)
        if config.matrix_data is not None:
            matrix_data[name] = _site_text(host.name, config.matrix_data)
    if not nodes:
        raise UsageError(f"no host of {args.inventory} has rocm_pull: True")
    return nodes, matrix_data, recipients


def _site_text(host: str, site: SiteData) -> str:
    """The text of ``site`` as checked; UsageError when the file's SHA-256 changed since."""
    try:
        raw = site.path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{host}: site matrix data {site.path}: {exc}") from None
    if hashlib.sha256(raw).hexdigest() != site.sha256:
        raise UsageError(f"{host}: site matrix data {site.provenance} changed while it was "
                         "published: run publish again")  # fmt: skip
    return raw.decode()


command = Command(
    "publish",
    run,
    exclusive=("init", "timestamp", "rotate", "sign"),
    help=described(__doc__),
    epilog=epilog("Here: 0 published (or nothing to publish)"),
    params=[
        click.Argument(["inventory"], required=False, help="pyinfra inventory (file or module)"),
        option("--repository", type=click.Path(path_type=Path), required=True,
               help="the repository's directory"),
        option("--keys", type=click.Path(path_type=Path), multiple=True, required=True,
               help="a directory of key files (repeatable)"),
        option("--limit", multiple=True,
               help="hosts or groups to publish (others keep their targets)"),
        option("--init", is_flag=True, help="make the repository and its keys"),
        option("--timestamp", is_flag=True, help="re-sign the timestamp alone"),
        option("--rotate", help="replace a key: root, targets, online, or a key file's name "
               "without .pem (root-2)"),
        option("--sign", is_flag=True,
               help="add the signatures of the keys at hand to a staged publication"),
        option("--root-keys", type=click.IntRange(1, 9), default=1,
               help="with --init: how many root keys"),
        option("--root-threshold", type=click.IntRange(1, 9), default=1,
               help="with --init: how many root keys must sign"),
        option("--targets-keys", type=click.IntRange(1, 9), default=1,
               help="with --init: how many targets keys"),
        option("--targets-threshold", type=click.IntRange(1, 9), default=1,
               help="with --init: how many targets keys must sign"),
        option("--timestamp-hours", type=float, default=24,
               help="how long the timestamp is valid (the freeze bound)"),
    ],
)  # fmt: skip
