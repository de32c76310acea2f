"""`rllib_sw:PATH`: the agent of MatthewCWeston/rllib_sw, flying in our engine.

That project trains, with RLlib's PPO, one attention layer over the objects of its game (own
ship, opponent, every torpedo of each side) and releases its checkpoints. A checkpoint's
`module_state.pkl` (a pickled OrderedDict of numpy arrays) is all this pilot reads: PATH is that
file or a checkpoint folder holding it (`checkpoints_release/pfsp`, or `.../1111`, where it lies
under `learner_group/learner/rl_module/my_policy`). The repository has no licence, so nothing of
it ships here: docs/strength.md says where a user gets the files.

- **Loading**: the file is a pickle, so it is read by an unpickler that admits only what such a
  file holds (an OrderedDict, numpy arrays and their dtypes); anything else is refused in one
  line before any object is built. The arrays must have the layout below, checked by name and
  shape.
- **The network**, rebuilt in plain torch from the arrays (no Ray at play time): a linear
  embedding per kind of object, one post-norm transformer layer (four heads, GELU feed-forward),
  a mean over the objects present, then RLlib's MLP head (LayerNorm, LeakyReLU) giving the logits
  of MultiDiscrete([2, 3, 2, 2]): thrust, rotate (none, left, right), fire, hyperspace.
- **Its view**, computed from our engine's state (`attach`): positions in its units (the screen
  is sqrt(2) of them wide, the star at the centre), rotated into the ship's frame as its
  environment does, with its engineered features (`peer_observations`).
- **Its actions**: with `[game] controls = "switches"` played as they are (hyperspace is both
  rotate switches, pressed only when a jump can be made, as its environment ignores the press
  otherwise); with the six actions, the first of hyperspace, thrust and fire, fire, thrust,
  rotate, drift that the mask allows.

Greedy (each branch's argmax) by default; `deterministic=False` samples each branch from a
stream seeded by the pilot's seed, so a match gives the same games again."""

from __future__ import annotations

import collections
import io
import math
import pickle
from pathlib import Path

import numpy as np

from ..config import GameConfig
from ..game import engine
from ..game.controls import decode, encode
from ..game.pilot import Pilot
from ..util.errors import UserError

# The peer's constants (its environment's, in its units): the half screen, and what its view
# divides by.
WRAP = math.sqrt(0.5)
TORPEDOES, RELOAD, FUEL, CHARGES, RECHARGE, REENTRY, LIFE = 32, 16, 1024, 8, 224, 96, 96
# Where the arrays of a module_state.pkl lie in a checkpoint folder of the peer's.
MODULE_PATHS = ("module_state.pkl", "learner_group/learner/rl_module/my_policy/module_state.pkl")
# What each kind of object is described by: own ship, opponent, a torpedo (its view's widths).
WIDTHS = {"self": 16, "opponent": 22, "missiles_friendly": 9, "missiles_hostile": 9}
HEADS = 4
BRANCHES = (2, 3, 2, 2)

_ADMITTED = {("collections", "OrderedDict"): collections.OrderedDict,
             ("numpy", "dtype"): np.dtype,
             ("numpy.core.numeric", "_frombuffer"): None,
             ("numpy._core.numeric", "_frombuffer"): None}


class _ArraysOnly(pickle.Unpickler):
    """Builds only an OrderedDict of numpy arrays: any other global is refused by name."""

    def find_class(self, module: str, name: str):
        if (module, name) not in _ADMITTED:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which a module_state.pkl "
                                         "never holds")
        if name == "_frombuffer":
            return _frombuffer
        return _ADMITTED[(module, name)]


def _frombuffer(buf, dtype, shape, order):
    """numpy's own rebuild of a pickled array, taking bytes and a dtype only."""
    if not isinstance(dtype, np.dtype) or dtype.hasobject:
        raise pickle.UnpicklingError("an array of objects is not weights")
    array = np.frombuffer(bytes(buf), dtype=dtype)
    return array.reshape(tuple(int(d) for d in shape), order=order).copy()


