"""Panel pilot: a close-range brawler. It charges the enemy and fires at anything near its nose."""
import math


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
    if obs[17] > 0.45 and fuel > 0:
        turn, angle = turn_towards(sin_h, cos_h, -obs[15], -obs[16], 0.3)
        return turn if turn else (3 if mask[3] else 0)
    dx, dy = obs[9] + obs[11] * 0.3, obs[10] + obs[12] * 0.3
    distance = math.hypot(obs[9], obs[10])
    turn, angle = turn_towards(sin_h, cos_h, dx, dy, 0.15)
    closing = -(obs[9] * obs[11] + obs[10] * obs[12])
    if abs(angle) < 0.25 and distance < 0.45 and mask[4]:
        return 5 if distance > 0.2 and closing < 0.05 and mask[5] else 4
    if turn:
        return turn
    if distance > 0.2 and closing < 0.1 and fuel > 0.2 and mask[3]:
        return 3
    return 0
