"""The controls: what a pilot presses (left, right, thrust, fire, jump) as an action number of
each scheme of `config.CONTROLS`, and back. Every mapping between the two lives here.

"six" is the design's action set (`Action`; seven with hyperspace): one thing at a time, thrust
and fire the one pair, so a wish of several is read in the order jump, thrust and fire, fire,
thrust, then a turn (left or right alone). "switches" is the 1962 control box: four switches in
any combination, an action the sum of those pressed (0..15); both rotate switches at once are
hyperspace where it is on, as on the original box, and cancel elsewhere, so a jump is pressed as
both rotate switches with thrust and fire as wished.

Given the rows of an observation's action mask, `encode` presses only what the mask allows: in
"six" the first allowed of the order above wins; in "switches" a jump is pressed only where
allowed. The engine's kernel reads actions with the same constants (engine._decode)."""

from __future__ import annotations

import enum

import numpy as np


class Action(enum.IntEnum):
    """The six actions (seven with hyperspace) of `controls = "six"`."""

    NONE = 0
    ROTATE_LEFT = 1
    ROTATE_RIGHT = 2
    THRUST = 3
    FIRE = 4
    THRUST_FIRE = 5
    HYPERSPACE = 6


SW_LEFT, SW_RIGHT, SW_THRUST, SW_FIRE = 1, 2, 4, 8
SW_HYPERSPACE = SW_LEFT | SW_RIGHT


def encode(left, right, thrust, fire, jump, controls: str, mask=None) -> np.ndarray:
    """The actions of scheme `controls` (int64, the inputs' shape) that press what is wished;
    `mask`, rows of action masks (the inputs' shape plus one axis), refuses what it does not
    allow (module docstring)."""
    left, right, thrust, fire, jump = (np.asarray(x, dtype=bool)
                                       for x in (left, right, thrust, fire, jump))
    allowed = (lambda a: True) if mask is None else \
        (lambda a: np.asarray(mask)[..., a] > 0.5 if a < np.shape(mask)[-1] else False)
    if controls == "switches":
        a = (left * SW_LEFT) | (right * SW_RIGHT) | (thrust * SW_THRUST) | (fire * SW_FIRE)
        return np.where(jump & allowed(SW_HYPERSPACE), a | SW_HYPERSPACE, a).astype(np.int64)
    out = np.where(left & ~right, Action.ROTATE_LEFT,
                   np.where(right & ~left, Action.ROTATE_RIGHT, Action.NONE)).astype(np.int64)
    wants = [(jump, Action.HYPERSPACE), (thrust & fire, Action.THRUST_FIRE),
             (fire, Action.FIRE), (thrust, Action.THRUST)]
    for want, action in reversed(wants):  # the first that is allowed wins
        out = np.where(want & allowed(action), int(action), out)
    return out


def decode(actions, controls: str) -> tuple[np.ndarray, ...]:
    """(left, right, thrust, fire, jump) pressed by `actions` of scheme `controls`, as booleans;
    a number that is no action presses nothing."""
    a = np.asarray(actions, dtype=np.int64)
    if controls == "switches":
        known = (a >= 0) & (a < 16)
        jump = known & (a & SW_HYPERSPACE == SW_HYPERSPACE)
        return (known & ~jump & (a & SW_LEFT != 0), known & ~jump & (a & SW_RIGHT != 0),
                known & (a & SW_THRUST != 0), known & (a & SW_FIRE != 0), jump)
    return (a == Action.ROTATE_LEFT, a == Action.ROTATE_RIGHT,
            (a == Action.THRUST) | (a == Action.THRUST_FIRE),
            (a == Action.FIRE) | (a == Action.THRUST_FIRE), a == Action.HYPERSPACE)


# Each of the six actions (and hyperspace) as switches: how a six-action pilot flies the box.
SIX_AS_SWITCHES = encode(*decode(np.arange(len(Action)), "six"), "switches")
