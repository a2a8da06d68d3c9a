"""rocm_fleet.facts.secureboot: mokutil's Secure Boot state and a MOK key's enrolment,
from mokutil's own outputs and a fake mokutil on PATH.
"""

from __future__ import annotations

import pytest

from rocm_fleet.facts.secureboot import MokKeyState, SecureBoot
from unit.facts.support import fixture, lines


@pytest.mark.parametrize(
    ("name", "rc", "state", "shim_off", "setup"),
    [
        ("sb_state_enabled.txt", 0, "enabled", False, False),
        ("sb_state_enabled_validation_disabled.txt", 0, "enabled", True, False),
        ("sb_state_disabled.txt", 0, "disabled", False, False),
        ("sb_state_disabled_setup_mode.txt", 0, "disabled", False, True),
        ("sb_state_no_efi.txt", 1, "no_efi", False, False),
        ("sb_state_unsupported.txt", 255, "unsupported", False, False),
    ],
)
def test_secure_boot_states(name, rc, state, shim_off, setup):
    text = fixture("mokutil", name)
    result = SecureBoot().process([*lines(text), f"__rc={rc}"])
    assert result == {
        "state": state,
        "shim_validation_disabled": shim_off,
        "setup_mode": setup,
        "message": text.strip(),
    }


def test_secure_boot_absent_and_unknown():
    assert SecureBoot().process(["__absent"])["state"] == "absent"
    assert SecureBoot().process(["Failed to read SecureBoot", "__rc=1"])["state"] == "unknown"


@pytest.mark.parametrize(
    ("name", "state"),
    [
        ("test_key_enrolled.txt", "enrolled"),
        ("test_key_ubuntu_enrolled.txt", "enrolled"),
        ("test_key_pending.txt", "pending"),
        ("test_key_not_enrolled.txt", "not_enrolled"),
        ("test_key_blocked.txt", "blocked"),
    ],
)
@pytest.mark.parametrize("rc", [0, 1])  # exit codes flipped between mokutil releases
def test_mok_key_state_parses_text_not_exit_code(name, state, rc):
    text = fixture("mokutil", name)
    assert MokKeyState().process([*lines(text), f"__rc={rc}"]) == {
        "state": state,
        "message": text.strip(),
    }


def test_mok_key_state_markers_and_unknown():
    assert MokKeyState().process(["__absent"]) == {"state": "absent", "message": ""}
    assert MokKeyState().process(["__missing"]) == {"state": "missing", "message": ""}
    result = MokKeyState().process(["EFI variables are not supported on this system", "__rc=1"])
    assert result == {
        "state": "unknown",
        "message": "EFI variables are not supported on this system",
    }
