"""Scripted pilots: idle, random and heuristic (easy, medium, hard), all batched (docs/game.md).

A pilot sees only the documented observation plus the game's constants, and acts on a batch:
`act(obs (N, D)) -> actions (N,)`. easy turns toward the opponent and fires when roughly
aligned, three decisions late; medium leads the target and avoids the star; hard predicts its
own orbit and the target's under gravity, shoots down or sidesteps torpedoes, and rations its
ammunition. `heuristic:LEVEL@aim=A@react=R` changes a level's aim and reaction."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ..config import GameConfig, mask_start
from ..game.ballistics import coast, intercept_time
from ..game.engine import Action, jit_warm_up
from ..game.pilot import Pilot
from ..util.errors import UserError

SCRIPTED_SPECS = ("idle", "random", "heuristic:easy", "heuristic:medium", "heuristic:hard")
LEVELS = ("easy", "medium", "hard")
LEVEL_CODE = {"easy": 0, "medium": 1, "hard": 2}
REACTION_DELAY = {"easy": 3, "medium": 0, "hard": 0}  # decisions


class IdlePilot(Pilot):
    """Never acts: a sitting duck that only falls (or orbits)."""

    name = "idle"

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        return np.zeros(obs.shape[0], dtype=np.int64)


class RandomPilot(Pilot):
    """Uniform among the valid actions. Each game has its own counter-based stream, so a game's
    choices depend only on its seed, not on the batch it is played in."""

    name = "random"

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self._keys = np.zeros(0, dtype=np.uint64)
        self._count = np.zeros(0, dtype=np.uint64)

    def _ensure(self, n: int) -> None:
        if self._keys.shape[0] != n:
            self._keys = (np.arange(n, dtype=np.uint64) + np.uint64(self.seed)) * np.uint64(
                0x9E3779B97F4A7C15)
            self._count = np.zeros(n, dtype=np.uint64)

    def reset(self, mask=None, seeds=None) -> None:
        if seeds is None:
            return
        seeds = np.asarray(seeds, dtype=np.uint64)
        self._ensure(seeds.shape[0])
        m = np.ones(seeds.shape[0], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        self._keys[m] = seeds[m]
        self._count[m] = 0

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        n = obs.shape[0]
        self._ensure(n)
        out = np.empty(n, dtype=np.int64)
        # One layout and type, as the heuristic's: numba compiles a kernel for each it meets.
        _random_kernel(np.ascontiguousarray(obs, dtype=np.float32), mask_start(obs.shape[1]),
                       self._keys, self._count, out)
        return out


@nb.njit(cache=True, error_model="numpy")
def _random_kernel(obs, start, keys, count, out):
    nact = obs.shape[1] - start
    for g in range(obs.shape[0]):
        count[g] += np.uint64(1)
        z = keys[g] + count[g] * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
        valid = 0
        for a in range(nact):
            if obs[g, start + a] > 0.5:
                valid += 1
        if valid == 0:
            out[g] = 0
            continue
        pick = int(z % np.uint64(valid))
        for a in range(nact):
            if obs[g, start + a] > 0.5:
                if pick == 0:
                    out[g] = a
                    break
                pick -= 1


@nb.njit(cache=True, inline="always")
def _wrap_pi(a):
    while a > math.pi:
        a -= 2.0 * math.pi
    while a < -math.pi:
        a += 2.0 * math.pi
    return a


@nb.njit(cache=True, inline="always")
def _steer(err, rot_step):
    """Rotate toward a heading error (rad); 0 when within half a decision's rotation."""
    if err > 0.5 * rot_step:
        return Action.ROTATE_RIGHT
    if err < -0.5 * rot_step:
        return Action.ROTATE_LEFT
    return Action.NONE


# Indices into the constants array given to the heuristic kernel.
(K_W, K_H, K_MAXV, K_TSPEED, K_GM, K_STAR_R, K_HIT_R, K_TLIFE, K_ROT, K_SKIP, K_THRUST,
 K_AMMO, K_AIM, K_SPAWN) = range(14)
