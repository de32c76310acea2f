"""Train Stable-Baselines3 PPO on SpacewarEnv and log its learning curve like ours.

    python scripts/sb3_curve.py --minutes 10 --run-name sb3-ppo

SB3 PPO with its defaults (8 envs, 2048 steps, 10 epochs, batch 64) and our network (actor and
critic MLPs 256-256, our default activation) learns against one scripted opponent
(`--opponent`, heuristic:medium by default: the stage our league's curriculum spends most of its
games on).
Every `--eval-every` minutes of wall clock, its greedy policy plays 100 games against
heuristic:hard, sides swapped, with the same `play_match` as our `eval/win_rate`. The scalars
`eval/win_rate` and `eval/wall_minutes` go to runs/<run-name>/, so
`scripts/learning_curves.py` draws both curves on one chart. As in our trainer, the clock
includes the evaluations.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch


class SB3Pilot:
    """An SB3 policy behind the pilot interface (greedy). SB3 has no action masks: the engine
    treats an unavailable action as drift, as it does for every player."""

    def __init__(self, model, name: str = "sb3-ppo"):
        self.model = model
        self.name = name

    def act(self, obs: np.ndarray) -> np.ndarray:
        if obs.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        actions, _ = self.model.predict(obs, deterministic=True)
        return np.asarray(actions, dtype=np.int64).reshape(-1)

    def reset(self, mask=None, seeds=None) -> None:
        return None


def main() -> int:
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from torch.utils.tensorboard import SummaryWriter

    from spacewar_ai.arena import play_match
    from spacewar_ai.benchmark import sb3_activation
    from spacewar_ai.environment import SpacewarEnv

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--eval-every", type=float, default=1.0, help="minutes between evaluations")
    ap.add_argument("--opponent", default="heuristic:medium")
    ap.add_argument("--run-name", default="sb3-ppo")
    ap.add_argument("--log-dir", default="runs")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.minutes <= 0 or args.eval_every <= 0:
        ap.error("--minutes and --eval-every must be > 0")
    torch.set_num_threads(os.cpu_count() or 1)

    writer = SummaryWriter(os.path.join(args.log_dir, args.run_name))
    venv = make_vec_env(lambda: SpacewarEnv(opponent=args.opponent), n_envs=8, seed=args.seed)
    model = PPO("MlpPolicy", venv, seed=args.seed, device="cpu", verbose=0,
                policy_kwargs={"net_arch": {"pi": [256, 256], "vf": [256, 256]},
                               "activation_fn": sb3_activation()})
    start = time.perf_counter()
    state = {"next_eval": 0.0, "evals": 0}

    def evaluate() -> None:
        minutes = (time.perf_counter() - start) / 60
        r = play_match(SB3Pilot(model), "heuristic:hard", 100, seed=10_000 + state["evals"])
        step = model.num_timesteps
        writer.add_scalar("eval/win_rate", r.win_rate_a(), step)
        writer.add_scalar("eval/wall_minutes", minutes, step)
        writer.add_scalar("charts/SPS", step / max(time.perf_counter() - start, 1e-9), step)
        writer.flush()
        print(f"{minutes:5.1f} min, {step:,} steps: {r.win_rate_a():.0%} against heuristic:hard",
              flush=True)
        state["evals"] += 1

    class _Clock(BaseCallback):
        def _on_step(self) -> bool:
            elapsed = (time.perf_counter() - start) / 60
            if elapsed >= state["next_eval"]:
                evaluate()
                state["next_eval"] += args.eval_every
            return elapsed < args.minutes

    model.learn(total_timesteps=10**10, callback=_Clock())
    evaluate()
    writer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
