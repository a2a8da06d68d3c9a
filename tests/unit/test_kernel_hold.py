"""rocm_kernel_hold: which kernel meta packages are held (from dpkg's own list), what changes
to get there (only rocm-fleet's own holds are ever released), the operation and its script,
the plan (first run, second run, the setting gone, rocm_state: absent), and a kernel move
rocm-fleet plans itself (rocm_kernel_backports) under a hold."""

from __future__ import annotations

import logging
import shutil

import pytest
from pyinfra.facts.server import KernelVersion

from rocm_fleet.facts.apt import DpkgInterrupted, HeldPackages, InstalledPackages
from rocm_fleet.facts.files import Ledger
from rocm_fleet.model import paths
from rocm_fleet.model.host_survey import HostSurvey
from rocm_fleet.model.kernels import KernelHold, kernel_hold, kernel_meta_packages
from rocm_fleet.operations import kernel
from unit.opcases import run_op
from unit.surveys import (
    SurveyHost,
    changed,
    converged_survey,
    fact_key,
    fresh_survey,
    plan,
    script_call,
)

LEDGER = paths.KERNEL_HOLD_LEDGER
HOLD = "Kernel | Hold the kernel meta packages (rocm_kernel_hold)"
DKMS = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "rocm_driver": "dkms",
        "pytorch_install": False}  # fmt: skip
HELD_DKMS = {**DKMS, "rocm_kernel_hold": True}

# `dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Version}\n'` (InstalledPackages) on a
# Debian 12 host that took the backports kernel, and on an Ubuntu 24.04 host with the GA and
# HWE kernels and an OEM kernel; "rc" lines are removed packages that left config files.
DEBIAN_12 = """\
ii |linux-base|4.9
ii |linux-compiler-gcc-12-x86|6.1.128-1
ii |linux-headers-6.12.38+deb12-amd64|6.12.38-1~bpo12+1
ii |linux-headers-6.12.38+deb12-common|6.12.38-1~bpo12+1
ii |linux-headers-amd64|6.12.38-1~bpo12+1
ii |linux-image-6.1.0-31-amd64|6.1.128-1
ii |linux-image-6.12.38+deb12-amd64|6.12.38-1~bpo12+1
ii |linux-image-amd64|6.12.38-1~bpo12+1
ii |linux-kbuild-6.12.38+deb12|6.12.38-1~bpo12+1
ii |linux-libc-dev:amd64|6.1.128-1
rc |linux-image-6.1.0-28-amd64|6.1.119-1
rc |linux-image-cloud-amd64|6.1.119-1
ii |firmware-amd-graphics|20230210-5
""".splitlines()
UBUNTU_24 = """\
ii |linux-base|4.5ubuntu9
ii |linux-firmware|20240318.git3b128b60-0ubuntu2.9
ii |linux-generic|6.8.0-50.51
ii |linux-generic-hwe-24.04|6.14.0-37.37~24.04.1
ii |linux-headers-6.8.0-50|6.8.0-50.51
ii |linux-headers-6.8.0-50-generic|6.8.0-50.51
ii |linux-headers-generic|6.8.0-50.51
ii |linux-headers-generic-hwe-24.04|6.14.0-37.37~24.04.1
ii |linux-headers-oem-24.04b|6.11.0-1015.15
ii |linux-image-6.8.0-50-generic|6.8.0-50.51
ii |linux-image-generic|6.8.0-50.51
ii |linux-image-generic-hwe-24.04|6.14.0-37.37~24.04.1
ii |linux-image-oem-24.04b|6.11.0-1015.15
ii |linux-modules-extra-6.8.0-50-generic|6.8.0-50.51
ii |linux-oem-24.04b|6.11.0-1015.15
ii |linux-tools-generic-hwe-24.04|6.14.0-37.37~24.04.1
ii |linux-libc-dev:amd64|6.8.0-50.51
""".splitlines()
DEBIAN_METAS = ["linux-headers-amd64", "linux-image-amd64"]


def installed(lines: list[str]) -> dict[str, str]:
    return InstalledPackages().process(lines)


