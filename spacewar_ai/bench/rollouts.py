"""`spacewar-ai --benchmark-rollouts`: PPO training throughput with the games played by the
learner itself and by 1, 2, ... rollout workers (training/online/rollouts.py: child processes of
this machine, or Ray actors with `--backend ray` or `--ray-address`), and by one worker playing
ahead (`--async-rollouts`: the next rollout while the learner updates), side by side in one
run, and the learner's update bound: the decisions per second a learner could take in if its
rollouts cost it nothing (a rollout's decisions over the time of its PPO update alone).

Every trainer runs the default PPO settings against heuristic:medium for the same wall-clock
budget, one after another in this process; worker rows include the start of their processes.
With `--ray-address` the workers run on that cluster, the learner here.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from ..util.workers import Where

UPDATE_REPEATS = 5  # PPO updates timed for the bound, the median taken
PROJECTED_MACHINES = (1, 2, 4, 8)  # worker machines in the projection's rows
GPU_SPEEDUP = 10.0  # an assumed speed-up of the update on a GPU, for the projection only


def _trainer(seconds: float, seed: int, workers: int, where: Where, tmp: str,
             ahead: bool = False):
    from ..config import LeagueConfig, RunConfig, TrainConfig
    from ..training.online.trainer import Trainer

    # A budget no host reaches: the clock ends every run, so each is timed as long as promised.
    cfg = RunConfig(train=TrainConfig(checkpoint_dir=tmp, log_dir=tmp,
                                      run_name=f"w{workers}{'-ahead' if ahead else ''}",
                                      eval_interval=10**6, save_interval=10**6,
                                      total_timesteps=10**10, max_minutes=seconds / 60,
                                      seed=seed, eval_opponent="heuristic:medium",
                                      rollout_workers=workers, async_rollouts=ahead),
                    league=LeagueConfig(curriculum=("heuristic:medium",), scripted_share=1.0))
    return Trainer(cfg, quiet=True, where=where)


def update_bound(agent, games: int, seed: int) -> float:
    """Decisions per second of PPO updates alone: a full rollout of `games` games of random
    observations learned from, UPDATE_REPEATS times, the median time taken."""
    from ..agents.ppo import ROLLOUT_FIELDS, RolloutBuffer

    c, rng = agent.config, np.random.default_rng(seed)
    shapes = {"obs": (agent.input_dim,), "raw": (agent.input_dim,), "mask": (agent.action_dim,)}
    rollout = {}
    for field in ROLLOUT_FIELDS:
        shape = (c.n_steps, games, *shapes.get(field, ()))
        rollout[field] = (np.ones(shape, bool) if field == "mask"
                          else rng.integers(0, agent.action_dim, shape) if field == "actions"
                          else rng.normal(size=shape).astype(np.float32))
    rollout["logprobs"] = -np.abs(rollout["logprobs"])
    rollout["dones"] = (rng.random((c.n_steps, games)) < 0.01).astype(np.float32)
    next_obs = rng.normal(size=(games, agent.state_dim)).astype(np.float32)
    times = []
    for _ in range(UPDATE_REPEATS):
        buffer = RolloutBuffer.joined([rollout], agent.device)
        start = time.perf_counter()
        agent.update(buffer, next_obs)
        times.append(time.perf_counter() - start)
    return c.n_steps * games / statistics.median(times)


def part_costs(log_dir: Path, cfg) -> dict[str, float]:
    """Seconds per decision of each part of a rollout-worker run's updates, read back from its
    TensorBoard logs (medians over its updates, the first two left out as start-up when there
    are more): a worker's play, the learner's gathering beyond the slowest worker, and the
    update."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logs = EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    logs.Reload()

    def median(tag: str) -> float:
        values = [e.value for e in logs.Scalars(tag)]
        return statistics.median(values[2:] or values)  # a run too short for that: all

    tags = [t for t in logs.Tags()["scalars"] if t.startswith("workers/decisions_per_second/")]
    per_worker = cfg.ppo.n_steps * cfg.train.num_envs / len(tags)
    play = max(1.0 / median(t) for t in tags)
    decisions = cfg.ppo.n_steps * cfg.train.num_envs
    gather = max(0.0, median("workers/gather_seconds") - play * per_worker) / decisions
    return {"play": play, "gather": gather,
            "update": median("workers/update_seconds") / decisions}


