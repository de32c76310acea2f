"""The difficulty ladder of docs/human-play.md: every level rated on one Bradley-Terry scale,
the stand-in players rated on it, and `auto` followed against each stand-in.

    python scripts/difficulty_ladder.py --games 200 --planner-games 100 --seed 0

Each level plays every pilot of the reference pool (spacewar_ai/rating/difficulty.py,
REFERENCE_POOL) and the level below it; the pool plays itself. One fit over all those games
gives each level's rating (the pool's mean 1500) with its 95% interval. A level's cost is its
milliseconds per decision flying one game against the hard pilot, torch on one thread (the
median of `--cost-repeats` runs of 100 decisions). The stand-ins (pilots/wrappers.py) then play
every quick level and the planners near them, and their ratings are fitted with the levels'
held fixed; last, `auto` picks each stand-in's opponent for `--follow-games` games, one at a
time, from no games at all, `--follow-runs` times (`--follow-only` runs this part again on the
ladder of `--out`). `--out` (default: the shipped file the game reads) receives the ladder, the
stand-ins' ratings and the follow runs; the tables print as markdown.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from spacewar_ai.bench.throughput import bench_planner
from spacewar_ai.pilots.spec import parse_spec
from spacewar_ai.pilots.wrappers import STANDINS, stand_in
from spacewar_ai.rating.difficulty import (
    LADDER_PATH,
    REFERENCE_POOL,
    Level,
    fit_players,
    follow_games,
    level_named,
)
from spacewar_ai.rating.match import play_match, wilson_interval
from spacewar_ai.rating.ratings import bradley_terry, expected_score, score_of
from spacewar_ai.util.files import atomic_write_bytes

# (level, spec, what it is in words), weakest first; the halves are fine steps between levels.
LEVELS = [
    (1, "heuristic:easy", "turns to where you are, reacts 240 ms late"),
    (1.5, "heuristic:hard@react=2", "the hard pilot's rules, reacting 160 ms late"),
    (2, "heuristic:hard@aim=0@react=2", "the same, shooting where you are"),
    (2.5, "heuristic:hard@aim=0@react=1.5", "the same, reacting 80 ms late and 160 ms in "
                                            "turn"),
    (3, "heuristic:hard@aim=0@react=1.25", "the same, reacting 80 ms late, 160 ms one time "
                                           "in four"),
    (3.5, "heuristic:hard@react=1.25", "the hard pilot's rules, reacting 80 ms late, 160 ms one "
                                       "time in four"),
    (4, "heuristic:hard@react=1.1", "leads with gravity, shoots torpedoes down, 80 ms late, "
                                    "160 ms one time in ten"),
    (5, "heuristic:medium@aim=0", "keeps off the star and closes in at once, shoots where you "
                                  "are"),
    (5.5, "heuristic:medium@aim=0.5", "the same, leading its shots halfway"),
    (6, "heuristic:hard@react=0.75", "leads with gravity, shoots torpedoes down, sidesteps, 80 "
                                     "ms late three times in four"),
    (6.5, "heuristic:hard", "the same, at once"),
    (7, "search:heuristic:hard+heuristic:hard@samples=1@horizon=10@jitter=0",
     "the hard pilot, trying each move 10 decisions ahead"),
    (7.5, "search:pretrained+heuristic:hard@samples=1@horizon=10", "the shipped network, "
                                                                   "trying each move 10 "
                                                                   "decisions ahead"),
    (8, "search:pretrained+heuristic:hard+pretrained@samples=4@choose=1",
     "the shipped network, trying each move four times 60 decisions ahead against whichever "
     "forecast of you comes true more"),
]
# A stand-in plays a planner's level only where the quick levels put it this near.
STANDIN_REACH = 400.0


def planner(spec: str) -> bool:
    return parse_spec(spec).is_planner


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=200, help="games a pairing of quick pilots")
    p.add_argument("--planner-games", type=int, default=100, help="games a pairing with a "
                   "planner")
    p.add_argument("--standin-games", type=int, default=100, help="games of a stand-in against "
                   "each level")
    p.add_argument("--follow-games", type=int, default=30, help="games of auto against each "
                   "stand-in")
    p.add_argument("--follow-runs", type=int, default=10, help="runs of auto against each "
                   "stand-in")
    p.add_argument("--follow-only", action="store_true", help="keep the ladder and the "
                   "stand-ins' ratings of --out, and run auto against the stand-ins again")
    p.add_argument("--cost-repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--levels", help="specs, comma-separated, weakest first (default: the "
                   "script's LEVELS)")
    p.add_argument("--out", default=str(LADDER_PATH))
    args = p.parse_args(argv)
    if args.follow_only:
        return write(follow(json.loads(Path(args.out).read_text()), args), args.out)
    levels = ([(k + 1, spec, spec) for k, spec in enumerate(args.levels.split(","))]
              if args.levels else LEVELS)
    specs = list(dict.fromkeys([*REFERENCE_POOL, *(spec for _, spec, _ in levels)]))
    index = {spec: i for i, spec in enumerate(specs)}
    pairs = {(a, b) for k, a in enumerate(REFERENCE_POOL) for b in REFERENCE_POOL[k + 1:]}
    whole = [(number, spec) for number, spec, _ in levels if number == int(number)]
    for k, (_, spec, _) in enumerate(levels):
        pairs |= {(spec, other) for other in REFERENCE_POOL if other != spec}
        if k:
            pairs.add((spec, levels[k - 1][1]))
    pairs |= {(spec, whole[k - 1][1]) for k, (_, spec) in enumerate(whole) if k}
    pairs = {tuple(sorted(pair, key=index.get)) for pair in pairs}  # each pairing once
    n = len(specs)
    scores, games = np.zeros((n, n)), np.zeros((n, n))
    start = time.time()
    for a, b in sorted(pairs, key=lambda pair: (index[pair[0]], index[pair[1]])):
        count = args.planner_games if planner(a) or planner(b) else args.games
        r = play_match(a, b, count, args.seed + 7919 * index[a] + index[b])
        i, j = index[a], index[b]
        scores[i, j] += r.wins_a + 0.5 * r.draws
        scores[j, i] += r.wins_b + 0.5 * r.draws
        games[i, j] += r.n
        games[j, i] += r.n
        print(f"{a} vs {b}: {r.score_a():.3f} of {r.n} ({time.time() - start:.0f} s)", flush=True)
    rating, se = bradley_terry(scores, games)
    rating += 1500.0 - np.mean([rating[index[s]] for s in REFERENCE_POOL])
    rows = []
    for k, (number, spec, words) in enumerate(levels):
        i = index[spec]
        ms, _ = bench_planner(spec, 100, args.cost_repeats, args.seed)
        row = {"level": number, "spec": spec, "words": words,
               "rating": round(float(rating[i]), 1), "ci95": round(float(1.96 * se[i]), 1),
               "ms": round(1000.0 / ms, 3)}
        below = [other for n, other in whole if n < number] if number == int(number) else \
            [levels[k - 1][1]] if k else []
        if below:
            j = index[below[-1]]  # a whole level's the whole level below; a half's the rung
            points, played = scores[i, j], games[i, j]
            low, high = wilson_interval(int(round(points)), int(played))
            row["below"] = {"score": round(points / played, 3), "games": int(played),
                            "ci": [round(low, 3), round(high, 3)]}
        rows.append(row)
    # A half level is a fine step only where it measures between its two whole levels.
    ratings = {r["level"]: r["rating"] for r in rows}
    rows = [r for r in rows if r["level"] == int(r["level"])
            or ratings[int(r["level"])] < r["rating"] < ratings.get(int(r["level"]) + 1, 1e9)]
    ladder = tuple(Level(r["level"], r["spec"], r["words"], r["rating"], r["ci95"], r["ms"])
                   for r in rows)
    print("\n| level | spec | rating (95% interval) | score against the level below | "
          "ms a decision, one game |\n|---|---|---|---|---|")
    for r in rows:
        b = r.get("below")
        against = (f"{100 * b['score']:.1f}% ({100 * b['ci'][0]:.0f}%-{100 * b['ci'][1]:.0f}%) "
                   f"of {b['games']}") if b else "-"
        print(f"| {r['level']:g} | `{r['spec']}` | {r['rating']:.0f} +- {r['ci95']:.0f} | "
              f"{against} | {r['ms']:.2f} |")
    standins = {}
    for name in STANDINS:
        played = []

        def play(level):
            r = play_match(stand_in(name, args.seed), level.spec,
                           min(args.planner_games if planner(level.spec) else args.games,
                               args.standin_games), args.seed + int(62 * level.number))
            return [(name, level.rating, score_of(game.real_winner, "a")) for game in r.games]

        for level in ladder:
            if not planner(level.spec):
                played += play(level)
        guess = fit_players(played, start=1500.0, prior_games=0.0)[name].rating
        for level in ladder:
            if planner(level.spec) and abs(level.rating - guess) < STANDIN_REACH:
                played += play(level)
        fitted = fit_players(played, start=1500.0, prior_games=0.0)[name]
        standins[name] = {"rating": round(fitted.rating, 1), "ci95": round(fitted.ci95, 1),
                          "games": fitted.games}
        print(f"stand-in {name}: {fitted.rating:.0f} +- {fitted.ci95:.0f} "
              f"({fitted.games} games)", flush=True)
    given = sys.argv[1:] if argv is None else argv
    data = {"command": " ".join(["python scripts/difficulty_ladder.py", *given]),
            "date": time.strftime("%Y-%m-%d"),
            "pool": {spec: {"rating": round(float(rating[index[spec]]), 1),
                            "ci95": round(float(1.96 * se[index[spec]]), 1)}
                     for spec in REFERENCE_POOL},
            "levels": rows, "standins": standins}
    return write(follow(data, args), args.out)


def follow(data: dict, args) -> dict:
    """`auto` against each stand-in, `--follow-runs` times from no games, `--follow-games`
    games a run: the levels it played, the share of runs whose level at game 20 the stand-in
    scores 40-60% against in expectation, and the estimates after the last game."""
    ladder = tuple(Level(r["level"], r["spec"], r["words"], r["rating"], r["ci95"], r["ms"])
                   for r in data["levels"])
    print("\n| stand-in (its rating) | runs of auto, games each | level at game 20: expected "
          "score 40-60% | its score, games 11-20 | estimate after the last game within its "
          "interval of the rating |\n|---|---|---|---|---|")
    follows = {}
    for name, true in data["standins"].items():
        runs = [follow_games(stand_in(name, args.seed + 1 + k), args.follow_games, ladder,
                             args.seed + 1000 * (k + 1)) for k in range(args.follow_runs)]
        even = [0.40 <= expected_score(true["rating"], level_named(
            f"{run['levels'][min(19, len(run['levels']) - 1)]:g}", ladder).rating) <= 0.60
                for run in runs]
        later = [score for run in runs for score in run["scores"][10:20]]
        held = [abs(run["rating"] - true["rating"]) <= run["ci95"] for run in runs]
        follows[name] = {"runs": runs, "even_at_20": sum(even), "held": sum(held)}
        print(f"| {name} ({true['rating']:.0f} +- {true['ci95']:.0f}) | {len(runs)}, "
              f"{args.follow_games} | {sum(even)} of {len(runs)} | "
              f"{100 * sum(later) / max(len(later), 1):.1f}% | {sum(held)} of {len(runs)} |",
              flush=True)
    return {**data, "follow": follows}


def write(data: dict, out: str) -> int:
    atomic_write_bytes(out, lambda f: f.write((json.dumps(data, indent=1) + "\n").encode()))
    print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
