"""Wheels for a host's Python from a PEP 503 index, resolved without installing anything.

``rocm-fleet bundle`` must carry torch, torchvision, torchaudio and everything they require
for each Python the fleet runs, from the index the hosts' pip uses. The resolution is pip's:
its resolver (resolvelib, backtracking), choosing the newest of the wheels whose tags the
target Python accepts (``cpXY``, ``abi3``, ``py3``; manylinux up to the host's glibc,
PEP 600) and whose ``Requires-Python`` admits it, with ``Requires-Dist`` evaluated for
Linux x86-64 and that Python (the part pip gets wrong for another Python). Wheels only, but
for the distributions the recorded upstream facts say are published as sdists only
(``matrix.SDIST_ONLY``: AMD's ``rocm`` meta package, "intended to be built implicitly on a
target machine"), and then only for a version the index publishes no wheel of: building an
sdist runs its code as root on every host, so no other distribution may slip in as one. Its
requirements are read from its ``PKG-INFO``, and its build requirements (``[build-system]
requires`` of its ``pyproject.toml``) are resolved too, as wheels, so the host installs them
hash-checked first and builds the sdist without build isolation (which would fetch them
unchecked); one whose pyproject.toml names a ``backend-path`` (a build backend inside the
sdist itself, PEP 517) is refused. Every link must carry the ``#sha256=`` the index
publishes, which the download is checked against.

The bundle then asks pip itself to resolve the same requirements against the pages it
wrote (``pip install --dry-run --report``) for the Python it runs on, so what a host's pip
picks is proven to be in the bundle; for other Pythons pip can't be asked (it evaluates
markers with its own interpreter), and this resolution is what decides.
"""

from __future__ import annotations

import email.parser
import re
import tarfile
import tomllib
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import urldefrag, urljoin

from mousebender.simple import from_project_details_html
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version
from resolvelib import AbstractProvider, BaseReporter, Resolver
from resolvelib.resolvers import RequirementInformation, ResolutionImpossible, ResolutionTooDeep

from rocm_fleet.model.matrix import SDIST_ONLY, HostRuntime
from rocm_fleet.model.versions import release_key


class ResolutionError(Exception):
    """Requirements the index can't meet for a Python; names the requirement."""


# --- the lock lines a host's pip installs from -----------------------------------------------
# Pip's own requirement-file syntax: ``name==version --hash=sha256:...`` per file the set
# installs; a build requirement of an sdist has a line of its own ending in the comment
# BUILD_MARK (pip ignores it; the host installs those first, where the build finds them:
# operations.python.pinned_wheels), beside its plain line when the set needs it too;
# NO_BINARY names the distributions pinned to an sdist (pip's FormatControl: a name in
# --no-binary beats ``:all:`` in --only-binary).
BUILD_MARK = "# build requirement"
NO_BINARY = "--no-binary="


@dataclass(frozen=True)
class Locked:
    """One pinned file, as a lock or a bundle records it."""

    name: str
    version: str
    sha256: str
    sdist: bool = False
    build: bool = False  # the build of an sdist of the set needs it
    runtime: bool = True  # the set needs it installed


def lock_lines(pins: list[Locked]) -> list[str]:
    """The lines for ``pins``, sorted by name: the set's, then the build requirements',
    then the NO_BINARY line when an sdist is pinned."""
    ordered = sorted(pins, key=lambda p: p.name)
    line = "{0.name}=={0.version} --hash=sha256:{0.sha256}".format
    lines = [line(p) for p in ordered if p.runtime]
    lines += [f"{line(p)} {BUILD_MARK}" for p in ordered if p.build]
    sdists = [p.name for p in ordered if p.sdist]
    if sdists:
        lines.append(NO_BINARY + ",".join(sdists))
    return lines


def is_sdist(filename: str) -> bool:
    """Whether a file of an index is a source distribution (PEP 625: ``.tar.gz``)."""
    try:
        parse_sdist_filename(filename)
    except InvalidSdistFilename:
        return False
    return True


# --- the simple index ------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    url: str  # absolute, without the fragment
    filename: str
    sha256: str | None
    requires_python: str | None
    metadata_sha256: str | None  # PEP 658/714: the .metadata file's hash, when published


