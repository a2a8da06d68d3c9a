"""Wheels for a host's Python from a PEP 503 index, resolved without installing anything: the
wheel tags that Python accepts, best first, and its markers (as pip sees them)."""

import email.parser
import functools
import hashlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path

from packaging import utils
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.version import Version
from resolvelib import AbstractProvider, BaseReporter, Resolver
from resolvelib.resolvers import RequirementInformation, ResolutionImpossible, ResolutionTooDeep

from rocm_fleet.model.matrix import HostRuntime
from rocm_fleet.model.torch_builds import SDIST_ONLY
from rocm_fleet.model.versions import release_key
from rocm_fleet.upstream.http import DownloadError
from rocm_fleet.upstream.wheels import (
    Link,
    ResolutionError,
    dist_metadata,
    is_sdist,
    parse_page,
    project_url,
    sdist_build_requires,
)


def manylinux_platforms(glibc: str) -> list[str]:
    """Platform tags a Linux x86-64 host with ``glibc`` accepts, most specific first."""
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
    """A host's Python as pip sees it: the tags it accepts and its environment markers."""

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
        full = f"{runtime.python}.0"
        self.markers = {
            "python_version": runtime.python, "python_full_version": full,
            "implementation_name": "cpython", "implementation_version": full,
            "platform_python_implementation": "CPython", "os_name": "posix",
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "platform_release": "", "platform_version": "",
        }  # fmt: skip

    def describe(self) -> str:
        return f"Python {self.runtime.python} (glibc {self.runtime.glibc})"

    def rank(self, filename: str) -> int | None:
        """How much this Python prefers a wheel (lower is better); None: it can't use it."""
        try:
            _name, _version, _build, tags = utils.parse_wheel_filename(filename)
        except utils.InvalidWheelFilename:
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


# resolvelib, not pip: pip evaluates markers with its own Python (pypa/pip#13296).


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
    return f"{name}[{','.join(sorted(extras))}]" if extras else name


class _Provider(AbstractProvider):
    def __init__(self, page: Callable[[str], list[Link]], metadata: Callable[[Link], str],
                 target: Target, where: str, sdists: frozenset[str] = frozenset()):  # fmt: skip
        self.page, self.metadata, self.target, self.where = page, metadata, target, where
        self.sdists = sdists  # whose version without a wheel may come from its sdist

    def identify(self, requirement_or_candidate: Requirement | Candidate) -> str:
        if isinstance(requirement_or_candidate, Candidate):
            return _key(requirement_or_candidate.name, requirement_or_candidate.extras)
        requirement = requirement_or_candidate
        return _key(utils.canonicalize_name(requirement.name), set(requirement.extras))

    def get_preference(self, identifier, resolutions, candidates, information, backtrack_causes):
        """Exact pins first, then by name."""
        pinned = any(
            spec.operator in ("==", "===")
            for info in information[identifier]
            for spec in info.requirement.specifier
        )
        return (not pinned, identifier)

    def find_matches(self, identifier, requirements, incompatibilities) -> list[Candidate]:
        wanted = list(requirements[identifier])
        name = utils.canonicalize_name(wanted[0].name)
        extras = frozenset(extra for r in wanted for extra in r.extras)
        excluded = {c.version for c in incompatibilities[identifier]}
        best: dict[Version, tuple[int, Link]] = {}
        links = self.page(name)
        # An sdist only for a version published as nothing else.
        wheeled = {v for v in map(_wheel_version, links) if v is not None}
        for link in links:
            try:
                project, version, _build, _tags = utils.parse_wheel_filename(link.filename)
                rank = self.target.rank(link.filename)
            except utils.InvalidWheelFilename:
                if name not in self.sdists or not is_sdist(link.filename):
                    continue
                project, version = utils.parse_sdist_filename(link.filename)
                if version in wheeled:
                    continue
                rank = len(self.target.tags)
            if rank is None or utils.canonicalize_name(project) != name or version in excluded:
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
        dependencies = []
        if candidate.extras:  # the project itself at this version, plus what the extras add
            dependencies.append(Requirement(f"{candidate.name}=={candidate.version}"))
        metadata = email.parser.Parser().parsestr(self.metadata(candidate.link), headersonly=True)
        for text in metadata.get_all("Requires-Dist") or []:
            requirement = _requirement(text.strip(), f"required by {candidate.name}", self.where)
            plain = self.target.wanted(requirement, set())
            if candidate.extras:  # only what the extras add
                if not plain and self.target.wanted(requirement, set(candidate.extras)):
                    dependencies.append(requirement)
            elif plain:
                dependencies.append(requirement)
        return dependencies


def _wheel_version(link: Link) -> Version | None:
    try:
        return utils.parse_wheel_filename(link.filename)[1]
    except utils.InvalidWheelFilename:
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


def resolve(roots: list[str], page: Callable[[str], list[Link]],
            metadata: Callable[[Link], str], target: Target, where: str,
            build_requires: Callable[[Link], list[str]] | None = None,
            sdist_only: frozenset[str] = SDIST_ONLY) -> dict[str, Pin]:  # fmt: skip
    """Pins (canonical name -> Pin) meeting ``roots`` for ``target``; with ``build_requires``, a
    ``sdist_only`` sdist and its build requirements. ResolutionError names what can't be met."""
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


def _resolve(roots: list[str], page: Callable[[str], list[Link]],
             metadata: Callable[[Link], str], target: Target, where: str,
             sdists: frozenset[str]) -> dict[str, Pin]:  # fmt: skip
    provider = _Provider(page, metadata, target, where, sdists)
    requirements = [_requirement(root, "wanted", where) for root in roots]
    try:
        result = Resolver(provider, BaseReporter()).resolve(requirements, max_rounds=2000)
    except ResolutionImpossible as exc:
        causes: dict[str, tuple[list[str], set[str]]] = {}
        for info in exc.causes:
            name = utils.canonicalize_name(info.requirement.name)
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


def index_reads(
    index_url: str,
    content: Callable[[str], bytes],
    fetched: Callable[[Link], Path],
    parsing: Callable[[str, str], AbstractContextManager[None]],
    keep: bool = True,
) -> tuple[Callable[[str], list[Link]], Callable[[Link], str], Callable[[Link], list[str]]]:
    """``resolve``'s reads of ``index_url``, each made once: project pages (a missing one's
    empty), core metadata (the PEP 658 copy if its hash matches, else the file's: ``fetched``,
    removed unless ``keep`` or an sdist), sdists' build requirements; ``parsing(url, kind)``
    names what is malformed."""

    @functools.cache
    def page(name: str) -> list[Link]:
        url = project_url(index_url, name)
        try:
            data = content(url)
        except DownloadError as exc:
            if "HTTP 404" in str(exc):  # no such project: the resolution says which
                return []
            raise
        with parsing(url, "PEP 503 page"):
            return parse_page(data.decode("utf-8"), url)

    @functools.cache
    def metadata(link: Link) -> str:
        if link.metadata_sha256:
            data = content(link.url + ".metadata")
            if hashlib.sha256(data).hexdigest() == link.metadata_sha256:
                with parsing(link.url + ".metadata", "core metadata file"):
                    return data.decode("utf-8")
        path = fetched(link)
        try:
            with parsing(link.url, "wheel"):
                return dist_metadata(str(path))
        finally:
            if not keep and not is_sdist(link.filename):  # an sdist's build requires come next
                path.unlink(missing_ok=True)

    @functools.cache
    def build_requires(link: Link) -> list[str]:
        return sdist_build_requires(str(fetched(link)))

    return page, metadata, build_requires
