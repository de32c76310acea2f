"""The design's front door to the environments: `from spacewar_ai.environment import SpacewarEnv`.

They live in spacewar_ai/game/environment.py: `SpacewarEnv` (Gymnasium, one game),
`SpacewarVectorEnv` (a batch of games), and PettingZoo's parallel and AEC envs (`parallel_env`,
`env`, `raw_env`). Gymnasium's ids point here (`spacewar_ai.environment:SpacewarEnv`), so datasets
that recorded the id load whatever moves behind this door.
"""

from .game.environment import (
                                          ACTION_DOC,
                                          AGENTS,
                                          OBSERVATION_DOC,
                                          SpacewarEnv,
                                          SpacewarParallelEnv,
                                          SpacewarVectorEnv,
                                          check_action,
                                          check_actions,
                                          env,
                                          parallel_env,
                                          raw_env,
)

__all__ = ["ACTION_DOC", "AGENTS", "OBSERVATION_DOC", "SpacewarEnv", "SpacewarParallelEnv",
           "SpacewarVectorEnv", "check_action", "check_actions", "env", "parallel_env", "raw_env"]
