"""How fast `adapt:` learns whoever it meets, and what that is worth: matches in a row against
one opponent, the adapting planner (which keeps learning from match to match, as it does across
the games of one long match) beside the planner with the fixed model on the same seeds.

    python scripts/adapt_curve.py --opponent pretrained --matches 3 --games 40
    python scripts/adapt_curve.py --policy pretrained:rllib_sw --config examples/rllib_sw_1f9e818.toml \
        --opponent rllib_sw:rllib_sw/checkpoints_release/pfsp --matches 1 --games 100

Per match: the share of the opponent's moves the adapting model foresaw before learning them,
and each planner's torpedo wins. docs/search.md quotes it.
"""

from __future__ import annotations

import argparse
import time

from spacewar_ai.config import GameConfig, load_run_config
from spacewar_ai.pilots.build import make_pilot
from spacewar_ai.rating.match import play_match
from spacewar_ai.util.errors import UserError


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--opponent", default="pretrained", help="any player spec")
    p.add_argument("--policy", default="pretrained", help="the planners' policy (PPO model)")
    p.add_argument("--matches", type=int, default=3)
    p.add_argument("--games", type=int, default=40, help="games per match (even)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--config", help="a TOML file whose [game] the matches play (default: the "
                   "1962 game)")
    args = p.parse_args(argv)
    try:
        game = load_run_config(args.config).game if args.config else None
    except UserError as e:
        p.exit(2, f"adapt_curve: {e}\n")
    opponent = make_pilot(args.opponent, game, seed=args.seed + 1)
    adapting = make_pilot(f"adapt:{args.policy}", game, seed=args.seed)
    fixed = make_pilot(f"search:{args.policy}", game, seed=args.seed)
    learner = adapting.learner
    rules = (game or GameConfig()).rules
    totals = [0, 0]
    try:
        for m in range(args.matches):
            began = time.time()
            seed = args.seed + 1000 * m
            f0, m0 = learner.foreseen, learner.moves
            adapted = play_match(adapting, opponent, args.games, seed, config=game).wins_a
            planned = play_match(fixed, opponent, args.games, seed, config=game).wins_a
            totals[0] += adapted
            totals[1] += planned
            share = (learner.foreseen - f0) / max(learner.moves - m0, 1)
            print(f"match {m + 1} against {args.opponent} ({args.games} games, seed {seed}, rules "
                  f"{rules}): foreseen {share:.1%} of {learner.moves - m0} moves; wins adapt: "
                  f"{adapted}, search: {planned}  ({time.time() - began:.0f} s)", flush=True)
    finally:
        opponent.close()
    n = args.matches * args.games
    print(f"all matches: adapt: {totals[0]}/{n} ({totals[0] / n:.1%}), "
          f"search: {totals[1]}/{n} ({totals[1] / n:.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
