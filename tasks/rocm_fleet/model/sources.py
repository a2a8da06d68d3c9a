"""What a host fetches from upstream, described once, and how it gets there.

The matrix says what each stream of ROCm publishes (``matrix.Stream``: key, keyring, pin,
per-distro suite or directory; ``matrix.Repository``: base URL, key URL, source file and its
form); this module turns that and a host's settings into the apt sources and the wheel
sets the host uses: AMD's ROCm repository of the release (repo.radeon.com's
``rocm/apt/<release>``, the Core SDK's ``repo.amd.com/rocm/packages-multi-arch/<dist>`` or
``stable.repo.amd.com/rocm/core/packages/<dist>``), AMD's amdgpu driver repository, which
key signs each and which keyring holds it, and the PyTorch wheel index with the wheels (and,
for the Core SDK's torch, the pip ROCm runtime) the host's Python installs. The deploy
writes its apt sources and installs its wheels from these descriptions (``repository``,
``driver``, ``pytorch``), ``rocm-fleet bundle`` fetches exactly what they name for every
host of an inventory, the live mirror proxies the servers they name, and preflight checks a
bundle against them: a new stream is one more matrix row, not a change to any of those.

How: straight from upstream, or from the fleet mirror (``served``: the upstream URL under
the mirror, ``http://mirror:8080/repo.radeon.com/rocm/apt/6.4.3``, so one mirror carries
every upstream without their paths colliding, as a bundle lays them out on disk), and
through the inventory's proxy (``proxy_environment``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from rocm_fleet.assets import render
from rocm_fleet.model import matrix, paths
from rocm_fleet.model.decisions import Mirror, owned_wheels, pinned_requirements
from rocm_fleet.model.venv_pins import normal_versions, requirement_met, version_matches

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


@dataclass(frozen=True)
class SigningKey:
    """An armored OpenPGP key fetched from ``url``; only one whose primary key has
    ``fingerprint`` is used."""

    url: str
    fingerprint: str


@dataclass(frozen=True)
class AptRepository:
    """One apt source: ``url`` holds ``dists/`` and ``pool/`` (a flat layout apt reads as
    ``deb URL SUITE COMPONENT``), signed by ``key``, which the host keeps in ``keyring``;
    the deploy writes it to the host file ``source``, as one ``deb`` line or (``deb822``) a
    stanza, the form AMD's install page gives."""

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
        if not self.deb822:
            return render(
                "apt-source.list.j2",
                url=self.url,
                suite=self.suite,
                component=self.component,
                architecture=self.architecture,
                keyring=self.keyring,
            )
        return render(
            "apt-source.sources.j2",
            x_repo_id=self.x_repo_id,
            uri=f"{self.url}/",
            suite=self.suite,
            component=self.component,
            architecture=self.architecture,
            keyring=self.keyring,
            enabled=True,
        )

    @property
    def dists_url(self) -> str:
        return f"{self.url}/dists/{self.suite}"

    @property
    def packages_index(self) -> str:
        """The path of the package index under ``dists_url`` (compressed variants add a
        suffix), as InRelease lists it."""
        return f"{self.component}/binary-{self.architecture}/Packages"

    def describe(self) -> str:
        return f"{self.url} {self.suite} {self.component}"

    def via(self, mirror: Mirror | None) -> AptRepository:
        """This repository as hosts of ``mirror`` reach it (the key fetched from it too)."""
        if mirror is None:
            return self
        key = SigningKey(served(self.key.url, mirror), self.key.fingerprint)
        return replace(self, url=served(self.url, mirror), key=key)


class UnsafePath(ValueError):
    """A URL whose place under a mirror or bundle would not stay there (``..``, ``%2e%2e``,
    an absolute or empty segment, credentials or an odd host); the message names it."""


# A host name or an IP literal, with an optional port: what a directory of a bundle is named
# after (no credentials, no path separators).
_NETLOC = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?"
)
# Characters no segment of a bundle's path holds: NUL and control characters, backslash.
_BAD_SEGMENT_CHARACTER = re.compile(r"[\x00-\x1f\x7f\\]")


