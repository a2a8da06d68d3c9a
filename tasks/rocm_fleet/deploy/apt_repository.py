"""One apt repository on a host, in the order apt needs it: key, source, pin, refresh.

AMD's ROCm repository (``repository``), AMD's amdgpu driver repository (``driver``) and
Debian's backports (``kernel``) are each added the same way, by ``apt_repository``:

1. the keyring the source is signed by, fetched and installed only when it carries the
   expected fingerprint (``verified_keyring``), before anything points apt at the source;
2. the source file, then the pin (an apt preferences file), when the repository has one;
3. what another repository left that must not stay beside this one (the other ROCm
   stream's source, pin and keyring), removed before apt reads its lists again;
4. ``apt-get update`` only when the source or its keyring changed since the last update
   this deploy made (``apt_lists_fresh``, a stamp per repository), so a converged host
   never refreshes and a run stopped between writing and updating refreshes next time.

Every step is idempotent: a second run plans nothing but no-ops. The callers name each
operation, so ``--dry`` and the audit say which repository drifted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rocm_fleet.operations.apt import apt_lists_fresh, verified_keyring
from rocm_fleet.operations.files import text_file


@dataclass(frozen=True)
class AptFile:
    """A file of the repository the deploy writes: the operation's name, path and text."""

    name: str
    path: str
    content: str


@dataclass(frozen=True)
class AptKey:
    """The keyring at ``path``, installed from ``url`` only if it holds ``fingerprint``;
    fetched through ``proxy`` (``sources.proxy_environment``; empty: directly), trusting
    ``ca`` alone for TLS when given (``sources.mirror_ca``)."""

    name: str
    path: str
    url: str
    fingerprint: str
    proxy: dict[str, str] = field(default_factory=dict)
    ca: str | None = None


@dataclass(frozen=True)
class Leftovers:
    """Files another repository put on the host that must go before apt reads its lists:
    sources, pins and keyrings, named "Remove {owner} source PATH" and so on."""

    owner: str
    sources: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()
    keyrings: tuple[str, ...] = ()


def apt_repository(
    *,
    source: AptFile,
    refresh: str,
    stamp: str,
    key: AptKey | None = None,
    signed_by: str | None = None,
    pin: AptFile | None = None,
    leftovers: Leftovers | None = None,
) -> None:
    """Add one apt repository: ``key`` (when this repository installs its keyring),
    ``source``, ``pin``, ``leftovers`` removed, then the lists refreshed (operation
    ``refresh``, stamp file ``stamp``) when the source or the keyring it is signed by
    (``signed_by``, else ``key``'s; none for a distribution keyring) changed."""
    if key is not None:
        verified_keyring(
            name=key.name,
            path=key.path,
            url=key.url,
            fingerprint=key.fingerprint,
            proxy=key.proxy,
            ca=key.ca,
        )
    text_file(name=source.name, path=source.path, content=source.content)
    if pin is not None:
        text_file(name=pin.name, path=pin.path, content=pin.content)
    if leftovers is not None:
        for path in leftovers.sources:
            text_file(name=f"Remove {leftovers.owner} source {path}", path=path, present=False)
        for path in leftovers.pins:
            text_file(name=f"Remove {leftovers.owner} pin {path}", path=path, present=False)
        for path in leftovers.keyrings:
            verified_keyring(
                name=f"Remove {leftovers.owner} keyring {path}", path=path, present=False
            )
    keyring = signed_by or (key.path if key is not None else None)
    apt_lists_fresh(
        name=refresh,
        inputs=[source.path, *([keyring] if keyring else [])],
        stamp=stamp,
    )
