"""Ratings: strengths fitted from results, the file that keeps them, and the best models we know.

- `Results`: matches between `Entrant`s; `standings` are a row per player.
- `bradley_terry`: a maximum-likelihood fit with 95% intervals on the Elo scale, independent of
  the order of games; `elo_incremental` the original design's Elo; `wilson_interval` a win
  rate's interval.
- `RatingsFile`: results across tournaments and evaluations, keyed by identity; writers take an
  OS lock and add to what is on disk, atomically, so concurrent runs lose nothing.
- `best_models`: learned models that have shown their strength in one game, best first (rated
  in the file, then runs' evaluated `best.pt` of that game, then the shipped model; the file
  and the shipped model are the 1962 game's)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..util.errors import UserError

if TYPE_CHECKING:
    from .match import MatchResult


# What a model needs behind it before best_models offers it as a champion or a default player.
MIN_RATED_GAMES = 100
MIN_RUN_DECISIONS = 1_000_000  # a third of a default PPO run
MIN_EVAL_GAMES = 100  # one default evaluation

ELO_START = 1500.0
ELO_K = 32.0
ELO_SCALE = 400.0 / math.log(10.0)  # Bradley-Terry strength -> Elo points
RATINGS_VERSION = 1


def expected_score(rating: float, opponent: float) -> float:
    """A player's expected score against an opponent, both on the Elo scale."""
    return 1.0 / (1.0 + 10.0 ** ((opponent - rating) / 400.0))


def score_of(real_winner, side) -> float:
    """A game's score for `side` (a ship, or "a" in a match's results) as ratings count it: a
    torpedo win 1, a loss by torpedo 0, anything else (a crash, a timeout, both dead) half."""
    if real_winner is None:
        return 0.5
    return 1.0 if real_winner == side else 0.0


def elo_incremental(n_players: int, games: list[tuple[int, int, float]], k: float = ELO_K,
                    start: float = ELO_START) -> np.ndarray:
    """The original design's Elo: expected = 1 / (1 + 10^((Rb - Ra) / 400)), R += K (S - E),
    applied game by game in order."""
    r = np.full(n_players, start, dtype=np.float64)
    for a, b, score in games:
        expected = expected_score(r[a], r[b])
        delta = k * (score - expected)
        r[a] += delta
        r[b] -= delta
    return r


