"""The generalization panel: pilots of different styles that no training meets, and --panel."""

import dataclasses
import re

import numpy as np
import pytest

from spacewar_ai.config import RunConfig
from spacewar_ai.game.engine import GameBatch
from spacewar_ai.main import main
from spacewar_ai.pilots.build import make_pilot
from spacewar_ai.rating.panel import PANEL_DIR, evaluate_panel, label, panel_specs


def test_the_panel_has_six_styles_of_strategy_file_and_three_networks():
    specs = panel_specs()
    assert len([s for s in specs if s.startswith("strategy:")]) >= 6
    assert len([s for s in specs if s.startswith("ppo:")]) == 3
    assert {label(s) for s in specs} >= {"orbiter", "brawler", "sniper", "dodger", "spinner",
                                         "ambusher"}


def test_panel_pilots_fly_differently():
    """Same 64 positions from the middle of games, nine pilots: no two choose the same actions
    throughout."""
    batch = GameBatch(64)
    batch.reset(seeds=np.arange(64, dtype=np.int64) + 7)
    rng = np.random.default_rng(0)
    for _ in range(25):  # ships moving, torpedoes in flight
        batch.step(rng.integers(0, 6, size=(64, 2)))
    obs = batch.observe()[:, 0].copy()
    choices = {}
    for spec in panel_specs():
        pilot = make_pilot(spec)
        try:
            choices[label(spec)] = tuple(int(a) for a in pilot.act(obs))
        finally:
            pilot.close()
    assert len(set(choices.values())) == len(choices), choices


def test_no_training_opponent_is_a_panel_pilot():
    cfg = RunConfig()
    used = [*cfg.league.curriculum, cfg.train.eval_opponent,
            *[getattr(cfg.league, f.name) for f in dataclasses.fields(cfg.league)
              if isinstance(getattr(cfg.league, f.name), str)]]
    assert not any(str(PANEL_DIR) in s or "panel/" in s for s in used)


def test_panel_evaluation_reports_each_pilot_and_the_mean(capsys):
    out = evaluate_panel("heuristic:hard", games=2, seed=3, quiet=True)
    assert [r["opponent"] for r in out["rows"]] == [label(s) for s in panel_specs()]
    assert all(r["games"] == 2 for r in out["rows"])
    assert out["mean"] == pytest.approx(np.mean([r["win_rate"] for r in out["rows"]]))
    printed = capsys.readouterr().out
    assert "panel mean" in printed and len(re.findall(r"95% CI", printed)) == len(out["rows"])


def test_panel_flag_on_the_command_line(capsys):
    assert main(["--evaluate", "--checkpoint", "heuristic:medium", "--panel",
                 "--eval-episodes", "2", "--quiet"]) == 0
    assert "heuristic:medium against the panel" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--evaluate", "--checkpoint", "pretrained", "--panel", "--opponent", "idle"])
    assert "--opponent does not apply to --panel" in capsys.readouterr().err