# --- which packages: the meta packages dpkg lists, nothing guessed ------------------------------


def test_the_meta_packages_are_read_from_dpkgs_list():
    assert kernel_meta_packages(installed(DEBIAN_12)) == DEBIAN_METAS
    assert kernel_meta_packages(installed(UBUNTU_24)) == [
        "linux-generic",
        "linux-generic-hwe-24.04",
        "linux-headers-generic",
        "linux-headers-generic-hwe-24.04",
        "linux-headers-oem-24.04b",
        "linux-image-generic",
        "linux-image-generic-hwe-24.04",
        "linux-image-oem-24.04b",
        "linux-oem-24.04b",
    ]
    # A removed meta package (config files left) is not held; nor is a name only near one.
    assert kernel_meta_packages(installed(["rc |linux-image-amd64|6.1.119-1"])) == []
    near = [
        "linux-image-amd64-dbg",
        "linux-image-amd64-signed-template",
        "xlinux-generic",
        "linux-generic-hwe-24.04x",
        "linux-tools-generic",
        "linux-oem-24.04b-tools",
    ]
    assert kernel_meta_packages(near) == []


# `dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Version}\n'` (DPKG_LISTING, the
# command HeldPackages shares, dpkg 1.21.22) on a host with i386 added: want h is a hold;
# dpkg's database keeps names Debian policy refuses (an old local build's `my_tool`, a
# one-letter `z`, an upper-case name dpkg folded). Holds by the admin, all of them.
HELD_OUTPUT = """\
ii |adduser|3.134
hi |curl|7.88.1-10+deb12u14
ii |libc6|2.36-9+deb12u10
hi |libstdc++6|12.2.0-14+deb12u1
hi |linux-headers-amd64|6.1.128-1
ii |linux-image-6.1.0-31-amd64|6.1.128-1
hi |linux-image-amd64|6.1.128-1
hi |localtool|1.0
hi |my_tool|0.3-1
rc |nano|7.2-1+deb12u1
pc |oldpkg|1.2-1
hi |z|1.0
""".splitlines()
# The entries of /var/lib/dpkg/status behind it, for the real dpkg-query (DPKG_ADMINDIR):
# the headers meta package marked Multi-Arch: same (${Package} prints it unqualified); a
# selection of a package not installed ("gone") is not listed.
DPKG_STATUS = """\
Package: adduser
Status: install ok installed
Maintainer: Debian Adduser Developers <adduser@packages.debian.org>
Architecture: all
Version: 3.134
Description: add and remove users and groups

Package: curl
Status: hold ok installed
Maintainer: Alessandro Ghedini <ghedo@debian.org>
Architecture: amd64
Version: 7.88.1-10+deb12u14
Description: command line tool for transferring data with URL syntax

Package: libc6
Status: install ok installed
Multi-Arch: same
Maintainer: GNU Libc Maintainers <debian-glibc@lists.debian.org>
Architecture: amd64
Version: 2.36-9+deb12u10
Description: GNU C Library: Shared libraries

Package: libstdc++6
Status: hold ok installed
Priority: optional
Section: libs
Installed-Size: 2729
Maintainer: Debian GCC Maintainers <debian-gcc@lists.debian.org>
Architecture: i386
Multi-Arch: same
Source: gcc-12
Version: 12.2.0-14+deb12u1
Description: GNU Standard C++ Library v3

Package: linux-headers-amd64
Status: hold ok installed
Multi-Arch: same
Maintainer: Debian Kernel Team <debian-kernel@lists.debian.org>
Architecture: amd64
Version: 6.1.128-1
Description: Header files for Linux amd64 configuration (meta-package)

Package: linux-image-6.1.0-31-amd64
Status: install ok installed
Maintainer: Debian Kernel Team <debian-kernel@lists.debian.org>
Architecture: amd64
Version: 6.1.128-1
Description: Linux 6.1 for 64-bit PCs (signed)

Package: linux-image-amd64
Status: hold ok installed
Maintainer: Debian Kernel Team <debian-kernel@lists.debian.org>
Architecture: amd64
Version: 6.1.128-1
Description: Linux for 64-bit PCs (meta-package)

Package: my_tool
Status: hold ok installed
Maintainer: Site Admin <admin@example.org>
Architecture: amd64
Version: 0.3-1
Description: a site tool from an old local build

Package: LocalTool
Status: hold ok installed
Maintainer: Site Admin <admin@example.org>
Architecture: all
Version: 1.0
Description: another, named before dpkg folded case

Package: nano
Status: deinstall ok config-files
Maintainer: Jordi Mallach <jordi@debian.org>
Architecture: amd64
Version: 7.2-1+deb12u1
Config-Version: 7.2-1+deb12u1
Description: small, friendly text editor

Package: oldpkg
Status: purge ok config-files
Maintainer: Site Admin <admin@example.org>
Architecture: all
Version: 1.2-1
Config-Version: 1.2-1
Description: removed, its configuration left

Package: z
Status: hold ok installed
Maintainer: Site Admin <admin@example.org>
Architecture: all
Version: 1.0
Description: a one-letter local package

Package: gone
Status: hold ok not-installed
Architecture: amd64
"""
HELD = ["curl", "libstdc++6", "linux-headers-amd64", "linux-image-amd64", "localtool", "my_tool",
        "z"]  # fmt: skip


