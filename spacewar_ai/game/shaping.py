"""Potential-based reward shaping: r' = r + gamma * Phi(s') - Phi(s), Phi = 0 at a terminal state.

A kill pays up to 24 decisions after the shot; shaping pays along the way without changing which
policy is best (Ng, Harada and Russell 1999), and a cycle of states pays nothing, so it cannot
be farmed. Phi(s) = scale * (shot quality - threat), from the tactical view's columns, each in
[0, 1]. `[train] shaping = SCALE` turns it on (0, the default, is off)."""

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
