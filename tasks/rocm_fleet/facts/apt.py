"""apt and dpkg facts: installed packages, dpkg's health, keyrings, sources, sizes, candidates."""

import base64
import functools
import re

from pyinfra.api import FactBase

from rocm_fleet.facts._shell import MISSING, quote
from rocm_fleet.model import paths
from rocm_fleet.model.answers import InstallSize
from rocm_fleet.upstream.aptrepo import primary_fingerprints

_JOURNAL = "journal"
# What InstalledPackages, HeldPackages and DpkgInterrupted read: dpkg's journal unapplied, and
# every package's db:Status-Abbrev (want, status, error flag), name and version.
DPKG_LISTING = (
    "for f in /var/lib/dpkg/updates/* /var/lib/dpkg/updates/.[!.]*; do "
    f'if [ -e "$f" ]; then echo {_JOURNAL}; break; fi; done; '
    "dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Version}\\n' 2>/dev/null; true"
)
# dpkg's status letters and words; installed, config-files and not-installed are final.
_STATUS_WORDS = {"n": "not-installed", "c": "config-files", "H": "half-installed",
                 "U": "unpacked", "F": "half-configured", "W": "triggers-awaited",
                 "t": "triggers-pending", "i": "installed"}  # fmt: skip
_FINAL = "inc"


@functools.lru_cache(maxsize=4)  # the three facts of one listing parse it once
def _parsed(output: tuple[str, ...]) -> tuple[tuple[str, str, str, str, str], ...]:
    """(want, status, error flag, name, version) of each package of ``DPKG_LISTING``."""
    rows = [line.split("|") for line in output]
    return tuple(
        (*row[0].ljust(3)[:3], row[1].split(":")[0], row[2])
        for row in rows
        if len(row) == 3 and len(row[0]) >= 2
    )


class InstalledPackages(FactBase[dict[str, str]]):
    """Every package dpkg counts as installed (config-files only not), name -> version."""

    default = dict

    def command(self) -> str:
        return DPKG_LISTING

    def process(self, output: list[str]) -> dict[str, str]:
        return {
            name: version
            for _, status, _, name, version in _parsed(tuple(output))
            if status not in "nc"
        }


class HeldPackages(FactBase[list[str]]):
    """The packages on hold (``apt-mark hold``; a qualified one's counts for the name), sorted."""

    default = list

    def command(self) -> str:
        return DPKG_LISTING

    def process(self, output: list[str]) -> list[str]:
        return sorted({name for want, _, _, name, _ in _parsed(tuple(output)) if want == "h"})


class DpkgInterrupted(FactBase[list[str]]):
    """What an interrupted dpkg left: ``journal`` (unapplied updates), ``<state> <package>`` for
    each package not in a final state or reinst-required; empty when dpkg is clean."""

    command = DPKG_LISTING
    default = list

    def process(self, output: list[str]) -> list[str]:
        journal = [_JOURNAL] if _JOURNAL in (line.strip() for line in output) else []
        return journal + [
            f"{_STATUS_WORDS.get(status, status)} {name}"
            for _, status, error, name, _ in _parsed(tuple(output))
            if error != " " or status not in _FINAL
        ]


class KeyringFingerprints(FactBase[list[str] | None]):
    """Primary-key fingerprints in a keyring (binary or armored OpenPGP, as ``signed-by`` reads),
    parsed on the controller; None when the file is missing."""

    def command(self, path: str) -> str:
        q = quote(path)
        return f"if test -e {q}; then base64 < {q}; else echo {MISSING}; fi"

    def process(self, output: list[str]) -> list[str] | None:
        if MISSING in output:
            return None
        try:
            data = base64.b64decode("".join(line.strip() for line in output), validate=True)
        except ValueError:
            return []  # unreadable: holds no key we could trust
        return primary_fingerprints(data)


