"""The text view: what a language model reads of an observation.

A prompt is a fixed preamble (what the actions mean: the same for every decision, so a pilot
computes it once), the ship's situation in words and rounded numbers, and the valid actions'
indices; the model answers with one index. An example, mid-game:

    Spacewar! You fly a ship. Actions: 0 drift, 1 turn left, 2 turn right, 3 thrust, 4 fire,
    5 thrust and fire. Answer with one valid action.
    Enemy 135 left 6 away, closing. Star 165 left 4 away. Torpedo 135 left 6 away. Fuel 97,
    torpedoes 29. Valid: 0,1,2,3.
    Action:

(one line each in the prompt; the last ends with a newline, so every index is a token of its
own). Angles are degrees from the ship's nose, to the right (clockwise on screen, the way action
2 turns) or left, rounded to 5; distances are tenths of half the screen, rounded; "closing" or
"opening" is the sign of the range's rate unless it is about zero. The star and the nearest
torpedo are named only when there is one; an enemy in hyperspace is "hidden". Fuel is a
percentage. The valid actions are the observation's mask, so a pilot that answers among them
never makes an illegal move.

`prompt(obs, num_actions)` is the whole text: `preamble(num_actions)` + `situation(obs)`;
`valid_actions(obs)` the indices a pilot may answer.
"""

from __future__ import annotations

import math

import numpy as np

from ..config import OBS_MASK, GameConfig
from ..game.engine import OBS_OPPONENT, OBS_OWN, OBS_STAR, OBS_TORPEDOES

ACTION_WORDS = ("drift", "turn left", "turn right", "thrust", "fire", "thrust and fire",
                "hyperspace")
ANSWER = "Action:\n"
# Range-rate magnitudes below this (in the observation's units) read as neither closing nor opening.
STILL = 0.02
# Torpedoes left are observed as a fraction of the magazine; counted against the default one.
MAGAZINE = GameConfig().max_ammo


def preamble(num_actions: int = 6) -> str:
    """The fixed start of every prompt: the game and what each action index means."""
    actions = ", ".join(f"{a} {ACTION_WORDS[a]}" for a in range(num_actions))
    return f"Spacewar! You fly a ship. Actions: {actions}. Answer with one valid action.\n"


def _bearing(sin_h: float, cos_h: float, dx: float, dy: float) -> str:
    """The direction (dx, dy) from the nose: '35 right', '120 left', 'ahead' or 'behind'."""
    rel = math.degrees(math.atan2(dy, dx) - math.atan2(sin_h, cos_h))
    rel = (rel + 180.0) % 360.0 - 180.0  # (-180, 180]: positive is clockwise on screen
    deg = int(5 * round(abs(rel) / 5))
    if deg == 0:
        return "ahead"
    if deg >= 180:
        return "behind"
    return f"{deg} {'right' if rel > 0 else 'left'}"


def _where(sin_h: float, cos_h: float, dx: float, dy: float) -> str:
    """'35 right 4 away': the bearing and the distance in tenths of half the screen."""
    return f"{_bearing(sin_h, cos_h, dx, dy)} {int(round(10 * math.hypot(dx, dy)))} away"


def situation(obs: np.ndarray) -> str:
    """The ship's state in words and rounded numbers, then the valid actions' indices."""
    o = np.asarray(obs, dtype=np.float64)
    sin_h, cos_h = o[OBS_OWN + 4], o[OBS_OWN + 5]
    parts = []
    dx, dy, dvx, dvy = o[OBS_OPPONENT:OBS_OPPONENT + 4]
    if dx == 0.0 and dy == 0.0:
        parts.append("Enemy hidden.")
    else:
        rate = (dx * dvx + dy * dvy) / max(math.hypot(dx, dy), 1e-9)
        trend = "" if abs(rate) < STILL else (", closing" if rate < 0 else ", opening")
        parts.append(f"Enemy {_where(sin_h, cos_h, dx, dy)}{trend}.")
    sx, sy = o[OBS_STAR], o[OBS_STAR + 1]
    if sx != 0.0 or sy != 0.0:
        parts.append(f"Star {_where(sin_h, cos_h, sx, sy)}.")
    tx, ty = o[OBS_TORPEDOES], o[OBS_TORPEDOES + 1]
    if tx != 0.0 or ty != 0.0:
        parts.append(f"Torpedo {_where(sin_h, cos_h, tx, ty)}.")
    fuel, ammo = int(round(100 * o[OBS_OWN + 6])), int(round(MAGAZINE * o[OBS_OWN + 7]))
    valid = ",".join(str(a) for a in valid_actions(obs))
    return " ".join(parts) + f" Fuel {fuel}, torpedoes {ammo}. Valid: {valid}.\n{ANSWER}"


def prompt(obs: np.ndarray, num_actions: int | None = None) -> str:
    """The whole prompt of one observation: preamble + situation. num_actions defaults to the
    observation's (the length of its action mask)."""
    n = len(np.asarray(obs)) - OBS_MASK if num_actions is None else num_actions
    return preamble(n) + situation(obs)


def valid_actions(obs: np.ndarray) -> list[int]:
    """The indices of the valid actions (the observation's mask), in order."""
    return [int(a) for a in np.flatnonzero(np.asarray(obs)[OBS_MASK:] > 0.5)]
