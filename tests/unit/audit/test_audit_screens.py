"""The audit on a terminal (rocm_fleet.audit.screens, the command's --color and -q): the
width it is given, host names in full, colour as NO_COLOR and --color say; and the metrics of
an audit that failed (rocm_fleet.audit.metrics), read back by prometheus_client's parsers.

The rows are gather's, over harness hosts (``fleet_rows``, conftest.py); the
command runs in a child process (loading an inventory monkey-patches the process for gevent).
"""

from __future__ import annotations

import io
import re
from dataclasses import replace

import pytest

from rocm_fleet.audit import metrics
from rocm_fleet.audit import screens as audit_screens

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
LONG = "gpu-node-0042.rack-17.hall-b.research-cluster.example.org"  # 57 characters


def long_named(rows):
    """The rows with the drifted host given a long fully qualified name."""
    return [replace(row, host=LONG) if row.host.startswith("drifty.") else row for row in rows]


@pytest.mark.parametrize("width", [72, 80, 100, 160])
def test_the_summary_fits_the_width_it_is_given_with_host_names_in_full(fleet_rows, width):
    rows = long_named(fleet_rows)
    text = audit_screens.render_summary(rows, colour=True, width=width)
    lines = [ANSI.sub("", line) for line in text.splitlines()]
    assert max(len(line) for line in lines) <= width, max(lines, key=len)
    summary = next(i for i, line in enumerate(lines) if line.startswith("5 hosts: "))
    starts = [line.split()[0] for line in lines[1:summary] if line[:1] != " "]
    assert starts == [row.host for row in rows]  # every name whole, none clipped with "…"
    # the drift stays under its host, wrapped to the width
    drifty = lines.index(next(line for line in lines if line.startswith(LONG)))
    under = lines[drifty + 1 : drifty + 3]
    assert under[0].startswith("  ! REBOOT PENDING: pending: linux-image"), under
    assert under[1].startswith("  ! ROCM APT REPOSITORY: Pin AMD"), under


def test_a_wide_terminal_shows_the_columns_unclipped(fleet_rows):
    text = audit_screens.render_summary(fleet_rows, width=200)
    assert "…" not in text.splitlines()[1]
    narrow = audit_screens.render_summary(long_named(fleet_rows), width=72)
    assert "…" in narrow  # the other columns give way to the host name
    tiny = audit_screens.render_summary(long_named(fleet_rows), width=40)
    assert max(len(line) for line in tiny.splitlines()) <= 40, tiny


def test_the_wide_table_is_as_wide_as_it_takes_and_colours_only_when_asked(fleet_rows):
    plain = audit_screens.render_table(fleet_rows)
    assert "\x1b[" not in plain
    lines = plain.splitlines()
    assert len(lines[0]) > 200 and all(line == line.rstrip() for line in lines)
    coloured = audit_screens.render_table(fleet_rows, colour=True)
    assert ANSI.sub("", coloured) == plain


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "color", "env", "colour"),
    [
        (Terminal(), "auto", {}, True),
        (Terminal(), "auto", {"NO_COLOR": "1"}, False),
        (Terminal(), "auto", {"TERM": "dumb"}, False),
        (io.StringIO(), "auto", {}, False),  # a pipe, a file
        (io.StringIO(), "always", {"NO_COLOR": "1"}, True),  # the option wins over the variable
        (Terminal(), "never", {}, False),
        (io.StringIO(), "auto", {"FORCE_COLOR": "1"}, True),
        (Terminal(), "auto", {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),  # NO_COLOR wins
    ],
    ids=["terminal", "NO_COLOR", "dumb terminal", "pipe", "always", "never", "FORCE_COLOR",
         "NO_COLOR over FORCE_COLOR"],
)  # fmt: skip
def test_colour_follows_color_and_no_color(monkeypatch, stream, color, env, colour):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert audit_screens.screen_for(stream, color).colour is colour


def test_the_width_is_columns_or_100_off_a_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "132")
    assert audit_screens.screen_for(io.StringIO()).width == 132
    monkeypatch.delenv("COLUMNS")
    assert audit_screens.screen_for(io.StringIO()).width == 100


# --- the metrics of an audit that failed -----------------------------------------------------


def test_a_failed_audit_on_stdout_says_so_in_openmetrics():
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    text = metrics.render_failure("openmetrics", now=1764460800.5, last_success=1764457200)
    assert text.endswith("# EOF\n")
    found = {f.name: f for f in text_string_to_metric_families(text)}
    assert found["rocm_fleet_audit_success"].samples[0].value == 0
    assert found["rocm_fleet_audit_last_success_timestamp_seconds"].unit == "seconds"
    assert found["rocm_fleet_audit_timestamp_seconds"].samples[0].value == 1764460800.5
    never = metrics.render_failure("openmetrics", now=1764460800, last_success=None)
    assert "rocm_fleet_audit_last_success_timestamp_seconds " not in never  # unknown: absent


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("rocm_fleet_audit_last_success_timestamp_seconds 1764457200\n", 1764457200.0),
        ("# TYPE x gauge\nrocm_fleet_audit_last_success_timestamp_seconds{} 1.5e9\n# EOF\n",
         1.5e9),
        ("rocm_fleet_audit_last_success_timestamp_seconds NaN\n", None),
        ("rocm_fleet_audit_last_success_timestamp_seconds_other 5\n", None),
        ("garbage", None),
    ],
)  # fmt: skip
def test_the_last_success_is_read_back_from_the_previous_file(tmp_path, text, found):
    path = tmp_path / "rocm_fleet.prom"
    path.write_text(text)
    assert metrics.last_success(path) == found
    assert metrics.last_success(tmp_path / "none.prom") is None
