"""Tournaments and ratings: Bradley-Terry and Elo, paired games, determinism across workers,
the ratings file."""

import json
import random
from pathlib import Path

import numpy as np
import pytest

from spacewar_ai.ratings import (RatingsFile, Results, bradley_terry, elo_incremental,
                                 standings)
from spacewar_ai.tournament import crosstable_markdown, play_round_robin, resolve_entrants


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


def test_every_spec_resolves_and_bad_ones_are_named(tmp_path):
    entrants = resolve_entrants(["idle", "random", "heuristic:easy", "heuristic:medium",
                                 "heuristic:hard", "pretrained"])
    assert [e.name for e in entrants][-1] == "pretrained"
    with pytest.raises(ValueError, match="'nonsense'"):
        resolve_entrants(["idle", "nonsense"])
    with pytest.raises(ValueError, match="twice"):
        resolve_entrants(["idle", "idle"])


EXAMPLE_STRATEGY = Path(__file__).resolve().parents[1] / "examples" / "strategies" / "aim_and_fire.py"


def test_round_robin_pairs_swap_sides_and_is_identical_with_1_or_2_workers():
    # A sandboxed strategy file takes part too: its child process must not change the results.
    entrants = resolve_entrants(["random", "heuristic:hard", f"strategy:{EXAMPLE_STRATEGY}"])
    one = play_round_robin(entrants, 10, seed=5, workers=1)
    two = play_round_robin(entrants, 10, seed=5, workers=2)
    assert len(one.matches) == 3
    assert {e.name for e in entrants} >= {"strategy:aim_and_fire.py"}
    for (i, j, a), (k, l, b) in zip(one.matches, two.matches):
        assert (i, j) == (k, l)
        assert [g.a_side for g in a.games] == [0] * 5 + [1] * 5
        assert [g.seed for g in a.games[:5]] == [g.seed for g in a.games[5:]]
        assert [(g.winner, g.real_winner, g.frames) for g in a.games] == \
               [(g.winner, g.real_winner, g.frames) for g in b.games]
    rows = standings(one)
    assert rows[-1]["name"] == "random"
    table = crosstable_markdown(one, rows)
    assert table.count("\n") == 4 and rows[0]["name"] in table.splitlines()[2]


def test_ratings_file_accumulates_and_survives_a_failed_write(tmp_path, monkeypatch):
    entrants = resolve_entrants(["idle", "heuristic:hard"])
    result = play_round_robin(entrants, 4, seed=1)
    path = tmp_path / "ratings.json"
    ratings = RatingsFile(path)
    ratings.add(result, standings(result), "first")
    before = path.read_bytes()
    assert RatingsFile(path).top(1)[0]["name"] == "heuristic:hard"

    import spacewar_ai.checkpoints as t

    def dies(path_, write):
        raise KeyboardInterrupt  # a kill during the write

    monkeypatch.setattr(t, "atomic_write_bytes", dies)
    with pytest.raises(KeyboardInterrupt):
        RatingsFile(path).add(result, standings(result), "second")
    assert path.read_bytes() == before
    monkeypatch.undo()
    again = RatingsFile(path)
    again.add(result, standings(result), "second")
    data = json.loads(path.read_text())
    assert len(data["history"]) == 2
    hard = next(p for p in data["players"].values() if p["name"] == "heuristic:hard")
    assert sum(g for _, g in hard["results"].values()) == 8


