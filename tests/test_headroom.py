"""scripts/headroom.py: the rollout planner that measures how far above a policy play can go."""

import pytest

from helpers import load_script

headroom = load_script("headroom")


def test_one_step_of_lookahead_beats_the_policy_it_looks_ahead_with():
    """The hard pilot against itself, then a planner whose rollouts fly the hard pilot: the
    planner wins more of the same games, by changing only a few of its decisions."""
    alone = headroom.plan_games(40, 0, "heuristic:hard", seed=0)
    planned = headroom.plan_games(40, 30, "heuristic:hard", seed=0)
    assert alone["overridden"] == 0.0
    assert planned["wins"] >= alone["wins"] + 0.15
    assert 0.0 < planned["overridden"] < 0.2
    assert planned["wins"] + planned["losses"] + planned["other"] == pytest.approx(1.0)


def test_bad_arguments_are_named(capsys):
    with pytest.raises(SystemExit):
        headroom.main(["--games", "0"])
    assert "games=0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        headroom.main(["--rollout", "nosuchpilot", "--games", "2", "--horizon", "1"])
    assert "nosuchpilot" in capsys.readouterr().err
