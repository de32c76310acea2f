"""Panel pilot: a spinner. It turns without stopping and fires whenever a torpedo is ready and
its nose passes near the enemy: a spray, not a shot."""
import math


def strategy(obs):
    sin_h, cos_h, fuel = obs[4], obs[5], obs[6]
    mask = obs[30:36]
    if obs[17] > 0.5 and fuel > 0 and mask[3]:
        # Only near the star does it stop to think: burn when the nose points away from it.
        if cos_h * -obs[15] + sin_h * -obs[16] > 0.5 * math.hypot(obs[15], obs[16]):
            return 3
    off = math.atan2(cos_h * obs[10] - sin_h * obs[9], cos_h * obs[9] + sin_h * obs[10])
    if abs(off) < 0.3 and mask[4]:
        return 4
    return 2
