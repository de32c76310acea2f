"""Learning agents, the design's `spacewar_ai.agents`: `PPOAgent(36, 6, None, 'cpu')`.

| module | what it holds |
|---|---|
| base.py | `BaseAgent`; `OnPolicyAgent`, `OffPolicyAgent` (what each training loop calls) |
| ppo.py | `PPOAgent` (clipped surrogate, GAE), `PolicyStack` (many PPO networks in one pass) |
| dqn.py | `DQNAgent` (dueling double DQN, n-step returns, an ensemble for play), `cql_loss` |
| replay_buffer.py | DQN's replay buffer and the sum tree of prioritized replay |
| checkpoints.py | the checkpoint file format: tensors and JSON, one clear error |
| saved.py | `make_agent`, `load_agent` (the agent a file holds), `export_for_play` |
| opponent_model.py | the model of the judged opponent a training run learns by watching it |

Agents know observations and masks, not the game's rules.
"""

from .base import BaseAgent, OffPolicyAgent, OnPolicyAgent, RunningNorm
from .checkpoints import CheckpointError
from .dqn import DQNAgent, cql_loss
from .ppo import PolicyStack, PPOAgent
from .saved import export_for_play, load_agent, make_agent

__all__ = ["BaseAgent", "CheckpointError", "DQNAgent", "OffPolicyAgent", "OnPolicyAgent",
           "PPOAgent", "PolicyStack", "RunningNorm", "cql_loss", "export_for_play", "load_agent",
           "make_agent"]
