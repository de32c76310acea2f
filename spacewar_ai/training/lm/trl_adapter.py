"""Spacewar! for trl's `GRPOTrainer`: a reward function for any model, or a game its tools fly.

trl wants completions it can score, or an environment whose methods the model calls as tools;
docs/lm.md ("trl's GRPOTrainer") shows both routes in full:

- `ScoredDecisions.record(pilot, opponent, games, states, ...)` keeps copies of the game at
  decisions that had a choice and scores every valid action as `--algorithm grpo` does
  (scoring.action_scores). Its `rows()` are the train dataset (`{"prompt", "state"}`) and the
  object itself is the reward function: a completion scores what the action its first integer
  names scored, an answer naming no valid action a point under the worst.
- `SpacewarTools` is an `environment_factory`: trl calls `reset(**row)` (a row's `seed`,
  `opponent`, `start`), the model's one tool is `fly(action)`, and `get_reward()` is what the
  ship collected plus what it collects when `rollout_pilot` flies on for `horizon` decisions.

This module does not import trl: the classes are what trl's hooks call."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ...config import GameConfig, RewardConfig
from ...game.engine import GameBatch
from ...lm.text_env import SpacewarTextEnv, read_answer
from ...lm.view import prompt, valid_actions
from ...pilots.build import make_pilot
from ...pilots.spec import check_spec
from ...pilots.wrappers import StateRecorder
from ...rating.match import play_match
from ...util.errors import UserError
from .scoring import action_scores, play_on


def completion_text(completion: Any) -> str:
    """A completion as text: trl passes a string, or for conversational data a list of
    messages whose last one holds the model's answer."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        content = completion[-1].get("content", "")
        return content if isinstance(content, str) else ""
    return ""


class ScoredDecisions:
    """Recorded decisions with every valid action scored: a dataset's rows and the reward
    function that scores answers to them (module docstring)."""

    __name__ = "spacewar_score"  # the name trl logs the reward under

    def __init__(self, prompts: list[str], scores: np.ndarray):
        if len(prompts) != len(scores):
            raise UserError(f"{len(prompts)} prompts for {len(scores)} rows of scores")
        self.prompts = list(prompts)
        self.scores = np.asarray(scores, dtype=np.float64)  # (S, A), NaN at invalid actions

    @classmethod
    def record(cls, pilot: str = "heuristic:medium", opponent: str = "heuristic:hard",
               games: int = 16, states: int = 512, view: int = 2, seed: int = 0,
               rollout_pilot: str = "heuristic:hard", horizon: int = 60,
               continuations: int = 8, jitter: float = 0.05,
               config: GameConfig | None = None,
               reward_config: RewardConfig | None = None) -> ScoredDecisions:
        """Play `games` games of `pilot` against `opponent` and score every valid action at
        `states` of `pilot`'s decisions drawn at random among those with a choice: the mean of
        `continuations` games played on, their pilots moving at random with probability
        `jitter` (one deterministic game is mostly noise: docs/lm.md, "How much of a group is
        signal")."""
        config = config or GameConfig()
        reward_config = reward_config or RewardConfig()
        if games < 2 or games % 2:
            raise UserError(f"games={games!r}: games are played in pairs (sides swapped): "
                            "give an even number, at least 2")
        if states < 1:
            raise UserError(f"states={states!r}: give at least 1 decision to record")
        recorder = StateRecorder(make_pilot(pilot, config, seed))
        play_match(recorder, opponent, games, seed, config, reward_config)
        drawn, obs, sides = recorder.draw(states, np.random.default_rng(seed))
        if not len(obs):
            raise UserError(f"{pilot} had no decision with a choice in {games} games: "
                            "play more games")
        scores = action_scores(drawn, obs, sides, make_pilot(rollout_pilot, config, seed + 1),
                               make_pilot(opponent, config, seed + 2), config, reward_config,
                               horizon, continuations, jitter, seed + 3)
        return cls([prompt(o, config.num_actions, view) for o in obs], scores)

    def rows(self) -> list[dict]:
        """The dataset's rows: `{"prompt": text, "state": index}`."""
        return [{"prompt": p, "state": i} for i, p in enumerate(self.prompts)]

    def score(self, state: int, answer: Any) -> float:
        """The reward of `answer` (an index or text) at recorded state `state`."""
        row = self.scores[int(state)]
        index = read_answer(answer)
        if index is not None and 0 <= index < len(row) and not np.isnan(row[index]):
            return float(row[index])
        return float(np.nanmin(row)) - 1.0

    def __call__(self, prompts=None, completions=None, state=None, **kwargs) -> list[float]:
        """trl's reward-function call: `state` is the rows' column of that name."""
        if completions is None or state is None:
            raise UserError("ScoredDecisions scores completions of its own rows: the dataset "
                            "needs the 'state' column of rows()")
        return [self.score(s, completion_text(c)) for s, c in zip(state, completions)]


