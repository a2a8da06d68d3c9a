"""``--dry --diff`` (model.changes, engine.diffs, the apt and file operations): what a plan
would change in detail, the packages with their versions and each file's unified diff; secrets
never shown, a host's text made visible, nothing read for it without ``--diff`` or when the
host is as wanted."""

from __future__ import annotations

import logging

from pyinfra.facts.server import TmpDir

from rocm_fleet.engine.diffs import changes_of
from rocm_fleet.facts.apt import CandidateVersions, InstalledPackages
from rocm_fleet.facts.files import FileDigest, FileText
from rocm_fleet.model import matrix, paths
from rocm_fleet.model.changes import SECRET, PackageChange, file_change
from rocm_fleet.model.secrets import Secret
from rocm_fleet.operations import apt, files
from unit.opcases import run_op
from unit.surveys import SurveyHost, changed, converged_survey, digest, fact_key, plan, script_call

PIN = paths.ROCM_PIN
OLD_PIN = "Package: *\nPin: origin repo.radeon.com\nPin-Priority: 500\n"
NEW_PIN = "Package: *\nPin: origin repo.radeon.com\nPin-Priority: 600\n"
# Versions of AMD's 6.4.3 and 6.4.1 packages (repo.radeon.com/rocm/apt/6.4.3 and 6.4.1, jammy)
ROCM_643 = {"rocm-hip-runtime": "6.4.3.60403-128~22.04", "rocm-core": "6.4.3.60403-128~22.04"}
ROCM_641 = {"rocm-hip-runtime": "6.4.1.60401-83~22.04", "rocm-core": "6.4.1.60401-83~22.04"}


# --- rendering (pure) -------------------------------------------------------------------------


def test_a_modified_file_is_a_unified_diff_of_the_hosts_text_and_the_deploys():
    change = file_change(PIN, OLD_PIN, NEW_PIN)
    assert change.lines() == [
        f"modify {PIN}",
        f"--- {PIN}",
        f"+++ {PIN}",
        "@@ -1,3 +1,3 @@",
        " Package: *",
        " Pin: origin repo.radeon.com",
        "-Pin-Priority: 500",
        "+Pin-Priority: 600",
    ]
    assert change.to_json() == {"action": "modify", "path": PIN, "diff": change.lines()[1:]}


def test_a_new_file_is_diffed_from_dev_null_and_a_missing_final_newline_is_said():
    assert file_change("/etc/x", None, "a\nb").lines() == [
        "create /etc/x", "--- /dev/null", "+++ /etc/x", "@@ -0,0 +1,2 @@", "+a", "+b",
        "\\ No newline at end of file",
    ]  # fmt: skip


def test_a_mode_change_is_said_with_the_same_text():
    assert file_change("/etc/x", "a\n", "a\n", modes=("600", "644")).lines() == [
        "modify /etc/x",
        "mode 600 -> 644",
    ]


def test_a_secrets_file_shows_no_line_of_either_text():
    change = file_change(paths.PIP_NETRC, "machine old password hunter1\n",
                         "machine new password hunter2\n", secret=True)  # fmt: skip
    assert change.lines() == [f"modify {paths.PIP_NETRC} {SECRET}"]
    assert change.to_json() == {"action": "modify", "path": paths.PIP_NETRC, "secret": True}


def test_a_hosts_control_characters_and_bidi_marks_are_written_out():
    hostile = "deb http://x \x1b[2J\x1b]0;owned\x07 main\u202e\r\n"
    lines = file_change(paths.ROCM_SOURCE, hostile, "deb http://x main\n").lines()
    assert "-deb http://x \\x1b[2J\\x1b]0;owned\\x07 main\\u202e\\r" in lines
    assert not any(c in "".join(lines) for c in "\x1b\x07\u202e\r")


def test_package_lines_say_what_moves_from_which_version_to_which():
    assert [
        PackageChange("install", "rocm-core", new="6.4.3.60403-128~22.04").line(),
        PackageChange("upgrade", "rocm-core", ROCM_641["rocm-core"], ROCM_643["rocm-core"]).line(),
        PackageChange("remove", "amdgpu-dkms", "1:6.12.12.60403-2194681.22.04").line(),
        PackageChange("install", "dkms").line(),
        PackageChange("install", "torch", new="2.9.1+rocm6.4", venv="/opt/venv").line(),
        PackageChange("remove", "evil\x1b[2J", "1").line(),
    ] == [
        "install rocm-core 6.4.3.60403-128~22.04",
        "upgrade rocm-core 6.4.1.60401-83~22.04 -> 6.4.3.60403-128~22.04",
        "remove amdgpu-dkms 1:6.12.12.60403-2194681.22.04",
        "install dkms ?",
        "install torch 2.9.1+rocm6.4 (pip, /opt/venv)",
        "remove evil\\x1b[2J 1",
    ]  # fmt: skip


