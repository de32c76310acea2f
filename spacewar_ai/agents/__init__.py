"""Learning agents, the design's `spacewar_ai.agents`: `PPOAgent(36, 6, None, 'cpu')`.

base.py holds `BaseAgent` and the two kinds the training loops call (`OnPolicyAgent`,
`OffPolicyAgent`); ppo.py `PPOAgent`, its rollout buffer and `PolicyStack`; dqn.py `DQNAgent`
and `cql_loss`; checkpoints.py the file format; saved.py `make_agent`, `load_agent` and
`export_for_play`; opponent_model.py the model of the judged opponent a run learns. Agents know
observations and masks, not the game's rules."""

from .base import BaseAgent, OffPolicyAgent, OnPolicyAgent, RunningNorm
from .checkpoints import CheckpointError
from .dqn import DQNAgent, cql_loss
from .ppo import PolicyStack, PPOAgent
from .saved import export_for_play, load_agent, make_agent

__all__ = ["BaseAgent", "CheckpointError", "DQNAgent", "OffPolicyAgent", "OnPolicyAgent",
           "PPOAgent", "PolicyStack", "RunningNorm", "cql_loss", "export_for_play", "load_agent",
           "make_agent"]
