"""Reward personalities: one PPO agent per reward table, the same budget each, then the styles
they learned measured in GameResult statistics and rated against each other and the scripted
pilots in one tournament.

    python scripts/personalities.py --timesteps 1500000 --games 200 --out docs/personalities.md

Each agent: `spacewar-ai --algorithm ppo --reward NAME --timesteps T --seed S`, a budget in steps
(not minutes) so that the comparison does not depend on the machine's load.
Each agent's style: its `best.pt` against heuristic:hard, `--games` games, sides swapped (shots,
accuracy, fuel used, torpedoes dodged, game length, how its games ended). Then a round robin of
the agents and the three heuristic pilots. A personality whose agent collects its table's pay
without winning (a survival agent that never fires, a sniper that never shoots) is exploitable,
and the report says so.
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

from spacewar_ai.config import REWARD_PERSONALITIES, RewardConfig, RunConfig, TrainConfig
from spacewar_ai.rating.match import play_match
from spacewar_ai.rating.tournament import run_tournament
from spacewar_ai.training import train
from spacewar_ai.util.charts import bar_chart
from spacewar_ai.util.workers import Where

FIGURES = (("win rate", "win"), ("shots", "shots"), ("accuracy", "accuracy"),
           ("fuel used", "fuel"), ("dodged", "dodged"), ("length (frames)", "frames"))


def style(spec: str, games: int, seed: int) -> dict:
    r = play_match(spec, "heuristic:hard", games, seed)
    ends = {}
    for g in r.games:
        key = g.how if g.real_winner != "a" or g.how != "TORPEDO" else "WIN"
        ends[key] = ends.get(key, 0) + 1
    return {"win": r.win_rate_a(), "shots": r.mean("a", "shots"), "accuracy": r.accuracy("a"),
            "fuel": r.mean("a", "fuel"), "dodged": r.mean("a", "dodged"),
            "frames": r.mean_frames(), "deaths": r.causes("a"),
            "never_fired": sum(g.shots_a == 0 for g in r.games) / r.n, "ends": ends}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--timesteps", type=int, default=1_500_000)
    p.add_argument("--num-envs", type=int, default=TrainConfig().num_envs,
                   help="games each training run plays at once (an update is this many times "
                        "[ppo] n_steps decisions)")
    p.add_argument("--games", type=int, default=200)
    p.add_argument("--pairing-games", type=int, default=100, help="tournament games per pairing")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="docs/personalities.md")
    p.add_argument("--train-eval-games", type=int, default=100,
                   help="games of each training run's own evaluations (which pick best.pt)")
    args = p.parse_args(argv)
    names = list(REWARD_PERSONALITIES)
    specs, styles = {}, {}
    for name in names:
        run_name = f"personality-{name}-s{args.seed}"
        cfg = RunConfig(train=TrainConfig(total_timesteps=args.timesteps, seed=args.seed,
                                          run_name=run_name, num_envs=args.num_envs,
                                          eval_episodes=args.train_eval_games),
                        reward=RewardConfig.preset(name))
        train(cfg, quiet=True)
        specs[name] = f"checkpoints/{run_name}/best.pt"
        styles[name] = style(specs[name], args.games, 80_000 + args.seed)
        print(name, json.dumps(styles[name]), flush=True)
    report = run_tournament(list(specs.values()) + ["heuristic:easy", "heuristic:medium",
                                                    "heuristic:hard"], "round_robin",
                            args.pairing_games, args.seed, Where("local", 2), quiet=True)
    write_report(Path(args.out), names, styles, specs, report, args)
    return 0


def write_report(out: Path, names, styles, specs, report, args) -> None:
    rated = {r["spec"]: r for r in report.rows}
    lines = [f"# Reward personalities, {args.timesteps:,} steps of PPO each, seed {args.seed}", "",
             f"`python scripts/personalities.py --timesteps {args.timesteps} --games {args.games} "
             f"--seed {args.seed}`, {time.strftime('%Y-%m-%d')}: each agent's `best.pt` against "
             f"heuristic:hard over {args.games} games (sides swapped), per game; the rating is a "
             "Bradley-Terry fit of a round robin of the five agents and the three heuristic "
             f"pilots, {args.pairing_games} games a pairing.", "",
             "| personality | " + " | ".join(label for label, _ in FIGURES)
             + " | never fired | rating (95% CI) |",
             "|---|" + "---|" * (len(FIGURES) + 2)]
    for name in names:
        s = styles[name]
        r = rated[specs[name]]
        cells = [f"{s['win']:.1%}", f"{s['shots']:.1f}", f"{s['accuracy']:.1%}",
                 f"{s['fuel']:.0f}", f"{s['dodged']:.2f}", f"{s['frames']:.0f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {s['never_fired']:.0%} | "
                     f"{r['rating']:.0f} +- {r['ci95']:.0f} |")
    lines += ["", "Tournament:", "", report.text]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    for label, key in FIGURES:
        chart = out.with_name(f"{out.stem}-{key}.png")
        bar_chart(chart, names, [styles[n][key] for n in names],
                  f"{label} per game against heuristic:hard")
    out.with_suffix(".json").write_text(json.dumps({"styles": styles, "specs": specs}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    raise SystemExit(main())
