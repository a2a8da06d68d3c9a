"""apt and dpkg operations that pyinfra's built-ins get wrong for this job.

Each reads its facts through ``read_fact`` (answered by the preflight survey on a converged
host), compares them with what is wanted, and either yields the commands that close the gap
or calls ``host.noop`` with the reason nothing is needed.
"""

from __future__ import annotations

from pyinfra import host
from pyinfra.api import StringCommand, operation
from pyinfra.facts.files import FileContents

from rocm_fleet.facts.apt import DpkgInterrupted, InstalledPackages, KeyringFingerprints
from rocm_fleet.facts.cache import read_fact
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.system import NvidiaStack
from rocm_fleet.operations._script import script
from rocm_fleet.operations.files import removed
from rocm_fleet.versions import amd_release_tag, is_amd_driver_version


@operation()
def debian_packages(
    packages: list[str] | None = None, ledger: str | None = None, present: bool = True
):
    """
    Install missing distribution packages (refreshing apt lists first only when something
    is missing), or purge the ones a ledger says this deploy installed.

    pyinfra's ``apt.packages(update=True)`` refreshes on every run (or by age), which a
    converged host would report as a change.

    + packages: package names to install (present=True)
    + ledger: file the names this op installs are appended to (packages already there are
      not recorded); with present=False, the packages it lists are purged with what they
      pulled in, keeping any that something installed by hand still depends on
    + present: install (True) or purge what the ledger recorded (False)
    """
    installed = read_fact(InstalledPackages)
    if not present:
        recorded = (read_fact(FileContents, path=ledger) or []) if ledger else []
        names = sorted({line.strip() for line in recorded if line.strip() in installed})
        if not names:
            host.noop("no package this deploy installed is left")
            return
        yield script("ledger-purge", ledger or "", *names)
        return
    missing = [name for name in packages or [] if name not in installed]
    if not missing:
        host.noop(f"{', '.join(packages or [])} installed")
        return
    yield script("packages-install", ledger or "", *missing)


@operation()
def verified_keyring(path: str, url: str = "", fingerprint: str = "", present: bool = True):
    """
    Install an apt keyring from an armored key URL, only if it carries ``fingerprint``; or
    remove it.

    The key is fetched (once, only when the keyring is missing or holds other keys),
    checked with ``gpg --show-keys`` and dearmored beside ``path`` before an atomic rename,
    so a key with the wrong fingerprint fails the host with nothing written.

    + path: the keyring, e.g. /etc/apt/keyrings/rocm.gpg
    + url: http(s) URL of the ASCII-armored public key
    + fingerprint: the 40-hex-digit fingerprint the key must have
    + present: whether the keyring should exist
    """
    current = read_fact(KeyringFingerprints, path=path)
    if not present:
        yield from removed(path, exists=current is not None)
        return
    fingerprint = fingerprint.upper()
    if current == [fingerprint]:
        host.noop(f"keyring {path} holds exactly {fingerprint}")
        return
    yield script("verified-keyring", url, fingerprint, path)


@operation()
def apt_lists_fresh(inputs: list[str], stamp: str):
    """
    Run ``apt-get update`` when any of ``inputs`` (source, keyring) changed since the last
    update this deploy made, or the deploy never made one.

    pyinfra's ``apt.update`` either always runs or goes by age; tying it to the files
    means a converged host never refreshes lists and a new source always does, even when a
    previous run stopped between writing the source and updating.

    + inputs: files whose change makes the lists stale
    + stamp: file touched after a successful update
    """
    stamped = read_fact(FileDigest, path=stamp)
    changed = [
        path
        for path in inputs
        if (digest := read_fact(FileDigest, path=path))
        and (stamped is None or digest["mtime"] > stamped["mtime"])
    ]
    if stamped is not None and not changed:
        host.noop(f"apt lists are newer than {', '.join(inputs)}")
        return
    yield script("apt-get", "update")
    yield StringCommand("mkdir", "-p", stamp.rsplit("/", 1)[0], "&&", "touch", stamp)


@operation(is_idempotent=False)
def apt_update():
    """
    Refresh apt's lists, unconditionally: gate it with ``_if`` (after a source is removed,
    say).
    """
    yield script("apt-get", "update")


@operation()
def release_packages(
    packages: list[str] | None = None, numeric_tag: str = "", present: bool = True
):
    """
    Install AMD's ROCm packages from one release, moving every installed ROCm package to
    it; or purge every AMD package of any release.

    A package counts as installed only when its version carries this release's tag.
    Packages of another release (after ``rocm_version`` changed, up or down) are moved to
    this release's version, or purged when this release doesn't publish them, so no two
    releases are ever mixed on a host. With present=False, AMD's ROCm and driver packages
    (amdgpu-dkms) of every release are purged, Debian's own packages left alone.

    + packages: AMD package names, e.g. ["rocm-hip-runtime"]
    + numeric_tag: the release's tag, e.g. "60403" for 6.4.3
    + present: install the release (True) or purge AMD's packages (False)
    """
    installed = read_fact(InstalledPackages)
    if not present:
        names = sorted(name for name, version in installed.items() if amd_release_tag(version))
        if not names:
            host.noop("no AMD ROCm packages installed")
            return
        yield script("apt-get", "purge", *names)
        return
    packages = packages or []
    tags = {
        name: tag
        for name, version in installed.items()
        if (tag := amd_release_tag(version)) and not is_amd_driver_version(version)
    }
    missing = [name for name in packages if tags.get(name) != numeric_tag]
    stale = sorted(
        name for name, tag in tags.items() if tag != numeric_tag and name not in packages
    )
    if not missing and not stale:
        host.noop(f"{', '.join(packages)} installed from ROCm tag {numeric_tag}")
        return
    items = [f"want:{name}" for name in missing] + [f"stale:{name}" for name in stale]
    yield script("release-switch", numeric_tag, *items)


@operation()
def dpkg_repaired():
    """
    Finish what an interrupted dpkg left behind (killed mid-install, power loss), so apt
    can run again: ``dpkg --configure -a``, then ``apt-get -f install`` for packages left
    half-installed. Only when dpkg's journal or a package's state says it was interrupted.
    """
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
    """
    Purge NVIDIA's driver and CUDA packages (those the ``NvidiaStack`` fact finds), and
    mark a reboot needed when an NVIDIA kernel module is loaded.

    + reboot_reason: the reason recorded for the reboot a loaded driver needs
    """
    stack = read_fact(NvidiaStack)
    if not stack["packages"]:
        host.noop("no NVIDIA driver or CUDA package installed")
        return
    yield script("nvidia-purge", reboot_reason if stack["modules"] else "", *stack["packages"])
