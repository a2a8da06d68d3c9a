"""The fleet mirror (nginx) and apt's proxy (docs/decisions/fleet-mirror.md)."""

from typing import Any

from pyinfra.api import deploy
from pyinfra.api.exceptions import DeployError

from rocm_fleet.assets import render
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.engine.inventory_fleet import fleet_of
from rocm_fleet.facts.system import Nameservers
from rocm_fleet.model import paths
from rocm_fleet.model.config import Config, ConfigError
from rocm_fleet.model.fleet import ProxiedUpstream
from rocm_fleet.model.grammar import ip_literal
from rocm_fleet.model.secrets import Secret
from rocm_fleet.model.sources import no_proxy
from rocm_fleet.operations.apt import debian_packages
from rocm_fleet.operations.files import (
    bundle_copy,
    directory_absent,
    files_absent,
    on_host,
    text_file,
    uploaded_file,
)
from rocm_fleet.operations.host import daemon_config_absent, daemon_serving


def nginx_site(
    port: int,
    bundle: bool,
    servers: list[ProxiedUpstream],
    nameservers: list[str] | None = None,
    listen: list[str] | None = None,
    allow: list[str] | None = None,
    tls: bool = False,
) -> str:
    """The mirror's nginx conf.d text (``rocm-fleet-mirror.conf.j2``)."""
    resolvers = [_bracketed(a) for a in nameservers or []]
    served = [s for s in servers if resolvers or not s.linked]
    return render(
        "rocm-fleet-mirror.conf.j2",
        port=port,
        bundle=bundle,
        tls=tls,
        listen=[_bracketed(a) for a in listen or []],
        allow=["127.0.0.1", "::1", *(allow or [])],
        resolvers=resolvers,
        upstreams=[_upstream(number, server) for number, server in enumerate(served)],
        paths=paths,
    )


def _bracketed(address: str) -> str:
    """An address as nginx names it beside a port: an IPv6 one in brackets."""
    return f"[{address}]" if ":" in address else address


def _upstream(number: int, server: ProxiedUpstream) -> dict[str, Any]:
    netloc = server.netloc
    bare = ":" not in netloc.rsplit("]", 1)[-1]
    default = 443 if server.scheme == "https" else 80
    return {
        "scheme": server.scheme,
        "netloc": netloc,
        "linked": server.linked,
        "target": netloc if server.linked else f"rocm_fleet_{number}",
        "address": f"{netloc}:{default}" if bare else netloc,
        "name": netloc.rsplit(":", 1)[0] if not netloc.endswith("]") else netloc,
    }


def mirror_access(config: Config, host_name: str, inventory: Any) -> tuple[list[str], list[str]]:
    """(listen, allow) for the mirror ``host_name``; ``ConfigError`` for users named by DNS
    without ``rocm_mirror_allow``."""
    fleet = fleet_of(inventory)
    own = fleet.address(host_name) if host_name in fleet else host_name
    listen = [config.rocm_mirror_listen] if config.rocm_mirror_listen else []
    if not listen and ip_literal(own):
        listen = [own]
    allowed: list[str] = []
    named: list[str] = []
    for name in fleet.names:
        try:
            client = fleet.settings(name)
        except ConfigError:
            continue  # refused on its own line; it fetches nothing
        if client.rocm_mirror != host_name and name != host_name:
            continue
        address = fleet.address(name)
        if ip_literal(address):
            if address not in allowed:
                allowed.append(address)
        else:
            named.append(f"{name} ({address})")
    if named and not config.rocm_mirror_allow:
        raise ConfigError(
            f"{host_name}: the mirror admits hosts by address, and the inventory names "
            f"{', '.join(named)} by DNS name: set rocm_mirror_allow on {host_name} to their "
            "networks, e.g. ['10.0.0.0/24']"
        )
    return listen, [*allowed, *config.rocm_mirror_allow]


def apt_proxy_conf(config: Config) -> str:
    """apt.conf(5) proxy settings, DIRECT for each exact no-proxy host."""
    # apt has no suffix or range match.
    direct = [n for n in no_proxy(config) if not (n.startswith(".") or "/" in n or "*" in n)]
    return render("apt-proxy.conf.j2", proxy=config.rocm_proxy or "", direct=direct)


@deploy("Proxy")
def configure_proxy(config: Config, present: bool = True) -> None:
    """apt's proxy snippet when ``rocm_proxy`` is set (and present), else its removal."""
    if present and config.rocm_proxy:
        text_file(
            name="Send apt through the proxy",
            path=paths.APT_PROXY_CONF,
            content=apt_proxy_conf(config),
        )
    elif not present or on_host(paths.APT_PROXY_CONF):
        text_file(name="Remove apt's proxy settings", path=paths.APT_PROXY_CONF, present=False)


