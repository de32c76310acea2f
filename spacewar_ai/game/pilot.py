"""Pilot: the one interface of anything that flies a ship.

Scripted pilots, trained networks, planners, strategy files, models from other libraries and
language models are all `Pilot`s, and everything that runs games (the environments' opponent,
matches, tournaments, evaluation, human play, the browser) talks to them through these methods
alone, never by asking what a pilot is. A subclass writes `act`; the rest has defaults that do
nothing, so a pilot overrides only what it uses:

| member | called by | default |
|---|---|---|
| `name` | reports, tables, the page | (set by the subclass) |
| `identity` | ratings, which key on it; a file's pilot keys on the file's contents | `name` |
| `act(obs, active)` | every decision: `obs` (N, D) float32, `active` (N,) bool, the games still running, or None for all; returns (N,) int64 actions | (abstract) |
| `reset(mask, seeds)` | games starting in the rows `mask`, with the engine's per-game seeds | nothing |
| `attach(batch, sides)` | whoever owns the games, before they start: the `GameBatch` and the ship this pilot flies in each game, for pilots that read the game itself (planners, `rllib_sw:`) | nothing |
| `forfeits()` | the match, after each decision: {game row: reason} of games this pilot gave up at that decision (a strategy over its budget) | {} |
| `close()` | the match's end: stop whatever the pilot runs besides itself (a child process) | nothing |

Rows of `obs` for games that ended hold their last observation; a pilot that costs real time a
decision (a sandboxed strategy, a language model) answers only the `active` rows and may return
anything for the others, and one that keeps per-game history (a reaction delay) sees every row
every time. `make_pilot` (spacewar_ai.pilots) builds any of them from a spec, and `as_pilot`
makes an object of one's own with `act(obs)` and `reset(...)` a `ForeignPilot`.
"""

from __future__ import annotations

import abc

import numpy as np


class Pilot(abc.ABC):
    """Anything that flies a ship (see the module docstring for what each method is for)."""

    name: str = "pilot"

    @property
    def identity(self) -> str:
        """What ratings key on: the name unless the pilot was given one (a file's contents)."""
        return self.__dict__.get("_identity") or self.name

    @identity.setter
    def identity(self, value: str) -> None:
        self._identity = value

    @abc.abstractmethod
    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        """The actions (N,) int64 for observations (N, D); `active` marks the running games."""

    def reset(self, mask: np.ndarray | None = None,  # noqa: B027 (a default that does nothing)
              seeds: np.ndarray | None = None) -> None:
        """Games start in the rows `mask` (None: all) with these per-game seeds."""

    def attach(self, batch, sides) -> None:  # noqa: B027 (a default that does nothing)
        """The games this pilot plays (a GameBatch) and the ship it flies in each of them."""

    def forfeits(self) -> dict[int, str]:
        """{game row: reason} of the games this pilot forfeited at its last decision."""
        return {}

    def close(self) -> None:  # noqa: B027 (a default that does nothing)
        """Stop whatever the pilot runs besides itself."""


def as_pilot(obj) -> Pilot:
    """`obj` as a Pilot: a Pilot as it is, an object with `act` and `reset` as a ForeignPilot."""
    if isinstance(obj, Pilot):
        return obj
    if hasattr(obj, "act") and hasattr(obj, "reset"):
        return ForeignPilot(obj)
    raise TypeError(f"{obj!r} is not a pilot: give a Pilot, or an object with act(obs) and "
                    "reset(mask, seeds)")


class ForeignPilot(Pilot):
    """An object of one's own with `act(obs)` and `reset(mask, seeds)` (and optionally `name`,
    `attach` and `close`), flying as a Pilot: this is the one place that asks what such an
    object offers."""

    def __init__(self, obj):
        self.obj = obj
        self.name = str(getattr(obj, "name", type(obj).__name__))
        self._attach = getattr(obj, "attach", None)
        self._close = getattr(obj, "close", None)

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        return np.asarray(self.obj.act(obs), dtype=np.int64).reshape(-1)

    def reset(self, mask=None, seeds=None) -> None:
        self.obj.reset(mask, seeds)

    def attach(self, batch, sides) -> None:
        if self._attach is not None:
            self._attach(batch, sides)

    def close(self) -> None:
        if self._close is not None:
            self._close()
