"""The survey's batch of ``WritableByOthers`` (its paths in one script with one ``stat`` for the
directories above them all, ``files/scripts/writable-by-others.sh PATH...``): each path's
answer is the one the fact gives it alone, on every case of test_attacks_writable_by_others
(the case's path before and after a plain one), and no name under one path can make a line
that reads as another path's answer (a newline or RS in it: the survey splits records at
both)."""

from __future__ import annotations

import subprocess

import pytest

from integration.rootless import stat_double
from integration.test_attacks_writable_by_others import CASES, Node, _logging
from rocm_fleet.engine.surveying import survey_reads
from rocm_fleet.facts.files import WritableByOthers
from rocm_fleet.facts.round_trip import Survey
from rocm_fleet.model.config import load_config
from unit.test_operations import DASH


@pytest.fixture
def node(tmp_path) -> Node:
    return Node(tmp_path / "node")


def alone(node: Node, path: str) -> str | None:
    fact = WritableByOthers()
    return fact.process(node.run(fact.command(path)))


def batch(node: Node, paths: list[str]) -> tuple[list[str | None], list[str]]:
    kwargs = [{"path": path} for path in paths]
    output = node.run(WritableByOthers.batch_command(kwargs))
    return WritableByOthers.batch_process(output, kwargs), output


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_case_answers_in_the_batch_as_alone(node, case):
    relative, expected = CASES[case](node)
    path = f"{node.root}{relative}" if relative.startswith("/") else f"{node.root}/{relative}"
    node.dir("plain/in")
    plain = f"{node.root}/plain/in/venv"
    answer = expected and expected.format(root=node.root)
    assert [alone(node, path), alone(node, plain)] == [answer, None]
    for paths in ([path, plain], [plain, path], [path]):
        answers, output = batch(node, paths)
        assert answers == [alone(node, p) for p in paths]
        if len(paths) > 1:  # one line each at most, after its index
            assert [line for line in output if line.startswith("__path=")] == [
                f"__path={index}" for index in range(len(paths))
            ]
            assert len(output) <= 2 * len(paths)


def test_the_directories_above_every_path_cost_one_stat(node):
    node.dir("etc/a")
    node.dir("etc/b", 0o777)
    paths = [f"{node.root}/etc/a/venv", f"{node.root}/etc/b/venv", f"{node.root}/etc/c/venv"]
    log = _logging(node, {"stat": str(node.bin / "stat")})
    kwargs = [{"path": path} for path in paths]
    stat_double(node.bin, node.root)
    proc = subprocess.run(
        [DASH, "-c", WritableByOthers.batch_command(kwargs)], capture_output=True, text=True,
        timeout=60, check=False, env={"PATH": f"{log.with_name('shims')}:{node.bin}:/usr/bin:/bin"},
    )  # fmt: skip
    assert WritableByOthers.batch_process(proc.stdout.splitlines(), kwargs) == [
        None, f"root 777 {node.root}/etc/b", None,
    ]  # fmt: skip
    # -c FORMAT --, etc/a, etc/b, and for each path etc and each directory up to / (itself too)
    depth = len(node.root.parts)  # / included
    assert log.read_text().splitlines() == [f"stat {3 + 2 + 3 * (1 + depth)}"]
    node.dir("etc", 0o775)
    assert batch(node, paths)[0] == [
        f"root 775 {node.root}/etc", f"root 777 {node.root}/etc/b", f"root 775 {node.root}/etc",
    ]  # fmt: skip


@pytest.mark.parametrize("separator", ["\n", "\x1e"])
def test_a_name_under_one_path_answers_for_no_other(node, separator):
    first, second, third = node.dir("a/venv"), node.dir("b/venv"), node.dir("c/venv", 0o775)
    name = f"x{separator}__path=1{separator}{separator}__path=2{separator}"
    (first / name).write_text("")
    (first / name).chmod(0o666)
    answers, output = batch(node, [str(first), str(second), str(third)])
    assert answers == [f"root 666 {first}/x", None, f"root 775 {third}"]
    assert output == [
        "__path=0",
        f"root 666 {first}/x",
        "__path=1",
        "__path=2",
        f"root 775 {third}",
    ]


def test_the_survey_asks_both_venvs_in_one_script():
    config = load_config({"rocm_version": "7.2.1", "rocm_users": ["alice"]})
    reads = survey_reads(config)
    asked = [read for read in reads if read.fact is WritableByOthers]
    assert len(asked) == 2
    command = Survey().command(reads)
    assert command.count("# writable-by-others.sh PATH") == 1
    assert WritableByOthers.batch_command([read.kwargs for read in asked]) in command
