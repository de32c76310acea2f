"""PPO: GAE by hand, an update that moves the policy, and many PPO networks played as one pass."""

import numpy as np
import pytest
import torch

from spacewar_ai.agents.ppo import PPOAgent
from spacewar_ai.config import PPOConfig

SMALL_PPO = PPOConfig(hidden_sizes=(32, 32), n_steps=4)


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


def test_ppo_update_changes_the_policy_and_reports_losses():
    agent = PPOAgent(36, 6, SMALL_PPO, num_envs=8)
    obs = np.random.default_rng(1).normal(size=(8, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    before = [p.clone() for p in agent.net.actor.parameters()]
    for _ in range(4):
        a = agent.select_action(obs)
        agent.store_transition(np.where(a == 4, 100.0, 0.0), np.zeros(8, bool), action=a)
    losses = agent.update(next_obs=obs)
    assert set(losses) >= {"policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac",
                           "old_approx_kl"}
    assert any(not torch.equal(b, p) for b, p in zip(before, agent.net.actor.parameters()))
    with pytest.raises(RuntimeError, match="full rollout"):
        agent.update(next_obs=obs)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_policy_stack_plays_like_each_network(activation):
    """The league plays its PPO opponents in one batched pass; greedy, every row gets the action
    its own network would choose, masks included, whatever the grouping."""
    from spacewar_ai.agents.ppo import PolicyStack

    rng = np.random.default_rng(5)
    agents = []
    for k in range(3):
        torch.manual_seed(k)
        a = PPOAgent(36, 6, PPOConfig(hidden_sizes=(32, 16), activation=activation))
        raw = rng.normal(k, 1 + k, size=(100, 36)).astype(np.float32)
        a.obs_norm.update(torch.from_numpy(a.features(raw)))  # the statistics are of the view
        agents.append(a)
    obs = rng.normal(size=(50, 36)).astype(np.float32)
    obs[:, 30:] = rng.random((50, 6)) < 0.6
    which = rng.integers(0, 3, 50)
    which[:5] = 2  # uneven groups: padding rows must not leak into real ones
    got = PolicyStack(agents).act(obs, which, deterministic=True)
    want = np.array([agents[w].act(o, deterministic=True) for o, w in zip(obs, which)])
    assert np.array_equal(got, want)
    sampled = PolicyStack(agents).act(obs, which)
    for a, m in zip(sampled, obs[:, 30:]):
        assert m[a] == 1.0 or (not m.any() and a == 0)
    with pytest.raises(ValueError, match="one shape"):
        PolicyStack([agents[0], PPOAgent(36, 6, PPOConfig(hidden_sizes=(8,)))])


def test_a_rollout_handed_over_in_slices_trains_as_the_whole():
    """What rollout workers do (take_rollout on each, load_rollout on the learner): a rollout
    of 6 games taken from the agent that played it and loaded back in slices of 4 and 2 games
    gives the update, bit for bit, that the whole rollout gives."""
    cfg = PPOConfig(n_steps=8, hidden_sizes=(16,), num_minibatches=2, update_epochs=2)
    player = PPOAgent(36, 6, cfg, num_envs=6)
    rng = np.random.default_rng(0)
    for t in range(cfg.n_steps):
        player.select_action(rng.normal(size=(6, 36)).astype(np.float32))
        player.store_transition(rng.normal(size=6), rng.random(6) < 0.2,
                                action=rng.integers(0, 6, 6))
    with pytest.raises(RuntimeError, match="full rollout"):
        PPOAgent(36, 6, cfg, num_envs=6).take_rollout()
    rollout = player.take_rollout()
    assert player.step == 0 and rollout["actions"].shape == (8, 6)
    next_obs = rng.normal(size=(6, 36)).astype(np.float32)
    learners = []
    for parts in ([rollout], [{k: v[:, :4] for k, v in rollout.items()},
                              {k: v[:, 4:] for k, v in rollout.items()}]):
        learner = PPOAgent(36, 6, cfg, num_envs=1)
        learner.load_state_dict(player.state_dict())
        learner.load_rollout(parts)
        torch.manual_seed(1)
        learner.update(next_obs=next_obs)
        learners.append(learner)
    whole, sliced = (a.net.state_dict() for a in learners)
    assert all(torch.equal(whole[k], sliced[k]) for k in whole)
    assert not torch.equal(whole["actor.0.weight"], player.net.state_dict()["actor.0.weight"])


def test_soft_cross_entropy_is_the_cross_entropy_of_one_hot_targets_and_ignores_masked_actions():
    import torch.nn.functional as F

    from spacewar_ai.agents.base import NEG_INF, soft_cross_entropy

    logits = torch.tensor([[2.0, 0.5, NEG_INF, -1.0], [0.0, float("-inf"), 1.0, 3.0]])
    labels = torch.tensor([1, 3])
    one_hot = F.one_hot(labels, 4).float()
    assert torch.allclose(soft_cross_entropy(logits, one_hot), F.cross_entropy(logits, labels))
    soft = torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.25, 0.0, 0.25, 0.5]])
    loss = soft_cross_entropy(logits, soft)
    logp = torch.log_softmax(logits, -1)
    by_hand = -(0.5 * logp[0, 0] + 0.5 * logp[0, 1] + 0.25 * logp[1, 0] + 0.25 * logp[1, 2]
                + 0.5 * logp[1, 3]) / 2
    assert torch.isfinite(loss) and torch.allclose(loss, by_hand)