def module_file(path: Path) -> Path:
    """The module_state.pkl that PATH names (the file, or a checkpoint folder holding it);
    ValueError names what to give."""
    path = Path(path)
    if path.is_dir():
        for rel in MODULE_PATHS:
            if (path / rel).is_file():
                return path / rel
        raise UserError(f"{path} holds no module_state.pkl; give the file, or a checkpoint "
                        "folder of rllib_sw such as checkpoints_release/pfsp")
    if not path.is_file():
        raise UserError(f"no such file {path}; give an rllib_sw module_state.pkl or its folder")
    return path


def load_module_state(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a module_state.pkl, read by the restricted unpickler and checked against
    the network's layout; ValueError in one line otherwise."""
    data = module_file(path).read_bytes()
    try:
        state = _ArraysOnly(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
            IndexError, KeyError, MemoryError) as exc:
        raise UserError(f"{path} is not an rllib_sw module_state.pkl: {exc}") from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, np.ndarray)
                                              for k, v in state.items()):
        raise UserError(f"{path} is not an rllib_sw module_state.pkl: it holds no arrays by "
                        "name")
    for key, shape in _layout(state).items():
        have = state.get(key)
        if have is None or have.shape != shape:
            found = "missing" if have is None else f"of shape {have.shape}"
            raise UserError(f"{path} is not an rllib_sw actor of the released layout: {key} is "
                            f"{found}, not {shape}")
    return state


A = "encoder.actor_encoder."


def _layout(state: dict) -> dict[str, tuple]:
    """The actor's arrays and their shapes, its sizes read from the file itself."""
    emb = state.get(A + "embs.self.weight", np.zeros((128, 16))).shape[0]
    ff = state.get(A + "mha.0.ff.0.weight", np.zeros((1024, emb))).shape[0]
    hidden = state.get("pi.net.mlp.0.weight", np.zeros((256, emb))).shape[0]
    out = {A + "mha.0.mha.in_proj_weight": (3 * emb, emb), A + "mha.0.mha.in_proj_bias": (3 * emb,),
           A + "mha.0.mha.out_proj.weight": (emb, emb), A + "mha.0.mha.out_proj.bias": (emb,),
           A + "mha.0.ff.0.weight": (ff, emb), A + "mha.0.ff.0.bias": (ff,),
           A + "mha.0.ff.3.weight": (emb, ff), A + "mha.0.ff.3.bias": (emb,),
           "pi.net.mlp.0.weight": (hidden, emb), "pi.net.mlp.3.weight": (hidden, hidden),
           "pi.net.mlp.6.weight": (sum(BRANCHES), hidden), "pi.net.mlp.6.bias": (sum(BRANCHES),)}
    for norm in ("norm_attn", "norm_ff"):
        out[A + f"mha.0.{norm}.weight"] = out[A + f"mha.0.{norm}.bias"] = (emb,)
    for i in (0, 1, 3, 4):
        out[f"pi.net.mlp.{i}.bias"] = (hidden,)
    out["pi.net.mlp.1.weight"] = out["pi.net.mlp.4.weight"] = (hidden,)
    for kind, width in WIDTHS.items():
        out[A + f"embs.{kind}.weight"] = (emb, width)
        out[A + f"embs.{kind}.bias"] = (emb,)
    return out


