"""Every fact parser case written as data: ``cases/<module.Fact>/<case>.json`` (a fact of
``rocm_fleet.facts.<module>``), as pyinfra's own ``tests/facts/<module.Fact>/<case>.json``
(pyinfra-dev/pyinfra, tests/test_facts.py): the command's output in, the parsed value out.

A case holds the output as pyinfra hands it to ``process()`` (one string per line): the lines
of ``fixture`` (a file under tests/fixtures, recorded from the real tool, cited in its
README), then ``output`` (the markers the fact's command adds, ``__rc=N``); and what it expects:
the parsed ``fact``, or the ``exception`` raised (its type in pyinfra.api.exceptions, its message
exactly). ``default``: the ``fact`` is what the fact answers when its command fails. ``note``
says why, where the file's name doesn't.
"""

from __future__ import annotations

import json
import re
from importlib import import_module
from pathlib import Path

import pytest
from pyinfra.api import exceptions

from unit.facts.support import fixture, lines

CASES = Path(__file__).resolve().parent / "cases"
FILES = sorted(CASES.glob("*/*.json"))
KEYS = {"note", "fixture", "output", "fact", "exception", "default"}


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(CASES)) for p in FILES])
def test_fact_case(path):
    case = json.loads(path.read_text())
    assert set(case) <= KEYS, f"unknown keys {set(case) - KEYS}"
    module, _, name = path.parent.name.partition(".")
    fact = getattr(import_module(f"rocm_fleet.facts.{module}"), name)()
    if case.get("default"):
        assert fact.default() == case["fact"]
        return
    output = [*(lines(fixture(case["fixture"])) if "fixture" in case else []), *case["output"]]
    if "exception" in case:
        raised = getattr(exceptions, case["exception"]["type"])
        with pytest.raises(raised, match=f"^{re.escape(case['exception']['match'])}$"):
            fact.process(output)
        return
    assert fact.process(output) == case["fact"]
