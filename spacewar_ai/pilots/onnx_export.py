"""ONNX export: a trained pilot as one file any ONNX runtime can run, no Python or torch needed.

It takes raw observations `obs` float32 (N, D), the observation of the game the network
learned as that game gives it today (36 floats in the default game, 46 under the 1962 switches,
48 with their hyperspace; a network saved before observations held the jumps left drops them
inside the file, as its agent does), and returns `action` int64
(N,) (greedy, masked actions never chosen) and `scores` float32 (N, A) (masked logits or
Q-values). The network's view (features.py, rewritten as torch operations in float64), its
observation statistics and the masking are inside. `--export model.onnx --checkpoint SPEC`;
`onnx:model.onnx` plays it back."""

from __future__ import annotations

import logging
import math
import warnings
from pathlib import Path

import torch
import torch.nn as nn

from ..config import JUMP_COLUMNS, OBS_MASK, mask_start, without_jumps
from ..game.features import (
    FIRE_SWITCHES,
    OBS_RELOAD,
    ORBIT_STEP,
    TACTICAL_COLUMNS,
    VECTOR_X,
    VECTOR_Y,
)
from ..util.errors import UserError
from .onnx_check import onnx_problems

NEG_INF = -1e9  # as agents.NEG_INF: masked scores never win an argmax


def _hypot(x, y):
    return torch.sqrt(x * x + y * y)


def _intercept(dx, dy, rx, ry, speed: float, spawn):
    """ballistics.intercept_time over tensors (inf where no intercept)."""
    inf = torch.full_like(dx, math.inf)
    a = rx * rx + ry * ry - speed * speed
    b = 2.0 * (dx * rx + dy * ry - spawn * speed)
    c = dx * dx + dy * dy - spawn * spawn
    t_lin = torch.where((b < 0) & (-c / b > 0), -c / b, inf)
    disc = b * b - 4.0 * a * c
    sq = torch.sqrt(torch.clamp(disc, min=0.0))
    r1 = (-b - sq) / (2.0 * a)
    r2 = (-b + sq) / (2.0 * a)
    t1 = torch.where(r1 > 0, r1, inf)
    t2 = torch.where((r2 > 0) & (r2 < t1), r2, t1)
    t_quad = torch.where(disc >= 0, t2, inf)
    return torch.where(a.abs() < 1e-9, t_lin, t_quad)


def _closest(px, py, vx, vy, horizon: float):
    """ballistics.closest_approach over tensors."""
    vv = vx * vx + vy * vy
    t = torch.where(vv > 1e-9, -(px * vx + py * vy) / torch.where(vv > 1e-9, vv, 1.0), 0.0)
    t = torch.clamp(t, 0.0, horizon)
    return _hypot(px + vx * t, py + vy * t)


def _bends(px, py, vx, vy, gm: float, times: list[float]):
    """ballistics.bends over tensors: coasting bodies' starts and velocities, a tensor of any
    shape each, -> (..., steps + 1, 2) displacements of their paths from straight lines. Every
    body steps in one operation and the straight lines are taken in one at the end, so the
    exported graph holds the loop's arithmetic once, not once a body."""
    x, y, ux, uy = px, py, vx, vy
    xs, ys = [px], [py]
    for k in range(1, len(times)):
        dt = times[k] - times[k - 1]
        r2 = x * x + y * y
        rr = torch.sqrt(r2)
        far = rr > 1.0
        inv = torch.where(far, dt * gm / torch.where(far, r2 * rr, 1.0), 0.0)
        ux = ux - x * inv
        uy = uy - y * inv
        x = x + ux * dt
        y = y + uy * dt
        xs.append(x)
        ys.append(y)
    tt = torch.tensor(times, dtype=px.dtype)
    return torch.stack([torch.stack(xs, -1) - (px[..., None] + vx[..., None] * tt),
                        torch.stack(ys, -1) - (py[..., None] + vy[..., None] * tt)], -1)


def _segment2(a, b):
    d = b - a
    dd = (d * d).sum(-1)
    s = torch.where(dd > 1e-12, -(a * d).sum(-1) / torch.where(dd > 1e-12, dd, 1.0), 0.0)
    e = a + d * torch.clamp(s, 0.0, 1.0).unsqueeze(-1)
    return (e * e).sum(-1)


