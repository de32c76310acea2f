"""Features: what a learned agent's network reads of an observation, its view (docs/game.md).

The observation stays in world coordinates, since scripted pilots, strategies and prompts read
it; agents turn it into their view at the network's door (`BaseAgent.features`), and the view's
name and the constants it reads are saved with the weights. "world" is the observation;
"egocentric" the same values in the ship's frame; "tactical" adds five aiming and dodging
columns before the action mask (ships' paths bend around the star, torpedoes fly straight).
Numpy and numba on (N, D) or (D,) arrays; no torch."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ..config import OBSERVATION_VIEWS, GameConfig, mask_start
from ..util.errors import UserError
from .ballistics import bends, closest_approach, intercept_time, path_distance
from .controls import SW_FIRE
from .engine import OBS_MASK, jit_warm_up

VIEWS = OBSERVATION_VIEWS
MIN_DIM = OBS_MASK  # the egocentric and tactical views read every value before the mask
TACTICAL_COLUMNS = 5  # columns the tactical view adds

EGOCENTRIC_DOC = """
    ## What the networks read: the egocentric view (`observation_view = "egocentric"`)

    Learned agents turn the observation above into a view before their first layer: DQN by
    default into the ship's own frame (`features.egocentric_view`, same width), PPO into the tactical
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
    | 30- | unchanged (with hyperspace the jumps left, then the action mask) |

    Own position is dropped: the star, at the centre, already gives it.
"""

TACTICAL_DOC = """
    ## The tactical view (`observation_view = "tactical"`, PPO's default)

    The egocentric view with five columns inserted before the action mask, at 30-34 (the mask
    then at 35-40, 41 values in all), or at 32-36 after the jumps left where hyperspace is on
    (44 values with its seven actions). They are what a gunner works out from the
    game's constants (`features.view_constants(GameConfig)`, saved with the network). Torpedoes fly
    straight (1962); both ships' coasting paths bend around the star, predicted every 4 frames
    over a torpedo's life. `gravity` in the constants sets the bend; it is 0, straight lines, in
    a game without a star, with `torpedo_gravity`, and for models saved before the view knew of
    gravity (they learned with straight lines and keep them).

    | index | meaning | range |
    |---|---|---|
    | 30-31 | lead bearing: cos, sin of the angle from the heading to where a torpedo fired toward it meets the opponent | [-1, 1]; zeros with no intercept or the opponent in hyperspace |
    | 32 | shot quality: exp(-d / (2 hit_radius)), d the closest approach to the opponent of a torpedo fired now | (0, 1], 1 = dead on; 0 with the opponent in hyperspace |
    | 33 | threat: the largest exp(-d / (2 hit_radius)) over the 3 nearest enemy torpedoes, d each one's closest approach to the ship on its coasting path | [0, 1] |
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
            "torpedo_spawn": cfg.torpedo_spawn_offset, "hit_radius": cfg.hit_radius,
            "torpedo_lifetime": float(cfg.torpedo_lifetime),
            # Ships' paths bend; torpedoes fly straight (1962). With torpedo_gravity everything
            # falls alike, so paths relative to each other are nearly straight: no bending then.
            "gravity": 0.0 if cfg.torpedo_gravity else float(cfg.effective_gravity),
            # The switches' mask offers fire held through a reload's end (held_fire).
            "fire_held": 1.0}


OBS_RELOAD = 8  # own reload, 0 when ready to fire: the same column in every view
FIRE_SWITCHES = np.array([a & SW_FIRE != 0 for a in range(16)])


def held_fire(rows: np.ndarray) -> np.ndarray:
    """(N, 16): the switches' actions (N, D rows of observations or views) that fire while the
    reload is still running, which the mask offers when it ends within the decision."""
    return (rows[:, OBS_RELOAD] > 0)[:, None] & FIRE_SWITCHES[None, :]


