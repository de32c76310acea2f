"""Panel pilot: a patient orbiter. It keeps a steady orbit round the star (thrusting along the
orbit when it falls inward) and fires only on a clean lead solution."""
import math

TORPEDO_SPEED = 4.0 / 16.0   # torpedo speed in velocity units (obs[11:13] are / 16)
HALF = 512.0 / 16.0          # position units (obs[9:11] are / 512) in velocity units per frame


def turn_towards(sin_h, cos_h, dx, dy, tolerance):
    angle = math.atan2(cos_h * dy - sin_h * dx, cos_h * dx + sin_h * dy)
    if angle > tolerance:
        return 2, angle
    if angle < -tolerance:
        return 1, angle
    return 0, angle


def lead(obs):
    """Where to aim: the enemy's position when a torpedo fired now would reach it, or None."""
    px, py = obs[9] * HALF, obs[10] * HALF
    vx, vy = obs[11], obs[12]
    a = vx * vx + vy * vy - TORPEDO_SPEED * TORPEDO_SPEED
    b = 2 * (px * vx + py * vy)
    c = px * px + py * py
    if abs(a) < 1e-9:
        return None
    disc = b * b - 4 * a * c
    if disc < 0:
        return None
    roots = [t for t in ((-b - math.sqrt(disc)) / (2 * a), (-b + math.sqrt(disc)) / (2 * a)) if t > 0]
    if not roots:
        return None
    t = min(roots)
    if t > 90:
        return None
    return px + vx * t, py + vy * t


def strategy(obs):
    sin_h, cos_h, fuel = obs[4], obs[5], obs[6]
    mask = obs[30:36]
    sx, sy = obs[15], obs[16]
    # Radial speed towards the star: negative means falling in.
    dist = math.hypot(sx, sy) or 1.0
    inward = (obs[2] * sx + obs[3] * sy) / dist
    if (obs[17] > 0.3 or inward > 0.15) and fuel > 0.05:
        # Burn along the orbit (perpendicular to the star, on the side we already move).
        tx, ty = -sy, sx
        if tx * obs[2] + ty * obs[3] < 0:
            tx, ty = -tx, -ty
        turn, angle = turn_towards(sin_h, cos_h, tx - sx * 0.5, ty - sy * 0.5, 0.2)
        if turn and abs(angle) > 0.4:
            return turn
        return 3 if mask[3] else 0
    aim = lead(obs)
    if aim is None:
        return 0
    turn, angle = turn_towards(sin_h, cos_h, aim[0], aim[1], 0.04)
    if turn:
        return turn
    return 4 if mask[4] else 0
