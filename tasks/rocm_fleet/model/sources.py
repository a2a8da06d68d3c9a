"""What a host fetches from upstream (apt sources, wheel sets) and how: direct, through the
fleet mirror (``served``: ``http://mirror:8080/<host>/<path>``) or the proxy."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from rocm_fleet.assets import render
from rocm_fleet.model import container_toolkit, decisions, matrix, paths

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


@dataclass(frozen=True)
class SigningKey:
    """An armored OpenPGP key at ``url``, used only if its primary key has ``fingerprint``."""

    url: str
    fingerprint: str


@dataclass(frozen=True)
class AptRepository:
    """One apt source signed by ``key`` (kept in ``keyring``), written to host file ``source``
    as one ``deb`` line or a deb822 stanza."""

    url: str
    suite: str
    key: SigningKey
    keyring: str = paths.ROCM_KEYRING
    component: str = "main"
    architecture: str = "amd64"
    source: str = paths.ROCM_SOURCE
    deb822: bool = False
    x_repo_id: str | None = None  # AMD's X-Repo-Id line of a deb822 file

    def source_text(self) -> str:
        line = {"suite": self.suite, "component": self.component, "keyring": self.keyring}
        line["architecture"] = self.architecture
        if not self.deb822:
            return render("apt-source.list.j2", url=self.url, **line)
        uri, repo_id = f"{self.url}/", self.x_repo_id
        return render("apt-source.sources.j2", x_repo_id=repo_id, uri=uri, enabled=True, **line)

    @property
    def dists_url(self) -> str:
        return f"{self.url}/dists/{self.suite}"

    @property
    def packages_index(self) -> str:
        """The package index's path under ``dists_url``, as InRelease lists it."""
        return f"{self.component}/binary-{self.architecture}/Packages"

    def describe(self) -> str:
        return f"{self.url} {self.suite} {self.component}"

    def via(self, mirror: decisions.Mirror | None) -> AptRepository:
        """This repository as hosts of ``mirror`` reach it (the key fetched from it too)."""
        if mirror is None:
            return self
        key = SigningKey(served(self.key.url, mirror), self.key.fingerprint)
        return replace(self, url=served(self.url, mirror), key=key)


class UnsafePath(ValueError):
    """A URL whose place under a mirror or bundle would escape it; the message names it."""


# host name or IP literal [:port]; no credentials or separators.
_NETLOC = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?"
)
_BAD_SEGMENT_CHARACTER = re.compile(r"[\x00-\x1f\x7f\\]")


def mirror_path(url: str) -> str:
    """``host/decoded-path`` of an upstream URL under a mirror or bundle; UnsafePath unless it
    provably stays below the host's directory."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        shown = parts._replace(netloc="…@" + parts.netloc.rsplit("@", 1)[1]).geturl()
        raise UnsafePath(f"{shown}: credentials in a URL are refused (they would name a file)")
    if parts.scheme not in ("http", "https"):
        raise UnsafePath(f"{url}: not an http(s) URL")
    if not _NETLOC.fullmatch(parts.netloc) or ".." in parts.netloc:
        raise UnsafePath(f"{url}: {parts.netloc!r} is not a host name[:port]")
    path = unquote(parts.path) or "/"
    segments = path.split("/")
    if segments[0] != "":
        raise UnsafePath(f"{url}: the path is not absolute")
    for position, segment in enumerate(segments[1:], start=1):
        last = position == len(segments) - 1
        if segment in (".", "..") or (not segment and not last):
            raise UnsafePath(f"{url}: the path {path!r} leaves its place (segment {segment!r})")
        if _BAD_SEGMENT_CHARACTER.search(segment):
            raise UnsafePath(f"{url}: the path {path!r} holds a control character or backslash")
    return f"{parts.netloc}{path}"


def served(url: str, mirror: decisions.Mirror | None) -> str:
    """``url`` as hosts of ``mirror`` fetch it (itself without a mirror)."""
    if mirror is None:
        return url
    parts = urlsplit(url)
    return f"{mirror.url.rstrip('/')}/{parts.netloc}{parts.path}"


def mirror_ca(config: Config) -> str | None:
    """The host's pinned CA file for the fleet mirror; None without a TLS mirror CA."""
    mirror = config.mirror
    return paths.MIRROR_CA if mirror is not None and mirror.tls and mirror.ca else None


def no_proxy(config: Config) -> list[str]:
    """The hosts reached directly: ``rocm_no_proxy`` and the fleet mirror."""
    names, mirror = list(config.rocm_no_proxy), config.mirror.hostname if config.mirror else ""
    return [*names, mirror] if mirror and mirror not in names else names


def proxy_environment(config: Config) -> dict[str, str]:
    """The variables curl and pip (requests) take their proxy from; empty without one."""
    if not config.rocm_proxy:
        return {}
    variables = {"http_proxy": config.rocm_proxy, "https_proxy": config.rocm_proxy}
    return variables | ({"no_proxy": ",".join(names)} if (names := no_proxy(config)) else {})


@dataclass(frozen=True)
class AptNeed:
    """Packages a host installs from one repository (their dependencies come along)."""

    repository: AptRepository
    packages: tuple[str, ...]


