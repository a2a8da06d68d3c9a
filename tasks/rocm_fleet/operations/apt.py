"""apt and dpkg operations."""

import re

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation
from pyinfra.facts.files import FileContents

from rocm_fleet.engine.diffs import detailing, show
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.apt import (
    CandidateVersions,
    DpkgInterrupted,
    InstalledPackages,
    KeyringFingerprints,
)
from rocm_fleet.facts.files import FileDigest, Ledger
from rocm_fleet.facts.system import NvidiaStack
from rocm_fleet.model.changes import FileChange, PackageChange
from rocm_fleet.model.matrix import Release
from rocm_fleet.model.streams import STREAMS
from rocm_fleet.model.versions import is_amd_driver_version
from rocm_fleet.operations._script import script
from rocm_fleet.operations.files import removed, stamp_is_current


@operation()
def debian_packages(
    packages: list[str] | None = None, ledger: str | None = None, present: bool = True
):
    """Install missing distribution ``packages`` (refreshing apt lists only then), appending them to
    ``ledger``; or (not ``present``) purge those the ledger names, with what they pulled in,
    keeping what a hand-installed package needs."""
    installed = read_fact(InstalledPackages)
    if not present:
        recorded = (read_fact(FileContents, path=ledger) or []) if ledger else []
        names = sorted({line.strip() for line in recorded if line.strip() in installed})
        if not names:
            host.noop("no package this deploy installed is left")
            return
        show_packages(installed, remove=names)
        yield script("ledger-purge", ledger or "", *names)
        return
    missing = [name for name in packages or [] if name not in installed]
    if not missing:
        host.noop(f"{', '.join(packages or [])} installed")
        return
    show_packages(installed, install=missing)
    yield script("packages-install", ledger or "", *missing)


@operation()
def verified_keyring(
    path: str,
    url: str = "",
    fingerprint: str = "",
    present: bool = True,
    proxy: dict[str, str] | None = None,
    ca: str | None = None,
):
    """Install an apt keyring from ``url`` only if it holds exactly ``fingerprint`` (checked before
    an atomic rename: a wrong key fails the host), fetched through ``proxy`` trusting only ``ca``
    if given; or remove it."""
    current = read_fact(KeyringFingerprints, path=path)
    if not present:
        yield from removed(path, exists=current is not None)
        return
    fingerprint = fingerprint.upper()
    if current == [fingerprint]:
        host.noop(f"keyring {path} holds exactly {fingerprint}")
        return
    if detailing():  # a keyring is binary: its keys' fingerprints, as the diff
        diff = (*(f"-{key}" for key in current or []), f"+{fingerprint}")
        show([FileChange("create" if current is None else "modify", path, diff)])
    through = [proxy["https_proxy"], proxy.get("no_proxy", "")] if proxy else []
    if ca:
        through = [*(through or ["", ""]), ca]
    yield script("verified-keyring", url, fingerprint, path, *through)


@operation()
def apt_lists_fresh(inputs: list[str], stamp: str):
    """``apt-get update`` when any of ``inputs`` changed since ``stamp`` (touched after an update
    this deploy made), or there is none."""
    if stamp_is_current(stamp, inputs):
        host.noop(f"apt lists are newer than {', '.join(inputs)}")
        return
    yield script("apt-get", "update")
    yield StringCommand("mkdir", "-p", stamp.rsplit("/", 1)[0], "&&", "touch", stamp)


@operation(is_idempotent=False)
def apt_update():
    """Refresh apt's lists unconditionally: gate it with ``_if``."""
    yield script("apt-get", "update")


