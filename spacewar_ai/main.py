"""Command line: parse flags and dispatch to a mode. No game or learning logic lives here.

Reached three ways with the same flags: `spacewar-ai`, `python -m spacewar_ai`,
`python spacewar_ai/main.py`.
"""

from __future__ import annotations

import argparse
import os
import sys

if __package__ in (None, ""):
    # Run as a file (python spacewar_ai/main.py): make the package importable.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="spacewar-ai",
        description="Train, rate and play against Spacewar! (1962) agents.")
    modes = p.add_argument_group("modes (default: a demo game between two scripted pilots)")
    modes.add_argument("--demo", action="store_true",
                       help="two pilots play (--players A,B); --render shows the window")
    modes.add_argument("--benchmark", action="store_true",
                       help="print engine, vector env and pilot throughput")
    common = p.add_argument_group("common options")
    common.add_argument("--players", default="heuristic:hard,heuristic:medium",
                        help="pilot specs, comma separated: idle, random, "
                             "heuristic:easy|medium|hard")
    common.add_argument("--episodes", type=int, default=None,
                        help="games to play (demo: 1 with --render, else 200)")
    common.add_argument("--render", action="store_true", help="show the game in a window")
    common.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    common.add_argument("--quick", action="store_true",
                        help="benchmark: a tenth of the work, for a smoke test")
    return p


def _positive(parser: argparse.ArgumentParser, name: str, value):
    if value is not None and value < 1:
        parser.error(f"{name} must be >= 1 (got {value})")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _positive(parser, "--episodes", args.episodes)
    if args.benchmark:
        from spacewar_ai.benchmark import run_benchmark

        run_benchmark(seed=args.seed, quick=args.quick)
        return 0
    return _demo(parser, args)


def _demo(parser: argparse.ArgumentParser, args) -> int:
    from spacewar_ai.arena import format_result, play_match, watch_games
    from spacewar_ai.bots import make_pilot

    specs = [s.strip() for s in args.players.split(",") if s.strip()]
    if len(specs) != 2:
        parser.error(f"--players needs exactly two specs for a demo (got {args.players!r})")
    try:
        for s in specs:
            make_pilot(s)
    except ValueError as exc:
        parser.error(str(exc))
    if args.render:
        games = args.episodes or 1
        for k, info in enumerate(watch_games(specs[0], specs[1], games, args.seed)):
            print(f"game {k + 1}: winner {_side(info['winner'], specs)}, "
                  f"deaths: ship 0 {_cause(info['ship_0_death_cause'])}, "
                  f"ship 1 {_cause(info['ship_1_death_cause'])}")
        return 0
    games = args.episodes or 200
    games += games % 2
    print(format_result(play_match(specs[0], specs[1], games, args.seed)))
    return 0


def _side(ship, specs):
    return "none (draw)" if ship is None else f"ship {ship} ({specs[ship]})"


def _cause(cause):
    return "survived" if cause is None else cause.name.lower()


if __name__ == "__main__":
    raise SystemExit(main())
