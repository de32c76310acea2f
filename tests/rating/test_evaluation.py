"""The evaluation mode: a match with its interval, causes of death and accuracy."""

from pathlib import Path

import pytest

from spacewar_ai.rating.evaluation import evaluate
from spacewar_ai.rating.match import wilson_interval
from spacewar_ai.training.trainer import Trainer
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
