"""The fake hosts' keys (unit.surveys.fact_key): a fact read by class and arguments, so a
fake that names a wrong argument fails where it is written instead of never matching."""

from __future__ import annotations

import pytest

from rocm_fleet.facts.apt import DpkgInterrupted, InstalledPackages
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.python import TorchInfo
from unit.opcases import run_op
from unit.surveys import answered, fact_key


def test_a_key_names_the_fact_and_its_arguments_without_pyinfras_own():
    key = fact_key(FileDigest, path="/etc/x", _sudo=True)
    assert key == fact_key(FileDigest, path="/etc/x")
    assert key != fact_key(FileDigest, path="/etc/y")
    assert key != fact_key(TorchInfo, python="/etc/x")
    assert repr(key) == "FileDigest(path='/etc/x')"


@pytest.mark.parametrize(
    ("fact", "arguments"),
    [(FileDigest, {"pth": "/etc/x"}), (FileDigest, {}), (DpkgInterrupted, {"path": "/x"}),
     (InstalledPackages, {"path": "/x"})],
)  # fmt: skip
def test_an_argument_the_fact_does_not_take_is_an_error(fact, arguments):
    with pytest.raises(TypeError):
        fact_key(fact, **arguments)


def test_an_answer_by_key_comes_before_one_by_class():
    answers = {fact_key(FileDigest, path="/a"): "a", FileDigest: "any"}
    assert answered(answers, fact_key(FileDigest, path="/a")) == (True, "a")
    assert answered(answers, fact_key(FileDigest, path="/b")) == (True, "any")
    assert answered({}, fact_key(FileDigest, path="/a")) == (False, None)


def test_a_read_without_an_answer_is_an_error_naming_its_key():
    from rocm_fleet.operations import files

    with pytest.raises(KeyError, match=r"FileDigest\(path='/etc/x'\)"):
        run_op(files.text_file, {fact_key(FileDigest, path="/etc/y"): None}, path="/etc/x")
