"""``rocm-fleet bundle INVENTORY --output DIR``: fetch once, verified, what a fleet installs."""

import sys
from pathlib import Path
from typing import Any

import click

from rocm_fleet.cli.exits import Command, Exit, epilog, option
from rocm_fleet.cli.inventory import UsageError, load_inventory
from rocm_fleet.model import matrix


def host_distros(state: Any, hosts: list[Any]) -> dict[str, str | None]:
    """Each host's ``"ID VERSION_ID"`` (``"debian 12"``) over SSH, in parallel; None if unread."""
    from rocm_fleet.engine.context import on_each_host
    from rocm_fleet.facts.system import DistroRelease

    def read(host: Any) -> str | None:
        try:
            host.connect(show_errors=False, raise_exceptions=True)
            found = host.get_fact(DistroRelease, _ignore_errors=True) or {}
        except Exception:  # unreachable: the caller names it and asks for --distro
            return None
        finally:
            if host.connected:
                host.disconnect()
        if not found.get("id"):
            return None
        return f"{found['id']} {found.get('version_id') or ''}".strip()

    read_all = on_each_host(state, hosts, read)
    return {
        host.name: (None if isinstance(found, BaseException) else found)
        for host, found in zip(hosts, read_all, strict=True)
    }


def plan_for(args: Any):
    """The bundle plan for the inventory: (Plan, notes to print)."""
    from rocm_fleet.bundle.build import Plan
    from rocm_fleet.engine.inventory_fleet import fleet_of

    state, hosts = load_inventory(args.inventory, args.limit, check_for_changes=False)
    fleet = fleet_of(hosts[0].inventory)
    bad = fleet.invalid(host.name for host in hosts)
    if bad:  # every host's, one line per bad key
        raise UsageError("\n".join(map(str, bad)))
    configs = {host.name: fleet.config(host.name) for host in hosts}
    configs = {name: config for name, config in configs.items() if config.rocm_state == "present"}
    if not configs:
        raise UsageError(f"no host of {args.inventory} has rocm_state: present")
    if args.distro:
        distros = {name: list(args.distro) for name in configs}
    else:
        read = host_distros(state, [h for h in hosts if h.name in configs])
        unread = sorted(name for name, found in read.items() if found is None)
        if unread:
            raise UsageError(
                f"can't read the distro of {', '.join(unread)} (unreachable from here): pass "
                "--distro for the fleet's distros, e.g. --distro 'debian 12'"
            )
        distros = {name: [found] for name, found in read.items() if found}
    plan, notes = Plan(), []
    for name, config in configs.items():
        for key in distros[name]:
            distro_id, _, version = key.partition(" ")
            row = matrix.distro(distro_id, version, config.rocm_distro_override)
            if row is None:
                raise UsageError(
                    f"{name}: {key} is not a distro the matrix knows "
                    f"({', '.join(matrix.DISTRO_KEYS)}); set rocm_distro_override"
                )
            needs = fleet.needs(name, row)
            if needs is None:
                notes.append(f"{name}: ROCm {config.release.version} publishes nothing for "
                             f"{row.key}")  # fmt: skip
                continue
            described = {
                "distro": row.key,
                "release": config.release.version,
                "stream": config.stream.name,
                "repository": needs.apt[0].repository.describe(),
                "packages": list(needs.apt[0].packages),
                "driver": config.rocm_driver,
                "python": matrix.HOST_RUNTIMES[row.key].python,
                "torch": config.torch.build.torch if config.torch else None,
            }
            plan.add(name if len(distros[name]) == 1 else f"{name} ({key})", needs, described)
    return plan, notes


def run(args: Any) -> int:
    from rocm_fleet.bundle.build import BundleError, BundleUnreachable, make_bundle
    from rocm_fleet.upstream.http import Fetcher
    from rocm_fleet.upstream.progress import human

    plan, notes = plan_for(args)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    out = Path(args.output)
    fetcher = Fetcher(
        timeout=(min(args.timeout, 30.0), args.timeout),
        retries=args.retries,
        deadline=args.deadline,
    )
    try:
        manifest = make_bundle(plan, out, fetcher, inventory=args.inventory)
    except BundleUnreachable as exc:
        print(f"rocm-fleet bundle: {exc}", file=sys.stderr)
        return Exit.NOT_CHECKED
    except BundleError as exc:
        print(f"rocm-fleet bundle: {exc}", file=sys.stderr)
        return Exit.FINDINGS
    finally:
        fetcher.close()
    counts = fetcher.counts
    debs = sum(len(r["debs"]) for r in manifest["repositories"])
    wheels = sum(len(w["pins"]) for w in manifest["wheel_sets"])
    total = sum(entry["size"] for entry in manifest["files"].values())
    print(
        f"bundle {out}: {len(manifest['repositories'])} apt repositories ({debs} .debs), "
        f"{len(manifest['wheel_sets'])} wheel sets ({wheels} wheels), {human(total)}; "
        f"this run fetched {counts.fetched} files ({human(counts.fetched_bytes)}), kept "
        f"{counts.kept}, removed {len(manifest['removed'])}"
    )
    return Exit.OK


command = Command(
    "bundle",
    run,
    gevent=True,
    help="Fetch once, where AMD's and PyTorch's servers are reachable (directly or "
    "through HTTPS_PROXY), everything the inventory's hosts install from them: AMD's "
    "keys (fingerprint checked), signed repository indexes (signature checked), the "
    ".debs and wheels they need (each checked against a signed or published hash), and "
    "a manifest.json of what came from where. Copy the directory into the air gap and "
    "serve it with the fleet mirror (rocm_mirror, rocm_mirror_bundle). A second run "
    "fetches only what is new.",
    epilog=epilog(
        "Here: 0 the bundle is complete; 1 something fetched did not verify, or upstream "
        "lacks a package a host needs; 2 upstream or the proxy did not answer"
    ),
    params=[
        click.Argument(["inventory"], help="pyinfra inventory (file, host list or module)"),
        option("--output", required=True, help="the bundle directory (made or updated)"),
        option("--limit", multiple=True, help="group, host name or glob (repeatable)"),
        option(
            "--distro",
            multiple=True,
            type=click.Choice(list(matrix.DISTRO_KEYS)),
            help="bundle for this distro instead of reading each host's (repeatable)",
        ),
        option("--timeout", type=float, default=60.0, help="seconds a connection may stay silent"),
        option(
            "--retries", type=int, default=5, help="retries per request and per broken transfer"
        ),
        option(
            "--deadline",
            type=float,
            default=3600.0,
            help="seconds one file's transfer may take in all (a slow server is cut off)",
        ),
    ],
)
