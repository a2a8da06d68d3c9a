"""Operations that pyinfra's built-ins get wrong for this job.

Each one reads a fact, compares it with what is wanted, and either yields the commands
that close the gap or calls ``host.noop`` with the reason nothing is needed, so a second
run reports no change and ``--dry`` reports real drift only.
"""

from __future__ import annotations

import re
import shlex

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation
from pyinfra.facts.deb import DebPackages
from pyinfra.facts.files import File

from tasks.facts import KeyringFingerprints, PythonDistVersions, StaleAgainst, UserGroups

APT_GET = (
    "DEBIAN_FRONTEND=noninteractive apt-get -y -o Dpkg::Options::=--force-confdef "
    "-o Dpkg::Options::=--force-confold"
)


def failure(reason: str) -> StringCommand:
    """A command that prints ``reason`` on stderr and fails, failing the host (only)."""
    return StringCommand("echo", QuoteString(reason), ">&2", "&&", "exit", "1")


@operation()
def fail(reason: str):
    """
    Stop this host here with ``reason`` (the other hosts carry on).

    + reason: what is wrong and how to fix it; printed on the host's error output
    """
    yield failure(reason)


@operation()
def debian_packages(packages: list[str]):
    """
    Install missing distribution packages, refreshing apt lists first only when needed.

    pyinfra's ``apt.packages(update=True)`` refreshes on every run (or by age), which a
    converged host would report as a change.

    + packages: package names
    """
    installed = host.get_fact(DebPackages)
    missing = [name for name in packages if name not in installed]
    if not missing:
        host.noop(f"{', '.join(packages)} installed")
        return
    yield StringCommand(
        APT_GET, "update", "&&", APT_GET, "install", "--no-install-recommends",
        *map(QuoteString, missing),
    )  # fmt: skip


@operation()
def verified_keyring(url: str, fingerprint: str, path: str):
    """
    Install an apt keyring from an armored key URL, only if it carries ``fingerprint``.

    The key is fetched (once, only when the keyring is missing or holds other keys),
    checked with ``gpg --show-keys`` and dearmored beside ``path`` before an atomic rename,
    so a key with the wrong fingerprint fails the host with nothing written.

    + url: http(s) URL of the ASCII-armored public key
    + fingerprint: the 40-hex-digit fingerprint the key must have
    + path: the keyring to write, e.g. /etc/apt/keyrings/rocm.gpg
    """
    fingerprint = fingerprint.upper()
    present = host.get_fact(KeyringFingerprints, path=path)
    if present == [fingerprint]:
        host.noop(f"keyring {path} holds exactly {fingerprint}")
        return

    directory = path.rsplit("/", 1)[0] or "/"
    script = f"""
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fsSL --retry 2 -o "$tmp/key.asc" {shlex.quote(url)}
got=$(gpg --batch --with-colons --show-keys "$tmp/key.asc" | awk -F: '$1 == "fpr" {{print $10}}')
if [ "$got" != {shlex.quote(fingerprint)} ]; then
    echo "refusing key from {url}: fingerprint ${{got:-none}} is not {fingerprint}" >&2
    exit 1
fi
install -d -m 0755 {shlex.quote(directory)}
gpg --batch --yes --dearmor -o "$tmp/keyring.gpg" "$tmp/key.asc"
install -m 0644 "$tmp/keyring.gpg" {shlex.quote(path)}.rocm-fleet-new
mv -f {shlex.quote(path)}.rocm-fleet-new {shlex.quote(path)}
"""
    yield StringCommand("sh", "-c", QuoteString(script.strip()))


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
    stale = host.get_fact(StaleAgainst, stamp=stamp, inputs=inputs)
    if not stale:
        host.noop("apt lists are newer than the ROCm source and keyring")
        return
    stamp_dir = stamp.rsplit("/", 1)[0]
    yield f"{APT_GET} update && mkdir -p {shlex.quote(stamp_dir)} && touch {shlex.quote(stamp)}"


# AMD versions every classic ROCm package <x.y.z>.<tag>-<build>[~<ubuntu>]: rocm-core
# 6.4.3.60403-128~22.04, rocminfo 1.0.0.60403-… (fact sheet §3.5, §12). Debian's own ROCm
# packages (rocminfo 5.2.3-2, 6.1.2-2) don't match.
AMD_VERSION = re.compile(r"^\d+\.\d+\.\d+\.(\d{5})-")


def amd_release_tags(installed: dict[str, list[str]]) -> dict[str, str]:
    """Installed AMD ROCm packages -> the release tag of their version."""
    tags = {}
    for name, versions in installed.items():
        for version in versions:
            match = AMD_VERSION.match(version)
            if match:
                tags[name] = match.group(1)
    return tags