def build_actor(state: dict[str, np.ndarray]):
    """The actor as a torch module whose state dict is the file's actor arrays."""
    import torch
    from torch import nn

    emb = state[A + "embs.self.weight"].shape[0]
    ff = state[A + "mha.0.ff.0.weight"].shape[0]
    hidden = state["pi.net.mlp.0.weight"].shape[0]

    class Actor(nn.Module):
        def __init__(self):
            super().__init__()
            self.embs = nn.ModuleDict({k: nn.Linear(w, emb) for k, w in WIDTHS.items()})
            self.mha = nn.MultiheadAttention(emb, HEADS, batch_first=True)
            self.norm_attn, self.norm_ff = nn.LayerNorm(emb), nn.LayerNorm(emb)
            # Indices as the file names them (its dropout layers sit at 2 and 4).
            self.ff = nn.Sequential(nn.Linear(emb, ff), nn.GELU(), nn.Identity(),
                                    nn.Linear(ff, emb))
            # RLlib's head normalizes with eps 1e-3, not torch's default.
            self.pi = nn.Sequential(nn.Linear(emb, hidden), nn.LayerNorm(hidden, eps=1e-3),
                                    nn.LeakyReLU(), nn.Linear(hidden, hidden),
                                    nn.LayerNorm(hidden, eps=1e-3), nn.LeakyReLU(),
                                    nn.Linear(hidden, sum(BRANCHES)))

        def forward(self, tokens, present):
            """tokens (N, T, emb) embedded, present (N, T) bool: the logits (N, 9)."""
            x, _ = self.mha(tokens, tokens, tokens, key_padding_mask=~present,
                            need_weights=False)
            x = self.norm_attn(x + tokens)
            # Only the objects present are pooled, so only theirs go through the feed-forward
            # (most torpedo slots are empty; a planner asks about thousands of copies).
            inner = x[present]
            x = torch.zeros_like(x)
            x[present] = self.norm_ff(self.ff(inner) + inner)
            weight = present.unsqueeze(-1).to(x.dtype)
            pooled = (x * weight).sum(1) / weight.sum(1)
            return self.pi(pooled)

    actor = Actor()
    own = {}
    for key in actor.state_dict():
        if key.startswith("pi."):
            name = "pi.net.mlp." + key[3:]
        elif key.startswith("mha."):
            name = A + "mha.0.mha." + key[4:]
        elif key.startswith(("norm_", "ff.")):
            name = A + "mha.0." + key
        else:
            name = A + key
        own[key] = torch.from_numpy(np.ascontiguousarray(state[name], dtype=np.float32))
    actor.load_state_dict(own)
    return actor.eval()


# ----------------------------------------------------------------------------------------------
# The peer's view, from our engine's state.

def _rotate(x, y, angle):
    """(x, y) turned by `angle` radians (arrays broadcast)."""
    c, s = np.cos(angle), np.sin(angle)
    return x * c - y * s, y * c + x * s


def _wrapped(d):
    return np.where(d > WRAP, d - 2 * WRAP, np.where(d < -WRAP, d + 2 * WRAP, d))


def _edge(px, py, deg):
    """The peer's distance from a point to the screen's edge along a heading, signed as its
    environment signs it (the nearest crossing of the line through the point)."""
    # Its arithmetic, step for step: along a vertical heading the crossing's side of the point
    # is decided by rounding, so the angle is held as it holds it (degrees, then * pi / 180).
    a = deg * np.pi / 180
    m = np.tan(a) + 1e-12
    i = py - m * px
    xs = np.stack([(WRAP - i) / m, (-WRAP - i) / m, np.full_like(px, WRAP),
                   np.full_like(px, -WRAP)], -1)
    ys = np.stack([np.full_like(px, WRAP), np.full_like(px, -WRAP), m * WRAP + i,
                   -m * WRAP + i], -1)
    d2 = (xs - px[..., None]) ** 2 + (ys - py[..., None]) ** 2
    facing = np.cos(a)[..., None] * np.array([-1.0, -1.0, 1.0, 1.0])
    sign = np.sign(xs - px[..., None]) * np.sign(facing)
    k = d2.argmin(-1)[..., None]
    return (np.sqrt(np.take_along_axis(d2, k, -1)) * np.take_along_axis(sign, k, -1))[..., 0]


