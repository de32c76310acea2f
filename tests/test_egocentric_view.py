"""The egocentric view: what learned agents read of an observation (environment.egocentric_view)."""

import math

import numpy as np
import pytest

from helpers import scenario
from spacewar_ai.agents import DQNAgent, PolicyStack, PPOAgent
from spacewar_ai.bots import make_pilot
from spacewar_ai.config import DQNConfig, GameConfig, PPOConfig
from spacewar_ai.engine import GameBatch
from spacewar_ai.environment import egocentric_view

PAIRS = [(2, 3), (9, 10), (11, 12), (15, 16), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27),
         (28, 29)]


def _bearing(obs_row):
    v = egocentric_view(obs_row[None])[0]
    return math.atan2(v[1], v[0])


@pytest.mark.parametrize("heading", [0.0, 1.0, 2.5, -2.0])
def test_an_opponent_dead_ahead_is_straight_forward_whatever_the_heading(heading):
    b = scenario(no_star=True)
    b.place_ship(0, 0, 500.0, 500.0, heading=heading)
    b.place_ship(0, 1, 500.0 + 200.0 * math.cos(heading), 500.0 + 200.0 * math.sin(heading))
    v = egocentric_view(b.observe()[0, 0][None])[0]
    assert v[0:2] == pytest.approx((1.0, 0.0), abs=1e-5)  # bearing: cos, sin
    assert v[9:11] == pytest.approx((200.0 / 512.0, 0.0), abs=1e-5)  # (forward, right)


def test_rotating_right_turns_the_nose_toward_a_target_on_the_right():
    b = scenario(no_star=True, frame_skip=4)
    b.place_ship(0, 0, 500.0, 500.0, heading=0.3)
    # 1 rad to the right of the nose (heading grows clockwise on screen, y down).
    b.place_ship(0, 1, 500.0 + 200.0 * math.cos(1.3), 500.0 + 200.0 * math.sin(1.3))
    before = _bearing(b.observe()[0, 0])
    assert before == pytest.approx(1.0, abs=1e-4)
    b.step(np.array([[2, 0]]))  # rotate right: 4 frames of 1/16 rad
    after = _bearing(b.observe()[0, 0])
    assert after == pytest.approx(1.0 - 4 / 16, abs=1e-3)


def test_lengths_and_unchanged_entries_survive_the_view_in_real_games():
    cfg = GameConfig()
    b = GameBatch(64, cfg)
    b.reset(seeds=np.arange(64))
    pilots = [make_pilot("heuristic:hard", cfg), make_pilot("random", cfg, seed=3)]
    rows = []
    for _ in range(60):
        obs = b.observe()
        rows.append(obs[:, 0].copy())
        b.step(np.stack([pilots[0].act(obs[:, 0]), pilots[1].act(obs[:, 1])], axis=1))
    world = np.concatenate(rows)
    assert (np.abs(world[:, 18:30]).sum(1) > 0).any(), "no torpedo was ever seen"
    ego = egocentric_view(world)
    for i, j in PAIRS:
        assert np.hypot(ego[:, i], ego[:, j]) == pytest.approx(np.hypot(world[:, i], world[:, j]),
                                                               abs=1e-5)
    keep = [4, 5, 6, 7, 8, 17, *range(30, 36)]
    assert np.array_equal(ego[:, keep], world[:, keep])
    # Relative heading: opponent heading minus own, as sin and cos.
    rel = np.arctan2(world[:, 13], world[:, 14]) - np.arctan2(world[:, 4], world[:, 5])
    seen = np.abs(world[:, 13:15]).sum(1) > 0
    assert ego[seen, 13] == pytest.approx(np.sin(rel[seen]), abs=1e-5)
    assert ego[seen, 14] == pytest.approx(np.cos(rel[seen]), abs=1e-5)


def test_agents_apply_the_view_exactly_once_on_every_path():
    """Acting (select_action, act, the league's PolicyStack) and DQN's replay buffer all see the
    view once: an egocentric agent on raw observations plays as the same weights reading the
    world view play on egocentric_view(obs), and DQN's stored rows are not rotated again."""
    obs = np.random.default_rng(0).normal(size=(64, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    viewed = egocentric_view(obs)
    ego = PPOAgent(36, 6, PPOConfig(hidden_sizes=(32,)))
    world = PPOAgent(36, 6, PPOConfig(hidden_sizes=(32,), observation_view="world"))
    world.net.load_state_dict(ego.net.state_dict())
    expected = world.act(viewed, deterministic=True)
    assert len(set(expected.tolist())) > 1  # the comparison means something
    assert np.array_equal(ego.select_action(obs, deterministic=True), expected)
    assert np.array_equal(ego.act(obs, deterministic=True), expected)
    assert np.array_equal(PolicyStack([ego]).act(obs, np.zeros(64, np.int64), True), expected)
    assert not np.array_equal(world.act(obs, deterministic=True), expected)

    dqn = DQNAgent(36, 6, DQNConfig(hidden_sizes=(32,), stream_size=8, buffer_size=256,
                                    n_step=1), seed=0)
    dqn.store_transition(obs, np.zeros(64, np.int64), np.zeros(64), obs, np.zeros(64, bool))
    assert np.array_equal(dqn.buf_obs[:64], viewed)
    assert np.array_equal(dqn.stored_greedy(np.arange(64)),
                          dqn.select_action(obs, deterministic=True))


def test_a_view_that_cannot_apply_is_refused_at_construction():
    with pytest.raises(ValueError, match="observation_view='world'"):
        PPOAgent(12, 6)
    with pytest.raises(ValueError, match="observation_view"):
        DQNConfig(observation_view="polar")
    assert DQNAgent(12, 6, DQNConfig(hidden_sizes=(8,), stream_size=4, buffer_size=10,
                                     observation_view="world")).state_dim == 12
