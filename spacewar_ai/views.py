"""What a learned agent's network reads of an observation: its view.

The observation (environment.OBSERVATION_DOC) stays in world coordinates, since scripted pilots,
strategy files, LLM prompts and the docs read it. Agents turn it into their view at the network's
door (`agents.network_input`); the view's name is part of the network's architecture and is saved
with its weights.

- "world": the observation as documented.
- "egocentric": the same values in the ship's own frame (EGOCENTRIC_DOC), same width.
- "tactical": the egocentric view plus five aiming and dodging columns computed from the game's
  constants (TACTICAL_DOC), inserted before the action mask so the mask stays last.

Numpy and numba on (N, D) or (D,) arrays; no torch, no learning.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .config import OBSERVATION_VIEWS, GameConfig
from .engine import TORPEDO_SPAWN_OFFSET

VIEWS = OBSERVATION_VIEWS
MIN_DIM = 30  # the egocentric and tactical views read indices up to 29
TACTICAL_COLUMNS = 5  # columns the tactical view adds

EGOCENTRIC_DOC = """
    ## What the networks read: the egocentric view (`observation_view = "egocentric"`)

    Learned agents turn the observation above into a view before their first layer: DQN by
    default into the ship's own frame (`views.egocentric_view`, same width), PPO into the tactical
    view below, which starts from this one. Every vector (own velocity, opponent, star, torpedoes)
    becomes (forward, right) components: forward along the heading, right where rotating right
    (action 2) turns the nose. Then "the opponent is dead ahead" is one input near zero instead of
    a comparison between an angle and a heading that a network has to learn.

    | index | meaning in the egocentric view |
    |---|---|
    | 0-1 | bearing of the opponent: cos, sin of the angle between the heading and the line to it (zeros while it is in hyperspace) |
    | 2-3 | own velocity, (forward, right) |
    | 4-8 | unchanged (own heading, fuel, torpedoes, reload) |
    | 9-10, 11-12 | opponent position, velocity relative to own, (forward, right) |
    | 13-14 | sin, cos of the opponent's heading minus own |
    | 15-16 | star position relative to own, (forward, right) |
    | 17 | unchanged (star proximity) |
    | 18-29 | the 3 nearest enemy torpedoes, each position and velocity as (forward, right) |
    | 30- | unchanged (action mask) |

    Own position is dropped: the star, at the centre, already gives it.
"""

TACTICAL_DOC = """
    ## The tactical view (`observation_view = "tactical"`, PPO's default)

    The egocentric view with five columns inserted at 30-34, before the action mask (which moves
    to 35-40; 41 values in all, 42 with hyperspace). They are what a gunner works out, in straight
    lines (gravity ignored), from the game's constants (`views.view_constants(GameConfig)`, saved
    with the network):

    | index | meaning | range |
    |---|---|---|
    | 30-31 | lead bearing: cos, sin of the angle from the heading to where a torpedo fired toward it meets the opponent | [-1, 1]; zeros with no intercept or the opponent in hyperspace |
    | 32 | shot quality: exp(-d / (2 hit_radius)), d the closest approach to the opponent of a torpedo fired now | (0, 1], 1 = dead on; 0 with the opponent in hyperspace |
    | 33 | threat: the largest exp(-d / (2 hit_radius)) over the 3 nearest enemy torpedoes, d each one's closest approach to the ship | [0, 1] |
    | 34 | intercept time of the lead / torpedo_lifetime | [0, 2]; 0 with no intercept |
