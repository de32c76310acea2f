"""Panel pilot: a dodger. It turns broadside to the nearest threatening torpedo and burns out of
its path; between dodges it aims and fires."""
import math


def turn_towards(sin_h, cos_h, dx, dy, tolerance):
    angle = math.atan2(cos_h * dy - sin_h * dx, cos_h * dx + sin_h * dy)
    if angle > tolerance:
        return 2, angle
    if angle < -tolerance:
        return 1, angle
    return 0, angle


def threat(obs):
    """The nearest enemy torpedo that is coming our way: (dx, dy, vx, vy), or None."""
    for k in range(3):
        dx, dy, vx, vy = obs[18 + 4 * k: 22 + 4 * k]
        if dx == 0 and dy == 0:
            return None
        approaching = dx * vx + dy * vy < 0
        if approaching and math.hypot(dx, dy) < 0.35:
            return dx, dy, vx, vy
    return None


def strategy(obs):
    sin_h, cos_h, fuel = obs[4], obs[5], obs[6]
    mask = obs[30:36]
    if obs[17] > 0.4 and fuel > 0:
        turn, angle = turn_towards(sin_h, cos_h, -obs[15], -obs[16], 0.3)
        return turn if turn else (3 if mask[3] else 0)
    danger = threat(obs)
    if danger is not None and fuel > 0.05:
        dx, dy, vx, vy = danger
        # Out of its path: across its velocity, on the side we already are.
        ox, oy = -vy, vx
        if ox * -dx + oy * -dy < 0:
            ox, oy = -ox, -oy
        turn, angle = turn_towards(sin_h, cos_h, ox, oy, 0.35)
        return turn if turn else (3 if mask[3] else 0)
    turn, angle = turn_towards(sin_h, cos_h, obs[9] + obs[11] * 0.5, obs[10] + obs[12] * 0.5, 0.07)
    if turn:
        return turn
    return 4 if mask[4] else 0