def parse_page(text: str, page_url: str) -> list[Link]:
    """The file links of a PEP 503 project page, hrefs resolved against ``page_url``, yanked
    files left out. mousebender reads the page (PEP 503 and 592/658/714 attributes, as the
    PEP 691 JSON form's fields)."""
    links = []
    for file in from_project_details_html(text, "")["files"]:
        if file.get("yanked"):
            continue
        metadata = file.get("core-metadata", file.get("dist-info-metadata"))
        metadata_hashes = metadata if isinstance(metadata, dict) else {}  # or True: no hash
        links.append(
            Link(
                url=urldefrag(urljoin(page_url, file["url"]))[0],
                filename=file["filename"],
                sha256=_lower(file["hashes"].get("sha256")),
                requires_python=file.get("requires-python"),
                metadata_sha256=_lower(metadata_hashes.get("sha256")),
            )
        )
    return links


def _lower(digest: str | None) -> str | None:
    return digest.lower() if digest else None


def untrusted_index(index_url: str) -> str | None:
    """Why the hashes on ``index_url``'s pages can't pin anything (it isn't https: anyone on
    the way could answer them), with the ways out; None when they can."""
    if index_url.lower().startswith("https://"):
        return None
    return (
        f"{index_url} is not https, and the hashes that pin every host's wheels are read only "
        "over verified TLS; set pytorch_index_base_url to an https:// index (a TLS mirror of "
        "it), or serve the wheels from a bundle on the fleet mirror (`rocm-fleet bundle`, made "
        "where the index is reachable over TLS)"
    )


def project_url(index_url: str, name: str) -> str:
    return f"{index_url.rstrip('/')}/{canonicalize_name(name)}/"


# --- the target ------------------------------------------------------------------------------


def manylinux_platforms(glibc: str) -> list[str]:
    """Platform tags a Linux x86-64 host with ``glibc`` accepts, most specific first
    (PEP 600 manylinux_2_X for every X up to the host's, the legacy aliases, linux)."""
    major, minor = release_key(glibc)[:2]
    platforms = [f"manylinux_{major}_{m}_x86_64" for m in range(minor, 4, -1)]
    legacy = {17: "manylinux2014_x86_64", 12: "manylinux2010_x86_64", 5: "manylinux1_x86_64"}
    platforms += [alias for m, alias in legacy.items() if m <= minor]
    return [*platforms, "linux_x86_64"]


def interpreter_tag(python: str) -> str:
    """CPython's interpreter and ABI tag for a Python version: "3.12" -> "cp312"."""
    major, minor = release_key(python)[:2]
    return f"cp{major}{minor}"


class Target:
    """A host's Python as pip sees it: the tags it accepts (best first) and the values of
    environment markers."""

    def __init__(self, runtime: HostRuntime):
        self.runtime = runtime
        version = release_key(runtime.python)
        platforms = manylinux_platforms(runtime.glibc)
        interpreter = interpreter_tag(runtime.python)
        self.tags: list[Tag] = [
            *cpython_tags(version, platforms=platforms),
            *compatible_tags(version, interpreter, platforms=platforms),
        ]
        self._rank = {tag: i for i, tag in reversed(list(enumerate(self.tags)))}
        self.markers = {
            "python_version": runtime.python,
            "python_full_version": f"{runtime.python}.0",
            "implementation_name": "cpython",
            "implementation_version": f"{runtime.python}.0",
            "platform_python_implementation": "CPython",
            "os_name": "posix",
            "sys_platform": "linux",
            "platform_system": "Linux",
            "platform_machine": "x86_64",
            "platform_release": "",
            "platform_version": "",
        }

    def describe(self) -> str:
        return f"Python {self.runtime.python} (glibc {self.runtime.glibc})"

    def rank(self, filename: str) -> int | None:
        """How much this Python prefers a wheel (lower is better); None: it can't use it."""
        try:
            _name, _version, _build, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            return None
        ranks = [self._rank[tag] for tag in tags if tag in self._rank]
        return min(ranks) if ranks else None

    def admits(self, requires_python: str | None) -> bool:
        if not requires_python:
            return True
        try:
            return SpecifierSet(requires_python).contains(
                f"{self.runtime.python}.0", prereleases=True
            )
        except InvalidSpecifier:
            return True  # as pip does: an unreadable Requires-Python doesn't exclude

    def wanted(self, requirement: Requirement, extras: set[str]) -> bool:
        """Whether a ``Requires-Dist`` applies to this Python (and the extras asked for)."""
        if requirement.marker is None:
            return True
        return any(
            requirement.marker.evaluate({**self.markers, "extra": extra})
            for extra in ["", *sorted(extras)]
        )


