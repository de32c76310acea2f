"""Expert iteration for a network, measured round by round.

    python docs/log/probes/network_exit.py --student pretrained --rounds 3 --games 64 \
        --teacher "search:{student}+heuristic:hard" --out checkpoints/exit

Each round (`network_round`, below): the student (a PPO network, greedy) plays `--games` games against
each of `--opponents`, `--teacher` labels every state it reaches (`{student}` in the spec is the
student as it stands, so a planner over the student improves on the latest one: expert
iteration; pilots/wrappers.py's `Labelled`), the student's actor is fitted to the aggregate of
every round's labels (`PPOAgent.imitate`, as DAgger aggregates), and the
student is saved as `OUT/round<k>.pt`. Then it plays `--eval-games` games against each of
`--judges` (network alone, greedy). Prints one row per round and, with `--json`, writes them:
the agreement with the teacher on the student's own states before the fit, and after it the
share of the teacher's overrides the student now makes and of its other moves it still makes
(a student that cannot take the overrides shows it there).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from spacewar_ai.agents.saved import load_agent  # noqa: E402
from spacewar_ai.config import GameConfig, RewardConfig  # noqa: E402
from spacewar_ai.pilots.build import make_pilot, spec_path  # noqa: E402
from spacewar_ai.rating.match import play_match  # noqa: E402


@dataclass
class Aggregate:
    """Every round's states and the teacher's answers there."""

    obs: list = field(default_factory=list)
    labels: list = field(default_factory=list)

    def add(self, obs: np.ndarray, labels: np.ndarray) -> None:
        self.obs.append(obs)
        self.labels.append(labels)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate(self.obs), np.concatenate(self.labels)


def network_round(agent, teacher: str, opponents: tuple, games: int, seed: int,
                  config: GameConfig | None = None, aggregate: Aggregate | None = None,
                  epochs: int = 4, batch_size: int = 256, learning_rate: float = 3e-4,
                  temperature: float = 0.0, progress=None) -> dict:
    """One round of expert iteration on `agent` (a PPOAgent, trained in place): its games
    against `opponents` (`games` each, an even number), labelled by `teacher`, then the fit
    (to the teacher's answers; with `temperature` > 0 to a planner's improved policy,
    search.improved_policy). Returns the round's figures: decisions labelled, agreement on its
    own states before the fit, the fit's last loss, the share of the teacher's overrides (its
    labels that differ from the student's moves) the student makes after the fit and of the
    moves it kept, the student's win rate in its games."""
    import torch

    from spacewar_ai.pilots.build import AgentPilot
    from spacewar_ai.training.datasets import labelled_decisions, labelled_round

    config = config if config is not None else GameConfig()
    aggregate = aggregate if aggregate is not None else Aggregate()
    played = labelled_round(lambda s: AgentPilot(agent, "student", deterministic=True),
                        tuple(opponents), teacher, games * len(opponents), seed, config,
                        RewardConfig(), progress, temperature=temperature)
    obs, acts, labels, policies = labelled_decisions(played)
    aggregate.add(obs, labels if policies is None else policies)
    everything, answers = aggregate.arrays()
    optimizer = torch.optim.Adam(agent.net.parameters(), lr=learning_rate)
    generator = torch.Generator().manual_seed(seed)
    fit = agent.imitate(everything, answers, optimizer, batch_size, epochs=epochs,
                        generator=generator, fit_scaling=False)
    # Whether the fit took the teacher's overrides, and what it cost the moves it kept: the
    # student's greedy answers after the fit on this round's states.
    now = agent.select_action(obs, deterministic=True) if len(obs) else np.zeros(0, dtype=np.int64)
    overridden = acts != labels
    return {"decisions": len(obs), "aggregate": len(everything),
            "agreement_own": float((acts == labels).mean()) if len(obs) else 0.0,
            "loss": float(fit.get("loss", float("nan"))),
            "overrides_learned": _share(now[overridden] == labels[overridden]),
            "kept_after_fit": _share(now[~overridden] == labels[~overridden]),
            "win_rate": float(np.mean([r.win_rate_a() for _, r, _ in played]))}


def _share(hits: np.ndarray) -> float:
    return float(hits.mean()) if hits.size else 0.0


def save_student(agent, path: str | Path, rounds: list[dict], teacher: str) -> Path:
    """The student as a checkpoint every mode plays (`ppo:PATH`, `search:PATH`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    agent.save(path, {"run_name": path.parent.name, "expert_iteration": {
        "teacher": teacher, "rounds": rounds}})
    return path


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", default="pretrained", help="a PPO model's spec")
    parser.add_argument("--teacher", default="search:heuristic:hard+heuristic:hard")
    parser.add_argument("--opponents", default="heuristic:hard,heuristic:medium")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--games", type=int, default=64, help="per opponent and round (even)")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--temperature", type=float, default=0.0,
                        help="0: learn the planner's choices; above: its improved policy")
    parser.add_argument("--judges", default="heuristic:hard,pretrained")
    parser.add_argument("--eval-games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7000)
    parser.add_argument("--out", default="checkpoints/exit")
    parser.add_argument("--json", default="")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"),
                        help="where the student's fits run (auto: CUDA where torch reports it); "
                             "its games and the planner's rollouts stay on the CPU")
    args = parser.parse_args(argv)
    config = GameConfig()
    path = spec_path(args.student)
    try:
        agent, _ = load_agent(path, args.device, "ppo", config.obs_dim)
    except ValueError as err:  # CUDA asked for where there is none; a checkpoint that is no PPO
        parser.exit(2, f"network_exit.py: {err}\n")
    aggregate = Aggregate()
    judges = args.judges.split(",")
    rows = []
    current = args.student
    print("| round | labelled (aggregate) | agreement on own states | fit loss | "
          "overrides learned | kept moves kept | "
          + " | ".join(f"vs {j}" for j in judges) + " | minutes |")
    print("|---" * (7 + len(judges)) + "|")
    for k in range(1, args.rounds + 1):
        began = time.time()
        teacher = args.teacher.replace("{student}", current)
        row = network_round(agent, teacher, tuple(args.opponents.split(",")), args.games,
                            args.seed + 1000 * k, config, aggregate, args.epochs,
                            learning_rate=args.learning_rate, temperature=args.temperature)
        saved = save_student(agent, Path(args.out) / f"round{k}.pt", rows + [row], teacher)
        current = f"ppo:{saved}"
        for judge in judges:
            result = play_match(make_pilot(current, config), judge, args.eval_games,
                                args.seed, config)
            row[f"vs {judge}"] = result.wins_a / result.n
        row.update(round=k, teacher=teacher, minutes=(time.time() - began) / 60)
        rows.append(row)
        print(f"| {k} | {row['decisions']:,} ({row['aggregate']:,}) | "
              f"{row['agreement_own']:.1%} | {row['loss']:.3f} | "
              f"{row['overrides_learned']:.1%} | {row['kept_after_fit']:.1%} | "
              + " | ".join(f"{row[f'vs {j}']:.1%}" for j in judges)
              + f" | {row['minutes']:.1f} |", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    main()
