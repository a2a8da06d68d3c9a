"""``make_bundle``: fetch, verify and lay out what a ``Plan`` names (docs/decisions/bundles.md)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocm_fleet.bundle.apt import add_key, add_repository
from rocm_fleet.bundle.pip_check import pip_check
from rocm_fleet.bundle.tree import Files, write_file
from rocm_fleet.bundle.wheels import add_wheel_set, write_pages
from rocm_fleet.model import matrix
from rocm_fleet.model.sources import AptRepository, HostNeeds
from rocm_fleet.upstream.aptrepo import RepositoryError
from rocm_fleet.upstream.dist_files import ResolutionError
from rocm_fleet.upstream.http import DownloadError, Fetcher, Unreachable, sha256_file
from rocm_fleet.upstream.manifest import (
    FORMAT,
    MANIFEST,
    BundleError,
    BundleUnreachable,
    check_record,
    confined,
    read_manifest,
    repository_key,
)
from rocm_fleet.upstream.signature import SignatureError
from rocm_fleet.upstream.wheels import Link
from rocm_fleet.version import __version__


@dataclass
class Plan:
    """The union of the hosts' needs, each with the hosts that need it."""

    apt: dict[AptRepository, tuple[set[str], set[str]]] = field(default_factory=dict)
    wheels: dict[tuple[str, matrix.HostRuntime], tuple[set[str], set[str]]] = field(
        default_factory=dict
    )
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, host: str, needs: HostNeeds, described: dict[str, Any]) -> None:
        self.hosts[host] = described
        for need in needs.apt:
            packages, hosts = self.apt.setdefault(need.repository, (set(), set()))
            packages.update(need.packages)
            hosts.add(host)
        for wheel in needs.wheels:
            requirements, hosts = self.wheels.setdefault(
                (wheel.index_url, wheel.runtime), (set(), set())
            )
            requirements.update(wheel.requirements())
            hosts.add(host)


def make_bundle(plan: Plan, out: Path, fetcher: Fetcher, inventory: str = "") -> dict[str, Any]:
    """Fetch, verify and lay out ``plan`` under ``out``, the manifest written; else BundleError."""
    out.mkdir(parents=True, exist_ok=True)
    previous = read_manifest(out)
    if previous is not None:
        check_record(out, previous)
    files = Files()
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "made_by": f"rocm-fleet {__version__}",
        "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "inventory": inventory,
        "hosts": plan.hosts,
        "keys": {},
        "repositories": [],
        "wheel_sets": [],
    }
    try:
        keys: dict[tuple[str, str], bytes] = {}
        for repository in sorted(plan.apt, key=repository_key):
            signer = (repository.key.url, repository.key.fingerprint)
            if signer not in keys:
                keys[signer] = add_key(repository, fetcher, out, files, manifest)
            packages, hosts = plan.apt[repository]
            manifest["repositories"].append(
                add_repository(repository, sorted(packages), sorted(hosts), keys[signer], fetcher,
                               out, files)
            )  # fmt: skip
        pages: dict[str, dict[str, list[tuple[str, Link]]]] = {}
        for (index_url, runtime), (requirements, hosts) in sorted(
            plan.wheels.items(), key=lambda item: (item[0][0], item[0][1].python)
        ):
            manifest["wheel_sets"].append(
                add_wheel_set(index_url, runtime, sorted(requirements), sorted(hosts), fetcher,
                              out, files, pages)
            )  # fmt: skip
        for index_url, projects in pages.items():
            write_pages(index_url, projects, out, files)
        running = f"{sys.version_info.major}.{sys.version_info.minor}"
        for wheel_set in manifest["wheel_sets"]:
            if wheel_set["python"] == running:
                pip_check(wheel_set, out)
    except Unreachable as exc:
        raise BundleUnreachable(str(exc)) from None
    except (DownloadError, RepositoryError, ResolutionError, SignatureError) as exc:
        raise BundleError(str(exc)) from None
    manifest["files"] = dict(sorted(files.entries.items()))
    removed = _prune(out, previous, manifest)
    manifest["removed"] = removed
    write_file(out, MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())
    return manifest


def _prune(out: Path, previous: dict[str, Any] | None, manifest: dict[str, Any]) -> list[str]:
    """Remove the files no longer needed that still match their record, and emptied directories."""
    if not previous:
        return []
    root = out.resolve()
    keep = set(manifest["files"])
    recorded = previous["files"]
    removed = []
    for path in sorted(set(recorded) - keep):
        target = confined(out, path, f"{out / MANIFEST} lists a file that")
        entry = recorded[path]
        if target.is_symlink() or not target.is_file():
            continue
        if target.stat().st_size != entry["size"] or sha256_file(target) != entry["sha256"]:
            continue
        target.unlink()
        removed.append(path)
        parent = target.parent
        while parent != root and parent.is_relative_to(root) and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    return removed
