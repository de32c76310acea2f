"""PPO and DQN agents: GAE, masking, batching, save/load."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from spacewar_ai.agents import DQNAgent, PPOAgent
from spacewar_ai.config import DQNConfig, PPOConfig

SMALL_PPO = PPOConfig(hidden_sizes=(32, 32), n_steps=4)
SMALL_DQN = DQNConfig(hidden_sizes=(32, 32), stream_size=16, buffer_size=1000, batch_size=8)


def test_diagnostic_constructor():
    agent = PPOAgent(36, 6, None, "cpu")
    assert isinstance(agent.select_action(np.zeros(36, np.float32)), int)


def test_gae_matches_a_hand_computed_example():
    # Two games, three steps; game 0 ends after step 1 (index 1), so step 2 starts a new game.
    r = torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    v = torch.tensor([[0.5, 0.1], [0.4, 0.2], [0.3, 0.3]])
    d = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    nv = torch.tensor([0.6, 0.7])
    g, lam = 0.9, 0.8
    # Game 0, backwards: t2 = 0 + .9*.6 - .3 = .24; t1 (terminal) = 2 - .4 = 1.6;
    # t0 = 1 + .9*.4 - .5 + .72*1.6 = 2.012.
    # Game 1: t2 = 1 + .9*.7 - .3 = 1.33; t1 = 0 + .9*.3 - .2 + .72*1.33 = 1.0276;
    # t0 = .9*.2 - .1 + .72*1.0276 = .819872.
    adv, ret = PPOAgent.compute_gae(r, v, d, nv, g, lam)
    expected = torch.tensor([[2.012, 0.819872], [1.6, 1.0276], [0.24, 1.33]])
    assert torch.allclose(adv, expected, atol=1e-6)
    assert torch.allclose(ret, expected + v)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=6, max_size=6), min_size=1, max_size=16),
       st.integers(0, 2**31 - 1), st.booleans())
def test_masked_actions_are_never_chosen(mask_rows, seed, deterministic):
    torch.manual_seed(seed)
    masks = np.array(mask_rows, dtype=np.float32)
    obs = np.random.default_rng(seed).normal(size=(len(masks), 36)).astype(np.float32)
    obs[:, 30:] = masks
    for agent in (PPOAgent(36, 6, SMALL_PPO), DQNAgent(36, 6, SMALL_DQN, seed=seed)):
        if isinstance(agent, DQNAgent):
            agent.epsilon = 0.0 if deterministic else 1.0
        actions = agent.select_action(obs, deterministic=deterministic)
        for a, m in zip(actions, masks):
            assert m[a] == 1.0 or (not m.any() and a == 0)


def test_batches_and_single_observations():
    agent = PPOAgent(36, 6, SMALL_PPO)
    batch = agent.select_action(np.zeros((5, 36), np.float32))
    assert batch.shape == (5,) and batch.dtype == np.int64
    with pytest.raises(ValueError, match=r"\(36,\) or \(N, 36\)"):
        agent.select_action(np.zeros(35, np.float32))


@pytest.mark.parametrize("cls,cfg", [(PPOAgent, SMALL_PPO), (DQNAgent, SMALL_DQN)])
def test_save_load_round_trip_gives_identical_actions(tmp_path, cls, cfg):
    agent = cls(36, 6, cfg)
    obs = np.random.default_rng(0).normal(size=(64, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    agent.obs_norm.update(torch.from_numpy(obs * 3 + 1))
    path = tmp_path / "a.pt"
    agent.save(path, {"note": "test"})
    other = cls(36, 6, cfg)
    meta = other.load(path)
    assert meta["metadata"] == {"note": "test"}
    assert np.array_equal(agent.select_action(obs, deterministic=True),
                          other.select_action(obs, deterministic=True))
    assert torch.equal(agent.obs_norm.mean, other.obs_norm.mean)
    # weights_only: the file holds no pickled objects.
    torch.load(path, weights_only=True)


def test_ppo_update_changes_the_policy_and_reports_losses():
    agent = PPOAgent(36, 6, SMALL_PPO, num_envs=8)
    obs = np.random.default_rng(1).normal(size=(8, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    before = [p.clone() for p in agent.net.actor.parameters()]
    for _ in range(4):
        a = agent.select_action(obs)
        agent.store_transition(np.where(a == 4, 100.0, 0.0), np.zeros(8, bool), action=a)
    losses = agent.update(next_obs=obs)
    assert set(losses) >= {"policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction"}
    assert any(not torch.equal(b, p) for b, p in zip(before, agent.net.actor.parameters()))
    with pytest.raises(RuntimeError, match="full rollout"):
        agent.update(next_obs=obs)


def test_dqn_double_target_uses_masks_and_terminations():
    cfg = DQNConfig(hidden_sizes=(16,), stream_size=8, buffer_size=64, batch_size=16,
                    gradient_steps=1, gamma=0.5, reward_scale=1.0, learning_rate=1e-2)
    agent = DQNAgent(36, 6, cfg, seed=0)
    obs = np.zeros((16, 36), np.float32)
    obs[:, 30:] = 1.0
    nxt = obs.copy()
    nxt[:, 30:] = 0.0
    nxt[:, 30] = 1.0  # only drift is valid next
    agent.store_transition(obs, np.full(16, 4), np.ones(16), nxt, np.ones(16, bool))
    losses = agent.update()
    assert np.isfinite(losses["q_loss"])
    # Terminated transitions: the target is the reward alone, so Q(s, 4) moves toward 1.
    for _ in range(300):
        agent.update()
    q = agent.q(agent.obs_norm(torch.from_numpy(obs[:1])))[0, 4].item()
    assert q == pytest.approx(1.0, abs=0.15)


def test_epsilon_schedule():
    agent = DQNAgent(36, 6, DQNConfig(start_epsilon=1.0, end_epsilon=0.1,
                                      exploration_fraction=0.5, buffer_size=10))
    agent.set_progress(0.0)
    assert agent.epsilon == 1.0
    agent.set_progress(0.25)
    assert agent.epsilon == pytest.approx(0.55)
    agent.set_progress(0.9)
    assert agent.epsilon == pytest.approx(0.1)
