"""``make_bundle``: fetch, verify and lay out what a ``Plan`` names (docs/decisions/bundles.md):
AMD's apt repositories, and wheels with PEP 503 pages listing only the bundled files, each file
atomic, confined and in the manifest; a host's pip resolves each wheel set to them only."""

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from rocm_fleet.bundle.contents import Bundle, write_confined
from rocm_fleet.model import matrix
from rocm_fleet.model.sources import AptRepository, HostNeeds
from rocm_fleet.upstream.aptrepo import (
    RepositoryError,
    SignatureError,
)
from rocm_fleet.upstream.http import DownloadError, Fetcher, Unreachable, sha256_file
from rocm_fleet.upstream.manifest import (
    FORMAT,
    MANIFEST,
    BundleError,
    BundleUnreachable,
    bundle_path,
    check_record,
    confined,
    read_manifest,
    repository_key,
)
from rocm_fleet.upstream.resolution import interpreter_tag, manylinux_platforms
from rocm_fleet.upstream.wheels import (
    ResolutionError,
    is_sdist,
)
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
        wanted: list[tuple[dict[Any, tuple[set[str], set[str]]], Any, Any]] = [
            *((self.apt, need.repository, need.packages) for need in needs.apt),
            *((self.wheels, (w.index_url, w.runtime), w.requirements()) for w in needs.wheels),
        ]
        for table, key, items in wanted:
            found, hosts = table.setdefault(key, (set(), set()))
            found.update(items)
            hosts.add(host)


def make_bundle(plan: Plan, out: Path, fetcher: Fetcher, inventory: str = "") -> dict[str, Any]:
    """Fetch, verify and lay out ``plan`` under ``out``, the manifest written; else BundleError."""
    out.mkdir(parents=True, exist_ok=True)
    previous = read_manifest(out)
    if previous is not None:
        check_record(out, previous)
    bundle = Bundle(out, fetcher)
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
            url, fingerprint = repository.key.url, repository.key.fingerprint
            if (url, fingerprint) not in keys:
                keys[url, fingerprint] = bundle.key(url, fingerprint)
                manifest["keys"][url] = {"path": bundle_path(url), "fingerprint": fingerprint}
            packages, hosts = plan.apt[repository]
            manifest["repositories"].append(
                bundle.repository(
                    repository, sorted(packages), sorted(hosts), keys[url, fingerprint]
                )
            )
        for (index_url, runtime), (requirements, hosts) in sorted(
            plan.wheels.items(), key=lambda item: (item[0][0], item[0][1].python)
        ):
            found = bundle.wheel_set(index_url, runtime, sorted(requirements), sorted(hosts))
            manifest["wheel_sets"].append(found)
        for index_url, projects in bundle.pages.items():
            bundle.write_pages(index_url, projects)
        running = f"{sys.version_info.major}.{sys.version_info.minor}"
        for wheel_set in manifest["wheel_sets"]:
            if wheel_set["python"] == running:
                pip_check(wheel_set, out)
    except Unreachable as exc:
        raise BundleUnreachable(str(exc)) from None
    except (DownloadError, RepositoryError, ResolutionError, SignatureError) as exc:
        raise BundleError(str(exc)) from None
    manifest["files"] = dict(sorted(bundle.files.items()))
    removed = _prune(out, previous, manifest)
    manifest["removed"] = removed
    write_confined(out, MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())
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


def pip_check(wheel_set: dict[str, Any], out: Path) -> None:
    """BundleError unless pip resolves the set against the bundle's pages to bundled files."""
    try:
        found = importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        found = "none"
    if tuple(int(n) for n in re.findall(r"\d+", found)[:2]) < (23, 3):  # --platform with --dry-run
        raise BundleError(
            f"the pip beside rocm-fleet ({sys.executable}) is {found}; the bundle needs pip "
            f">= 23.3: run `{sys.executable} -m pip install 'pip>=23.3'`"
        )
    if any(is_sdist(pin["path"].rsplit("/", 1)[-1]) for pin in wheel_set["pins"].values()):
        # pip needs --only-binary=:all: with --python-version: the resolution decides.
        return
    index = confined(out, bundle_path(wheel_set["index_url"].rstrip("/") + "/index.html")).parent
    python = wheel_set["python"]
    abi = interpreter_tag(python)
    platforms = [a for p in manylinux_platforms(wheel_set["glibc"]) for a in ("--platform", p)]
    with tempfile.TemporaryDirectory(prefix="rocm-fleet-pip-") as tmp:
        report = Path(tmp) / "report.json"
        result = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run",
             "--ignore-installed", "--quiet", "--disable-pip-version-check", "--no-cache-dir",
             "--only-binary=:all:", "--python-version", python, "--implementation", "cp",
             "--abi", abi, *platforms, "--index-url", index.as_uri(), "--report", str(report),
             *wheel_set["requirements"]],
            capture_output=True, text=True, check=False,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "LANG": "C.UTF-8"},
        )  # fmt: skip
        if result.returncode != 0:
            errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
            raise BundleError(
                f"pip can't install {' '.join(wheel_set['requirements'])} for Python {python} "
                f"from the bundle: {' '.join(errors) or result.stderr[-500:]}"
            )
        picked = json.loads(report.read_text())["install"]
    bundled = {pin["path"] for pin in wheel_set["pins"].values()}
    for item in picked:
        url = item["download_info"]["url"]
        path = os.path.relpath(url2pathname(urlsplit(url).path), out.resolve())
        if path not in bundled:
            raise BundleError(f"pip would install {path} for Python {python}, not resolved")
