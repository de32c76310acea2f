"""Spacewar! AI: a faithful, fast Spacewar! (1962) engine with agents, tournaments and human play.

Importing the package registers the Gymnasium environment "Spacewar-v0".
"""

import gymnasium as _gym

from .config import GameConfig, RewardConfig
from .engine import Action, DeathCause
from .environment import SpacewarEnv, SpacewarVectorEnv

__version__ = "0.1.0"

if "Spacewar-v0" not in _gym.registry:
    _gym.register(
        id="Spacewar-v0",
        entry_point="spacewar_ai.environment:SpacewarEnv",
        vector_entry_point="spacewar_ai.environment:SpacewarVectorEnv",
    )

__all__ = ["Action", "DeathCause", "GameConfig", "RewardConfig", "SpacewarEnv",
           "SpacewarVectorEnv", "__version__"]
