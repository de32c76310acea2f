"""The batch physics kernel: N Spacewar! games stepped at once on flat arrays (no torch).

This is the game's only implementation: `SpacewarEnv` is a batch of one, `SpacewarVectorEnv` a
batch of N, and every other front end calls the same kernels. State lives in preallocated
arrays (structure of arrays): `ship_f` (N, 2, SF) float64 positions, velocities, angle, fuel;
`ship_i` (N, 2, SI) alive, ammo, cooldown, death cause, ...; `torp_f` (N, 2, S, 4) and `torp_t`
(N, 2, S) the torpedo slots; `game_i` (N, GI) frame, game over, end reason, winners; `rng` (N,)
one splitmix64 stream per game, so a game depends only on its seed, never on its batch.
Integration is semi-implicit (symplectic) Euler: a coasting orbit's energy error stays bounded."""

from __future__ import annotations

import enum
import math
import sys

import numba as nb
import numpy as np
from numba.core import event as numba_event

from ..config import JUMP_COLUMNS, OBS_MASK, GameConfig, RewardConfig
from ..util.errors import UserError

# The action numbers of each scheme of controls (controls.py holds every mapping of them);
# Action is read from here by the pilots too.
from .controls import (
    SW_FIRE,
    SW_HYPERSPACE,
    SW_LEFT,
    SW_RIGHT,
    SW_THRUST,
    Action,
)


class DeathCause(enum.IntEnum):
    """Why a ship's game ended. NONE: it survived a game that the other ship lost.

    Printed by name (`COLLISION`, not `3`) wherever a person reads it."""

    NONE = 0
    TORPEDO = 1
    STAR = 2
    COLLISION = 3
    TIMEOUT = 4
    HYPERSPACE = 5
    FORFEIT = 6  # set by match.play_match, never by the physics: a strategy failed at run time

    def __str__(self) -> str:
        return self.name

    __format__ = object.__format__


# Where each part of an observation starts (the table in SpacewarEnv's docstring); with
# hyperspace, the jumps left (own, then the opponent's) come at OBS_JUMPS; the action mask runs
# from the config's mask_start to the end, one column an action (GameBatch.mask_columns).
OBS_OWN, OBS_OPPONENT, OBS_STAR, OBS_TORPEDOES, OBS_JUMPS = 0, 9, 15, 18, OBS_MASK


# ship_f fields. SCOS/SSIN cache the heading's cosine and sine: trigonometry is the costliest
# thing in a frame, and the heading changes only on rotate frames.
SX, SY, SVX, SVY, SANG, SANGV, SFUEL, SCOS, SSIN = range(9)
SF = 9
# ship_i fields
ALIVE, AMMO, COOLDOWN, CAUSE, KILLER, JUMPS, HYPER_HIDDEN, HYPER_RECHARGE, SHOTS, HITS, MASKED, \
    THRUSTING, JUMP_KIND = range(13)
SI = 13
# Fields added to ship_i after replays were first saved: a state hash takes them only where they
# are set, so that a replay saved before keeps its final state's hash (replays.state_hash).
SI_SAVED_FIRST = 12
# JUMP_KIND values: how the ship's hyperspace brings it back (config.ORBIT_HYPERSPACES)
JUMP_RANDOM, JUMP_MIRROR, JUMP_MIRROR_NEARER = 0, 1, 2
# game_i fields: END_REASON 0 running, 1 a ship died, 2 both out of torpedoes, 3 truncated
FRAME, OVER, END_REASON, WINNER, REAL_WINNER, SEED = range(6)
GI = 6
# stats fields (per ship): what GameResult reports and the physics never reads. DODGED: enemy
# torpedoes that came within DODGE_RADII hit radii of the ship and then missed.
DODGED, = range(1)
NS = 1
DODGE_RADII = 3.0
END_RUNNING, END_DEATH, END_NO_AMMO, END_TRUNCATED = 0, 1, 2, 3
# params array fields (floats; ints stored exactly)
(P_W, P_H, P_AMMO, P_TLIFE, P_COOLDOWN, P_TSPEED, P_ROT, P_THRUST, P_FUEL, P_GM, P_STAR_R,
 P_HIT_R, P_MAXV, P_MAXSTEPS, P_SKIP, P_START, P_ANGMOM, P_NOSTAR, P_TELEPORT, P_TGRAV, P_HYPER,
 P_JUMPS, P_VANISH, P_RECHARGE, P_NACT, P_SWITCHES, P_ROUND, P_TSTAR_R, P_TT, P_SS, P_ORDER,
 P_HSEEN, P_SPAWN, P_SURVIVOR, P_FAIL_RETURN, P_REENTRY_QUADRANT, P_REST_HEADING,
 P_ORBIT_JUMP) = range(38)
NP_ = 38
# P_START values: how games begin (config.START_POSITIONS)
START_ORBIT, START_CLASSIC, START_ECCENTRIC, START_VARIED = 0, 1, 2, 3
# reward params fields
(R_STEP, R_KILL, R_DEATH, R_STAR, R_COLL, R_HYPER, R_WIN, R_LOSE, R_DRAW, R_FUEL, R_AMMO, R_SHOT,
 R_THRUST) = range(13)
NR = 13

NEAREST_TORPEDOES = 3
# With angular momentum (sense switch 1) a rotate frame adds this fraction of rotation_speed to the
# angular velocity, so reaching full turn rate takes 8 frames, as sluggish as the 1962 feel.
ANGULAR_ACCEL_FRACTION = 1.0 / 8.0
# Orbit starts: radius range in units and heading jitter; both ships orbit in opposite senses on
# opposite sides of the star, so they meet twice per orbit.
ORBIT_R_MIN, ORBIT_R_MAX = 180.0, 320.0
TWO_PI = 2.0 * math.pi

# error_model="numpy": division by zero gives inf/nan instead of a Python exception check on every
# division, which costs the hot loop dearly. No fastmath: it would make results depend on the build.
_jit = nb.njit(cache=True, error_model="numpy")
_jit_inline = nb.njit(cache=True, error_model="numpy", inline="always")

# numba compiles a jitted function at its first call, or loads it from its cache (__pycache__):
# seconds of CPU the first time after an install, a fraction of a second after that. Modules
# with jitted functions register a warm-up (one call on tiny inputs); the first GameBatch of a
# process runs them, and one registered later runs at once. The user is told, once per process,
# when numba really compiles (its "numba:compile" event, which a load from the cache does not
# send), so that a first step does not look hung, and only then: a slow load on a busy machine
# is not a compile.
COMPILE_NOTICE = ("spacewar-ai: compiling the game engine with numba, once after installing "
                  "(about a minute of CPU; later runs load it from the cache)")
_warm_ups: list = []
_warm = {"done": False, "announced": False}


def jit_warm_up(fn):
    """Register `fn` (no arguments) as a warm-up of a module's jitted functions."""
    _warm_ups.append(fn)
    if _warm["done"]:
        _run_warm_ups([fn])
    return fn


class _CompileNotice(numba_event.Listener):
    """Says COMPILE_NOTICE at the first compile of the process."""

    def on_start(self, event) -> None:
        if not _warm["announced"]:
            _warm["announced"] = True
            print(COMPILE_NOTICE, file=sys.stderr, flush=True)

    def on_end(self, event) -> None:
        """The compile's end says nothing more."""