def test_held_packages_from_dpkgs_selections():
    assert HeldPackages().process(HELD_OUTPUT) == HELD
    assert HeldPackages().process(["ii |base-files|12.4+deb12u10", ""]) == []
    # A name with its architecture qualifier (as ${binary:Package} prints it) is the name.
    assert HeldPackages().process(["hi |libstdc++6:i386|12.2.0-14+deb12u1"]) == ["libstdc++6"]
    assert HeldPackages().process([]) == []


# --- what changes ---------------------------------------------------------------------------------


def test_first_hold_then_no_change():
    first = kernel_hold(DEBIAN_METAS, held=[], ledger=[])
    assert first == KernelHold(hold=tuple(DEBIAN_METAS), release=(), record=tuple(DEBIAN_METAS),
                               recorded=())  # fmt: skip
    assert first.changes
    assert first.describe() == "hold linux-headers-amd64, linux-image-amd64"
    second = kernel_hold(DEBIAN_METAS, held=DEBIAN_METAS, ledger=DEBIAN_METAS)
    assert not second.changes and second.describe() == ""


def test_an_admins_hold_is_never_recorded_nor_released():
    # The admin held linux-image-amd64 before: only the headers are rocm-fleet's.
    on = kernel_hold(DEBIAN_METAS, held=["linux-image-amd64"], ledger=[])
    assert (on.hold, on.record) == (("linux-headers-amd64",), ("linux-headers-amd64",))
    # Setting off: rocm-fleet releases its own, the admin's stays.
    off = kernel_hold([], held=DEBIAN_METAS, ledger=["linux-headers-amd64"])
    assert (off.hold, off.release, off.record) == ((), ("linux-headers-amd64",), ())
    assert off.describe() == "release rocm-fleet's hold on linux-headers-amd64"
    # Nothing of rocm-fleet's: nothing to do, whatever the admin holds.
    assert not kernel_hold([], held=DEBIAN_METAS, ledger=[]).changes


def test_a_hold_of_ours_the_admin_released_is_placed_again_or_forgotten():
    # Setting on: the desired state is the whole state, the hold comes back (and stays ours).
    on = kernel_hold(DEBIAN_METAS, held=["linux-image-amd64"], ledger=DEBIAN_METAS)
    assert (on.hold, on.release, on.record) == (("linux-headers-amd64",), (), tuple(DEBIAN_METAS))
    # Setting off: nothing to release there, only the record to drop (a later hold of that
    # name is the admin's).
    off = kernel_hold([], held=["linux-image-amd64"], ledger=DEBIAN_METAS)
    assert (off.hold, off.release, off.record) == ((), ("linux-image-amd64",), ())
    gone = kernel_hold([], held=[], ledger=DEBIAN_METAS)
    assert (gone.release, gone.record, gone.changes) == ((), (), True)
    assert gone.describe() == (
        "forget holds no longer in place: linux-headers-amd64, linux-image-amd64"
    )


