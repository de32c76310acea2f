"""Coasting and intercept maths: where ships and torpedoes go, shared by what networks read
(features.py) and the scripted pilots (scripted.py).

Positions are relative (to the shooter, or to the star for orbits), in screen units and frames.
Torpedoes fly straight (1962); ships coast on orbits around the star, integrated as the engine
does (symplectic Euler) at a coarser step. numba functions, inlined into their callers' kernels.
"""

from __future__ import annotations

import math

import numba as nb


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
def closest_approach(px, py, vx, vy, horizon):
    """Distance at closest approach within [0, horizon] frames of a point at (px, py) moving at
    (vx, vy) per frame, relative to the origin."""
    vv = vx * vx + vy * vy
    t = -(px * vx + py * vy) / vv if vv > 1e-9 else 0.0
    t = min(max(t, 0.0), horizon)
    return math.hypot(px + vx * t, py + vy * t)


@nb.njit(cache=True, inline="always")
def coast(px, py, ux, uy, gm, dt):
    """One symplectic Euler step of dt frames under the star's gravity (position relative to the
    star): the engine's integrator at a coarser step, for predicting orbits."""
    r2 = px * px + py * py
    rr = math.sqrt(r2)
    inv = dt * gm / (r2 * rr) if rr > 1.0 else 0.0
    ux -= px * inv
    uy -= py * inv
    return px + ux * dt, py + uy * dt, ux, uy


@nb.njit(cache=True, inline="always")
def bends(px, py, vx, vy, gm, times, out):
    """out[g, k] = where ship g, coasting from (px[g], py[g]) (relative to the star) at
    (vx[g], vy[g]), is at times[k], minus where it would be in a straight line: the star's pull
    on its path. Games are the inner loop: one game's steps depend on each other, different
    games' do not, so the CPU overlaps them."""
    x, y, ux, uy = px.copy(), py.copy(), vx.copy(), vy.copy()
    out[:, 0, :] = 0.0
    for k in range(1, times.shape[0]):
        dt = times[k] - times[k - 1]
        for g in range(px.shape[0]):
            x[g], y[g], ux[g], uy[g] = coast(x[g], y[g], ux[g], uy[g], gm, dt)
            out[g, k, 0] = x[g] - (px[g] + vx[g] * times[k])
            out[g, k, 1] = y[g] - (py[g] + vy[g] * times[k])


@nb.njit(cache=True, inline="always")
def segment_distance2(ax, ay, bx, by):
    """Squared distance from the origin to the segment from (ax, ay) to (bx, by)."""
    dx, dy = bx - ax, by - ay
    dd = dx * dx + dy * dy
    s = -(ax * dx + ay * dy) / dd if dd > 1e-12 else 0.0
    s = min(max(s, 0.0), 1.0)
    ex, ey = ax + dx * s, ay + dy * s
    return ex * ex + ey * ey


@nb.njit(cache=True, inline="always")
def path_distance(path, steps):
    """Closest approach to the origin of the polyline path[0..steps], taken on the two pieces
    next to its nearest corner: over a torpedo's life the paths bend so little that the distance
    falls and then rises along them, so no other piece can come closer."""
    best = 0
    best2 = path[0, 0] * path[0, 0] + path[0, 1] * path[0, 1]
    for k in range(1, steps + 1):
        d2 = path[k, 0] * path[k, 0] + path[k, 1] * path[k, 1]
        if d2 < best2:
            best, best2 = k, d2
    if best > 0:
        best2 = min(best2, segment_distance2(path[best - 1, 0], path[best - 1, 1],
                                              path[best, 0], path[best, 1]))
    if best < steps:
        best2 = min(best2, segment_distance2(path[best, 0], path[best, 1],
                                              path[best + 1, 0], path[best + 1, 1]))
    return math.sqrt(best2)