def fire_when_ready(rows: np.ndarray) -> np.ndarray:
    """Rows (N, D) of the switches with fire offered only once the reload has ended: the mask
    as a pilot of the six actions reads it, and a network saved before the mask offered fire
    held (no `fire_held` among its view constants). A new array."""
    out = np.array(rows, dtype=np.float32)
    out[:, -len(FIRE_SWITCHES):][held_fire(out)] = 0.0
    return out


# (x, y) pairs of the observation that the egocentric view rotates into the ship's frame: own
# velocity, opponent position and velocity, star position, 3 torpedoes' positions and velocities.
VECTOR_X = np.array([2, 9, 11, 15, 18, 20, 22, 24, 26, 28])
VECTOR_Y = VECTOR_X + 1


def _check_dim(obs: np.ndarray, view: str) -> None:
    if obs.shape[-1] < MIN_DIM:
        raise UserError(f"the {view} view needs Spacewar! observations (36 values or more), "
                        f"got {obs.shape[-1]}: use observation_view='world' for other inputs")


# The egocentric view's own constants in float32, as numpy compares and divides float32 rows.
_TINY = np.float32(1e-6)
_ONE = np.float32(1.0)


@nb.njit(cache=True, error_model="numpy")
def _egocentric_kernel(obs, out, gap, start):
    """Each row of obs (N, D) in the ship's frame into out, the mask (from column `start` on)
    moved `gap` columns right (room for the tactical columns). One pass a row in float32, the
    same operations in the same order as numpy's on whole columns, so the same bits at a fraction
    of the calls."""
    for g in range(obs.shape[0]):
        o = obs[g]
        r = out[g]
        for j in range(start):
            r[j] = o[j]
        for j in range(start, obs.shape[1]):
            r[j + gap] = o[j]
        s, c = o[4], o[5]  # sin, cos of own heading; forward = (cos, sin), right = (-sin, cos)
        for j in VECTOR_X:
            x, y = o[j], o[j + 1]
            r[j] = x * c + y * s
            r[j + 1] = y * c - x * s
        so, co = o[13], o[14]
        r[13] = so * c - co * s  # sin(opponent heading - own)
        r[14] = co * c + so * s
        fwd, right = r[9], r[10]  # the opponent's column
        dist = np.hypot(fwd, right)
        inv = _ONE / dist if dist > _TINY else np.float32(0.0)
        r[0] = fwd * inv
        r[1] = right * inv


def _rows(obs: np.ndarray, view: str) -> np.ndarray:
    """Observations (..., D) as contiguous float32 rows (N, D), checked for the view."""
    obs = np.asarray(obs, dtype=np.float32)
    _check_dim(obs, view)
    return np.ascontiguousarray(obs.reshape(-1, obs.shape[-1]))


def egocentric_view(obs: np.ndarray) -> np.ndarray:
    """The observation (N, D) or (D,) in the ship's own frame (EGOCENTRIC_DOC); a new array."""
    rows = _rows(obs, "egocentric")
    out = np.empty_like(rows)
    _egocentric_kernel(rows, out, 0, OBS_MASK)
    return out.reshape(np.shape(obs))


# Frames per step when the tactical view predicts the ships' orbits: 24 steps over a torpedo's
# life, straight pieces in between. Finer steps barely moved the columns for their cost; coarser
# ones moved shot quality (VIBE_HISTORY.md).
ORBIT_STEP = 4.0
# Rows per call of the kernel: a whole large batch's bent paths outgrow the cache and cost more
# per row than blocks of them.
TACTICAL_BLOCK = 1024


