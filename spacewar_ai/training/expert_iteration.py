"""Expert iteration for a network: the planner over the student labels the states the student
reaches, and the student learns the planner's moves (docs/lm.md, "Expert iteration").

    python scripts/network_exit.py --student pretrained --rounds 3 --games 64

A round (`network_round`): the student (a PPO network, greedy) plays `games` games against each
opponent while the teacher (any pilot spec, typically `search:POLICY+MODEL`) labels each of its
decisions (pilots/wrappers.py's `Labelled`); the agreement is measured, then the actor is fitted
to the labels of this and every earlier round (`PPOAgent.imitate`), as DAgger aggregates."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..config import GameConfig, RewardConfig


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

    from ..pilots.build import AgentPilot
    from .datasets import labelled_decisions, labelled_round

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
