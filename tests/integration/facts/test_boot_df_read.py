"""BootKernels' ``df`` section read with the shell's ``read`` instead of ``sed 's/^/|/'``
answers as the sed did: both run under dash on a ``df`` double's odd outputs (none, no
trailing newline, CRLF, backslashes, a leading blank, an empty line, a long line), compared
line for line."""

from __future__ import annotations

import pytest

from integration.facts.test_builtin_reads import LONG, run
from rocm_fleet.facts.boot import BootKernels
from unit.facts.support import fake_tool

# Real output of df -P -B1 /boot (coreutils 9.1, Debian 12) and odd ones.
OUTPUTS = {
    "real": (
        "Filesystem     1-blocks      Used Available Capacity Mounted on\n"
        "/dev/nvme0n1p2 1021090816 123056128 827457536      13% /boot\n"
    ),
    "none": "",
    "no newline": "Filesystem 1-blocks Used Available Capacity Mounted on\n/dev/x 1 2 3 4% /boot",
    "crlf": "Filesystem 1-blocks\r\n/dev/x 1 2 3 4% /boot\r\n",
    "backslashes": "a\\nb \\c \\\\ %s\n/dev/\\x 1 2 3 4% /bo\\ot\\\n",
    "blanks": "  lead\t tab \n\n\ttrail  \n",
    "long": f"{LONG}\n/dev/x 1 2 3 4% /boot\n",
}


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_the_df_section_reads_as_sed_gave_it(tmp_path, name):
    (tmp_path / "out").write_text(OUTPUTS[name])
    fake_tool(tmp_path, "df", f"cat {tmp_path / 'out'}\n")
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    new = BootKernels().command()
    new = new[new.index("echo __section=df") :]
    old = "echo __section=df; df -P -B1 /boot 2>/dev/null | sed 's/^/|/'"
    assert new != old
    before = run(old, env)
    assert run(new, env) == before  # line for line, as pyinfra splits them
    text = OUTPUTS[name]
    assert len(before) == 1 + text.count("\n") + (text != "" and not text.endswith("\n"))
