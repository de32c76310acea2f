"""Every valid action at a game state scored by playing the game on from copies of that state:
`action_scores` (GRPO's groups, grpo.py, and trl's reward function, trl_adapter.py) and
`play_on`, the rollout under it (trl_adapter.py's tool game ends with it too)."""

from __future__ import annotations

import numpy as np

from ...config import GameConfig, mask_start
from ...game.engine import OVER, GameBatch
from ...pilots.wrappers import Jittered


def action_scores(states: dict[str, np.ndarray], obs: np.ndarray, sides: np.ndarray, rollout,
                  opponent, config: GameConfig, reward_config, horizon: int,
                  continuations: int = 1, jitter: float = 0.0, seed: int = 0) -> np.ndarray:
    """(S, A): for each state and action, the rewards the ship `sides[s]` collects when it plays
    the action and `rollout` then flies it (and `opponent` the other ship) for `horizon`
    decisions in all; NaN for the actions its observation marks invalid. Both pilots are asked
    about all S x A copies at every decision (ended ones too), so a pilot that keeps something
    per game (a reaction delay) sees one batch throughout: give this call fresh pilots.

    With `jitter` > 0 each pilot's move is replaced by a random valid one with that
    probability (streams seeded by `seed`), and the score is the mean of `continuations` such
    games: the game and the scripted pilots are deterministic, so one continuation is one
    trajectory, and whether the best action is best can hang on a hit decided by a hair."""
    a = config.num_actions
    k = int(continuations)
    copies = GameBatch(len(sides) * a * k, config, reward_config, count_dodges=False)
    copies.load_state_dict({key: np.repeat(v, a * k, axis=0) for key, v in states.items()})
    if jitter > 0:
        rollout = Jittered(rollout, jitter, seed)
        opponent = Jittered(opponent, jitter, seed + 1)
    score = play_on(copies, np.repeat(np.asarray(sides, dtype=np.int64), a * k), rollout,
                    opponent, horizon, first=np.tile(np.repeat(np.arange(a), k), len(sides)))
    score = score.reshape(len(sides), a, k).mean(axis=2)
    start = mask_start(obs.shape[1])
    score[obs[:, start:start + a] < 0.5] = np.nan
    return score


def play_on(copies: GameBatch, side: np.ndarray, rollout, opponent, horizon: int,
            first: np.ndarray | None = None) -> np.ndarray:
    """The rewards ship `side[i]` of each game in `copies` collects over `horizon` decisions:
    `first` moves (if given) at the first, then `rollout` flies it and `opponent` the other ship.
    A game already over pays nothing and stands still."""
    m = copies.n
    other = 1 - side
    rows = np.arange(m)
    score = np.zeros(m)
    ended = copies.game_i[:, OVER] != 0
    moves = np.zeros((m, 2), dtype=np.int64)
    for step in range(horizon):
        seen = copies.observe()
        moves[rows, side] = first if step == 0 and first is not None else \
            rollout.act(seen[rows, side])
        moves[rows, other] = opponent.act(seen[rows, other])
        copies.step(moves)  # ended copies stand still whatever they are told
        score += copies.reward[rows, side]  # a game already over pays nothing
        ended |= copies.game_i[:, OVER] != 0
        if ended.all():
            break
    return score
