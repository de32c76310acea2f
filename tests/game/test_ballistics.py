"""The coasting and intercept maths, against situations worked out by hand."""

import math

import numpy as np
import pytest

from spacewar_ai.game.ballistics import (
    bends,
    closest_approach,
    coast,
    intercept_time,
    path_distance,
)


def test_a_torpedo_meets_a_still_target_when_it_has_flown_the_gap():
    # 100 units away, leaving 16 units out at 4 a frame: 16 + 4 t = 100 at t = 21.
    assert intercept_time(100.0, 0.0, 0.0, 0.0, 4.0, 16.0) == pytest.approx(21.0)


def test_a_target_closing_is_met_sooner_and_one_fleeing_at_torpedo_speed_never():
    # Closing at 2 a frame: |100 - 2 t| = 16 + 4 t at t = 14 (72 = 72).
    assert intercept_time(100.0, 0.0, -2.0, 0.0, 4.0, 16.0) == pytest.approx(14.0)
    assert intercept_time(100.0, 0.0, 4.0, 0.0, 4.0, 16.0) == math.inf
    # Crossing: the lead solves |d + r t| = 16 + 4 t; check the meeting point, not a formula.
    t = intercept_time(0.0, 100.0, 1.0, 0.0, 4.0, 16.0)
    assert math.hypot(1.0 * t, 100.0) == pytest.approx(16.0 + 4.0 * t)


def test_closest_approach_within_the_horizon():
    # Passing (10, 5) -> (0, 5): nearest at t = 10, five units off.
    assert closest_approach(10.0, 5.0, -1.0, 0.0, 100.0) == pytest.approx(5.0)
    # The horizon ends it at t = 4, at (6, 5).
    assert closest_approach(10.0, 5.0, -1.0, 0.0, 4.0) == pytest.approx(math.hypot(6.0, 5.0))
    # Moving away: now is the closest.
    assert closest_approach(10.0, 5.0, 1.0, 0.0, 100.0) == pytest.approx(math.hypot(10.0, 5.0))


def test_coasting_pulls_toward_the_star_velocity_first():
    # At rest 100 units out with gm 1000: the pull is gm / r^2 = 0.1 a frame; symplectic Euler
    # changes the velocity first and moves with the new one.
    assert coast(100.0, 0.0, 0.0, 0.0, 1000.0, 1.0) == pytest.approx((99.9, 0.0, -0.1, 0.0))
    # Inside the star's centre unit nothing pulls (no division by zero).
    assert coast(0.5, 0.0, 1.0, 0.0, 1000.0, 1.0) == pytest.approx((1.5, 0.0, 1.0, 0.0))


def test_bends_are_zero_without_gravity_and_point_at_the_star_with_it():
    times = np.array([0.0, 4.0, 8.0, 12.0])
    px, py = np.array([100.0, 0.0]), np.array([0.0, -200.0])
    vx, vy = np.array([0.0, 1.0]), np.array([1.0, 0.0])
    out = np.empty((2, len(times), 2))
    bends(px, py, vx, vy, 0.0, times, out)
    assert np.allclose(out, 0.0)
    bends(px, py, vx, vy, 1000.0, times, out)
    assert np.all(out[0, 1:, 0] < 0) and np.all(out[1, 1:, 1] > 0)  # toward the origin
    assert np.all(np.diff(np.abs(out[0, :, 0])) > 0)  # and more the longer it coasts


def test_path_distance_finds_the_nearest_piece_of_a_polyline():
    path = np.array([[-20.0, 3.0], [-10.0, 3.0], [10.0, 3.0], [20.0, 3.0]])
    assert path_distance(path, 3) == pytest.approx(3.0)  # between two corners, not at one
    assert path_distance(path, 1) == pytest.approx(math.hypot(10.0, 3.0))  # the path ends first
