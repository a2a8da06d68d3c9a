"""Attacks on preflight's safe path check of a venv (``WritableByOthers``,
``files/scripts/writable-by-others.sh``) since it asks with shell functions for dirname and
readlink and one ``stat`` of every directory above the path (7340cee, 75ed8a4, 12b13d6).

Each case runs the fact's command under dash, beside ``REFERENCE``: the same rule asked of the
real dirname, readlink and stat, one process per directory, as the script did before those
commits. Both must give the same answer, the one the case expects. Directories above the
test's ``root`` read as root's 0755 (``integration.rootless``'s ``stat`` double, which, like
stat, answers every path of one call); modes and links are real.

Out of scope: a directory replaced between the check and the deploy's use of the path (the
rule itself is what makes that impossible: only root may change a directory it passed) and
between the batched ``stat`` and the walk (the same argument; the old check had that window
between its own processes).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from integration.rootless import stat_double
from rocm_fleet import assets
from rocm_fleet.facts.files import WritableByOthers
from unit.test_operations import DASH

SCRIPT = assets.text("scripts/writable-by-others.sh")
_MAIN = SCRIPT.index('found=$(unsafe_directory "$1")')
REFERENCE = assets.text("scripts/safe-path.sh") + SCRIPT[_MAIN:]


class Node:
    def __init__(self, root: Path):
        self.root = root
        root.mkdir()
        self.bin = root.with_name("bin")
        self.owners: dict[Path, str] = {}

    def dir(self, relative: str, mode: int = 0o755) -> Path:
        path = self.root / relative
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(mode)
        return path

    def run(self, command: str, *args: str, timeout: int = 60) -> list[str]:
        stat_double(self.bin, self.root, self.owners)
        proc = subprocess.run(
            [DASH, "-c", command, "writable-by-others", *args], capture_output=True,
            text=True, timeout=timeout, check=False, env={"PATH": f"{self.bin}:/usr/bin:/bin"},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()

    def answers(self, path: str, timeout: int = 60) -> tuple[str | None, str | None]:
        """(the fact's answer, the reference's) for ``path``."""
        fact = WritableByOthers()
        new = fact.process(self.run(fact.command(path), timeout=timeout))
        return new, fact.process(self.run(REFERENCE, path, timeout=timeout))


@pytest.fixture
def node(tmp_path) -> Node:
    return Node(tmp_path / "node")


def _link(node: Node, at: str, to: str) -> None:
    (node.root / at).symlink_to(to)


# name -> (what the node holds, the path asked, the answer: "OWNER MODE DIRECTORY" or None)
def _cases():
    def plain(n):
        n.dir("etc")
        return "etc/venv", None

    def writable(mode):
        def case(n):
            n.dir("etc", mode)
            return "etc/venv", f"root {mode:o} {{root}}/etc"

        return case

    def not_writable(mode):
        def case(n):
            n.dir("etc", mode)
            return "etc/venv", None

        return case

    def owned(n):
        n.owners[n.dir("etc")] = "1000 alice"
        return "etc/venv", "alice 755 {root}/etc"

    def owned_higher(n):
        n.owners[n.dir("a")] = "1000 alice"
        n.dir("a/b/c")
        return "a/b/c/venv", "alice 755 {root}/a"

    def slurm_link(target):
        """etc/slurm a link to ``target`` (``{root}``: the node's), into shared, which others
        may write."""

        def case(n):
            n.dir("shared/x")
            n.dir("shared", 0o777)
            n.dir("etc")
            _link(n, "etc/slurm", target.format(root=n.root))
            return "etc/slurm/venv", "root 777 {root}/shared"

        return case

    def chained_links(n):
        _link(n, "hop", "shared")
        return slurm_link("{root}/hop")(n)

    def link_loop(n):
        n.dir("etc", 0o777)
        _link(n, "etc/a", "b")
        _link(n, "etc/b", "a")
        return "etc/a/venv", "root 777 {root}/etc"

    def link_in_writable(n):
        n.dir("sound")
        n.dir("hall", 0o777)
        _link(n, "hall/slurm", str(n.root / "sound"))
        return "hall/slurm/venv", "root 777 {root}/hall"

    def glob_names(n):
        # "a" others may write, "*" and "?" root's: no answer of one stands for another's.
        n.dir("a", 0o777)
        n.dir("*/a")
        n.dir("?")
        return "*/a/venv", None

    def glob_names_writable(n):
        n.dir("x", 0o777)
        n.dir("x/y")
        n.dir("?/y")
        n.dir("*")
        return "x/y/venv", "root 777 {root}/x"

    def spelled(path, expected):
        """etc, which others may write, asked of as ``path`` (//, a trailing /, . or ..)."""

        def case(n):
            n.dir("etc", 0o777)
            n.dir("etc/a")
            n.dir("ok")
            return path, expected

        return case

    def missing(n):
        return "not/made/yet/venv", None

    def under(n):
        n.dir("venv/lib", 0o775)
        return "venv", "root 775 {root}/venv/lib"

    found = {
        "plain": plain,
        "group-writable": writable(0o775),
        "other-writable": writable(0o777),
        "sticky": writable(0o1777),
        "sticky, not writable": not_writable(0o1755),
        "setgid": not_writable(0o2755),
        "another owner": owned,
        "another owner higher up": owned_higher,
        "absolute link": slurm_link("{root}/shared"),
        "relative link": slurm_link("../shared"),
        "link with ..": slurm_link("../shared/x/../x"),
        "two links": chained_links,
        "dangling link": slurm_link("{root}/shared/not/yet"),
        "link loop": link_loop,
        "link in a writable directory": link_in_writable,
        "glob names": glob_names,
        "glob names, writable": glob_names_writable,
        "//": spelled("//etc//a/venv", "root 777 {root}//etc"),
        "trailing /": spelled("etc/a/", "root 777 {root}/etc"),
        ".": spelled("etc/./a/venv", "root 777 {root}/etc/."),
        "..": spelled("ok/../etc/a/venv", "root 777 {root}/ok/../etc"),
        "nothing made yet": missing,
        "under the path": under,
    }
    for name in ("a b", "-n", "*", "?", "[ab]", "\\", "|", "%s", "$(id)", "a b*"):

        def named(n, name=name):
            n.dir(name, 0o777)
            n.dir(f"{name}/in")
            return f"{name}/in/venv", f"root 777 {{root}}/{name}"

        def named_safe(n, name=name):
            n.dir(name)
            n.dir(f"{name}/in")
            return f"{name}/in/venv", None

        found[f"named {name!r}"] = named
        found[f"named {name!r}, root's"] = named_safe

    def newline(n):
        n.dir("new\nline", 0o777)
        n.dir("new\nline/in")
        return "new\nline/in/venv", "root 777 {root}/new"  # its first line: still a refusal

    found["named with a newline"] = newline
    return found


CASES = _cases()


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_case_gets_the_answer_the_real_tools_give(node, case):
    relative, expected = CASES[case](node)
    path = f"{node.root}{relative}" if relative.startswith("/") else f"{node.root}/{relative}"
    new, old = node.answers(path)
    assert new == old
    assert new == (expected and expected.format(root=node.root))


def _path(node: Node, *parts: str) -> str:
    return "/".join((str(node.root), *parts))


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_directory_another_user_owns_for_real_is_named(node):
    """The batched stat's owner, not the double's: uid 4242 (no name: UNKNOWN), 0755."""
    os.chown(node.dir("etc"), 4242, 4242)
    node.dir("etc/in")
    assert node.answers(_path(node, "etc/in/venv")) == (f"UNKNOWN 755 {node.root}/etc",) * 2


def test_a_long_path_is_answered_in_seconds(node):
    """60 directories of 100 characters (the settings' grammar sets no length): the batched
    answers were looked up in time square in the path's length and more (30 took minutes)."""
    deep, parts = node.dir("u", 0o777), ["d" * 100] * 60
    os.makedirs(str(deep), exist_ok=True)
    fd = os.open(deep, os.O_RDONLY)
    for part in parts:  # past PATH_MAX: one directory at a time
        os.mkdir(part, dir_fd=fd)
        fd, old = os.open(part, os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    os.close(fd)
    started = time.monotonic()
    assert (
        node.answers(_path(node, "u", *parts, "venv"), timeout=30)
        == (f"root 777 {node.root}/u",) * 2
    )
    deep.chmod(0o755)
    assert node.answers(_path(node, "u", *parts, "venv"), timeout=30) == (None, None)
    assert time.monotonic() - started < 30


def _logging(node: Node, tools: dict[str, str]) -> Path:
    """``tools`` (name -> the program it runs) on PATH before the double, each call logged."""
    log = node.root.with_name("calls")
    shims = node.root.with_name("shims")
    shims.mkdir(exist_ok=True)
    for tool, real in tools.items():
        (shims / tool).write_text(f'#!/bin/sh\necho "{tool} $#" >> {log}\nexec {real} "$@"\n')
        (shims / tool).chmod(0o755)
    return log


def _run_with(node: Node, shims: Path, path: str) -> list[str]:
    fact = WritableByOthers()
    stat_double(node.bin, node.root, node.owners)
    proc = subprocess.run(
        [DASH, "-c", fact.command(path)], capture_output=True, text=True, timeout=60,
        check=False, env={"PATH": f"{shims}:{node.bin}:/usr/bin:/bin"},
    )  # fmt: skip
    return proc.stdout.splitlines()


def test_a_plain_path_costs_one_stat_and_no_dirname_or_readlink(node):
    """The process count the builtins bought: a path with no link on it asks stat once, for
    each directory above it and the path itself (and /)."""
    node.dir("etc/a/b")
    log = _logging(node, {"stat": str(node.bin / "stat"), "dirname": "/usr/bin/dirname",
                          "readlink": "/usr/bin/readlink"})  # fmt: skip
    assert _run_with(node, log.with_name("shims"), _path(node, "etc/a/b/venv")) == []
    # stat -c FORMAT -- then etc/a/b, etc/a, etc and each directory up to / (itself included)
    assert log.read_text().splitlines() == [f"stat {3 + len(node.root.parts) + 3}"]


def test_a_directory_stat_cannot_answer_is_named(node):
    """A stat that fails for one directory (gone, EACCES, EOVERFLOW): the batch keeps no answer,
    each directory is asked alone, and the one without an answer is named, no owner or mode."""
    etc = node.dir("etc/in")
    failing = node.root.with_name("failing")
    failing.mkdir()
    (failing / "stat").write_text(
        f"#!/bin/sh\nfor a do [ \"$a\" != '{etc}' ] || {{ echo denied >&2; exit 1; }}; done\n"
        f'exec {node.bin / "stat"} "$@"\n'
    )
    (failing / "stat").chmod(0o755)
    fact = WritableByOthers()
    for command in (fact.command(f"{etc}/venv"), REFERENCE):
        stat_double(node.bin, node.root)
        proc = subprocess.run(
            [DASH, "-c", command, "writable-by-others", f"{etc}/venv"], capture_output=True,
            text=True, timeout=60, check=False,
            env={"PATH": f"{failing}:{node.bin}:/usr/bin:/bin"},
        )  # fmt: skip
        assert proc.stdout == f"  {etc}\n"
        assert fact.process(proc.stdout.splitlines()) == f"  {etc}"


@pytest.mark.parametrize(
    "path",
    ["/", "/a", "/a/b", "/a/b/", "//a", "/a//b", "/a/.", "/a/./b", "/a/..", "/a/../b", "a/b",
     "-n", "", "/a b/c*", "/new\nline/x", "/x\\y/%s", "/l/b", "/l/../b", "/loop/b", "/d/b"],
)  # fmt: skip
def test_dirname_and_readlink_answer_as_coreutils_do(tmp_path, path):
    """The functions standing in for dirname and readlink -m, beside the real ones, on odd
    paths (in tmp_path, where l is a link, loop one to itself, d one to nothing)."""
    (tmp_path / "real").mkdir()
    (tmp_path / "l").symlink_to(tmp_path / "real")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "d").symlink_to(tmp_path / "nothing")
    path = f"{tmp_path}{path}" if path.startswith("/") and path != "/" else path
    functions = SCRIPT[: SCRIPT.index("# unsafe_directory's stat")]
    show = 'printf "<%s>" "$(dirname -- "$1")" "$(readlink -m -- "$1")"; echo " $?"'
    new, old = (
        subprocess.run(
            [DASH, "-c", body + show, "sh", path], capture_output=True, text=True, check=False
        ).stdout
        for body in (functions, "")
    )
    assert new == old


def test_the_survey_s_shell_state_reaches_neither_the_check_nor_the_sections_after_it(node):
    """The check runs in a subshell of the survey's one shell (no ``sh -c``): an earlier
    section's IFS, ``set -u`` or ``set -f`` doesn't reach it (under IFS " 2" mode 722 read as
    7, and the group- and other-writable directory passed), and its variables and functions
    don't reach the sections after it."""
    node.dir("etc", 0o722)
    fact = WritableByOthers()
    before = "IFS=' 2'; set -uf; found=theirs; "
    after = '; echo "after: $found, $(command -v stat), $(command -v dirname)"'
    assert node.run(before + fact.command(_path(node, "etc/venv")) + after) == [
        f"root 722 {node.root}/etc",
        f"after: theirs, {node.bin}/stat, /usr/bin/dirname",
    ]
