"""``rocm-fleet mirror-ca DIR ADDRESS [ADDRESS ...]``: the TLS files of a fleet mirror."""

import re
from pathlib import Path
from typing import Any

import click

from rocm_fleet.cli.exits import Command, epilog
from rocm_fleet.cli.inventory import UsageError
from rocm_fleet.model.grammar import ip_literal

_NAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
)


def run(args: Any) -> int:
    from rocm_fleet.model.tls import TlsFileError, make_mirror_files

    for name in args.names:
        wildcard = name.startswith("*.") and _NAME.fullmatch(name[2:])
        if not (ip_literal(name) or _NAME.fullmatch(name) or wildcard):
            raise UsageError(f"{name!r} is neither an IP address nor a DNS name")
    try:
        made = make_mirror_files(args.directory.resolve(), list(args.names))
    except (TlsFileError, OSError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    tls = made.tls
    kept = "made" if made.new_ca else "kept (the hosts pin it)"
    print(f"CA {tls.ca} {kept}; {tls.cert} issued for {', '.join(args.names)}.")
    print("Give the mirror host these settings (host_data or group_data):")
    print(f'  rocm_mirror_tls_ca = "{tls.ca}"')
    print(f'  rocm_mirror_tls_cert = "{tls.cert}"')
    print(f'  rocm_mirror_tls_key = "{tls.key}"')
    return 0


command = Command(
    "mirror-ca",
    run,
    help="Make DIR/ca.crt and DIR/ca.key (a CA of the fleet's own; kept when already there, "
    "since every host pins it) and issue DIR/mirror.crt and DIR/mirror.key for the addresses "
    "and names the hosts reach the mirror by (the first: the mirror host's ssh_hostname in the "
    "inventory, else its name). Keys are created mode 0600 and never printed. Then it prints "
    "the three settings to give the mirror host (rocm_mirror_tls_ca, rocm_mirror_tls_cert, "
    "rocm_mirror_tls_key); keep DIR/ca.key offline if you can: it is needed only to issue again.",
    epilog=epilog(
        "Here: 0 the files made (or the CA kept) and issued; 4 a bad address or "
        "a directory that can't be written"
    ),
    params=[
        click.Argument(
            ["directory"],
            type=click.Path(path_type=Path),
            metavar="DIR",
            help="where the files go (made if missing)",
        ),
        click.Argument(
            ["names"],
            nargs=-1,
            required=True,
            metavar="ADDRESS...",
            help="an IP address or DNS name the hosts reach the mirror by (the first: the "
            "inventory's ssh_hostname of the mirror host, else its name)",
        ),
    ],
)