BAD_NAMES = ["linux-image-amd64; reboot", "-linux", "Linux-Image", "linux image", "a",
             "x\nlinux-generic", "linux-image-amd64 "]  # fmt: skip


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_a_name_off_debians_grammar_to_hold_or_recorded_is_refused(bad):
    with pytest.raises(ValueError, match="a kernel meta package to hold, is not a Debian"):
        kernel_hold([bad], [], [])
    with pytest.raises(ValueError, match=f"a line of {LEDGER} .* is not a Debian package name"):
        kernel_hold([], [], [bad])
    with pytest.raises(ValueError, match="a line of /tmp/ledger "):
        kernel_hold([], [bad], [bad], ledger_path="/tmp/ledger")


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_a_hold_of_the_admins_is_only_looked_up_whatever_its_name(bad):
    # Foreign holds never reach apt-mark or the ledger: their names are dpkg's business.
    assert kernel_hold(DEBIAN_METAS, [bad], []).hold == tuple(DEBIAN_METAS)
    assert not kernel_hold([], [bad], []).changes


def test_the_holds_of_a_real_host_hold_the_rest():
    # dpkg's list above: the admin holds both metas (the headers Multi-Arch: same) among
    # odd names; nothing is rocm-fleet's to do but a meta package not held yet.
    held = HeldPackages().process(HELD_OUTPUT)
    assert not kernel_hold(DEBIAN_METAS, held, []).changes
    change = kernel_hold([*DEBIAN_METAS, "linux-image-cloud-amd64"], held, [])
    assert (change.hold, change.record) == (("linux-image-cloud-amd64",),) * 2


# --- the operation --------------------------------------------------------------------------------


def facts(held: list[str], ledger: list[str]) -> dict:
    return {HeldPackages: held, fact_key(Ledger, path=LEDGER): ledger, Ledger: ledger}


def holds(held: list[str], ledger: list[str], installed: list[str], hold=True, coming=()):
    return run_op(
        kernel.kernel_holds,
        {InstalledPackages: {name: "1" for name in installed}, **facts(held, ledger)},
        hold=hold,
        coming=list(coming),
        ledger=LEDGER,
    )


def test_kernel_holds_operation_passes_each_change_with_its_sign():
    # The image held and recorded earlier; the headers a planned install brings (--dry
    # shows them), and an installed package that isn't a kernel meta package.
    result = holds(["linux-image-amd64"], ["linux-image-amd64"],
                   ["linux-image-amd64", "linux-base"], coming=["linux-headers-amd64"])  # fmt: skip
    assert result.scripts == [
        ("kernel-hold", [LEDGER, "+linux-headers-amd64", "=linux-image-amd64"])
    ]
    off = holds(DEBIAN_METAS, ["linux-headers-amd64"], DEBIAN_METAS, hold=False)
    assert off.scripts == [("kernel-hold", [LEDGER, "-linux-headers-amd64"])]
    same = holds(DEBIAN_METAS, DEBIAN_METAS, DEBIAN_METAS)
    assert (same.commands, same.noops) == (
        [],
        ["kernel packages held by rocm-fleet: linux-headers-amd64, linux-image-amd64"],
    )


def test_kernel_holds_reads_dpkg_when_it_runs():
    """An HWE kernel installed earlier in the run brings its image and headers meta
    packages as dependencies: the operation, run again by pyinfra when it executes, reads
    dpkg's list then and holds them too, so the next run has nothing left to hold."""
    before = holds([], [], ["linux-generic"], coming=["linux-generic-hwe-24.04"])
    assert before.scripts == [
        ("kernel-hold", [LEDGER, "+linux-generic", "+linux-generic-hwe-24.04"])
    ]
    after = run_op(
        kernel.kernel_holds,
        {InstalledPackages: installed(UBUNTU_24), **facts([], [])},
        executing=True,
        hold=True,
        coming=["linux-generic-hwe-24.04"],
        ledger=LEDGER,
    )
    ((_, args),) = after.scripts
    assert "+linux-image-generic-hwe-24.04" in args and "+linux-headers-generic-hwe-24.04" in args