@nb.njit(cache=True, error_model="numpy")
def _tactical_kernel(obs, hw, hh, v2, speed, spawn, life, scale, gm, orbit_step, out):
    """The columns, one row at a time (numba: numpy's per-call overhead dominates batches this
    small).

    With gm > 0 the ships' paths bend around the star (`ballistics.bends`, all rows' orbits stepped
    together first, sampled every `orbit_step` frames over a torpedo's life): the lead, the shot
    and the threats follow those paths, taken as straight between samples. gm = 0 is the
    straight-line view, in closed form."""
    steps = int(math.ceil(life / orbit_step))
    times = np.empty(steps + 1)
    for k in range(steps + 1):
        times[k] = min(k * orbit_step, life)
    n = obs.shape[0]
    rows = n if gm > 0.0 else 0  # straight lines read no bends: nothing to allocate
    own_bend = np.empty((rows, steps + 1, 2))  # every entry written by bends
    target_bend = np.empty((rows, steps + 1, 2))
    path = np.zeros((steps + 1, 2))
    if gm > 0.0:
        sx = np.empty(n)
        sy = np.empty(n)
        vx = np.empty(n)
        vy = np.empty(n)
        for g in range(n):
            sx[g], sy[g] = -obs[g, 15] * hw, -obs[g, 16] * hh  # own position relative to the star
            vx[g], vy[g] = obs[g, 2] * 0.5 * v2, obs[g, 3] * 0.5 * v2
        bends(sx, sy, vx, vy, gm, times, own_bend)
        for g in range(n):  # the opponent: its position and velocity minus own, plus own
            sx[g] += obs[g, 9] * hw
            sy[g] += obs[g, 10] * hh
            vx[g] += obs[g, 11] * v2
            vy[g] += obs[g, 12] * v2
        bends(sx, sy, vx, vy, gm, times, target_bend)
    for g in range(n):
        o = obs[g]
        sin_h, cos_h = o[4], o[5]
        dx, dy = o[9] * hw, o[10] * hh  # opponent minus own
        rx, ry = o[11] * v2, o[12] * v2  # its velocity minus own
        seen = o[13] * o[13] + o[14] * o[14] > 0.5  # heading zeros: in hyperspace
        bent = gm > 0.0 and (o[15] != 0.0 or o[16] != 0.0)
        if not bent:
            t = intercept_time(dx, dy, rx, ry, speed, spawn)
            ax, ay = dx + rx * t, dy + ry * t  # aim point, relative to own ship at the intercept
        else:
            # The opponent's bent path relative to the launch point, which moves on with the
            # ship's velocity at launch (a torpedo keeps it): the first sample within the
            # torpedo's reach (spawn + speed t), then the exact meeting on the straight piece
            # before it; past a torpedo's life, straight on along the last piece.
            px, py = dx, dy
            qx, qy = dx, dy
            k = 1
            while k <= steps:
                qx = dx + rx * times[k] + target_bend[g, k, 0]
                qy = dy + ry * times[k] + target_bend[g, k, 1]
                reach = spawn + speed * times[k]
                if qx * qx + qy * qy <= reach * reach:
                    break
                if k < steps:
                    px, py = qx, qy
                k += 1
            k = min(k, steps)
            dt = times[k] - times[k - 1]
            wx, wy = (qx - px) / dt, (qy - py) / dt
            tau = intercept_time(px, py, wx, wy, speed, spawn + speed * times[k - 1])
            t = times[k - 1] + tau
            ax, ay = px + wx * tau, py + wy * tau
        lead_c = lead_s = 0.0
        if not (seen and t < math.inf):
            t = 0.0
        else:
            norm = math.hypot(ax, ay)
            if norm > 1e-6:
                lead_c = (ax * cos_h + ay * sin_h) / norm
                lead_s = (ay * cos_h - ax * sin_h) / norm
        out[g, 0] = lead_c
        out[g, 1] = lead_s
        # Shot quality: a torpedo fired now, relative to the opponent.
        quality = 0.0
        if seen and not bent:
            miss = closest_approach(dx - spawn * cos_h, dy - spawn * sin_h,
                                     rx - speed * cos_h, ry - speed * sin_h, life)
            quality = math.exp(-miss * scale)
        elif seen:
            for k in range(steps + 1):
                path[k, 0] = dx + (rx - speed * cos_h) * times[k] + target_bend[g, k, 0] \
                    - spawn * cos_h
                path[k, 1] = dy + (ry - speed * sin_h) * times[k] + target_bend[g, k, 1] \
                    - spawn * sin_h
            quality = math.exp(-path_distance(path, steps) * scale)
        out[g, 2] = quality
        # Threat: enemy torpedoes' closest approach to the ship (all-zero slots hold none).
        threat = 0.0
        for j in (18, 22, 26):
            if o[j] != 0.0 or o[j + 1] != 0.0 or o[j + 2] != 0.0 or o[j + 3] != 0.0:
                jx, jy, ux, uy = o[j] * hw, o[j + 1] * hh, o[j + 2] * v2, o[j + 3] * v2
                if not bent:
                    d = closest_approach(jx, jy, ux, uy, life)
                else:  # a straight torpedo against the ship's own bent path
                    for k in range(steps + 1):
                        path[k, 0] = jx + ux * times[k] - own_bend[g, k, 0]
                        path[k, 1] = jy + uy * times[k] - own_bend[g, k, 1]
                    d = path_distance(path, steps)
                threat = max(threat, math.exp(-d * scale))
        out[g, 3] = threat
        out[g, 4] = min(t / life, 2.0)