def _run_warm_ups(fns) -> None:
    with numba_event.install_listener("numba:compile", _CompileNotice()):
        for fn in fns:
            fn()


def make_params(cfg: GameConfig) -> np.ndarray:
    p = np.zeros(NP_, dtype=np.float64)
    p[P_W], p[P_H] = cfg.width, cfg.height
    p[P_AMMO], p[P_TLIFE], p[P_COOLDOWN] = cfg.max_ammo, cfg.torpedo_lifetime, cfg.fire_cooldown
    p[P_TSPEED], p[P_ROT], p[P_THRUST] = cfg.torpedo_speed, cfg.rotation_speed, cfg.thrust_power
    p[P_FUEL], p[P_GM], p[P_STAR_R] = cfg.max_fuel, cfg.effective_gravity, cfg.star_radius
    p[P_HIT_R], p[P_MAXV], p[P_MAXSTEPS] = cfg.hit_radius, cfg.max_speed, cfg.max_episode_steps
    p[P_SKIP] = cfg.frame_skip
    p[P_START] = {"orbit": START_ORBIT, "classic": START_CLASSIC,
                  "eccentric_or_rest": START_ECCENTRIC, "varied": START_VARIED}[cfg.start_positions]
    p[P_ANGMOM], p[P_NOSTAR] = float(cfg.angular_momentum), float(cfg.no_star)
    p[P_TELEPORT], p[P_TGRAV] = float(cfg.star_teleports), float(cfg.torpedo_gravity)
    p[P_HYPER], p[P_JUMPS] = float(cfg.hyperspace), cfg.hyperspace_jumps
    p[P_VANISH], p[P_RECHARGE] = cfg.hyperspace_vanish_frames, cfg.hyperspace_recharge_frames
    p[P_NACT] = cfg.num_actions
    p[P_SWITCHES] = float(cfg.controls == "switches")
    p[P_ROUND] = float(cfg.hit_shape == "round")
    p[P_TSTAR_R] = cfg.torpedo_star_radius
    p[P_TT], p[P_SS] = float(cfg.torpedo_collisions), float(cfg.ship_collisions)
    p[P_ORDER], p[P_HSEEN] = float(cfg.move_order == "thrust_first"), float(cfg.hyperspace_visible)
    p[P_SPAWN] = cfg.torpedo_spawn_offset
    p[P_SURVIVOR] = float(cfg.scoring == "survivor")
    p[P_FAIL_RETURN] = float(cfg.hyperspace_failure == "return")
    p[P_REENTRY_QUADRANT] = float(cfg.hyperspace_reentry == "quadrant")
    p[P_REST_HEADING] = math.radians(cfg.rest_heading)
    p[P_ORBIT_JUMP] = {"random": JUMP_RANDOM, "mirror": JUMP_MIRROR,
                       "mirror_nearer": JUMP_MIRROR_NEARER}[cfg.orbit_hyperspace]
    return p


def make_reward_params(rc: RewardConfig) -> np.ndarray:
    r = np.zeros(NR, dtype=np.float64)
    r[R_STEP], r[R_KILL], r[R_DEATH] = rc.step_penalty, rc.kill_reward, rc.death_penalty
    r[R_STAR], r[R_COLL], r[R_HYPER] = rc.star_penalty, rc.collision_penalty, rc.hyperspace_penalty
    r[R_WIN], r[R_LOSE], r[R_DRAW] = rc.win_bonus, rc.lose_penalty, rc.draw_penalty
    r[R_FUEL], r[R_AMMO] = rc.fuel_efficiency_bonus, rc.ammo_efficiency_bonus
    r[R_SHOT], r[R_THRUST] = rc.shot_reward, rc.thrust_reward
    return r


# ----------------------------------------------------------------------------------------------
# Random numbers: splitmix64, one stream per game.

@_jit_inline
def mix64(z):
    """splitmix64's finalizer, on one uint64 or element-wise on an array of them."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@_jit_inline
def _next_u64(rng, g):
    z = rng[g] + np.uint64(0x9E3779B97F4A7C15)
    rng[g] = z
    return mix64(z)


@_jit_inline
def _uniform(rng, g):
    """A float in [0, 1) with 53 random bits."""
    return float(_next_u64(rng, g) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


def seed_to_state(seed: int) -> np.uint64:
    """Mix a user seed into a stream state so that nearby seeds give unrelated games."""
    # mix64 in Python integers: called for each game a reset seeds, where an array per call
    # would cost several times more.
    z = (int(seed) * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return np.uint64(z ^ (z >> 31))


# ----------------------------------------------------------------------------------------------
# Geometry helpers.

@_jit_inline
def _wrap_delta(d, size):
    """Shortest signed displacement on a circle of length `size`, for |d| < size (two points
    on the screen). Branches instead of `%`: float modulo is a libm call in the hot loop."""
    half = 0.5 * size
    if d >= half:
        return d - size
    if d < -half:
        return d + size
    return d


@_jit_inline
def _far_apart(d, r, size):
    """True when two coordinates d apart (|d| < size) are at least r apart on the torus: the cheap
    first test that rejects most pairs in the collision loops."""
    ad = abs(d)
    return ad >= r and ad <= size - r


@_jit_inline
def _wrap_pos(x, size):
    """Bring a coordinate back onto the screen after a move shorter than the screen."""
    if x >= size:
        x -= size
        if x >= size:  # only for speeds above a screen per frame
            x = x % size
    elif x < 0.0:
        x += size
        if x < 0.0:
            x = x % size
    return x


@_jit_inline
def _set_heading(g, s, ang, ship_f):
    if ang >= TWO_PI or ang < 0.0:
        ang = ang % TWO_PI
    ship_f[g, s, SANG] = ang
    ship_f[g, s, SCOS] = math.cos(ang)
    ship_f[g, s, SSIN] = math.sin(ang)


@_jit_inline
def _hit(dx, dy, r, round_hit):
    """Whether two objects dx, dy apart touch: the 1962 octagon, or a circle of radius r."""
    ax = abs(dx)
    ay = abs(dy)
    if round_hit:
        return dx * dx + dy * dy < r * r
    return ax < r and ay < r and ax + ay < 1.5 * r


@_jit_inline
def _gravity(x, y, p):
    """Acceleration toward the star at the screen's centre (inverse square)."""
    gm = p[P_GM]
    if gm == 0.0:
        return 0.0, 0.0
    rx = x - 0.5 * p[P_W]
    ry = y - 0.5 * p[P_H]
    r2 = rx * rx + ry * ry
    # Inside the capture radius the ship dies (or is moved) this frame anyway; the floor only keeps
    # the force finite for the frame it crosses the centre.
    floor = max(p[P_STAR_R], 1.0)
    if r2 < floor * floor:
        r2 = floor * floor
    inv_r3 = 1.0 / (r2 * math.sqrt(r2))
    return -gm * rx * inv_r3, -gm * ry * inv_r3


# ----------------------------------------------------------------------------------------------
# Reset.