"""


def view_width(view: str, obs_dim: int) -> int:
    """How many values a network reading `view` takes for observations of obs_dim values."""
    return obs_dim + TACTICAL_COLUMNS if view == "tactical" else obs_dim


def view_constants(config: GameConfig | None = None) -> dict[str, float]:
    """The game constants the tactical view reads (screen units and frames), JSON-serializable:
    a network saves the ones it learned with, so it reads a game the same way after loading."""
    cfg = GameConfig() if config is None else config
    return {"half_width": cfg.width / 2, "half_height": cfg.height / 2,
            "max_speed": cfg.max_speed, "torpedo_speed": cfg.torpedo_speed,
            "torpedo_spawn": TORPEDO_SPAWN_OFFSET, "hit_radius": cfg.hit_radius,
            "torpedo_lifetime": float(cfg.torpedo_lifetime)}


# (x, y) pairs of the observation that the egocentric view rotates into the ship's frame: own
# velocity, opponent position and velocity, star position, 3 torpedoes' positions and velocities.
_VECTOR_X = np.array([2, 9, 11, 15, 18, 20, 22, 24, 26, 28])
_VECTOR_Y = _VECTOR_X + 1


def _check_dim(obs: np.ndarray, view: str) -> None:
    if obs.shape[-1] < MIN_DIM:
        raise ValueError(f"the {view} view needs Spacewar! observations (36 or 37 values), "
                         f"got {obs.shape[-1]}: use observation_view='world' for other inputs")


def egocentric_view(obs: np.ndarray) -> np.ndarray:
    """The observation (N, D) or (D,) in the ship's own frame (EGOCENTRIC_DOC); a new array."""
    obs = np.asarray(obs, dtype=np.float32)
    _check_dim(obs, "egocentric")
    out = obs.copy()
    s = obs[..., 4:5]  # sin, cos of own heading; forward = (cos, sin), right = (-sin, cos)
    c = obs[..., 5:6]
    x = obs[..., _VECTOR_X]
    y = obs[..., _VECTOR_Y]
    fwd = x * c + y * s
    right = y * c - x * s
    out[..., _VECTOR_X] = fwd
    out[..., _VECTOR_Y] = right
    so, co = obs[..., 13], obs[..., 14]
    out[..., 13] = so * c[..., 0] - co * s[..., 0]  # sin(opponent heading - own)
    out[..., 14] = co * c[..., 0] + so * s[..., 0]
    dist = np.hypot(fwd[..., 1], right[..., 1])  # the opponent's column (index 9)
    inv = np.divide(1.0, dist, out=np.zeros_like(dist), where=dist > 1e-6)
    out[..., 0] = fwd[..., 1] * inv
    out[..., 1] = right[..., 1] * inv
    return out


@nb.njit(cache=True, inline="always")
def intercept_time(dx, dy, rx, ry, speed, spawn):
    """Frames until a torpedo meets a target at (dx, dy) moving at (rx, ry) per frame, both
    relative to the shooter, when fired toward the right point: the first t > 0 with
    |d + r t| = spawn + speed t (it leaves `spawn` units out). math.inf if it never can."""
    a = rx * rx + ry * ry - speed * speed
    b = 2.0 * (dx * rx + dy * ry - spawn * speed)
    c = dx * dx + dy * dy - spawn * spawn
    t = math.inf
    if abs(a) < 1e-9:  # closing at exactly torpedo speed: the equation is linear
        if b < 0.0 and -c / b > 0.0:
            t = -c / b
    else:
        disc = b * b - 4.0 * a * c
        if disc >= 0.0:
            sq = math.sqrt(disc)
            for root in ((-b - sq) / (2.0 * a), (-b + sq) / (2.0 * a)):
                if 0.0 < root < t:
                    t = root
    return t


@nb.njit(cache=True, inline="always")
def _closest_approach(px, py, vx, vy, horizon):
    """Distance at closest approach within [0, horizon] frames of a point at (px, py) moving at
    (vx, vy) per frame, relative to the origin."""
    vv = vx * vx + vy * vy
    t = -(px * vx + py * vy) / vv if vv > 1e-9 else 0.0
    t = min(max(t, 0.0), horizon)
    return math.hypot(px + vx * t, py + vy * t)


