"""Operations that pyinfra's built-ins get wrong for this job.

Each one reads a fact, compares it with what is wanted, and either yields the commands
that close the gap or calls ``host.noop`` with the reason nothing is needed, so a second
run reports no change and ``--dry`` reports real drift only.
"""

from __future__ import annotations

import hashlib
import re
import shlex

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation
from pyinfra.facts.deb import DebPackages
from pyinfra.facts.files import Directory, File, FileContents

from tasks.facts import (
    DpkgInterrupted,
    FileDigest,
    GroupMembership,
    KeyringFingerprints,
    PythonDistVersions,
    StaleAgainst,
    read_fact,
)

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
def text_file(path: str, content: str, mode: str = "644"):
    """
    Write a small text file owned by root when its content or mode differs.

    One fact read (``FileDigest``) where ``files.put`` reads two (``File``, then
    ``Sha1File``), which counts on a converged fleet; written to a temporary name and
    renamed, so readers never see half a file.

    + path: the file; its directory must exist
    + content: the whole text
    + mode: octal permissions, e.g. "644"
    """
    current = host.get_fact(FileDigest, path=path)
    digest = hashlib.sha256(content.encode()).hexdigest()
    if current == {"mode": mode, "sha256": digest}:
        host.noop(f"{path} is up to date")
        return
    temporary = shlex.quote(f"{path}.rocm-fleet-new")
    script = (
        f"printf %s {shlex.quote(content)} > {temporary} && chmod {mode} {temporary} "
        f"&& mv -f {temporary} {shlex.quote(path)}"
    )
    yield StringCommand("sh", "-c", QuoteString(script))


@operation()
def debian_packages(packages: list[str], ledger: str | None = None):
    """
    Install missing distribution packages, refreshing apt lists first only when needed.

    pyinfra's ``apt.packages(update=True)`` refreshes on every run (or by age), which a
    converged host would report as a change.

    + packages: package names
    + ledger: file to append the names this op installed to, so that uninstalling removes
      them again (see ``recorded_packages_absent``); packages already there are not recorded
    """
    installed = read_fact(DebPackages)
    missing = [name for name in packages if name not in installed]
    if not missing:
        host.noop(f"{', '.join(packages)} installed")
        return
    record = []
    if ledger:
        directory = ledger.rsplit("/", 1)[0] or "/"
        record = [
            "&&", "mkdir", "-p", QuoteString(directory), "&&", "printf", "'%s\\n'",
            *map(QuoteString, missing), ">>", QuoteString(ledger),
        ]  # fmt: skip
    yield StringCommand(
        APT_GET, "update", "&&", APT_GET, "install", "--no-install-recommends",
        *map(QuoteString, missing), *record,
    )  # fmt: skip


# Purges what the ledger lists, and the dependencies they pulled in, unless something the
# admin installed depends on them: they are marked automatically installed, and only what
# `apt-get autoremove` would newly remove because of that is purged. A Recommends or
# Suggests doesn't keep them (apt recommends ca-certificates and suggests gnupg; they were
# there before, or the deploy added them).
# Packages that were already autoremovable before (someone else's) stay, and so do kernels.
_LEDGER_PURGE = """
set -eu
removable() {
    apt-get -s -o APT::AutoRemove::RecommendsImportant=false \\
        -o APT::AutoRemove::SuggestsImportant=false autoremove \\
        | awk '$1 == "Remv" { print $2 }' | sort
}
ledger=$1; shift
removable > "$ledger.before"
apt-mark auto "$@" > /dev/null
removable > "$ledger.after"
purge=$(comm -13 "$ledger.before" "$ledger.after")
rm -f "$ledger.before" "$ledger.after"
if [ -n "$purge" ]; then
    {apt_get} purge $purge
fi
"""