def tactical_columns(obs: np.ndarray, k: dict[str, float]) -> np.ndarray:
    """The five TACTICAL_DOC columns (N, 5) of world-frame observations (N, D).

    Everything is relative to the own ship, which moves with its own velocity; a torpedo leaves
    from `torpedo_spawn` ahead of it at `torpedo_speed` along the heading on top of that velocity,
    so in the ship's frame it flies straight out along the heading."""
    rows = _rows(obs, "tactical")
    out = np.empty((rows.shape[0], TACTICAL_COLUMNS), dtype=np.float32)
    # Each row's columns read that row alone, so blocks give the bytes of one call.
    for start in range(0, len(rows), TACTICAL_BLOCK):
        block = slice(start, start + TACTICAL_BLOCK)
        _tactical_kernel(rows[block], k["half_width"], k["half_height"], 2.0 * k["max_speed"],
                         k["torpedo_speed"], k["torpedo_spawn"], k["torpedo_lifetime"],
                         1.0 / (2.0 * k["hit_radius"]), k.get("gravity", 0.0), ORBIT_STEP,
                         out[block])
    return out.reshape(np.shape(obs)[:-1] + (TACTICAL_COLUMNS,))


def tactical_view(obs: np.ndarray, constants: dict[str, float]) -> np.ndarray:
    """The egocentric view with TACTICAL_COLUMNS inserted before the action mask (TACTICAL_DOC):
    (N, D) or (D,) -> (N, D + 5) or (D + 5,)."""
    rows = _rows(obs, "tactical")
    out = np.empty((rows.shape[0], rows.shape[1] + TACTICAL_COLUMNS), dtype=np.float32)
    start = mask_start(rows.shape[1])  # after the jumps left, if any
    _egocentric_kernel(rows, out, TACTICAL_COLUMNS, start)
    out[:, start:start + TACTICAL_COLUMNS] = tactical_columns(rows, constants)
    return out.reshape(np.shape(obs)[:-1] + (out.shape[1],))


def apply_view(obs: np.ndarray, view: str, constants: dict[str, float]) -> np.ndarray:
    """Observations (N, D) as a network reading `view` gets them (float32, contiguous)."""
    if view == "tactical":
        return tactical_view(obs, constants)
    if view == "egocentric":
        return egocentric_view(obs)
    return np.ascontiguousarray(obs, np.float32)


@jit_warm_up
def _warm_up_views() -> None:
    config = GameConfig()
    tactical_view(np.zeros((1, config.obs_dim), dtype=np.float32), view_constants(config))