@_jit
def _reset_game(g, ship_f, ship_i, torp_f, torp_t, game_i, rng, p):
    w = p[P_W]
    h = p[P_H]
    cx = 0.5 * w
    cy = 0.5 * h
    for s in range(2):
        for k in range(SI):
            ship_i[g, s, k] = 0
        ship_i[g, s, ALIVE] = 1
        ship_i[g, s, AMMO] = int(p[P_AMMO])
        ship_f[g, s, SFUEL] = p[P_FUEL]
        ship_f[g, s, SANGV] = 0.0
        for k in range(torp_t.shape[2]):
            torp_t[g, s, k] = 0
            for c in range(4):
                torp_f[g, s, k, c] = 0.0
    for k in range(GI):
        if k != SEED:
            game_i[g, k] = 0
    game_i[g, WINNER] = -1
    game_i[g, REAL_WINNER] = -1

    start = int(p[P_START])
    if start == START_VARIED:
        # Training's mix: every way a game can begin, so that no start is new to a network.
        draw = _uniform(rng, g)
        if draw < 0.25:
            _at_rest(g, ship_f, ship_i, rng, p, draw < 0.125)
            return
        if draw < 0.5:
            _eccentric_orbits(g, ship_f, ship_i, rng, p)
            return
    if start == START_ECCENTRIC and _uniform(rng, g) >= 0.75:
        # The peer's fixed start: at rest on the other diagonal, facing opposite ways.
        for s in range(2):
            ship_f[g, s, SX] = cx + (0.25 * w if s == 1 else -0.25 * w)
            ship_f[g, s, SY] = cy + (0.25 * h if s == 1 else -0.25 * h)
            ship_f[g, s, SVX] = 0.0
            ship_f[g, s, SVY] = 0.0
            _set_heading(g, s, p[P_REST_HEADING] + math.pi * s, ship_f)
        return
    if start == START_ECCENTRIC:
        _eccentric_orbits(g, ship_f, ship_i, rng, p)
        return
    if start == START_CLASSIC:
        _classic(g, ship_f, p)
        return
    gm = p[P_GM]
    theta = _uniform(rng, g) * TWO_PI
    sense = 1.0 if _uniform(rng, g) < 0.5 else -1.0
    max_r = min(ORBIT_R_MAX, 0.45 * min(w, h))
    min_r = min(ORBIT_R_MIN, 0.8 * max_r)
    min_r = max(min_r, 3.0 * p[P_STAR_R])
    for s in range(2):
        r = min_r + (max_r - min_r) * _uniform(rng, g)
        a = theta + math.pi * s
        ship_f[g, s, SX] = cx + r * math.cos(a)
        ship_f[g, s, SY] = cy + r * math.sin(a)
        v = math.sqrt(gm / r) if gm > 0.0 else 0.0
        # Opposite senses: ship 1 orbits the other way round.
        d = sense if s == 0 else -sense
        ship_f[g, s, SVX] = -math.sin(a) * v * d
        ship_f[g, s, SVY] = math.cos(a) * v * d
        _set_heading(g, s, _uniform(rng, g) * TWO_PI, ship_f)
        ship_i[g, s, JUMP_KIND] = int(p[P_ORBIT_JUMP])


@_jit
def _classic(g, ship_f, p):
    """1962: opposite diagonal positions a quarter screen from the centre on each axis, at rest,
    the second ship turned by pi."""
    w = p[P_W]
    h = p[P_H]
    ship_f[g, 0, SX] = 0.5 * w + 0.25 * w
    ship_f[g, 0, SY] = 0.5 * h - 0.25 * h
    ship_f[g, 1, SX] = 0.5 * w - 0.25 * w
    ship_f[g, 1, SY] = 0.5 * h + 0.25 * h
    for s in range(2):
        ship_f[g, s, SVX] = 0.0
        ship_f[g, s, SVY] = 0.0
    _set_heading(g, 0, 0.5 * math.pi, ship_f)
    _set_heading(g, 1, 1.5 * math.pi, ship_f)


@_jit
def _at_rest(g, ship_f, ship_i, rng, p, classic):
    """Both ships at rest: at the 1962 start (`classic`), or at opposing points 0.3 to 0.9 of
    the half screen from the star with random headings and the same random share of torpedoes
    and fuel for both."""
    if classic:
        _classic(g, ship_f, p)
        return
    w = p[P_W]
    h = p[P_H]
    half = 0.5 * min(w, h)
    r = (0.3 + 0.6 * _uniform(rng, g)) * half
    theta = _uniform(rng, g) * TWO_PI
    ammo = math.ceil(p[P_AMMO] * (0.05 + 0.95 * _uniform(rng, g)))
    fuel = math.ceil(p[P_FUEL] * (0.25 + 0.75 * _uniform(rng, g)))
    for s in range(2):
        side = 1.0 if s == 0 else -1.0
        ship_f[g, s, SX] = 0.5 * w + side * r * math.cos(theta)
        ship_f[g, s, SY] = 0.5 * h + side * r * math.sin(theta)
        ship_f[g, s, SVX] = 0.0
        ship_f[g, s, SVY] = 0.0
        _set_heading(g, s, _uniform(rng, g) * TWO_PI, ship_f)
        ship_i[g, s, AMMO] = ammo
        ship_f[g, s, SFUEL] = fuel


@_jit
def _eccentric_orbits(g, ship_f, ship_i, rng, p):
    """The peer's random start: opposing eccentric orbits, each ship at its orbit's farthest
    point (0.63 to 1 of the half screen from the star), a random heading, and the same random
    share of torpedoes, hyperspace jumps and fuel for both ships."""
    w = p[P_W]
    h = p[P_H]
    half = 0.5 * min(w, h)
    gm = p[P_GM]
    r = math.sqrt(0.4 + 0.6 * _uniform(rng, g)) * half
    theta = _uniform(rng, g) * TWO_PI
    low = max(0.06 * half * math.sqrt(2.0), 0.5 * r)  # the nearest point stays off the star
    near = low + (r - low) * _uniform(rng, g)
    ecc = (r - near) / (r + near)
    v = math.sqrt((1.0 - ecc) * gm / ((1.0 + ecc) * r)) if gm > 0.0 else 0.0
    sense = 1.0 if _uniform(rng, g) < 0.5 else -1.0
    heading = _uniform(rng, g) * TWO_PI
    ammo = math.ceil(p[P_AMMO] * (0.05 + 0.95 * _uniform(rng, g)))
    jumps = math.ceil(p[P_JUMPS] * (0.05 + 0.95 * _uniform(rng, g)))
    fuel = math.ceil(p[P_FUEL] * (0.25 + 0.75 * _uniform(rng, g)))
    for s in range(2):
        side = 1.0 if s == 0 else -1.0  # the second ship mirrors the first through the star
        ship_f[g, s, SX] = 0.5 * w + side * r * math.cos(theta)
        ship_f[g, s, SY] = 0.5 * h + side * r * math.sin(theta)
        ship_f[g, s, SVX] = -side * sense * v * math.sin(theta)
        ship_f[g, s, SVY] = side * sense * v * math.cos(theta)
        _set_heading(g, s, heading + math.pi * s, ship_f)
        ship_i[g, s, AMMO] = ammo
        ship_i[g, s, JUMPS] = int(p[P_JUMPS]) - jumps
        ship_f[g, s, SFUEL] = fuel
        ship_i[g, s, JUMP_KIND] = int(p[P_ORBIT_JUMP])


