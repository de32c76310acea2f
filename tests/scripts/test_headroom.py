"""docs/log/probes/headroom.py: the rollout planner that measures how far above a policy play can go."""

import pytest

from tests.helpers import load_script

headroom = load_script("headroom")


@pytest.fixture(scope="module")
def planned():
    """The greedy planner over the hard pilot on 40 games, exact model: shared by two tests."""
    return headroom.plan_games(40, 30, "heuristic:hard", seed=0)


@pytest.mark.slow
def test_one_step_of_lookahead_beats_the_policy_it_looks_ahead_with(planned):
    """The hard pilot against itself, then a planner whose rollouts fly the hard pilot: the
    planner wins more of the same games, by changing only a few of its decisions."""
    alone = headroom.plan_games(40, 0, "heuristic:hard", seed=0)
    assert alone["overridden"] == 0.0
    assert planned["wins"] >= alone["wins"] + 0.15
    assert 0.0 < planned["overridden"] < 0.2
    assert planned["wins"] + planned["losses"] + planned["other"] == pytest.approx(1.0)
    # The overrides are accounted for: as many action swaps as overridden decisions, each a
    # real change, at places inside the games played.
    swaps = planned["changes"]
    assert sum(swaps.values()) == round(planned["overridden"] * planned["decisions"])
    assert all(a != b for a, b in swaps)
    # Decision indices, not frames: the mean index lies within a mean game's length (40 games).
    assert 0 < planned["when_all"] < planned["decisions"] / 40
    assert 0 <= planned["when"] < planned["decisions"] / 40 * 3
    # Distances in game units (measured: 372 for all decisions, 380 for the overrides), not in
    # the observation's scaled units, which would stay under 1.5; the farthest point is 724 away.
    assert 150 < planned["distance_all"] < 724
    assert 150 < planned["distance"] < 724


@pytest.mark.slow
def test_sampled_rollouts_are_reproducible_and_still_improve_the_policy():
    """With samples > 1 the shipped model samples its actions in the rollouts and each action is
    judged by the mean of several futures; a seed fixes those samples."""
    alone = headroom.plan_games(24, 0, "pretrained", seed=3)
    first = headroom.plan_games(24, 20, "pretrained", seed=3, samples=3)
    again = headroom.plan_games(24, 20, "pretrained", seed=3, samples=3)
    assert first == again
    assert first["wins"] >= alone["wins"] + 0.1
    assert 0.0 < first["overridden"] < 0.3


@pytest.mark.slow
def test_a_wrong_model_of_the_opponent_is_worth_less_than_the_right_one(planned):
    """--opponent-noise makes the hard pilot act at random in the rollouts only: the planner then
    foresees it wrongly, overrides its rollout policy far more often and wins fewer of the same
    games than with the exact model (measured on these 40 games: 52.5% against 77.5%)."""
    exact = planned
    noisy = headroom.plan_games(40, 30, "heuristic:hard", seed=0, opponent_noise=0.5)
    assert noisy == headroom.plan_games(40, 30, "heuristic:hard", seed=0, opponent_noise=0.5)
    assert noisy["wins"] <= exact["wins"] - 0.15
    assert noisy["overridden"] > 3 * exact["overridden"]
    with pytest.raises(ValueError, match="opponent_noise=1.5"):
        headroom.plan_games(2, 1, "heuristic:hard", opponent_noise=1.5)


def test_bad_arguments_are_named(capsys):
    with pytest.raises(SystemExit):
        headroom.main(["--games", "0"])
    assert "games=0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        headroom.main(["--samples", "0"])
    assert "samples=0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        headroom.main(["--opponent-noise", "2"])
    assert "opponent_noise=2.0 must be in [0, 1]" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        headroom.main(["--rollout", "nosuchpilot", "--games", "2", "--horizon", "1"])
    assert "nosuchpilot" in capsys.readouterr().err