@operation()
def recorded_packages_absent(ledger: str):
    """
    Purge the distribution packages a ledger says this deploy installed (and what they
    pulled in), keeping any that something installed by hand still depends on.

    + ledger: file written by ``debian_packages(ledger=...)``
    """
    recorded = host.get_fact(FileContents, path=ledger) or []
    installed = read_fact(DebPackages)
    names = sorted({line.strip() for line in recorded if line.strip() in installed})
    if not names:
        host.noop("no package this deploy installed is left")
        return
    yield StringCommand(
        "sh", "-c", QuoteString(_LEDGER_PURGE.strip().replace("{apt_get}", APT_GET)),
        "ledger-purge", QuoteString(ledger), *map(QuoteString, names),
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
export GNUPGHOME="$tmp"
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
# packages (rocminfo 5.2.3-2, 6.1.2-2) don't match. AMD's driver packages from
# repo.radeon.com/amdgpu carry the same tag after an epoch (amdgpu-dkms
# 1:6.12.12.60403-2194681.22.04); they live in their own repository, so moving between
# ROCm releases leaves them alone, and only uninstalling purges them.
AMD_VERSION = re.compile(r"^(\d+:)?\d+\.\d+\.\d+\.(\d{5})-")


def amd_release_tags(installed: dict[str, list[str]], with_driver: bool = False) -> dict[str, str]:
    """Installed AMD ROCm packages (and with ``with_driver`` AMD's driver packages, the
    ones with an epoch) -> the release tag of their version."""
    tags = {}
    for name, versions in installed.items():
        for version in versions:
            match = AMD_VERSION.match(version)
            if match and (with_driver or not match.group(1)):
                tags[name] = match.group(2)
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
    tags = amd_release_tags(read_fact(DebPackages))
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
    Purge every installed AMD package of any ROCm release, ROCm's and AMD's driver
    (amdgpu-dkms) alike, leaving Debian's own packages.
    """
    names = sorted(amd_release_tags(read_fact(DebPackages), with_driver=True))
    if not names:
        host.noop("no AMD ROCm packages installed")
        return
    yield StringCommand(APT_GET, "purge", *map(QuoteString, names))


@operation()
def dpkg_repaired():
    """
    Finish what an interrupted dpkg left behind (killed mid-install, power loss), so apt
    can run again: ``dpkg --configure -a``, then ``apt-get -f install`` for packages left
    half-installed. Only when dpkg's journal or a package's state says it was interrupted.
    """
    problems = host.get_fact(DpkgInterrupted)
    if not problems:
        host.noop("dpkg has no interrupted or half-configured packages")
        return
    yield StringCommand(
        "DEBIAN_FRONTEND=noninteractive", "dpkg", "--force-confdef", "--force-confold",
        "--configure", "-a", "&&", APT_GET, "-f", "install",
    )  # fmt: skip


@operation()
def gpu_access(groups: list[str], users: list[str]):
    """
    The ``groups`` exist (as system groups) and every one of ``users`` is in all of them,
    keeping their other groups.

    One fact read instead of pyinfra's ``server.group`` per group plus one per user (two
    round trips each); and unlike ``server.user``, a user missing on the host is an error
    naming it, not a new account.

    + groups: group names, e.g. ["video", "render"]
    + users: existing users who must be in every one of ``groups``
    """
    current = host.get_fact(GroupMembership, groups=groups, users=users)
    absent_users = [user for user in users if current["users"].get(user) is None]
    if absent_users:
        yield failure(f"user(s) {', '.join(absent_users)} do not exist on {host.name}")
        return
    changes = [
        StringCommand("groupadd", "--system", QuoteString(group))
        for group in groups
        if group not in current["groups"]
    ]
    for user in users:
        missing = [g for g in groups if g not in (current["users"][user] or [])]
        if missing:
            changes.append(
                StringCommand(
                    "usermod", "-a", "-G", QuoteString(",".join(missing)), QuoteString(user)
                )
            )
    if not changes:
        host.noop(f"{', '.join(groups)} exist" + (f"; {', '.join(users)} in them" if users else ""))
        return
    yield from changes


@operation()
def venv(path: str, ledger: str | None = None):
    """
    Create a Python virtual environment at ``path`` unless one exists.

    + path: directory of the venv
    + ledger: file to append the parent directories this creates to (deepest last), so
      that uninstalling removes them again (see ``recorded_directories_absent``)
    """
    if host.get_fact(File, path=f"{path}/pyvenv.cfg"):
        host.noop(f"venv {path} exists")
        return
    if not ledger:
        yield StringCommand("python3", "-m", "venv", QuoteString(path))
        return
    script = """
set -eu
created=""
d=$(dirname "$1")
while [ ! -e "$d" ]; do created="$d
$created"; d=$(dirname "$d"); done
python3 -m venv "$1"
mkdir -p "$(dirname "$2")"
printf '%s' "$created" >> "$2"
"""
    yield StringCommand(
        "sh", "-c", QuoteString(script.strip()), "venv", QuoteString(path), QuoteString(ledger)
    )


@operation()
def recorded_directories_absent(ledger: str):
    """
    Remove the directories a ledger says this deploy created, deepest first, each only
    if it is empty (whatever someone else put there keeps it).

    + ledger: file written by ``venv(ledger=...)``
    """
    recorded = [line.strip() for line in host.get_fact(FileContents, path=ledger) or []]
    present = [
        d for d in reversed(recorded) if d.startswith("/") and host.get_fact(Directory, path=d)
    ]
    if not present:
        host.noop("no directory this deploy created is left")
        return
    yield StringCommand("rmdir", "--ignore-fail-on-non-empty", *map(QuoteString, present))


@operation()
def pinned_wheels(python: str, index_url: str, wanted: dict[str, str]):
    """
    Install exact wheel versions, including local labels such as ``2.9.1+rocm6.4``.

    pyinfra's ``pip.packages`` reads ``pip freeze`` with a regex that drops ``+local``
    versions, so it reinstalls torch on every run; this compares importlib.metadata's
    versions instead. pip resolves and downloads everything before it uninstalls anything,
    so an index that is down leaves the installed torch in place, working. No pip cache is
    kept (torch wheels are gigabytes, and uninstalling would leave the cache behind).

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
        "--no-cache-dir", "--index-url", QuoteString(index_url), *specs,
    )  # fmt: skip


def version_matches(installed: str | None, wanted: str) -> bool:
    """PEP 440 ``==`` for the two shapes we pin: exact with a local label, or public only."""
    if installed is None:
        return False
    return installed == wanted if "+" in wanted else installed.split("+")[0] == wanted