def projected(costs: dict[str, float], workers: int) -> float:
    """Decisions per second of a synchronous run with `workers` workers, each playing at the
    measured rate on a core of its own, the learner gathering and updating at `costs`."""
    return 1.0 / (costs["play"] / workers + costs["gather"] + costs["update"])


def run_rollout_benchmark(seconds: float = 60.0, seed: int = 0, quick: bool = False,
                          workers: tuple[int, ...] = (1, 2),
                          where: Where = Where("local")) -> dict[str, float]:
    import torch

    from ..util.threads import use_torch_threads

    if quick:  # a check that it runs: every run still ends at an update
        seconds = 3.0
    use_torch_threads()
    began = time.perf_counter()
    on = where.words
    print(f"PPO training throughput by where the games are played: trainers one after another, "
          f"each timed over {seconds:.0f} s after its start-up (worker rows include their "
          f"processes' start); learner torch threads {torch.get_num_threads()}, workers 1 each; "
          f"opponent heuristic:medium", flush=True)
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        # Each worker count in step, then the first one playing ahead (--async-rollouts).
        for count, ahead in ((0, False), *((w, False) for w in workers), (workers[0], True)):
            trainer = _trainer(seconds, seed, count, where, tmp, ahead)
            start = time.perf_counter()
            trainer.run()
            rate = trainer.counters.global_step / (time.perf_counter() - start)
            figures[f"workers_{count}{'_ahead' if ahead else ''}"] = rate
            label = "the learner plays its games" if count == 0 else \
                f"{count} rollout worker{'s' if count > 1 else ''} {on}" \
                + (", playing ahead" if ahead else "")
            ratio = "" if count == 0 else f"   ({figures['workers_0'] / rate:.2f}x the time " \
                                          "of the learner alone)"
            print(f"  {label:<66}{rate:>10,.0f} decisions/s{ratio}", flush=True)
        costs = part_costs(Path(tmp) / f"w{workers[-1]}", trainer.cfg)
        bounds = {}
        for threads in sorted({1, min(2, os.cpu_count() or 1)}):
            use_torch_threads(threads)
            bounds[threads] = update_bound(trainer.agent, trainer.cfg.train.num_envs, seed)
        use_torch_threads()
    c = trainer.cfg
    for threads, bound in bounds.items():
        figures[f"update_bound_{threads}"] = bound
        print(f"  the learner's update bound, PPO updates alone ({c.ppo.n_steps} x "
              f"{c.train.num_envs} decisions each), {threads} torch thread"
              f"{'s' if threads > 1 else ''}: {bound:,.0f} decisions/s")
    figures.update(costs)
    print(f"  per decision, from the {workers[-1]}-worker run's TensorBoard (medians over "
          f"updates): a worker plays {1e6 * costs['play']:.1f} us; the learner gathers "
          f"{1e6 * costs['gather']:.1f} us beyond the slowest worker and updates "
          f"{1e6 * costs['update']:.1f} us (PPO and the opponent model's fit, which sees every "
          "game here: all are against the judged pilot)")
    best = max(bounds)
    print("  projected, synchronous: 1 / (play / W + gather + update) decisions/s, W workers of "
          "one core each on other machines, the learner on a machine of its own:")
    print(f"    {'worker machines (2 cores)':<28}{'as measured':>14}"
          f"{f'PPO alone, {best} threads':>24}{f'update {GPU_SPEEDUP:g}x faster (GPU)':>28}")
    for machines in PROJECTED_MACHINES:
        w = 2 * machines
        alone = dict(costs, update=1.0 / bounds[best])
        gpu = dict(costs, update=costs["update"] / GPU_SPEEDUP)
        print(f"    {machines:<28}{projected(costs, w):>14,.0f}{projected(alone, w):>24,.0f}"
              f"{projected(gpu, w):>28,.0f}")
    print(f"  the benchmark took {(time.perf_counter() - began) / 60:.1f} minutes in all")
    return figures
