"""Population-based training on Ray Tune (a real local Ray instance)."""

from __future__ import annotations

import json
import os
import uuid

import numpy as np
import pytest

from tests.commands import cli
from tests.helpers import RAY_GROUP, ROOT

pytestmark = RAY_GROUP

# Ray instances here use token authentication, as a cluster that takes visitors would.
AUTH = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": uuid.uuid4().hex}


def _cli(*args, env=None, cwd=None, timeout=600):
    return cli(*args, timeout=timeout, cwd=cwd or ROOT,
               env={**os.environ, "SDL_VIDEODRIVER": "dummy", **AUTH, **(env or {})})


@pytest.mark.slow
def test_population_based_training_exploits_and_restores(tmp_path):
    args = ["--pbt", "--population", "2", "--pbt-rounds", "2", "--timesteps", "4096",
            "--num-envs", "8", "--eval-episodes", "2", "--seed", "4", "--quiet",
            "--checkpoint-dir", str(tmp_path / "ck")]
    runs = []
    for k in range(2):
        out = _cli(*args, "--run-name", f"pbt{k}", cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-3000:]
        # Only this run's own lines: no report of Tune's with a TensorBoard folder of its own,
        # no hint of Tune's about reusing actors.
        assert "tensorboard" not in (out.stdout + out.stderr).lower(), out.stdout
        assert "reuse_actors" not in out.stderr and "View detailed results" not in out.stdout
        runs.append(json.loads((tmp_path / "ck" / f"pbt{k}" / "lineage.json").read_text()))
    lineage = runs[0]
    assert {r["member"] for r in lineage} == {"member0", "member1"}
    # The yardstick's figure is a mean of its matches' win rates, 2 games each (--eval-episodes):
    # a whole number of games won out of 2 per yardstick pilot.
    from spacewar_ai.training.population.pbt import YARDSTICK

    played = 2 * len(YARDSTICK)
    assert all(np.isfinite(r["league_rating"]) for r in lineage)
    assert all(abs(r["yardstick_win_rate"] * played - round(r["yardstick_win_rate"] * played))
               < 1e-9 for r in lineage)
    exploits = [r for r in lineage if r["cloned_from"]]
    assert exploits, lineage  # two members, a half quantile: the weaker takes the stronger
    clone = exploits[0]
    donor = next(r for r in lineage if r["member"] == clone["cloned_from"]
                 and r["round"] == clone["round"] - 1)
    # Restored from the donor's checkpoint: the weights it starts the round with are the ones
    # the donor ended the last round with, not its own.
    own = next(r for r in lineage if r["member"] == clone["member"]
               and r["round"] == clone["round"] - 1)
    assert clone["weights_in"] == donor["weights_out"] != own["weights_out"]
    assert clone["steps"] > donor["steps"]
    # The same seed and population: the same schedule of exploits and the same hyperparameters.
    assert runs[0] == runs[1]
    run = tmp_path / "ck" / "pbt0"
    table = (run / "lineage.md").read_text().splitlines()
    assert sum(line.startswith(("| 1 | member", "| 2 | member")) for line in table) == 4
    assert (run / "lineage.png").stat().st_size > 1000
    assert list((tmp_path / "runs" / "pbt0" / "member0").glob("events.out.tfevents.*"))
    evaluated = _cli("--evaluate", "--checkpoint", str(run / "best.pt"), "--eval-episodes", "2",
                     "--quiet", "--checkpoint-dir", str(tmp_path / "ck"), cwd=tmp_path)
    assert evaluated.returncode == 0 and "pbt0/best.pt vs heuristic:hard: 2 games" in evaluated.stdout


def test_league_rating_rises_with_the_members_results():
    from types import SimpleNamespace

    from spacewar_ai.training.population.pbt import league_rating

    def rating(score):
        return league_rating(SimpleNamespace(results={"heuristic:hard": [score] * 40,
                                                      "self": [0.5] * 40, "unplayed": []}))

    assert rating(0.2) < rating(0.5) < rating(0.9)
