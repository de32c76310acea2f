"""Train Stable-Baselines3 PPO or DQN on SpacewarEnv and log its learning curve like ours.

    python scripts/sb3_curve.py --minutes 10 --run-name sb3-ppo
    python scripts/sb3_curve.py --algorithm dqn --minutes 10 --run-name sb3-dqn \
        --final-opponent heuristic:medium

SB3 with its defaults and our hidden layers (256-256, our default activation) learns against
one scripted opponent (`--opponent`, heuristic:medium by default: the stage our league's
curriculum spends most of its games on). PPO: 8 envs, 2048 steps, 10 epochs, batch 64, separate
actor and critic MLPs. DQN: one env, a 1M replay buffer, a target copy every 10,000 steps,
epsilon from 1.0 to 0.05 over the first tenth of `--timesteps` (1M by default: more than it
collects in 10 minutes here, about 500k, so the clock stops it, and epsilon reaches 0.05 after
about 2 minutes).
Every `--eval-every` minutes of wall clock (or every `--eval-every-steps` environment steps,
which a loaded host cannot change), its greedy policy plays 100 games against
heuristic:hard, sides swapped, with the same `play_match` as our `eval/win_rate`. The scalars
`eval/win_rate` and `eval/wall_minutes` go to runs/<run-name>/, so
`scripts/learning_curves.py` draws its curve beside ours. As in our trainer, the clock
includes the evaluations; `--steps` stops it after that many steps if the clock has not. At
the end it plays `--final-games` games against `--final-opponent` with `spacewar-ai
--evaluate`'s own function (the same starts, seed 0 up, sides swapped, and the same report),
so its last policy compares with our checkpoints game for game.
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


def main(argv: list[str] | None = None) -> int:
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from torch.utils.tensorboard import SummaryWriter

    from spacewar_ai.bench.throughput import sb3_activation, sb3_quiet
    from spacewar_ai.game.environment import SpacewarEnv
    from spacewar_ai.rating.evaluation import evaluate as evaluate_games
    from spacewar_ai.rating.match import play_match

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algorithm", choices=("ppo", "dqn"), default="ppo")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--eval-every", type=float, default=1.0, help="minutes between evaluations")
    ap.add_argument("--eval-every-steps", type=int, default=0,
                    help="environment steps between evaluations (instead of --eval-every)")
    ap.add_argument("--steps", type=int, default=0,
                    help="stop after this many environment steps if --minutes has not passed")
    ap.add_argument("--opponent", default="heuristic:medium")
    ap.add_argument("--run-name", default="sb3-ppo")
    ap.add_argument("--log-dir", default="runs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timesteps", type=int, default=1_000_000,
                    help="DQN: the length of SB3's exploration schedule (the clock stops training)")
    ap.add_argument("--final-opponent", default="heuristic:hard")
    ap.add_argument("--final-games", type=int, default=200)
    args = ap.parse_args(argv)
    if args.minutes <= 0 or args.eval_every <= 0:
        ap.error("--minutes and --eval-every must be > 0")
    if args.eval_every_steps < 0 or args.steps < 0:
        ap.error("--eval-every-steps and --steps must be >= 0 (0: not used)")
    if args.timesteps < 1 or args.final_games < 2 or args.final_games % 2:
        ap.error("--timesteps must be >= 1 and --final-games an even number >= 2 (sides swapped)")
    torch.set_num_threads(os.cpu_count() or 1)

    writer = SummaryWriter(os.path.join(args.log_dir, args.run_name))
    if args.algorithm == "ppo":
        venv = make_vec_env(lambda: SpacewarEnv(opponent=args.opponent), n_envs=8,
                            seed=args.seed)
        model = PPO("MlpPolicy", venv, seed=args.seed, device="cpu", verbose=0,
                    policy_kwargs={"net_arch": {"pi": [256, 256], "vf": [256, 256]},
                                   "activation_fn": sb3_activation()})
        budget = 10**10  # PPO's defaults schedule nothing on it: the clock alone stops it
    else:
        venv = make_vec_env(lambda: SpacewarEnv(opponent=args.opponent), n_envs=1,
                            seed=args.seed)
        model = DQN("MlpPolicy", venv, seed=args.seed, device="cpu", verbose=0,
                    policy_kwargs={"net_arch": [256, 256], "activation_fn": sb3_activation()})
        budget = args.timesteps
    sb3_quiet(model)
    name = f"sb3-{args.algorithm}"
    start = time.perf_counter()
    state = {"next_eval": 0.0, "evals": 0}

    def evaluate() -> None:
        minutes = (time.perf_counter() - start) / 60
        r = play_match(SB3Pilot(model, name), "heuristic:hard", 100,
                       seed=10_000 + state["evals"])
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
            if elapsed >= args.minutes or 0 < args.steps <= self.num_timesteps:
                return False  # the evaluation after learn() is the last point
            due = self.num_timesteps if args.eval_every_steps else elapsed
            if due >= state["next_eval"]:
                evaluate()
                state["next_eval"] += args.eval_every_steps or args.eval_every
            return True

    model.learn(total_timesteps=budget, callback=_Clock())
    evaluate()
    writer.close()
    # `spacewar-ai --evaluate`'s own function: the same starts and the same report.
    evaluate_games(SB3Pilot(model, name), args.final_opponent, args.final_games, seed=0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