def apt_mirror_conf(hostname: str) -> str:
    """apt.conf(5) trusting the mirror's CA for the mirror's host name only (``CaInfo``)."""
    return render("apt-mirror-tls.conf.j2", hostname=hostname, ca=paths.MIRROR_CA)


@deploy("Fleet mirror")
def configure_mirror(config: Config, inventory: Any, present: bool = True) -> None:
    """Pin the mirror's CA; serve the mirror on its host; elsewhere remove what is left."""
    mirror = config.mirror
    _pin_mirror_ca(mirror if present else None)
    if not present or mirror is None or not mirror.serves:
        files = (paths.MIRROR_SITE, paths.MIRROR_STAMP, paths.MIRROR_CERT, paths.MIRROR_KEY)
        if not present or on_host(*files, directories=(paths.MIRROR_ROOT, paths.MIRROR_CACHE)):
            _remove_mirror()
        return
    debian_packages(
        name="Install nginx to serve the mirror",
        packages=["ca-certificates", "nginx"],
        ledger=paths.PACKAGE_LEDGER,
    )
    if mirror.bundle:
        bundle_copy(
            name="Copy the bundle to the mirror", bundle=mirror.bundle, path=paths.MIRROR_BUNDLE
        )
        directory_absent(name="Drop the live mirror's cache", path=paths.MIRROR_CACHE)
    else:
        directory_absent(name="Drop the bundle (a live mirror now)", path=paths.MIRROR_ROOT)
    if mirror.tls:
        text_file(
            name="Give nginx the mirror's certificate",
            path=paths.MIRROR_CERT,
            content=_controller_text(config.rocm_mirror_tls_cert or ""),
        )
        uploaded_file(
            name="Give nginx the mirror's private key (root only)",
            path=paths.MIRROR_KEY,
            content=Secret(_controller_text(config.rocm_mirror_tls_key or "")),
            mode="600",
        )
    try:
        access = mirror_access(config, mirror.host or "", inventory)
    except ConfigError as exc:
        raise DeployError(str(exc)) from None  # bad inventory data stops the run
    text_file(
        name="Configure nginx to serve the mirror",
        path=paths.MIRROR_SITE,
        content=nginx_site(
            config.rocm_mirror_port,
            bool(mirror.bundle),
            fleet_of(inventory).upstreams(mirror.host or ""),
            read_fact(Nameservers),
            *access,
            tls=mirror.tls,
        ),
    )
    if not mirror.tls:
        _remove_tls_files()
    daemon_serving(
        name="Run nginx with the mirror's configuration",
        service="nginx",
        pidfile=paths.NGINX_PID,
        configs=[paths.MIRROR_SITE, paths.MIRROR_CERT, paths.MIRROR_KEY],
        stamp=paths.MIRROR_STAMP,
    )


def _controller_text(path: str) -> str:
    try:
        with open(path) as file:
            return file.read()
    except OSError as exc:  # checked at the start; gone since
        raise DeployError(f"can't read {path}: {exc.strerror}") from None


def _pin_mirror_ca(mirror: Any) -> None:
    """The mirror's CA and apt's setting naming it with a TLS mirror; else their removal."""
    if mirror is not None and mirror.tls and mirror.ca:
        uploaded_file(
            name="Pin the fleet mirror's CA",
            path=paths.MIRROR_CA,
            content=_controller_text(mirror.ca),
            mode="644",
        )
        text_file(
            name="Make apt check the mirror against its CA",
            path=paths.APT_MIRROR_CONF,
            content=apt_mirror_conf(mirror.hostname),
        )
        return
    files_absent(
        ("Remove apt's TLS settings for the mirror", paths.APT_MIRROR_CONF),
        ("Remove the fleet mirror's CA", paths.MIRROR_CA),
    )


def _remove_tls_files() -> None:
    files_absent(
        ("Remove the mirror's certificate", paths.MIRROR_CERT),
        ("Remove the mirror's private key", paths.MIRROR_KEY),
    )


def _remove_mirror() -> None:
    daemon_config_absent(
        name="Stop serving the mirror",
        service="nginx",
        pidfile=paths.NGINX_PID,
        path=paths.MIRROR_SITE,
    )
    _remove_tls_files()
    text_file(name="Forget when nginx loaded the mirror", path=paths.MIRROR_STAMP, present=False)
    directory_absent(name="Remove the mirror's bundle", path=paths.MIRROR_ROOT)
    directory_absent(name="Remove the mirror's cache", path=paths.MIRROR_CACHE)
