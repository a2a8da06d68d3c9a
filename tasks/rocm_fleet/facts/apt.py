"""apt and dpkg facts: installed packages, dpkg's health, keyrings, sources, install sizes."""

from __future__ import annotations

import base64
import re

from pyinfra.api import FactBase
from typing_extensions import override

from rocm_fleet.facts._shell import MISSING, quote, script_command
from rocm_fleet.model import paths
from rocm_fleet.model.answers import DistroRocmDict, InstallSize, PackagePurgeDict, PurgeDict
from rocm_fleet.model.versions import AMD_CLASSIC_VERSION
from rocm_fleet.upstream.openpgp import primary_fingerprints


class InstalledPackages(FactBase[dict[str, str]]):
    """
    Every package dpkg counts as installed (half-installed and half-configured included,
    config-files-only not): name -> version, architecture qualifier dropped.

    .. code:: python

        {"rocminfo": "1.0.0.60403-128~22.04", "curl": "7.88.1-10+deb12u14"}
    """

    default = dict

    @override
    def command(self) -> str:
        return "dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Version}\\n' 2>/dev/null || true"

    @override
    def process(self, output: list[str]) -> dict[str, str]:
        packages = {}
        for line in output:
            parts = line.split("|")
            # Status-Abbrev's 2nd letter: n = not installed, c = config files only.
            if len(parts) == 3 and len(parts[0]) >= 2 and parts[0][1] not in "nc":
                packages[parts[1].split(":")[0]] = parts[2]
        return packages


class HeldPackages(FactBase[list[str]]):
    """
    The packages on hold in dpkg's database, architecture qualifier dropped, sorted; empty
    without dpkg. Names are dpkg's, unchecked: only looked up, never passed on.

    .. code:: python

        ["linux-headers-amd64", "linux-image-amd64"]
    """

    default = list

    @override
    def command(self) -> str:
        return "dpkg-query -W -f='${db:Status-Want} ${binary:Package}\\n' 2>/dev/null || true"

    @override
    def process(self, output: list[str]) -> list[str]:
        held = (line.split() for line in output)
        return sorted({f[1].split(":")[0] for f in held if len(f) == 2 and f[0] == "hold"})


class DpkgInterrupted(FactBase[list[str]]):
    """
    What an interrupted dpkg left: ``journal`` when /var/lib/dpkg/updates holds entries, and
    ``<state> <package>`` per package not in a final state. Empty when dpkg is clean.

    .. code:: python

        ["journal", "half-configured rocm-core", "unpacked rocminfo"]
    """

    command = (
        "for f in /var/lib/dpkg/updates/* /var/lib/dpkg/updates/.[!.]*; do "
        'if [ -e "$f" ]; then echo journal; break; fi; done; '
        "dpkg-query -W -f='${Status}\\t${Package}\\n' 2>/dev/null | awk -F'\\t' "
        '\'{ split($1, s, " "); if (s[2] != "ok" || (s[3] != "installed" && '
        's[3] != "config-files" && s[3] != "not-installed")) print s[3] " " $2 }\'; true'
    )
    default = list

    @override
    def process(self, output: list[str]) -> list[str]:
        return [line.strip() for line in output if line.strip()]


class KeyringFingerprints(FactBase[list[str] | None]):
    """
    Primary-key fingerprints in a keyring (binary or armored OpenPGP), None when the file is
    missing, [] when unreadable. Needs no gpg on the host.

    .. code:: python

        ["CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"]
    """

    @override
    def command(self, path: str) -> str:
        q = quote(path)
        return f"if test -e {q}; then base64 < {q}; else echo {MISSING}; fi"

    @override
    def process(self, output: list[str]) -> list[str] | None:
        if MISSING in output:
            return None
        try:
            data = base64.b64decode("".join(line.strip() for line in output), validate=True)
        except ValueError:
            return []  # unreadable: holds no key we could trust
        return primary_fingerprints(data)