def test_cli_tournament_writes_crosstable_standings_and_ratings(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    ratings = tmp_path / "ratings.json"
    cmd = [sys.executable, "-m", "spacewar_ai", "--tournament", "--players",
           "random,heuristic:easy,heuristic:hard", "--matches-per-pairing", "6",
           "--ratings-file", str(ratings), "--workers", "1", "--save-replays", "2"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert out.returncode == 0, out.stderr
    assert "18 games" in out.stdout and "| 1 | heuristic:hard |" in out.stdout
    assert list((tmp_path / "runs" / "tournaments").glob("*/crosstable.md"))
    import pygame

    png = next((tmp_path / "runs" / "tournaments").glob("*/ratings.png"))
    assert pygame.image.load(str(png)).get_height() == 60 + 34 * 3
    data = json.loads(ratings.read_text())
    assert len(data["players"]) == 3 and len(data["history"]) == 1
    # Two replays per pairing (one per side), each replaying to its recorded final state.
    from spacewar_ai.replays import load_replay, replay_game

    replays = sorted((tmp_path / "runs" / "replays").glob("*.json"))
    assert len(replays) == 6
    for path in replays:
        replay_game(load_replay(path))
    bad = subprocess.run(cmd[:4] + ["idle,ppo:/no/such.pt"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert bad.returncode == 2 and "ppo:/no/such.pt" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_champions_come_from_the_top_of_the_ratings_file(tmp_path):
    from spacewar_ai.agents import PPOAgent
    from spacewar_ai.config import PPOConfig
    from spacewar_ai.ratings import best_models

    paths = []
    for k in range(2):
        p = tmp_path / f"m{k}.pt"
        PPOAgent(36, 6, PPOConfig(hidden_sizes=(8,))).save(p)
        paths.append(p)
    entrants = resolve_entrants([f"ppo:{paths[0]}", f"ppo:{paths[1]}", "heuristic:hard"])
    result = Results(entrants)
    result.matches = play_round_robin(entrants, 4, seed=0).matches
    RatingsFile(tmp_path / "ratings.json").add(result, standings(result), "t")
    got = best_models(tmp_path, exclude=paths[1])
    assert [path for path, _ in got][:1] == [paths[0]] and "top-rated" in got[0][1]


def test_swiss_pairs_by_score_without_repeats():
    from spacewar_ai.tournament import play_swiss

    entrants = resolve_entrants(["idle", "random", "heuristic:easy", "heuristic:medium",
                                 "heuristic:hard"])
    result = play_swiss(entrants, 4, seed=3)
    pairs = [(i, j) for i, j, _ in result.matches]
    assert len(pairs) == len(set(pairs)), "no pair meets twice"
    assert len(pairs) == 2 * 4  # 4 rounds (ceil(log2 5) + 1), 2 games each, one player sits out
    assert standings(result)[0]["name"] in ("heuristic:hard", "heuristic:medium")


def test_elimination_follows_the_seeded_bracket():
    from spacewar_ai.tournament import play_elimination

    specs = ["idle", "random", "heuristic:easy", "heuristic:hard", "heuristic:medium"]
    entrants = resolve_entrants(specs)
    seeding = [1000, 1100, 1300, 1700, 1500]  # hard first, then medium, easy, random, idle
    result = play_elimination(entrants, 4, seed=0, seeding=seeding)
    first = {(entrants[i].name, entrants[j].name) for i, j, _ in result.matches[:1]}
    # 5 players in a bracket of 8: seeds 1-3 get byes, seed 4 (random) meets seed 5 (idle).
    assert first == {("idle", "random")}
    assert len(result.matches) == 4  # n - 1 matches decide a single-elimination event
    final = result.matches[-1]
    assert {entrants[final[0]].name, entrants[final[1]].name} == {"heuristic:hard",
                                                                    "heuristic:medium"}


def test_cli_evaluation_adds_to_the_ratings_file(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    ratings = tmp_path / "ratings.json"
    out = subprocess.run([sys.executable, "-m", "spacewar_ai", "--evaluate", "--checkpoint",
                          "pretrained", "--opponent", "heuristic:easy", "--eval-episodes", "10",
                          "--ratings-file", str(ratings)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300, env={**os.environ, "PYTHONPATH": str(root)})
    assert out.returncode == 0, out.stderr
    data = json.loads(ratings.read_text())
    assert {p["name"] for p in data["players"].values()} == {"pretrained", "heuristic:easy"}
    assert data["history"][0]["label"] == "evaluation"