@_jit
def reset_games(mask, seeds, use_seeds, ship_f, ship_i, torp_f, torp_t, game_i, rng, p, stats):
    """Reset the games where mask is true; reseed their streams first where use_seeds is true."""
    for g in range(mask.shape[0]):
        if mask[g]:
            stats[g] = 0
            if use_seeds[g]:
                rng[g] = seeds[g]
            _reset_game(g, ship_f, ship_i, torp_f, torp_t, game_i, rng, p)


# ----------------------------------------------------------------------------------------------
# Masks and one frame.

@_jit_inline
def _thrusts(a):
    return a == Action.THRUST or a == Action.THRUST_FIRE


@_jit_inline
def _fires(a):
    return a == Action.FIRE or a == Action.THRUST_FIRE


@_jit_inline
def _valid_actions(g, s, ship_f, ship_i, p):
    """The actions ship s of game g may take now, bit a for action a: one rule for the step's
    check and the observations' mask, worked out once rather than once an action. With the
    switches, a combination is valid when every switch in it can act within the decision."""
    if ship_i[g, s, ALIVE] == 0 or ship_i[g, s, HYPER_HIDDEN] > 0:
        return 1 << Action.NONE
    thrust = ship_f[g, s, SFUEL] > 0.0
    fire = ship_i[g, s, AMMO] > 0 and ship_i[g, s, COOLDOWN] == 0
    hyper = (p[P_HYPER] != 0.0 and ship_i[g, s, JUMPS] < int(p[P_JUMPS])
             and ship_i[g, s, HYPER_RECHARGE] == 0)
    if p[P_SWITCHES] != 0.0:
        # A switch is held through the decision's frames, so fire acts when the reload ends
        # within them, as the 1962 box and the peer's game fire it; a jump leaves on the first.
        held = ship_i[g, s, AMMO] > 0 and ship_i[g, s, COOLDOWN] < int(p[P_SKIP])
        valid = 0
        for a in range(16):
            jump = a & SW_HYPERSPACE == SW_HYPERSPACE
            if ((not jump or hyper) and (a & SW_THRUST == 0 or thrust)
                    and (a & SW_FIRE == 0 or (fire if jump else held))):
                valid |= 1 << a
        return valid
    return ((1 << Action.NONE) | (1 << Action.ROTATE_LEFT) | (1 << Action.ROTATE_RIGHT)
            | (thrust << Action.THRUST) | (fire << Action.FIRE)
            | ((thrust and fire) << Action.THRUST_FIRE) | (hyper << Action.HYPERSPACE))


@_jit_inline
def _action_valid(g, s, a, ship_f, ship_i, p):
    if a < 0 or a >= int(p[P_NACT]):  # no such action: played as drift, as it always was
        return ship_i[g, s, ALIVE] == 1 and ship_i[g, s, HYPER_HIDDEN] == 0
    return (_valid_actions(g, s, ship_f, ship_i, p) >> a) & 1 == 1


@_jit_inline
def _playable(g, s, a, ship_f, ship_i, p):
    """The action a ship plays for `a` (step_games counts an `a` outside the mask). The six
    actions: drift. The switches: those that can act, so a press of fire while reloading still
    turns; both rotate switches without a jump to make are left out."""
    if p[P_SWITCHES] == 0.0 or a < 0 or a >= 16:
        return 0
    if a & SW_HYPERSPACE == SW_HYPERSPACE and (_valid_actions(g, s, ship_f, ship_i, p)
                                               >> SW_HYPERSPACE) & 1 == 0:
        a &= ~SW_HYPERSPACE
    return a


@_jit_inline
def _decode(a, switches):
    """An action as (turn -1/0/1, thrust, fire, hyperspace)."""
    if switches:
        if a & SW_HYPERSPACE == SW_HYPERSPACE:
            return 0.0, a & SW_THRUST != 0, a & SW_FIRE != 0, True
        turn = (1.0 if a & SW_RIGHT else 0.0) - (1.0 if a & SW_LEFT else 0.0)
        return turn, a & SW_THRUST != 0, a & SW_FIRE != 0, False
    turn = -1.0 if a == Action.ROTATE_LEFT else (1.0 if a == Action.ROTATE_RIGHT else 0.0)
    return turn, _thrusts(a), _fires(a), a == Action.HYPERSPACE


@_jit_inline
def _kill(g, s, cause, killer, ship_i):
    if ship_i[g, s, ALIVE] == 1:
        ship_i[g, s, ALIVE] = 0
        ship_i[g, s, CAUSE] = cause
        ship_i[g, s, KILLER] = killer


@_jit_inline
def _jump_fails(g, s, ship_i, rng, p):
    """The k-th jump destroys the ship with probability k / jumps."""
    return _uniform(rng, g) * p[P_JUMPS] < ship_i[g, s, JUMPS]


@_jit_inline
def _mirror(g, s, ship_f, ship_i, p):
    """The ship back from a jump that cannot fail: at the point opposite through the star (drawn
    towards it by the share of jumps left for JUMP_MIRROR_NEARER), velocity and heading
    reversed."""
    w = p[P_W]
    h = p[P_H]
    k = 1.0
    if ship_i[g, s, JUMP_KIND] == JUMP_MIRROR_NEARER:
        k = (p[P_JUMPS] - ship_i[g, s, JUMPS]) / p[P_JUMPS]
    ship_f[g, s, SX] = _wrap_pos(0.5 * w - (ship_f[g, s, SX] - 0.5 * w) * k, w)
    ship_f[g, s, SY] = _wrap_pos(0.5 * h - (ship_f[g, s, SY] - 0.5 * h) * k, h)
    ship_f[g, s, SVX] = -ship_f[g, s, SVX]
    ship_f[g, s, SVY] = -ship_f[g, s, SVY]
    _set_heading(g, s, ship_f[g, s, SANG] + math.pi, ship_f)


@_jit_inline
def _missed(g, o, k, torp_near, stats, dodge2):
    """Torpedo k of ship o is gone without hitting: a dodge if it came close to its target."""
    if torp_near[g, o, k] < dodge2:
        stats[g, 1 - o, DODGED] += 1


