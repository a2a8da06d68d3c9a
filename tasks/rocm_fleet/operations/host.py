"""Operations on the host as a whole: failing it, the daemons it runs."""

from __future__ import annotations

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.system import DaemonRunning
from rocm_fleet.operations._script import failure, script
from rocm_fleet.operations.files import removed, stamp_is_current


@operation()
def fail(reason: str):
    """
    Stop this host here with ``reason`` (the other hosts carry on).

    + reason: what is wrong and how to fix it; printed on the host's error output
    """
    yield failure(reason)


@operation()
def daemon_serving(service: str, pidfile: str, configs: list[str], stamp: str):
    """
    Start a daemon that isn't running, or reload it when one of ``configs`` is newer than the
    last (re)load; ``<service> -t`` checks the configuration first (a bad one fails the host,
    the daemon untouched). Uses ``service``.

    + service: the service and its binary, e.g. "nginx"
    + pidfile: the daemon's pid file, e.g. /run/nginx.pid
    + configs: files whose change needs a reload
    + stamp: file touched after each (re)load
    """
    running = read_fact(DaemonRunning, pidfile=pidfile)
    if running and stamp_is_current(stamp, configs):
        host.noop(f"{service} runs with {', '.join(configs)} loaded")
        return
    yield script("daemon-serving", service, "reload" if running else "start", stamp)


@operation()
def daemon_config_absent(service: str, pidfile: str, path: str):
    """
    Remove a daemon's configuration file and reload the daemon if it runs.

    + service: the service, e.g. "nginx"
    + pidfile: the daemon's pid file
    + path: the configuration file
    """
    exists = read_fact(FileDigest, path=path) is not None
    yield from removed(path, exists)
    if exists and read_fact(DaemonRunning, pidfile=pidfile):
        yield StringCommand("service", QuoteString(service), "reload")


@operation()
def timer_enabled(timer: str, link: str, stamp: str, units: list[str], present: bool = True):
    """
    Enable a systemd timer by its link (works without systemd running) and, where systemd runs,
    start it with its units' current content; or stop it and remove its units.

    + timer: the timer's unit file
    + link: its link in timers.target.wants
    + stamp: touched after systemd loaded the units
    + units: every unit file of the timer; removed with present=False
    """
    if present:
        if stamp_is_current(stamp, units) and read_fact(FileDigest, path=stamp) is not None:
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
