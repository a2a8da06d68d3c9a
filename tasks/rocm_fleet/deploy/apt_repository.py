"""One apt repository on a host: keyring, source, pin, leftovers removed, lists refreshed."""

from dataclasses import asdict, dataclass, field

from rocm_fleet.model.config import Config
from rocm_fleet.model.sources import AptRepository, mirror_ca, proxy_environment
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
    """The keyring at ``path`` from ``url``, only if it holds ``fingerprint``."""

    name: str
    path: str
    url: str
    fingerprint: str
    proxy: dict[str, str] = field(default_factory=dict)
    ca: str | None = None

    @classmethod
    def of(cls, name: str, served: AptRepository, config: Config) -> "AptKey":
        """``served``'s keyring from its key's served URL, through ``config``'s proxy and CA."""
        key, proxy = served.key, proxy_environment(config)
        return cls(name, served.keyring, key.url, key.fingerprint, proxy, mirror_ca(config))


@dataclass(frozen=True)
class Leftovers:
    """Sources, pins and keyrings another repository left, removed before apt reads its lists."""

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
    """Add one apt repository: key, source, pin, leftovers removed, lists refreshed."""
    if key is not None:
        verified_keyring(**asdict(key))
    text_file(**asdict(source))
    if pin is not None:
        text_file(**asdict(pin))
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
        name=refresh, inputs=[source.path, *([keyring] if keyring else [])], stamp=stamp
    )