def test_kernel_holds_refuses_a_tampered_ledger_naming_it():
    for hold in (False, True):
        result = holds(["linux-image-amd64"], ["linux-image-amd64", "curl && reboot"],
                       ["linux-image-amd64"], hold=hold)  # fmt: skip
        ((command,), scripts) = (result.commands, result.scripts)
        assert scripts == [] and "exit 1" in str(command)
        assert f"a line of {LEDGER}" in str(command) and "curl && reboot" in str(command)


def test_kernel_holds_passes_on_none_of_the_admins_holds():
    # The host's real hold list (odd names included): the setting on holds the image alone,
    # off releases rocm-fleet's headers alone.
    admins = [name for name in HELD if name != "linux-image-amd64"]
    on = holds(admins, [], ["linux-image-amd64", "my_tool", "z"])
    assert on.scripts == [("kernel-hold", [LEDGER, "+linux-image-amd64"])]
    off = holds(HELD, ["linux-image-amd64"], DEBIAN_METAS, hold=False)
    assert off.scripts == [("kernel-hold", [LEDGER, "-linux-image-amd64"])]


DASH = shutil.which("dash") or shutil.which("sh")


# --- a kernel move rocm-fleet plans, under a hold -------------------------------------------------

BACKPORTS = ["linux-image-amd64", "linux-headers-amd64"]
RUNNING = "6.1.0-31-amd64"
STOCK = {"linux-image-amd64": "6.1.128-1", f"linux-image-{RUNNING}": "6.1.128-1"}


def newer(held: list[str], ledger: list[str]):
    return run_op(
        kernel.newer_kernel,
        {InstalledPackages: STOCK, KernelVersion: RUNNING, **facts(held, ledger)},
        packages=BACKPORTS,
        target_release="bookworm-backports",
        hwe=False,
        hold_ledger=LEDGER,
    )


def test_a_planned_kernel_move_releases_rocm_fleets_hold_for_that_install_alone():
    result = newer(["linux-image-amd64"], ["linux-image-amd64"])
    released = "linux-image-amd64"  # the HELD argument
    assert result.scripts == [
        ("newer-kernel", [RUNNING, "bookworm-backports", "--no-install-recommends", released,
                          *BACKPORTS])
    ]  # fmt: skip
    (command,) = result.commands
    # Held again after the install, also when it fails (an EXIT trap).
    assert 'trap "apt-mark hold $held > /dev/null" EXIT' in str(command)


def test_a_planned_kernel_move_is_refused_under_the_admins_hold():
    result = newer(["linux-image-amd64"], [])
    (command,) = result.commands
    assert result.scripts == []
    text = str(command)
    assert "linux-image-amd64 is on hold (apt-mark showhold), not by rocm-fleet" in text
    assert "apt-mark unhold" in text and "rocm_kernel_backports: never" in text


# --- the plan -------------------------------------------------------------------------------------


def debian_host(**survey_changes) -> HostSurvey:
    survey = fresh_survey("debian-12", kernel=RUNNING)
    survey.packages.update(STOCK)
    survey.packages["linux-headers-amd64"] = "6.1.128-1"
    return changed(survey, **survey_changes)


def test_first_run_holds_the_installed_metas_and_a_second_changes_nothing():
    host = SurveyHost(debian_host())
    planned = plan(HELD_DKMS, host)
    assert HOLD in planned.changes
    (command,) = planned.find(HOLD).commands
    assert script_call(command) == ("kernel-hold", [LEDGER, "+linux-headers-amd64",
                                                    "+linux-image-amd64"])  # fmt: skip
    assert host.extra_reads == []  # the survey read the holds and the ledger

    survey = converged_survey(DKMS, "debian-12")
    survey.packages.update({"linux-image-amd64": "6.1.128-1"})
    survey = changed(survey, held_packages=["linux-image-amd64"])
    survey = changed(survey, ledgers={LEDGER: ["linux-image-amd64"]})
    host = SurveyHost(survey)
    again = plan(HELD_DKMS, host)
    assert again.changes == [] and host.extra_reads == []