class AptSourceLines(FactBase[list[list[str]]]):
    """
    The active [file, line] pairs of every apt source file (one-line or deb822) naming one of
    ``hosts``.

    .. code:: python

        [["/etc/apt/sources.list.d/rocm.list",
          "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] https://repo.radeon.com/..."]]
    """

    default = list

    @override
    def command(self, hosts: list[str] | tuple[str, ...]) -> str:
        patterns = " ".join(f"-e {quote(re.escape(h))}" for h in hosts)
        parts = f"{quote(paths.APT_SOURCES_PARTS)}/*"
        return f"grep -Hs {patterns} {quote(paths.APT_SOURCES_LIST)} {parts} || true"

    @override
    def process(self, output: list[str]) -> list[list[str]]:
        sources = []
        for line in output:
            path, _, body = line.partition(":")
            if body.strip() and not body.lstrip().startswith("#"):
                sources.append([path, body.strip()])
        return sources


class DebianMirror(FactBase[str | None]):
    """
    The Debian mirror the host's own apt sources use (first deb822 ``URIs:``, else first
    ``deb`` line naming a ``/debian`` archive); None when it names none.

    .. code:: python

        "http://deb.debian.org/debian"
    """

    @override
    def command(self) -> str:
        deb822, one_line = (quote(p) for p in paths.DEBIAN_SOURCES)
        return (
            f"! test -r {deb822} || sed -n 's/^URIs:[[:space:]]*//p' {deb822}; "
            f"! test -r {one_line} || sed -n 's/^deb[[:space:]]\\+\\(\\[[^]]*\\][[:space:]]*\\)"
            f"\\?\\([^[:space:]]*\\).*/\\2/p' {one_line}"
        )

    @override
    def process(self, output: list[str]) -> str | None:
        for line in output:
            for uri in line.split():
                uri = uri.rstrip("/")
                if uri.startswith(("http://", "https://")) and uri.endswith("/debian"):
                    return uri
        return None


