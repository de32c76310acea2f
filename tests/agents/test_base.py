"""PPO and DQN agents: GAE, masking, batching, save/load."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from spacewar_ai.agents.dqn import DQNAgent
from spacewar_ai.agents.ppo import PPOAgent
from spacewar_ai.config import DQNConfig, PPOConfig

SMALL_PPO = PPOConfig(hidden_sizes=(32, 32), n_steps=4)
SMALL_DQN = DQNConfig(hidden_sizes=(32, 32), stream_size=16, buffer_size=1000, batch_size=8)


def test_diagnostic_constructor():
    agent = PPOAgent(36, 6, None, "cpu")
    assert isinstance(agent.select_action(np.zeros(36, np.float32)), int)


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
        played = [agent.select_action(obs, deterministic=deterministic)]
        if isinstance(agent, PPOAgent) and not deterministic:
            played.append(agent.decide(obs).action)  # the learning path masks the same way
        for actions in played:
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
    agent.obs_norm.update(torch.from_numpy(agent.features(obs * 3 + 1)))  # stats of the view
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


@pytest.mark.parametrize("cls", [PPOAgent, DQNAgent])
def test_play_copy_plays_alike_and_carries_no_buffers(cls):
    cfg = SMALL_DQN if cls is DQNAgent else SMALL_PPO
    agent = cls(36, 6, cfg, **({"seed": 3} if cls is DQNAgent else {}))
    obs = np.random.default_rng(0).random((64, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    if cls is DQNAgent:  # fill the buffer and learn a little, so the copy has state to match
        agent.store_transition(obs, np.arange(64) % 6, np.ones(64), obs, np.ones(64, bool))
        agent.update()
        agent.epsilon = 0.5
    rng_before = torch.get_rng_state()
    twin = agent.play_copy()
    # Building the copy's networks must not move torch's global generator: the learner's
    # sampling draws from it, and a moved stream would change the run.
    assert torch.equal(torch.get_rng_state(), rng_before)
    if cls is DQNAgent:  # the replay stays with the learner (PPO's rollouts are buffers apart)
        for mine, theirs in ((twin.replay.obs, agent.replay.obs),
                             (twin.replay.next, agent.replay.next)):
            assert len(mine) == 1 < len(theirs)
    assert not twin.optimizer.state  # no optimizer moments either
    assert twin.architecture == agent.architecture
    np.testing.assert_array_equal(twin.select_action(obs, deterministic=True),
                                  agent.select_action(obs, deterministic=True))
    if cls is DQNAgent:  # exploration draws the same numbers: the random generator came along
        np.testing.assert_array_equal(twin.select_action(obs), agent.select_action(obs))
    frozen = twin.select_action(obs, deterministic=True)
    with torch.no_grad():  # the learner moves on; the copy does not
        for p in (agent.q if cls is DQNAgent else agent.net).parameters():
            p.mul_(-1.0)
    np.testing.assert_array_equal(twin.select_action(obs, deterministic=True), frozen)