@_jit_inline
def _frame(g, act0, act1, ship_f, ship_i, torp_f, torp_t, rng, p, live_o, live_k, live_x,
           live_y, torp_near, stats, dodges):
    """Advance game g by one frame with the given (already validated) actions.

    live_o/live_k/live_x/live_y are scratch arrays of 2 * slots: owner, slot and position of each
    live torpedo, so the collision loops visit only torpedoes in flight. torp_near holds each
    torpedo's closest squared distance to its target so far, for the dodge count in stats,
    kept only when `dodges` is true.
    """
    dodge_r = DODGE_RADII * p[P_HIT_R]
    dodge2 = dodge_r * dodge_r if dodges else -1.0  # -1: no torpedo ever counts as a dodge
    w = p[P_W]
    h = p[P_H]
    nslots = torp_t.shape[2]
    tgrav = p[P_TGRAV] != 0.0
    peer_order = p[P_ORDER] != 0.0
    round_hit = p[P_ROUND] != 0.0
    # 1. Torpedoes in flight move first, so a torpedo fired this frame starts at the nose.
    live = 0
    for o in range(2):
        for k in range(nslots):
            if torp_t[g, o, k] > 0:
                if tgrav:
                    ax, ay = _gravity(torp_f[g, o, k, 0], torp_f[g, o, k, 1], p)
                    torp_f[g, o, k, 2] += ax
                    torp_f[g, o, k, 3] += ay
                torp_f[g, o, k, 0] = _wrap_pos(torp_f[g, o, k, 0] + torp_f[g, o, k, 2], w)
                torp_f[g, o, k, 1] = _wrap_pos(torp_f[g, o, k, 1] + torp_f[g, o, k, 3], h)
                torp_t[g, o, k] -= 1
                if torp_t[g, o, k] > 0:
                    live_o[live] = o
                    live_k[live] = k
                    live += 1
                else:
                    _missed(g, o, k, torp_near, stats, dodge2)
    # 2. Ships act and move.
    for s in range(2):
        ship_i[g, s, THRUSTING] = 0
        if ship_i[g, s, ALIVE] == 0:
            continue
        if ship_i[g, s, HYPER_HIDDEN] > 0:
            ship_i[g, s, HYPER_HIDDEN] -= 1
            if ship_i[g, s, HYPER_HIDDEN] == 0:
                if ship_i[g, s, JUMP_KIND] != JUMP_RANDOM:
                    _mirror(g, s, ship_f, ship_i, p)
                    continue
                if p[P_FAIL_RETURN] != 0.0 and _jump_fails(g, s, ship_i, rng, p):
                    _kill(g, s, DeathCause.HYPERSPACE, -1, ship_i)
                    continue
                # Reappear at a random place with a random velocity and heading.
                q = 0.5 if p[P_REENTRY_QUADRANT] != 0.0 else 0.0
                ship_f[g, s, SX] = (q + (1.0 - q) * _uniform(rng, g)) * w
                ship_f[g, s, SY] = (q + (1.0 - q) * _uniform(rng, g)) * h
                ang = _uniform(rng, g) * TWO_PI
                spd = _uniform(rng, g) * 0.25 * p[P_MAXV]
                ship_f[g, s, SVX] = spd * math.cos(ang)
                ship_f[g, s, SVY] = spd * math.sin(ang)
                _set_heading(g, s, _uniform(rng, g) * TWO_PI, ship_f)
                ship_f[g, s, SANGV] = 0.0
            continue
        a = act0 if s == 0 else act1
        turn, thrusts, fires, jumps = _decode(a, p[P_SWITCHES] != 0.0)
        # The peer's order thrusts along the heading the ship had before this frame's turn.
        tx = ship_f[g, s, SCOS]
        ty = ship_f[g, s, SSIN]
        if p[P_ANGMOM] != 0.0:
            ship_f[g, s, SANGV] += turn * p[P_ROT] * ANGULAR_ACCEL_FRACTION
            if ship_f[g, s, SANGV] != 0.0:
                _set_heading(g, s, ship_f[g, s, SANG] + ship_f[g, s, SANGV], ship_f)
        elif turn != 0.0:
            _set_heading(g, s, ship_f[g, s, SANG] + turn * p[P_ROT], ship_f)
        fx = ship_f[g, s, SCOS]
        fy = ship_f[g, s, SSIN]
        ax, ay = 0.0, 0.0
        if not peer_order:
            ax, ay = _gravity(ship_f[g, s, SX], ship_f[g, s, SY], p)
            tx, ty = fx, fy
        if thrusts and ship_f[g, s, SFUEL] > 0.0:
            ax += p[P_THRUST] * tx
            ay += p[P_THRUST] * ty
            ship_f[g, s, SFUEL] -= 1.0
            ship_i[g, s, THRUSTING] = 1
        ship_f[g, s, SVX] += ax
        ship_f[g, s, SVY] += ay
        ship_f[g, s, SX] = _wrap_pos(ship_f[g, s, SX] + ship_f[g, s, SVX], w)
        ship_f[g, s, SY] = _wrap_pos(ship_f[g, s, SY] + ship_f[g, s, SVY], h)
        if fires and ship_i[g, s, AMMO] > 0 and ship_i[g, s, COOLDOWN] == 0:
            for k in range(nslots):
                if torp_t[g, s, k] == 0:
                    torp_t[g, s, k] = int(p[P_TLIFE])
                    torp_f[g, s, k, 0] = _wrap_pos(ship_f[g, s, SX] + p[P_SPAWN] * fx, w)
                    torp_f[g, s, k, 1] = _wrap_pos(ship_f[g, s, SY] + p[P_SPAWN] * fy, h)
                    torp_f[g, s, k, 2] = ship_f[g, s, SVX] + p[P_TSPEED] * fx
                    torp_f[g, s, k, 3] = ship_f[g, s, SVY] + p[P_TSPEED] * fy
                    torp_near[g, s, k] = np.inf
                    ship_i[g, s, AMMO] -= 1
                    ship_i[g, s, COOLDOWN] = int(p[P_COOLDOWN])
                    ship_i[g, s, SHOTS] += 1
                    live_o[live] = s
                    live_k[live] = k
                    live += 1
                    break
        if peer_order:
            # The peer's order: the torpedo leaves with the velocity before the pull.
            gx, gy = _gravity(ship_f[g, s, SX], ship_f[g, s, SY], p)
            ship_f[g, s, SVX] += gx
            ship_f[g, s, SVY] += gy
        if jumps:
            ship_i[g, s, JUMPS] += 1
            if (p[P_FAIL_RETURN] == 0.0 and ship_i[g, s, JUMP_KIND] == JUMP_RANDOM
                    and _jump_fails(g, s, ship_i, rng, p)):
                _kill(g, s, DeathCause.HYPERSPACE, -1, ship_i)
            else:
                ship_i[g, s, HYPER_HIDDEN] = int(p[P_VANISH])
                ship_i[g, s, HYPER_RECHARGE] = int(p[P_VANISH] + p[P_RECHARGE])
        if ship_i[g, s, COOLDOWN] > 0:
            ship_i[g, s, COOLDOWN] -= 1
        if ship_i[g, s, HYPER_RECHARGE] > 0 and ship_i[g, s, HYPER_HIDDEN] == 0:
            ship_i[g, s, HYPER_RECHARGE] -= 1
    # 3. Collisions, all tested on the positions after this frame's motion.
    cx = 0.5 * w
    cy = 0.5 * h
    r = p[P_HIT_R]
    star = p[P_NOSTAR] == 0.0
    star_r2 = p[P_STAR_R] * p[P_STAR_R]
    for s in range(2):
        if ship_i[g, s, ALIVE] == 0 or ship_i[g, s, HYPER_HIDDEN] > 0:
            continue
        if star:
            dx = ship_f[g, s, SX] - cx
            dy = ship_f[g, s, SY] - cy
            if dx * dx + dy * dy < star_r2:
                if p[P_TELEPORT] != 0.0:
                    # 1962 default: captured ships reappear at the corner, the star's antipode.
                    ship_f[g, s, SX] = 0.0
                    ship_f[g, s, SY] = 0.0
                else:
                    _kill(g, s, DeathCause.STAR, -1, ship_i)
    # Ship against ship, before torpedoes: a collision and a hit in one frame is a collision.
    if (p[P_SS] != 0.0 and ship_i[g, 0, HYPER_HIDDEN] == 0 and ship_i[g, 1, HYPER_HIDDEN] == 0
            and ship_i[g, 0, CAUSE] == 0 and ship_i[g, 1, CAUSE] == 0):
        dx = _wrap_delta(ship_f[g, 1, SX] - ship_f[g, 0, SX], w)
        dy = _wrap_delta(ship_f[g, 1, SY] - ship_f[g, 0, SY], h)
        if _hit(dx, dy, r, round_hit):
            _kill(g, 0, DeathCause.COLLISION, -1, ship_i)
            _kill(g, 1, DeathCause.COLLISION, -1, ship_i)
    if live == 0:
        return
    # Copy live torpedoes' positions into contiguous scratch: the pair loops below are the costliest
    # part of a frame with torpedoes in flight, and most pairs are rejected on |dx| alone.
    for j in range(live):
        live_x[j] = torp_f[g, live_o[j], live_k[j], 0]
        live_y[j] = torp_f[g, live_o[j], live_k[j], 1]
    # Torpedo against ship (torpedoes can hit their own ship too, as in 1962).
    reach = dodge_r if dodges else r
    for s in range(2):
        if ship_i[g, s, HYPER_HIDDEN] > 0 or ship_i[g, s, CAUSE] != 0:
            continue
        x = ship_f[g, s, SX]
        y = ship_f[g, s, SY]
        for j in range(live):
            dx = live_x[j] - x
            # Beyond reach on x alone, a torpedo can neither hit nor (counting dodges) be a near
            # miss: most pairs stop here, before the scattered load of the torpedo's timer.
            if _far_apart(dx, reach, w):
                continue
            o = live_o[j]
            k = live_k[j]
            if torp_t[g, o, k] > 0:
                dx = _wrap_delta(dx, w)
                dy = _wrap_delta(live_y[j] - y, h)
                if dodges and o != s:  # how close the enemy's torpedo comes
                    d2 = dx * dx + dy * dy
                    if d2 < torp_near[g, o, k]:
                        torp_near[g, o, k] = d2
                if _hit(dx, dy, r, round_hit):
                    torp_t[g, o, k] = 0
                    if o != s:
                        ship_i[g, o, HITS] += 1
                    _kill(g, s, DeathCause.TORPEDO, o, ship_i)
    # Torpedo against torpedo: both explode.
    for i in range(live - 1 if p[P_TT] != 0.0 else 0):
        oi = live_o[i]
        ki = live_k[i]
        if torp_t[g, oi, ki] == 0:
            continue
        xi = live_x[i]
        yi = live_y[i]
        for j in range(i + 1, live):
            dx = live_x[j] - xi
            if _far_apart(dx, r, w):
                continue
            dx = _wrap_delta(dx, w)
            oj = live_o[j]
            kj = live_k[j]
            if torp_t[g, oj, kj] == 0:
                continue
            dy = _wrap_delta(live_y[j] - yi, h)
            if _hit(dx, dy, r, round_hit):
                torp_t[g, oi, ki] = 0
                torp_t[g, oj, kj] = 0
                _missed(g, oi, ki, torp_near, stats, dodge2)
                _missed(g, oj, kj, torp_near, stats, dodge2)
                break
    # Torpedoes that fall into the star (with torpedo gravity) or pass near it (torpedo_star_radius).
    torp_star_r = max(p[P_STAR_R] if tgrav else 0.0, p[P_TSTAR_R])
    if torp_star_r > 0.0 and star:
        torp_star_r2 = torp_star_r * torp_star_r
        for j in range(live):
            dx = live_x[j] - cx
            dy = live_y[j] - cy
            if dx * dx + dy * dy < torp_star_r2 and torp_t[g, live_o[j], live_k[j]] > 0:
                torp_t[g, live_o[j], live_k[j]] = 0
                _missed(g, live_o[j], live_k[j], torp_near, stats, dodge2)