def _ships(batch: engine.GameBatch):
    """Every ship's state in the peer's units: pos, vel (N, 2, 2), heading in the peer's degrees,
    and its counters scaled as its view scales them."""
    cfg = batch.config
    f, i = batch.ship_f, batch.ship_i
    scale = np.array([2 * WRAP / cfg.width, 2 * WRAP / cfg.height])
    pos = (f[..., [engine.SX, engine.SY]] - 0.5 * np.array([cfg.width, cfg.height])) * scale
    vel = f[..., [engine.SVX, engine.SVY]] * scale
    hidden = i[..., engine.HYPER_HIDDEN] > 0
    # Its recharge counter runs from the jump; ours counts the hidden frames, then the recharge.
    recharge = np.where(hidden, i[..., engine.HYPER_HIDDEN] + (RECHARGE - REENTRY),
                        i[..., engine.HYPER_RECHARGE])
    charges = (cfg.hyperspace_jumps - i[..., engine.JUMPS]) if cfg.hyperspace else \
        np.zeros_like(i[..., engine.JUMPS])
    counters = np.stack([i[..., engine.AMMO] / TORPEDOES, i[..., engine.COOLDOWN] / RELOAD,
                         f[..., engine.SFUEL] / FUEL, charges / CHARGES,
                         np.clip(recharge, 0, RECHARGE) / RECHARGE], -1)
    # Its headings are degrees turned the other way, starting from 0 and 180: (-180, 180] holds
    # those two as it does.
    deg = -np.degrees(f[..., engine.SANG])
    deg = np.where(deg <= -180.0, deg + 360.0, deg)
    return pos, vel, deg, counters, hidden.astype(np.float64)


def _orbit_features(pos, vel, hidden):
    """Radial and tangential speed about the star, speed, distance to the star, in hyperspace."""
    dist = np.hypot(pos[..., 0], pos[..., 1])
    ux, uy = -pos[..., 0] / np.maximum(dist, 1e-6), -pos[..., 1] / np.maximum(dist, 1e-6)
    radial = ux * vel[..., 0] + uy * vel[..., 1]
    tangential = uy * vel[..., 0] - ux * vel[..., 1]
    return np.stack([radial, tangential, np.hypot(vel[..., 0], vel[..., 1]), dist, hidden], -1)


def peer_observations(batch: engine.GameBatch, sides: np.ndarray,
                      rows: np.ndarray | None = None):
    """What the peer's agent sees, flying ship `sides[g]` of each game g of `rows` (None: every
    game): own ship (N, 16), opponent (N, 22), and its own and the enemy's torpedoes (N, S, 9)
    with (N, S) masks of the ones in flight, S the batch's torpedo slots."""
    g = np.arange(batch.n) if rows is None else np.asarray(rows, dtype=np.int64)
    pos, vel, deg, counters, hidden = _ships(batch)
    me = np.asarray(sides, dtype=np.int64)[g]
    it = 1 - me
    turn = np.radians(deg[g, me])  # into the ship's frame, where it faces along x
    orbit = _orbit_features(pos, vel, hidden)
    own_v = np.stack(_rotate(vel[g, me, 0], vel[g, me, 1], turn), -1)

    star = np.stack(_rotate(-pos[g, me, 0], -pos[g, me, 1], turn), -1)
    edges = np.stack([_edge(pos[g, me, 0], pos[g, me, 1], deg[g, me]),
                      _edge(pos[g, me, 0], pos[g, me, 1], deg[g, me] - 90)], -1)
    own = np.concatenate([star, own_v, edges, counters[g, me], orbit[g, me]], -1)

    rel = np.stack(_rotate(_wrapped(pos[g, it, 0] - pos[g, me, 0]),
                           _wrapped(pos[g, it, 1] - pos[g, me, 1]), turn), -1)
    bearing_angle = np.arctan2(rel[:, 0], rel[:, 1])
    heading = np.radians(-deg[g, it])
    facing = np.stack(_rotate(np.cos(heading), np.sin(heading), bearing_angle), -1)
    its_v = np.stack(_rotate(vel[g, it, 0], vel[g, it, 1], turn), -1)
    dist = np.hypot(rel[:, 0], rel[:, 1])
    bearing = np.where(dist[:, None] != 0, rel / np.where(dist == 0, 1, dist)[:, None], rel)
    closing = (bearing * (its_v - own_v)).sum(-1) / 2
    its_star = np.stack(_rotate(-pos[g, it, 0], -pos[g, it, 1], turn), -1)
    opponent = np.concatenate([rel, its_v, facing, counters[g, it], orbit[g, it], its_star,
                               bearing, dist[:, None], closing[:, None]], -1)

    torps = []
    cfg = batch.config
    scale = np.array([2 * WRAP / cfg.width, 2 * WRAP / cfg.height])
    for owner in (me, it):
        tf = batch.torp_f[g, owner]  # (N, S, 4)
        life = batch.torp_t[g, owner]
        tpos = (tf[..., :2] - 0.5 * np.array([cfg.width, cfg.height])) * scale
        d = _wrapped(tpos - pos[g, me][:, None, :])
        p = np.stack(_rotate(d[..., 0], d[..., 1], turn[:, None]), -1)
        tv = tf[..., 2:] * scale
        v = np.stack(_rotate(tv[..., 0], tv[..., 1], turn[:, None]), -1)
        tdist = np.hypot(p[..., 0], p[..., 1])
        safe = np.maximum(tdist, 1e-12)
        closing_t = ((p / safe[..., None]) * (v - own_v[:, None, :])).sum(-1) / 2
        speed = np.maximum(np.hypot(v[..., 0], v[..., 1]), 1e-12)
        direction = np.stack(_rotate(v[..., 0] / speed, v[..., 1] / speed,
                                     np.arctan2(p[..., 0], p[..., 1])), -1)
        torps.append((np.concatenate([p, v, (life / LIFE)[..., None], direction,
                                      tdist[..., None], closing_t[..., None]], -1), life > 0))
    return (np.clip(own, -1, 1), np.clip(opponent, -1, 1), torps[0], torps[1])


