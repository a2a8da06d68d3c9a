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
    Have a daemon run with its current configuration: start it when it isn't running,
    reload it when one of ``configs`` is newer than the last (re)load this deploy made; its
    configuration is checked first (``<service> -t``), so a bad one fails the host and
    leaves the running daemon as it was. Started and reloaded with ``service``, which goes
    to systemd where it runs and to the package's init script where it doesn't.

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
    Remove one of a daemon's configuration files, and reload the daemon if it runs, so it
    stops doing what the file told it.

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
    Have a systemd timer enabled and, where systemd runs, started with its units' current
    content; or stopped, and its units removed. Enabled as ``systemctl enable`` does (a link
    in ``timers.target.wants``), so a host without systemd running (an image being built, a
    container) gets the timer at its next boot.

    + timer: the timer's unit file
    + link: its link in timers.target.wants
    + stamp: file touched after systemd was told of the units: a newer unit file needs it
      told again (daemon-reload, restart)
    + units: every unit file of the timer (the timer and its service); with present=False
      they are removed
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