@_jit
def _finish_game(g, ship_f, ship_i, torp_t, game_i, p, rp, reward):
    """Decide winners and add the end-of-game bonuses once the game is over."""
    alive0 = ship_i[g, 0, ALIVE]
    alive1 = ship_i[g, 1, ALIVE]
    game_i[g, OVER] = 1
    if alive0 == 1 and alive1 == 1:
        # Timeout or both out of torpedoes: a draw, both marked TIMEOUT.
        ship_i[g, 0, CAUSE] = DeathCause.TIMEOUT
        ship_i[g, 1, CAUSE] = DeathCause.TIMEOUT
        reward[g, 0] += rp[R_DRAW]
        reward[g, 1] += rp[R_DRAW]
        return
    if alive0 == 0 and alive1 == 0:
        # Both destroyed in one frame: a mutual kill or a collision is a draw; suicides earn nothing.
        for s in range(2):
            c = ship_i[g, s, CAUSE]
            if c == DeathCause.COLLISION or (c == DeathCause.TORPEDO
                                             and ship_i[g, s, KILLER] == 1 - s):
                reward[g, s] += rp[R_DRAW]
        return
    survivor = 0 if alive0 == 1 else 1
    loser = 1 - survivor
    game_i[g, WINNER] = survivor
    if p[P_SURVIVOR] != 0.0 or (ship_i[g, loser, CAUSE] == DeathCause.TORPEDO
                                and ship_i[g, loser, KILLER] == survivor):
        game_i[g, REAL_WINNER] = survivor
        reward[g, survivor] += (rp[R_WIN]
                                + rp[R_FUEL] * ship_f[g, survivor, SFUEL] / max(p[P_FUEL], 1.0)
                                + rp[R_AMMO] * ship_i[g, survivor, AMMO] / max(p[P_AMMO], 1.0))
        reward[g, loser] += rp[R_LOSE]


