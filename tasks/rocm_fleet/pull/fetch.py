"""``rocm-fleet pull-fetch``: the pull service's first step on the node (rocm-fleet-pull.sh).

Fetches this node's target from the fleet's TUF repository and verifies it
(``pull.client``: TUF's client from the root a push installed, then the target's
own checks), then writes the settings for the pull's deploy (``--output``: the target's
settings with the push-only ones the push gave: the repository, the trusted root and the
node's name) and records the serial applied. A target carrying site matrix data has it
written beside the settings (``matrix-data.json``, root's alone), which its
``rocm_matrix_data`` then names; a target without it has an earlier copy removed. Refused
data changes nothing: the reason is one line on stderr (the journal), the result (the
metric's label) alone on stdout.

Exit status: 0 verified and written, 1 refused or not fetched (nothing written).
"""

import json
import sys
from pathlib import Path
from typing import Any

import click

from rocm_fleet.cli.exits import Command, described, epilog, option
from rocm_fleet.model.paths import PULL_MATRIX_DATA


def run(args: Any) -> int:
    from rocm_fleet.atomic import write_atomically
    from rocm_fleet.model.pulled import PullRefused
    from rocm_fleet.pull import client as pull_client

    try:
        state = pull_client.fetch(args.repository, args.metadata, args.trusted_root, args.node,
                                  args.ca or None, args.seal_key)  # fmt: skip
    except PullRefused as exc:
        print(f"rocm-fleet pull: refused ({exc.result}): {exc}; nothing changed", file=sys.stderr)
        print(exc.result)
        return 1
    settings = {
        **state.settings,
        "rocm_pull_source": args.repository,
        "rocm_pull_trusted_root": str(args.trusted_root),
        "rocm_pull_node": args.node,
    }
    args.output.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    site = args.output.with_name(Path(PULL_MATRIX_DATA).name)
    if state.matrix_data is None:
        site.unlink(missing_ok=True)  # an earlier target's: not this one's
    else:
        write_atomically(site, state.matrix_data, mode=0o600)
        settings["rocm_matrix_data"] = str(site)
    write_atomically(args.output, json.dumps(settings, indent=1) + "\n", mode=0o600)
    pull_client.record_applied(args.metadata, state.serial)
    print(f"rocm-fleet pull: verified serial {state.serial} of {args.node}", file=sys.stderr)
    return 0


command = Command(
    "pull-fetch",
    run,
    help=described(__doc__),
    epilog=epilog("Here: 0 verified and written; 1 refused or not fetched (nothing written)"),
    params=[
        option("--repository", required=True, help="the TUF repository's URL"),
        option("--trusted-root", type=click.Path(path_type=Path), required=True,
               help="the root metadata a push installed"),
        option("--metadata", type=click.Path(path_type=Path), required=True,
               help="where TUF keeps what it verified"),
        option("--node", required=True, help="this node's target name"),
        option("--output", type=click.Path(path_type=Path), required=True,
               help="the settings' file"),
        option("--ca", help="the only CA trusted for an https repository"),
        option("--seal-key", type=click.Path(path_type=Path),
               help="this node's X25519 key, which opens its sealed target"),
    ],
)  # fmt: skip
