"""Pilots that wrap a pilot: they fly as it does and keep or change something on the way.

| pilot | what it adds | used by |
|---|---|---|
| `StateRecorder` | a copy of the game's state at each decision with a choice | GRPO, the trl env |
| `Jittered` | each move replaced by a random valid one with probability epsilon | GRPO's scores |
| `Labelled` | a teacher asked at the same decisions (its answers, its policy) | DAgger |
| `StandIn` | a person's limits on a heuristic pilot: reaction, turn rate, a wobbling aim | tests of `auto` |
| `OnSwitches` | a pilot of the six actions flying with the 1962 switches | make_pilot |
"""

from __future__ import annotations

import numpy as np

from ..game.controls import SIX_AS_SWITCHES
from ..config import JUMP_COLUMNS, OBS_MASK, mask_start
from ..game.engine import GameBatch
from ..game.features import fire_when_ready
from ..game.pilot import Pilot


class OnSwitches(Pilot):
    """Flies `pilot`, which answers in the six actions (`actions` 7: and hyperspace), in a game
    played with the switches (`[game] controls = "switches"`): it reads those actions' mask (an
    action is allowed when its switches are, fire once the reload has ended) and its answer
    presses that action's switches, so it plays the games it plays with the six. A
    network trained without hyperspace flies this way in a game that has it, never jumping. With
    the seven actions it reads the jumps left, as a game of them shows them (a network saved
    before observations held them drops them itself)."""

    def __init__(self, pilot: Pilot, actions: int):
        self.pilot = pilot
        self.name = pilot.name
        self.identity = pilot.identity
        self.six = SIX_AS_SWITCHES[:actions]

    def attach(self, batch, sides) -> None:
        self.pilot.attach(batch, sides)

    def reset(self, mask=None, seeds=None) -> None:
        self.pilot.reset(mask, seeds)

    def forfeits(self) -> dict[int, str]:
        return self.pilot.forfeits()

    def close(self) -> None:
        self.pilot.close()

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        # The six are played whole: fire is offered once the reload has ended, as in their game.
        obs = fire_when_ready(obs)
        start = mask_start(obs.shape[1])
        if len(self.six) == 6:  # the six actions' game has no hyperspace, so no jumps left
            jumps = obs[:, :0]
        elif start > OBS_MASK:
            jumps = obs[:, OBS_MASK:start]
        else:  # hyperspace's seven actions in a game without it: no jumps left
            jumps = np.zeros((len(obs), JUMP_COLUMNS), dtype=obs.dtype)
        six_obs = np.concatenate([obs[:, :OBS_MASK], jumps, obs[:, start + self.six]], 1)
        actions = np.asarray(self.pilot.act(six_obs, active), dtype=np.int64).reshape(-1)
        # An answer outside the six is passed on as it is, for the game to refuse as it would.
        inside = (actions >= 0) & (actions < len(self.six))
        return np.where(inside, self.six[np.clip(actions, 0, len(self.six) - 1)], -1)


class StateRecorder(Pilot):
    """A pilot that flies as `pilot` does and keeps a copy of the game's state at each of its
    decisions with a choice (more than one valid action): what GRPO scores actions from."""

    def __init__(self, pilot):
        self.pilot = pilot
        self.name = pilot.name
        self.states: list[dict[str, np.ndarray]] = []
        self.obs: list[np.ndarray] = []
        self.sides: list[np.ndarray] = []
        self._batch: GameBatch | None = None
        self._sides = np.zeros(0, dtype=np.int64)

    def attach(self, batch: GameBatch, sides) -> None:
        self._batch = batch
        self._sides = np.broadcast_to(np.asarray(sides, dtype=np.int64), (batch.n,)).copy()

    def reset(self, mask=None, seeds=None) -> None:
        self.pilot.reset(mask, seeds)

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        actions = self.pilot.act(obs, active)
        live = np.ones(len(obs), dtype=bool) if active is None else active
        rows = np.flatnonzero(live & ((obs[:, mask_start(obs.shape[1]):] > 0.5).sum(axis=1) > 1))
        if rows.size:
            self.states.append({k: v[rows] for k, v in self._batch.state_dict().items()})
            self.obs.append(obs[rows].copy())
            self.sides.append(self._sides[rows])
        return actions

    def draw(self, count: int, rng: np.random.Generator):
        """(states, obs, sides) of `count` recorded decisions drawn without replacement."""
        obs = np.concatenate(self.obs) if self.obs else np.zeros((0, 0), dtype=np.float32)
        picked = np.sort(rng.choice(len(obs), size=min(count, len(obs)), replace=False))
        states = {k: np.concatenate([s[k] for s in self.states])[picked] for k in self.states[0]} \
            if self.states else {}
        return states, obs[picked], np.concatenate(self.sides)[picked] if self.sides else picked


