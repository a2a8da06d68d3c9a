"""The tests of tests/unit/test_settings_in_files.py that start a process or a loopback server (the
integration tier; the pure ones stay there)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from rocm_fleet.deploy.mirror import apt_mirror_conf, apt_proxy_conf
from rocm_fleet.deploy.pull import pull_script
from rocm_fleet.model import grammar, paths
from rocm_fleet.model.config import load_config
from rocm_fleet.model.decisions import Mirror
from unit.test_settings_in_files import EXAMPLES, GOOD, HOSTS, PULL, URLS, accepted


def apt_config(text: str, tmp_path: Path) -> set[str]:
    """What apt-config reads from ``text`` beyond what the system's configuration holds."""
    ours, empty = tmp_path / "ours.conf", tmp_path / "empty.conf"
    ours.write_text(text)
    empty.write_text("")

    def dump(path: Path) -> set[str]:
        env = {**os.environ, "APT_CONFIG": str(path)}
        result = subprocess.run(
            ["apt-config", "dump"], env=env, capture_output=True, text=True, check=True
        )
        return set(result.stdout.splitlines())

    return dump(ours) - dump(empty)


@EXAMPLES
@given(
    proxy=accepted("rocm_proxy", grammar.PROXY_URL),
    direct=st.lists(HOSTS, max_size=3, unique=True),
)
def test_the_proxy_and_the_direct_hosts_are_apts_keys_and_values(proxy, direct, tmp_path_factory):
    config = load_config({**GOOD, "rocm_proxy": proxy, "rocm_no_proxy": direct})
    read = apt_config(apt_proxy_conf(config), tmp_path_factory.mktemp("apt"))
    leaves = {line for line in read if not line.endswith(' "";')}
    expected = {f'Acquire::{s}::Proxy "{proxy}";' for s in ("http", "https")}
    expected |= {f'Acquire::{s}::Proxy::{name} "DIRECT";' for s in ("http", "https")
                 for name in direct}  # fmt: skip
    assert leaves == expected


@EXAMPLES
@given(url=accepted("rocm_mirror", grammar.HTTP_URL).filter(lambda u: u.startswith("https")))
def test_the_mirrors_ca_setting_names_the_mirror_alone(url, tmp_path_factory):
    hostname = Mirror(url).hostname
    read = apt_config(apt_mirror_conf(hostname), tmp_path_factory.mktemp("apt"))
    leaves = {line for line in read if not line.endswith(' "";')}
    assert leaves == {
        f'Acquire::https::{hostname}::CaInfo "{paths.MIRROR_CA}";',
        f'Acquire::https::{hostname}::Verify-Peer "true";',
        f'Acquire::https::{hostname}::Verify-Host "true";',
    }


@EXAMPLES
@given(source=URLS)
def test_the_pull_source_is_one_shell_word(source, tmp_path_factory):
    config = load_config({**PULL, "rocm_pull_source": source})
    header = "".join(
        line + "\n"
        for line in pull_script(config, "node-1").splitlines()[1:]
        if re.match(r"[A-Z_]+=", line)
    )
    path = tmp_path_factory.mktemp("sh") / "header.sh"
    path.write_text(header)
    read = subprocess.run(
        ["sh", "-c", '. "$0" && printf %s "$PULL_SOURCE"', str(path)],
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=True,
    )
    assert read.stdout == source
