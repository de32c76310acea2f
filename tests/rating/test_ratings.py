"""Ratings: Bradley-Terry and Elo fitted from results, the ratings file, the best models we know."""

import json
import random

import numpy as np
import pytest

from spacewar_ai.rating.ratings import (
    RatingsFile,
    Results,
    bradley_terry,
    elo_incremental,
    standings,
)
from spacewar_ai.rating.tournament import play_round_robin, resolve_entrants
from tests.helpers import ROOT


def _synthetic(strengths, games_per_pair, seed):
    """Score and games matrices from Bradley-Terry players with the given Elo strengths."""
    rng = np.random.default_rng(seed)
    n = len(strengths)
    s = np.zeros((n, n))
    g = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            p = 1 / (1 + 10 ** ((strengths[j] - strengths[i]) / 400))
            wins = rng.binomial(games_per_pair, p)
            s[i, j], s[j, i] = wins, games_per_pair - wins
            g[i, j] = g[j, i] = games_per_pair
    return s, g


def test_bradley_terry_recovers_known_strengths_and_intervals_shrink():
    true = np.array([1300.0, 1450.0, 1500.0, 1600.0, 1650.0])
    true_c = true - true.mean() + 1500
    widths = []
    for games in (50, 800):
        s, g = _synthetic(true, games, seed=1)
        rating, se = bradley_terry(s, g)
        assert np.all(np.abs(rating - true_c) < 3.5 * se + 5), (rating, true_c, se)
        assert list(np.argsort(rating)) == list(np.argsort(true))
        widths.append(se.mean())
    assert widths[1] < widths[0] / 3  # 16x the games: intervals about 4x narrower


def test_fitted_ratings_ignore_match_order_but_incremental_elo_does_not():
    entrants = resolve_entrants(["random", "heuristic:easy", "heuristic:medium"])
    played = play_round_robin(entrants, 20, seed=4)
    replayed = Results(entrants, list(reversed(played.matches)))
    a, b = standings(played), standings(replayed)
    assert [r["name"] for r in a] == [r["name"] for r in b]
    assert [r["rating"] for r in a] == pytest.approx([r["rating"] for r in b], abs=1e-6)
    assert [r["elo"] for r in a] != pytest.approx([r["elo"] for r in b], abs=1e-6)
    games = played.game_sequence()
    shuffled = games[:]
    random.Random(0).shuffle(shuffled)
    assert not np.allclose(elo_incremental(3, games), elo_incremental(3, shuffled))


def test_elo_update_matches_the_original_formula():
    r = elo_incremental(2, [(0, 1, 1.0)])
    assert r == pytest.approx([1516.0, 1484.0])
    r = elo_incremental(2, [(0, 1, 1.0), (0, 1, 0.5)])
    expected = 1 / (1 + 10 ** ((1484 - 1516) / 400))
    assert r[0] == pytest.approx(1516 + 32 * (0.5 - expected))


def test_a_perfect_record_still_gets_a_finite_rating():
    s = np.array([[0, 20], [0, 0]], dtype=float)
    g = np.array([[0, 20], [20, 0]], dtype=float)
    rating, se = bradley_terry(s, g)
    assert np.all(np.isfinite(rating)) and rating[0] > rating[1] + 200


def test_ratings_file_accumulates_and_survives_a_failed_write(tmp_path, monkeypatch):
    entrants = resolve_entrants(["idle", "heuristic:hard"])
    result = play_round_robin(entrants, 4, seed=1)
    path = tmp_path / "ratings.json"
    ratings = RatingsFile(path)
    ratings.add(result, standings(result), "first")
    before = path.read_bytes()
    assert RatingsFile(path).top(1)[0]["name"] == "heuristic:hard"

    import spacewar_ai.util.files as t

    def dies(path_, write):
        raise KeyboardInterrupt  # a kill during the write

    monkeypatch.setattr(t, "atomic_write_bytes", dies)
    with pytest.raises(KeyboardInterrupt):
        RatingsFile(path).add(result, standings(result), "second")
    assert path.read_bytes() == before
    monkeypatch.undo()
    # What a SIGKILL mid-write leaves (no Python code runs to remove it): the next write, under
    # the file's lock, removes it; other files' temporaries are not its to touch.
    left = tmp_path / ".ratings.json.k1ll3d.tmp"
    left.write_bytes(before[:100])
    other = tmp_path / ".other.json.x.tmp"
    other.write_bytes(b"{}")
    again = RatingsFile(path)
    again.add(result, standings(result), "second")
    assert not left.exists() and other.exists()
    data = json.loads(path.read_text())
    assert len(data["history"]) == 2
    hard = next(p for p in data["players"].values() if p["name"] == "heuristic:hard")
    assert sum(g for _, g in hard["results"].values()) == 8