class AptSourceLines(FactBase[list[list[str]]]):
    """[file, line] of each active apt source line (one-line and deb822) naming one of ``hosts``."""

    default = list

    def command(self, hosts: list[str] | tuple[str, ...]) -> str:
        # grep -Hs -e HOST... as builtins (small files): "file:line" of each line naming one
        if not hosts:
            return "true"
        patterns = " | ".join(f"*{quote(h)}*" for h in hosts)
        parts = f"{quote(paths.APT_SOURCES_PARTS)}/*"
        return (
            f"for _f in {quote(paths.APT_SOURCES_LIST)} {parts}; do "
            'while IFS= read -r _line || [ -n "$_line" ]; do '
            f'case $_line in {patterns}) printf "%s:%s\\n" "$_f" "$_line" ;; esac; '
            'done 2>/dev/null <"$_f"; done; true'
        )

    def process(self, output: list[str]) -> list[list[str]]:
        pairs = [line.partition(":")[::2] for line in output]
        return [[path, body.strip()] for path, body in pairs if body.strip()[:1] not in ("", "#")]


class DebianMirror(FactBase[str | None]):
    """The Debian mirror (``http://deb.debian.org/debian``) the host's own apt sources use (the
    first ``/debian`` URI of debian.sources, else of sources.list); None when none."""

    def command(self) -> str:
        deb822, one_line = (quote(p) for p in paths.DEBIAN_SOURCES)
        # As builtins (small files), what these print:
        #   sed -n 's/^URIs:[[:space:]]*//p' DEB822
        #   sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]*\)\?\([^[:space:]]*\).*/\2/p' ONE_LINE
        loop = 'while IFS= read -r _l || [ -n "$_l" ]; do case $_l in'
        lstrip = '_l=${_l#"${_l%%[![:space:]]*}"}'
        return (
            f"! test -r {deb822} || {loop} URIs:*) _l=${{_l#URIs:}}; {lstrip}; "
            f'printf "%s\\n" "$_l" ;; esac; done 2>/dev/null <{deb822}; '
            f"! test -r {one_line} || {loop} deb[[:space:]]*) _l=${{_l#deb}}; {lstrip}; "
            f"case $_l in '['*']'*) _l=${{_l#*]}}; {lstrip} ;; esac; "
            f'printf "%s\\n" "${{_l%%[[:space:]]*}}" ;; esac; done 2>/dev/null <{one_line}'
        )

    def process(self, output: list[str]) -> str | None:
        uris = (uri.rstrip("/") for line in output for uri in line.split())
        return next(
            (u for u in uris if u.startswith(("http://", "https://")) and u.endswith("/debian")),
            None,
        )


# Sizes apt prints (apt-pkg's SizeToStr: powers of 1000).
_APT_UNITS = {"B": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_INSTALLED = "already installed from this release"


class AptInstallSize(FactBase[InstallSize]):
    """How many bytes apt says installing ``packages`` adds, asked read-only: ``need`` 0 when all
    are installed at a version matching ``version_regex`` (apt not asked), None when apt can't
    resolve them or said nothing readable."""

    @staticmethod
    def default() -> InstallSize:
        return InstallSize(need=None, message="")

    def command(
        self, packages: list[str] | tuple[str, ...], version_regex: str | None = None
    ) -> str:
        if not packages:
            return "true"
        names = " ".join(quote(p) for p in packages)
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


# apt-cache without writing its cache files (root's apt-cache would, when they are stale)
_APT_CACHE = "apt-cache -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache="


class CandidateVersions(FactBase[dict[str, str]]):
    """The version apt would install of each of ``packages`` (with ``version_regex``, the first of
    ``apt-cache madison`` matching it, as ``release-switch.sh`` picks; else the candidate); one
    apt has no version of is left out. Read for ``--diff`` only."""

    default = dict

    def command(
        self, packages: list[str] | tuple[str, ...], version_regex: str | None = None
    ) -> str:
        names = " ".join(quote(p) for p in packages)
        if version_regex:
            pick = (
                f"{_APT_CACHE} madison \"$p\" 2>/dev/null | awk -F'|' "
                f"-v re={quote(version_regex)} "
                "'{ gsub(/ /, \"\", $2) } $2 ~ re { print $2; exit }'"
            )
        else:
            pick = (
                f'{_APT_CACHE} policy "$p" 2>/dev/null'
                " | awk '$1 == \"Candidate:\" { print $2; exit }'"
            )
        return f'for p in {names}; do echo "$p $(LC_ALL=C {pick})"; done'

    def process(self, output: list[str]) -> dict[str, str]:
        found = {}
        for line in output:
            name, _, version = line.strip().partition(" ")
            if name and version and version != "(none)" and " " not in version:
                found[name] = version
        return found