@_jit
def step_games(actions, ship_f, ship_i, torp_f, torp_t, game_i, rng, p, rp, reward,
               terminated, truncated, torp_near, stats, dodges=False):
    """Advance every running game by frame_skip frames with actions (N, 2) held throughout.

    Invalid (masked) actions are replaced by 0 (drift) and counted in ship_i[..., MASKED].
    Fills reward (N, 2), terminated (N,) and truncated (N,) and returns how many games ended.
    Games already over are left alone (their reward is 0 and both flags are false): the caller
    resets them.
    """
    n = actions.shape[0]
    skip = int(p[P_SKIP])
    max_frames = int(p[P_MAXSTEPS])
    switches = p[P_SWITCHES] != 0.0
    nslots = torp_t.shape[2]
    live_o = np.empty(2 * nslots, dtype=np.int64)
    live_k = np.empty(2 * nslots, dtype=np.int64)
    live_x = np.empty(2 * nslots, dtype=np.float64)
    live_y = np.empty(2 * nslots, dtype=np.float64)
    ended = 0
    for g in range(n):
        reward[g, 0] = 0.0
        reward[g, 1] = 0.0
        terminated[g] = False
        truncated[g] = False
        if game_i[g, OVER] != 0:
            continue
        a0 = actions[g, 0]
        a1 = actions[g, 1]
        if not _action_valid(g, 0, a0, ship_f, ship_i, p):
            a0 = _playable(g, 0, a0, ship_f, ship_i, p)
            ship_i[g, 0, MASKED] += 1
        if not _action_valid(g, 1, a1, ship_f, ship_i, p):
            a1 = _playable(g, 1, a1, ship_f, ship_i, p)
            ship_i[g, 1, MASKED] += 1
        # Hyperspace is one press, not held: after the first frame the action goes on without it.
        if switches:
            h0 = a0 & ~SW_HYPERSPACE if a0 & SW_HYPERSPACE == SW_HYPERSPACE else a0
            h1 = a1 & ~SW_HYPERSPACE if a1 & SW_HYPERSPACE == SW_HYPERSPACE else a1
        else:
            h0 = Action.NONE if a0 == Action.HYPERSPACE else a0
            h1 = Action.NONE if a1 == Action.HYPERSPACE else a1
        reward[g, 0] = rp[R_STEP]
        reward[g, 1] = rp[R_STEP]
        shots0, shots1 = ship_i[g, 0, SHOTS], ship_i[g, 1, SHOTS]
        fuel0, fuel1 = ship_f[g, 0, SFUEL], ship_f[g, 1, SFUEL]
        for _ in range(skip):
            _frame(g, a0, a1, ship_f, ship_i, torp_f, torp_t, rng, p, live_o, live_k, live_x,
                   live_y, torp_near, stats, dodges)
            a0 = h0
            a1 = h1
            game_i[g, FRAME] += 1
            if ship_i[g, 0, ALIVE] == 0 or ship_i[g, 1, ALIVE] == 0:
                for s in range(2):
                    if ship_i[g, s, ALIVE] == 0:
                        c = ship_i[g, s, CAUSE]
                        if c == DeathCause.TORPEDO:
                            reward[g, s] += rp[R_DEATH]
                            killer = ship_i[g, s, KILLER]
                            if killer == 1 - s:
                                reward[g, killer] += rp[R_KILL]
                        elif c == DeathCause.STAR:
                            reward[g, s] += rp[R_STAR]
                        elif c == DeathCause.COLLISION:
                            reward[g, s] += rp[R_COLL]
                        elif c == DeathCause.HYPERSPACE:
                            reward[g, s] += rp[R_HYPER]
                game_i[g, END_REASON] = END_DEATH
                terminated[g] = True
                break
            if ship_i[g, 0, AMMO] == 0 and ship_i[g, 1, AMMO] == 0:
                live = 0
                for o in range(2):
                    for k in range(nslots):
                        live += torp_t[g, o, k]
                if live == 0:
                    game_i[g, END_REASON] = END_NO_AMMO
                    terminated[g] = True
                    break
            if game_i[g, FRAME] >= max_frames:
                game_i[g, END_REASON] = END_TRUNCATED
                truncated[g] = True
                break
        if rp[R_SHOT] != 0.0 or rp[R_THRUST] != 0.0:  # personalities that price shots, thrust
            reward[g, 0] += (rp[R_SHOT] * (ship_i[g, 0, SHOTS] - shots0)
                             + rp[R_THRUST] * (fuel0 - ship_f[g, 0, SFUEL]))
            reward[g, 1] += (rp[R_SHOT] * (ship_i[g, 1, SHOTS] - shots1)
                             + rp[R_THRUST] * (fuel1 - ship_f[g, 1, SFUEL]))
        if terminated[g] or truncated[g]:
            _finish_game(g, ship_f, ship_i, torp_t, game_i, p, rp, reward)
            ended += 1
    return ended


# ----------------------------------------------------------------------------------------------
# Observations.

@_jit_inline
def _clip1(x):
    return min(1.0, max(-1.0, x))


@_jit
def write_observations(ship_f, ship_i, torp_f, torp_t, p, obs, mask=None):
    """Fill obs (N, 2, D) float32 (where mask (N,) is true, if given): each ship's view of its
    game (see SpacewarEnv's docstring)."""
    n = obs.shape[0]
    w = p[P_W]
    h = p[P_H]
    hw = 0.5 * w
    hh = 0.5 * h
    maxv = p[P_MAXV]
    nslots = torp_t.shape[2]
    nact = int(p[P_NACT])
    star = p[P_NOSTAR] == 0.0
    star_r = p[P_STAR_R]
    best_d = np.empty(NEAREST_TORPEDOES, dtype=np.float64)
    best_k = np.empty(NEAREST_TORPEDOES, dtype=np.int64)
    for g in range(n):
        if mask is not None:  # compiled away when mask is left out (numba prunes the branch)
            if not mask[g]:
                continue
        for s in range(2):
            o = 1 - s
            x = ship_f[g, s, SX]
            y = ship_f[g, s, SY]
            vx = ship_f[g, s, SVX]
            vy = ship_f[g, s, SVY]
            own = obs[g, s]
            own[OBS_OWN] = x / w
            own[OBS_OWN + 1] = y / h
            own[OBS_OWN + 2] = _clip1(vx / maxv)
            own[OBS_OWN + 3] = _clip1(vy / maxv)
            own[OBS_OWN + 4] = ship_f[g, s, SSIN]
            own[OBS_OWN + 5] = ship_f[g, s, SCOS]
            own[OBS_OWN + 6] = ship_f[g, s, SFUEL] / max(p[P_FUEL], 1.0)
            own[OBS_OWN + 7] = ship_i[g, s, AMMO] / max(p[P_AMMO], 1.0)
            own[OBS_OWN + 8] = ship_i[g, s, COOLDOWN] / p[P_COOLDOWN]
            if ship_i[g, o, HYPER_HIDDEN] > 0 and p[P_HSEEN] == 0.0:
                # An opponent in hyperspace is invisible (unless the rules show it).
                for k in range(OBS_OPPONENT, OBS_STAR):
                    own[k] = 0.0
            else:
                own[OBS_OPPONENT] = _wrap_delta(ship_f[g, o, SX] - x, w) / hw
                own[OBS_OPPONENT + 1] = _wrap_delta(ship_f[g, o, SY] - y, h) / hh
                own[OBS_OPPONENT + 2] = _clip1((ship_f[g, o, SVX] - vx) / (2.0 * maxv))
                own[OBS_OPPONENT + 3] = _clip1((ship_f[g, o, SVY] - vy) / (2.0 * maxv))
                own[OBS_OPPONENT + 4] = ship_f[g, o, SSIN]
                own[OBS_OPPONENT + 5] = ship_f[g, o, SCOS]
            if star:
                sdx = _wrap_delta(0.5 * w - x, w)
                sdy = _wrap_delta(0.5 * h - y, h)
                own[OBS_STAR] = sdx / hw
                own[OBS_STAR + 1] = sdy / hh
                dist = math.sqrt(sdx * sdx + sdy * sdy)
                own[OBS_STAR + 2] = star_r / max(dist, star_r) if star_r > 0.0 else 0.0
            else:
                own[OBS_STAR] = 0.0
                own[OBS_STAR + 1] = 0.0
                own[OBS_STAR + 2] = 0.0
            # The three nearest live enemy torpedoes, nearest first (insertion into a short list).
            for j in range(NEAREST_TORPEDOES):
                best_d[j] = np.inf
                best_k[j] = -1
            for k in range(nslots):
                if torp_t[g, o, k] > 0:
                    dx = _wrap_delta(torp_f[g, o, k, 0] - x, w)
                    dy = _wrap_delta(torp_f[g, o, k, 1] - y, h)
                    d2 = dx * dx + dy * dy
                    j = NEAREST_TORPEDOES - 1
                    if d2 < best_d[j]:
                        while j > 0 and d2 < best_d[j - 1]:
                            best_d[j] = best_d[j - 1]
                            best_k[j] = best_k[j - 1]
                            j -= 1
                        best_d[j] = d2
                        best_k[j] = k
            for j in range(NEAREST_TORPEDOES):
                base = OBS_TORPEDOES + 4 * j
                k = best_k[j]
                if k < 0:
                    for c in range(4):
                        obs[g, s, base + c] = 0.0
                else:
                    obs[g, s, base] = _wrap_delta(torp_f[g, o, k, 0] - x, w) / hw
                    obs[g, s, base + 1] = _wrap_delta(torp_f[g, o, k, 1] - y, h) / hh
                    obs[g, s, base + 2] = _clip1((torp_f[g, o, k, 2] - vx) / (2.0 * maxv))
                    obs[g, s, base + 3] = _clip1((torp_f[g, o, k, 3] - vy) / (2.0 * maxv))
            first = OBS_MASK  # the mask's first column
            if p[P_HYPER] != 0.0:
                # Jumps left decide where a jump from an orbit lands and how likely one fails.
                own[OBS_JUMPS] = (p[P_JUMPS] - ship_i[g, s, JUMPS]) / p[P_JUMPS]
                own[OBS_JUMPS + 1] = (p[P_JUMPS] - ship_i[g, o, JUMPS]) / p[P_JUMPS]
                first = OBS_MASK + JUMP_COLUMNS
            valid = _valid_actions(g, s, ship_f, ship_i, p)
            for a in range(nact):
                obs[g, s, first + a] = (valid >> a) & 1