@operation()
def release_packages(
    packages: list[str] | None = None, release: Release | None = None, present: bool = True
):
    """Install AMD's ROCm ``packages`` from ``release`` and move its stream's installed ones to it
    (purging those it doesn't publish, other targets' and the other stream's; the driver stays);
    or purge AMD's ROCm and driver packages of every release. ValueError: present, no release."""
    installed = read_fact(InstalledPackages)
    if not present:
        names = sorted(
            name
            for name, version in installed.items()
            if is_amd_driver_version(version) or any(s.owns(name, version) for s in STREAMS)
        )
        if not names:
            host.noop("no AMD ROCm packages installed")
            return
        show_packages(installed, remove=names)
        yield script("apt-get", "purge", *names)
        return
    if release is None:
        raise ValueError("release_packages(present=True) needs the release")
    packages = packages or []
    stream = release.stream
    pattern = stream.version_regex(release)
    of_release = re.compile(pattern)
    mine = {name: version for name, version in installed.items() if stream.owns(name, version)}
    foreign = sorted(
        name
        for name, version in installed.items()
        if any(other.owns(name, version) for other in STREAMS if other is not stream)
    )
    missing = [name for name in packages if not of_release.search(mine.get(name, ""))]
    # Another GPU target's packages are purged, never moved to this release.
    unwanted = stream.unwanted_targets(release, packages, sorted(mine))
    stale = sorted(
        name for name, version in mine.items()
        if not of_release.search(version) and name not in packages and name not in unwanted
    )  # fmt: skip
    if not missing and not stale and not foreign and not unwanted:
        host.noop(f"{', '.join(packages)} installed from ROCm {release.version}")
        return
    show_packages(installed, missing, remove=foreign + unwanted, move=stale, version_regex=pattern)
    kinds = {"foreign": foreign, "want": missing, "stale": stale, "drop": unwanted}
    yield script("release-switch", pattern, *(f"{k}:{n}" for k, ns in kinds.items() for n in ns))


@operation()
def ledgered_packages_absent(ledger: str, keep: list[str] | None = None):
    """Purge the installed packages ``ledger`` names (those the deploy installed for a setting now
    off; never one in ``keep``), then the ledger."""
    if read_fact(FileDigest, path=ledger) is None:
        host.noop(f"no {ledger}: nothing installed for it")
        return
    recorded = read_fact(Ledger, path=ledger)
    installed = read_fact(InstalledPackages)
    names = sorted(
        {line.strip() for line in recorded if line.strip() in installed} - set(keep or [])
    )
    if names:
        yield script("apt-get", "purge", *names)
    yield StringCommand("rm", "-f", QuoteString(ledger))


@operation()
def dpkg_repaired():
    """When dpkg was interrupted (``DpkgInterrupted``): ``dpkg --configure -a``, then
    ``apt-get -f install``."""
    if not read_fact(DpkgInterrupted):
        host.noop("dpkg has no interrupted or half-configured packages")
        return
    yield StringCommand(
        "DEBIAN_FRONTEND=noninteractive", "dpkg", "--force-confdef", "--force-confold",
        "--configure", "-a",
    )  # fmt: skip
    yield script("apt-get", "-f", "install")


@operation()
def nvidia_packages_absent(reboot_reason: str):
    """Purge NVIDIA's driver and CUDA packages (``NvidiaStack``); mark a reboot needed when an
    NVIDIA module is loaded."""
    stack = read_fact(NvidiaStack)
    if not stack["packages"]:
        host.noop("no NVIDIA driver or CUDA package installed")
        return
    if detailing():
        show_packages(read_fact(InstalledPackages), remove=stack["packages"])
    yield script("nvidia-purge", reboot_reason if stack["modules"] else "", *stack["packages"])


def show_packages(
    installed: dict[str, str],
    install: list[str] | None = None,
    remove: list[str] | None = None,
    move: list[str] | None = None,
    version_regex: str | None = None,
) -> None:
    """Under ``--diff``: ``install`` and ``move`` as installs or upgrades at the version apt would
    pick (``version_regex``'s), a ``move`` apt has none of as a removal; ``remove``."""
    if not detailing():
        return
    asked = [*(install or []), *(move or [])]
    new = {}
    if asked:
        new = read_fact(CandidateVersions, packages=asked, version_regex=version_regex) or {}
    changes = []
    for name in asked:
        old = installed.get(name)
        if old is None:
            changes.append(PackageChange("install", name, new=new.get(name)))
        elif name in new or name in (install or []):
            changes.append(PackageChange("upgrade", name, old, new.get(name)))
        else:
            changes.append(PackageChange("remove", name, old))
    changes += [PackageChange("remove", name, installed.get(name)) for name in remove or []]
    show(changes)
