"""The evaluation mode: a match with its interval, causes of death and accuracy."""

from pathlib import Path

from spacewar_ai.rating.evaluation import evaluate
from spacewar_ai.training.trainer import Trainer
from tests.helpers import tiny_run


def test_evaluate_prints_wins_interval_and_causes(tmp_path, capsys):
    out = Trainer(tiny_run(tmp_path), quiet=True).run()
    result = evaluate(str(Path(out["run_dir"]) / "latest.pt"), "heuristic:easy", 20, seed=1)
    text = capsys.readouterr().out
    assert "95% CI" in text and "deaths of heuristic:easy" in text and "mean game length" in text
    assert result["wins"] + result["losses"] + result["draws"] == 20
    lo, hi = result["ci"]
    assert lo <= result["win_rate"] <= hi
