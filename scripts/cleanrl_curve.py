"""The learning curve of examples/cleanrl_ppo.py beside the real CleanRL ppo.py's, on the same
env with the same budget and seeds.

    pip install tyro   # CleanRL's ppo.py parses its flags with it
    python scripts/cleanrl_curve.py --cleanrl-ppo PATH/TO/cleanrl/cleanrl/ppo.py \
        --total-timesteps 500000 --seeds 1 2 3

Both scripts get one env id, registered here: Spacewar-v0 against `--opponent`
(heuristic:easy, the example's default) with rewards scaled by 0.01 (the example's default
scale, applied for both, so the example runs with `--reward-scale 1`). The same wrapper records
every game either script plays: the decisions played so far by all its envs, the game's points
and its winner. CleanRL's ppo.py runs unchanged through runpy (its own flags: `--env-id`,
`--seed`, `--total-timesteps`, `--num-envs`, `--num-steps`); Gymnasium 1.x's default autoreset
applies to it, as it would for any user. Each run is a process of its own, two at a time.

Prints, per script, the win rate in each tenth of the budget (mean over seeds) and the wall
time, and writes the curve as a PNG (`--chart`) and the curves of every seed as JSON (`--json`).
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cleanrl_ppo.py"
ENV_ID = "SpacewarCurve-v0"
NUM_ENVS, NUM_STEPS = 8, 128  # the example's defaults, given to both scripts
BINS = 10


def _register(opponent: str, games: list) -> None:
    """Register ENV_ID: Spacewar-v0 with its games recorded and its rewards scaled."""
    import gymnasium as gym

    from spacewar_ai.game.environment import SpacewarEnv

    decisions = [0]  # played by all envs of this process (one SyncVectorEnv)

    class Recorder(gym.Wrapper):
        def reset(self, **kwargs):
            self.points = 0.0
            return self.env.reset(**kwargs)

        def step(self, action):
            obs, reward, term, trunc, info = self.env.step(action)
            decisions[0] += 1
            self.points += reward
            if term or trunc:
                games.append((decisions[0], round(self.points, 2), int(info["winner"])))
            return obs, reward, term, trunc, info

    def entry(opponent: str = opponent):
        env = Recorder(SpacewarEnv(opponent=opponent))
        return gym.wrappers.TransformReward(env, lambda r: 0.01 * r)

    gym.register(ENV_ID, entry_point=entry)


def _one(args) -> int:
    """Run one script for one seed in this process and write its games to --out."""
    import torch

    torch.set_num_threads(1)  # two runs share the machine's two cores
    games: list = []
    _register(args.opponent, games)
    common = ["--env-id", ENV_ID, "--seed", str(args.seed), "--total-timesteps",
              str(args.total_timesteps), "--num-envs", str(NUM_ENVS), "--num-steps", str(NUM_STEPS)]
    start = time.time()
    if args.one == "example":
        sys.argv = [str(EXAMPLE), *common, "--reward-scale", "1", "--opponent", args.opponent,
                    "--log-dir", args.log_dir]
        runpy.run_path(str(EXAMPLE), run_name="__main__")
    else:
        sys.argv = [args.cleanrl_ppo, *common, "--no-cuda"]
        os.chdir(Path(args.log_dir).parent)  # ppo.py writes to runs/ under its working folder
        runpy.run_path(args.cleanrl_ppo, run_name="__main__")
    Path(args.out).write_text(json.dumps({"wall_s": time.time() - start, "games": games}))
    return 0


def _curve(games: list, budget: int) -> list[float | None]:
    """Win rate of ship 0 in each tenth of the budget (decisions played)."""
    wins, counts = [0] * BINS, [0] * BINS
    for decisions, _, winner in games:
        b = min(BINS - 1, (decisions - 1) * BINS // budget)
        counts[b] += 1
        wins[b] += winner == 0
    return [w / c if c else None for w, c in zip(wins, counts)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cleanrl-ppo", required=True, help="the path of CleanRL's cleanrl/ppo.py")
    p.add_argument("--total-timesteps", type=int, default=500_000)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--opponent", default="heuristic:easy")
    p.add_argument("--chart", default="docs/cleanrl_curve.png")
    p.add_argument("--json", default="docs/cleanrl_curve.json")
    p.add_argument("--one", choices=("example", "cleanrl"), help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--log-dir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.cleanrl_ppo = str(Path(args.cleanrl_ppo).resolve())
    if not Path(args.cleanrl_ppo).is_file():
        p.exit(2, f"--cleanrl-ppo {args.cleanrl_ppo}: no such file; give the path of "
                  "cleanrl/ppo.py in a clone of github.com/vwxyzjn/cleanrl\n")
    if args.one:
        return _one(args)

    tmp = Path(tempfile.mkdtemp(prefix="cleanrl_curve_"))
    runs = [(script, seed) for seed in args.seeds for script in ("example", "cleanrl")]

    def run(job):
        script, seed = job
        out = tmp / f"{script}-{seed}.json"
        log_dir = tmp / f"{script}-{seed}" / "runs"
        log_dir.mkdir(parents=True)
        subprocess.run([sys.executable, __file__, "--cleanrl-ppo", args.cleanrl_ppo,
                        "--total-timesteps", str(args.total_timesteps), "--opponent",
                        args.opponent, "--one", script, "--seed", str(seed), "--out", str(out),
                        "--log-dir", str(log_dir)], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
        return job, json.loads(out.read_text())

    with ThreadPoolExecutor(2) as pool:
        results = dict(pool.map(run, runs))

    names = {"example": "examples/cleanrl_ppo.py", "cleanrl": "CleanRL ppo.py"}
    series, report = {}, {"total_timesteps": args.total_timesteps, "opponent": args.opponent,
                          "num_envs": NUM_ENVS, "num_steps": NUM_STEPS, "runs": {}}
    print(f"win rate against {args.opponent} in each tenth of {args.total_timesteps:,} steps "
          f"(mean of seeds {' '.join(map(str, args.seeds))})")
    for script, name in names.items():
        curves = [_curve(results[script, s]["games"], args.total_timesteps) for s in args.seeds]
        mean = [None if any(c[b] is None for c in curves) else
                sum(c[b] for c in curves) / len(curves) for b in range(BINS)]
        wall = [results[script, s]["wall_s"] for s in args.seeds]
        games = sum(len(results[script, s]["games"]) for s in args.seeds)
        print(f"  {name:24s} " + " ".join("  -  " if m is None else f"{m:5.2f}" for m in mean)
              + f"   {games} games, {sum(wall) / len(wall):.0f} s a run")
        step = args.total_timesteps / BINS / 1000
        series[name] = [((b + 0.5) * step, m) for b, m in enumerate(mean) if m is not None]
        report["runs"][name] = {str(s): {"wall_s": round(results[script, s]["wall_s"], 1),
                                         "games": len(results[script, s]["games"]),
                                         "win_rate_by_tenth": c}
                                for s, c in zip(args.seeds, curves)}
    Path(args.json).write_text(json.dumps(report, indent=1))
    from spacewar_ai.util.charts import line_chart

    line_chart(args.chart, series, f"PPO against {args.opponent}, mean of {len(args.seeds)} seeds",
               "thousands of decisions played", "win rate")
    print(f"wrote {args.chart} and {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