class GameBatch:
    """N games' state arrays plus the kernels' entry points. Owned by the environments."""

    def __init__(self, num_games: int, config: GameConfig | None = None,
                 reward_config: RewardConfig | None = None, count_dodges: bool = True):
        if not isinstance(num_games, (int, np.integer)) or num_games < 1:
            raise UserError(f"num_games={num_games!r} is invalid: must be an integer >= 1")
        self.config = config if config is not None else GameConfig()
        self.reward_config = reward_config if reward_config is not None else RewardConfig()
        if not isinstance(self.config, GameConfig):
            raise UserError(f"config must be a GameConfig, got {type(self.config).__name__}")
        if not isinstance(self.reward_config, RewardConfig):
            raise UserError(
                f"reward_config must be a RewardConfig, got {type(self.reward_config).__name__}")
        if not _warm["done"]:
            _warm["done"] = True
            _run_warm_ups(list(_warm_ups))
        n = int(num_games)
        self.n = n
        slots = self.config.torpedo_slots
        self.params = make_params(self.config)
        self.reward_params = make_reward_params(self.reward_config)
        self.ship_f = np.zeros((n, 2, SF), dtype=np.float64)
        self.ship_i = np.zeros((n, 2, SI), dtype=np.int64)
        self.torp_f = np.zeros((n, 2, slots, 4), dtype=np.float64)
        self.torp_t = np.zeros((n, 2, slots), dtype=np.int64)
        self.game_i = np.zeros((n, GI), dtype=np.int64)
        self.rng = np.zeros(n, dtype=np.uint64)
        # Statistics of each game (dodges), and each torpedo's closest approach to its target:
        # not the game's state (the physics never reads them), so replays and plans ignore them.
        self.stats = np.zeros((n, 2, NS), dtype=np.int64)
        # Counting dodges tracks every enemy torpedo's distance every frame: matches and
        # datasets (GameResult) want it; a learner's or a planner's batch may not.
        self.count_dodges = bool(count_dodges)
        self.torp_near = np.full((n, 2, slots), np.inf)
        self.obs = np.zeros((n, 2, self.config.obs_dim), dtype=np.float32)
        self.mask_columns = slice(self.config.mask_start, None)  # obs[..., mask_columns]
        self.reward = np.zeros((n, 2), dtype=np.float64)
        self.terminated = np.zeros(n, dtype=np.bool_)
        self.truncated = np.zeros(n, dtype=np.bool_)
        # What step_games reads and writes besides the actions, gathered once (a batch's arrays
        # are written in place, never replaced) rather than looked up again at every step.
        self._step_state = (self.ship_f, self.ship_i, self.torp_f, self.torp_t, self.game_i,
                            self.rng, self.params, self.reward_params, self.reward,
                            self.terminated, self.truncated, self.torp_near, self.stats)
        self._all = np.ones(n, dtype=np.bool_)
        self._no_seed = np.zeros(n, dtype=np.bool_)
        self._seeds = np.zeros(n, dtype=np.uint64)
        # Unseeded games still start from a defined stream: game i of a batch behaves like seed i.
        for g in range(n):
            self.rng[g] = seed_to_state(g)

    def reset(self, mask: np.ndarray | None = None, seeds=None) -> None:
        """Reset games (all by default). seeds: one int per game, or None to continue each stream."""
        mask = self._all if mask is None else mask
        if seeds is None:
            use = self._no_seed
        else:
            use = mask
            for g in np.flatnonzero(mask):
                self._seeds[g] = seed_to_state(int(seeds[g]))
        reset_games(mask, self._seeds, use, self.ship_f, self.ship_i, self.torp_f, self.torp_t,
                    self.game_i, self.rng, self.params, self.stats)

    def step(self, actions: np.ndarray) -> int:
        """Advance every running game by one decision; returns how many games ended."""
        # numba compiles a step of its own for each layout and integer type it is handed: one
        # layout keeps a transposed or narrower array from costing a compile of many seconds.
        actions = np.ascontiguousarray(actions, dtype=np.int64)
        # Left out, `dodges` is numba's omitted argument, a constant False compiled into its own
        # version of the step, so the count's code is gone from it rather than skipped.
        if self.count_dodges:
            return step_games(actions, *self._step_state, True)
        return step_games(actions, *self._step_state)

    def observe(self, mask: np.ndarray | None = None) -> np.ndarray:
        """Write the observations of the games in mask (all by default); returns all of them."""
        if mask is None:
            write_observations(self.ship_f, self.ship_i, self.torp_f, self.torp_t, self.params,
                               self.obs)
        else:
            write_observations(self.ship_f, self.ship_i, self.torp_f, self.torp_t, self.params,
                               self.obs, mask)
        return self.obs

    def place_ship(self, g: int, s: int, x: float, y: float, vx: float = 0.0, vy: float = 0.0,
                   heading: float = 0.0) -> None:
        """Put ship s of game g at a position, velocity and heading (scenarios and tests)."""
        f = self.ship_f[g, s]
        f[SX], f[SY], f[SVX], f[SVY] = x % self.config.width, y % self.config.height, vx, vy
        f[SANG] = heading % TWO_PI
        f[SCOS], f[SSIN] = math.cos(f[SANG]), math.sin(f[SANG])
        f[SANGV] = 0.0

    def state_dict(self) -> dict[str, np.ndarray]:
        """A copy of the whole state (for replays, tests and snapshots)."""
        return {k: getattr(self, k).copy()
                for k in ("ship_f", "ship_i", "torp_f", "torp_t", "game_i", "rng")}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        for k, v in state.items():
            getattr(self, k)[...] = v


@jit_warm_up
def _warm_up_engine() -> None:
    # Both versions of the step (matches count dodges, the envs do not) and of the observation
    # (all games, or those an autoreset started), so that no later first step compiles unseen.
    for dodges in (True, False):
        batch = GameBatch(1, count_dodges=dodges)
        batch.reset(seeds=np.zeros(1, dtype=np.int64))
        batch.observe()
        batch.observe(np.ones(1, dtype=np.bool_))
        batch.step(np.zeros((1, 2), dtype=np.int64))
