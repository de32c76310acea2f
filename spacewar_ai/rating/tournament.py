"""Tournaments: any pilot against any pilot, in round robin, Swiss or single elimination.

- Every pairing is a match (match.play_match): games in pairs from the same seeded start with
  sides swapped, seeded from the tournament seed and the pairing, so any number of worker
  processes gives the same results, byte for byte.
- Players are ranked by a Bradley-Terry fit of the results matrix with 95% intervals, beside the
  original design's incremental Elo (ratings.py); the games go into the ratings file.
- `run_tournament` is the whole mode: it checks every player before a game is played, plays, and
  writes the report (crosstable.md, standings.json, ratings.png) into a folder of its own under
  runs/tournaments/.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..config import GameConfig
from ..game.engine import DeathCause
from ..pilots.build import SpecTravel, make_pilot, path_label
from ..pilots.spec import parse_spec
from ..util.errors import UserError
from ..util.progress import Progress
from ..util.workers import Where, map_jobs
from . import WORKER_PRELOAD
from .match import MatchResult, play_match
from .ratings import Entrant, RatingsFile, Results, standings

MODES = ("round_robin", "swiss", "elimination")
REPORT_DIR = Path("runs") / "tournaments"


def resolve_entrants(specs: list[str], config: GameConfig | None = None) -> list[Entrant]:
    """Check every spec before anything is played (one ValueError names the first bad player)
    and give each player a name no other player has: two runs' best.pt files are told apart by
    as much of their paths as it takes."""
    out: list[Entrant] = []
    seen = set()
    for text in specs:
        spec = parse_spec(text)  # the door: each entrant's text becomes a Spec once, here
        pilot = make_pilot(spec, config)  # raises ValueError naming the spec
        identity = pilot.identity
        if identity in seen:
            raise UserError(f"player {str(spec)!r} appears twice in the tournament")
        seen.add(identity)
        pilot.close()
        out.append(Entrant(spec, pilot.name, identity))
    return unique_names(out)


def unique_names(entrants: list[Entrant]) -> list[Entrant]:
    """Lengthen the path in the names that several players share until they differ."""
    for parts in range(3, 12):
        names = [e.name for e in entrants]
        shared = {n for n in names if names.count(n) > 1}
        if not shared:
            return entrants
        for e in entrants:
            path = (e.spec.policy if e.spec.is_planner else e.spec).path
            if e.name in shared and path is not None:
                prefix = e.name.split(":")[0] + ":" if ":" in e.name else ""
                e.name = prefix + path_label(path.resolve(), parts)
    for k, e in enumerate(entrants):  # still alike (same file name in the same place): number them
        if [x.name for x in entrants].count(e.name) > 1:
            e.name = f"{e.name}#{k + 1}"
    return entrants


def _pairing_seed(seed: int, i: int, j: int) -> int:
    return (seed * 1_000_003 + i * 7919 + j * 104_729) % (2**31)


def _play_pairing(args) -> tuple[int, int, MatchResult]:
    i, j, spec_i, spec_j, games, seed, config_dict, keep_actions = args
    config = GameConfig.from_dict(config_dict)
    a = make_pilot(spec_i, config)
    b = make_pilot(spec_j, config)
    try:
        return i, j, play_match(a, b, games, _pairing_seed(seed, i, j), config,
                                keep_actions=keep_actions)
    finally:
        for pilot in (a, b):
            pilot.close()


def play_round_robin(entrants: list[Entrant], games_per_pairing: int = 100, seed: int = 0,
                     config: GameConfig | None = None, where: Where = Where(),
                     keep_actions: int = 0, progress: Progress | None = None) -> Results:
    """Every pair plays `games_per_pairing` games (an even number: pairs with sides swapped).
    keep_actions=k keeps the actions of k games per pairing for replays."""
    _check_games(games_per_pairing)
    config = config if config is not None else GameConfig()
    n = len(entrants)
    start = time.time()
    matches = _play_pairs(entrants, [(i, j) for i in range(n) for j in range(i + 1, n)],
                          games_per_pairing, seed, config, where, keep_actions, progress)
    return Results(entrants, matches, time.time() - start)


def _play_pairs(entrants, pairs, games, seed, config, where, keep_actions=0, progress=None):
    """Every pairing's match, a job each wherever `where` says (util.workers). The
    results do not depend on which."""
    jobs = [(i, j, entrants[i].spec, entrants[j].spec, games, seed, config.to_dict(),
             keep_actions) for i, j in pairs]
    return map_jobs(_play_pairing, jobs, where, progress, games,
                    SpecTravel((2, 3)), WORKER_PRELOAD)


def play_swiss(entrants: list[Entrant], games_per_pairing: int = 100, seed: int = 0,
               rounds: int | None = None, config: GameConfig | None = None,
               where: Where = Where(), keep_actions: int = 0,
               progress: Progress | None = None) -> Results:
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
        for i, j, r in _play_pairs(entrants, pairs, games_per_pairing, seed, config, where,
                                   keep_actions, progress):
            met.add((i, j))
            points[i] += r.wins_a + 0.5 * r.draws
            points[j] += r.wins_b + 0.5 * r.draws
            matches.append((i, j, r))
    return Results(entrants, matches, time.time() - start)


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
                     where: Where = Where(), keep_actions: int = 0,
                     progress: Progress | None = None) -> Results:
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
                                                         seed, config, where, keep_actions,
                                                         progress)}
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
    return Results(entrants, matches, time.time() - start)


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
        raise UserError(f"--matches-per-pairing {games} is invalid: use an even number >= 2 "
                        "(games are played in pairs with sides swapped)")


def crosstable_markdown(result: Results, rows: list[dict[str, Any]]) -> str:
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
    lines = ["| player | " + " | ".join(causes) + " | forfeit reasons |",
             "|---|" + "---|" * len(causes) + "---|"]
    for r in rows:
        reasons = "; ".join(r.get("forfeit_reasons", [])) or "-"
        lines.append(f"| {r['name']} | " + " | ".join(str(r["deaths"].get(c, 0)) for c in causes)
                     + f" | {reasons.replace('|', '/')} |")
    return "\n".join(lines)


def figures_markdown(rows: list[dict[str, Any]]) -> str:
    """Per-player GameResult figures, per game, in standings order."""
    lines = ["| player | accuracy | fuel used | torpedoes dodged | score |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['accuracy']:.1%} | {r['mean_fuel']:.0f} | "
                     f"{r['mean_dodged']:.2f} | {r['mean_score']:.1f} |")
    return "\n".join(lines)


def planned_games(mode: str, players: int, games_per_pairing: int) -> int:
    """Games a tournament will play (Swiss: at most), for its progress bar."""
    if mode == "round_robin":
        pairings = players * (players - 1) // 2
    elif mode == "swiss":
        rounds = min(players - 1, math.ceil(math.log2(max(players, 2))) + 1)
        pairings = rounds * (players // 2)
    else:
        pairings = players - 1
    return pairings * games_per_pairing


@dataclass
class TournamentReport:
    result: Results
    rows: list[dict[str, Any]]
    text: str  # the crosstable and the deaths table, in Markdown
    folder: Path
    mode: str
    games_per_pairing: int
    ratings_path: Path | None = None
    replays: list[Path] = field(default_factory=list)

    def summary(self) -> str:
        """What the tournament mode prints: the tables and where everything was written."""
        r = self.result
        lines = [f"{self.mode}: {len(r.entrants)} players, {self.games_per_pairing} games per "
                 f"pairing, {sum(m.n for _, _, m in r.matches)} games in {r.seconds:.1f} s", "",
                 self.text,
                 "", f"wrote {self.folder}/crosstable.md, standings.json, games.jsonl, ratings.png"
                     + (f"; ratings: {self.ratings_path}" if self.ratings_path else "")]
        if self.replays:
            lines.append(f"saved {len(self.replays)} replays under {self.replays[0].parent}/")
        return "\n".join(lines)


def run_tournament(specs: list[str], mode: str = "round_robin", games_per_pairing: int = 100,
                   seed: int = 0, where: Where = Where(), ratings: RatingsFile | None = None,
                   save_replays: int = 0, quiet: bool = False,
                   report_dir: str | Path = REPORT_DIR,
                   into: str | Path | None = None,
                   config: GameConfig | None = None) -> TournamentReport:
    """The tournament mode: check the players, play, rate, write the report (into a new folder
    under `report_dir`, or the folder `into`) and add the games to the ratings file. Elimination
    seeds players by their ratings in that file. `where` is where the pairings are played
    (util.workers). `config` is the game every pairing plays."""
    config = config if config is not None else GameConfig()
    if mode not in MODES:
        raise UserError(f"--tournament-mode {mode!r} is unknown: use one of {', '.join(MODES)}")
    _check_games(games_per_pairing)
    entrants = resolve_entrants(specs, config)
    if len(entrants) < 2:
        raise UserError("a tournament needs at least two players (--players A,B,...)")
    total = planned_games(mode, len(entrants), games_per_pairing)
    where.start()  # a cluster that does not answer: refused now
    common = {"where": where, "keep_actions": save_replays, "config": config}
    with Progress(total, f"{mode} of {len(entrants)}", "game", quiet) as progress:
        common["progress"] = progress
        if mode == "swiss":
            result = play_swiss(entrants, games_per_pairing, seed, **common)
        elif mode == "elimination":
            seeding = [ratings.rating(e.identity, 1500.0 - k) if ratings else -k
                       for k, e in enumerate(entrants)]
            result = play_elimination(entrants, games_per_pairing, seed, seeding, **common)
        else:
            result = play_round_robin(entrants, games_per_pairing, seed, **common)
    rows = standings(result)
    text = (crosstable_markdown(result, rows) + "\n\nDeaths by cause:\n\n" + deaths_markdown(rows)
            + "\n\nPer game (score: the standard reward table's):\n\n" + figures_markdown(rows))
    folder = Path(into) if into is not None else _new_folder(Path(report_dir))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "crosstable.md").write_text(text + "\n")
    (folder / "standings.json").write_text(json.dumps(rows, indent=1))
    for _, _, match in result.matches:
        match.write_jsonl(folder / "games.jsonl")
    from ..util.charts import ratings_chart

    ratings_chart(folder / "ratings.png", [r["name"] for r in rows], [r["rating"] for r in rows],
                  [r["ci95"] for r in rows], f"Bradley-Terry ratings, 95% intervals ({mode})")
    if ratings is not None:
        ratings.add(result, rows, f"{mode} of {len(entrants)}")
    saved = []
    if save_replays:
        from ..game.replays import save_match_replays

        for _, _, r in result.matches:
            saved += save_match_replays(r, config, f"{r.name_a}-vs-{r.name_b}",
                                        folder / "replays")
    return TournamentReport(result, rows, text, folder, mode, games_per_pairing,
                            ratings.path if ratings is not None else None, saved)


def _new_folder(root: Path) -> Path:
    """A folder named for the time that no other tournament has (two started in the same second
    get -2, -3, ...): mkdir is atomic, so concurrent runs never share one."""
    stem = time.strftime("%Y%m%d-%H%M%S")
    root.mkdir(parents=True, exist_ok=True)
    for k in range(1, 10_000):
        folder = root / (stem if k == 1 else f"{stem}-{k}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise RuntimeError(f"no free folder name under {root}")
