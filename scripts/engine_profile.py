"""Where the vector env's step goes: the engine's step, the observations, the env's own work.

    python scripts/engine_profile.py --games 1024

Times `GameBatch.step` (restarting the games that ended), `GameBatch.observe`,
`SpacewarVectorEnv.step_both` as a user calls it (autoresets and infos included), the env's
default opponent choosing ship 1's moves, and `SpacewarVectorEnv.step` with that opponent (as a
Gymnasium user steps it), each from the same saved state with the same random actions,
alternated, and prints the medians in microseconds a step and game-steps a second; the env's own
work (checking the actions, copies, the finished games' statistics, restarting them) is what
step_both takes beyond the engine's step and the observations.
docs/performance.md holds the figures.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from spacewar_ai.game.engine import OVER
from spacewar_ai.game.environment import SpacewarVectorEnv


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=1024)
    p.add_argument("--steps", type=int, default=20, help="steps per timing")
    p.add_argument("--repeats", type=int, default=100)
    args = p.parse_args(argv)
    env = SpacewarVectorEnv(args.games, opponent=None)
    env.reset_both(seed=0)
    batch = env.batch
    opposed = SpacewarVectorEnv(args.games)  # ship 1 flown by the env's default opponent
    opposed.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 6, size=(32, args.games, 2))
    for i in range(40):  # into the game: torpedoes in flight, some games ending every step
        env.step_both(actions[i % 32])
    start = batch.state_dict()

    def timed(work) -> float:
        batch.load_state_dict(start)
        opposed.batch.load_state_dict(start)
        t = time.perf_counter()
        for i in range(args.steps):
            work(actions[i % 32])
        return (time.perf_counter() - t) / args.steps * 1e6

    def step_and_restart(a):
        batch.step(a)
        batch.reset(batch.game_i[:, OVER] != 0)  # as the env does, so both play the same games

    parts = {"the engine's step (GameBatch.step, restarts)": step_and_restart,
             "both ships' observations (GameBatch.observe)": lambda a: batch.observe(),
             "the vector env's step_both, in all": env.step_both,
             "the default opponent's choices": lambda a: opposed.opponent.act(batch.obs[:, 1]),
             "the vector env's step against it, in all": lambda a: opposed.step(a[:, 0])}
    times: dict[str, list[float]] = {name: [] for name in parts}
    for _ in range(args.repeats):
        for name, work in parts.items():
            times[name].append(timed(work))
    us = {name: float(np.median(t)) for name, t in times.items()}
    step, observe, whole = (us[name] for name in list(parts)[:3])
    us["the env's own work (step_both's rest)"] = whole - step - observe
    print(f"{args.games} games, medians of {args.repeats} timings of {args.steps} steps:")
    for name, value in us.items():
        print(f"  {name:<46} {value:8.1f} us a step  "
              f"{args.games / value * 1e6 if value > 0 else float('nan'):>12,.0f} game-steps/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
