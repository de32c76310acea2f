"""The flat layout's module names (before the subpackages) still import, as the same module
objects as the new ones, each with one warning that names where it went (CHANGELOG.md)."""

import importlib
import subprocess
import sys
import warnings

import pytest

from spacewar_ai._moved import MOVED
from tests.helpers import ROOT


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_name_is_the_new_module(old):
    new = importlib.import_module(f"spacewar_ai.{MOVED[old]}")
    sys.modules.pop(f"spacewar_ai.{old}", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(f"spacewar_ai.{old}")
    assert module is new
    assert [str(w.message) for w in caught] == [
        f"spacewar_ai.{old} moved to spacewar_ai.{MOVED[old]}: import it from there "
        "(CHANGELOG.md)"]


def test_a_script_written_for_the_flat_layout_runs_and_is_told_once():
    script = ("from spacewar_ai.match import play_match\n"
              "from spacewar_ai import engine\n"
              "import spacewar_ai.match as m\n"
              "print(play_match('heuristic:hard', 'idle', 2).n, engine.GameBatch.__module__)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "spacewar_ai.game.engine"]
    assert out.stderr.count("FutureWarning") == 2  # match once, engine once
    assert "spacewar_ai.match moved to spacewar_ai.rating.match" in out.stderr


def test_every_old_name_is_listed_in_the_changelog():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    for old, new in MOVED.items():
        assert f"`spacewar_ai.{old}`" in changelog and f"`spacewar_ai.{new}`" in changelog, old


def test_the_offline_module_that_became_a_wing_keeps_its_public_names():
    from spacewar_ai.training import offline
    from spacewar_ai.training.offline import learners

    assert (offline.train_bc, offline.train_cql, offline.behaviour_clone) == (
        learners.train_bc, learners.train_cql, learners.behaviour_clone)