# Sizes apt prints (apt-pkg's SizeToStr: powers of 1000).
_APT_UNITS = {"B": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_INSTALLED = "already installed from this release"


class AptInstallSize(FactBase[InstallSize]):
    """
    Bytes apt says installing ``packages`` adds, asked read-only (no lock, no cache written).
    ``need`` is 0 when all are installed at a version matching ``version_regex``, None when apt
    can't resolve them or its answer can't be read.

    .. code:: python

        InstallSize(need=2400000000, message="After this operation, 2,400 MB of additional ...")
    """

    @staticmethod
    def default() -> InstallSize:
        return InstallSize(need=None, message="")

    @override
    def command(
        self, packages: list[str] | tuple[str, ...], version_regex: str | None = None
    ) -> str:
        if not packages:
            return "true"
        names = " ".join(quote(p) for p in packages)
        # --print-uris: resolves and sizes, installs nothing (--assume-no can install).
        apt = (
            "LC_ALL=C DEBIAN_FRONTEND=noninteractive apt-get install --print-uris "
            "-o Debug::NoLocking=1 -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= "
            f"{names} </dev/null 2>&1 | grep -E '^(After this operation|E:|[0-9]+ upgraded)' "
            "|| true"
        )
        if not version_regex:
            return apt
        have = (
            f"dpkg-query -W -f='${{db:Status-Abbrev}}|${{Version}}\\n' {names} 2>/dev/null"
            f" | awk -F'|' -v re={quote(version_regex)} '$1 ~ /^ii/ && $2 ~ re {{ n++ }} "
            "END { print n + 0 }'"
        )
        return f'if [ "$({have})" = {len(packages)} ]; then echo {_INSTALLED}; else {apt}; fi'

    @override
    def process(self, output: list[str]) -> InstallSize:
        message = " ".join(line.strip() for line in output).strip()
        return InstallSize(need=_apt_need(message), message=message)


def _apt_need(message: str) -> int | None:
    if message == _INSTALLED:
        return 0
    if not message or message.startswith("E:") or " E:" in message:
        return None
    match = re.search(r"After this operation, ([\d.,]+) ([kMGT]?B) (of additional|disk)", message)
    if not match:
        return 0 if re.search(r"\b0 newly installed", message) else None
    if "freed" in message:
        return 0
    number = float(match.group(1).replace(",", ""))
    return int(number * _APT_UNITS[match.group(2)])


def _purge(lines: list[str]) -> PurgeDict:
    result: PurgeDict = {"removes": [], "errors": []}
    for line in lines:
        if line.startswith("__removes="):
            result["removes"].append(line.removeprefix("__removes=").strip())
        elif line.startswith("__error="):
            result["errors"].append(line.removeprefix("__error=").strip())
    result["removes"].sort()
    return result


def _package_line(line: str, packages: dict[str, str]) -> None:
    name, _, version = line.partition("|")
    packages[name.strip()] = version.strip()


class PackagePurge(FactBase["PackagePurgeDict | None"]):
    """
    The installed packages matching the ``patterns`` globs (minus ``exceptions``) and what
    ``apt-get purge`` of them would remove (apt's read-only simulation). None when none is
    installed.

    .. code:: python

        {
            "packages": {"libcuda1": "535.247.01-1~deb12u1", "nvidia-driver": "535.247..."},
            "purge": {"removes": ["libcuda1", "nvidia-driver", "nvidia-smi"], "errors": []},
        }
    """

    @override
    def command(
        self, patterns: tuple[str, ...] | list[str], exceptions: tuple[str, ...] | list[str] = ()
    ) -> str:
        return script_command(("apt-query", "package-purge"), (" ".join(exceptions), *patterns))

    @override
    def process(self, output: list[str]) -> PackagePurgeDict | None:
        packages: dict[str, str] = {}
        for line in output:
            if line.startswith("__package="):
                _package_line(line.removeprefix("__package="), packages)
        if not packages:
            return None
        return {"packages": packages, "purge": _purge(output)}


def _depends_names(field: str) -> set[str]:
    """Package names in a Depends field: ``a (>= 1), b:any | c`` -> {a, b, c}."""
    names = set()
    for clause in field.split(","):
        for alternative in clause.split("|"):
            word = alternative.strip().split(" ")[0].split("(")[0]
            if word:
                names.add(word.split(":")[0])
    return names


class DistroRocmPackages(FactBase["DistroRocmDict | None"]):
    """
    The distribution's own (not AMD's) installed ROCm packages matching ``patterns``:
    ``needed_by`` (installed packages depending on each), ``tools`` (AMD program names the
    distribution put in /usr/bin -> owner), ``conflicting`` (those owners and ``same_names``),
    and apt's simulated purge of the conflicting ones and of the rest. None when there are
    none.

    .. code:: python

        {
            "packages": {"libamdhip64-5": "5.7.1-3", "rocminfo": "5.7.1-3build1", ...},
            "needed_by": {"libamdhip64-5": ["libucx0"], "libhsa-runtime64-1": [...], ...},
            "tools": {"/usr/bin/rocminfo": "rocminfo"},
            "conflicting": ["rocminfo"],
            "purge_conflicting": {"removes": ["rocminfo"], "errors": []},
            "purge_kept": {"removes": ["libamdhip64-5", ..., "libucx0", "openmpi-bin"],
                           "errors": []},
        }
    """

    @override
    def command(
        self,
        patterns: tuple[str, ...] | list[str],
        same_names: tuple[str, ...] | list[str],
        tools: tuple[str, ...] | list[str],
    ) -> str:
        # A "name|version" line whose version is AMD's (the same rule as amd_release_tag).
        not_amd = r"^[^|]*\|" + AMD_CLASSIC_VERSION.removeprefix("^")
        args = (not_amd, " ".join(same_names), paths.DISTRO_BIN, " ".join(tools), *patterns)
        return script_command(("apt-query", "distro-rocm"), args)

    @override
    def process(self, output: list[str]) -> DistroRocmDict | None:
        packages: dict[str, str] = {}
        depends: dict[str, set[str]] = {}
        tools: dict[str, str] = {}
        conflicting: list[str] = []
        purges: dict[str, list[str]] = {}
        section: list[str] | None = None
        for line in output:
            key, _, value = line.strip().partition("=")
            if key == "__package":
                _package_line(value, packages)
            elif key == "__depends":
                name, _, field = value.partition("|")
                depends[name] = _depends_names(field)
            elif key == "__tool":
                path, _, owner = value.partition("|")
                tools[path] = owner
            elif key == "__conflicting":
                conflicting.append(value)
            elif key == "__purge":
                section = purges.setdefault(value, [])
            elif section is not None:
                section.append(line.strip())
        if not packages:
            return None
        needed_by = {
            name: sorted(other for other, names in depends.items() if name in names - {other})
            for name in sorted(packages)
        }
        return {
            "packages": packages,
            "needed_by": needed_by,
            "tools": tools,
            "conflicting": sorted(conflicting),
            "purge_conflicting": _purge(purges["conflicting"]) if "conflicting" in purges else None,
            "purge_kept": _purge(purges["kept"]) if "kept" in purges else None,
        }
