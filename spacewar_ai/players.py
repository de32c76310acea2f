"""One spec language for every player: scripted pilots and learned models.

Specs: `idle`, `random`, `heuristic:easy|medium|hard`, `pretrained` (the model shipped in the
package), `ppo:PATH`, `dqn:PATH`, a bare checkpoint path (algorithm read from the file),
`strategy:PATH.py` (a strategy file, validated here and run in the sandbox: sandbox.py), or
`search:SPEC` (a PPO model with lookahead at play time: search.py).
Every player is a pilot: `act(obs (N, D)) -> (N,)`, `reset(mask, seeds)`, `name`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from .bots import PILOT_SPECS, make_pilot
from .checkpoints import CheckpointError, load_agent
from .config import GameConfig
from .sandbox import StrategyError, StrategyPilot, load_strategy_file

PRETRAINED_PATH = Path(__file__).resolve().parent / "pretrained" / "ppo_spacewar.pt"


class AgentPilot:
    """A learned agent flying as a pilot. Sampling by default, greedy with deterministic=True."""

    def __init__(self, agent, name: str, deterministic: bool = False, identity: str = ""):
        self.agent = agent
        self.name = name
        self.deterministic = deterministic
        self.identity = identity or name

    def act(self, obs: np.ndarray) -> np.ndarray:
        if obs.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        # `act` (PPO) skips the critic and the rollout bookkeeping that select_action keeps.
        play = getattr(self.agent, "act", self.agent.select_action)
        return np.asarray(play(obs, deterministic=self.deterministic), dtype=np.int64).reshape(-1)

    def reset(self, mask=None, seeds=None) -> None:
        return None


def spec_path(spec: str) -> Path | None:
    """The checkpoint file a spec names (pretrained, ppo:PATH, dqn:PATH, a path), else None."""
    low = spec.strip().lower()
    if low == "pretrained":
        return PRETRAINED_PATH
    if low.startswith(("ppo:", "dqn:")):
        return Path(spec.strip()[4:])
    if low.startswith("strategy:"):
        return Path(spec.strip()[len("strategy:"):])
    if low in PILOT_SPECS or low.startswith(("heuristic", "search:")):
        return None  # a planner is a policy and a model of the opponent, not one checkpoint
    return Path(spec.strip())


def file_identity(path: Path) -> str:
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    return f"{Path(path).stem}@{digest}"


def resolve_player(spec, config: GameConfig | None = None, seed: int = 0,
                   deterministic: bool = True, device: str = "cpu"):
    """Turn a spec into a pilot; raises ValueError naming the spec and the reason."""
    if not isinstance(spec, str):
        return make_pilot(spec, config, seed)
    config = config if config is not None else GameConfig()
    s = spec.strip()
    low = s.lower()
    if low in PILOT_SPECS or low == "heuristic" or low.startswith("heuristic:"):
        return make_pilot(low, config, seed)
    if low.startswith("search:"):
        from .search import SEARCH_PREFIX, search_pilot  # the planner builds on these players

        return search_pilot(s[len(SEARCH_PREFIX):], config, seed, device)
    if low.startswith("strategy:"):
        path = Path(s[len("strategy:"):])
        try:
            source = load_strategy_file(path)
        except StrategyError as exc:
            raise ValueError(f"player {spec!r}: {exc}") from None
        return StrategyPilot(path, identity=file_identity(path), source=source,
                             n_actions=config.num_actions)
    expect = None
    path_text = s
    if low == "pretrained":
        path_text = str(PRETRAINED_PATH)
        if not PRETRAINED_PATH.is_file():
            raise ValueError(f"player 'pretrained': the shipped model {PRETRAINED_PATH} is "
                             "missing; reinstall spacewar-ai or train one (see README)")
    elif low.startswith(("ppo:", "dqn:")):
        expect, path_text = low[:3], s[4:]
    path = Path(path_text)
    if not path.is_file():
        raise ValueError(f"player {spec!r}: not a pilot spec and no such checkpoint file; use "
                         f"one of {', '.join(PILOT_SPECS)}, pretrained, ppo:PATH, dqn:PATH, "
                         "strategy:PATH.py or a checkpoint path")
    try:
        agent, _ = load_agent(path, device, expect, config.obs_dim)
    except CheckpointError as exc:
        raise ValueError(f"player {spec!r}: {exc}") from None
    name = "pretrained" if low == "pretrained" else f"{agent.algorithm}:{path.name}"
    return AgentPilot(agent, name, deterministic, file_identity(path))
