"""Benchmarks: figures printed, never asserted."""

from __future__ import annotations

from . import common
from .common import BACKEND, RAY_ADDRESS, SEED
from .parser import flag, mode
from .train import BASE_MODEL

QUICK = flag("--quick", "common", action="store_true",
             help="benchmarks: a check that every measurement runs, on a small share of "
                  "its work, not figures to quote (--benchmark-threads, -training and "
                  "-rollouts each under a minute on 2 cores; --benchmark, which also loads "
                  "the language model and starts Ray, two to three)")


@mode("benchmark", reads=(SEED, QUICK, BASE_MODEL),
      flag_help="print engine, vector env, pilot, language-model and Ray throughput; several "
                "minutes (--quick: a check that it runs, each row timed once: under a minute)")
def benchmark(parser, args) -> int:
    from ..bench.throughput import run_benchmark

    run_benchmark(seed=args.seed or 0, quick=args.quick, lm_spec=args.base_model or "smollm2")
    return 0


@mode("benchmark_training", reads=(SEED, QUICK),
      flag_help="train PPO for a minute (ours, then Stable-Baselines3's) and print both "
                "throughputs; a few minutes (--quick: a check that it runs, under one)")
def benchmark_training(parser, args) -> int:
    from ..bench.throughput import run_training_benchmark

    run_training_benchmark(seed=args.seed or 0, quick=args.quick)
    return 0


@mode("benchmark_threads", reads=(SEED, QUICK),
      flag_help="time every torch path at one thread and at one per core, idle and beside a "
                "CPU hog, three times each; many minutes, more on a busy machine (--quick: "
                "idle only, a check that every path runs, under one)")
def benchmark_threads(parser, args) -> int:
    from ..bench.threads import run_thread_benchmark

    run_thread_benchmark(seed=args.seed or 0, quick=args.quick)
    return 0


@mode("benchmark_rollouts", reads=(SEED, QUICK, BACKEND, RAY_ADDRESS),
      flag_help="train PPO for a minute with its games played by the learner, then by 1 and 2 "
                "rollout workers in child processes (--backend ray: Ray actors; "
                "--ray-address: that cluster's), and print each "
                "throughput and the learner's update bound; about four minutes (--quick: a "
                "check that it runs, under one)")
def benchmark_rollouts(parser, args) -> int:
    from ..bench.rollouts import run_rollout_benchmark

    run_rollout_benchmark(seed=args.seed or 0, quick=args.quick, where=common.where(args))
    return 0
