"""Spacewar! AI: a faithful, fast Spacewar! (1962) engine with agents, tournaments and human play.

Importing the package registers the Gymnasium environments "Spacewar-v0" and "SpacewarText-v0"
(the game as text prompts: lm/text_env.py). The game (engine, environments, configs) loads at
once; the agents, the league, make_pilot and the LLM key manager load on first use
(`from spacewar_ai import PPOAgent`), so that playing the environment never imports torch.
ARCHITECTURE.md maps the subpackages and the order of their layers."""

import gymnasium as _gym

from . import _moved
from .config import GameConfig, RewardConfig
from .game.engine import Action, DeathCause
from .game.environment import SpacewarEnv, SpacewarVectorEnv

__version__ = "0.1.0"

_moved.install()  # the flat layout's module names keep working (CHANGELOG.md)

if "Spacewar-v0" not in _gym.registry:
    _gym.register(
        id="Spacewar-v0",
        entry_point="spacewar_ai.environment:SpacewarEnv",
        vector_entry_point="spacewar_ai.environment:SpacewarVectorEnv",
    )
if "SpacewarText-v0" not in _gym.registry:  # prompts for observations, answers for actions
    _gym.register(id="SpacewarText-v0", entry_point="spacewar_ai.lm.text_env:SpacewarTextEnv")

# Name -> module, imported on first access (PEP 562): these pull in torch or HTTP clients.
_LAZY = {
    "BaseAgent": "agents",
    "PPOAgent": "agents",
    "DQNAgent": "agents",
    "League": "training.online.league",
    "SelfPlayManager": "training.online.league",
    "make_pilot": "pilots",
    "APIKeyManager": "llm.clients",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # later lookups skip this hook
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["Action", "DeathCause", "GameConfig", "RewardConfig", "SpacewarEnv",
           "SpacewarVectorEnv", "__version__", *_LAZY]
