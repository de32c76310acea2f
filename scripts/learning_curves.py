"""Plot eval/win_rate against wall-clock minutes for TensorBoard runs into one PNG.

    python scripts/learning_curves.py OUT.png LABEL=runs/<run> [LABEL=runs/<run> ...]
"""

import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from spacewar_ai.charts import line_chart


def curve(log_dir: str) -> list[tuple[float, float]]:
    ea = EventAccumulator(log_dir)
    ea.Reload()
    wins = {e.step: e.value for e in ea.Scalars("eval/win_rate")}
    minutes = {e.step: e.value for e in ea.Scalars("eval/wall_minutes")}
    return [(minutes[s], wins[s]) for s in sorted(wins) if s in minutes]


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    series = {}
    for arg in argv[1:]:
        label, _, path = arg.partition("=")
        series[label] = curve(path)
    line_chart(argv[0], series, "Win rate against heuristic:hard (greedy policy, 100 games)",
               "wall-clock minutes of training", "torpedo wins")
    print(f"wrote {argv[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
