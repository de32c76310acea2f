"""The ladder: recorded games -> behaviour cloning -> offline RL -> PPO with the league, each stage
measured against the hard and medium pilots and against the stage before it, and the whole
ladder against PPO from scratch given the same wall clock.

    python scripts/ladder.py --out docs/ladder.md --games 500 --cql-steps 30000 --ppo-minutes 5

Stages, each an ordinary command of the CLI's (run in this process):
1. `--datagen`: `--games` games of heuristic:hard against each of hard, medium, easy and random.
2. `--algorithm bc --dataset-pilot heuristic:hard`: the hard pilot's decisions, cloned.
3. `--algorithm cql`: conservative Q-learning on every recorded decision (both sides' views).
4. `--algorithm ppo --init-from <CQL's model>` for `--ppo-minutes`: the CQL policy imitated, then
   PPO with the curriculum and league.
Then `--algorithm ppo` from scratch for the ladder's whole wall clock. Every comparison is 200+
games with sides swapped (`--eval-games`), torpedo wins with a 95% interval.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from spacewar_ai.config import OfflineConfig, RunConfig, TrainConfig  # noqa: E402
from spacewar_ai.rating.match import (
    play_match,  # noqa: E402
    wilson_interval,  # noqa: E402
)
from spacewar_ai.training import train  # noqa: E402
from spacewar_ai.training.datasets import generate  # noqa: E402

OPPONENTS = ("heuristic:hard", "heuristic:medium", "heuristic:easy", "random")


def run(cfg: RunConfig, **kw) -> tuple[dict, float]:
    began = time.time()
    out = train(cfg, quiet=True, **kw)
    return out, time.time() - began


def versus(a: str, b: str, games: int, seed: int) -> dict:
    r = play_match(a, b, games, seed)
    lo, hi = wilson_interval(r.wins_a, r.n)
    return {"wins": r.wins_a, "losses": r.wins_b, "games": r.n, "rate": r.win_rate_a(),
            "ci": [lo, hi]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="docs/ladder.md")
    p.add_argument("--games", type=int, default=500, help="recorded games per pairing")
    p.add_argument("--cql-steps", type=int, default=30_000)
    p.add_argument("--ppo-minutes", type=float, default=5.0)
    p.add_argument("--eval-games", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default="ladder")
    p.add_argument("--scratch-minutes", type=float,
                   help="PPO from scratch's budget (default: the ladder's own wall clock)")
    p.add_argument("--train-eval-games", type=int, default=100,
                   help="games of each training run's own evaluations (which pick best.pt)")
    p.add_argument("--warm-decisions", type=int, default=TrainConfig().warm_start_decisions,
                   help="decisions of the CQL policy that PPO from CQL imitates first (default "
                        "a run's [train] warm_start_decisions)")
    args = p.parse_args(argv)
    base = dict(seed=args.seed, checkpoint_dir="checkpoints", log_dir="runs",
                eval_episodes=args.train_eval_games)
    times: dict[str, float] = {}

    began = time.time()
    dataset = f"{args.name}-s{args.seed}"
    report = generate([("heuristic:hard", o) for o in OPPONENTS], args.games, dataset,
                      args.seed, quiet=True, overwrite=True)
    times["datagen"] = time.time() - began
    print(report.summary(), flush=True)

    bc_cfg = RunConfig(train=TrainConfig(algorithm="bc", dataset=dataset,
                                         dataset_pilot="heuristic:hard",
                                         run_name=f"{args.name}-bc-s{args.seed}", **base))
    _, times["bc"] = run(bc_cfg)
    cql_cfg = RunConfig(train=TrainConfig(algorithm="cql", dataset=dataset,
                                          run_name=f"{args.name}-cql-s{args.seed}", **base),
                        offline=OfflineConfig(cql_steps=args.cql_steps))
    _, times["cql"] = run(cql_cfg)
    cql_model = f"checkpoints/{args.name}-cql-s{args.seed}/best.pt"
    ppo_cfg = RunConfig(train=TrainConfig(total_timesteps=10**10, max_minutes=args.ppo_minutes,
                                          warm_start_decisions=args.warm_decisions,
                                          run_name=f"{args.name}-ppo-s{args.seed}", **base))
    _, times["ppo"] = run(ppo_cfg, start_from=cql_model)
    ladder_seconds = sum(times.values())
    scratch_cfg = RunConfig(train=TrainConfig(total_timesteps=10**10,
                                              max_minutes=args.scratch_minutes or
                                              ladder_seconds / 60,
                                              run_name=f"{args.name}-scratch-s{args.seed}",
                                              **base))
    _, times["scratch"] = run(scratch_cfg)

    stages = [("BC", f"checkpoints/{args.name}-bc-s{args.seed}/best.pt"),
              ("CQL", f"dqn:{cql_model}"),
              ("PPO from CQL", f"checkpoints/{args.name}-ppo-s{args.seed}/best.pt"),
              ("PPO from scratch, same wall clock",
               f"checkpoints/{args.name}-scratch-s{args.seed}/best.pt")]
    g, s = args.eval_games, args.seed
    rows = []
    for k, (label, spec) in enumerate(stages):
        row = {"stage": label, "spec": spec,
               "hard": versus(spec, "heuristic:hard", g, 50_000 + s),
               "medium": versus(spec, "heuristic:medium", g, 60_000 + s)}
        if 0 < k < 3:
            row["previous"] = versus(spec, stages[k - 1][1], g, 70_000 + s)
        if k == 3:
            row["previous"] = versus(stages[2][1], spec, g, 70_000 + s)  # the ladder's view
        rows.append(row)
        print(label, json.dumps(row), flush=True)
    write_report(Path(args.out), rows, times, report, args)
    return 0


def cell(v: dict) -> str:
    return f"{v['rate']:.1%} ({v['ci'][0]:.0%}-{v['ci'][1]:.0%})"


def write_report(out: Path, rows, times, report, args) -> None:
    lines = [f"# The ladder: recorded games -> BC -> CQL -> PPO, seed {args.seed}", "",
             f"`python scripts/ladder.py --games {args.games} --cql-steps {args.cql_steps} "
             f"--ppo-minutes {args.ppo_minutes:g} --eval-games {args.eval_games} --seed "
             f"{args.seed}`, {time.strftime('%Y-%m-%d')}. Torpedo wins over "
             f"{args.eval_games} games, sides swapped, 95% intervals.", "",
             f"Recorded: {report.games} games ({report.steps:,} steps) in "
             f"{times['datagen']:.0f} s. Wall clock: BC {times['bc']:.0f} s, CQL "
             f"{times['cql']:.0f} s, PPO {times['ppo']:.0f} s; the ladder "
             f"{sum(times[k] for k in ('datagen', 'bc', 'cql', 'ppo')):.0f} s in all, and PPO "
             f"from scratch {times['scratch']:.0f} s.", "",
             "| stage | against hard | against medium | head to head against the stage before |",
             "|---|---|---|---|"]
    for row in rows:
        prev = cell(row["previous"]) if "previous" in row else "-"
        if row["stage"].startswith("PPO from scratch"):
            prev = f"the ladder (PPO from CQL) wins {prev} against it"
        lines.append(f"| {row['stage']} | {cell(row['hard'])} | {cell(row['medium'])} | {prev} |")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps({"rows": rows, "seconds": times}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    raise SystemExit(main())