def _path_distance(path):
    """ballistics.path_distance over (..., steps + 1, 2) polylines."""
    steps = path.shape[-2] - 1
    d2 = (path * path).sum(-1)
    best = torch.argmin(d2, -1, keepdim=True)  # (..., 1), as gather takes indices
    best2 = d2.gather(-1, best)[..., 0]
    inf = torch.full_like(best2, math.inf)

    def corner(i):
        return path.gather(-2, i[..., None].expand(*([-1] * i.dim()), 2))[..., 0, :]

    here = corner(best)
    prev = torch.where(best[..., 0] > 0,
                       _segment2(corner(torch.clamp(best - 1, min=0)), here), inf)
    nxt = torch.where(best[..., 0] < steps,
                      _segment2(here, corner(torch.clamp(best + 1, max=steps))), inf)
    return torch.sqrt(torch.minimum(best2, torch.minimum(prev, nxt)))


class Features(nn.Module):
    """features.apply_view as torch operations: the world, egocentric or tactical view of
    observations whose mask starts at `start`."""

    def __init__(self, view: str, constants: dict[str, float], start: int = OBS_MASK):
        super().__init__()
        self.view = view
        self.k = dict(constants)
        self.start = start

    def egocentric(self, obs):
        s, c = obs[:, 4:5], obs[:, 5:6]
        # Every vector turned at once, then each column taken from where it now stands: a
        # column at a time made the exported graph several times larger.
        x = obs.index_select(1, torch.as_tensor(VECTOR_X))
        y = obs.index_select(1, torch.as_tensor(VECTOR_Y))
        so, co = obs[:, 13:14], obs[:, 14:15]
        fwd, side = x * c + y * s, y * c - x * s
        nine = VECTOR_X.tolist().index(9)
        f9, r9 = fwd[:, nine:nine + 1], side[:, nine:nine + 1]
        dist = _hypot(f9, r9)
        inv = torch.where(dist > 1e-6, 1.0 / torch.where(dist > 1e-6, dist, 1.0), 0.0)
        every = torch.cat([obs, fwd, side, so * c - co * s, co * c + so * s, f9 * inv, r9 * inv],
                          1)
        width = obs.shape[1]
        source = list(range(width))  # where each column of the view stands in `every`
        for j, column in enumerate([*VECTOR_X.tolist(), *VECTOR_Y.tolist(), 13, 14, 0, 1]):
            source[column] = width + j
        return every.index_select(1, torch.tensor(source))

    def tactical_columns(self, obs32):
        k = self.k
        o = obs32.double()
        hw, hh, v2 = k["half_width"], k["half_height"], 2.0 * k["max_speed"]
        speed, spawn, life = k["torpedo_speed"], k["torpedo_spawn"], k["torpedo_lifetime"]
        scale, gm = 1.0 / (2.0 * k["hit_radius"]), k.get("gravity", 0.0)
        steps = int(math.ceil(life / ORBIT_STEP))
        times = [min(i * ORBIT_STEP, life) for i in range(steps + 1)]
        tt = torch.tensor(times, dtype=torch.float64)
        sin_h, cos_h = o[:, 4], o[:, 5]
        dx, dy, rx, ry = o[:, 9] * hw, o[:, 10] * hh, o[:, 11] * v2, o[:, 12] * v2
        seen = obs32[:, 13] * obs32[:, 13] + obs32[:, 14] * obs32[:, 14] > 0.5
        # Straight lines (no star, or gm = 0).
        t_st = _intercept(dx, dy, rx, ry, speed, torch.full_like(dx, spawn))
        ax_st, ay_st = dx + rx * t_st, dy + ry * t_st
        miss_st = _closest(dx - spawn * cos_h, dy - spawn * sin_h, rx - speed * cos_h,
                           ry - speed * sin_h, life)
        if gm > 0.0:
            bent = (o[:, 15] != 0) | (o[:, 16] != 0)
            sx, sy = -o[:, 15] * hw, -o[:, 16] * hh
            vx, vy = o[:, 2] * 0.5 * v2, o[:, 3] * 0.5 * v2
            # The ship's own path and its target's, bent together.
            own, target = _bends(torch.stack([sx, sx + dx], 1), torch.stack([sy, sy + dy], 1),
                                 torch.stack([vx, vx + rx], 1), torch.stack([vy, vy + ry], 1),
                                 gm, times).unbind(1)
            q = torch.stack([dx[:, None] + rx[:, None] * tt, dy[:, None] + ry[:, None] * tt],
                            -1) + target
            reach = spawn + speed * tt
            hit = (q * q).sum(-1)[:, 1:] <= (reach * reach)[1:]
            first = torch.argmax(hit.to(torch.int64), 1) + 1
            kk = torch.where(hit.any(1), first, torch.full_like(first, steps))
            qk = q.gather(1, kk[:, None, None].expand(-1, 1, 2))[:, 0]
            pk = q.gather(1, (kk - 1)[:, None, None].expand(-1, 1, 2))[:, 0]
            # index_select, not tt[kk]: advanced indexing exports as GatherND, an operator the
            # arena's allow-list of policy operators leaves out.
            t_prev = tt.index_select(0, kk - 1)
            w = (qk - pk) / (tt.index_select(0, kk) - t_prev)[:, None]
            tau = _intercept(pk[:, 0], pk[:, 1], w[:, 0], w[:, 1], speed, spawn + speed * t_prev)
            t = torch.where(bent, t_prev + tau, t_st)
            ax = torch.where(bent, pk[:, 0] + w[:, 0] * tau, ax_st)
            ay = torch.where(bent, pk[:, 1] + w[:, 1] * tau, ay_st)
            shot = torch.stack([dx[:, None] + (rx - speed * cos_h)[:, None] * tt
                                - (spawn * cos_h)[:, None],
                                dy[:, None] + (ry - speed * sin_h)[:, None] * tt
                                - (spawn * sin_h)[:, None]], -1) + target
            miss = torch.where(bent, _path_distance(shot), miss_st)
        else:
            bent = torch.zeros_like(seen)
            t, ax, ay, miss = t_st, ax_st, ay_st, miss_st
        valid = seen & (t < math.inf)
        t = torch.where(valid, t, 0.0)
        norm = _hypot(torch.where(valid, ax, 0.0), torch.where(valid, ay, 0.0))
        aimed = valid & (norm > 1e-6)
        safe = torch.where(aimed, norm, 1.0)
        lead_c = torch.where(aimed, (ax * cos_h + ay * sin_h) / safe, 0.0)
        lead_s = torch.where(aimed, (ay * cos_h - ax * sin_h) / safe, 0.0)
        quality = torch.where(seen, torch.exp(-miss * scale), 0.0)
        # The three nearest enemy torpedoes, x, y, vx, vy each, read together.
        torps = o[:, 18:30].reshape(-1, 3, 4)
        present = (torps != 0).any(-1)
        jx, jy = torps[..., 0] * hw, torps[..., 1] * hh
        ux, uy = torps[..., 2] * v2, torps[..., 3] * v2
        d = _closest(jx, jy, ux, uy, life)
        if gm > 0.0:
            path = torch.stack([jx[..., None] + ux[..., None] * tt,
                                jy[..., None] + uy[..., None] * tt], -1) - own[:, None]
            d = torch.where(bent[:, None], _path_distance(path), d)
        near = torch.where(present, torch.exp(-d * scale), 0.0)
        threat = torch.maximum(torch.maximum(near[:, 0], near[:, 1]), near[:, 2])
        cols = [lead_c, lead_s, quality, threat, torch.clamp(t / life, max=2.0)]
        assert len(cols) == TACTICAL_COLUMNS
        return torch.stack(cols, 1).float()

    def forward(self, obs):
        if self.view == "world":
            return obs
        ego = self.egocentric(obs)
        if self.view == "egocentric":
            return ego
        return torch.cat([ego[:, :self.start], self.tactical_columns(obs), ego[:, self.start:]],
                         1)


