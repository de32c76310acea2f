"""The difficulty ladder, a player's rating on the pilots' scale, and `auto` (docs/human-play.md).

- `ladder()`: the levels, each a pilot spec with its rating and interval on one Bradley-Terry
  scale (Elo points; `REFERENCE_POOL` averages 1500), half levels between whole ones; measured
  by scripts/difficulty_ladder.py into `pretrained/difficulty.json`.
- `fit_players(games)`: people's ratings, the pilots' held fixed; a game between two people
  rates both; a torpedo win scores 1, a loss 0, anything else half.
- `PlayerBook`: every rated game of named players, in one SQLite file (`runs/players.db`).
- `Follow` (`--difficulty auto`): a new player starts at `START_LEVEL`; after each game the level
  whose expected score against the player's rating is nearest even plays next."""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..util.errors import UserError
from ..util.files import SHIPPED_DIR
from .ratings import ELO_SCALE, expected_score, score_of

LADDER_PATH = SHIPPED_DIR / "difficulty.json"
# The pilots every level is rated against: the scale's anchor (their mean is 1500).
REFERENCE_POOL = ("heuristic:easy", "heuristic:medium", "heuristic:hard", "pretrained")
START_LEVEL = 3  # where `auto` starts a player it has no games of
# The names --difficulty had before the ladder, as levels of it ("insane" is the top).
DIFFICULTY_NAMES = {"easy": 1, "medium": 4, "hard": 6.5, "insane": -1}
# A player's prior: this many drawn games against the start level, so that the first games move
# the estimate without throwing it to the ends of the scale.
PRIOR_GAMES = 1.0
MAX_NAME = 40
# What one refit reads, so a player's thousandth game costs what their hundredth did: each
# person's latest games, and the people linked to the player by games between people.
FIT_GAMES = 1000
FIT_PEOPLE = 50


@dataclass(frozen=True)
class Level:
    """A rung of the ladder: its number (1 the weakest; 3.5 a fine step between 3 and 4), the
    pilot spec that flies it, what it is in words, its rating and 95% interval, and its cost per
    decision in one game (ms)."""

    number: float
    spec: str
    words: str
    rating: float
    ci95: float
    ms: float = 0.0

    @property
    def label(self) -> str:
        return f"level {self.number:g} ({self.words})"


@dataclass(frozen=True)
class Rated:
    """A player's rating with its 95% interval (inf before any game) and games counted."""

    rating: float
    ci95: float
    games: int

    def text(self) -> str:
        if not self.games:
            return "no rated games yet"
        return (f"rating {self.rating:.0f} +- {self.ci95:.0f} ({self.games} game"
                f"{'s' if self.games != 1 else ''})")