class RllibSwPilot(Pilot):
    """The peer's released agent (module docstring)."""

    def __init__(self, path: Path, identity: str, config: GameConfig, seed: int = 0,
                 deterministic: bool = True):
        import torch

        self.torch = torch
        self.actor = build_actor(load_module_state(path))
        self.name = f"rllib_sw:{Path(path).name}"
        self.identity = identity
        self.config = config
        self.deterministic = deterministic
        self._rng = np.random.default_rng(seed)
        self._batch: engine.GameBatch | None = None
        self._sides = np.zeros(0, dtype=np.int64)

    def attach(self, batch, sides) -> None:
        self._batch = batch
        self._sides = np.broadcast_to(np.asarray(sides, dtype=np.int64), (batch.n,)).copy()

    def logits(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The actor's logits (N, 9) for the games `rows` of the attached batch (None: every
        game)."""
        own, opponent, (mine, mine_on), (theirs, theirs_on) = peer_observations(
            self._batch, self._sides, rows)
        torch = self.torch
        t = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
        e = self.actor.embs
        with torch.inference_mode():
            tokens = torch.cat([e["self"](t(own))[:, None], e["opponent"](t(opponent))[:, None],
                                e["missiles_friendly"](t(mine)),
                                e["missiles_hostile"](t(theirs))], 1)
            n = own.shape[0]
            present = torch.from_numpy(np.concatenate(
                [np.ones((n, 2), dtype=bool), mine_on, theirs_on], 1))
            return self.actor(tokens, present).numpy()

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        if self._batch is None:
            raise RuntimeError(f"{self.name} reads the game itself and was not told which game "
                               "it plays in: it plays in --evaluate, tournaments, demos, human "
                               "play and the browser, not as a training opponent")
        if obs.shape[0] != self._batch.n:
            raise RuntimeError(f"{self.name} got {obs.shape[0]} observations for a batch of "
                               f"{self._batch.n} games: it must be asked about every game")
        # Only the running games are read (a planner's copies are many, and most have ended);
        # the others drift.
        rows = None if active is None else np.flatnonzero(active)
        chosen = np.zeros((len(obs), len(BRANCHES)), dtype=np.int64)
        chosen[slice(None) if rows is None else rows] = self.choices(rows)
        thrust, rotate, fire, jump = chosen.T
        mask = obs[:, self.config.mask_start:]
        return from_peer(thrust, rotate, fire, jump, self.config.controls, mask)

    def choices(self, rows: np.ndarray | None = None) -> np.ndarray:
        """(N, 4) the agent's thrust, rotate, fire and hyperspace in the games `rows` (None:
        every game), as its environment takes them: each branch's argmax, or a draw from its
        softmax."""
        logits = self.logits(rows)
        choice = []
        start = 0
        for size in BRANCHES:
            part = logits[:, start:start + size]
            if self.deterministic:
                choice.append(part.argmax(1))
            else:
                p = np.exp(part - part.max(1, keepdims=True))
                p /= p.sum(1, keepdims=True)
                # One draw for every game, asked or not, so a game's draws do not depend on
                # which others are still running.
                u = self._rng.random((self._batch.n, 1))
                u = u if rows is None else u[rows]
                choice.append(np.minimum((p.cumsum(1) < u).sum(1), size - 1))
            start += size
        return np.stack(choice, 1).astype(np.int64)


def from_peer(thrust, rotate, fire, jump, controls: str, mask=None) -> np.ndarray:
    """The peer's MultiDiscrete choices (thrust, rotate: none, left, right; fire, hyperspace) as
    our actions of scheme `controls`, pressing only what the rows of `mask` allow (module
    docstring; game.controls)."""
    rotate = np.asarray(rotate)
    return encode(rotate == 1, rotate == 2, np.asarray(thrust) == 1, np.asarray(fire) == 1,
                  np.asarray(jump) == 1, controls, mask)


def to_peer(actions, controls: str) -> np.ndarray:
    """Our actions of scheme `controls` as the peer's [thrust, rotate, fire, hyperspace] (one
    row an action)."""
    left, right, thrust, fire, jump = decode(actions, controls)
    return np.stack([thrust, np.where(left, 1, np.where(right, 2, 0)), fire, jump],
                    -1).astype(np.int64)


def in_our_units(xy, config: GameConfig, position: bool = True) -> np.ndarray:
    """A position (centred on the star) or a velocity of the peer's, in our units."""
    size = np.array([config.width, config.height])
    return np.asarray(xy) * size / (2 * WRAP) + (0.5 * size if position else 0.0)


