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


def test_nothing_of_ours_imports_a_module_by_its_old_name():
    """The old names are for users' scripts: the package, its scripts and probes, and the tests
    (but for this file) import every module from where it is, so no warning of ours is ever a
    user's."""
    import ast

    old = {f"spacewar_ai.{name}" for name in MOVED}
    found = []
    paths = [*ROOT.glob("spacewar_ai/**/*.py"), *ROOT.glob("scripts/*.py"),
             *ROOT.glob("docs/log/probes/*.py"), *ROOT.glob("tests/**/*.py")]
    for path in paths:
        if path.name == "test_moved.py":
            continue
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        package = parts[:-1]  # what a relative import counts up from
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base
                                                                               else []))
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            else:
                continue
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names if n in old]
    assert found == []
