"""The text view: what a language model reads of an observation.

A prompt is a fixed preamble (what the actions mean, the same at every decision), the ship's
situation in words and rounded numbers, and the valid actions' indices, then "Action:" and a
newline; the model answers with one index. docs/lm.md ("The prompt") shows both views:

- view 1: bearings in degrees from the nose (rounded to 5), distances in tenths of half the
  screen, closing or opening, the star and the nearest torpedo when there are any, fuel and
  torpedoes;
- view 2 (`DEFAULT_VIEW` for new training) adds what a gunner works out from the tactical view
  (game/features.py): the lead bearing and time, how far a shot now misses, the nearest threat.

An adapter records the view it was trained with and is always shown that one (lm/models.py).
`prompt(obs, num_actions, view)` = `preamble(num_actions)` + `situation(obs, view)`
(`situations` for a batch); `valid_actions(obs)` are the observation's mask."""

from __future__ import annotations

import math

import numpy as np

from ..config import DEFAULT_PROMPT_VIEW, PROMPT_VIEWS, GameConfig, mask_start
from ..game.engine import OBS_OPPONENT, OBS_OWN, OBS_STAR, OBS_TORPEDOES
from ..util.errors import UserError

ACTION_WORDS = ("drift", "turn left", "turn right", "thrust", "fire", "thrust and fire",
                "hyperspace")
ANSWER = "Action:\n"
# Range-rate magnitudes below this (in the observation's units) read as neither closing nor opening.
STILL = 0.02
# Torpedoes left are observed as a fraction of the magazine; counted against the default one.
MAGAZINE = GameConfig().max_ammo
VIEWS = PROMPT_VIEWS
DEFAULT_VIEW = DEFAULT_PROMPT_VIEW
MISS_CAP = 9  # hit radii; a miss or a threat this far or farther is said as this


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


def _radii(quality: float) -> int:
    """A tactical column's exp(-d / (2 hit radius)) back to d in hit radii, capped."""
    return MISS_CAP if quality <= 0.0 else min(MISS_CAP, int(round(-2.0 * math.log(quality))))


def aim(columns: np.ndarray) -> str:
    """View 2's words from the tactical view's five columns of one observation."""
    lead_cos, lead_sin, quality, threat, t_hit = (float(v) for v in columns)
    words = []
    if lead_cos != 0.0 or lead_sin != 0.0:
        deg = int(5 * round(math.degrees(math.atan2(lead_sin, lead_cos)) / 5))
        bearing = "ahead" if deg == 0 else "behind" if abs(deg) >= 180 else \
            f"{abs(deg)} {'right' if deg > 0 else 'left'}"
        words.append(f"Lead {bearing} in {int(round(10 * t_hit))}, shot misses by "
                     f"{_radii(quality)}.")
    if _radii(threat) < MISS_CAP:
        words.append(f"Threat passes {_radii(threat)} off.")
    return " ".join(words)


def situations(obs: np.ndarray, view: int = 1) -> list[str]:
    """`situation` of each row of a batch (N, D), the tactical columns computed once."""
    obs = np.asarray(obs, dtype=np.float32).reshape(-1, np.asarray(obs).shape[-1])
    if view not in VIEWS:
        raise UserError(f"prompt view {view!r}: the views are {', '.join(map(str, VIEWS))}")
    if view == 1 or len(obs) == 0:
        return [_situation(o, "") for o in obs]
    from ..game.features import tactical_columns, view_constants

    columns = tactical_columns(obs, view_constants(GameConfig()))
    return [_situation(o, aim(c)) for o, c in zip(obs, columns)]


def situation(obs: np.ndarray, view: int = 1) -> str:
    """The ship's state in words and rounded numbers (with view 2, the aim after the enemy),
    then the valid actions' indices."""
    return situations(np.asarray(obs)[None], view)[0]


def _situation(obs: np.ndarray, aiming: str) -> str:
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
    if aiming:
        parts.append(aiming)
    sx, sy = o[OBS_STAR], o[OBS_STAR + 1]
    if sx != 0.0 or sy != 0.0:
        parts.append(f"Star {_where(sin_h, cos_h, sx, sy)}.")
    tx, ty = o[OBS_TORPEDOES], o[OBS_TORPEDOES + 1]
    if tx != 0.0 or ty != 0.0:
        parts.append(f"Torpedo {_where(sin_h, cos_h, tx, ty)}.")
    fuel, ammo = int(round(100 * o[OBS_OWN + 6])), int(round(MAGAZINE * o[OBS_OWN + 7]))
    valid = ",".join(str(a) for a in valid_actions(obs))
    return " ".join(parts) + f" Fuel {fuel}, torpedoes {ammo}. Valid: {valid}.\n{ANSWER}"


def prompt(obs: np.ndarray, num_actions: int | None = None, view: int = 1) -> str:
    """The whole prompt of one observation: preamble + situation. num_actions defaults to the
    observation's (the length of its action mask)."""
    n = len(np.asarray(obs)) - mask_start(len(np.asarray(obs))) if num_actions is None \
        else num_actions
    return preamble(n) + situation(obs, view)


def valid_actions(obs: np.ndarray) -> list[int]:
    """The indices of the valid actions (the observation's mask), in order."""
    obs = np.asarray(obs)
    return [int(a) for a in np.flatnonzero(obs[mask_start(len(obs)):] > 0.5)]
