"""Matches and their GameResults: sides swapped, every figure of a game, scores that are the
environment's own rewards, and the report."""

import numpy as np
import pytest

from spacewar_ai.config import GameConfig, RewardConfig
from spacewar_ai.rating.match import play_match, report


@pytest.mark.parametrize("personality", ["standard", "aggressive", "survival", "efficient",
                                         "sniper"])
def test_a_games_score_is_the_sum_of_the_rewards_the_environment_paid(personality):
    """GameResult.score recomputes, from the game's figures alone, what the engine paid each
    ship step by step: under the standard table and every personality."""
    reward = RewardConfig.preset(personality)
    paid = np.zeros((40, 2))

    def add(obs, actions, batch, running):
        paid[running] += batch.reward[running]

    r = play_match("heuristic:hard", "heuristic:easy", 40, seed=3, reward_config=reward,
                   on_step=add)
    for g, game in enumerate(r.games):
        got = (game.score("a", reward), game.score("b", reward))
        want = (paid[g, game.a_side], paid[g, 1 - game.a_side])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6, err_msg=str(game.to_dict()))
    assert {g.how for g in r.games} >= {"TORPEDO"}


def test_every_figure_of_a_game_is_kept():
    r = play_match("heuristic:hard", "heuristic:medium", 60, seed=1)
    games = r.games
    assert all(g.decisions == -(-g.frames // GameConfig().frame_skip) for g in games)
    assert all(g.kills_a == (g.real_winner == "a") for g in games if g.how == "TORPEDO")
    assert all(0 <= g.fuel_a <= GameConfig().max_fuel and g.ammo_a == 32 - g.shots_a
               for g in games)
    assert sum(g.dodged_a + g.dodged_b for g in games) > 0  # the hard pilot sidesteps torpedoes
    assert 0 < r.mean("a", "shots") and r.accuracy("a") > 0
    text = report(r)
    assert "torpedoes dodged" in text and "fuel used" in text


def test_results_go_to_json_lines(tmp_path):
    import json

    r = play_match("heuristic:easy", "random", 6, seed=2)
    r.write_jsonl(tmp_path / "games.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "games.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and rows[0]["a"] == "heuristic:easy"
    assert {"how", "shots_a", "fuel_b", "dodged_a", "score_a", "decisions"} <= set(rows[0])


def test_a_demo_shows_its_progress_as_a_demo(capsys):
    from spacewar_ai.main import main

    assert main(["--demo", "--players", "heuristic:easy,idle", "--episodes", "2"]) == 0
    err = capsys.readouterr().err  # not a terminal: the bar's final line only
    assert err.startswith("demo: 100%") and "evaluation" not in err
