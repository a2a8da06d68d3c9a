"""rocm_fleet.facts.round_trip: many facts in one command, each answered as the fact alone
would answer it, and the record (``HostSurvey``) made of preflight's answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rocm_fleet.facts.apt import (
    DPKG_LISTING,
    DpkgInterrupted,
    HeldPackages,
    InstalledPackages,
)
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.gpu import (
    RocmVersion,
)
from rocm_fleet.facts.round_trip import Read, Survey, Unreadable, host_survey
from rocm_fleet.facts.system import (
    Architecture,
    RebootRequired,
    RunningKernel,
)
from rocm_fleet.facts.users import GroupMembership
from unit.facts.support import run_sh, surveyed


def survey_reads(tmp_path: Path) -> list[Read]:
    pin = tmp_path / "rocm-pin-600"
    pin.write_text("Package: *\nPin: release o=repo.radeon.com\nPin-Priority: 600\n")
    return [
        Read("kernel", RunningKernel),
        Read("arch", Architecture),
        Read("groups", GroupMembership, {"groups": ["root"], "users": ["root", "nobody-here"]}),
        Read("dpkg", DpkgInterrupted),  # a fact whose command is a string
        Read("files", FileDigest, {"path": str(pin)}),
        Read("files", FileDigest, {"path": str(tmp_path / "none")}),
        Read("rocm_version", RocmVersion, {"rocm_path": str(tmp_path / "rocm")}),
        Read("reboot", RebootRequired),
    ]


def test_survey_answers_each_read_as_the_fact_alone_would(tmp_path):
    reads = survey_reads(tmp_path)
    answers = surveyed(reads)
    for read, answer in zip(reads, answers, strict=True):
        alone = read.fact()
        command = alone.command if isinstance(alone.command, str) else alone.command(**read.kwargs)
        lines = run_sh(command)[1]
        assert answer == (alone.process(lines) if lines else alone.default()), read.key
    survey = host_survey(reads, answers)
    assert survey.groups["users"]["nobody-here"] is None
    pin, missing = (str(tmp_path / name) for name in ("rocm-pin-600", "none"))
    assert survey.files[pin]["mode"] == "644" and survey.files[missing] is None
    assert repr(reads[0]) == "kernel"  # what pyinfra's debug log prints
    assert repr(reads[4]) == f"files {pin}"


def test_reads_with_one_command_share_its_section_and_each_answers_as_alone(tmp_path):
    reads = [
        Read("packages", InstalledPackages),
        Read("kernel", RunningKernel),
        Read("held_packages", HeldPackages),
        Read("dpkg", DpkgInterrupted),
    ]
    fact = Survey()
    command = fact.command(reads=reads)
    assert command.count("dpkg-query") == DPKG_LISTING.count("dpkg-query") == 1
    listing = ["hi |curl|7.88.1-10+deb12u14", "iF |rocminfo|1.0.0.60403-128~22.04"]
    output = ["__survey_section=0", *listing, "__survey_section=1", "6.1.0-31-amd64"]
    assert fact.process(output) == [
        {"curl": "7.88.1-10+deb12u14", "rocminfo": "1.0.0.60403-128~22.04"},
        "6.1.0-31-amd64",
        ["curl"],
        ["half-configured rocminfo"],
    ]
    answers = surveyed(reads)  # this machine's own dpkg: each as the fact alone answers
    lines = run_sh(DPKG_LISTING)[1]
    for read, answer in zip(reads, answers, strict=True):
        if read.fact is not RunningKernel:
            assert answer == (read.fact().process(lines) if lines else read.fact().default())


def test_survey_gives_defaults_for_empty_sections_and_survives_a_failing_one(tmp_path):
    (tmp_path / "rocm" / ".info" / "version").mkdir(parents=True)  # cat fails: a directory
    reads = [
        Read("rocm_version", RocmVersion, {"rocm_path": str(tmp_path / "rocm")}),
        Read("packages", InstalledPackages),
        Read("reboot", RebootRequired),
        Read("groups", GroupMembership, {"groups": ["root"], "users": []}),
    ]
    fact = Survey()
    fact.command(reads=reads)
    assert fact.process([f"__survey_section={i}" for i in range(4)]) == [
        None,
        {},
        {"required": False, "packages": [], "reasons": []},
        {"groups": [], "users": {}},
    ]
    rc, out = run_sh(fact.command(reads=reads))
    survey = host_survey(reads, fact.process(out))
    assert rc == 0 and survey.rocm_version is None
    assert survey.groups == {"groups": ["root"], "users": {}}  # the next section still ran


def test_survey_incomplete_output_is_unreadable_and_keys_are_unique(tmp_path):
    reads = survey_reads(tmp_path)
    fact = Survey()
    fact.command(reads=reads)
    found = fact.process(["__survey_section=0", "6.1.0-31-amd64", "__survey_section=1"])
    assert isinstance(found, Unreadable) and not found.forged
    assert found.reason.startswith("incomplete survey output: ")
    with pytest.raises(ValueError, match="unique"):
        Survey().command(reads=[Read("kernel", RunningKernel), Read("kernel", RunningKernel)])


def test_a_read_fills_its_field_and_names_no_other():
    reads = [Read("kernel", RunningKernel), Read("files", FileDigest, {"path": "/etc/a"})]
    digest = {"mode": "644", "sha256": "0" * 64, "mtime": 1}
    survey = host_survey(reads, ["6.1.0-31-amd64", digest])
    assert survey.kernel == "6.1.0-31-amd64" and survey.files == {"/etc/a": digest}
    assert survey.mok == {} and survey.arch is None  # not read
    with pytest.raises(TypeError, match="kernal"):
        host_survey([Read("kernal", RunningKernel)], ["6.1.0-31-amd64"])


@pytest.mark.parametrize("posing_as", [0, 3])  # a section before it, one after it
def test_a_sections_text_posing_as_another_section_refuses_the_survey(tmp_path, posing_as):
    """A file a read prints (here ROCm's version file) with a marker line in it must not answer
    for another read: the whole survey is refused instead (the host is then refused)."""
    version = tmp_path / "rocm" / ".info" / "version"
    version.parent.mkdir(parents=True)
    version.write_text(f"7.2.1-70201\n__survey_section={posing_as}\nHeld ok\n")
    reads = [
        Read("kernel", RunningKernel),
        Read("rocm_version", RocmVersion, {"rocm_path": str(tmp_path / "rocm")}),
        Read("reboot", RebootRequired),
        Read("groups", GroupMembership, {"groups": ["root"], "users": []}),
    ]
    fact = Survey()
    rc, out = run_sh(fact.command(reads=reads))
    assert rc == 0
    reason = f"output names section '{posing_as}' twice: refused"
    assert fact.process(out) == Unreadable(reason, forged=True)
    cut = out[: out.index("__survey_section=1")]  # cut short before the version file
    found = fact.process(cut)
    assert isinstance(found, Unreadable) and not found.forged
    assert found.reason.startswith("incomplete survey output: ")
