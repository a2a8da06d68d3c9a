"""A DOUBLE of systemd's timers, for the lab's hosts (which run no systemd: sshd is each
host's pid 1, so no timer of theirs would ever fire).

This stands in for a part of the machine the lab can't have (the init system), nothing of
the product: it reads the unit files the deploy installed in the host's root and fires their
``ExecStart`` inside the host as systemd would, so the product's own units are what is
exercised. Per host, while it runs:

* **which timers**: those enabled the way ``systemctl enable`` does it (a link in
  ``/etc/systemd/system/timers.target.wants``) when the host booted. A lab host has no
  running systemd, so the product enabled the timer for the next boot (pull-units.sh) and
  the double loads it at the next boot too; a timer whose link or file goes away stops
  (as ``systemctl stop`` and ``daemon-reload`` would have it);
* **when**: ``OnBootSec`` after the boot (a lab boot: the host's sshd, its pid 1, started in
  fresh namespaces, by ``start_host``/``restart_host``/a reboot), then ``OnUnitActiveSec``
  after the service last started (systemd.timer(5): relative to when the unit was last
  activated), each plus a uniformly random delay of up to ``RandomizedDelaySec``. Every time
  span is multiplied by the lab's ``timer_scale`` (``Lab(timer_scale=1/40)``: an hour is 90
  seconds). A timer that elapses while its service still runs starts no second run (the
  unit is already activating) and counts as the last trigger, as systemd's does;
  ``start_service`` starts the service at once, as ``systemctl start`` would;
* **what**: the service's ``ExecStart`` (continuation lines joined, split into words as a
  command line), run in the host's namespaces and root (``nsenter`` on its
  pid 1) with the environment systemd gives a system service (``PATH``, ``LANG``,
  ``INVOCATION_ID``), stdin from /dev/null, stdout and stderr into the host's "journal"
  (``<workdir>/hosts/<name>/journal``, lines ``<SyslogIdentifier>[<pid>]: <text>``, and
  systemd's own lines on start and end). Its exit status is a success when it is 0 or in
  ``SuccessExitStatus``; every run is in ``Timers.runs``.

Not modelled: ``OnCalendar=``, ``Persistent=``, ``AccuracySec=`` (systemd may delay a timer by
up to a minute by default; not done here), ``RandomizedDelaySec=`` being fixed per boot
(``FixedRandomDelay=``), dependencies (``After=network-online.target``: the lab's network
is up before any host boots), cgroups and the service's own sandboxing (the unit sets none).
"""

from __future__ import annotations

import configparser
import os
import random
import re
import shlex
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._util import LabError

if TYPE_CHECKING:
    from .hosts import Host, Hosts

SYSTEMD_UNITS = Path("etc/systemd/system")
WANTS = SYSTEMD_UNITS / "timers.target.wants"
#: The environment systemd gives a system service (systemd.exec(5), "Environment variables in
#: spawned processes": PATH's default for the system manager; LANG from the locale settings,
#: which a lab root leaves at C.UTF-8).
SERVICE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TICK_SECONDS = 0.2

# systemd.time(7): a time span is a sequence of numbers with units, spaces allowed.
_SPAN_UNITS = {
    "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3,
    "s": 1, "sec": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip
_SPAN_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)")


def time_span(text: str) -> float:
    """Seconds in a systemd time span (``5min``, ``1h 30min``; a bare number is seconds)."""
    text, seconds, at = text.strip(), 0.0, 0
    if not text:
        raise LabError("an empty time span")
    while at < len(text):
        found = _SPAN_PART.match(text, at)
        if not found or found.end() == at or found.group(2) not in {"", *_SPAN_UNITS}:
            raise LabError(f"not a systemd time span: {text!r}")
        seconds += float(found.group(1)) * _SPAN_UNITS.get(found.group(2), 1)
        at = found.end()
    return seconds


