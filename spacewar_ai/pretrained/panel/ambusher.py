"""Panel pilot: an ambusher. It drifts without thrust, nose on the enemy, and fires only when the
enemy comes close."""
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


def strategy(obs):
    sin_h, cos_h, fuel = obs[4], obs[5], obs[6]
    mask = obs[30:36]
    if obs[17] > 0.55 and fuel > 0:
        turn, angle = turn_towards(sin_h, cos_h, -obs[15], -obs[16], 0.3)
        return turn if turn else (3 if mask[3] else 0)
    distance = math.hypot(obs[9], obs[10])
    # Lead by the time a torpedo takes to cover the distance.
    t = distance * HALF / TORPEDO_SPEED
    turn, angle = turn_towards(sin_h, cos_h, obs[9] * HALF + obs[11] * t, obs[10] * HALF + obs[12] * t, 0.05)
    if turn:
        return turn
    return 4 if distance < 0.3 and mask[4] else 0
