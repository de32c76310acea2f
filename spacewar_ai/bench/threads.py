"""`spacewar-ai --benchmark-threads`: every torch path timed with one thread and with one per
core, on an idle machine and beside a CPU hog on every core, side by side in one run.

Each path does a fixed amount of work (so a slow setting takes longer, it does not do less):
PPO and DQN training, behaviour cloning, conservative Q-learning, an evaluation match of the
shipped network, and the planners `search:` and `adapt:` deciding in one game. The settings are
alternated within each condition (one thread, all cores, one thread, ...) and the median kept, so
the host's drift falls on both alike. The hog is one busy Python process per core, started and
stopped here. threads.py holds the default this chooses between.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from ..config import GameConfig


def _time(fn) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def _trainer_path(algorithm: str, timesteps: int, seed: int):
    import torch

    from ..config import RunConfig, TrainConfig
    from ..training.online.trainer import Trainer

    def run():
        with tempfile.TemporaryDirectory() as tmp:
            cfg = RunConfig(train=TrainConfig(
                algorithm=algorithm, checkpoint_dir=tmp, log_dir=tmp, run_name="bench",
                total_timesteps=timesteps, eval_interval=10**6, save_interval=10**6,
                eval_opponent="heuristic:medium", seed=seed, eval_video=0.0,
                torch_threads=torch.get_num_threads(), rollout_workers=0))
            Trainer(cfg, quiet=True).run()
    return run


def _teacher_data(decisions: int, seed: int):
    """The hard pilot's decisions and transitions (warm_start.teacher_games), once."""
    from ..training.online.warm_start import teacher_games

    rows = []
    teacher_games("heuristic:hard", GameConfig(), decisions, seed,
                  lambda *step: rows.append(tuple(np.copy(x) for x in step)))
    return rows


def _bc_path(rows, epochs: int, seed: int):
    from ..agents.ppo import PPOAgent
    from ..config import PPOConfig
    from ..training.offline.learners import behaviour_clone

    obs = np.concatenate([r[0] for r in rows])
    actions = np.concatenate([r[1] for r in rows])

    def run():
        config = GameConfig()
        agent = PPOAgent(config.obs_dim, config.num_actions, PPOConfig(), game=config)
        behaviour_clone(agent, obs, actions, epochs, seed)
    return run


def _cql_path(rows, updates: int, seed: int):
    from ..agents.dqn import DQNAgent
    from ..config import DQNConfig

    def run():
        config = GameConfig()
        agent = DQNAgent(config.obs_dim, config.num_actions,
                         DQNConfig(buffer_size=sum(len(r[1]) for r in rows)), seed=seed,
                         game=config)
        for obs, action, reward, nxt, term, done in rows:
            agent.store_transition(obs, action, reward, nxt, term, done=done)
        for _ in range(updates):
            agent.update(cql_alpha=1.0)
    return run


def _match_path(games: int, seed: int):
    from ..pilots.scripted import HeuristicPilot
    from ..rating.match import play_match

    return lambda: play_match("pretrained", HeuristicPilot("hard"), games, seed)


def _planner_path(spec: str, decisions: int, seed: int):
    from .throughput import planner_game

    def run():
        decide = planner_game(spec, seed)
        for _ in range(decisions):
            decide()
    return run


def start_hog(processes: int) -> list[subprocess.Popen]:
    """One busy Python process per requested core, each killed by the kernel if this one dies."""
    from ..util.processes import die_with_parent

    return [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             preexec_fn=die_with_parent) for _ in range(processes)]


def stop_hog(hog: list[subprocess.Popen]) -> None:
    for p in hog:
        p.kill()
    for p in hog:
        p.wait()


def run_thread_benchmark(seed: int = 0, quick: bool = False, repeats: int = 3) -> dict:
    """Time every path at 1 thread and at one per core, idle and busy; print the table and
    return {path: {(condition, threads): seconds}}."""
    import torch

    from ..util.threads import DEFAULT_THREADS

    cores = os.cpu_count() or 1
    settings = sorted({1, cores})
    # Quick: every path once per setting, idle only, on a fiftieth of the work: it shows the
    # paths run; beside the CPU hogs the slow settings cost far more than the rest together.
    conditions = ("idle",) if quick else ("idle", "busy")
    if quick:
        repeats = 1
    scale = 0.02 if quick else 1.0
    rows = _teacher_data(int(200_000 * scale) or 1, seed)
    paths = {
        "PPO training": _trainer_path("ppo", int(65_536 * scale) or 1, seed),
        "DQN training": _trainer_path("dqn", int(20_000 * scale) or 1, seed),
        "behaviour cloning": _bc_path(rows, 2, seed),
        "conservative Q-learning": _cql_path(rows, int(400 * scale) or 1, seed),
        "evaluation (pretrained, 400 games)": _match_path(max(2, int(400 * scale) // 2 * 2), seed),
        "search:pretrained, one game": _planner_path("search:pretrained",
                                                     int(150 * scale) or 1, seed),
        "adapt:pretrained, one game": _planner_path("adapt:pretrained",
                                                    int(150 * scale) or 1, seed),
    }
    print(f"Torch threads on {cores} cores: each path's fixed work in seconds, median of "
          f"{repeats}, settings alternated; busy = one CPU hog per core beside it. Default "
          f"here: {DEFAULT_THREADS} thread(s)."
          + (" Quick: a fiftieth of the work, idle only (a check that every path runs)."
             if quick else ""), flush=True)
    before = torch.get_num_threads()
    figures: dict[str, dict] = {}
    try:
        for name, fn in paths.items():
            torch.set_num_threads(1)
            fn()  # compiles, loads and caches outside the timing
            figures[name] = {}
            for condition in conditions:
                hog = start_hog(cores) if condition == "busy" else []
                try:
                    times: dict[int, list[float]] = {s: [] for s in settings}
                    for _ in range(repeats):
                        for s in settings:
                            torch.set_num_threads(s)
                            times[s].append(_time(fn))
                finally:
                    stop_hog(hog)
                for s in settings:
                    figures[name][(condition, s)] = statistics.median(times[s])
            _print_row(name, figures[name], settings, DEFAULT_THREADS, cores, conditions)
    finally:
        torch.set_num_threads(before)
    return figures


def _print_row(name: str, t: dict, settings: list[int], default: int, cores: int,
               conditions=("idle", "busy")) -> None:
    cells = "  ".join(f"{c} {s}t {t[(c, s)]:7.2f}s" for c in conditions for s in settings)
    ratios = []
    for c in conditions:
        best = min(t[(c, s)] for s in settings)
        ratios.append(f"{c}: default/best {t[(c, default)] / best:.2f}, "
                      f"old default ({cores}t)/default {t[(c, cores)] / t[(c, default)]:.2f}")
    print(f"  {name:<36} {cells}   {'; '.join(ratios)}", flush=True)