@nb.njit(cache=True, error_model="numpy")
def _tactical_kernel(obs, hw, hh, v2, speed, spawn, life, scale, out):
    """One row at a time (numba: a tenth of the numpy version's time on a batch of 256)."""
    for g in range(obs.shape[0]):
        o = obs[g]
        sin_h, cos_h = o[4], o[5]
        dx, dy = o[9] * hw, o[10] * hh  # opponent minus own
        rx, ry = o[11] * v2, o[12] * v2  # its velocity minus own
        seen = o[13] * o[13] + o[14] * o[14] > 0.5  # heading zeros: in hyperspace
        t = intercept_time(dx, dy, rx, ry, speed, spawn)
        lead_c = lead_s = 0.0
        if not (seen and t < math.inf):
            t = 0.0
        else:
            ax, ay = dx + rx * t, dy + ry * t  # aim point, relative to own ship at the intercept
            norm = math.hypot(ax, ay)
            if norm > 1e-6:
                lead_c = (ax * cos_h + ay * sin_h) / norm
                lead_s = (ay * cos_h - ax * sin_h) / norm
        out[g, 0] = lead_c
        out[g, 1] = lead_s
        # Shot quality: a torpedo fired now, relative to the opponent.
        quality = 0.0
        if seen:
            miss = _closest_approach(dx - spawn * cos_h, dy - spawn * sin_h,
                                     rx - speed * cos_h, ry - speed * sin_h, life)
            quality = math.exp(-miss * scale)
        out[g, 2] = quality
        # Threat: enemy torpedoes' closest approach to the ship (all-zero slots hold none).
        threat = 0.0
        for j in (18, 22, 26):
            if o[j] != 0.0 or o[j + 1] != 0.0 or o[j + 2] != 0.0 or o[j + 3] != 0.0:
                d = _closest_approach(o[j] * hw, o[j + 1] * hh, o[j + 2] * v2, o[j + 3] * v2,
                                      life)
                threat = max(threat, math.exp(-d * scale))
        out[g, 3] = threat
        out[g, 4] = min(t / life, 2.0)


def tactical_columns(obs: np.ndarray, k: dict[str, float]) -> np.ndarray:
    """The five TACTICAL_DOC columns (N, 5) of world-frame observations (N, D).

    Everything is relative to the own ship, which moves with its own velocity; a torpedo leaves
    from `torpedo_spawn` ahead of it at `torpedo_speed` along the heading on top of that velocity,
    so in the ship's frame it flies straight out along the heading."""
    rows = np.ascontiguousarray(obs, dtype=np.float32).reshape(-1, obs.shape[-1])
    out = np.empty((rows.shape[0], TACTICAL_COLUMNS), dtype=np.float32)
    _tactical_kernel(rows, k["half_width"], k["half_height"], 2.0 * k["max_speed"],
                     k["torpedo_speed"], k["torpedo_spawn"], k["torpedo_lifetime"],
                     1.0 / (2.0 * k["hit_radius"]), out)
    return out.reshape(obs.shape[:-1] + (TACTICAL_COLUMNS,))


def tactical_view(obs: np.ndarray, constants: dict[str, float]) -> np.ndarray:
    """The egocentric view with TACTICAL_COLUMNS inserted before the action mask (TACTICAL_DOC):
    (N, D) or (D,) -> (N, D + 5) or (D + 5,)."""
    obs = np.asarray(obs, dtype=np.float32)
    _check_dim(obs, "tactical")
    ego = egocentric_view(obs)
    return np.concatenate([ego[..., :30], tactical_columns(obs, constants), ego[..., 30:]],
                          axis=-1)


def apply_view(obs: np.ndarray, view: str, constants: dict[str, float]) -> np.ndarray:
    """Observations (N, D) as a network reading `view` gets them (float32, contiguous)."""
    if view == "tactical":
        return tactical_view(obs, constants)
    if view == "egocentric":
        return egocentric_view(obs)
    return np.ascontiguousarray(obs, np.float32)
