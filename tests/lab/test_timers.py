"""The timer double (timers.py) reads the units the product writes as systemd would."""

from __future__ import annotations

import pytest

from lab._util import LabError
from lab.timers import enabled_timers, time_span
from rocm_fleet.deploy import pull
from rocm_fleet.model import paths
from rocm_fleet.model.config import load_config

PULLING = {
    "rocm_version": "6.4.3",
    "rocm_pull": True,
    "rocm_pull_source": "http://mirror.lab/fleet/",
    "rocm_pull_trusted_root": "/srv/fleet/root.json",
    "rocm_pull_lock": "/srv/lock.txt",
    "rocm_pull_lock_sha256": "3f" * 32,
    "rocm_pull_interval": "1h 30min",
    "rocm_pull_random_delay": "90s",
}


@pytest.mark.parametrize(
    ("span", "seconds"),
    [("5min", 300), ("1h", 3600), ("1h 30min", 5400), ("90", 90), ("2.5s", 2.5), ("1d", 86400)],
)
def test_a_systemd_time_span_in_seconds(span, seconds):
    assert time_span(span) == seconds


@pytest.mark.parametrize("span", ["", "5 fortnights", "min", "1h;"])
def test_a_bad_time_span_is_refused(span):
    with pytest.raises(LabError):
        time_span(span)


def install(root, timer: str, service: str, enabled: bool = True) -> None:
    for path, text in ((paths.PULL_TIMER, timer), (paths.PULL_SERVICE, service)):
        (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / path.lstrip("/")).write_text(text)
    if enabled:
        link = root / paths.PULL_TIMER_LINK.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(paths.PULL_TIMER)  # absolute, as pull-units.sh makes it


def test_the_products_pull_units_as_the_double_reads_them(tmp_path):
    config = load_config(PULLING, "node")
    install(tmp_path, pull.timer_unit(config), pull.service_unit())
    found = enabled_timers(tmp_path)
    assert list(found) == ["rocm-fleet-pull.timer"]
    units = found["rocm-fleet-pull.timer"]
    assert (units.on_boot, units.on_unit_active, units.random_delay) == (300, 5400, 90)
    assert units.service == "rocm-fleet-pull.service"
    assert units.exec_start == [paths.SHELL, paths.PULL_SCRIPT]  # it takes the lock itself
    assert units.success_statuses == {0, 75}
    assert units.identifier == "rocm-fleet-pull"


def test_a_timer_without_its_link_is_not_enabled(tmp_path):
    config = load_config(PULLING, "node")
    install(tmp_path, pull.timer_unit(config), pull.service_unit(), enabled=False)
    assert enabled_timers(tmp_path) == {}


class _Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


class _DownHost:
    """A host whose sshd runs but whose services can't start (``spawn`` answers None): enough
    for the double's clock, which is all this test reads."""

    name = "node"

    def __init__(self, root):
        self.root = self.dir = root
        self.sshd = self

    def poll(self):
        return None

    def spawn(self, *args):
        return None


def test_a_timer_rewritten_by_its_own_run_elapses_at_its_new_interval(tmp_path, monkeypatch):
    """systemd recomputes a timer's next elapse at daemon-reload: the pull's first run writes
    a longer interval, and the next run comes that long after the first one started."""
    from lab import timers

    clock = _Clock()
    monkeypatch.setattr(timers.time, "monotonic", clock)
    service = "[Service]\nType=oneshot\nExecStart=/bin/true\n"
    install(tmp_path, "[Timer]\nOnBootSec=5min\nOnUnitActiveSec=15min\n", service)
    host = _DownHost(tmp_path)
    double = timers.Timers({"node": host}.values(), scale=1)
    for clock.now in (0, 300):
        double._tick(host)
    # The boot run's thread ends long before 1260 s on a real clock; here, wait for it (a
    # loaded machine left it alive at the next tick, and the double never starts a run beside one).
    for thread in double._booted["node"].running.values():
        thread.join(10)
    (tmp_path / paths.PULL_TIMER.lstrip("/")).write_text(
        "[Timer]\nOnBootSec=5min\nOnUnitActiveSec=16min\n"
    )
    for clock.now in (301, 1200, 1259, 1260):
        double._tick(host)
    assert [(run.trigger, run.started) for run in double.runs] == [
        ("OnBootSec", 300),
        ("OnUnitActiveSec", 1260),
    ]
