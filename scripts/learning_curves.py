"""Plot eval/win_rate against wall-clock minutes for TensorBoard runs into one PNG.

    python scripts/learning_curves.py OUT.png [--minutes M] LABEL=runs/<run> [LABEL=runs/<run> ...]
    python scripts/learning_curves.py OUT.png --by decisions LABEL=runs/<a>,runs/<b>,runs/<c> ...

--minutes M keeps the evaluations made in the first M minutes of each run (a run continued with
--resume goes on counting its minutes). `--by decisions` puts the runs' decisions on the x axis,
and a label may name several runs (seeds), comma separated: its curve is their mean at each
evaluation they share, and a table prints it with the 95% interval of the pooled games (each
evaluation --games games), so two ways of training compare at fixed decisions.
"""

import argparse
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from spacewar_ai.rating.match import wilson_interval
from spacewar_ai.util.charts import line_chart


def _events(log_dir: str) -> EventAccumulator:
    ea = EventAccumulator(log_dir)
    ea.Reload()
    if "eval/win_rate" not in ea.Tags()["scalars"]:
        raise SystemExit(f"{log_dir}: no eval/win_rate events (is it a training run's log folder?)")
    return ea


def curve(log_dir: str, max_minutes: float | None = None) -> list[tuple[float, float]]:
    ea = _events(log_dir)
    wins = {e.step: e.value for e in ea.Scalars("eval/win_rate")}
    minutes = {e.step: e.value for e in ea.Scalars("eval/wall_minutes")}
    return [(minutes[s], wins[s]) for s in sorted(wins)
            if s in minutes and (max_minutes is None or minutes[s] <= max_minutes)]


def by_decisions(log_dirs: list[str]) -> list[tuple[int, float]]:
    """The runs' mean eval/win_rate at each decision count where every one of them evaluated."""
    runs = [{e.step: e.value for e in _events(d).Scalars("eval/win_rate")} for d in log_dirs]
    shared = sorted(set.intersection(*(set(r) for r in runs)))
    return [(step, sum(r[step] for r in runs) / len(runs)) for step in shared]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the PNG to write")
    parser.add_argument("runs", nargs="+", metavar="LABEL=LOG_DIR")
    parser.add_argument("--minutes", type=float, default=None,
                        help="keep only evaluations made within this many minutes")
    parser.add_argument("--by", choices=("minutes", "decisions"), default="minutes",
                        help="the x axis (decisions: a label may name runs, comma separated)")
    parser.add_argument("--games", type=int, default=100,
                        help="games per evaluation, for the pooled intervals (default 100)")
    args = parser.parse_args(argv)
    series = {}
    for arg in args.runs:
        label, sep, path = arg.partition("=")
        if not sep:
            parser.error(f"{arg!r} is not LABEL=LOG_DIR")
        if args.by == "minutes":
            series[label] = curve(path, args.minutes)
            continue
        runs = path.split(",")
        points = by_decisions(runs)
        series[label] = [(step / 1e6, win) for step, win in points]
        print(f"{label} ({len(runs)} runs, {len(runs) * args.games} games a point):")
        for step, win in points:
            games = len(runs) * args.games
            low, high = wilson_interval(round(win * games), games)
            print(f"  {step:>12,} decisions  {win:6.1%}  [{low:.1%}, {high:.1%}]")
    if args.by == "minutes":
        title, x_label = "Win rate against heuristic:hard (greedy policy, 100 games)", \
            "wall-clock minutes of training"
    else:
        title, x_label = (f"Win rate against heuristic:hard (greedy; the runs' mean, "
                          f"{args.games} games each)"), "millions of decisions"
    line_chart(args.out, series, title, x_label, "torpedo wins")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