# --- resolution ------------------------------------------------------------------------------
# resolvelib (pip's own resolver, maintained by the PyPA) does the search, with backtracking;
# this provider answers its questions for the target Python: which wheels of a project it can
# use, newest first, and what a wheel requires there. Extras are pip's way: ``rocm[libraries]``
# is a candidate of its own that requires ``rocm`` at the same version and what the extra adds.
# Not pip itself: its ``--python-version`` evaluates Requires-Dist markers with the Python
# that runs it (pypa/pip#13296; measured with pip 26.3 on 3.11: ``--python-version 3.10`` and
# ``3.12`` both drop ``x; python_version < "3.11"`` and ``y; python_version >= "3.12"``), and
# it would fetch the index itself, outside the bundle's verified, limited downloads.


@dataclass(frozen=True)
class Candidate:
    name: str  # canonical
    version: Version
    link: Link
    extras: frozenset[str] = frozenset()


@dataclass
class Pin:
    candidate: Candidate
    why: list[str]
    build: bool = False  # a build requirement of an sdist pinned beside it
    runtime: bool = True  # what the roots need (False: only to build an sdist)

    @property
    def sdist(self) -> bool:
        return is_sdist(self.candidate.link.filename)


def _key(name: str, extras: frozenset[str] | set[str]) -> str:
    """resolvelib's identifier: the canonical name, with the extras asked for."""
    return f"{name}[{','.join(sorted(extras))}]" if extras else name


class _Provider(AbstractProvider):
    def __init__(
        self,
        page: Callable[[str], list[Link]],
        metadata: Callable[[Link], str],
        target: Target,
        where: str,
        sdists: frozenset[str] = frozenset(),
    ):
        self.page, self.metadata, self.target, self.where = page, metadata, target, where
        # The distributions a version without a wheel may come from its sdist of.
        self.sdists = sdists

    def identify(self, requirement_or_candidate: Requirement | Candidate) -> str:
        if isinstance(requirement_or_candidate, Candidate):
            return _key(requirement_or_candidate.name, requirement_or_candidate.extras)
        requirement = requirement_or_candidate
        return _key(canonicalize_name(requirement.name), set(requirement.extras))

    def get_preference(self, identifier, resolutions, candidates, information, backtrack_causes):
        """Exact pins first (torch==2.9.1+rocm6.4 leaves nothing to search), then by name
        for a stable order."""
        pinned = any(
            spec.operator in ("==", "===")
            for info in information[identifier]
            for spec in info.requirement.specifier
        )
        return (not pinned, identifier)

    def find_matches(self, identifier, requirements, incompatibilities) -> list[Candidate]:
        wanted = list(requirements[identifier])
        name = canonicalize_name(wanted[0].name)
        extras = frozenset(extra for r in wanted for extra in r.extras)
        excluded = {c.version for c in incompatibilities[identifier]}
        best: dict[Version, tuple[int, Link]] = {}
        links = self.page(name)
        # An sdist only for a version published as nothing else (TheRock's ``rocm``): a
        # version with wheels for other Pythons or platforms is not built on the host.
        wheeled = {v for v in map(_wheel_version, links) if v is not None}
        for link in links:
            try:
                project, version, _build, _tags = parse_wheel_filename(link.filename)
                rank = self.target.rank(link.filename)
            except InvalidWheelFilename:
                if name not in self.sdists or not is_sdist(link.filename):
                    continue
                project, version = parse_sdist_filename(link.filename)
                if version in wheeled:
                    continue
                rank = len(self.target.tags)
            if rank is None or canonicalize_name(project) != name or version in excluded:
                continue
            if not self.target.admits(link.requires_python):
                continue
            if not all(r.specifier.contains(version, prereleases=None) for r in wanted):
                continue
            if version not in best or rank < best[version][0]:
                best[version] = (rank, link)
        return [
            Candidate(name, version, best[version][1], extras)
            for version in sorted(best, reverse=True)
        ]

    def is_satisfied_by(self, requirement: Requirement, candidate: Candidate) -> bool:
        return requirement.specifier.contains(candidate.version, prereleases=True)

    def get_dependencies(self, candidate: Candidate) -> list[Requirement]:
        if candidate.extras:  # the project itself at this version, plus what the extras add
            dependencies = [Requirement(f"{candidate.name}=={candidate.version}")]
        else:
            dependencies = []
        for text in _requires(self.metadata(candidate.link)):
            requirement = _requirement(text, f"required by {candidate.name}", self.where)
            plain = self.target.wanted(requirement, set())
            if candidate.extras:  # only what the extras add
                if not plain and self.target.wanted(requirement, set(candidate.extras)):
                    dependencies.append(requirement)
            elif plain:
                dependencies.append(requirement)
        return dependencies


