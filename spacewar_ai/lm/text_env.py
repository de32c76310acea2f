"""Spacewar! as text, for your own language model and trainer: `gymnasium.make("SpacewarText-v0")`.

    import gymnasium as gym
    import spacewar_ai

    env = gym.make("SpacewarText-v0", opponent="heuristic:medium")
    prompt, info = env.reset(seed=0)
    while True:
        answer = my_model(prompt)             # e.g. "4"
        prompt, reward, terminated, truncated, info = env.step(answer)
        if terminated or truncated:
            break

The observation is the LM pilot's prompt (lm/view.py; `view=2` for the view that says the aim,
`preamble=False` without the fixed preamble, which is `env.unwrapped.preamble`). An action is
an index or an answer read as its first integer; `info["action_mask"]` and
`info["valid_actions"]` say what may be answered. An invalid answer plays drift, adds
`invalid_penalty` (default -1) to the reward and sets `info["invalid_answer"]`. Rewards,
opponents and configs are SpacewarEnv's, whose observation is `info["obs"]`."""

from __future__ import annotations

import re
import string
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..game.environment import SpacewarEnv
from ..util.errors import UserError
from .view import VIEWS, situation, valid_actions
from .view import preamble as preamble_text

NUMBER = re.compile(r"-?\d+")
MAX_PROMPT = 1024  # characters; prompts are a few hundred


def read_answer(answer: Any) -> int | None:
    """The index an answer names: an integer, or the first integer in a text; None if none."""
    if isinstance(answer, (bool, np.bool_)):
        return None
    if isinstance(answer, (int, np.integer)):
        return int(answer)
    if isinstance(answer, np.ndarray) and answer.ndim == 0:
        return read_answer(answer[()])
    if isinstance(answer, str):
        found = NUMBER.search(answer)
        return int(found.group()) if found else None
    return None


class SpacewarTextEnv(gym.Env):
    """SpacewarEnv with prompts for observations and answers for actions (module docstring)."""

    metadata = {"render_modes": []}

    def __init__(self, opponent: Any = "heuristic:medium", config=None, reward_config=None,
                 preamble: bool = True, invalid_penalty: float = -1.0, view: int = 1):
        if view not in VIEWS:
            raise UserError(f"view={view!r}: the text views are {', '.join(map(str, VIEWS))}")
        self.view = int(view)  # v0's prompts stay view 1 unless asked: a changed text is a new env
        self.game = SpacewarEnv(config, reward_config, opponent=opponent)
        self.num_actions = self.game.config.num_actions
        self.preamble = preamble_text(self.num_actions)
        self.with_preamble = bool(preamble)
        self.invalid_penalty = float(invalid_penalty)
        self.observation_space = spaces.Text(MAX_PROMPT, charset=string.printable)
        self.action_space = spaces.Discrete(self.num_actions)
        self._obs = None

    def _prompt(self, obs: np.ndarray) -> str:
        text = situation(obs, self.view)
        return self.preamble + text if self.with_preamble else text

    def _info(self, info: dict, obs: np.ndarray) -> dict:
        return {**info, "obs": obs, "valid_actions": valid_actions(obs)}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        obs, info = self.game.reset(seed=seed, options=options)
        self._obs = obs
        return self._prompt(obs), self._info(info, obs)

    def step(self, action):
        if self._obs is None:
            raise RuntimeError("call reset() before step()")
        index = read_answer(action)
        invalid = index is None or index not in valid_actions(self._obs)
        obs, reward, terminated, truncated, info = self.game.step(0 if invalid else index)
        self._obs = obs
        info = self._info(info, obs)
        info["invalid_answer"] = invalid
        info["answer"] = action if isinstance(action, str) else index
        if invalid:
            reward += self.invalid_penalty
        info["reward"] = float(reward)  # for trainers that read a text env's reward from info
        return self._prompt(obs), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        return self.game.action_masks()
