"""Operations on the host as a whole: failing it, the daemons it runs."""

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.system import DaemonRunning
from rocm_fleet.operations._script import failure, script
from rocm_fleet.operations.files import on_host, removed, stamp_is_current


@operation()
def fail(reason: str):
    """Stop this host here with ``reason`` (on its error output); the other hosts carry on."""
    yield failure(reason)


@operation()
def daemon_serving(service: str, pidfile: str, configs: list[str], stamp: str):
    """Start ``service`` if its ``pidfile`` names no live process, or reload it when one of
    ``configs`` is newer than ``stamp`` (touched after each (re)load); ``<service> -t`` checks the
    configuration first (a bad one fails the host, the daemon untouched)."""
    running = read_fact(DaemonRunning, pidfile=pidfile)
    if running and stamp_is_current(stamp, configs):
        host.noop(f"{service} runs with {', '.join(configs)} loaded")
        return
    yield script("daemon-serving", service, "reload" if running else "start", stamp)


@operation()
def daemon_config_absent(service: str, pidfile: str, path: str):
    """Remove a daemon's configuration file ``path`` and reload the daemon if it runs."""
    exists = on_host(path)
    yield from removed(path, exists)
    if exists and read_fact(DaemonRunning, pidfile=pidfile):
        yield StringCommand("service", QuoteString(service), "reload")


@operation()
def timer_enabled(timer: str, link: str, stamp: str, units: list[str], present: bool = True):
    """Enable a systemd timer by its ``link`` (works without systemd running) and, where systemd
    runs, start it with its ``units``' current content (``stamp`` touched after); or stop it and
    remove its units."""
    if present:
        if stamp_is_current(stamp, units):  # the stamp exists
            host.noop(f"{timer} is enabled with its units loaded")
            return
        yield script("pull-units", "enable", timer, link, stamp)
        return
    found = [read_fact(FileDigest, path=path) for path in [stamp, *units]]
    if not any(found):
        host.noop(f"{timer} is absent")
        return
    service = [unit for unit in units if unit != timer]
    yield script("pull-units", "disable", timer, link, stamp, *service)