def read_unit(path: Path) -> configparser.ConfigParser:
    """A unit file as sections of settings (systemd.syntax(7): a line ending in a backslash
    continues on the next; keys are case-sensitive)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(re.sub(r"\\\n\s*", " ", path.read_text()))
    return parser


@dataclass(frozen=True)
class TimerUnits:
    """What the double reads of an enabled timer and the service it starts."""

    timer: str  #: the timer's unit name
    service: str
    on_boot: float | None  #: seconds (unscaled)
    on_unit_active: float | None
    random_delay: float
    exec_start: list[str]
    success_statuses: frozenset[int]
    identifier: str


def enabled_timers(root: Path) -> dict[str, TimerUnits]:
    """The timers of ``root`` enabled for boot (a link in timers.target.wants to a unit file
    that exists), with their services read."""
    found: dict[str, TimerUnits] = {}
    wants = root / WANTS
    if not wants.is_dir():
        return found
    for link in sorted(wants.glob("*.timer")):
        # The link names the unit by its path on the host.
        target = Path(os.readlink(link)) if link.is_symlink() else link
        timer_file = root / target.relative_to("/") if target.is_absolute() else wants / target
        if not timer_file.is_file():
            continue
        timer = read_unit(timer_file)
        section = timer["Timer"] if timer.has_section("Timer") else {}
        service_name = section.get("Unit", link.name.removesuffix(".timer") + ".service")
        service_file = root / SYSTEMD_UNITS / service_name
        if not service_file.is_file():
            continue
        service = read_unit(service_file)["Service"]

        def span(key: str, section: Any = section) -> float | None:
            return time_span(section[key]) if key in section else None

        found[link.name] = TimerUnits(
            timer=link.name,
            service=service_name,
            on_boot=span("OnBootSec"),
            on_unit_active=span("OnUnitActiveSec"),
            random_delay=span("RandomizedDelaySec") or 0.0,
            exec_start=shlex.split(service["ExecStart"]),
            success_statuses=frozenset(
                {0, *(int(s) for s in service.get("SuccessExitStatus", "").split() if s.isdigit())}
            ),
            identifier=service.get("SyslogIdentifier", service_name.removesuffix(".service")),
        )
    return found


@dataclass
class TimerRun:
    """One run of a service a timer started."""

    host: str
    service: str
    trigger: str  #: "OnBootSec", "OnUnitActiveSec" or "systemctl start" (``Timers.start_service``)
    started: float  #: time.monotonic()
    ended: float | None = None
    exit_status: int | None = None  #: negative: killed by that signal (the host went down)
    success: bool | None = None
    output: str = ""


@dataclass
class _HostTimers:
    """One boot of one host, as the double sees it."""

    sshd: Any  #: the Popen of the host's sshd: another one is another boot
    booted: float
    units: dict[str, TimerUnits]
    next_at: dict[str, tuple[float, str]] = field(default_factory=dict)  # timer -> (when, why)
    last_start: dict[str, float] = field(default_factory=dict)
    last_trigger: dict[str, float] = field(default_factory=dict)
    running: dict[str, threading.Thread] = field(default_factory=dict)


class Timers:
    """The timer double for a lab's hosts: a thread that ticks every ``TICK_SECONDS``."""

    def __init__(self, hosts: Hosts, scale: float, seed: int | None = None):
        if scale <= 0:
            raise LabError(f"timer_scale must be above 0, not {scale!r}")
        self._hosts = hosts
        self.scale = scale
        self._random = random.Random(seed)
        self._booted: dict[str, _HostTimers] = {}
        self._stopped: set[str] = set()
        self.runs: list[TimerRun] = []
        self._lock = threading.Lock()
        self._ticking = threading.Event()
        self._thread: threading.Thread | None = None
        self._processes: set[subprocess.Popen[bytes]] = set()

    # --- what a test reads and does ---------------------------------------------------------

    def runs_of(self, name: str) -> list[TimerRun]:
        with self._lock:
            return [run for run in self.runs if run.host == name]

    def journal(self, name: str) -> str:
        path = self._hosts[name].dir / "journal"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop_timer(self, name: str) -> None:
        """Like ``systemctl stop`` of every timer of host ``name`` (a run in progress goes on):
        none fires until the host boots again."""
        with self._lock:
            self._stopped.add(self._hosts[name].name)

    def start_service(self, name: str, service: str, timeout: float = 1800) -> TimerRun:
        """Like ``systemctl start SERVICE`` on host ``name`` for a ``Type=oneshot`` service
        an enabled timer starts: it runs now (trigger ``"systemctl start"``), whether or not
        the timer is stopped, and returns once it has ended. A run of it in progress is
        waited for first (never two at once); the timer's ``OnUnitActiveSec`` counts from
        this start, as systemd's does (the unit was activated)."""
        host = self._hosts[name]
        units = next((u for u in enabled_timers(host.root).values() if u.service == service),
                     None)  # fmt: skip
        if units is None:
            raise LabError(f"{name}: no enabled timer starts {service}")
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                booted = self._booted.get(host.name)
                running = booted.running.get(units.timer) if booted else None
                if running is None or not running.is_alive():
                    run = self._start_run(host, units, "systemctl start", booted)
                    break
            if time.monotonic() > deadline:
                raise LabError(f"{name}: {service} still running after {timeout:.0f}s")
            time.sleep(TICK_SECONDS)
        while run.ended is None:
            if time.monotonic() > deadline:
                raise LabError(f"{name}: {service} started by hand still running")
            time.sleep(TICK_SECONDS)
        return run

    # --- the thread --------------------------------------------------------------------------

    def start(self) -> None:
        self._ticking.set()
        self._thread = threading.Thread(target=self._tick_loop, name="rflab-timers", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop firing and end the ``nsenter`` of each run in progress; what a run started
        inside a host dies with the host's pid namespace when the host stops."""
        self._ticking.clear()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        for process in list(self._processes):
            if process.poll() is None:
                process.terminate()
                process.wait(10)

    def pids(self) -> list[int]:
        return [p.pid for p in list(self._processes) if p.poll() is None]

    def _tick_loop(self) -> None:
        while self._ticking.is_set():
            for host in self._hosts:
                try:
                    self._tick(host)
                except Exception as exc:
                    # A unit file the double can't read: said in the host's journal.
                    self._journal(host, f"rflab-timers: {exc}")
            time.sleep(TICK_SECONDS)

    def _tick(self, host: Host) -> None:
        now = time.monotonic()
        proc = host.sshd
        booted = self._booted.get(host.name)
        if proc is None or proc.poll() is not None:  # down: its timers with it
            self._booted.pop(host.name, None)
            return
        if booted is None or booted.sshd is not proc:
            with self._lock:
                self._stopped.discard(host.name)
            booted = _HostTimers(proc, now, enabled_timers(host.root))
            self._booted[host.name] = booted
            for name, units in booted.units.items():
                if units.on_boot is not None:
                    self._arm(booted, name, booted.booted + units.on_boot * self.scale, "OnBootSec")
        if host.name in self._stopped:
            return
        still = enabled_timers(host.root)
        for name, units in list(booted.units.items()):
            if name not in still:  # its link or file went: stopped and unloaded
                booted.units.pop(name)
                booted.next_at.pop(name, None)
                continue
            if still[name] != units:  # a changed file: daemon-reload
                booted.units[name] = units = still[name]
                self._rearm_after_reload(booted, name)
            due = booted.next_at.get(name)
            if due is None or now < due[0]:
                continue
            del booted.next_at[name]
            booted.last_trigger[name] = now
            with self._lock:  # never beside a run started by hand (``start_service``)
                running = booted.running.get(name)
                if running is None or not running.is_alive():
                    self._start_run(host, units, due[1], booted)
            if units.on_unit_active is not None:
                base = max(booted.last_start.get(name, 0.0), booted.last_trigger[name])
                self._arm(booted, name, base + units.on_unit_active * self.scale, "OnUnitActiveSec")

    def _start_run(
        self, host: Host, units: TimerUnits, trigger: str, booted: _HostTimers | None
    ) -> TimerRun:
        """A run of ``units``' service started in a thread of its own (the caller holds the
        lock); the boot's record of its last start updated."""
        run = TimerRun(host.name, units.service, trigger, time.monotonic())
        self.runs.append(run)
        thread = threading.Thread(
            target=self._run, args=(host, units, run), daemon=True,
            name=f"rflab-timer-{host.name}",
        )  # fmt: skip
        if booted is not None and booted.sshd is host.sshd:
            booted.last_start[units.timer] = run.started
            booted.running[units.timer] = thread
            loaded = units.timer in booted.units  # enabled when the host booted
            if trigger == "systemctl start" and loaded and units.on_unit_active is not None:
                self._arm(booted, units.timer, run.started + units.on_unit_active * self.scale,
                          "OnUnitActiveSec")  # fmt: skip
        thread.start()
        return run

    def _rearm_after_reload(self, booted: _HostTimers, name: str) -> None:
        """After a daemon-reload systemd computes the next elapse from the timer's new
        settings (an ``OnUnitActiveSec`` arm counts from the service's last start with the new
        span), so a run that rewrites its own timer already sets its next interval."""
        units, due = booted.units[name], booted.next_at.get(name)
        last = booted.last_start.get(name)
        if due is None or due[1] != "OnUnitActiveSec" or last is None:
            return
        if units.on_unit_active is None:
            del booted.next_at[name]
        else:
            self._arm(booted, name, last + units.on_unit_active * self.scale, "OnUnitActiveSec")

    def _arm(self, booted: _HostTimers, name: str, at: float, why: str) -> None:
        delay = self._random.uniform(0, booted.units[name].random_delay * self.scale)
        booted.next_at[name] = (at + delay, why)

    # --- one run of a service ------------------------------------------------------------------

    def _journal(self, host: Host, line: str) -> None:
        with open(host.dir / "journal", "a", encoding="utf-8") as journal:
            journal.write(f"{time.strftime('%b %d %H:%M:%S')} {host.name} {line}\n")

    def _run(self, host: Host, units: TimerUnits, run: TimerRun) -> None:
        self._journal(
            host, f"systemd[1]: Starting {units.service} ({run.trigger}, {units.timer})..."
        )
        env = {"PATH": SERVICE_PATH, "LANG": "C.UTF-8", "INVOCATION_ID": uuid.uuid4().hex}
        process = host.spawn(units.exec_start, env, subprocess.PIPE)
        if process is None:  # the host is down
            run.ended, run.exit_status, run.success = time.monotonic(), -9, False
            return
        self._processes.add(process)
        lines = []
        assert process.stdout is not None
        for raw in process.stdout:
            text = raw.decode(errors="replace").rstrip("\n")
            lines.append(text)
            self._journal(host, f"{units.identifier}[{process.pid}]: {text}")
        status = process.wait()
        self._processes.discard(process)
        run.output = "\n".join(lines)
        run.exit_status = status
        run.success = status in units.success_statuses
        run.ended = time.monotonic()
        if run.success:
            self._journal(host, f"systemd[1]: Finished {units.service}.")
        else:
            result = f"status={status}" if status >= 0 else f"signal={-status}"
            self._journal(
                host, f"systemd[1]: {units.service}: Main process exited, code=exited, {result}"
            )
            self._journal(host, f"systemd[1]: Failed to start {units.service}.")