class Jittered(Pilot):
    """`pilot`'s moves, each replaced with probability `epsilon` by a uniformly random valid
    one; the same `seed` and the same calls give the same moves."""

    def __init__(self, pilot, epsilon: float, seed: int):
        from .scripted import RandomPilot

        self.pilot, self.epsilon = pilot, float(epsilon)
        self.name = pilot.name
        self._random = RandomPilot(seed)
        self._coin = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        moves = self.pilot.act(obs, active)
        flip = self._coin.random(len(obs)) < self.epsilon
        return np.where(flip, self._random.act(obs), moves)


class Labelled(Pilot):
    """Flies as `student` does, and asks `teacher` what it would do at the same decisions: the
    teacher follows every game as if it flew it (attached, reset and asked every decision), but
    only the student's actions are played. `labels` holds the teacher's answers, one array a
    decision."""

    def __init__(self, student: Pilot, teacher: Pilot, temperature: float = 0.0):
        self.student, self.teacher = student, teacher
        self.name = student.name
        self.labels: list[np.ndarray] = []
        # With temperature > 0, also the teacher's policy at each decision, (N, A): a planner's
        # improved policy (search.improved_policy), any other teacher's answer as one-hot.
        self.temperature = float(temperature)
        self.policies: list[np.ndarray] = []

    def attach(self, batch, sides) -> None:
        self.student.attach(batch, sides)
        self.teacher.attach(batch, sides)

    def reset(self, mask=None, seeds=None) -> None:
        self.student.reset(mask, seeds)
        self.teacher.reset(mask, seeds)

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        answer = np.asarray(self.teacher.act(obs, active), dtype=np.int64).copy()
        self.labels.append(answer)
        if self.temperature > 0:
            self.policies.append(self._policy(obs, answer))
        return self.student.act(obs, active)

    def _policy(self, obs: np.ndarray, answer: np.ndarray) -> np.ndarray:
        from .search import improved_policy

        start = mask_start(obs.shape[1])
        actions = obs.shape[1] - start
        out = np.zeros((len(obs), actions), dtype=np.float32)
        out[np.arange(len(obs)), np.clip(answer, 0, actions - 1)] = 1.0
        rows = getattr(self.teacher, "last_rows", None)
        if rows is not None and len(rows):
            # The planner's own view of its choice: its margin raises the move it improves on.
            out[rows] = improved_policy(self.teacher.last_values,
                                        obs[rows, start:] > 0.5, self.temperature,
                                        self.teacher.last_own, self.teacher.margin)
        return out

    def forfeits(self) -> dict[int, str]:
        return self.student.forfeits()

    def close(self) -> None:
        self.teacher.close()


class StandIn(Pilot):
    """A stand-in for a person, to test what adapts to people without people: the heuristic
    pilot of `level` with a person's limits. It reacts `react` decisions late, turns at a
    share `turn` of the ship's rate (a rotation is kept with that chance, else it coasts), and
    its aim wobbles (with chance `wobble` its move becomes a random turn). `STANDINS` names
    three strengths; the same seed and the same calls give the same moves."""

    def __init__(self, level: str, react: int, turn: float, wobble: float, aim: float = 1.0,
                 seed: int = 0, name: str = ""):
        from ..config import GameConfig
        from .scripted import DelayedPilot, HeuristicPilot

        pilot = HeuristicPilot(level, GameConfig(), aim)
        self.pilot = DelayedPilot(pilot, react) if react else pilot
        self.turn, self.wobble = float(turn), float(wobble)
        self.name = name or f"stand-in:{level}"
        self._coin = np.random.default_rng(seed)

    def reset(self, mask=None, seeds=None) -> None:
        self.pilot.reset(mask, seeds)

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        from ..game.engine import Action

        moves = np.asarray(self.pilot.act(obs, active), dtype=np.int64).copy()
        draws = self._coin.random((2, len(obs)))
        turning = (moves == Action.ROTATE_LEFT) | (moves == Action.ROTATE_RIGHT)
        moves[turning & (draws[0] >= self.turn)] = Action.NONE
        wobble = draws[1] < self.wobble
        moves[wobble] = np.where(draws[1][wobble] < self.wobble / 2, Action.ROTATE_LEFT,
                                 Action.ROTATE_RIGHT)
        return moves


# Three stand-in players, weakest first: (level, react, turn, wobble, aim).
STANDINS = {"novice": ("easy", 3, 0.5, 0.2, 1.0), "casual": ("medium", 1, 0.8, 0.05, 0.5),
            "skilled": ("hard", 0, 0.8, 0.05, 1.0)}


def stand_in(strength: str, seed: int = 0) -> StandIn:
    """The stand-in player `strength` (novice, casual or skilled) names."""
    level, react, turn, wobble, aim = STANDINS[strength]
    return StandIn(level, react, turn, wobble, aim, seed, name=f"stand-in:{strength}")
