"""What rocm-fleet's planning speedups (rocm_fleet.engine.speedups) and the patch proposed to
pyinfra for them (docs/pyinfra-3.10-planning.patch) gain, as ratios to pyinfra's own functions
measured in the same invocation (the numbers in docs/pyinfra-proposals.md).

    PYTHONPATH=tests .venv/bin/python bench/planning_speedups.py [--repeats 15] [--hosts 8]

Nothing connects anywhere; it runs on the controller alone:

* each replaced function, pyinfra's and rocm-fleet's, called the way planning calls it: the
  call-site order from a stack 30 frames deep below a deploy file, the global arguments'
  types, and the global arguments popped for a host with data in the host, two groups and
  ``all`` (the median of REPEATS timings of a batch of calls, interleaved);
* the whole plan of rocm-fleet's deploy (deploy.py) for 1 and HOSTS converged hosts, in
  CLI mode as pyinfra's CLI and the audit plan (facts answered from a converged survey by
  the unit tests' ``unit.surveys.SurveyHost``, so this is the controller's cost alone),
  with the speedups and with ``ROCM_FLEET_PYINFRA_SPEEDUPS=0``, interleaved.

Each row has three columns, measured interleaved: pyinfra as installed; pyinfra with the
patch applied (``patch -p1`` on copies of the installed ``api/arguments.py`` and
``api/util.py``, loaded beside them and put in place of the three functions where pyinfra's
modules hold them, rocm-fleet's speedups off); and rocm-fleet's speedups. The patched and
the released plans must be the same plan (same operations in the same order), else it
stops. Reported as ms (context) and as the ratio to pyinfra as installed (the gain).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import pyinfra  # noqa: E402
from pyinfra.api import Config, Inventory, State  # noqa: E402

from rocm_fleet.engine import speedups  # noqa: E402
from rocm_fleet.engine.speedups import OPT_OUT  # noqa: E402

util = importlib.import_module("pyinfra.api.util")
arguments = importlib.import_module("pyinfra.api.arguments")
PATCH = ROOT / "docs" / "pyinfra-3.10-planning.patch"


def patched_functions() -> dict:
    """The three functions as the patch makes them: ``patch -p1`` applied to copies of the
    installed pyinfra's two files, each loaded as a module of its own beside pyinfra's."""
    tree = Path(tempfile.mkdtemp(prefix="pyinfra-patched-"))
    api = Path(arguments.__file__).parent
    modules = {}
    try:
        for name in ("util", "arguments"):
            copied = tree / "src/pyinfra/api" / f"{name}.py"
            copied.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(api / f"{name}.py", copied)
        subprocess.run(["patch", "-p1", "--quiet", "-i", str(PATCH)], cwd=tree, check=True)
        for name in ("util", "arguments"):
            spec = importlib.util.spec_from_file_location(
                f"pyinfra.api._patched_{name}", tree / "src/pyinfra/api" / f"{name}.py"
            )
            modules[name] = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = modules[name]  # typing resolves its annotations there
            spec.loader.exec_module(modules[name])
    finally:
        shutil.rmtree(tree)
    # Where pyinfra is installed (the patched copy would take its temporary folder for it).
    modules["util"].PYINFRA_INSTALL_DIR = util.PYINFRA_INSTALL_DIR
    return {
        "get_operation_order_from_stack": modules["util"].get_operation_order_from_stack,
        "all_global_arguments": modules["arguments"].all_global_arguments,
        "pop_global_arguments": modules["arguments"].pop_global_arguments,
    }


@contextlib.contextmanager
def patched_pyinfra(functions: dict):
    """pyinfra planning with the patched functions, where its modules hold them by name."""
    for name, function in functions.items():
        for module in speedups._HELD_IN[name]:
            setattr(speedups._original(module), name, function)
    if "get_operation_order_from_stack" in functions:  # util's own, as the patch changes it
        util.get_operation_order_from_stack = functions["get_operation_order_from_stack"]
    try:
        yield
    finally:
        for name in functions:
            for module in speedups._HELD_IN[name]:
                setattr(speedups._original(module), name, speedups._original(name))
        util.get_operation_order_from_stack = speedups._original("get_operation_order_from_stack")


def timed(function, repeats: int) -> float:
    """Median seconds of ``repeats`` runs of ``function``."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def interleaved(*functions, repeats: int) -> list[float]:
    """Medians of each, their runs interleaved (so drift in the machine hits all)."""
    samples: list[list[float]] = [[] for _ in functions]
    for _ in range(repeats):
        for function, times in zip(functions, samples, strict=True):
            times.append(timed(function, 1))
    return [statistics.median(times) for times in samples]


def deep(depth: int, call):
    """``call()`` from ``depth`` frames below this one (a deploy's nesting)."""
    return call() if depth == 0 else deep(depth - 1, call)


def order_calls(calls: int, patched: dict):
    state = SimpleNamespace(current_deploy_filename=__file__, current_op_file_number=3)

    def in_cli_mode(function):
        pyinfra.is_cli = True  # as the CLI plans (the order then includes the op file's line)
        try:
            return [function(state) for _ in range(calls)]
        finally:
            pyinfra.is_cli = False

    def run(function):
        return lambda: deep(30, lambda: in_cli_mode(function))

    return (
        run(util.get_operation_order_from_stack),
        run(patched["get_operation_order_from_stack"]),
        run(speedups.get_operation_order_from_stack),
    )