# Picks, for each package, the version repo.radeon.com offers for this release (the only
# ROCm source configured) and installs exactly that, which is how apt downgrades too (AMD's
# pin is 600, below the 1000 apt needs to downgrade on its own). A package of another
# release that this one doesn't publish is purged. A wanted package it doesn't publish
# fails the host by name.
_RELEASE_SWITCH = """
set -eu
tag=$1; shift
install=""; purge=""
for item in "$@"; do
    name=${item#*:}
    version=$(apt-cache madison "$name" | awk -F'|' -v t=".$tag-" \
        '{ gsub(/ /, "", $2) } index($2, t) { print $2; exit }')
    if [ -n "$version" ]; then
        install="$install $name=$version"
    elif [ "${item%%:*}" = want ]; then
        echo "ROCm release tag $tag has no package $name on the configured repository" >&2
        exit 1
    else
        purge="$purge $name"
    fi
done
if [ -n "$install" ]; then
    {apt_get} install --allow-downgrades $install
fi
if [ -n "$purge" ]; then
    {apt_get} purge $purge
fi
"""


@operation()
def release_packages(packages: list[str], numeric_tag: str):
    """
    Install AMD's ROCm packages from one release, moving every installed ROCm package to it.

    A package counts as installed only when its version carries this release's tag. Packages
    of another release (after ``rocm_version`` changed, up or down) are moved to this
    release's version, or purged when this release doesn't publish them, so no two releases
    are ever mixed on a host.

    + packages: AMD package names, e.g. ["rocm-hip-runtime"]
    + numeric_tag: the release's tag, e.g. "60403" for 6.4.3
    """
    tags = amd_release_tags(host.get_fact(DebPackages))
    missing = [name for name in packages if tags.get(name) != numeric_tag]
    stale = sorted(
        name for name, tag in tags.items() if tag != numeric_tag and name not in packages
    )
    if not missing and not stale:
        host.noop(f"{', '.join(packages)} installed from ROCm tag {numeric_tag}")
        return
    items = [f"want:{name}" for name in missing] + [f"stale:{name}" for name in stale]
    yield StringCommand(
        "sh", "-c", QuoteString(_RELEASE_SWITCH.strip().replace("{apt_get}", APT_GET)),
        "release-packages", QuoteString(numeric_tag), *map(QuoteString, items),
    )  # fmt: skip


@operation()
def release_packages_absent():
    """
    Purge every installed AMD ROCm package (any release), leaving Debian's own packages.
    """
    names = sorted(amd_release_tags(host.get_fact(DebPackages)))
    if not names:
        host.noop("no AMD ROCm packages installed")
        return
    yield StringCommand(APT_GET, "purge", *map(QuoteString, names))


@operation()
def group_members(users: list[str], groups: list[str]):
    """
    Add existing users to ``groups`` without touching their other groups.

    pyinfra's ``server.user`` would create a missing user; a typo in the inventory fails
    the host instead, naming the user.

    + users: existing users
    + groups: groups each user must be in
    """
    changed = False
    for user in users:
        current = host.get_fact(UserGroups, user=user)
        if current is None:
            yield failure(f"user {user!r} does not exist on {host.name}; create it first")
            return
        missing = [g for g in groups if g not in current]
        if missing:
            changed = True
            yield StringCommand(
                "usermod", "-a", "-G", QuoteString(",".join(missing)), QuoteString(user)
            )
    if not changed:
        host.noop(f"{', '.join(users)} in {', '.join(groups)}")


@operation()
def venv(path: str):
    """
    Create a Python virtual environment at ``path`` unless one exists.

    + path: directory of the venv
    """
    if host.get_fact(File, path=f"{path}/pyvenv.cfg"):
        host.noop(f"venv {path} exists")
        return
    yield StringCommand("python3", "-m", "venv", QuoteString(path))


@operation()
def pinned_wheels(python: str, index_url: str, wanted: dict[str, str]):
    """
    Install exact wheel versions, including local labels such as ``2.9.1+rocm6.4``.

    pyinfra's ``pip.packages`` reads ``pip freeze`` with a regex that drops ``+local``
    versions, so it reinstalls torch on every run; this compares importlib.metadata's
    versions instead. pip downloads and resolves before it uninstalls, so an index that is
    down leaves the installed torch in place.

    + python: the venv's python
    + index_url: the only index pip may use (the ROCm index on download.pytorch.org)
    + wanted: distribution -> version; with a local label ("2.9.1+rocm6.4") it must match
      exactly, without one ("0.24.1") any local label of that release matches, as in pip
    """
    installed = host.get_fact(PythonDistVersions, python=python, names=sorted(wanted)) or {}
    drift = {n: v for n, v in wanted.items() if not version_matches(installed.get(n), v)}
    if not drift:
        host.noop(", ".join(f"{n}=={v}" for n, v in sorted(wanted.items())) + " installed")
        return
    specs = [QuoteString(f"{name}=={version}") for name, version in sorted(wanted.items())]
    yield StringCommand(
        QuoteString(python), "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
        "--index-url", QuoteString(index_url), *specs,
    )  # fmt: skip


def version_matches(installed: str | None, wanted: str) -> bool:
    """PEP 440 ``==`` for the two shapes we pin: exact with a local label, or public only."""
    if installed is None:
        return False
    return installed == wanted if "+" in wanted else installed.split("+")[0] == wanted