class SpacewarTools:
    """A game of Spacewar! for trl's `environment_factory`, flown by tool calls (module
    docstring). Public methods other than `reset` and `get_reward` become the model's tools,
    so helpers here are private."""

    _seeds = itertools.count()  # games for rows without a seed, distinct within a process

    def __init__(self, opponent: str = "heuristic:medium", view: int = 2, moves: int = 8,
                 horizon: int = 60, rollout_pilot: str = "heuristic:hard",
                 config: GameConfig | None = None, reward_config: RewardConfig | None = None):
        if moves < 1 or horizon < 0:
            raise UserError(f"moves={moves!r}, horizon={horizon!r}: a game needs at least one "
                            "move and a horizon of 0 or more decisions")
        self._default_opponent = opponent
        self._view = view
        self._moves = moves
        self._horizon = horizon
        self._rollout = rollout_pilot
        self._config = config or GameConfig()
        self._reward_config = reward_config or RewardConfig()
        check_spec(rollout_pilot)  # a bad spec is refused before the first game
        self._env: SpacewarTextEnv | None = None

    def reset(self, seed: int | None = None, opponent: str | None = None, start: int = 0,
              **row) -> str:
        """Start a game: `seed` (default: the next of a counter), `opponent` (a pilot spec,
        default the one given when made), `start` decisions flown first by the rollout pilot
        so the model begins mid-game. Returns the situation the model flies from."""
        self._seed = next(self._seeds) if seed is None else int(seed)
        self._opponent = opponent or self._default_opponent
        self._env = SpacewarTextEnv(opponent=self._opponent, config=self._config,
                                    reward_config=self._reward_config, preamble=False,
                                    view=self._view)
        _, info = self._env.reset(seed=self._seed)
        self._obs, self._over = info["obs"], False
        pilot = make_pilot(self._rollout, self._config, self._seed)
        for _ in range(int(start)):
            if self._over:
                break
            self._move(int(pilot.act(self._obs[None])[0]))
        self._left, self._collected = self._moves, 0.0
        # The model answers with a call, not a number: the prompt without its "Action:" line.
        return (prompt(self._obs, self._config.num_actions, self._view).removesuffix("Action:\n")
                + f"Call fly with one valid action, up to {self._moves} times.")

    def _move(self, action: int) -> tuple[str, float]:
        text, reward, terminated, truncated, info = self._env.step(action)
        self._obs, self._over = info["obs"], terminated or truncated
        self._winner = int(info.get("winner", -1))
        return text, float(reward)

    def fly(self, action: int) -> str:
        """Fly your ship for one decision of the game.

        Args:
            action: The action's index: 0 drift, 1 turn left, 2 turn right, 3 thrust, 4 fire, 5 thrust and fire. It must be one of the valid actions the situation lists.

        Returns:
            The situation after the move, ending with the valid actions, or how the game ended.
        """
        if self._env is None:
            raise RuntimeError("fly before reset: trl calls reset first")
        if self._over:
            return "The game is over."
        if self._left <= 0:
            return "You have no moves left."
        valid = valid_actions(self._obs)
        index = read_answer(action)  # a model may write the index as text: "4"
        text, reward = self._move(-1 if index is None else index)
        self._left -= 1
        self._collected += reward
        listed = ",".join(map(str, valid))
        said = "" if index in valid else \
            f"{action} was not a valid action, so you drifted (valid were {listed}). "
        if self._over:
            ending = {0: "you won", 1: "you lost"}.get(self._winner, "nobody won")
            return said + f"The game is over: {ending}."
        return said + text.removesuffix("Action:\n")

    def get_reward(self) -> float:
        """Rewards collected over the model's moves, plus those of `horizon` decisions flown on
        by the rollout pilot from where the model stopped."""
        if self._env is None:
            raise RuntimeError("get_reward before reset: trl calls reset first")
        copies = GameBatch(1, self._config, self._reward_config, count_dodges=False)
        copies.load_state_dict(self._env.game.batch.state_dict())
        rest = play_on(copies, np.zeros(1, dtype=np.int64),
                       make_pilot(self._rollout, self._config, self._seed + 1),
                       make_pilot(self._opponent, self._config, self._seed + 2), self._horizon)
        return self._collected + float(rest[0])
