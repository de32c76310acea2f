"""The LM ladder: a teacher's games -> SFT -> DAgger -> GRPO, each measured against the medium and
hard pilots and against the stage before it, with the wall clock of every stage.

    python docs/log/probes/lm_ladder.py --json docs/lm_ladder.json

Stages, each an ordinary command of the CLI's run in this process (the CLI form is printed):
1. `--datagen --players heuristic:hard,heuristic:medium --episodes GAMES`: the teacher's games;
2. `--algorithm sft --dataset-pilot heuristic:hard --base-model BASE`, `--sft-examples`
   decisions;
3. `--algorithm dagger --init-from <SFT run> --teacher heuristic:hard --dataset ...`,
   `--dagger-rounds` rounds of `--dagger-games` games and `--dagger-steps` steps;
4. `--algorithm grpo --init-from <DAgger run> --opponent GRPO_OPPONENT --episodes GRPO_GAMES`.
A stage whose output already exists (the dataset, `models/adapters/<name>-sft`, `...-dagger`,
`...-grpo`) is reused, its wall clock read from what it saved, so a ladder can be finished in
parts.

Then matches of `--eval-games` games (sides swapped in pairs): the untrained base, SFT, DAgger,
GRPO and the teacher against heuristic:medium and heuristic:hard, and each stage against the
one before it (DAgger against SFT, GRPO against DAgger); torpedo wins with 95% Wilson
intervals. LMs play in bfloat16 (`@bf16`) unless `--float32`. Prints a markdown
table and writes everything to `--json`.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from spacewar_ai.config import (  # noqa: E402
    DaggerConfig,
    GRPOConfig,
    RunConfig,
    SFTConfig,
    TrainConfig,
)
from spacewar_ai.lm.models import ADAPTERS_DIR, adapter_meta  # noqa: E402
from spacewar_ai.rating.match import (
    play_match,  # noqa: E402
    wilson_interval,  # noqa: E402
)
from spacewar_ai.training import train  # noqa: E402

TEACHER, PUPIL_OF = "heuristic:hard", "heuristic:medium"
OPPONENTS = ("heuristic:medium", "heuristic:hard")


def versus(a: str, b: str, games: int, seed: int) -> dict:
    began = time.time()
    r = play_match(a, b, games, seed)
    lo, hi = wilson_interval(r.wins_a, r.n)
    return {"a": a, "b": b, "wins": r.wins_a, "losses": r.wins_b, "games": r.n,
            "rate": r.win_rate_a(), "ci": [lo, hi], "seconds": round(time.time() - began, 1)}


def dataset_exists(name: str) -> bool:
    import minari

    return any(d.startswith(f"spacewar/{name}-v") for d in minari.list_local_datasets())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--name", default="ladder",
                   help="runs are <name>-sft, <name>-dagger and <name>-grpo")
    p.add_argument("--base", default="smollm2")
    p.add_argument("--dataset-id", default="lm-hard-medium")
    p.add_argument("--games", type=int, default=600, help="the teacher's recorded games")
    p.add_argument("--sft-examples", type=int, default=20_000)
    p.add_argument("--view", type=int, default=SFTConfig.view, help="the prompt's view for SFT")
    p.add_argument("--dagger-rounds", type=int, default=DaggerConfig.rounds)
    p.add_argument("--dagger-games", type=int, default=DaggerConfig.games,
                   help="games a round, shared among [dagger] opponents")
    p.add_argument("--dagger-steps", type=int, default=DaggerConfig.steps,
                   help="gradient steps a round")
    p.add_argument("--grpo-opponent", default="heuristic:medium,heuristic:hard",
                   help="GRPO's opponents, comma separated, sharing its games")
    p.add_argument("--grpo-games", type=int, default=960, help="games GRPO plays in all")
    p.add_argument("--grpo-games-per-iteration", type=int, default=16)
    p.add_argument("--grpo-scored", type=int, default=1024,
                   help="decisions whose actions are scored, per iteration")
    p.add_argument("--grpo-states", type=int, default=256,
                   help="groups an update learns from, those whose action matters most")
    p.add_argument("--grpo-minutes", type=float, default=0.0,
                   help="a wall-clock stop for GRPO (0: none)")
    p.add_argument("--grpo-learning-rate", type=float, default=GRPOConfig.learning_rate)
    p.add_argument("--eval-games", type=int, default=64)
    p.add_argument("--float32", action="store_true", help="LMs play in float32 (slower)")
    p.add_argument("--torch-threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default="")
    args = p.parse_args(argv)
    stages = {}

    began = time.time()
    if not dataset_exists(args.dataset_id):
        from spacewar_ai.training.datasets import generate

        generate([(TEACHER, PUPIL_OF)], args.games, args.dataset_id, seed=args.seed, quiet=True)
    stages["datagen"] = {"seconds": round(time.time() - began, 1), "command":
                         f"spacewar-ai --datagen --players {TEACHER},{PUPIL_OF} --episodes "
                         f"{args.games} --dataset-id {args.dataset_id}"}

    sft, dagger, grpo = f"{args.name}-sft", f"{args.name}-dagger", f"{args.name}-grpo"
    common = {"torch_threads": args.torch_threads, "seed": args.seed}
    if not (ADAPTERS_DIR / sft).is_dir():
        train(RunConfig(train=TrainConfig(
            algorithm="sft", dataset=args.dataset_id, dataset_pilot=TEACHER, run_name=sft,
            **common), sft=SFTConfig(base_model=args.base, examples=args.sft_examples,
                                     view=args.view)))
    meta = adapter_meta(ADAPTERS_DIR / sft)
    stages["sft"] = {"seconds": meta["seconds"], "agreement": meta["agreement"],
                     "examples": meta["examples"],
                     "examples_per_second": meta.get("examples_per_second"), "command":
                     f"spacewar-ai --algorithm sft --dataset {args.dataset_id} --dataset-pilot "
                     f"{TEACHER} --base-model {args.base} --run-name {sft} --torch-threads "
                     f"{args.torch_threads}"}
    if not (ADAPTERS_DIR / dagger).is_dir():
        train(RunConfig(
            train=TrainConfig(algorithm="dagger", dataset=args.dataset_id, dataset_pilot=TEACHER,
                              run_name=dagger, **common),
            dagger=DaggerConfig(teacher=TEACHER, rounds=args.dagger_rounds,
                                games=args.dagger_games, steps=args.dagger_steps)),
            start_from=sft)
    meta = adapter_meta(ADAPTERS_DIR / dagger)
    stages["dagger"] = {"seconds": meta["seconds"], "rounds": meta["rounds"],
                        "agreement_own": meta["agreement_own"],
                        "agreement_teacher": meta["agreement_teacher"], "command":
                        f"spacewar-ai --algorithm dagger --init-from {sft} --teacher {TEACHER} "
                        f"--dataset {args.dataset_id} --dataset-pilot {TEACHER} --run-name "
                        f"{dagger} --torch-threads {args.torch_threads} --config C (C: "
                        f"[dagger] rounds = {args.dagger_rounds}, games = {args.dagger_games}, "
                        f"steps = {args.dagger_steps})"}
    if not (ADAPTERS_DIR / grpo).is_dir():
        train(RunConfig(train=TrainConfig(
            algorithm="grpo", episodes=args.grpo_games, max_minutes=args.grpo_minutes,
            run_name=grpo, **common),
            grpo=GRPOConfig(opponents=tuple(s.strip() for s in args.grpo_opponent.split(",")),
                            games=args.grpo_games_per_iteration, scored=args.grpo_scored,
                            states=args.grpo_states, learning_rate=args.grpo_learning_rate)),
            start_from=dagger)
    meta = adapter_meta(ADAPTERS_DIR / grpo)
    stages["grpo"] = {"seconds": meta["seconds"], "games": meta["games"], "command":
                      f"spacewar-ai --algorithm grpo --init-from {dagger} --opponent "
                      f"{args.grpo_opponent} --episodes {args.grpo_games}"
                      + (f" --minutes {args.grpo_minutes:g}" if args.grpo_minutes else "")
                      + f" --run-name {grpo} "
                      f"--torch-threads {args.torch_threads} --config C (C: [grpo] games = "
                      f"{args.grpo_games_per_iteration}, scored = {args.grpo_scored}, states = "
                      f"{args.grpo_states}, learning_rate = {args.grpo_learning_rate})"}

    from spacewar_ai.util.threads import use_torch_threads

    use_torch_threads(args.torch_threads)
    opt = "" if args.float32 else "@bf16"
    players = {"base (untrained)": f"lm:{args.base}{opt}", "SFT": f"lm:{sft}{opt}",
               "DAgger": f"lm:{dagger}{opt}", "GRPO": f"lm:{grpo}{opt}",
               f"teacher ({TEACHER})": TEACHER}
    table = {}
    for label, spec in players.items():
        for opp in OPPONENTS:
            table[(label, opp)] = versus(spec, opp, args.eval_games, args.seed + 1000)
            print(f"{label} vs {opp}: {table[(label, opp)]['rate']:.1%}", flush=True)
    heads = {f"{a} against {b}": versus(players[a], players[b], args.eval_games, args.seed + 2000)
             for a, b in (("DAgger", "SFT"), ("GRPO", "DAgger"))}

    def cell(r):
        return f"{r['rate']:.0%} [{r['ci'][0]:.0%}, {r['ci'][1]:.0%}]"

    lines = ["| pilot | vs heuristic:medium | vs heuristic:hard |", "|---|---|---|"]
    lines += [f"| {label} | {cell(table[(label, OPPONENTS[0])])} | "
              f"{cell(table[(label, OPPONENTS[1])])} |" for label in players]
    lines += [""] + [f"{label}, head to head: {cell(r)} torpedo wins ({r['wins']} won, "
                     f"{r['losses']} lost, {r['games']} games)" for label, r in heads.items()]
    lines += ["", "| stage | wall clock | command |", "|---|---|---|"]
    lines += [f"| {k} | {v['seconds'] / 60:.1f} min | `{v['command']}` |"
              for k, v in stages.items()]
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "machine": f"{platform.machine()}, {platform.processor() or platform.system()}",
            "eval_games": args.eval_games, "lm_dtype": "float32" if args.float32 else "bfloat16",
            "stages": stages, "head_to_head": heads,
            "matches": [{"pilot": k[0], **v} for k, v in table.items()]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
