"""Prioritized replay: the sum tree's sampling and bookkeeping, and DQN drawing by TD error."""

import numpy as np
import pytest
import torch

from spacewar_ai.agents.dqn import DQNAgent
from spacewar_ai.agents.replay_buffer import SumTree
from spacewar_ai.config import DQNConfig


def test_slots_are_drawn_in_proportion_to_their_priority():
    tree = SumTree(6)  # not a power of two: the two padding leaves must never be drawn
    tree.set(np.arange(5), [1.0, 2.0, 3.0, 4.0, 0.0])
    rng = np.random.default_rng(0)
    drawn = np.concatenate([tree.sample(64, rng) for _ in range(2000)])
    freq = np.bincount(drawn, minlength=8) / drawn.size
    assert freq[:4] == pytest.approx([0.1, 0.2, 0.3, 0.4], abs=0.01)
    assert freq[4:].sum() == 0  # priority 0, never written, padding


def test_the_sums_stay_exact_after_many_overwrites():
    tree = SumTree(1000)
    rng = np.random.default_rng(1)
    for _ in range(300):  # batches with repeated slots, as a replay batch has
        tree.set(rng.integers(0, 1000, 64), rng.random(64) * 5)
    inner = np.arange(1, tree.leaves)
    np.testing.assert_allclose(tree.tree[inner], tree.tree[2 * inner] + tree.tree[2 * inner + 1],
                               rtol=1e-12)
    assert tree.total == pytest.approx(tree.get(np.arange(1000)).sum(), rel=1e-12)
    # A slot named twice in one call keeps the last priority given.
    tree.set(np.array([7, 7]), np.array([1.0, 9.0]))
    assert tree.get(np.array([7]))[0] == 9.0


def test_every_slot_of_the_mass_range_maps_to_its_owner():
    tree = SumTree(4)
    tree.set(np.arange(4), [1.0, 0.0, 2.0, 1.0])
    assert tree.find(np.array([0.0, 0.999, 1.0, 2.999, 3.0, 3.999])).tolist() == [0, 0, 2, 2, 3, 3]
    # Rounding past the total must not land on an empty slot.
    assert tree.find(np.array([4.0 + 1e-9])).tolist() == [3]


def test_bad_priorities_and_slots_are_refused():
    tree = SumTree(4)
    with pytest.raises(ValueError, match="finite and >= 0"):
        tree.set(np.array([0]), np.array([-1.0]))
    with pytest.raises(ValueError, match="finite and >= 0"):
        tree.set(np.array([0]), np.array([np.nan]))
    with pytest.raises(IndexError, match=r"\[0, 4\)"):
        tree.set(np.array([4]), np.array([1.0]))
    with pytest.raises(RuntimeError, match="all 0"):
        tree.sample(2, np.random.default_rng(0))


def _surprise_buffer(alpha: float) -> tuple[DQNAgent, np.ndarray]:
    """96 dull transitions (reward 0) and 4 surprising ones (reward 10), all terminal: an
    untrained network's Q-values are a fraction of 1, so only the surprising ones err by ~10."""
    torch.manual_seed(0)
    cfg = DQNConfig(hidden_sizes=(16,), stream_size=8, buffer_size=100, batch_size=20,
                    gradient_steps=1, reward_scale=1.0, learning_rate=1e-4, priority_alpha=alpha,
                    observation_view="world")
    agent = DQNAgent(36, 6, cfg, seed=0)
    obs = np.random.default_rng(2).random((100, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    rewards = np.zeros(100)
    surprising = np.array([10, 40, 70, 90])
    rewards[surprising] = 10.0
    agent.store_transition(obs, np.zeros(100, np.int64), rewards, obs, np.ones(100, bool))
    return agent, surprising


def test_prioritized_dqn_replays_surprising_transitions_more_often():
    agent, surprising = _surprise_buffer(alpha=1.0)
    assert agent.replay.priorities.get(np.arange(100)).tolist() == [1.0] * 100  # new: the max so far
    for _ in range(200):  # slow learning: the kills stay surprising, the dull ends do not
        agent.update()
    # A slot's priority is its last TD error: large for a kill the network has not learned yet.
    p = agent.replay.priorities.get(np.arange(100))
    assert p[surprising].min() > 5 * np.median(p)
    # Batches are drawn as update() draws them: the 4% of surprising slots fill over 40% of them.
    drawn = np.concatenate([agent.replay.priorities.sample(20, agent.rng) for _ in range(500)])
    assert np.isin(drawn, surprising).mean() > 0.4


def test_importance_weights_correct_the_bias_as_beta_rises():
    agent, surprising = _surprise_buffer(alpha=1.0)
    for _ in range(50):
        agent.update()
    agent.set_progress(0.0)
    assert agent.beta == pytest.approx(0.4)
    agent.set_progress(0.5)
    assert agent.beta == pytest.approx(0.7)
    assert agent.update()["priority_beta"] == pytest.approx(0.7)
    agent.set_progress(1.0)
    assert agent.beta == 1.0
    # At beta = 1 a slot drawn k times as often weighs 1/k as much: weight x priority is the
    # same for the whole batch, and the least likely slot weighs 1.
    idx = np.array([surprising[0], 0, 1, 2])
    w = agent.replay.importance_weights(idx, agent.beta)
    p = agent.replay.priorities.get(idx)
    assert w[0] < 0.5 and w.max() == 1.0
    np.testing.assert_allclose(w * p, np.full(4, p.min()), rtol=1e-5)
    agent.set_progress(0.0)  # at beta = 0.4 the correction is partial: the weights are closer
    assert agent.replay.importance_weights(idx, agent.beta)[0] > w[0]


def test_priority_settings_are_validated():
    plain, _ = _surprise_buffer(alpha=0.0)  # the default: uniform draws, no tree to keep
    assert plain.replay.priorities is None and "priority_beta" not in plain.update()
    with pytest.raises(ValueError, match="priority_alpha"):
        DQNConfig(priority_alpha=1.5)
    with pytest.raises(ValueError, match="priority_beta"):
        DQNConfig(priority_beta=-0.1)
    with pytest.raises(ValueError, match="priority_eps"):
        DQNConfig(priority_eps=0.0)
