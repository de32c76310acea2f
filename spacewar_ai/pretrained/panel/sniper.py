"""Panel pilot: a sniper. It keeps its distance and fires only on a precise intercept."""
import math

TORPEDO_SPEED = 4.0 / 16.0
HALF = 512.0 / 16.0


def turn_towards(sin_h, cos_h, dx, dy, tolerance):
    angle = math.atan2(cos_h * dy - sin_h * dx, cos_h * dx + sin_h * dy)
    if angle > tolerance:
        return 2, angle
    if angle < -tolerance:
        return 1, angle
    return 0, angle


def intercept(obs):
    """Time (frames) and point at which a torpedo fired now meets the enemy, or None."""
    px, py = obs[9] * HALF, obs[10] * HALF
    vx, vy = obs[11], obs[12]
    a = vx * vx + vy * vy - TORPEDO_SPEED * TORPEDO_SPEED
    b = 2 * (px * vx + py * vy)
    c = px * px + py * py
    disc = b * b - 4 * a * c
    if abs(a) < 1e-9 or disc < 0:
        return None
    times = [t for t in ((-b - math.sqrt(disc)) / (2 * a), (-b + math.sqrt(disc)) / (2 * a)) if t > 0]
    if not times:
        return None
    t = min(times)
    return t, px + vx * t, py + vy * t


def strategy(obs):
    sin_h, cos_h, fuel = obs[4], obs[5], obs[6]
    mask = obs[30:36]
    if obs[17] > 0.4 and fuel > 0:
        turn, angle = turn_towards(sin_h, cos_h, -obs[15], -obs[16], 0.3)
        return turn if turn else (3 if mask[3] else 0)
    distance = math.hypot(obs[9], obs[10])
    if distance < 0.25 and fuel > 0.1:
        # Too close for comfort: turn away from the enemy and open the range.
        turn, angle = turn_towards(sin_h, cos_h, -obs[9], -obs[10], 0.3)
        return turn if turn else (3 if mask[3] else 0)
    hit = intercept(obs)
    if hit is None:
        return turn_towards(sin_h, cos_h, obs[9], obs[10], 0.1)[0]
    t, ax, ay = hit
    turn, angle = turn_towards(sin_h, cos_h, ax, ay, 0.02)
    if turn:
        return turn
    return 4 if mask[4] and t < 70 else 0
