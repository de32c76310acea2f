"""DQN: masked double-DQN targets, the target network, greedy play by ensembles,
exploration and learning-rate schedules, n-step returns by hand."""

import numpy as np
import pytest
import torch

from spacewar_ai.agents.dqn import DQNAgent
from spacewar_ai.agents.ppo import PPOAgent
from spacewar_ai.agents.saved import export_for_play, load_agent
from spacewar_ai.config import DQNConfig, PPOConfig

SMALL_PPO = PPOConfig(hidden_sizes=(32, 32), n_steps=4)


def _ensemble_dqn(members: int) -> DQNAgent:
    cfg = DQNConfig(hidden_sizes=(16,), stream_size=8, buffer_size=64, batch_size=16,
                    gradient_steps=1, learning_rate=1e-2, play_ensemble=members,
                    play_ensemble_interval=2)
    agent = DQNAgent(36, 6, cfg, seed=0)
    obs = np.random.default_rng(0).random((16, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    agent.store_transition(obs, np.arange(16) % 6, np.arange(16) % 3, obs, np.ones(16, bool))
    return agent


def _trained_ensemble(seed: int, steps: int) -> DQNAgent:
    """A DQN whose greedy player is its network and two snapshots, trained from `seed`."""
    torch.manual_seed(seed)
    agent = _ensemble_dqn(members=3)
    for _ in range(steps):
        agent.update()
    assert len(agent.play_members) == 2
    return agent


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
    assert np.isfinite(losses["td_loss"])
    # Terminated transitions: the target is the reward alone, so Q(s, 4) moves toward 1.
    for _ in range(300):
        agent.update()
    q = agent.q(agent.obs_norm(torch.from_numpy(obs[:1])))[0, 4].item()
    assert q == pytest.approx(1.0, abs=0.15)


@pytest.mark.parametrize("tau", [0.0, 0.25])
def test_dqn_target_network_copies_or_trails_by_polyak_averaging(tau):
    cfg = DQNConfig(hidden_sizes=(16,), stream_size=8, buffer_size=64, batch_size=16,
                    gradient_steps=1, target_update_interval=3, target_tau=tau)
    agent = DQNAgent(36, 6, cfg, seed=0)
    obs = np.random.default_rng(0).random((16, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    agent.store_transition(obs, np.full(16, 4), np.ones(16), obs, np.ones(16, bool))
    for k in range(1, 4):
        old = [p.detach().clone() for p in agent.q_target.parameters()]
        agent.update()
        now = list(agent.q.parameters())
        for before, target, online in zip(old, agent.q_target.parameters(), now):
            if tau:  # a quarter of the way to the network, every update
                assert torch.allclose(target, before + tau * (online - before), atol=1e-6)
            elif k < 3:  # hard copies only every target_update_interval updates
                assert torch.equal(target, before)
            else:
                assert torch.equal(target, online)


def test_a_config_saved_before_the_retired_dqn_settings_loads_and_their_use_is_refused():
    # What every DQN checkpoint of an earlier version holds: prioritized replay and the
    # weight-averaged player, both off.
    saved = {**DQNConfig().to_dict(), "priority_alpha": 0.0, "priority_beta": 0.4,
             "priority_eps": 1e-3, "play_average_tau": 0.0}
    assert DQNConfig.from_dict(saved) == DQNConfig()
    with pytest.raises(ValueError, match="unknown field 'priority_alpha'"):
        DQNConfig.from_dict({**saved, "priority_alpha": 0.6})


def test_dqn_greedy_play_averages_q_over_snapshots_each_with_its_own_statistics(tmp_path):
    torch.manual_seed(0)
    agent = _ensemble_dqn(members=3)
    obs = np.random.default_rng(1).random((64, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    x = torch.from_numpy(agent.features(obs))
    snapshots = {}  # gradient step -> (the network's Q on x, normalized with its statistics)
    for step in range(1, 7):
        agent.update()
        if step % 2 == 0:  # a snapshot every play_ensemble_interval = 2 gradient steps
            with torch.no_grad():
                snapshots[step] = agent.q(agent.obs_norm(x))
            # The statistics move on after each snapshot; a snapshot keeps those it had.
            shifted = obs[:16].copy()
            shifted[:, :30] += step
            agent.store_transition(shifted, np.zeros(16, int), np.zeros(16), shifted,
                                   np.ones(16, bool))
    # Two snapshots are kept (play_ensemble - 1), the newest: steps 4 and 6, not 2.
    assert len(agent.play_members) == 2
    with torch.no_grad():
        now = agent.q(agent.obs_norm(x))
    expected = (now + snapshots[4] + snapshots[6]) / 3
    assert torch.allclose(agent.played_q(x), expected, atol=1e-5)
    assert not torch.allclose(agent.played_q(x), (now + snapshots[2] + snapshots[6]) / 3,
                              atol=1e-3)
    np.testing.assert_array_equal(agent.select_action(obs, deterministic=True),
                                  expected.argmax(-1).numpy())
    # Exploration and learning are the learner's own: with epsilon 0 it plays its argmax...
    agent.epsilon = 0.0
    np.testing.assert_array_equal(agent.select_action(obs), now.argmax(-1).numpy())
    # ...and it learns exactly what it would without the ensemble.
    torch.manual_seed(0)
    plain = _ensemble_dqn(members=1)
    for step in range(1, 7):
        plain.update()
        if step % 2 == 0:
            shifted = obs[:16].copy()
            shifted[:, :30] += step
            plain.store_transition(shifted, np.zeros(16, int), np.zeros(16), shifted,
                                   np.ones(16, bool))
    assert not plain.play_members and "play_members" not in plain.state_dict()
    for a, b in zip(plain.q.parameters(), agent.q.parameters()):
        assert torch.equal(a, b)
    # The snapshots travel with saves, loads, exports and play copies.
    agent.save(tmp_path / "ens.pt")
    again = DQNAgent(36, 6, agent.config, seed=0)
    again.load(tmp_path / "ens.pt")
    export_for_play(tmp_path / "ens.pt", tmp_path / "play.pt")
    exported, _ = load_agent(tmp_path / "play.pt")
    twin = agent.play_copy()
    for other in (again, exported, twin):
        assert torch.allclose(other.played_q(x), expected, atol=1e-5)
    # A play copy (ten in the league) shares the frozen snapshots instead of holding its own.
    assert all(a is b for a, b in zip(twin.play_members, agent.play_members))
    # Loaded with a smaller ensemble, the newest snapshot is the one kept.
    fewer = DQNAgent(36, 6, DQNConfig(**{**agent.config.to_dict(), "play_ensemble": 2}), seed=0)
    fewer.load(tmp_path / "ens.pt")
    assert torch.allclose(fewer.played_q(x), (now + snapshots[6]) / 2, atol=1e-5)
    with pytest.raises(ValueError, match="play_ensemble"):
        DQNConfig(play_ensemble=0)


def test_two_dqn_runs_join_in_one_exported_ensemble(tmp_path):
    """--export --ensemble-with: the copy's greedy player averages every member of both runs, so
    its Q-values are the two players' means weighted by their sizes, and it loads as any model."""
    from spacewar_ai.agents.checkpoints import CheckpointError

    a, b = _trained_ensemble(0, 4), _trained_ensemble(1, 6)
    a.save(tmp_path / "a.pt")
    b.save(tmp_path / "b.pt")
    obs = np.random.default_rng(2).random((64, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    x = torch.from_numpy(a.features(obs))
    with torch.no_grad():
        qa, qb = a.played_q(x), b.played_q(x)
    assert not torch.allclose(qa, qb, atol=1e-3)  # two runs that disagree
    export_for_play(tmp_path / "a.pt", tmp_path / "ab.pt", ensemble_with=[tmp_path / "b.pt"])
    joined, ckpt = load_agent(tmp_path / "ab.pt")
    assert len(joined.play_members) == 5 and joined.config.play_ensemble == 6
    assert ckpt["metadata"]["ensemble_with"] == [str(tmp_path / "b.pt")]
    with torch.no_grad():
        assert torch.allclose(joined.played_q(x), (qa + qb) / 2, atol=1e-5)
    np.testing.assert_array_equal(joined.select_action(obs, deterministic=True),
                                  ((qa + qb) / 2).argmax(-1).numpy())
    # The run being copied is untouched, and wrong partners are refused by name.
    assert len(load_agent(tmp_path / "a.pt")[0].play_members) == 2
    PPOAgent(36, 6, SMALL_PPO).save(tmp_path / "ppo.pt")
    with pytest.raises(CheckpointError, match="ppo.pt holds a PPO model"):
        export_for_play(tmp_path / "a.pt", tmp_path / "x.pt", ensemble_with=[tmp_path / "ppo.pt"])
    with pytest.raises(CheckpointError, match="ppo.pt: holds a PPO model"):
        export_for_play(tmp_path / "ppo.pt", tmp_path / "x.pt", ensemble_with=[tmp_path / "a.pt"])
    # A member must read the same view and have the same shape: a load rebuilds members in the
    # copy's shape, so a wider partner would have written a file that does not load.
    for name, change in (("tactical", {"observation_view": "tactical"}),
                         ("wide", {"hidden_sizes": (32,)})):
        DQNAgent(36, 6, DQNConfig(**{**a.config.to_dict(), **change})).save(tmp_path / f"{name}.pt")
        with pytest.raises(CheckpointError, match=f"{name}.pt has another shape or view"):
            export_for_play(tmp_path / "a.pt", tmp_path / "x.pt",
                            ensemble_with=[tmp_path / f"{name}.pt"])
    assert not (tmp_path / "x.pt").exists()


def test_epsilon_schedule():
    agent = DQNAgent(36, 6, DQNConfig(start_epsilon=1.0, end_epsilon=0.1,
                                      exploration_fraction=0.5, buffer_size=10))
    agent.set_progress(0.0)
    assert agent.epsilon == 1.0
    agent.set_progress(0.25)
    assert agent.epsilon == pytest.approx(0.55)
    agent.set_progress(0.9)
    assert agent.epsilon == pytest.approx(0.1)


@pytest.mark.parametrize("anneal", [True, False])
def test_dqn_learning_rate_annealing_reaches_zero_at_the_end(anneal):
    agent = DQNAgent(36, 6, DQNConfig(learning_rate=1e-3, anneal_lr=anneal, buffer_size=10))
    seen = []
    for progress in (0.0, 0.5, 1.0):
        agent.set_progress(progress)
        seen.append(agent.optimizer.param_groups[0]["lr"])
    assert seen == pytest.approx([1e-3, 5e-4, 0.0] if anneal else [1e-3] * 3)


def test_dqn_n_step_returns_by_hand():
    """n=3, gamma=0.5. Game 0 is terminated after its 2nd decision, game 1 truncated after its
    4th; a transition holds the discounted rewards up to its n-th decision or its game's end, the
    observation after them, and gamma to the power of the decisions summed."""
    cfg = DQNConfig(hidden_sizes=(8,), stream_size=4, buffer_size=64, batch_size=4, n_step=3,
                    gamma=0.5, reward_scale=1.0, observation_view="world")  # the buffer keeps
    agent = DQNAgent(36, 6, cfg, seed=0)  # what the network reads: here the stamped observations
    rewards = [(1.0, 10.0), (2.0, 20.0), (4.0, 40.0), (8.0, 80.0)]
    terminated = [(False, False), (True, False), (False, False), (False, False)]
    done = [(False, False), (True, False), (False, False), (False, True)]
    for t in range(4):
        obs = np.zeros((2, 36), np.float32)
        obs[:, 0] = [t, 100 + t]  # tags: the decision's index in each game
        nxt = obs.copy()
        nxt[:, 0] += 0.5  # "the observation after decision t"
        agent.store_transition(obs, np.array([t % 6, (t + 1) % 6]), np.array(rewards[t]), nxt,
                               np.array(terminated[t]), done=np.array(done[t]))
    r = agent.replay
    got = {(float(r.obs[i, 0]), float(r.next[i, 0])):
           (float(r.rewards[i]), float(r.terminated[i]),
            float(r.discount[i]), int(r.actions[i])) for i in range(len(agent))}
    assert got == {
        # game 0: decisions 0-1 end in a termination, then a new game starts at decision 2
        (0.0, 1.5): (1.0 + 0.5 * 2.0, 1.0, 0.25, 0),
        (1.0, 1.5): (2.0, 1.0, 0.5, 1),
        # game 1: decisions 0-2 are a full window; the truncation at 3 flushes 1, 2 and 3
        (100.0, 102.5): (10.0 + 0.5 * 20.0 + 0.25 * 40.0, 0.0, 0.125, 1),
        (101.0, 103.5): (20.0 + 0.5 * 40.0 + 0.25 * 80.0, 0.0, 0.125, 2),
        (102.0, 103.5): (40.0 + 0.5 * 80.0, 0.0, 0.25, 3),
        (103.0, 103.5): (80.0, 0.0, 0.5, 4),
    }
    # Game 0's new game (decisions 2 and 3) is still waiting for its third decision.
    assert len(agent) == 6