ORBIT_DT = 4  # frames per step when the hard pilot predicts its own orbit
LEAD_DT = 2  # frames per step when it predicts the target's orbit for a lead


def _constants(cfg: GameConfig, aim: float = 1.0) -> np.ndarray:
    return np.array([cfg.width, cfg.height, cfg.max_speed, cfg.torpedo_speed,
                     cfg.effective_gravity, cfg.star_radius, cfg.hit_radius,
                     cfg.torpedo_lifetime, cfg.rotation_speed, cfg.frame_skip, cfg.thrust_power,
                     cfg.max_ammo, aim, cfg.torpedo_spawn_offset],
                    dtype=np.float64)


@nb.njit(cache=True, error_model="numpy")
def _orbits(obs, k, nearest, lead_t, lead_x, lead_y):
    """The hard pilot's two predictions under gravity, for every row at once. `nearest[g]`: the
    least squared distance to the star over its own coasting orbit the next 120 frames.
    `lead_t[g]`: the first multiple of LEAD_DT frames within a torpedo's life at which one fired
    now reaches the target on its orbit (-1 if none), and `lead_x/y[g]` where the target is then,
    relative to the launch point (which moves on with the ship's velocity).

    Rows are the inner loop: one row's steps wait on each other and different rows' do not, so
    the processor overlaps them; each row's values are those of stepping it alone."""
    hw = 0.5 * k[K_W]
    hh = 0.5 * k[K_H]
    maxv = k[K_MAXV]
    gm = k[K_GM]
    n = obs.shape[0]
    ox = np.empty(n)  # own position relative to the star, own velocity
    oy = np.empty(n)
    vx = np.empty(n)
    vy = np.empty(n)
    px = np.empty(n)
    py = np.empty(n)
    ux = np.empty(n)
    uy = np.empty(n)
    for g in range(n):
        ox[g], oy[g] = -(obs[g, 15] * hw), -(obs[g, 16] * hh)
        vx[g], vy[g] = obs[g, 2] * maxv, obs[g, 3] * maxv
        px[g], py[g], ux[g], uy[g] = ox[g], oy[g], vx[g], vy[g]
        nearest[g] = px[g] * px[g] + py[g] * py[g]
    for _ in range(120 // ORBIT_DT):
        for g in range(n):
            px[g], py[g], ux[g], uy[g] = coast(px[g], py[g], ux[g], uy[g], gm, ORBIT_DT)
            r2 = px[g] * px[g] + py[g] * py[g]
            if r2 < nearest[g]:
                nearest[g] = r2
    for g in range(n):  # the target: its position and velocity relative to own, plus own
        px[g] = ox[g] + obs[g, 9] * hw
        py[g] = oy[g] + obs[g, 10] * hh
        ux[g] = vx[g] + obs[g, 11] * 2.0 * maxv
        uy[g] = vy[g] + obs[g, 12] * 2.0 * maxv
        lead_t[g] = -1.0
    left = n
    for f in range(LEAD_DT, int(k[K_TLIFE]), LEAD_DT):
        reach = (k[K_SPAWN] + k[K_TSPEED] * f) ** 2
        for g in range(n):
            if lead_t[g] < 0.0:
                px[g], py[g], ux[g], uy[g] = coast(px[g], py[g], ux[g], uy[g], gm, LEAD_DT)
                ddx = px[g] - ox[g] - vx[g] * f
                ddy = py[g] - oy[g] - vy[g] * f
                if ddx * ddx + ddy * ddy <= reach:
                    lead_t[g], lead_x[g], lead_y[g] = f, ddx, ddy
                    left -= 1
        if left == 0:
            break


@nb.njit(cache=True, error_model="numpy")
def _heuristic_kernel(obs, start, level, k, out):
    hw = 0.5 * k[K_W]
    hh = 0.5 * k[K_H]
    maxv = k[K_MAXV]
    tspeed = k[K_TSPEED]
    gm = k[K_GM]
    star_r = k[K_STAR_R]
    hit_r = k[K_HIT_R]
    tlife = k[K_TLIFE]
    skip = k[K_SKIP]
    rot_step = k[K_ROT] * skip
    # Every game's orbits at the hard level under gravity; none otherwise.
    n = obs.shape[0] if level == 2 and gm > 0.0 else 0
    nearest, lead_t, lead_x, lead_y = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    if n:
        _orbits(obs, k, nearest, lead_t, lead_x, lead_y)
    for g in range(obs.shape[0]):
        o = obs[g]
        can_thrust = o[start + Action.THRUST] > 0.5
        can_fire = o[start + Action.FIRE] > 0.5
        if o[start + Action.NONE] > 0.5 and not (
                can_thrust or can_fire or o[start + Action.ROTATE_LEFT] > 0.5
                or o[start + Action.ROTATE_RIGHT] > 0.5):
            out[g] = Action.NONE  # dead or in hyperspace: only drift is allowed
            continue
        heading = math.atan2(o[4], o[5])
        vx = o[2] * maxv
        vy = o[3] * maxv
        fuel = o[6]
        ammo = o[7]
        opp_visible = (o[13] * o[13] + o[14] * o[14]) > 0.5
        dx = o[9] * hw
        dy = o[10] * hh
        rvx = o[11] * 2.0 * maxv
        rvy = o[12] * 2.0 * maxv
        dist = math.sqrt(dx * dx + dy * dy)
        # --- star danger --------------------------------------------------------------------
        star_dx = o[15] * hw  # star minus own position
        star_dy = o[16] * hh
        danger_star = False
        escape_angle = 0.0
        if gm > 0.0:
            qx = -star_dx  # own position relative to the star
            qy = -star_dy
            if level == 1:
                r = math.sqrt(qx * qx + qy * qy)
                inward = vx * star_dx + vy * star_dy > 0.0
                if r < star_r + 90.0 and inward:
                    danger_star = True
                    escape_angle = math.atan2(qy, qx)
            elif level == 2:
                # Its coasting orbit 120 frames ahead (`_orbits`: symplectic Euler as in the
                # engine, at a 4-frame step: ample for a warning, and 4x cheaper).
                margin = star_r + 40.0
                if nearest[g] < margin * margin:
                    danger_star = True
                    # Burn along the orbit (raises the periapsis) and a little outward.
                    cross = qx * vy - qy * vx
                    sense = 1.0 if cross >= 0.0 else -1.0
                    r = math.sqrt(qx * qx + qy * qy) + 1e-9
                    tx = -qy / r * sense
                    ty = qx / r * sense
                    escape_angle = math.atan2(ty + 0.6 * qy / r, tx + 0.6 * qx / r)
        if danger_star and can_thrust:
            err = _wrap_pi(escape_angle - heading)
            if abs(err) < 0.6:
                out[g] = Action.THRUST
            else:
                out[g] = _steer(err, rot_step)
            continue
        # --- incoming torpedoes (hard) ------------------------------------------------------
        if level == 2:
            best_t = 1e9
            tpx = 0.0
            tpy = 0.0
            tux = 0.0
            tuy = 0.0
            for j in range(3):
                b = 18 + 4 * j
                px = o[b] * hw
                py = o[b + 1] * hh
                ux = o[b + 2] * 2.0 * maxv
                uy = o[b + 3] * 2.0 * maxv
                uu = ux * ux + uy * uy
                if uu < 1e-9:
                    continue
                t = -(px * ux + py * uy) / uu
                mx = px + ux * t
                my = py + uy * t
                if 0.0 < t < 90.0 and mx * mx + my * my < (1.5 * hit_r) ** 2 and t < best_t:
                    best_t = t
                    tpx = px
                    tpy = py
                    tux = ux
                    tuy = uy
            if best_t < 1e9:
                # Facing it: shoot it down (torpedoes destroy each other).
                tangle = math.atan2(tpy, tpx)
                terr = _wrap_pi(tangle - heading)
                if can_fire and abs(terr) < 0.15:
                    out[g] = Action.FIRE
                    continue
                if can_thrust and best_t > 45.0:
                    # Far enough to get out of its way: thrust away from where it will pass.
                    t = best_t
                    mx = tpx + tux * t
                    my = tpy + tuy * t
                    if mx * mx + my * my < 1.0:
                        mx = -tuy
                        my = tux
                    dodge = math.atan2(-my, -mx)
                    err = _wrap_pi(dodge - heading)
                    if abs(err) < 0.5:
                        out[g] = Action.THRUST
                        continue
        if not opp_visible:
            out[g] = Action.NONE
            continue
        # --- attack -------------------------------------------------------------------------
        t_hit = dist / tspeed
        ax = dx
        ay = dy
        if level == 2 and gm > 0.0:
            # Gravity bends the target's path by more than a hit radius over a long torpedo flight:
            # aim where its orbit (`_orbits`) meets a torpedo (they fly straight, 1962).
            if lead_t[g] > 0.0:
                t_hit, ax, ay = lead_t[g], lead_x[g], lead_y[g]
        elif level >= 1:
            # Intercept in straight lines, torpedoes counted from the ship's centre.
            t = intercept_time(dx, dy, rvx, rvy, tspeed, 0.0)
            if t < math.inf:
                t_hit = t
                ax = dx + rvx * t
                ay = dy + rvy * t
        # A weaker aim takes only part of the lead: it shoots nearer where the target is now.
        ax = dx + k[K_AIM] * (ax - dx)
        ay = dy + k[K_AIM] * (ay - dy)
        aim = math.atan2(ay, ax)
        err = _wrap_pi(aim - heading)
        adist = math.sqrt(ax * ax + ay * ay)
        fire = False
        if level == 0:
            fire = can_fire and abs(err) < 0.2 and dist < 330.0
        elif level == 1:
            tol = max(math.atan2(hit_r, adist), 0.05) * 1.5
            fire = can_fire and abs(err) < tol and t_hit < 0.9 * tlife
        else:
            # Ammunition discipline: fire only when the miss across the line of fire is within a
            # few hit radii (tighter fires too rarely, looser wastes torpedoes), and keep two
            # torpedoes for close range.
            miss = adist * math.sin(abs(err)) if abs(err) < 1.5 else 1e9
            reserve_ok = ammo * k[K_AMMO] > 2.0 or t_hit < 30.0
            fire = can_fire and miss < 3.0 * hit_r and t_hit < 0.95 * tlife and reserve_ok
        thrust = False
        if level == 1 and can_thrust and abs(err) < 0.3:
            # Medium closes in when out of range. Hard holds its orbit and lets the opponent come:
            # chasing flies into the opponent's line of fire.
            thrust = dist > 450.0 and fuel > 0.3
        if fire and thrust:
            out[g] = Action.THRUST_FIRE
        elif fire:
            out[g] = Action.FIRE
        elif thrust:
            out[g] = Action.THRUST
        else:
            out[g] = _steer(err, rot_step)


class HeuristicPilot(Pilot):
    """Rule-based pilot at level easy, medium or hard (see the module docstring). `aim` is the
    share of the lead it takes when it shoots (1: all of it; 0: at where the target is now)."""

    def __init__(self, level: str = "medium", config: GameConfig | None = None,
                 aim: float = 1.0):
        if level not in LEVEL_CODE:
            raise UserError(f"heuristic level {level!r} is unknown; use one of {LEVELS}")
        if not 0.0 <= aim <= 1.0:
            raise UserError(f"aim={aim} is invalid: must be from 0 to 1")
        self.level = level
        self.aim = float(aim)
        self.name = f"heuristic:{level}" + (f"@aim={aim:g}" if aim != 1.0 else "")
        self.config = config if config is not None else GameConfig()
        self._k = _constants(self.config, self.aim)
        self._code = LEVEL_CODE[level]

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        out = np.empty(obs.shape[0], dtype=np.int64)
        _heuristic_kernel(np.ascontiguousarray(obs, dtype=np.float32), mask_start(obs.shape[1]),
                          self._code, self._k, out)
        return out


class DelayedPilot(Pilot):
    """Wraps a pilot so it acts on the observation of `delay` decisions ago (reaction time). A
    fractional delay alternates the whole delays on either side, in the share the fraction
    says (1.25: two decisions late one decision in four, one late otherwise), counted over the
    batch's decisions rather than drawn, so that it stays a pilot of its spec with no random
    stream (a game that starts mid-batch joins the count where it stands)."""

    def __init__(self, pilot, delay: float):
        if not delay >= 0:
            raise UserError(f"delay={delay} is invalid: must be >= 0")
        self.pilot = pilot
        self.delay = float(delay)
        self.size = math.ceil(self.delay) + 1  # observations kept a game
        self.name = pilot.name
        self._hist: np.ndarray | None = None  # (size, N, D) ring buffer
        self._pos = 0
        self._due = 0.0  # the fraction's share of late decisions owed so far
        self._fresh = np.zeros(0, dtype=bool)

    def reset(self, mask=None, seeds=None) -> None:
        self.pilot.reset(mask, seeds)
        if self._hist is None:
            return
        if mask is None:
            self._fresh[:] = True
        else:
            self._fresh |= np.asarray(mask, dtype=bool)

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        # Every row, running or not: the history is per game row and must stay in step.
        if self.delay == 0:
            return self.pilot.act(obs)
        n = obs.shape[0]
        if self._hist is None or self._hist.shape[1] != n:
            self._hist = np.repeat(obs[None].astype(np.float32), self.size, axis=0)
            self._fresh = np.zeros(n, dtype=bool)
            self._pos, self._due = 0, 0.0
        if self._fresh.any():
            # A new game starts with a history that is all its first observation.
            self._hist[:, self._fresh] = obs[self._fresh]
            self._fresh[:] = False
        self._pos = (self._pos + 1) % self.size
        self._hist[self._pos] = obs
        late = math.floor(self.delay)
        self._due += self.delay - late
        if self._due >= 1.0 - 1e-9:
            self._due -= 1.0
            late += 1
        return self.pilot.act(self._hist[(self._pos - late) % self.size])


def scripted_pilot(spec: str, config: GameConfig | None = None, seed: int = 0,
                   aim: float = 1.0, react: float | None = None):
    """The scripted pilot a spec names ('idle', 'random', 'heuristic[:easy|medium|hard]'), or None
    when the spec names no scripted pilot. A heuristic pilot takes the share of the lead it aims
    with (`aim`) and the decisions it reacts late (`react`, else its level's own), both part of
    its name when not its level's own."""
    s = spec.strip().lower()
    if s == "idle":
        return IdlePilot()
    if s == "random":
        return RandomPilot(seed)
    if s == "heuristic":
        s = "heuristic:medium"
    level = s.split(":", 1)[1] if s.startswith("heuristic:") else None
    if level not in LEVEL_CODE:
        return None
    pilot = HeuristicPilot(level, config, aim)
    delay = REACTION_DELAY[level] if react is None else react
    if delay != REACTION_DELAY[level]:
        pilot.name += f"@react={delay:g}"
    return DelayedPilot(pilot, delay) if delay else pilot


@jit_warm_up
def _warm_up_pilots() -> None:
    config = GameConfig()
    obs = np.zeros((1, config.obs_dim), dtype=np.float32)
    obs[:, config.mask_start:] = 1.0
    HeuristicPilot("hard", config).act(obs)
    RandomPilot(0).act(obs)