@lru_cache(maxsize=4)
def _ladder_file(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


def ladder(path: str | Path = LADDER_PATH) -> tuple[Level, ...]:
    """The levels, weakest first, from the ladder file."""
    return tuple(Level(float(row["level"]), row["spec"], row["words"], float(row["rating"]),
                       float(row["ci95"]), float(row.get("ms", 0.0)))
                 for row in sorted(_ladder_file(path)["levels"], key=lambda row: row["level"]))


def start_level(levels: tuple[Level, ...] | None = None) -> Level:
    """Where `auto` starts a player it has no games of: `START_LEVEL`, or on a ladder without
    it, the level nearest it."""
    return min(levels or ladder(), key=lambda level: abs(level.number - START_LEVEL))


def rated_spec(spec: str, path: str | Path = LADDER_PATH) -> float | None:
    """The rating of the pilot a spec names where the ladder file rates it (a level, or a pilot
    of the reference pool); else None."""
    text = str(spec).strip().lower()
    rated = {spec.lower(): row["rating"] for spec, row in _ladder_file(path)["pool"].items()}
    rated.update({level.spec.lower(): level.rating for level in ladder(path)})
    return rated.get(text)


def level_named(name: str, levels: tuple[Level, ...] | None = None) -> Level:
    """The level a --difficulty value names: its number (1 to the top, or a half level such as
    3.5) or an old name (easy, medium, hard, insane). ValueError names the choices."""
    levels = levels or ladder()
    text = str(name).strip().lower()
    number = DIFFICULTY_NAMES.get(text)
    if number is None:
        try:
            number = float(text)
        except ValueError:
            number = None
    if number == -1:
        return levels[-1]
    for level in levels:
        if level.number == number:
            return level
    halves = [level.number for level in levels if level.number != int(level.number)]
    raise UserError(f"difficulty {name!r} is unknown: use a level from 1 to "
                    f"{levels[-1].number:g}"
                    + (f" (or a half level such as {halves[0]:g})" if halves else "")
                    + f", auto, or one of {', '.join(DIFFICULTY_NAMES)}")


def fit_players(games, start: float, prior_games: float = PRIOR_GAMES) -> dict[str, Rated]:
    """Ratings of the people in `games`, each a (player, opponent, score of player) with the
    opponent either another person's name or a pilot's fixed rating (a number). Each person
    also has `prior_games` drawn games against a pilot rated `start`; the interval comes from
    the real games alone (inf with none)."""
    theta: dict[str, float] = {}
    rows: list[tuple[str, str | float, float]] = []
    for player, opponent, score in games:
        theta.setdefault(player, start)
        if isinstance(opponent, str):
            theta.setdefault(opponent, start)
        rows.append((player, opponent, float(score)))
    for _ in range(200):  # coordinate Newton steps: each person's likelihood is concave
        moved = 0.0
        for name in theta:
            grad = prior_games * (0.5 - expected_score(theta[name], start))
            info = prior_games * _variance(theta[name], start)
            for mine, against in _games_of(name, theta, rows):
                grad += mine - expected_score(theta[name], against)
                info += _variance(theta[name], against)
            step = max(-400.0, min(400.0, ELO_SCALE * grad / info))
            theta[name] += step
            moved = max(moved, abs(step))
        if moved < 1e-6:
            break
    out = {}
    for name, value in theta.items():
        against = [other for _, other in _games_of(name, theta, rows)]
        info = sum(_variance(value, other) for other in against)
        ci = 1.96 * ELO_SCALE / math.sqrt(info) if info > 0 else math.inf
        out[name] = Rated(value, ci, len(against))
    return out


def _games_of(name: str, theta: dict[str, float], rows):
    """(the score of `name`, the opponent's rating) for each of `name`'s games."""
    for player, opponent, score in rows:
        if player == name:
            yield score, theta[opponent] if isinstance(opponent, str) else opponent
        elif opponent == name:
            yield 1.0 - score, theta[player]


def _variance(rating: float, opponent: float) -> float:
    p = expected_score(rating, opponent)
    return p * (1.0 - p)


def player_name(text) -> str:
    """A player's name as given (a flag, a page's field): 1 to 40 printable characters, spaces
    kept inside; ValueError names what to change."""
    name = " ".join(str(text or "").split())
    if not name or len(name) > MAX_NAME or not all(c.isprintable() for c in name):
        raise UserError(f"player name {str(text)[:60]!r} is invalid: use 1 to {MAX_NAME} "
                        "printable characters")
    return name


SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
    id INTEGER PRIMARY KEY, time REAL NOT NULL, player TEXT NOT NULL,
    opponent TEXT NOT NULL, opponent_rating REAL, score REAL NOT NULL);
