"""Plot eval/win_rate against wall-clock minutes for TensorBoard runs into one PNG.

    python scripts/learning_curves.py OUT.png [--minutes M] LABEL=runs/<run> [LABEL=runs/<run> ...]

--minutes M keeps the evaluations made in the first M minutes of each run (a run continued with
--resume goes on counting its minutes).
"""

import argparse
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from spacewar_ai.util.charts import line_chart


def curve(log_dir: str, max_minutes: float | None = None) -> list[tuple[float, float]]:
    ea = EventAccumulator(log_dir)
    ea.Reload()
    if "eval/win_rate" not in ea.Tags()["scalars"]:
        raise SystemExit(f"{log_dir}: no eval/win_rate events (is it a training run's log folder?)")
    wins = {e.step: e.value for e in ea.Scalars("eval/win_rate")}
    minutes = {e.step: e.value for e in ea.Scalars("eval/wall_minutes")}
    return [(minutes[s], wins[s]) for s in sorted(wins)
            if s in minutes and (max_minutes is None or minutes[s] <= max_minutes)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the PNG to write")
    parser.add_argument("runs", nargs="+", metavar="LABEL=LOG_DIR")
    parser.add_argument("--minutes", type=float, default=None,
                        help="keep only evaluations made within this many minutes")
    args = parser.parse_args(argv)
    series = {}
    for arg in args.runs:
        label, sep, path = arg.partition("=")
        if not sep:
            parser.error(f"{arg!r} is not LABEL=LOG_DIR")
        series[label] = curve(path, args.minutes)
    line_chart(args.out, series, "Win rate against heuristic:hard (greedy policy, 100 games)",
               "wall-clock minutes of training", "torpedo wins")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
