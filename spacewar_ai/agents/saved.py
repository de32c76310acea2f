"""Agents from and to files: `make_agent` builds one by algorithm, `load_agent` the one a checkpoint
holds, and `export_for_play` writes a play-only copy (no optimizer state), DQN runs joined in one
ensemble or a PPO run's checkpoints averaged into one network. The file format itself is
checkpoints.py's."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..config import DQNConfig, GameConfig, PPOConfig
from ..util.errors import UserError
from ..util.files import atomic_write_bytes
from .base import BaseAgent, saved_architecture
from .checkpoints import CheckpointError, check_finite, error_summary, load_checkpoint
from .dqn import DQNAgent
from .ppo import PPOAgent


def make_agent(algorithm: str, state_dim: int, action_dim: int, config=None, device="cpu",
               seed: int = 0, game: GameConfig | None = None,
               learn_dtype: torch.dtype = torch.float32) -> BaseAgent:
    """A new agent; `learn_dtype` is what its updates' passes run in (base.learner_dtype)."""
    if algorithm == "ppo":
        agent = PPOAgent(state_dim, action_dim, config, device, game=game)
    elif algorithm == "dqn":
        agent = DQNAgent(state_dim, action_dim, config, device, seed=seed, game=game)
    else:
        raise UserError(f"algorithm {algorithm!r} is unknown: use 'ppo' or 'dqn'")
    agent.learn_dtype = learn_dtype
    return agent


def load_agent(path, device: str = "cpu", expect_algorithm: str | None = None,
               expect_obs_dim: int | None = None):
    """Build the agent a checkpoint holds (algorithm read from the file) and load it."""
    ckpt = load_checkpoint(path, expect_algorithm, expect_obs_dim)
    algo = ckpt["algorithm"]
    cfg_cls = {"ppo": PPOConfig, "dqn": DQNConfig}.get(algo)
    if cfg_cls is None:
        raise CheckpointError(f"checkpoint {path}: unknown algorithm {algo!r}")
    try:
        saved = dict(ckpt["agent"]["config"])
        saved.update(saved_architecture(algo, saved))
        config = cfg_cls.from_dict(saved)
        agent = make_agent(algo, ckpt["obs_dim"], ckpt["action_dim"], config, device)
        agent.load_state_dict(ckpt["agent"])
    except (KeyError, IndexError, AttributeError, RuntimeError, ValueError, TypeError) as exc:
        raise CheckpointError(f"checkpoint {path}: its {algo} model does not load "
                              f"({error_summary(exc)})") from None
    check_finite(ckpt["agent"], path)
    return agent, ckpt


def export_for_play(src, dst, ensemble_with=(), average_with=()) -> int:
    """Write a play-only copy of a checkpoint (weights, observation statistics, config and
    metadata; no optimizer state or target network), atomically. Returns its size in bytes.
    ensemble_with: DQN checkpoints whose greedy players join src's ensemble in the copy;
    average_with: PPO checkpoints of src's run whose weights are averaged with its own
    (`average_weights`)."""
    if Path(dst).is_dir():
        raise CheckpointError(f"--export {dst}: is a folder; give a file name such as "
                              f"{Path(dst) / 'model.pt'}")
    agent, ckpt = load_agent(src)  # the model must load before a copy of it is written
    if average_with:
        agent_state, average_with = average_weights(agent, ckpt["agent"], src, average_with)
    elif not ensemble_with:
        agent_state = ckpt["agent"]
    else:
        if agent.algorithm != "dqn":
            raise CheckpointError(f"checkpoint {src}: holds a {agent.algorithm.upper()} model; "
                                  "only DQN models join an ensemble")
        for path in ensemble_with:
            other, _ = load_agent(path)
            try:
                agent.join_ensemble(other, f"checkpoint {path}")
            except ValueError as exc:
                raise CheckpointError(str(exc)) from None
        agent_state = agent.state_dict()
    agent_state = {k: v for k, v in agent_state.items() if k not in ("optimizer", "q_target")}
    meta = ckpt["metadata"]
    meta = {"exported_from": str(src), "run_name": meta.get("run_name"),
            "counters": meta.get("counters", {}), "config": meta.get("config", {})}
    if ensemble_with:
        meta["ensemble_with"] = [str(p) for p in ensemble_with]
    if average_with:
        meta["average_with"] = [str(p) for p in average_with]
    payload = {k: ckpt[k] for k in ("format", "format_version", "algorithm", "obs_dim",
                                    "action_dim")}
    payload["agent"] = agent_state
    payload["metadata_json"] = json.dumps(meta, sort_keys=True)
    atomic_write_bytes(dst, lambda f: torch.save(payload, f))
    return Path(dst).stat().st_size


def average_weights(agent: BaseAgent, state: dict, src, paths) -> tuple[dict, list]:
    """`state`, PPO agent `agent`'s (loaded from `src`), with its network's weights and its
    observation statistics replaced by their means over it and the checkpoints at `paths`, each
    file counted once; and the paths averaged in.

    Self-play's networks circle around what they learn, a few points either way against any one
    opponent from checkpoint to checkpoint; the mean of one run's late checkpoints sits nearer
    the middle of that circle (docs/strength.md measures it). The statistics are averaged too:
    late in a run they barely move, and each network's weights were learned against its own."""
    if agent.algorithm != "ppo":
        raise CheckpointError(f"checkpoint {src}: holds a {agent.algorithm.upper()} model; "
                              "average the checkpoints of a PPO run (DQN runs join with "
                              "--ensemble-with)")
    states, seen, used = [state], {Path(src).resolve()}, []
    for path in paths:
        if Path(path).resolve() in seen:  # a glob of the run's checkpoints may hold src: once
            continue
        seen.add(Path(path).resolve())
        used.append(path)
        other, ckpt = load_agent(path)
        if other.algorithm != "ppo" or other.shape != agent.shape:
            raise CheckpointError(f"checkpoint {path}: has another algorithm, shape or view "
                                  f"than {src}; average the checkpoints of one run")
        states.append(ckpt["agent"])
    averaged = dict(state)
    for part in ("net", "obs_norm"):
        averaged[part] = {
            name: (torch.stack([s[part][name] for s in states]).mean(0)
                   if value.is_floating_point() and name != "count" else value)
            for name, value in state[part].items()}
    return averaged, used