CREATE INDEX IF NOT EXISTS games_player ON games (player);
CREATE INDEX IF NOT EXISTS games_opponent ON games (opponent);
"""


class PlayerBook:
    """Rated games of named players in a SQLite file. A game against a pilot keeps the pilot's
    rating as it was (`opponent_rating`); a game between two people keeps the second name, with
    no rating. SQLite locks the file, so a window and a server may share it."""

    def __init__(self, path: str | Path, start: float | None = None):
        self.path = Path(path)  # made at the first game recorded, not before
        self.start = start if start is not None else start_level().rating

    def _db(self):
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA)
        return contextlib.closing(db)

    def record(self, player: str, opponent: str, score: float,
               opponent_rating: float | None = None) -> None:
        """One game: `opponent` a pilot's spec with its rating, or another person's name."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute("INSERT INTO games (time, player, opponent, opponent_rating, score) "
                       "VALUES (?, ?, ?, ?, ?)",
                       (time.time(), player, opponent, opponent_rating, float(score)))

    def ratings(self, name: str) -> dict[str, Rated]:
        """The ratings of `name` and of everyone linked to them by games between people, fitted
        from all their games."""
        unrated = Rated(self.start, math.inf, 0)
        if not self.path.is_file():
            return {name: unrated}
        names, games, frontier = {name}, {}, [name]
        with self._db() as db:
            while frontier:
                who = frontier.pop(0)
                for row in db.execute("SELECT id, player, opponent, opponent_rating, score FROM "
                                      "games WHERE player = ? OR (opponent = ? AND "
                                      "opponent_rating IS NULL) ORDER BY id DESC LIMIT ?",
                                      (who, who, FIT_GAMES)):
                    gid, player, opponent, rating, score = row
                    games[gid] = (player, opponent if rating is None else rating, score)
                    for other in (player, opponent if rating is None else None):
                        if other is not None and other not in names and \
                                len(names) < FIT_PEOPLE:
                            names.add(other)
                            frontier.append(other)
        games = {gid: game for gid, game in games.items()
                 if game[0] in names and (not isinstance(game[1], str) or game[1] in names)}
        fitted = fit_players(games.values(), self.start)
        return fitted if name in fitted else {**fitted, name: unrated}

    def rating(self, name: str) -> Rated:
        return self.ratings(name)[name]


class Follow:
    """`--difficulty auto`: the level to play next for a player whose rating is `rated`. It
    plays the level whose expected score against the player is nearest even; `reason` says so
    in words a player reads."""

    def __init__(self, rated: Rated, levels: tuple[Level, ...] | None = None):
        self.levels = levels or ladder()
        self.update(rated)

    def choose(self, rated: Rated) -> Level:
        if not rated.games:
            return start_level(self.levels)
        # The expected score is nearest even where the ratings are nearest (and the distance
        # does not round to a tie far off the ladder's ends, as the expected scores do).
        return min(self.levels, key=lambda level: abs(level.rating - rated.rating))

    def update(self, rated: Rated) -> Level:
        """After a game: the player's new rating, and the level that plays next."""
        self.rated = rated
        self.level = self.choose(rated)
        return self.level

    @property
    def reason(self) -> str:
        level = self.level
        if not self.rated.games:
            return f"auto: {level.label}, where a new player starts"
        chance = expected_score(self.rated.rating, level.rating)
        return (f"auto: {level.label}, rated {level.rating:.0f}: your {self.rated.text()} "
                f"gives you {100 * chance:.0f}% against it, the nearest to even")


def follow_games(pilot, games: int, levels: tuple[Level, ...] | None = None, seed: int = 0,
                 config=None) -> dict:
    """`auto` against a pilot standing in for a person: `games` games one at a time, each
    against the level `Follow` picks from the games before it (none at first), the pilot's
    rating refitted after each. Returns the levels played, the pilot's scores and its last
    rating with its interval."""
    from ..pilots.build import make_pilot
    from .match import play_match

    levels = levels or ladder()
    start = start_level(levels).rating
    follow = Follow(Rated(start, math.inf, 0), levels)
    built: dict[float, object] = {}
    played, levels_played, scores = [], [], []
    for g in range(games):
        level = follow.level
        if level.number not in built:
            built[level.number] = make_pilot(level.spec, config, seed + int(2 * level.number))
        result = play_match(pilot, built[level.number], 1, seed + g, config)
        score = score_of(result.games[0].real_winner, "a")
        levels_played.append(level.number)
        scores.append(score)
        played.append(("pilot", level.rating, score))
        follow.update(fit_players(played, start)["pilot"])
    for each in built.values():
        each.close()
    return {"levels": levels_played, "scores": scores, "rating": round(follow.rated.rating, 1),
            "ci95": round(follow.rated.ci95, 1)}
