"""Potential-based shaping telescopes over an episode exactly as the formula says."""

import numpy as np
import pytest

from spacewar_ai.game.environment import SpacewarVectorEnv
from spacewar_ai.game.shaping import potential, shaped
from spacewar_ai.pilots.build import make_pilot


def test_shaping_telescopes_to_minus_the_first_potential():
    """sum_t gamma^t (r'_t - r_t) = -Phi(s_0) for an episode that terminates: whatever was played
    in between, shaping changes the return by a constant of the start alone."""
    gamma, scale = 0.99, 2.0
    env = SpacewarVectorEnv(16, opponent=None)
    obs, _ = env.reset_both(seed=5)
    a, b = make_pilot("heuristic:hard"), make_pilot("heuristic:medium")
    phi0 = potential(obs[:, 0], scale)
    gap = np.zeros(16)
    discount = np.ones(16)
    open_ = np.ones(16, dtype=bool)
    terminated = np.zeros(16, dtype=bool)
    for _ in range(800):
        acts = np.stack([a.act(obs[:, 0]), b.act(obs[:, 1])], 1)
        nxt, rew, term, trunc, info = env.step_both(acts)
        after = nxt[:, 0].copy()
        done = term | trunc
        if done.any():
            after[done] = info["final_obs"][done, 0]
        r = rew[:, 0]
        extra = shaped(r, potential(obs[:, 0], scale), potential(after, scale), term, gamma) - r
        gap[open_] += discount[open_] * extra[open_]
        discount[open_] *= gamma
        terminated |= term & open_
        open_ &= ~done
        obs = nxt
        if not open_.any():
            break
    assert terminated.sum() >= 8
    np.testing.assert_allclose(gap[terminated], -phi0[terminated], rtol=0, atol=1e-9)
    assert np.abs(phi0).max() > 0  # the test means something: potentials are not all zero


def test_the_potential_reads_aim_and_danger_in_range():
    env = SpacewarVectorEnv(64, opponent=None)
    obs, _ = env.reset_both(seed=1)
    phi = potential(obs[:, 0], 3.0)
    assert phi.shape == (64,) and np.all(np.abs(phi) <= 3.0)
    with pytest.raises(ValueError):
        potential(np.zeros((2, 10), np.float32), 1.0)