@dataclass(frozen=True)
class WheelNeed:
    """Wheels a venv installs from one PEP 503 index for the host's Python (``runtime``; None:
    resolved on the host)."""

    index_url: str
    runtime: matrix.HostRuntime | None
    wanted: tuple[tuple[str, str], ...]  # (distribution, exact version), sorted
    requires: tuple[str, ...] = ()
    extras: tuple[tuple[str, tuple[str, ...]], ...] = ()  # AMD's [device-<gfx>] per wheel

    def requirements(self) -> list[str]:
        return decisions.pinned_requirements(self.wanted, self.extras, self.requires)

    def unmet_in(self, distributions: Mapping[str, str] | None) -> bool:
        """Whether a venv holding ``distributions`` (None: no venv) lacks a pin or requirement."""
        have = decisions.normal_versions(distributions)
        pins = all(decisions.version_matches(have.get(n), v) for n, v in self.wanted)
        return not (pins and all(decisions.requirement_met(have, r) for r in self.requires))


@dataclass(frozen=True)
class HostNeeds:
    apt: tuple[AptNeed, ...] = ()
    wheels: tuple[WheelNeed, ...] = ()


def rocm_key(config: Config) -> SigningKey:
    """The release stream's key (``rocm_key_url`` / ``rocm_key_fingerprint`` override it)."""
    return SigningKey(config.key_url, config.key_fingerprint)


def rocm_repository(config: Config, row: matrix.Distro) -> AptRepository:
    """AMD's ROCm source for the release and distro; ValueError when it publishes nothing."""
    rel, repository = config.release, config.repository
    publication = rel.publication(row)
    if publication is None:
        raise ValueError(f"ROCm {rel.version} publishes nothing for {row.key}")
    return AptRepository(
        rel.stream.repository_url(config.apt_base_url, rel, publication),
        publication.suite,
        rocm_key(config),
        keyring=rel.stream.keyring,
        source=repository.source,
        deb822=repository.deb822,
        x_repo_id=repository.x_repo_id,
    )


def driver_key(config: Config) -> SigningKey:
    """The amdgpu repository's key: the classic stream's, or ``rocm_amdgpu_key_*``."""
    classic = config.stream.keyring == matrix.AMDGPU_KEYRING
    return rocm_key(config) if classic else _amdgpu_key(config)


def _amdgpu_key(config: Config) -> SigningKey:
    return SigningKey(config.rocm_amdgpu_key_url, config.rocm_amdgpu_key_fingerprint.upper())


def amdgpu_repository(config: Config, row: matrix.Distro) -> AptRepository | None:
    """AMD's driver source ``amdgpu/<version>/ubuntu``; None when the driver is unknown."""
    version = matrix.amdgpu_repo_version(config.release)
    if version is None:
        return None
    url = f"{config.rocm_amdgpu_apt_base_url.rstrip('/')}/{version}/ubuntu"
    key, keyring = driver_key(config), matrix.AMDGPU_KEYRING
    return AptRepository(url, row.suite, key, keyring=keyring, source=paths.AMDGPU_SOURCE)


def torch_wheels(config: Config, runtime: matrix.HostRuntime | None = None) -> WheelNeed | None:
    """The host's torch wheels (``config.torch``) for the host's Python; None without."""
    if (torch := config.torch) is None:
        return None
    return WheelNeed(torch.index_url, runtime, torch.wanted, torch.requires, torch.extras)


@dataclass(frozen=True)
class TorchPip:
    """How a host's pip installs its torch wheels (``NETRC``: no secret in a command)."""

    wheels: WheelNeed
    index_url: str
    owned: list[str]
    environment: dict[str, str]
    ca: str | None


def torch_pip(config: Config, runtime: matrix.HostRuntime | None = None) -> TorchPip | None:
    """The host's torch install through pip; None without ``config.torch``."""
    wheels = torch_wheels(config, runtime)
    if wheels is None or config.torch is None:
        return None
    netrc = {"NETRC": paths.PIP_NETRC} if config.rocm_pip_netrc else {}
    environment, index = proxy_environment(config) | netrc, served(wheels.index_url, config.mirror)
    return TorchPip(
        wheels, index, decisions.owned_wheels(config.torch), environment, mirror_ca(config)
    )


def toolkit_repository(config: Config, row: matrix.Distro) -> AptRepository | None:
    """AMD's container-toolkit source for distro ``row`` (None: not built for it), signed by the
    classic ROCm key (``rocm_amdgpu_key_url``, ``rocm_amdgpu_key_fingerprint``)."""
    if (suite := container_toolkit.suite_for(row.key, row.suite)[0]) is None:
        return None
    return AptRepository(
        url=container_toolkit.APT_URL, suite=suite, key=_amdgpu_key(config),
        keyring=paths.CONTAINER_TOOLKIT_KEYRING, source=paths.CONTAINER_TOOLKIT_SOURCE,
    )  # fmt: skip


def host_needs(
    config: Config, row: matrix.Distro, host_gfx: list[str | None] | None = None
) -> HostNeeds:
    """Everything a host on distro ``row`` fetches; ``host_gfx`` defaults to ``expected_gfx``."""
    gfx = host_gfx if host_gfx is not None else config.expected_gfx_list
    apt = [AptNeed(rocm_repository(config, row), tuple(config.wanted_packages(gfx)))]
    driver = amdgpu_repository(config, row) if config.rocm_driver == "dkms" else None
    if driver is not None:
        apt.append(AptNeed(driver, (matrix.AMDGPU_DRIVER_PACKAGE,)))
    toolkit = toolkit_repository(config, row) if config.rocm_containers_engines else None
    if toolkit is not None:  # the release the deploy pins (engines.pin_text), not the newest
        release = config.rocm_containers_toolkit_version or container_toolkit.DEFAULT_RELEASE
        apt.append(AptNeed(toolkit, (f"{container_toolkit.PACKAGE}={release}*",)))
    wheels = torch_wheels(config, matrix.HOST_RUNTIMES[row.key])
    return HostNeeds(tuple(apt), (wheels,) if wheels else ())