class Exported(nn.Module):
    """obs -> (action, scores) for a PPO or DQN agent, as agents.py plays it greedily;
    `drop_jumps`: the observations hold the jumps left, which the network never learned."""

    def __init__(self, agent, drop_jumps: bool = False):
        super().__init__()
        self.drop_jumps = drop_jumps
        self.features = Features(agent.view, agent.view_constants,
                                 mask_start(agent.state_dim))
        self.actions = agent.action_dim
        self.ready_only = agent.fires_when_ready  # the mask as it learned it
        self.register_buffer("fire_switches", torch.as_tensor(FIRE_SWITCHES))
        if agent.algorithm == "ppo":
            self.norm, self.scorer, self.members = agent.obs_norm, agent.net.actor, nn.ModuleList()
        else:
            self.norm, self.scorer = agent.obs_norm, agent.q
            self.members = nn.ModuleList(agent.play_members)

    def forward(self, obs):
        if self.drop_jumps:
            obs = torch.cat([obs[:, :OBS_MASK], obs[:, OBS_MASK + JUMP_COLUMNS:]], 1)
        if self.ready_only:
            refused = (obs[:, OBS_RELOAD:OBS_RELOAD + 1] > 0) & self.fire_switches
            obs = torch.cat([obs[:, :-self.actions],
                             torch.where(refused, torch.zeros_like(obs[:, -self.actions:]),
                                         obs[:, -self.actions:])], 1)
        x = self.features(obs)
        mask = obs[:, -self.actions:] > 0.5
        lone = ~mask.any(1, keepdim=True)  # a row with no valid action may still drift
        mask = mask | (lone & (torch.arange(self.actions) == 0))
        scores = self.scorer(self.norm(x))
        for member in self.members:
            scores = scores + member(x)
        scores = scores / (1 + len(self.members))
        scores = torch.where(mask, scores, torch.full_like(scores, NEG_INF))
        return torch.argmax(scores, 1), scores


