"""Every operation case written as data: ``<module.op>/<case>.json`` beside this file, as
pyinfra's own ``tests/operations/<module.op>/<case>.json`` (pyinfra-dev/pyinfra,
tests/test_operations.py): facts in, commands out.

A case holds ``kwargs``, the operation's arguments (``{"$release": "6.4.3"}`` is
``matrix.release("6.4.3")``); the ``facts`` it reads (``unit.opcases.CaseFacts``: by the fact
class's dotted path, then ``"name=value"`` for its arguments; a fact given that isn't read, or
one read that isn't given, fails the case); ``executing`` (run as pyinfra executes, not plans);
and what it expects: the ``commands`` (as ``unit.opcases.rendered`` states them) and the
``noops`` reasons, or the ``exception`` raised (its type in pyinfra.api, its message exactly);
``reads``, where given, is every read in order; ``note`` says why, where the file's name
doesn't. Cases that need Python (objects, FunctionCommands, the environment) are in
tests/unit/test_operations.py.
"""

from __future__ import annotations

import json
import pkgutil
import re
from importlib import import_module
from pathlib import Path

import pyinfra.api
import pytest

from rocm_fleet import operations
from rocm_fleet.model import matrix
from unit.opcases import CaseFacts, case_key, fact_name, rendered, run_op

CASES = Path(__file__).resolve().parent
FILES = sorted(CASES.glob("*/*.json"))
CONSTRUCTORS = {"$release": matrix.release}
KEYS = {"note", "kwargs", "facts", "executing", "commands", "noops", "exception", "reads"}
# Operations whose cases need Python (random names, uploads, a local bundle), and where they are.
ELSEWHERE = {
    "files.uploaded_file": "tests/unit/test_mirror_tls.py, tests/unit/test_dry_diff.py",
    "files.bundle_copy": "tests/unit/test_mirror.py",
    "kernel.kernel_holds": "tests/unit/test_kernel_hold.py",
}


def argument(value):
    """A case's argument value, ``{"$release": "6.4.3"}`` made the object it names."""
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in CONSTRUCTORS:
        ((name, made_from),) = value.items()
        return CONSTRUCTORS[name](made_from)
    return value


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(CASES)) for p in FILES])
def test_operation_case(path):
    case = json.loads(path.read_text())
    assert set(case) <= KEYS, f"unknown keys {set(case) - KEYS}"
    module, _, name = path.parent.name.partition(".")
    operation = getattr(import_module(f"rocm_fleet.operations.{module}"), name)
    facts = CaseFacts(case["facts"])
    arguments = {key: argument(value) for key, value in case["kwargs"].items()}
    executing = case.get("executing", False)
    if "exception" in case:
        raised = getattr(pyinfra.api, case["exception"]["type"])
        with pytest.raises(raised, match=f"^{re.escape(case['exception']['match'])}$"):
            run_op(operation, facts, executing=executing, **arguments)
        return
    result = run_op(operation, facts, executing=executing, **arguments)
    assert [rendered(command) for command in result.commands] == case["commands"]
    assert result.noops == case["noops"]
    assert facts.read(result.reads) == facts.given, (
        "the case gives facts the operation doesn't read"
    )
    if "reads" in case:
        assert [f"{fact_name(r.fact)} {case_key(r)}".strip() for r in result.reads] == case["reads"]


def test_every_operation_has_its_cases():
    """A new operation comes with its cases here (or its Python tests, named in ELSEWHERE)."""
    found = set()
    for module in pkgutil.iter_modules(operations.__path__):
        loaded = import_module(f"{operations.__name__}.{module.name}")
        found |= {
            f"{module.name}.{name}"
            for name, value in vars(loaded).items()
            if hasattr(value, "_inner") and value.__module__ == loaded.__name__
        }
    assert found - set(ELSEWHERE) == {path.parent.name for path in FILES}