def _wheel_version(link: Link) -> Version | None:
    try:
        return parse_wheel_filename(link.filename)[1]
    except InvalidWheelFilename:
        return None


def _requirement(text: str, why: str, where: str) -> Requirement:
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        raise ResolutionError(f"unreadable requirement {text!r} ({why})") from exc
    if requirement.url:
        raise ResolutionError(f"{text} ({why}): a direct URL, not from {where}")
    return requirement


def _why(info: RequirementInformation) -> str:
    parent = info.parent
    return "wanted" if parent is None else f"required by {parent.name} {parent.version}"


def resolve(
    roots: list[str],
    page: Callable[[str], list[Link]],
    metadata: Callable[[Link], str],
    target: Target,
    where: str,
    build_requires: Callable[[Link], list[str]] | None = None,
    sdist_only: frozenset[str] = SDIST_ONLY,
) -> dict[str, Pin]:
    """Pins (canonical name -> wheel and why) meeting ``roots`` and everything they require
    for ``target``. ``page(name)`` gives a project's links, ``metadata(link)`` a wheel's
    core metadata (an sdist's PKG-INFO; verified by the caller). With ``build_requires``
    (an sdist's ``[build-system] requires``), a version of one of ``sdist_only`` published
    only as an sdist may be pinned, and its build requirements are pinned beside it
    (``Pin.build``), as wheels. Raises ResolutionError naming what can't be met."""
    pins = _resolve(
        roots, page, metadata, target, where, sdist_only if build_requires else frozenset()
    )
    sdists = [pin for pin in pins.values() if pin.sdist]
    if not sdists or build_requires is None:
        return pins
    needed: dict[str, list[str]] = {}
    for pin in sdists:
        for text in build_requires(pin.candidate.link):
            needed.setdefault(text, []).append(pin.candidate.name)
    if not needed:
        return pins
    build = _resolve(list(needed), page, metadata, target, where, frozenset())
    for name, pin in build.items():
        why = sorted({f"builds {n}" for t, ns in needed.items() for n in ns})
        runtime = pins.get(name)
        if runtime is not None and runtime.candidate.version != pin.candidate.version:
            raise ResolutionError(
                f"{name}: {runtime.candidate.version} is required, {pin.candidate.version} "
                f"to build {', '.join(p.candidate.name for p in sdists)} on {where}"
            )
        if runtime is not None:
            runtime.build, runtime.why = True, sorted({*runtime.why, *why})
        else:
            pins[name] = Pin(pin.candidate, why, build=True, runtime=False)
    return pins


def _resolve(
    roots: list[str],
    page: Callable[[str], list[Link]],
    metadata: Callable[[Link], str],
    target: Target,
    where: str,
    sdists: frozenset[str],
) -> dict[str, Pin]:
    provider = _Provider(page, metadata, target, where, sdists)
    requirements = [_requirement(root, "wanted", where) for root in roots]
    try:
        result = Resolver(provider, BaseReporter()).resolve(requirements, max_rounds=2000)
    except ResolutionImpossible as exc:
        causes: dict[str, tuple[list[str], set[str]]] = {}
        for info in exc.causes:
            name = canonicalize_name(info.requirement.name)
            specs, reasons = causes.setdefault(name, ([], set()))
            specs.append(str(info.requirement.specifier) or "any version")
            reasons.add(_why(info))
        raise ResolutionError(
            "; ".join(
                f"no wheel of {name} ({' and '.join(specs)}; {', '.join(sorted(reasons))}) for "
                f"{target.describe()} on {where}"
                for name, (specs, reasons) in causes.items()
            )
        ) from None
    except ResolutionTooDeep:
        raise ResolutionError(
            f"the requirements of {', '.join(roots)} on {where} do not settle"
        ) from None
    pins: dict[str, Pin] = {}
    for identifier, candidate in result.mapping.items():
        pin = pins.setdefault(candidate.name, Pin(replace(candidate, extras=frozenset()), []))
        for info in result.criteria[identifier].information:
            if info.parent is None or info.parent.name != candidate.name:  # not rocm[x] -> rocm
                pin.why = sorted({*pin.why, _why(info)})
    return pins