def game_width(state_dim: int, ckpt: dict) -> int:
    """The width of the observations the game a network learned gives today: its own, or with
    the jumps left where that game had hyperspace and the network was saved before they were
    observed (37 wide always had it; 46 wide says so in its saved settings)."""
    wider = state_dim + JUMP_COLUMNS
    if without_jumps(wider) != state_dim:
        return state_dim
    game = (ckpt["metadata"].get("config") or {}).get("game") or {}
    seven_actions = state_dim - mask_start(state_dim) == 7  # hyperspace's own action
    return wider if seven_actions or game.get("hyperspace") else state_dim


EXPORT_STAGES = ("loading the network", "tracing it and its view (torch.export)",
                 "checking the model as the arena would")


def export_onnx(spec: str, dst: str | Path, stage=None) -> int:
    """Write the learned pilot `spec` (pretrained, ppo:PATH, dqn:PATH, a checkpoint path) to
    `dst` as ONNX, atomically, once it passes the arena's checks (onnx_check); returns the
    file's size in bytes. `stage(k)` hears each of EXPORT_STAGES begin."""
    stage = stage or (lambda k: None)
    from ..agents.checkpoints import CheckpointError
    from ..agents.saved import load_agent
    from ..util.files import atomic_write_bytes
    from .spec import checkpoint_file, parse_spec

    try:
        import onnx  # noqa: F401 (the exporter needs it)
    except ImportError:
        raise UserError("--export to .onnx needs the onnx extra: pip install -e \".[onnx]\"") \
            from None
    parsed = parse_spec(spec)
    if not parsed.learned:
        raise CheckpointError(f"--export {dst}: {spec!r} is not a learned model (pretrained, "
                              "ppo:PATH, dqn:PATH or a checkpoint path); only those export")
    # The network as saved, whatever game it learned (six actions, hyperspace, switches): the
    # export reads the observation that game gives.
    stage(0)
    agent, ckpt = load_agent(checkpoint_file(parsed), "cpu",
                              parsed.kind if parsed.kind in ("ppo", "dqn") else None)
    width = game_width(agent.state_dim, ckpt)
    model = Exported(agent, drop_jumps=width != agent.state_dim).eval()
    example = torch.zeros(4, width)
    example[:, mask_start(width):] = 1.0
    quiet = logging.getLogger("torch.onnx")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the exporter's notices (torchvision absent, ...) are noise
    stage(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.onnx.export(model, (example,), input_names=["obs"],
                                        output_names=["action", "scores"], verbose=False,
                                        dynamic_shapes={"obs": {0: torch.export.Dim("batch")}})
    finally:
        quiet.setLevel(level)
    data = program.model_proto.SerializeToString()
    stage(2)
    problems = onnx_problems(data, width)  # the game the network learned
    if problems:  # an operator the exporter chose that the arena's allow-list leaves out
        raise UserError(f"--export {dst}: the exported model {problems[0]}; nothing was "
                        "written (a bug of the export: please report it)")
    atomic_write_bytes(dst, lambda f: f.write(data))
    return len(data)