def bradley_terry(scores: np.ndarray, games: np.ndarray, prior_games: float = 1.0,
                  iterations: int = 10_000, tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood Bradley-Terry ratings on the Elo scale (mean 1500) and their standard
    errors, from a score matrix (draws as half points) and a games matrix.

    A weak prior (`prior_games` virtual draws against a 1500-rated reference) keeps the fit finite
    when a player wins or loses everything. Standard errors come from the inverse of the observed
    Fisher information; a 95% interval is +- 1.96 se.
    """
    n = scores.shape[0]
    wins = scores.sum(axis=1) + 0.5 * prior_games
    gamma = np.ones(n)
    # The pairs that played, once: an arena's thousands of players each meet a few, and each
    # iteration costs the pairs, not the square of the players.
    rows, cols = np.nonzero(games)
    played = games[rows, cols]
    for _ in range(iterations):
        # Minorization-maximization (Hunter 2004), the reference counted as a player of gamma 1.
        denom = np.bincount(rows, played / (gamma[rows] + gamma[cols]), minlength=n) \
            + prior_games / (gamma + 1)
        new = wins / denom
        new /= np.exp(np.mean(np.log(new)))
        if np.max(np.abs(np.log(new) - np.log(gamma))) < tol:
            gamma = new
            break
        gamma = new
    theta = np.log(gamma)
    # Observed information of the games for theta. Ratings are relative (their mean is fixed), so
    # the covariance is taken in the mean-zero subspace: the pseudo-inverse of this Laplacian-like
    # matrix. (The prior only keeps the estimate finite; it must not set the interval widths.)
    p = gamma[:, None] / (gamma[:, None] + gamma[None, :])
    w = games * p * (1 - p)
    info = -w
    np.fill_diagonal(info, w.sum(axis=1))
    cov = np.linalg.pinv(info)
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    return ELO_START + ELO_SCALE * theta, ELO_SCALE * se


@dataclass
class Entrant:
    """A player in results: its spec (a pilots.Spec; its text in files), the name it is shown
    by, and the identity ratings key on."""

    spec: Any
    name: str
    identity: str


@dataclass
class Results:
    """Matches between entrants (tournament.py plays them; an evaluation is one): what ratings
    are fitted from."""

    entrants: list[Entrant]
    matches: list[tuple[int, int, MatchResult]] = field(default_factory=list)
    seconds: float = 0.0

    def score_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """S[i, j]: points of i against j (torpedo win 1, anything else but a loss 0.5);
        N[i, j]: games between them."""
        n = len(self.entrants)
        s = np.zeros((n, n))
        g = np.zeros((n, n))
        for i, j, r in self.matches:
            s[i, j] += r.wins_a + 0.5 * r.draws
            s[j, i] += r.wins_b + 0.5 * r.draws
            g[i, j] += r.n
            g[j, i] += r.n
        return s, g

    def game_sequence(self) -> list[tuple[int, int, float]]:
        """Every game as (player, opponent, score of player), in the order played."""
        seq = []
        for i, j, r in self.matches:
            for game in r.games:
                seq.append((i, j, score_of(game.real_winner, "a")))
        return seq


def standings(result: Results) -> list[dict[str, Any]]:
    """One row per player, ranked by the fitted rating."""
    s, g = result.score_matrix()
    bt, se = bradley_terry(s, g)
    elo = elo_incremental(len(result.entrants), result.game_sequence())
    causes: dict[int, dict[str, int]] = {i: {} for i in range(len(result.entrants))}
    shots = np.zeros(len(result.entrants))
    hits = np.zeros(len(result.entrants))
    forfeits: dict[int, list[str]] = {i: [] for i in range(len(result.entrants))}
    figures = {i: {"fuel": [], "dodged": [], "score": []} for i in range(len(result.entrants))}
    for i, j, r in result.matches:
        for who, idx in (("a", i), ("b", j)):
            for game in r.games:
                figures[idx]["fuel"].append(game.side(who, "fuel"))
                figures[idx]["dodged"].append(game.side(who, "dodged"))
                if not game.forfeit:
                    figures[idx]["score"].append(game.score(who))
            for c, v in r.causes(who).items():
                causes[idx][c] = causes[idx].get(c, 0) + v
            forfeits[idx] += [game.forfeit_of(who) for game in r.games
                              if game.forfeit_of(who) is not None]
        for game in r.games:
            shots[i] += game.shots_a
            shots[j] += game.shots_b
            hits[i] += game.hits_a
            hits[j] += game.hits_b
    rows = []
    for i, e in enumerate(result.entrants):
        rows.append({"name": e.name, "spec": str(e.spec), "identity": e.identity,
                     "rating": float(bt[i]), "ci95": float(1.96 * se[i]), "elo": float(elo[i]),
                     "score": float(s[i].sum()), "games": int(g[i].sum()),
                     "deaths": causes[i], "forfeits": len(forfeits[i]),
                     # The distinct reasons, so a failing strategy's author sees what went wrong.
                     "forfeit_reasons": sorted(set(forfeits[i]))[:5],
                     "accuracy": float(hits[i] / shots[i]) if shots[i] else 0.0,
                     # Per game: fuel used, enemy torpedoes dodged, the standard reward's score.
                     **{f"mean_{k}": float(np.mean(v)) if v else 0.0
                        for k, v in figures[i].items()}})
    rows.sort(key=lambda r: -r["rating"])
    return rows


MAX_RATINGS_BYTES = 256 * 1024 * 1024  # a ratings file of thousands of players is a few MB


class RatingsFile:
    """Accumulated results keyed by player identity, with a history; see the module docstring.

    Reading checks the file's shape, so a malformed file is refused (one ValueError naming it and
    the fix) before anything is played."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.data = self._read()

    def _empty(self) -> dict[str, Any]:
        return {"version": RATINGS_VERSION, "players": {}, "history": []}

    def _read(self) -> dict[str, Any]:
        p = self.path
        fix = "move it away (a new one is started) or give another --ratings-file"
        if p.is_dir():
            raise UserError(f"ratings file {p}: is a folder; give a file name such as "
                            f"{p / 'ratings.json'}")
        if not p.exists() and not p.is_symlink():
            return self._empty()
        from ..util.preflight import read_bounded

        raw = read_bounded(p, "ratings file", MAX_RATINGS_BYTES)
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise UserError(f"ratings file {p}: not UTF-8 text; {fix}") from None
        except json.JSONDecodeError as exc:
            raise UserError(f"ratings file {p}: not valid JSON ({exc}); {fix}") from None
        except OSError as exc:
            raise UserError(f"ratings file {p}: cannot be read ({exc.strerror}); check its "
                            "permissions or give another --ratings-file") from None
        problem = _ratings_problem(data)
        if problem:
            raise UserError(f"ratings file {p}: {problem}; {fix}")
        return data

    def add(self, result, rows: list[dict[str, Any]], label: str) -> None:
        """Add the games of a tournament or an evaluation (`Results`). The file is read again
        under its lock, so the games go onto whatever other runs have written meanwhile."""
        from filelock import FileLock

        self.path.parent.mkdir(parents=True, exist_ok=True)
        from ..util.files import TEMP_SUFFIX

        with FileLock(str(self.path) + ".lock"):
            # Under the lock no other run is writing this file, so a temporary file of it is
            # what a killed writer left behind.
            for tmp in self.path.parent.glob(f".{self.path.name}.*{TEMP_SUFFIX}"):
                tmp.unlink(missing_ok=True)
            self.data = self._read()
            players = self.data["players"]
            s, g = result.score_matrix()
            ids = [e.identity for e in result.entrants]
            for i, e in enumerate(result.entrants):
                p = players.setdefault(e.identity, {"name": e.name, "spec": str(e.spec),
                                                    "results": {}})
                for j, other in enumerate(ids):
                    if i != j and g[i, j]:
                        rec = p["results"].setdefault(other, [0.0, 0.0])
                        rec[0] += float(s[i, j])
                        rec[1] += float(g[i, j])
            self._refit()
            self.data["history"].append({"time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                         "label": label, "standings": rows})
            payload = json.dumps(self.data, indent=1, sort_keys=True).encode()
            from ..util.files import atomic_write_bytes

            atomic_write_bytes(self.path, lambda f: f.write(payload))

    def _refit(self) -> None:
        players = self.data["players"]
        ids = sorted(players)
        index = {k: i for i, k in enumerate(ids)}
        n = len(ids)
        s = np.zeros((n, n))
        g = np.zeros((n, n))
        for k, p in players.items():
            for other, (pts, games) in p["results"].items():
                if other in index:
                    s[index[k], index[other]] = pts
                    g[index[k], index[other]] = games
        rating, se = bradley_terry(s, g)
        for k in ids:
            players[k]["rating"] = float(rating[index[k]])
            players[k]["ci95"] = float(1.96 * se[index[k]])

    def rating(self, identity: str, default: float) -> float:
        return float(self.data["players"].get(identity, {}).get("rating", default))

    def top(self, n: int = 1) -> list[dict[str, Any]]:
        ranked = sorted(self.data["players"].values(), key=lambda p: -p.get("rating", 0.0))
        return ranked[:n]


def rated_games(player: dict[str, Any]) -> int:
    """The games a player of the ratings file has played, over all its opponents."""
    return int(sum(g for _, g in player.get("results", {}).values()))


def model_spec(path: Path) -> str:
    """The spec that names a model file best_models found: `pretrained` for the shipped one."""
    from ..pilots.build import PRETRAINED_PATH

    return "pretrained" if Path(path).resolve() == PRETRAINED_PATH.resolve() else str(path)


def _ratings_problem(data) -> str:
    """What is wrong with a parsed ratings file, or ""."""
    if not isinstance(data, dict):
        return f"expected a JSON object with 'players' and 'history', got {type(data).__name__}"
    players, history = data.get("players"), data.get("history")
    if not isinstance(players, dict) or not isinstance(history, list):
        return "expected a JSON object with 'players' (an object) and 'history' (a list)"
    for key, p in players.items():
        if not isinstance(p, dict) or not isinstance(p.get("results"), dict) \
                or not isinstance(p.get("spec", ""), str):
            return f"player {key!r} has no 'results' object"
        for other, rec in p["results"].items():
            ok = (isinstance(rec, list) and len(rec) == 2
                  and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                          and math.isfinite(v) and v >= 0 for v in rec) and rec[0] <= rec[1])
            if not ok:
                return (f"player {key!r} has results against {other!r} that are not "
                        "[points, games] with 0 <= points <= games")
    return ""


def best_models(checkpoint_dir: str | Path = "checkpoints", ratings_file: str | Path | None = None,
                exclude: str | Path | None = None, game=None) -> list[tuple[Path, str]]:
    """The learned models a user has that have shown their strength in `game` (a GameConfig;
    default the 1962 game), best first, each with why it ranks there (the rule is the module
    docstring's): a run trained in another game is not offered. An unreadable ratings file or
    checkpoint is passed over, not fatal: the other sources still know models."""
    from ..agents.checkpoints import CheckpointError, load_checkpoint
    from ..config import GameConfig
    from ..pilots.build import PRETRAINED_PATH
    from ..pilots.spec import parse_spec

    game = game if game is not None else GameConfig()
    default_game = game == GameConfig()  # what the ratings file and the shipped model play
    checkpoint_dir = Path(checkpoint_dir)
    rpath = Path(ratings_file) if ratings_file else checkpoint_dir / "ratings.json"
    skip = {Path(exclude).resolve()} if exclude is not None else set()
    out: list[tuple[Path, str]] = []

    def take(path: Path, why: str) -> None:
        if path.is_file() and path.resolve() not in skip:
            skip.add(path.resolve())
            out.append((path, why))

    if rpath.is_file() and default_game:
        try:
            rated = RatingsFile(rpath).top(10**9)
        except ValueError:
            rated = []
        for player in rated:
            if rated_games(player) < MIN_RATED_GAMES:
                continue
            spec = player.get("spec", "")
            try:
                parsed = parse_spec(spec)
            except ValueError:
                continue
            path = parsed.path if parsed.learned else None
            if path is not None:
                take(path, f"top-rated model in {rpath} (rating {player.get('rating', 0):.0f}, "
                       f"{rated_games(player)} games)")
    runs = []
    for path in checkpoint_dir.glob("*/best.pt"):
        try:
            metadata = load_checkpoint(path)["metadata"]
            played = GameConfig.from_dict(metadata.get("config", {}).get("game", {}))
        except (CheckpointError, ValueError):
            continue
        if played != game:
            continue
        counters = metadata.get("counters", {})
        # Checkpoints from before best_eval_games was counted are judged by their size alone.
        if counters.get("global_step", 0) < MIN_RUN_DECISIONS or \
                counters.get("best_eval_games", MIN_EVAL_GAMES) < MIN_EVAL_GAMES:
            continue
        runs.append((float(counters.get("best_eval", 0.0)), path.stat().st_mtime, path))
    for figure, _, path in sorted(runs, key=lambda r: (r[0], r[1]), reverse=True):
        take(path, f"best evaluated run under {checkpoint_dir}/ ({figure:.0%} in its "
                   "evaluations; no rated model above it)")
    if default_game:
        take(PRETRAINED_PATH, "the shipped pretrained model (no rated model, no checkpoints)")
    return out
