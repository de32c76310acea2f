"""Potential-based reward shaping against the horizon problem: r' = r + gamma * Phi(s') - Phi(s).

A kill pays up to 24 decisions after the shot; shaping pays along the way for positions that
lead there, without changing which policy is best (Ng, Harada and Russell 1999): over an episode
the shaping terms telescope to -Phi(s_0) plus the discounted Phi of where it stopped, which no
choice of actions can change. Phi is 0 at a terminal state.

    Phi(s) = scale * (shot quality - threat)

with the tactical view's columns (features.py): shot quality is exp(-d / (2 hit_radius)), d the
closest approach to the opponent of a torpedo fired now; threat the same for the nearest enemy
torpedoes against the ship. Both lie in [0, 1], so Phi lies in [-scale, scale]. `[train]
shaping = SCALE` turns it on for the learner (0, the default, is off).

A reward a learner can collect without winning gets collected: shaping by a potential cannot be
farmed in a loop (a cycle of states pays nothing), which is why shaping here is only of this form.
"""

from __future__ import annotations

import numpy as np

from .features import tactical_columns, view_constants

QUALITY, THREAT = 2, 3  # columns of features.tactical_columns


def potential(obs: np.ndarray, scale: float, constants: dict | None = None) -> np.ndarray:
    """Phi of observations (N, D) (module docstring)."""
    cols = tactical_columns(np.asarray(obs, dtype=np.float32),
                            constants if constants is not None else view_constants())
    return scale * (cols[:, QUALITY].astype(np.float64) - cols[:, THREAT])


def shaped(reward: np.ndarray, phi: np.ndarray, phi_next: np.ndarray, terminated: np.ndarray,
           gamma: float) -> np.ndarray:
    """r + gamma * Phi(s') - Phi(s), Phi(s') taken as 0 where the game terminated (a truncated
    game goes on, in principle: its s' keeps its potential)."""
    return reward + gamma * np.where(terminated, 0.0, phi_next) - phi