def mirror_path(url: str) -> str:
    """Where an upstream URL lives under a mirror (and in a bundle): its host, then its
    path, decoded (``download.pytorch.org/whl/rocm6.4/torch-2.9.1+rocm6.4-...whl``).

    Every URL a bundle writes comes from fetched data (a ``Filename:`` of a signed index, a
    link of an index page), so the path is proven to stay below its host's directory after
    decoding: no ``.`` or ``..`` segment (however encoded), no empty segment but a
    trailing one (a directory's page), no control character or backslash, and a host that
    is a host (credentials are refused: they would name a directory). UnsafePath otherwise,
    naming the URL."""
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


def served(url: str, mirror: Mirror | None) -> str:
    """``url`` as hosts of ``mirror`` fetch it (itself without a mirror)."""
    if mirror is None:
        return url
    parts = urlsplit(url)
    return f"{mirror.url.rstrip('/')}/{parts.netloc}{parts.path}"


def mirror_ca(config: Config) -> str | None:
    """The CA file on the host that fetches from the fleet mirror trust (the mirror's alone,
    ``deploy.mirror`` pins it): apt by its per-host ``CaInfo``, curl by ``--cacert``, pip by
    ``--cert``; None without a TLS mirror whose CA the inventory gives."""
    mirror = config.mirror
    return paths.MIRROR_CA if mirror is not None and mirror.tls and mirror.ca else None


def no_proxy(config: Config) -> list[str]:
    """The hosts reached directly: ``rocm_no_proxy`` and the fleet mirror."""
    names = list(config.rocm_no_proxy)
    mirror = config.mirror.hostname if config.mirror else ""
    if mirror and mirror not in names:
        names.append(mirror)
    return names


def proxy_environment(config: Config) -> dict[str, str]:
    """The variables curl and pip (requests) take their proxy from; empty without one."""
    if not config.rocm_proxy:
        return {}
    variables = {"http_proxy": config.rocm_proxy, "https_proxy": config.rocm_proxy}
    if no_proxy(config):
        variables["no_proxy"] = ",".join(no_proxy(config))
    return variables


@dataclass(frozen=True)
class AptNeed:
    """Packages a host installs from one repository (their dependencies come along)."""

    repository: AptRepository
    packages: tuple[str, ...]


@dataclass(frozen=True)
class WheelNeed:
    """Wheels a host's venv installs from one PEP 503 index: exact pins (with their extras:
    AMD's ``torch[device-gfx942]``), and what they require from the same index beyond them
    (``requires``: the pip ROCm runtime a Core SDK torch brings,
    ``rocm[device-all,libraries]==7.14.*``, ``rocm[libraries]==10.0.0``); for the host's Python
    (``runtime``; None where it doesn't matter: the deploy's own pip resolves on the host)."""

    index_url: str
    runtime: matrix.HostRuntime | None
    wanted: tuple[tuple[str, str], ...]  # (distribution, exact version), sorted
    requires: tuple[str, ...] = ()
    extras: tuple[tuple[str, tuple[str, ...]], ...] = ()  # AMD's [device-<gfx>] per wheel

    def requirements(self) -> list[str]:
        return pinned_requirements(self.wanted, self.extras, self.requires)

    def unmet_in(self, distributions: Mapping[str, str] | None) -> bool:
        """Whether a venv holding ``distributions`` (name -> version, as
        ``facts.python.VenvDistributions`` reads them; None: no venv) lacks a pin or a
        requirement of the set: what ``operations.python.pinned_wheels`` would run pip for
        (asked before the set is locked)."""
        installed = normal_versions(distributions)
        return any(not version_matches(installed.get(n), v) for n, v in self.wanted) or any(
            not requirement_met(installed, r) for r in self.requires
        )


@dataclass(frozen=True)
class HostNeeds:
    apt: tuple[AptNeed, ...] = ()
    wheels: tuple[WheelNeed, ...] = ()


