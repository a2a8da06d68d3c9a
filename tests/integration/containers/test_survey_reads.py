"""The GPU containers' reads folded into the node's survey (``read_with_survey``) answer exactly
what each read alone answers through pyinfra, under dash on the same files and tools: apt's
candidates (the real apt-cache, with this machine's lists and with none), the engines' version
lines, daemon.json (pyinfra's ``FileContents`` alone, ``FileLines`` in the survey), the
rootless users' groups, the images."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pyinfra.facts.files import FileContents

from rocm_fleet.containers.facts import ContainerEngines, ImagePresent
from rocm_fleet.facts.files import FileLines
from rocm_fleet.facts.gpu import RocmVersion
from rocm_fleet.facts.round_trip import Read, Survey
from rocm_fleet.facts.system import RunningKernel
from rocm_fleet.facts.users import GroupMembership
from unit.test_operations import DASH

APT_CACHE = "/usr/bin/apt-cache"
#: ``docker --version`` / ``podman --version`` of Debian 12's docker.io and podman
VERSIONS = {
    "docker": 'echo "Docker version 20.10.24+dfsg1, build 297e128"',
    "podman": 'echo "podman version 4.3.1"',
}
#: daemon.json as a site may leave it: every odd byte a line reader could trip on
DAEMON_JSON = {
    "empty": "",
    "object": '{\n  "features": {"cdi": true}\n}\n',
    "no newline at its end": '{\n  "debug": true\n}',
    "one blank line": "\n",
    "blank lines at its end": "{}\n\n\n",
    "CRLF": "{\r\n}\r\n",
    "record separator": "{\x1e}\n",
    "NUL": "{}\x00\n",
    "a survey section marker": "__survey_section=0\n__survey_section=1\n",
    "tabs and spaces": "\t{ }  \n  \n",
}


def lines_of(stdout: bytes) -> list[str]:
    """A command's output lines as pyinfra reads them (split at newlines, the last one's end
    dropped)."""
    parts = stdout.split(b"\n")
    return [part.decode() for part in (parts[:-1] if parts[-1] == b"" else parts)]


def sh(command: str, bin_dir: Path) -> list[str]:
    done = subprocess.run(
        [DASH, "-c", command], capture_output=True, timeout=60, check=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin:/usr/sbin:/sbin"},
    )  # fmt: skip
    return lines_of(done.stdout)


def alone(fact_cls, kwargs: dict, bin_dir: Path):
    """What ``host.get_fact`` answers for a fact run on its own (its default for no output)."""
    fact = fact_cls()
    command = fact.command(**kwargs)
    lines = sh(command if isinstance(command, str) else command.get_raw_value(), bin_dir)
    return fact.process(lines) if lines else fact.default()


def tools(bin_dir: Path, engines: bool, lists: Path | None) -> None:
    """The engines' version commands (``engines``), ``docker``/``podman image inspect`` knowing
    one image, and apt-cache: the real one, with no lists when ``lists`` is given."""
    bin_dir.mkdir()
    scripts = {}
    if engines:
        for tool, version in VERSIONS.items():
            scripts[tool] = (
                f'case $1 in --version) {version};; image) [ "$3" = rocm/pytorch:latest ];; '
                "*) exit 1;; esac"
            )
        scripts["dockerd"] = VERSIONS["docker"]
    if lists is not None:
        (lists / "partial").mkdir(parents=True)
        scripts["apt-cache"] = (
            f"exec {APT_CACHE} -o Dir::State::Lists={lists} -o Dir::Cache::pkgcache= "
            '-o Dir::Cache::srcpkgcache= "$@"'
        )
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)


def daemon_jsons(root: Path) -> list[Path]:
    """daemon.json in every shape: the texts above, missing, a directory, links."""
    root.mkdir()
    found = []
    for index, text in enumerate(DAEMON_JSON.values()):
        path = root / f"daemon-{index}.json"
        path.write_bytes(text.encode())
        found.append(path)
    (root / "directory.json").mkdir()
    (root / "dangling.json").symlink_to(root / "nowhere")
    (root / "link.json").symlink_to(found[1])
    return [*found, root / "missing.json", root / "directory.json", root / "dangling.json",
            root / "link.json"]  # fmt: skip


@pytest.mark.skipif(not os.path.exists(APT_CACHE), reason="needs apt-cache")
@pytest.mark.parametrize(("engines", "apt"), [(True, "lists"), (False, "none"), (True, "none")])
def test_the_folded_reads_answer_as_each_read_alone(tmp_path, engines, apt):
    bin_dir = tmp_path / "bin"
    tools(bin_dir, engines, tmp_path / "lists" if apt == "none" else None)
    daemon = daemon_jsons(tmp_path / "docker")
    rocm = tmp_path / "rocm" / ".info" / "version"
    rocm.parent.mkdir(parents=True)
    rocm.write_text("7.2.1-70201\n")
    reads = [
        Read("kernel", RunningKernel),  # core reads around them, as in the node's survey
        Read("rocm_version", RocmVersion, {"rocm_path": str(tmp_path / "rocm")}),
        Read("container_engines", ContainerEngines),
        *(Read(f"daemon_json {i}", FileLines, {"path": str(p)}) for i, p in enumerate(daemon)),
        Read("container_groups", GroupMembership,
             {"groups": ["video", "render"], "users": ["root", "no-such-user"]}),
        *(Read(f"image {engine} {ref}", ImagePresent, {"engine": engine, "ref": ref})
          for engine in ("docker", "podman") for ref in ("rocm/pytorch:latest", "absent:1")),
    ]  # fmt: skip
    fact = Survey()
    folded = fact.process(sh(fact.command(reads=reads), bin_dir))
    assert isinstance(folded, list), folded
    for read, answer in zip(reads, folded, strict=True):
        assert answer == alone(read.fact, read.kwargs, bin_dir), read.key
        if read.fact is FileLines:  # what FileLines stands for in the survey
            assert answer == alone(FileContents, read.kwargs, bin_dir), read.key
    by_key = {read.key: answer for read, answer in zip(reads, folded, strict=True)}
    assert by_key["daemon_json 0"] is None  # empty: as pyinfra says of an empty file
    assert by_key["daemon_json 2"] == ["{", '  "debug": true', "}"]
    assert by_key["daemon_json 8"] == ["__survey_section=0", "__survey_section=1"]  # no forgery
    missing, directory, dangling, link = (by_key[f"daemon_json {i}"] for i in range(10, 14))
    assert missing is directory is dangling is None and link == by_key["daemon_json 1"]
    assert by_key["image docker rocm/pytorch:latest"] is engines
    if apt == "none" and not engines:  # no output: the fact's default, alone or folded
        assert by_key["container_engines"] == ContainerEngines.default()