# --- operations: read for the diff only under --diff, only what differs -------------------------


def test_a_drifted_file_is_read_and_diffed_under_diff_only(caplog):
    facts = {fact_key(FileDigest, path=PIN): digest(OLD_PIN), FileText: OLD_PIN}
    quiet = run_op(files.text_file, facts, path=PIN, content=NEW_PIN)
    assert FileText not in quiet.facts_read and changes_of(quiet.state, "node") == []
    caplog.set_level(logging.INFO, logger="pyinfra")
    shown = run_op(files.text_file, facts, diff=True, path=PIN, content=NEW_PIN)
    assert shown.facts_read == [FileDigest, FileText]
    assert shown.scripts == quiet.scripts  # the same commands
    assert changes_of(shown.state, "node") == [file_change(PIN, OLD_PIN, NEW_PIN)]
    logged = [r.getMessage() for r in caplog.records]
    assert f"Will modify {PIN}" in logged[0]
    assert "  \x1b[31m-Pin-Priority: 500\x1b[0m" in logged
    assert "  \x1b[32m+Pin-Priority: 600\x1b[0m" in logged


def test_a_link_on_the_host_is_not_read_through():
    facts = {
        fact_key(FileDigest, path=PIN): digest("root:$y$j9T$...:20000:0:99999:7:::\n"),
        FileText: None,
    }  # fmt: skip (FileText's answer for a link)
    result = run_op(files.text_file, facts, diff=True, path=PIN, content=NEW_PIN)
    assert [c.lines() for c in changes_of(result.state, "node")] == [
        [f"modify {PIN}", "(a link on the host: not read)"]
    ]


def test_file_text_is_the_files_lines_or_none_for_a_link_or_no_file():
    assert FileText().process(["/opt/rocm/lib", "/opt/rocm/lib64"]) == (
        "/opt/rocm/lib\n/opt/rocm/lib64\n"
    )
    assert FileText().process([]) == ""
    assert FileText().process(["__absent"]) is None


def test_a_file_as_wanted_reads_nothing_more_under_diff():
    facts = {fact_key(FileDigest, path=PIN): digest(NEW_PIN)}
    result = run_op(files.text_file, facts, diff=True, path=PIN, content=NEW_PIN)
    assert result.facts_read == [FileDigest] and changes_of(result.state, "node") == []


def test_an_operation_run_after_planning_shows_nothing_again():
    facts = {fact_key(FileDigest, path=PIN): digest(OLD_PIN)}
    result = run_op(files.text_file, facts, executing=True, diff=True, path=PIN, content=NEW_PIN)
    assert result.facts_read == [FileDigest] and changes_of(result.state, "node") == []


def test_an_uploaded_secret_is_never_read_nor_shown(caplog):
    caplog.set_level(logging.INFO, logger="pyinfra")
    facts = {FileDigest: digest("machine old login a password hunter1\n", "600"), TmpDir: "/tmp"}
    secret = "machine download.pytorch.org login a password hunter2\n"
    result = run_op(files.uploaded_file, facts, diff=True, path=paths.PIP_NETRC,
                    content=Secret(secret), mode="600")  # fmt: skip
    assert FileText not in result.facts_read
    assert changes_of(result.state, "node") == [file_change(paths.PIP_NETRC, "", "", secret=True)]
    assert "hunter" not in caplog.text and f"{paths.PIP_NETRC} {SECRET}" in caplog.text


def test_a_removed_file_is_named_not_read():
    result = run_op(files.text_file, {FileDigest: digest("x\n")}, diff=True,
                    path=paths.APT_AUTH, present=False)  # fmt: skip
    assert result.facts_read == [FileDigest]
    assert [c.lines() for c in changes_of(result.state, "node")] == [[f"remove {paths.APT_AUTH}"]]


def test_release_packages_show_the_versions_release_switch_would_pick():
    installed = {**ROCM_641, "rocm-smi-lib": "7.5.0.60401-83~22.04", "curl": "7.88.1-10+deb12u14"}
    candidates = {
        "rocm-hip-runtime": ROCM_643["rocm-hip-runtime"],
        "rocm-core": ROCM_643["rocm-core"],
    }
    release = matrix.release("6.4.3")
    facts = {InstalledPackages: installed, CandidateVersions: candidates}
    result = run_op(apt.release_packages, facts, diff=True, packages=["rocm-hip-runtime"],
                    release=release)  # fmt: skip
    asked = [read for read in result.reads if read.fact is CandidateVersions]
    assert asked == [fact_key(CandidateVersions,
                              packages=["rocm-hip-runtime", "rocm-core", "rocm-smi-lib"],
                              version_regex=release.stream.version_regex(release))]  # fmt: skip
    assert [c.line() for c in changes_of(result.state, "node")] == [
        "upgrade rocm-hip-runtime 6.4.1.60401-83~22.04 -> 6.4.3.60403-128~22.04",
        "upgrade rocm-core 6.4.1.60401-83~22.04 -> 6.4.3.60403-128~22.04",
        "remove rocm-smi-lib 7.5.0.60401-83~22.04",  # 6.4.3 has none of it: purged
    ]


