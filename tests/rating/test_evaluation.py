"""The evaluation mode: a match with its interval, causes of death and accuracy."""

from pathlib import Path

import pytest

from spacewar_ai.rating.evaluation import evaluate
from spacewar_ai.rating.match import wilson_interval
from spacewar_ai.training.online.trainer import Trainer
from tests.helpers import tiny_run


def test_evaluate_prints_wins_interval_and_causes(tmp_path, capsys):
    out = Trainer(tiny_run(tmp_path), quiet=True).run()
    result = evaluate(str(Path(out["run_dir"]) / "latest.pt"), "heuristic:easy", 20, seed=1)
    text = capsys.readouterr().out
    assert "95% CI" in text and "deaths of heuristic:easy" in text and "mean game length" in text
    # The counts are the games' own results, and the printed line says them.
    games = result["match"].games
    assert len(games) == 20
    won = sum(g.real_winner == "a" for g in games)
    lost = sum(g.real_winner == "b" for g in games)
    assert (result["wins"], result["losses"]) == (won, lost)
    lo, hi = result["ci"]
    assert (lo, hi) == pytest.approx(wilson_interval(won, 20))
    assert f"wins {won} (" in text


def test_a_spec_is_parsed_once_on_its_way_from_evaluate_to_the_game(monkeypatch, capsys):
    """The text becomes a Spec at evaluate's door; below it only the value and the pilots
    travel (a planner's parts are parsed inside the one parse of its text)."""
    import sys

    import spacewar_ai.pilots.spec as spec_module

    parse = spec_module.parse_spec
    texts = []

    def counting(spec):
        if isinstance(spec, str):
            texts.append(spec)
        return parse(spec)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("spacewar_ai") \
                and getattr(module, "parse_spec", None) is parse:
            monkeypatch.setattr(module, "parse_spec", counting)
    planner = "search:heuristic:hard+heuristic:hard@samples=1@horizon=4"
    result = evaluate(planner, "heuristic:medium", 2, seed=3)
    assert result["games"] == 2
    assert texts.count(planner) == 1 and texts.count("heuristic:medium") == 1
    assert "search:heuristic:hard+heuristic:hard" in capsys.readouterr().out