def rocm_key(config: Config) -> SigningKey:
    """The release stream's key (``rocm_key_url`` / ``rocm_key_fingerprint`` override it)."""
    return SigningKey(config.key_url, config.key_fingerprint)


def rocm_repository(config: Config, row: matrix.Distro) -> AptRepository:
    """AMD's ROCm source for the release and distro, as the release's stream lays it out:
    ``rocm/apt/<apt path>`` in repo.radeon.com's suite for the distro (Debian 12 -> jammy;
    fact sheet §3.2), or the Core SDK's per-distro directory, suite ``stable``, one line
    (7.14) or deb822 (10.x); the stream's key and keyring. ValueError when the release
    publishes nothing for the distro (preflight refuses such a host first)."""
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
    """The key of AMD's driver repository: repo.radeon.com's, which is the classic stream's
    own key (and keyring), and a key of its own beside a Core SDK release's
    (``rocm_amdgpu_key_url``, ``rocm_amdgpu_key_fingerprint``)."""
    if config.stream.keyring == matrix.AMDGPU_KEYRING:
        return rocm_key(config)
    return SigningKey(config.rocm_amdgpu_key_url, config.rocm_amdgpu_key_fingerprint.upper())


def amdgpu_repository(config: Config, row: matrix.Distro) -> AptRepository | None:
    """AMD's driver source ``amdgpu/<version>/ubuntu`` in repo.radeon.com's suite for the
    distro, signed by repo.radeon.com's key (fact sheet §3.2; amdgpu-docs Ubuntu template,
    research A.6), whichever stream the release is of; None when the matrix doesn't know
    the release's driver."""
    version = matrix.amdgpu_repo_version(config.release)
    if version is None:
        return None
    url = f"{config.rocm_amdgpu_apt_base_url.rstrip('/')}/{version}/ubuntu"
    key, keyring = driver_key(config), matrix.AMDGPU_KEYRING
    return AptRepository(url, row.suite, key, keyring=keyring, source=paths.AMDGPU_SOURCE)


def torch_wheels(config: Config, runtime: matrix.HostRuntime | None = None) -> WheelNeed | None:
    """The host's torch wheels (``config.torch``) for the host's Python; None without."""
    torch = config.torch
    if torch is None:
        return None
    return WheelNeed(torch.index_url, runtime, torch.wanted, torch.requires, torch.extras)


@dataclass(frozen=True)
class TorchPip:
    """How a host's pip installs its torch wheels (``deploy.pytorch``): the wheel set, the
    index as the host reaches it (``served``), the distributions the pins manage
    (``decisions.owned_wheels``), pip's environment (the proxy, and ``NETRC`` naming the
    root-only file of ``rocm_pip_netrc``: the secret is in no command) and the CA it trusts."""

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
    return TorchPip(
        wheels,
        served(wheels.index_url, config.mirror),
        owned_wheels(config.torch),
        {**proxy_environment(config), **netrc},
        mirror_ca(config),
    )


def host_needs(
    config: Config, row: matrix.Distro, host_gfx: list[str | None] | None = None
) -> HostNeeds:
    """Everything a host with ``config`` on distro ``row`` fetches from AMD and PyTorch.
    ``host_gfx``: the gfx targets of every GPU of the host, when known (the Core SDK's
    default packages depend on them); unknown, they are taken to be ``expected_gfx``."""
    gfx = host_gfx if host_gfx is not None else config.expected_gfx_list
    apt = [AptNeed(rocm_repository(config, row), tuple(config.wanted_packages(gfx)))]
    driver = amdgpu_repository(config, row) if config.rocm_driver == "dkms" else None
    if driver is not None:
        apt.append(AptNeed(driver, (matrix.AMDGPU_DRIVER_PACKAGE,)))
    wheels = torch_wheels(config, matrix.HOST_RUNTIMES[row.key])
    return HostNeeds(tuple(apt), (wheels,) if wheels else ())
