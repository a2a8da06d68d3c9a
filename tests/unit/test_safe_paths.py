"""The safe path rule at preflight (``model.conflicts.venv_problems``): a venv the deploy runs as
root is refused when a directory above it breaks the rule (its owner could swap the venv
between preflight and the run), naming the directory, its owner, its mode and the rule; the
pull venv too, where pull mode is on. The node-side check is in
tests/integration/test_attacks_safe_paths.py."""

from __future__ import annotations

from rocm_fleet.model import paths
from rocm_fleet.model.config import load_config
from rocm_fleet.model.conflicts import venv_problems
from unit.pull.test_pull import PULLING
from unit.surveys import SurveyHost, fresh_survey, plan

RULE = "every directory above a path root runs must be root's and writable by no one else"


def test_a_venv_in_a_directory_another_user_owns_is_refused_at_preflight():
    """Who: the owner of the venv's parent (here /opt/rocm-fleet, alice's). Nothing planned."""
    venv = paths.DEFAULT_VENV
    parent = paths.parent(venv)
    survey = fresh_survey("debian-12", writable_by_others={venv: f"alice 755 {parent}"})
    planned = plan({"rocm_version": "6.4.3"}, SurveyHost(survey))
    assert planned.refused and planned.beyond_preflight == []
    reason = planned.reason or ""
    assert f"the venv {venv} is in a directory not root's alone: {parent} is owned by alice " in (
        reason
    )
    assert "(mode 755)" in reason and RULE in reason and "(the safe path rule)" in reason


def test_a_directory_higher_up_that_others_may_write_is_named():
    config = load_config({"rocm_version": "6.4.3", "pytorch_venv": "/srv/ml/venv"})
    survey = fresh_survey("debian-12", writable_by_others={"/srv/ml/venv": "root 1777 /srv"})
    (problem,) = venv_problems(config, survey)
    assert problem.startswith("the venv /srv/ml/venv is in a directory not root's alone: /srv ")
    assert "owned by root (mode 1777)" in problem


def test_a_file_inside_the_venv_keeps_its_own_message():
    config = load_config({"rocm_version": "6.4.3"})
    venv = paths.DEFAULT_VENV
    survey = fresh_survey("debian-12", writable_by_others={venv: f"alice 644 {venv}/bin/pip"})
    (problem,) = venv_problems(config, survey)
    assert problem.startswith(f"the venv {venv} is not root's alone: {venv}/bin/pip is owned")
    # A sibling sharing the venv's name as a prefix is inside nothing: not an ancestor.
    survey = fresh_survey("debian-12", writable_by_others={venv: f"alice 755 {venv}-old"})
    assert "is not root's alone" in venv_problems(config, survey)[0]


def test_the_pull_venv_is_checked_where_pull_mode_is_on_alone():
    found = {paths.PULL_VENV: f"alice 755 {paths.parent(paths.PULL_VENV)}"}
    survey = fresh_survey("debian-12", writable_by_others=found)
    pulling = load_config({**PULLING, "pytorch_install": False})
    (problem,) = venv_problems(pulling, survey)
    assert problem.startswith(f"the venv {paths.PULL_VENV} is in a directory not root's alone")
    pushed = load_config({"rocm_version": "6.4.3", "pytorch_install": False})
    assert venv_problems(pushed, survey) == []


def test_a_sound_survey_is_no_problem():
    config = load_config({**PULLING})
    assert venv_problems(config, fresh_survey("debian-12")) == []


def test_a_directory_stat_could_not_answer_is_refused():
    """The node names a directory stat failed for with no owner or mode: still a refusal."""
    config = load_config({"rocm_version": "6.4.3", "pytorch_venv": "/srv/ml/venv"})
    survey = fresh_survey("debian-12", writable_by_others={"/srv/ml/venv": "  /srv/ml"})
    (problem,) = venv_problems(config, survey)
    assert problem.startswith("the venv /srv/ml/venv is in a directory not root's alone: /srv/ml")
