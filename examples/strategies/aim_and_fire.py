"""A hand-written strategy file: keep clear of the star, turn to lead the enemy, fire when aimed.

Run it: spacewar-ai --tournament --players strategy:examples/strategies/aim_and_fire.py,heuristic:medium
"""
import math

AIM_TOLERANCE = 0.08   # radians either side of the lead point that count as aimed
STAR_DANGER = 0.35     # star proximity (obs[17]) above which we burn away from it
TORPEDO_SPEED = 0.5    # rough torpedo speed in the units of obs[9:11] per unit of obs[11:13]


def turn_towards(sin_h, cos_h, dx, dy):
    """Action that turns the nose towards the direction (dx, dy), and the angle still to turn."""
    cross = cos_h * dy - sin_h * dx
    dot = cos_h * dx + sin_h * dy
    angle = math.atan2(cross, dot)
    if angle > AIM_TOLERANCE:
        return 2, angle
    if angle < -AIM_TOLERANCE:
        return 1, angle
    return 0, angle


def strategy(obs):
    sin_h, cos_h = obs[4], obs[5]
    fuel, reload_left = obs[6], obs[8]
    mask = obs[30:36]
    # Falling into the star loses the game: point away from it and burn.
    if obs[17] > STAR_DANGER and fuel > 0:
        turn, angle = turn_towards(sin_h, cos_h, -obs[15], -obs[16])
        if turn == 0 or abs(angle) < 0.6:
            return 3 if mask[3] else 0
        return turn
    # Aim where the enemy will be: its relative position plus a share of its relative velocity.
    dx = obs[9] + obs[11] * TORPEDO_SPEED
    dy = obs[10] + obs[12] * TORPEDO_SPEED
    turn, angle = turn_towards(sin_h, cos_h, dx, dy)
    if turn:
        return turn
    if reload_left == 0 and mask[4]:
        return 4
    return 0