def argument_calls(calls: int, patched: dict):
    theirs = speedups._original("all_global_arguments")

    def run(function):
        return lambda: [function() for _ in range(calls)]

    return run(theirs), run(patched["all_global_arguments"]), run(speedups.all_global_arguments)


def pop_calls(calls: int, patched: dict):
    inventory = Inventory(
        ([("h1", {"_sudo": True, "rocm_version": "6.4.3", "rocm_users": ["alice"]})], {}),
        gpu=(["h1"], {"expected_gfx": "gfx1100", "_sudo_user": "root"}),
        lab=(["h1"], {"rocm_reboot": "allow", "_env": {"LANG": "C"}}),
    )
    state = State(inventory, Config())
    host = inventory.get_host("h1")
    theirs = speedups._original("pop_global_arguments")

    def run(function):
        def calls_inside_speedups():
            # Both with the global arguments' types computed once (as inside rocm_node), so
            # this measures reading the host's data once alone.
            with speedups.speedups():
                return [function(state, host, {"name": "x", "_retries": 1}) for _ in range(calls)]

        return calls_inside_speedups

    return run(theirs), run(patched["pop_global_arguments"]), run(speedups.pop_global_arguments)


def plan_once(data, survey, speedups: bool, hosts: int) -> list:
    """Plan deploy.py for ``hosts`` converged hosts as pyinfra's CLI plans (CLI mode, the
    deploy file run for each host on pyinfra's greenlet pool: ``engine.host_plans``, as the audit
    plans); the operations planned for a host (names, in plan order)."""
    from rocm_fleet.deploy.node import rocm_node  # noqa: F401  (imported before timing)
    from rocm_fleet.engine.host_plans import planned_operations
    from unit.surveys import plan_fleet

    os.environ[OPT_OUT] = "1" if speedups else "0"
    state = plan_fleet({f"node{i}": (data, survey) for i in range(hosts)})
    node = state.inventory.get_host("node0")
    planned = list(planned_operations(state, node))
    changes = [op.names for op in planned if op.changes and not op.conditional]
    assert not changes, changes  # converged: the plan changes nothing
    return [op.names for op in planned]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--hosts", type=int, default=8)
    args = parser.parse_args()
    from unit.surveys import converged_survey

    print(f"pyinfra {speedups.pyinfra_version()}, Python {sys.version.split()[0]}")
    patched = patched_functions()
    rows = []
    calls = 200
    for label, functions in (
        ("get_operation_order_from_stack (30 frames deep)", order_calls(calls, patched)),
        ("all_global_arguments", argument_calls(calls, patched)),
        ("pop_global_arguments (host + 2 groups + all; types cached)", pop_calls(calls, patched)),
    ):
        times = interleaved(*functions, repeats=args.repeats)
        rows.append((f"{label}, per call", *(t / calls for t in times)))
    data = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
            "rocm_users": ["alice"], "rocm_driver": "dkms"}  # fmt: skip
    # The converged survey plans a fresh host first, whose wheels the controller would lock
    # from download.pytorch.org: nothing connects here, so the unit tests' stand-in locks.
    from rocm_fleet.deploy import pytorch
    from unit.locks import UpstreamLocks

    locks = UpstreamLocks()
    pytorch.controller_locks = lambda: locks
    survey = converged_survey(data, "debian-12")
    logging.getLogger("pyinfra").setLevel(logging.ERROR)  # the plans' warnings
    plan = plan_once(data, survey, True, 1)  # warm: imports, caches
    assert plan_once(data, survey, False, 1) == plan  # the speedups plan what pyinfra plans
    with patched_pyinfra(patched):
        assert plan_once(data, survey, False, 1) == plan  # and so does the patch

    def patched_plan(hosts: int) -> list:
        with patched_pyinfra(patched):
            return plan_once(data, survey, False, hosts)

    for hosts in (1, args.hosts):
        times = interleaved(
            lambda hosts=hosts: plan_once(data, survey, False, hosts),
            lambda hosts=hosts: patched_plan(hosts),
            lambda hosts=hosts: plan_once(data, survey, True, hosts),
            repeats=args.repeats,
        )
        label = (
            f"CLI-mode plan of {hosts} converged host(s) (debian-12, dkms; {len(plan)} ops each)"
        )
        rows.append((label, *times))
    os.environ.pop(OPT_OUT, None)
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}}  {'pyinfra ms':>11}  {'+ patch ms':>11}  {'gain':>6}  "
          f"{'rocm-fleet ms':>13}  {'gain':>6}")  # fmt: skip
    for label, theirs, patch, ours in rows:
        print(f"{label:{width}}  {theirs * 1e3:11.4f}  {patch * 1e3:11.4f}  "
              f"{theirs / patch:5.1f}x  {ours * 1e3:13.4f}  {theirs / ours:5.1f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
