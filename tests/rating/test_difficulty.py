"""The difficulty ladder, a player's rating on the pilots' scale and `auto`: ratings fitted from
hand-made games, auto's moves on a hand-made sequence, the player book in a SQLite file, and
stand-in players followed by auto."""

import json
import math

import pytest

from spacewar_ai.rating.difficulty import (
    FIT_GAMES,
    START_LEVEL,
    Follow,
    Level,
    PlayerBook,
    Rated,
    fit_players,
    ladder,
    level_named,
    player_name,
    rated_spec,
)
from spacewar_ai.rating.ratings import expected_score, score_of

LEVELS = tuple(Level(k + 1, f"pilot-{k + 1}", f"level {k + 1}", 1000.0 + 200.0 * k, 30.0)
               for k in range(6))


def test_a_players_rating_is_where_their_score_says_with_an_interval_that_narrows():
    # Even against a pilot rated 1600: the rating lands on 1600.
    even = fit_players([("ada", 1600.0, s) for s in (1.0, 0.0) * 50], start=1500.0)["ada"]
    assert even.rating == pytest.approx(1600.0, abs=2.0) and even.games == 100
    # Three in four against 1500: about 190 above it (log-odds of 3 on the Elo scale), pulled a
    # little towards the start by the prior's one drawn game.
    games = [("ada", 1500.0, s) for s in (1.0, 1.0, 1.0, 0.0) * 25]
    fitted = fit_players(games, start=1500.0)["ada"]
    assert 180.0 < fitted.rating - 1500.0 < 191.0
    wider = fit_players(games[:20], start=1500.0)["ada"]
    assert wider.ci95 > 2 * fitted.ci95 > 0
    # Winning everything is a finite estimate, and no game at all an infinite interval.
    perfect = fit_players([("ada", 1500.0, 1.0)] * 5, start=1500.0)["ada"]
    assert 1500.0 < perfect.rating < 2100.0
    assert fit_players([], start=1500.0) == {}
    assert Rated(1500.0, math.inf, 0).text() == "no rated games yet"


def test_two_people_are_rated_together_with_the_pilots_held_fixed():
    games = [("ada", "bob", 1.0)] * 6 + [("ada", "bob", 0.0)] * 2
    games += [("bob", 1400.0, s) for s in (1.0, 0.0) * 10]
    fitted = fit_players(games, start=1500.0)
    # bob scores even against a 1400 pilot; ada wins three in four against bob.
    assert fitted["bob"].rating == pytest.approx(1400.0, abs=60.0)
    assert 120.0 < fitted["ada"].rating - fitted["bob"].rating < 200.0
    assert (fitted["ada"].games, fitted["bob"].games) == (8, 28)


def test_auto_picks_the_level_nearest_even_on_a_hand_made_sequence():
    follow = Follow(Rated(0.0, math.inf, 0), LEVELS)
    assert follow.level.number == START_LEVEL and "new player" in follow.reason
    moves = [follow.update(Rated(r, 100.0, 5)).number for r in (1390.0, 1590.0, 1610.0, 9999.0,
                                                               0.0)]
    assert moves == [3, 4, 4, 6, 1]
    follow.update(Rated(1560.0, 80.0, 12))
    assert follow.level.number == 4 and "rated 1600" in follow.reason and "44%" in follow.reason
    assert expected_score(1500.0, 1500.0) == 0.5


def test_the_book_keeps_games_by_name_and_refits_from_them(tmp_path):
    path = tmp_path / "runs" / "players.db"
    book = PlayerBook(path, start=1500.0)
    assert book.rating("ada") == Rated(1500.0, math.inf, 0) and not path.exists()
    for score in (1.0, 1.0, 0.0, 1.0):
        book.record("ada", "heuristic:hard", score, 1700.0)
    book.record("bob", "ada", 0.0)
    again = PlayerBook(path, start=1500.0)  # another process opening the same file
    ada, bob = again.ratings("bob")["ada"], again.ratings("bob")["bob"]
    assert ada.games == 5 and ada.rating > 1700.0 and bob.rating < ada.rating
    assert again.rating("cy").games == 0


def test_a_refit_reads_at_most_its_budget_of_games(tmp_path, monkeypatch):
    import spacewar_ai.rating.difficulty as difficulty

    book = PlayerBook(tmp_path / "players.db", start=1500.0)
    for _ in range(12):
        book.record("ada", "x", 0.0, 1500.0)
    for _ in range(4):
        book.record("ada", "x", 1.0, 1500.0)
    monkeypatch.setattr(difficulty, "FIT_GAMES", 4)
    latest = book.rating("ada")
    assert latest.games == 4 and latest.rating > 1500.0  # the latest four, all won
    assert FIT_GAMES >= 100


def test_the_shipped_ladder_is_ordered_evenly_spaced_and_names_every_difficulty():
    levels = ladder()
    whole = [level.number for level in levels if level.number == int(level.number)]
    assert whole == list(range(1, len(whole) + 1)) and len(whole) >= 6
    assert all(level.number * 2 == int(level.number * 2) for level in levels)
    ratings = [level.rating for level in levels if level.number in whole]
    assert ratings == sorted(ratings)
    # Even steps: each whole level within 50 Elo of the mean step above the one below it, so
    # that a player who beats one level meets the next as the same climb.
    steps = [high - low for low, high in zip(ratings, ratings[1:])]
    mean = sum(steps) / len(steps)
    assert all(abs(step - mean) <= 50.0 for step in steps), (steps, mean)
    assert level_named("easy") == levels[0] and level_named("insane") == levels[-1]
    assert level_named(" 2 ").number == 2
    for bad in ("0", "grandmaster", str(len(whole) + 1), "nan"):
        with pytest.raises(ValueError, match="auto, or one of easy, medium, hard, insane"):
            level_named(bad)
    assert rated_spec("heuristic:hard") is not None and rated_spec("random") is None
    assert rated_spec(levels[-1].spec.upper()) == levels[-1].rating


def test_scores_and_names_read_as_ratings_and_pages_need():
    assert [score_of(w, 0) for w in (0, 1, None)] == [1.0, 0.0, 0.5]
    assert score_of("a", "a") == 1.0
    assert player_name("  ada   lovelace ") == "ada lovelace"
    for bad in ("", "x" * 41, "tab\x07"):
        with pytest.raises(ValueError, match="1 to 40 printable characters"):
            player_name(bad)


@pytest.mark.parametrize("strength", ["novice", "casual", "skilled"])
def test_auto_brings_a_stand_in_to_even_games_and_rates_it_where_the_tournament_did(strength):
    """A stand-in (a pilot with a person's limits) meets auto ten times from no games at all,
    30 games a time, as scripts/difficulty_ladder.py does: over games 11-20 it scores 40-60%,
    and after 30 games the estimate holds its measured rating within its interval in at least 8
    of the 10 runs."""
    from spacewar_ai.pilots.wrappers import stand_in
    from spacewar_ai.rating.difficulty import LADDER_PATH, follow_games

    measured = json.loads(LADDER_PATH.read_text())["standins"][strength]
    runs = [follow_games(stand_in(strength, 1 + k), 30, ladder(), seed=1000 * (k + 1))
            for k in range(10)]
    assert all(len(run["levels"]) == 30 and len(set(run["levels"])) > 1 for run in runs)
    later = [score for run in runs for score in run["scores"][10:20]]
    assert 0.40 <= sum(later) / len(later) <= 0.60, sum(later) / len(later)
    held = sum(abs(run["rating"] - measured["rating"]) <= run["ci95"] for run in runs)
    assert held >= 8, [(run["rating"], run["ci95"]) for run in runs]