def copy_peer_state(env, batch: engine.GameBatch, g: int = 0) -> None:
    """The state of an environment of the peer's (its ships, their torpedoes, its clock) written
    into game g of `batch`, a game of its rules (config.RULES_PRESETS): the inverse of `_ships`,
    so that our pilots can be asked about the peer's games."""
    batch.game_i[g] = 0
    batch.game_i[g, engine.WINNER] = batch.game_i[g, engine.REAL_WINNER] = -1
    batch.game_i[g, engine.FRAME] = int(env.time)
    for s, ship in enumerate(env.playerShips):
        f, i = batch.ship_f[g, s], batch.ship_i[g, s]
        i[:] = 0
        i[engine.ALIVE] = 1
        f[engine.SX], f[engine.SY] = in_our_units(ship.pos, batch.config)
        f[engine.SVX], f[engine.SVY] = in_our_units(ship.vel, batch.config, position=False)
        heading = (-math.radians(ship.ang)) % (2 * math.pi)
        f[engine.SANG], f[engine.SCOS] = heading, math.cos(heading)
        f[engine.SSIN] = math.sin(heading)
        f[engine.SANGV] = 0.0
        f[engine.SFUEL] = float(ship.fuel)
        i[engine.AMMO] = int(ship.stored_missiles)
        i[engine.COOLDOWN] = int(max(ship.reloadTime, 0))
        i[engine.JUMPS] = CHARGES - int(ship.h_charges)
        hidden = ship.h_reload - (RECHARGE - REENTRY)
        i[engine.HYPER_HIDDEN] = int(max(hidden, 0))
        i[engine.HYPER_RECHARGE] = int(RECHARGE - REENTRY if hidden > 0 else ship.h_reload)
        # Its ships jump at random only where it says so (its at-rest start), else to the mirror.
        i[engine.JUMP_KIND] = engine.JUMP_RANDOM if ship.stochastic_hspace else \
            int(batch.params[engine.P_ORBIT_JUMP])
        batch.torp_t[g, s] = 0
        for k, m in enumerate(env.missiles[s][:batch.torp_t.shape[2]]):
            batch.torp_f[g, s, k, :2] = in_our_units(m.pos, batch.config)
            batch.torp_f[g, s, k, 2:] = in_our_units(m.vel, batch.config, position=False)
            batch.torp_t[g, s, k] = math.ceil(m.life)