def test_debian_packages_ask_apt_only_for_the_missing_ones_under_diff():
    facts = {InstalledPackages: {"curl": "7.88.1-10+deb12u14"},
             CandidateVersions: {"gnupg": "2.2.40-1.1+deb12u1"}}  # fmt: skip
    quiet = run_op(apt.debian_packages, facts, packages=["curl", "gnupg", "dkms"])
    assert quiet.facts_read == [InstalledPackages]
    shown = run_op(apt.debian_packages, facts, diff=True, packages=["curl", "gnupg", "dkms"])
    assert shown.reads[-1] == fact_key(
        CandidateVersions, packages=["gnupg", "dkms"], version_regex=None
    )
    assert [c.line() for c in changes_of(shown.state, "node")] == [
        "install gnupg 2.2.40-1.1+deb12u1", "install dkms ?"  # no source for it yet
    ]  # fmt: skip


# --- a host's plan under --diff -------------------------------------------------------------

DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip


def drifted_host() -> SurveyHost:
    """A converged host whose pin says another priority and whose rocm-core is 6.4.1's."""
    survey = converged_survey(DATA, "debian-12")
    fresh = plan(DATA, SurveyHost(changed(survey, files={PIN: None})))
    _, (_, _, wanted) = script_call(fresh.find("Pin AMD's repository").commands[0])
    old = wanted.replace("Pin-Priority: 600", "Pin-Priority: 500")
    assert old != wanted
    packages = {**survey.packages, "rocm-core": ROCM_641["rocm-core"]}
    host = SurveyHost(
        changed(survey, files={PIN: digest(old)}, packages=packages),
        other={fact_key(FileText, path=PIN): old,
               CandidateVersions: {"rocm-core": ROCM_643["rocm-core"]}},
    )  # fmt: skip
    return host


def test_a_drifted_hosts_plan_shows_its_package_and_file_diffs(caplog):
    caplog.set_level(logging.INFO, logger="pyinfra")
    host = drifted_host()
    planned = plan(DATA, host, diff=True)
    shown = changes_of(planned.state, "node")
    assert [c.to_json()["action"] for c in shown] == ["modify", "upgrade"]
    assert shown[0].diff[-2:] == ("-Pin-Priority: 500", "+Pin-Priority: 600")
    assert shown[1].line() == "upgrade rocm-core 6.4.1.60401-83~22.04 -> 6.4.3.60403-128~22.04"
    # one read for the file that differs, one for apt's versions: nothing else
    assert [read.fact for read in host.extra_reads] == [FileText, CandidateVersions]
    assert f"[node] Will modify {PIN}" in caplog.text
    assert "[node] Will upgrade rocm-core 6.4.1.60401-83~22.04 -> 6.4.3.60403-128~22.04" in (
        caplog.text
    )
    without = plan(DATA, drifted_host())
    assert without.changes == planned.changes and changes_of(without.state, "node") == []


def test_a_converged_hosts_plan_reads_nothing_beyond_the_survey_under_diff():
    host = SurveyHost(converged_survey(DATA, "debian-12"))
    planned = plan(DATA, host, diff=True)
    assert planned.changes == [] and host.extra_reads == []
    assert changes_of(planned.state, "node") == []


def test_the_dkms_driver_shows_the_headers_it_installs_and_a_newer_kernel_backports_version():
    from rocm_fleet.operations import kernel

    # Debian 12's headers and its backports kernel (deb.debian.org bookworm, bookworm-backports)
    facts = {InstalledPackages: {"amdgpu-dkms": "1:6.12.12.60403-2194681.22.04"},
             CandidateVersions: {"linux-headers-6.1.0-31-amd64": "6.1.128-1"}}  # fmt: skip
    result = run_op(kernel.dkms_driver, facts, diff=True, driver="amdgpu-dkms",
                    packages=["linux-headers-6.1.0-31-amd64", "amdgpu-dkms"],
                    ledger=paths.DRIVER_LEDGER)  # fmt: skip
    assert [c.line() for c in changes_of(result.state, "node")] == [
        "install linux-headers-6.1.0-31-amd64 6.1.128-1"
    ]
    assert result.reads[-1] == fact_key(
        CandidateVersions, packages=["linux-headers-6.1.0-31-amd64"], version_regex=None
    )