def test_without_the_setting_nothing_is_planned_and_an_admins_hold_is_left_alone():
    survey = converged_survey(DKMS, "debian-12")
    survey = changed(survey, held_packages=DEBIAN_METAS)
    planned = plan(DKMS, SurveyHost(survey))
    assert planned.changes == [] and HOLD not in planned.names


def test_the_setting_gone_releases_only_rocm_fleets_holds():
    survey = converged_survey(DKMS, "debian-12")
    survey = changed(
        survey, held_packages=DEBIAN_METAS
    )  # the admin held the image, rocm-fleet the headers
    survey = changed(survey, ledgers={LEDGER: ["linux-headers-amd64"]})
    planned = plan(DKMS, SurveyHost(survey))
    assert planned.changes == [HOLD]
    (command,) = planned.find(HOLD).commands
    assert script_call(command) == ("kernel-hold", [LEDGER, "-linux-headers-amd64"])


def test_the_inbox_driver_holds_nothing_and_says_so(caplog):
    survey = converged_survey({**DKMS, "rocm_driver": "inbox"}, "debian-12")
    survey = changed(survey, ledgers={LEDGER: DEBIAN_METAS})
    survey = changed(survey, held_packages=DEBIAN_METAS)
    with caplog.at_level(logging.WARNING, logger="pyinfra"):
        planned = plan({**HELD_DKMS, "rocm_driver": "inbox"}, SurveyHost(survey))
    assert "rocm_kernel_hold holds the kernel for rocm_driver: dkms only" in caplog.text
    (command,) = planned.find(HOLD).commands  # what it held with dkms is released
    assert script_call(command) == ("kernel-hold", [LEDGER, *(f"-{n}" for n in DEBIAN_METAS)])


def test_rocm_state_absent_releases_its_holds_before_its_state_goes():
    # The removal reads fact by fact (no preflight survey).
    other = {InstalledPackages: {}, DpkgInterrupted: [], HeldPackages: DEBIAN_METAS,
             fact_key(Ledger, path=LEDGER): ["linux-headers-amd64"]}  # fmt: skip
    planned = plan({**HELD_DKMS, "rocm_state": "absent"}, SurveyHost(HostSurvey(), other=other))
    (command,) = planned.find(HOLD).commands
    assert script_call(command) == ("kernel-hold", [LEDGER, "-linux-headers-amd64"])
    assert planned.names.index(HOLD) < planned.names.index(
        "Remove ROCm apt repository | Remove rocm-fleet's state"
    )
    # Nothing of rocm-fleet's held: nothing planned.
    other[fact_key(Ledger, path=LEDGER)] = []
    assert (
        HOLD
        not in plan(
            {**HELD_DKMS, "rocm_state": "absent"}, SurveyHost(HostSurvey(), other=other)
        ).names
    )


def test_a_planned_backports_kernel_is_held_on_the_same_run():
    """rocm_kernel_backports: always under a hold rocm-fleet placed on the stock image: the
    install releases it for itself, and the hold covers the headers it brings, at once."""
    survey = debian_host()
    del survey.packages["linux-headers-amd64"]
    survey = changed(survey, held_packages=["linux-image-amd64"])
    survey = changed(survey, ledgers={LEDGER: ["linux-image-amd64"]})
    data = {**HELD_DKMS, "rocm_kernel_backports": "always"}
    planned = plan(data, SurveyHost(survey))
    (install,) = planned.find("Install the newer kernel").commands
    assert script_call(install)[1][3:] == ["linux-image-amd64", *BACKPORTS]
    (command,) = planned.find(HOLD).commands
    assert script_call(command) == ("kernel-hold", [LEDGER, "+linux-headers-amd64",
                                                    "=linux-image-amd64"])  # fmt: skip
    assert planned.names.index(HOLD) > planned.names.index(
        "Kernel | Install the newer kernel (the running one stays)"
    )