def test_champions_come_from_the_top_of_the_ratings_file(tmp_path):
    from spacewar_ai.agents.ppo import PPOAgent
    from spacewar_ai.config import PPOConfig
    from spacewar_ai.pilots.build import PRETRAINED_PATH
    from spacewar_ai.rating.ratings import best_models

    paths = []
    for k in range(2):
        p = tmp_path / f"m{k}.pt"
        PPOAgent(36, 6, PPOConfig(hidden_sizes=(8,))).save(p)
        paths.append(p)
    entrants = resolve_entrants([f"ppo:{paths[0]}", f"ppo:{paths[1]}", "heuristic:hard"])
    result = Results(entrants)
    result.matches = play_round_robin(entrants, 4, seed=0).matches
    RatingsFile(tmp_path / "ratings.json").add(result, standings(result), "t")
    # 8 rated games each: too few to count as a champion.
    assert [path for path, _ in best_models(tmp_path)] == [PRETRAINED_PATH]
    result.matches = play_round_robin(entrants, 50, seed=0).matches
    RatingsFile(tmp_path / "ratings.json").add(result, standings(result), "t")
    got = best_models(tmp_path, exclude=paths[1])
    assert [path for path, _ in got][:1] == [paths[0]] and "top-rated" in got[0][1]
    assert "108 games" in got[0][1]


def test_a_run_of_another_game_is_no_champion_of_this_one(tmp_path):
    """best_models offers a run's best.pt only for the game it was trained in: a network of the
    peer's rules is not a champion of the 1962 game, nor the shipped network one of the peer's."""
    from spacewar_ai.agents.ppo import PPOAgent
    from spacewar_ai.config import GameConfig, PPOConfig
    from spacewar_ai.pilots.build import PRETRAINED_PATH
    from spacewar_ai.rating.ratings import MIN_EVAL_GAMES, MIN_RUN_DECISIONS, best_models

    peer = GameConfig.preset("rllib_sw")
    counters = {"global_step": MIN_RUN_DECISIONS, "best_eval_games": MIN_EVAL_GAMES,
                "best_eval": 0.5}
    runs = {}
    for name, game in (("classic", GameConfig()), ("peer", peer)):
        runs[name] = tmp_path / name / "best.pt"
        runs[name].parent.mkdir()
        PPOAgent(game.obs_dim, game.num_actions, PPOConfig(hidden_sizes=(8,))).save(
            runs[name], {"counters": counters, "config": {"game": game.to_dict()}})
    assert [path for path, _ in best_models(tmp_path)] == [runs["classic"], PRETRAINED_PATH]
    assert [path for path, _ in best_models(tmp_path, game=peer)] == [runs["peer"]]


@pytest.mark.slow
def test_two_tournaments_at_once_record_every_game(tmp_path):
    """Two runs writing one ratings file at once: each adds its games to what is on disk when it
    writes (under the file's lock), so none are lost, and each report gets a folder of its own."""
    import os
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "spacewar_ai", "--tournament", "--players",
           "heuristic:easy,random", "--matches-per-pairing", "20", "--ratings-file",
           str(tmp_path / "r.json"), "--workers", "1", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    data = json.loads((tmp_path / "r.json").read_text())
    games = sum(g for p in data["players"].values() for _, g in p["results"].values()) / 2
    assert games == 40 and len(data["history"]) == 2
    assert len(list((tmp_path / "runs" / "tournaments").iterdir())) == 2


@pytest.mark.parametrize("content, said", [
    ("{}", "expected a JSON object with 'players'"), ("[]", "got list"), ("null", "got NoneType"),
    ('{"players": {"a": {"spec": "idle", "results": {"b": [NaN, 4]}}}, "history": []}',
     "[points, games]"),
    ('{"players": {"a": {"spec": "idle", "results": {"b": [5, 4]}}}, "history": []}',
     "[points, games]"),
    ('{"players": []', "not valid JSON"), (b"\xff\xfe{}", "not UTF-8")])
def test_a_malformed_ratings_file_is_named_with_the_fix(tmp_path, content, said):
    path = tmp_path / "r.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ValueError) as exc:
        RatingsFile(path)
    message = str(exc.value)
    assert str(path) in message and said in message and "move it away" in message, message


def test_a_folder_is_no_ratings_file(tmp_path):
    with pytest.raises(ValueError, match="is a folder; give a file name"):
        RatingsFile(tmp_path)
