"""The planner over any pilot, measured: each planner against each opponent, and what a decision costs.

    python scripts/planner_table.py --games 200 --seed 4242 --json docs/planner_table.json

Each `--planners` spec (search.py: `search:POLICY[+MODEL...][@samples=K@horizon=H@jitter=P]`)
plays `--games` games (sides swapped) against each `--opponents` spec, all games of a match in
one batch, and the table says its win rate with the 95% interval and the milliseconds one
decision of all the batch's games takes (the planner's `act`, the opponent's excluded). The
default rows are the sweep of docs/search.md: the hard pilot planning over itself at several
samples (K) and horizons (H), a model of the opponent that is a mix of pilots, and one that
learns (`adapt:`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from spacewar_ai.config import GameConfig  # noqa: E402
from spacewar_ai.pilots.build import make_pilot  # noqa: E402
from spacewar_ai.rating.match import play_match, wilson_interval  # noqa: E402

HARD = "heuristic:hard"
PLANNERS = (
    HARD,
    f"search:{HARD}+{HARD}@samples=1@jitter=0",
    f"search:{HARD}+{HARD}@samples=4@horizon=30",
    f"search:{HARD}+{HARD}",
    f"search:{HARD}+{HARD}@horizon=120",
    f"search:{HARD}+{HARD}@samples=16",
    "search:heuristic:medium+heuristic:medium",
    f"search:{HARD}+{HARD}+heuristic:medium+pretrained",
    f"search:{HARD}",
    f"adapt:{HARD}",
)
OPPONENTS = (HARD, "heuristic:medium", "pretrained", "search:pretrained")


class Timed:
    """Flies as `pilot` does and counts the decisions it is asked and the seconds they take."""

    def __init__(self, pilot):
        self.pilot, self.seconds, self.calls = pilot, 0.0, 0

    def __getattr__(self, name):
        return getattr(self.pilot, name)

    def act(self, obs, active=None):
        began = time.perf_counter()
        out = self.pilot.act(obs, active)
        self.seconds += time.perf_counter() - began
        self.calls += 1
        return out


def measure(planner: str, opponent: str, games: int, seed: int, config: GameConfig) -> dict:
    pilot = make_pilot(planner, config, seed)
    timed = Timed(pilot)
    timed.reset, timed.attach = pilot.reset, pilot.attach  # the match's calls reach the pilot
    began = time.perf_counter()
    result = play_match(timed, make_pilot(opponent, config, seed + 1), games, seed, config)
    lo, hi = wilson_interval(result.wins_a, result.n)
    return {"planner": planner, "opponent": opponent, "games": result.n, "wins": result.wins_a,
            "losses": result.wins_b, "win_rate": result.wins_a / result.n, "lo": lo, "hi": hi,
            "ms_per_decision": 1000 * timed.seconds / max(timed.calls, 1),
            "seconds": time.perf_counter() - began}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--planners", default=",".join(PLANNERS))
    parser.add_argument("--opponents", default=",".join(OPPONENTS))
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=4242)
    parser.add_argument("--json", default="", help="write the rows here as well")
    args = parser.parse_args(argv)
    config = GameConfig()
    rows = []
    print("| pilot | opponent | won | 95% CI | ms a decision (all games) | seconds |")
    print("|---|---|---|---|---|---|")
    for planner in args.planners.split(","):
        for opponent in args.opponents.split(","):
            row = measure(planner, opponent, args.games, args.seed, config)
            rows.append(row)
            print(f"| `{planner}` | {opponent} | {row['win_rate']:.1%} ({row['wins']}-"
                  f"{row['losses']}) | {row['lo']:.1%}-{row['hi']:.1%} | "
                  f"{row['ms_per_decision']:.1f} | {row['seconds']:.0f} |", flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps({"games": args.games, "seed": args.seed,
                                                       "rows": rows}, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    main()
