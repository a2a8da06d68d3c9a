"""The fleet: every host's validated settings, mirror resolved, and upstream needs, decided once
per inventory; bad data raises ``ConfigError`` every time it is asked for."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from rocm_fleet.model import grammar, matrix, torch_builds
from rocm_fleet.model.config import Config, ConfigError, load_config
from rocm_fleet.model.decisions import Mirror
from rocm_fleet.model.secrets import SecretError, read_secret
from rocm_fleet.model.sources import HostNeeds, host_needs

if TYPE_CHECKING:
    from rocm_fleet.model.tls import MirrorTls, TlsFileError


@dataclass(frozen=True, order=True)
class ProxiedUpstream:
    """A server the live mirror proxies under ``/<netloc>/``; ``linked``: only via index pages."""

    netloc: str
    scheme: str = "https"
    linked: bool = False


class Fleet:
    """Every host of one inventory, validated and resolved once, on first ask."""

    def __init__(
        self,
        data: Mapping[str, Mapping[str, Any]],
        origin: Callable[[str, str], str | None] | None = None,
    ):
        """``data``: host name -> merged inventory data (may be lazy); ``origin(host, key)``
        names where a key was set, for errors."""
        self._data = data
        self._origin = origin
        self._loaded: dict[str, Config | ConfigError] = {}
        self._addresses: dict[str, str] = {}
        self._resolved: dict[str, Config | ConfigError] = {}
        self._needs: dict[tuple[str, str], HostNeeds | None] = {}
        self._upstreams: dict[str, list[ProxiedUpstream]] = {}
        self._tls_checked: dict[tuple[str, ...], ConfigError | None] = {}

    @property
    def names(self) -> list[str]:
        return list(self._data)

    def __contains__(self, name: object) -> bool:
        return name in self._data

    def config(self, name: str) -> Config:
        """``name``'s settings, mirror resolved; raises ConfigError (its data or its mirror's)."""
        return _once(self._resolved, name, lambda: check_secrets(
            resolve_mirror(self.settings(name), name, self), name))  # fmt: skip

    def configs(self) -> dict[str, Config]:
        """Every host with valid data."""
        return {name: self.config(name) for name in self._data if not self.invalid([name])}

    def needs(self, name: str, row: matrix.Distro) -> HostNeeds | None:
        """What ``name`` fetches on distro ``row``; None when its release publishes none there."""
        config = self.config(name)
        published = config.release.publication(row) is not None
        return _once(
            self._needs, (name, row.key), lambda: host_needs(config, row) if published else None
        )

    def upstream_urls(self, name: str) -> list[str]:
        """Every URL ``name`` fetches from on any distro its release publishes for."""
        urls: dict[str, None] = {}
        for needs in filter(None, (self.needs(name, row) for row in matrix.DISTROS)):
            for need in needs.apt:
                urls.update(dict.fromkeys([need.repository.url, need.repository.key.url]))
            urls.update(dict.fromkeys(wheel.index_url for wheel in needs.wheels))
        return list(urls)

    def upstreams(self, mirror_host: str) -> list[ProxiedUpstream]:
        """Every upstream the valid hosts using ``mirror_host`` fetch from, with linked hosts."""
        if mirror_host not in self._upstreams:
            found: dict[str, str] = {}
            linked: set[str] = set()
            for name, config in self.configs().items():
                mirror = config.mirror
                if mirror is None or mirror.host != mirror_host or config.rocm_state != "present":
                    continue
                if config.torch is not None:
                    linked.update(torch_builds.PYTORCH_INDEX_FILE_HOSTS)
                for url in self.upstream_urls(name):
                    parts = urlsplit(url)
                    if found.get(parts.netloc) != "https":
                        found[parts.netloc] = parts.scheme
            direct = [ProxiedUpstream(netloc, scheme) for netloc, scheme in found.items()]
            self._upstreams[mirror_host] = sorted(
                direct + [ProxiedUpstream(n, "https", True) for n in linked - set(found)]
            )
        return list(self._upstreams[mirror_host])

    def settings(self, name: str) -> Config:
        """``name``'s validated settings, its mirror not yet resolved."""

        def load() -> Config:
            data = dict(self._data[name])
            self._addresses[name] = data.get("ssh_hostname") or name
            return load_config(data, name, partial(self._origin, name) if self._origin else None)

        return _once(self._loaded, name, load)

    def refusals(self, but: str) -> list[ConfigError]:
        """The ConfigError of every other host with bad data of its own, each once."""
        return _errors(self.settings, (name for name in self._data if name != but))

    def invalid(self, names: Iterable[str]) -> list[ConfigError]:
        """The ConfigError of each of ``names`` whose data is bad (its lines: one per key)."""
        return _errors(self.config, names)

    def check_tls(self, name: str, tls: MirrorTls, address: str) -> None:
        """Raises ConfigError when ``name``'s mirror TLS files can't serve ``address``."""
        from rocm_fleet.model.tls import TlsFileError, check_mirror_files

        def check() -> None:
            try:
                check_mirror_files(tls, address)
            except TlsFileError as exc:
                raise _tls_error(name, exc) from None

        _once(self._tls_checked, (name, tls.ca, tls.cert, tls.key, address), check)

    def address(self, name: str) -> str:
        """Where the other hosts reach ``name``: its ``ssh_hostname``, else its name."""
        self.settings(name)  # reads the host's data, once (ConfigError for bad data)
        return self._addresses[name]


