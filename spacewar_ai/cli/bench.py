"""Benchmarks: figures printed, never asserted."""

from __future__ import annotations

from .common import SEED
from .parser import flag, mode

QUICK = flag("--quick", "common", action="store_true",
             help="benchmarks: a tenth of the work, for a smoke test")


@mode("benchmark", reads=(SEED, QUICK),
      flag_help="print engine, vector env and pilot throughput")
def benchmark(parser, args) -> int:
    from ..bench.throughput import run_benchmark

    run_benchmark(seed=args.seed or 0, quick=args.quick)
    return 0


@mode("benchmark_training", reads=(SEED, QUICK),
      flag_help="train PPO for a minute (ours, then Stable-Baselines3's) and print both "
                "throughputs; takes a few minutes")
def benchmark_training(parser, args) -> int:
    from ..bench.throughput import run_training_benchmark

    run_training_benchmark(seed=args.seed or 0, quick=args.quick)
    return 0


@mode("benchmark_threads", reads=(SEED, QUICK),
      flag_help="time every torch path at one thread and at one per core, idle and beside a "
                "CPU hog; takes about ten minutes")
def benchmark_threads(parser, args) -> int:
    from ..bench.threads import run_thread_benchmark

    run_thread_benchmark(seed=args.seed or 0, quick=args.quick)
    return 0
