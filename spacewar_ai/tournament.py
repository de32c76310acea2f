"""Tournaments and ratings: any player against any player, rated from a results matrix.

Modes: round robin (every pair), Swiss (pairs by score, no repeats), single elimination (seeded).

- Games are played in pairs from the same seeded start with sides swapped (arena.play_match).
- Ratings: incremental Elo as in the original design (start 1500, K=32, in game order), and a
  Bradley-Terry maximum-likelihood fit over all games with 95% intervals (draws count half). The
  fit depends only on the results matrix, never on the order games were played; players are
  ranked by it.
- A ratings file (JSON, atomic writes) accumulates results across tournaments, keyed by player
  identity (name plus a hash of its file), with a history of every tournament.
- Pairings run in worker processes when asked; each pairing's games depend only on the tournament
  seed and the pairing, so results are identical whatever the worker count.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .arena import MatchResult, play_match
from .checkpoints import atomic_write_bytes
from .config import GameConfig
from .engine import DeathCause
from .players import resolve_player

ELO_START = 1500.0
ELO_K = 32.0
ELO_SCALE = 400.0 / math.log(10.0)  # Bradley-Terry strength -> Elo points


@dataclass
class Entrant:
    spec: str
    name: str
    identity: str


def resolve_entrants(specs: list[str], config: GameConfig | None = None) -> list[Entrant]:
    """Check every spec before anything is played; one ValueError names the first bad player."""
    out = []
    seen = set()
    for spec in specs:
        pilot = resolve_player(spec, config)  # raises ValueError naming the spec
        identity = getattr(pilot, "identity", None) or pilot.name
        if identity in seen:
            raise ValueError(f"player {spec!r} appears twice in the tournament")
        seen.add(identity)
        out.append(Entrant(spec, pilot.name, identity))
    return out


def _pairing_seed(seed: int, i: int, j: int) -> int:
    return (seed * 1_000_003 + i * 7919 + j * 104_729) % (2**31)


def _worker_init() -> None:
    # One torch thread per worker process: several processes each using every core would
    # oversubscribe them (measured 3x slower on 2 cores).
    import torch

    torch.set_num_threads(1)


def _play_pairing(args) -> tuple[int, int, MatchResult]:
    i, j, spec_i, spec_j, games, seed, config_dict, keep_actions = args
    config = GameConfig.from_dict(config_dict)
    a = resolve_player(spec_i, config)
    b = resolve_player(spec_j, config)
    try:
        return i, j, play_match(a, b, games, _pairing_seed(seed, i, j), config,
                                keep_actions=keep_actions)
    finally:
        for pilot in (a, b):
            if hasattr(pilot, "close"):
                pilot.close()  # a sandboxed strategy's child process


@dataclass
class TournamentResult:
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
                score = 1.0 if game.real_winner == "a" else 0.0 if game.real_winner == "b" else 0.5
                seq.append((i, j, score))
        return seq


def play_round_robin(entrants: list[Entrant], games_per_pairing: int = 100, seed: int = 0,
                     config: GameConfig | None = None, workers: int = 1,
                     keep_actions: int = 0) -> TournamentResult:
    """Every pair plays `games_per_pairing` games (an even number: pairs with sides swapped).
    keep_actions=k keeps the actions of k games per pairing for replays."""
    _check_games(games_per_pairing)
    config = config if config is not None else GameConfig()
    n = len(entrants)
    start = time.time()
    matches = _play_pairs(entrants, [(i, j) for i in range(n) for j in range(i + 1, n)],
                          games_per_pairing, seed, config, workers, keep_actions)
    return TournamentResult(entrants, matches, time.time() - start)


def _play_pairs(entrants, pairs, games, seed, config, workers, keep_actions=0):
    jobs = [(i, j, entrants[i].spec, entrants[j].spec, games, seed, config.to_dict(),
             keep_actions) for i, j in pairs]
    if workers > 1 and len(jobs) > 1:
        # spawn, not fork: a forked child inherits torch's OpenMP state and can spin forever.
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                 initializer=_worker_init) as pool:
            return list(pool.map(_play_pairing, jobs))
    return [_play_pairing(job) for job in jobs]


def play_swiss(entrants: list[Entrant], games_per_pairing: int = 100, seed: int = 0,
               rounds: int | None = None, config: GameConfig | None = None,
               workers: int = 1, keep_actions: int = 0) -> TournamentResult:
    """Swiss system: each round pairs players of similar score who have not met yet (the
    highest-scored unpaired player meets the next highest it has not played); an odd player out
    sits the round out. Default rounds: ceil(log2(n)) + 1, at most n - 1."""
    _check_games(games_per_pairing)
    config = config if config is not None else GameConfig()
    n = len(entrants)
    rounds = rounds if rounds is not None else min(n - 1, math.ceil(math.log2(max(n, 2))) + 1)
    met: set[tuple[int, int]] = set()
    byes: set[int] = set()
    points = np.zeros(n)
    matches = []
    start = time.time()
    for _ in range(rounds):
        order = sorted(range(n), key=lambda i: (-points[i], i))
        pairs = _swiss_pairs(order, met, byes)
        if not pairs:
            break
        paired = {p for pair in pairs for p in pair}
        byes.update(i for i in range(n) if i not in paired)
        for i, j, r in _play_pairs(entrants, pairs, games_per_pairing, seed, config, workers,
                                   keep_actions):
            met.add((i, j))
            points[i] += r.wins_a + 0.5 * r.draws
            points[j] += r.wins_b + 0.5 * r.draws
            matches.append((i, j, r))
    return TournamentResult(entrants, matches, time.time() - start)


def _swiss_pairs(order: list[int], met: set[tuple[int, int]],
                 byes: set[int]) -> list[tuple[int, int]]:
    """Pair players in score order, each with the nearest-ranked player it has not met,
    backtracking so that as many as possible play. For an odd field one player sits out: never
    one who already had a bye while another can, and as low in the order as possible."""
    best: list[tuple[int, int]] = []

    def search(rest: list[int], pairs: list[tuple[int, int]], skipped: int) -> bool:
        nonlocal best
        if len(pairs) > len(best):
            best = pairs[:]
        if len(rest) < 2:
            # Done when nobody, or one player without a bye yet, is left over.
            done = skipped + len(rest) <= len(order) % 2 and not (rest and rest[0] in byes)
            if done:
                best = pairs[:]
            return done
        a, others = rest[0], rest[1:]
        for b in others:
            if (min(a, b), max(a, b)) not in met:
                remaining = [x for x in others if x != b]
                if search(remaining, pairs + [(min(a, b), max(a, b))], skipped):
                    return True
        # a sits out (allowed once, for an odd field, and not twice for the same player).
        return (skipped < len(order) % 2 and a not in byes
                and search(others, pairs, skipped + 1))

    # Try the lowest-ranked players first as the one who sits out, by searching from the top.
    search(order, [], 0)
    return best


def play_elimination(entrants: list[Entrant], games_per_pairing: int = 100, seed: int = 0,
                     seeding: list[float] | None = None, config: GameConfig | None = None,
                     workers: int = 1, keep_actions: int = 0) -> TournamentResult:
    """Single elimination. Players are seeded by `seeding` (higher first; e.g. their ratings),
    else in the order given; the bracket puts seed 1 against the lowest seed, and top seeds get
    byes when the field is not a power of two. A match is won on points; a tie goes to the
    better seed."""
    _check_games(games_per_pairing)
    config = config if config is not None else GameConfig()
    n = len(entrants)
    keys = seeding if seeding is not None else [-k for k in range(n)]
    ranked = sorted(range(n), key=lambda i: (-keys[i], i))
    size = 1 << max(1, math.ceil(math.log2(n)))
    slots = _bracket(size)  # seed numbers (0-based) in bracket order
    alive = [ranked[s] if s < n else None for s in slots]
    seed_of = {p: k for k, p in enumerate(ranked)}
    matches = []
    start = time.time()
    while len(alive) > 1:
        pairs, nxt = [], []
        for a, b in zip(alive[::2], alive[1::2]):
            if a is None or b is None:
                nxt.append(a if b is None else b)  # a bye
            else:
                pairs.append((min(a, b), max(a, b)))
                nxt.append(None)  # filled in below
        results = {(i, j): r for i, j, r in _play_pairs(entrants, pairs, games_per_pairing,
                                                         seed, config, workers, keep_actions)}
        k = 0
        for idx, (a, b) in enumerate(zip(alive[::2], alive[1::2])):
            if a is None or b is None:
                continue
            i, j = pairs[k]
            k += 1
            r = results[(i, j)]
            matches.append((i, j, r))
            si, sj = r.wins_a + 0.5 * r.draws, r.wins_b + 0.5 * r.draws
            if si != sj:
                nxt[idx] = i if si > sj else j
            else:
                nxt[idx] = i if seed_of[i] < seed_of[j] else j
        alive = nxt
    return TournamentResult(entrants, matches, time.time() - start)


def _bracket(size: int) -> list[int]:
    """Seed order of a standard bracket: 1 meets `size`, and the top two can meet only in the
    final (0-based seeds)."""
    order = [0]
    while len(order) < size:
        m = 2 * len(order)
        order = [x for s in order for x in (s, m - 1 - s)]
    return order


def _check_games(games: int) -> None:
    if games < 2 or games % 2:
        raise ValueError(f"--matches-per-pairing {games} is invalid: use an even number >= 2 "
                         "(games are played in pairs with sides swapped)")


def elo_incremental(n_players: int, games: list[tuple[int, int, float]], k: float = ELO_K,
                    start: float = ELO_START) -> np.ndarray:
    """The original design's Elo: expected = 1 / (1 + 10^((Rb - Ra) / 400)), R += K (S - E),
    applied game by game in order."""
    r = np.full(n_players, start, dtype=np.float64)
    for a, b, score in games:
        expected = 1.0 / (1.0 + 10.0 ** ((r[b] - r[a]) / 400.0))
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
    for _ in range(iterations):
        # Minorization-maximization (Hunter 2004), the reference counted as a player of gamma 1.
        denom = (games / (gamma[:, None] + gamma[None, :])).sum(axis=1) + prior_games / (gamma + 1)
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


def standings(result: TournamentResult) -> list[dict[str, Any]]:
    """One row per player, ranked by the fitted rating."""
    s, g = result.score_matrix()
    bt, se = bradley_terry(s, g)
    elo = elo_incremental(len(result.entrants), result.game_sequence())
    causes: dict[int, dict[str, int]] = {i: {} for i in range(len(result.entrants))}
    shots = np.zeros(len(result.entrants))
    hits = np.zeros(len(result.entrants))
    forfeits: dict[int, list[str]] = {i: [] for i in range(len(result.entrants))}
    for i, j, r in result.matches:
        for who, idx in (("a", i), ("b", j)):
            for c, v in r.causes(who).items():
                causes[idx][c] = causes[idx].get(c, 0) + v
            forfeits[idx] += [g.forfeit[3:] for g in r.games
                              if g.forfeit and g.forfeit.startswith(who + ":")]
        for game in r.games:
            shots[i] += game.shots_a
            shots[j] += game.shots_b
            hits[i] += game.hits_a
            hits[j] += game.hits_b
    rows = []
    for i, e in enumerate(result.entrants):
        rows.append({"name": e.name, "spec": e.spec, "identity": e.identity,
                     "rating": float(bt[i]), "ci95": float(1.96 * se[i]), "elo": float(elo[i]),
                     "score": float(s[i].sum()), "games": int(g[i].sum()),
                     "deaths": causes[i], "forfeits": len(forfeits[i]),
                     # The distinct reasons, so a failing strategy's author sees what went wrong.
                     "forfeit_reasons": sorted(set(forfeits[i]))[:5],
                     "accuracy": float(hits[i] / shots[i]) if shots[i] else 0.0})
    rows.sort(key=lambda r: -r["rating"])
    return rows


def crosstable_markdown(result: TournamentResult, rows: list[dict[str, Any]]) -> str:
    s, g = result.score_matrix()
    order = [next(i for i, e in enumerate(result.entrants) if e.identity == r["identity"])
             for r in rows]
    lines = ["| # | player | rating (95% CI) | Elo | score | accuracy | " +
             " | ".join(str(k + 1) for k in range(len(order))) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(order)]
    for rank, (i, r) in enumerate(zip(order, rows), start=1):
        cells = []
        for j in order:
            cells.append("-" if i == j else f"{s[i, j]:g}/{g[i, j]:g}" if g[i, j] else "")
        lines.append(f"| {rank} | {r['name']} | {r['rating']:.0f} +- {r['ci95']:.0f} | "
                     f"{r['elo']:.0f} | {r['score']:g}/{r['games']} | {r['accuracy']:.1%} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def deaths_markdown(rows: list[dict[str, Any]]) -> str:
    """Per-player death causes and forfeits (with their reasons), in standings order."""
    causes = [c.name for c in DeathCause if c != DeathCause.NONE]
    lines = ["| player | " + " | ".join(c.lower() for c in causes) + " | forfeit reasons |",
             "|---|" + "---|" * len(causes) + "---|"]
    for r in rows:
        reasons = "; ".join(r.get("forfeit_reasons", [])) or "-"
        lines.append(f"| {r['name']} | " + " | ".join(str(r["deaths"].get(c, 0)) for c in causes)
                     + f" | {reasons.replace('|', '/')} |")
    return "\n".join(lines)


class RatingsFile:
    """Accumulated results keyed by player identity, with a history; written atomically."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.data: dict[str, Any] = {"version": 1, "players": {}, "history": []}
        if self.path.exists():
            try:
                self.data = json.loads(self.path.read_text())
            except json.JSONDecodeError as exc:
                raise ValueError(f"ratings file {self.path}: not valid JSON ({exc}); move it "
                                 "away to start a new one") from None

    def add(self, result: TournamentResult, rows: list[dict[str, Any]], label: str) -> None:
        players = self.data["players"]
        s, g = result.score_matrix()
        ids = [e.identity for e in result.entrants]
        for i, e in enumerate(result.entrants):
            p = players.setdefault(e.identity, {"name": e.name, "spec": e.spec, "results": {}})
            for j, other in enumerate(ids):
                if i != j and g[i, j]:
                    rec = p["results"].setdefault(other, [0.0, 0.0])
                    rec[0] += float(s[i, j])
                    rec[1] += float(g[i, j])
        self._refit()
        self.data["history"].append({"time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                     "label": label, "standings": rows})
        payload = json.dumps(self.data, indent=1, sort_keys=True).encode()
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

    def top(self, n: int = 1) -> list[dict[str, Any]]:
        ranked = sorted(self.data["players"].values(), key=lambda p: -p.get("rating", 0.0))
        return ranked[:n]