def resolve_mirror(config: Config, host_name: str, fleet: Fleet) -> Config:
    """``config`` with its fleet mirror resolved; ConfigError for an unknown or bad mirror."""
    value = config.rocm_mirror
    _tls_set_whole(config, host_name)
    if not value:
        return config
    if value.startswith(("http://", "https://")):
        if config.rocm_mirror_tls_ca and not value.startswith("https://"):
            raise ConfigError(
                f"{host_name}: inventory key 'rocm_mirror_tls_ca' is set and the mirror "
                f"{value!r} is plain HTTP: name its https:// URL, or unset the CA",
                "rocm_mirror_tls_ca",
            )
        if ca := config.rocm_mirror_tls_ca:
            from rocm_fleet.model.tls import TlsFileError, load_certificates

            try:
                load_certificates("rocm_mirror_tls_ca", ca)
            except TlsFileError as exc:
                raise _tls_error(host_name, exc) from None
        return replace(
            config, mirror=Mirror(value.rstrip("/"), None, config.rocm_mirror_bundle, ca=ca)
        )
    if value not in fleet:
        raise ConfigError(
            f"{host_name}: inventory key 'rocm_mirror' has value {value!r}; expected a host of "
            f"the inventory ({', '.join(fleet.names)}) or the http:// URL of a mirror",
            "rocm_mirror",
        )
    served_by, address = fleet.settings(value), fleet.address(value)
    if not grammar.host(address):  # it goes into apt sources, apt.conf and nginx
        raise ConfigError(
            f"{host_name}: inventory key 'rocm_mirror' has value {value!r}; the hosts would "
            f"reach it by {address!r} (its ssh_hostname, else its name), which is not a DNS "
            "name or an IP address in normal form: set the mirror host's ssh_hostname",
            "rocm_mirror",
        )
    _tls_set_whole(served_by, value)
    ca = None
    if served_by.rocm_mirror_tls_cert:
        if ":" in address:
            raise ConfigError(
                f"{value}: inventory key 'rocm_mirror_tls_cert' is set and the hosts reach the "
                f"mirror by the IPv6 address {address}, which apt's per-host TLS settings can't "
                "name: reach it by a DNS name or an IPv4 address (ssh_hostname)",
                "rocm_mirror_tls_cert",
            )
        from rocm_fleet.model.tls import MirrorTls

        tls = MirrorTls(*(getattr(served_by, key) or "" for key in TLS_SETTINGS))
        fleet.check_tls(value, tls, address)
        ca = tls.ca
    scheme = "https" if ca else "http"
    if ":" in address:
        address = f"[{address}]"
    url = f"{scheme}://{address}:{served_by.rocm_mirror_port}"
    mirror = Mirror(url, value, served_by.rocm_mirror_bundle, value == host_name, ca)
    if mirror.serves and not mirror.bundle and config.rocm_proxy:
        raise ConfigError(
            f"{host_name}: inventory key 'rocm_proxy' has value {config.rocm_proxy!r}; a live "
            "mirror reaches upstream directly (nginx can't go through an HTTP proxy): give the "
            "mirror host direct access, or serve a bundle (rocm_mirror_bundle)",
            "rocm_proxy",
        )
    return replace(config, mirror=mirror)


TLS_SETTINGS = ("rocm_mirror_tls_ca", "rocm_mirror_tls_cert", "rocm_mirror_tls_key")


def _tls_set_whole(config: Config, host_name: str) -> None:
    """A mirror's certificate comes with its key and CA: ConfigError naming the one missing."""
    if not (config.rocm_mirror_tls_cert or config.rocm_mirror_tls_key):
        return
    for key in TLS_SETTINGS:
        if not getattr(config, key):
            given = [k for k in TLS_SETTINGS if getattr(config, k)]
            raise ConfigError(
                f"{host_name}: inventory key {key!r} is required with {', '.join(given)} and "
                "not set: `rocm-fleet mirror-ca DIR ADDRESS` makes the CA, the certificate and "
                "the key, and prints the three settings",
                key,
            )


def check_secrets(config: Config, host_name: str) -> Config:
    """``config``; ConfigError (naming the key, never the secret) for an unreadable credential."""
    for key in ("rocm_apt_auth", "rocm_pip_netrc"):
        source = getattr(config, key)
        if source is None:
            continue
        try:
            read_secret(source)
        except SecretError as exc:
            raise ConfigError(f"{host_name}: inventory key {key!r}: {exc}", key) from None
    return config


def _tls_error(host: str, exc: TlsFileError) -> ConfigError:
    return ConfigError(f"{host}: inventory key {exc.key!r}: {exc}", exc.key)


def _errors(read: Callable[[str], Config], names: Iterable[str]) -> list[ConfigError]:
    found = []
    for name in names:
        try:
            read(name)
        except ConfigError as exc:
            found.append(exc)
    return found


def _once(store: dict[Any, Any], key: Any, make: Callable[[], Any]) -> Any:
    """``make()`` once per ``key``; its ConfigError is kept and raised anew on every ask."""
    if key not in store:
        try:
            store[key] = make()
        except ConfigError as exc:
            store[key] = exc
    if isinstance(found := store[key], ConfigError):
        raise ConfigError(str(found), found.key)
    return found