def _requires(metadata_text: str) -> list[str]:
    message = email.parser.Parser().parsestr(metadata_text, headersonly=True)
    return [value.strip() for value in message.get_all("Requires-Dist") or []]


#: The most of an sdist's PKG-INFO or pyproject.toml read (both are a few kilobytes).
_SDIST_MEMBER_LIMIT = 1 << 20


def _sdist_member(path: str, member: str) -> str:
    """One top-level file of an sdist (``<name>-<version>/<member>``, the layout of the
    sdist specification), read without extracting anything."""
    try:
        with tarfile.open(path, "r:gz") as archive:
            top = {name.split("/", 1)[0] for name in archive.getnames()}
            if len(top) != 1:
                raise ResolutionError(f"{path}: not one top-level directory in the sdist")
            try:
                info = archive.getmember(f"{top.pop()}/{member}")
            except KeyError:
                raise ResolutionError(f"{path}: no {member} in the sdist") from None
            if not info.isfile() or info.size > _SDIST_MEMBER_LIMIT:
                raise ResolutionError(f"{path}: its {member} is not a file of at most 1 MiB")
            handle = archive.extractfile(info)
            assert handle is not None
            return handle.read().decode("utf-8")
    except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as exc:
        raise ResolutionError(f"{path}: not a readable sdist ({type(exc).__name__})") from None


def sdist_metadata(path: str) -> str:
    """An sdist's core metadata (``PKG-INFO``). Its requirements must be static (core
    metadata 2.2, PEP 643: ``Requires-Dist`` not listed as ``Dynamic``): one known only after
    a build on the host could not be locked."""
    text = _sdist_member(path, "PKG-INFO")
    message = email.parser.Parser().parsestr(text, headersonly=True)
    dynamic = {value.strip().lower() for value in message.get_all("Dynamic") or []}
    if "requires-dist" in dynamic:
        raise ResolutionError(f"{path}: its Requires-Dist is dynamic (known only once built)")
    return text


def sdist_build_requires(path: str) -> list[str]:
    """An sdist's build requirements: ``[build-system] requires`` of its pyproject.toml
    (PEP 518); none declared means setuptools, as pip assumes. Refused when its
    ``backend-path`` puts the build backend inside the sdist (PEP 517): the backend would be
    code no pinned wheel carries, run as root by every host's pip."""
    try:
        text = _sdist_member(path, "pyproject.toml")
    except ResolutionError:
        return ["setuptools>=40.8.0"]  # pip's default for a project without pyproject.toml
    try:
        build_system = tomllib.loads(text).get("build-system", {})
    except tomllib.TOMLDecodeError as exc:
        raise ResolutionError(f"{path}: unreadable pyproject.toml ({exc})") from None
    if not isinstance(build_system, dict):
        raise ResolutionError(f"{path}: [build-system] of its pyproject.toml is not a table")
    if "backend-path" in build_system:
        raise ResolutionError(
            f"{path}: its pyproject.toml names a backend-path {build_system['backend-path']!r} "
            "(a build backend inside the sdist, run as root on every host); refused"
        )
    requires = build_system.get("requires")
    if requires is None:
        return ["setuptools>=40.8.0"]
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise ResolutionError(f"{path}: [build-system] requires is not a list of strings")
    return requires


def dist_metadata(path: str) -> str:
    """The core metadata of a wheel or an sdist file."""
    return sdist_metadata(path) if is_sdist(path.rsplit("/", 1)[-1]) else wheel_metadata(path)


def wheel_metadata(path: str) -> str:
    """The core metadata (``*.dist-info/METADATA``) of a wheel file."""
    with zipfile.ZipFile(path) as wheel:
        names = [n for n in wheel.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
        if len(names) != 1:
            raise ResolutionError(f"{path}: not one .dist-info/METADATA in the wheel")
        return wheel.read(names[0]).decode("utf-8")
