"""PPO: GAE by hand, an update that moves the policy, and many PPO networks played as one pass."""

import copy

import numpy as np
import pytest
import torch

from spacewar_ai.agents import ppo
from spacewar_ai.agents.base import autocast
from spacewar_ai.agents.ppo import PPOAgent, RolloutBuffer, compute_gae
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
    adv, ret = compute_gae(r, v, d, nv, g, lam)
    expected = torch.tensor([[2.012, 0.819872], [1.6, 1.0276], [0.24, 1.33]])
    assert torch.allclose(adv, expected, atol=1e-6)
    assert torch.allclose(ret, expected + v)


def test_ppo_update_changes_the_policy_and_reports_losses():
    agent = PPOAgent(36, 6, SMALL_PPO)
    buffer = agent.new_buffer(8)
    obs = np.random.default_rng(1).normal(size=(8, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    before = [p.clone() for p in agent.net.actor.parameters()]
    for _ in range(4):
        d = agent.decide(obs)
        buffer.add(d, d.action, np.where(d.action == 4, 100.0, 0.0), np.zeros(8, bool))
    with pytest.raises(RuntimeError, match="full"):
        buffer.add(d, d.action, np.zeros(8), np.zeros(8, bool))
    losses = agent.update(buffer, obs)
    assert set(losses) >= {"policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac",
                           "old_approx_kl"}
    assert any(not torch.equal(b, p) for b, p in zip(before, agent.net.actor.parameters()))
    with pytest.raises(RuntimeError, match="full rollout"):
        agent.update(buffer, obs)  # the update emptied it


def test_a_minibatch_learned_in_parts_moves_the_weights_as_one_pass_does(monkeypatch):
    """A minibatch larger than PASS_ROWS is learned in parts whose gradients add up: plain SGD
    (which, unlike Adam, shows a gradient's scale) moves the weights and reports the losses as
    one pass over the whole minibatch does, a short last part included."""
    config = PPOConfig(hidden_sizes=(32, 32), n_steps=5, num_minibatches=1, max_grad_norm=1e9,
                       anneal_lr=False)
    obs = np.random.default_rng(4).normal(size=(20, 36)).astype(np.float32)
    obs[:, 30:] = 1.0

    def learn(pass_rows: int):
        monkeypatch.setattr(ppo, "PASS_ROWS", pass_rows)
        torch.manual_seed(5)
        agent = PPOAgent(36, 6, config)
        buffer = agent.new_buffer(20)
        for t in range(5):
            d = agent.decide(obs)
            buffer.add(d, d.action, np.where(d.action == 4, 1.0, -0.5), np.full(20, t == 2))
        sgd = torch.optim.SGD(agent.net.parameters(), lr=0.5)
        losses = ppo.ppo_update(agent.net, sgd, config, buffer, torch.zeros(20), None)
        return [p.detach().clone() for p in agent.net.parameters()], losses

    whole, whole_losses = learn(100)
    parts, parts_losses = learn(32)  # 100 rows: parts of 32, 32, 32 and 4
    assert any(not torch.equal(w, p) for w, p in zip(whole, parts))  # other sums, rounded apart
    for w, p in zip(whole, parts):
        torch.testing.assert_close(p, w, rtol=1e-4, atol=1e-6)
    assert parts_losses == pytest.approx(whole_losses, rel=1e-4, abs=1e-6)


def test_the_critic_learns_in_bfloat16_but_gives_its_value_in_float32():
    """In bfloat16 the critic's hidden layers run at that precision and its value is not rounded
    to it (the last layer stays float32); in float32 the value is the plain network's."""
    agent = PPOAgent(36, 6, SMALL_PPO)
    width = agent.net.critic[0].in_features  # the view's width, read from the observation
    x = torch.from_numpy(np.random.default_rng(2).normal(size=(64, width)).astype(np.float32))
    full = agent.net.value(x)
    assert torch.equal(full, agent.net.critic(x).squeeze(-1))
    half = agent.net.value(x, torch.bfloat16)
    assert half.dtype == torch.float32
    assert not torch.equal(half, full)  # the hidden layers really ran in bfloat16
    assert torch.allclose(half, full, atol=0.05)
    assert not torch.equal(half, half.bfloat16().float())  # the value itself is not rounded


def test_a_bfloat16_learner_plays_its_rollouts_in_bfloat16_with_the_weights_it_has_now():
    """A learner in bfloat16 plays its rollouts as its update's bfloat16 passes compute the
    policy (not in float32), and after each change of its weights (an update, a load, an
    imitation) with the new weights, as a new agent given them plays."""
    rng = np.random.default_rng(6)
    obs = rng.normal(size=(16, 36)).astype(np.float32)
    obs[:, 30:] = 1.0

    def agent(state=None, seed=7):
        torch.manual_seed(seed)
        made = PPOAgent(36, 6, SMALL_PPO)
        made.learn_dtype = torch.bfloat16
        if state is not None:
            made.load_state_dict(state)
        return made

    def played(a):
        return a.decide(obs).logp_all

    learner = agent()
    first = played(learner)
    x, mask, _ = learner._batch(obs)
    x = learner.obs_norm(x)
    with torch.no_grad(), autocast(x.device, torch.bfloat16):
        seen = torch.log_softmax(learner.net.logits(x, mask).float(), -1)
    assert torch.equal(first, seen)
    with torch.no_grad():
        assert not torch.allclose(first, torch.log_softmax(learner.net.logits(x, mask), -1),
                                  rtol=0, atol=1e-6)
    buffer = learner.new_buffer(16)
    for _ in range(4):
        d = learner.decide(obs)
        buffer.add(d, d.action, np.where(d.action == 4, 1.0, 0.0), np.zeros(16, bool))
    learner.update(buffer, obs)
    assert torch.equal(played(learner), played(agent(learner.state_dict())))
    assert not torch.equal(played(learner), first)
    other = agent(seed=8)
    learner.load_state_dict(other.state_dict())
    assert torch.equal(played(learner), played(other))
    learner.imitate(obs, np.full(16, 4), learner.optimizer, batch_size=8)
    assert torch.equal(played(learner), played(agent(learner.state_dict())))
    assert not torch.equal(played(learner), played(other))


def test_imitation_judges_its_data_before_learning_it_on_a_sample_spanning_all_of_it():
    """`foreseen` is the share of the actions the actor already picked before the fit, judged on
    an even sample of one minibatch's size: labels that agree with the actor in the first half
    and never in the second give one half, not the first rows' figure."""
    agent = PPOAgent(36, 6, SMALL_PPO)
    obs = np.random.default_rng(3).normal(size=(4096, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    picked = agent.select_action(obs, deterministic=True)
    labels = np.where(np.arange(4096) < 2048, picked, (picked + 1) % 6)
    fitted = agent.imitate(obs, labels, agent.optimizer, batch_size=512, judge=True)
    assert fitted["foreseen"] == 0.5
    before = agent.select_action(obs, deterministic=True)
    assert not np.array_equal(before, picked)  # and then it learned from them


def test_a_fit_that_skips_sure_moves_learns_exactly_from_the_rest():
    """With `unsure_below`, the actor reads every row first and learns only from those whose
    action it gave a probability below the bound: the same as a fit on exactly those rows, its
    figures judged on every row; with every move foreseen surely it learns nothing."""
    rng = np.random.default_rng(7)
    obs = rng.normal(size=(600, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    teacher = PPOAgent(36, 6, SMALL_PPO)
    labels = teacher.select_action(obs, deterministic=True)
    torch.manual_seed(8)
    sure = PPOAgent(36, 6, SMALL_PPO)
    sure.imitate(obs, labels, sure.optimizer, 64, epochs=30)  # sure of some moves, not all
    every = PPOAgent(36, 6, SMALL_PPO)
    every.load_state_dict(sure.state_dict())
    with torch.no_grad():
        x = torch.from_numpy(sure.features(obs))
        chance = torch.softmax(sure.net.logits(sure.obs_norm(x), x[:, -6:] > 0.5), -1)
    picked = chance.gather(1, torch.from_numpy(labels)[:, None])[:, 0].numpy()
    unsure = np.flatnonzero(picked < 0.9)
    assert 50 < len(unsure) < 550, len(unsure)
    fitted = sure.imitate(obs, labels, sure.optimizer, 64, judge=True, fit_scaling=False,
                          unsure_below=0.9)
    every.imitate(obs[unsure], labels[unsure], every.optimizer, 64, fit_scaling=False)
    assert fitted["learned"] == len(unsure)
    assert fitted["foreseen"] == pytest.approx(np.mean(chance.argmax(-1).numpy() == labels))
    assert all(torch.equal(a, b) for a, b in zip(sure.net.actor.parameters(),
                                                 every.net.actor.parameters()))
    before = [p.detach().clone() for p in sure.net.actor.parameters()]
    none = sure.imitate(obs[:4], labels[:4], sure.optimizer, 64, fit_scaling=False,
                        unsure_below=1e-9)
    assert none["learned"] == 0 and none["loss"] > 0
    assert all(torch.equal(a, b) for a, b in zip(before, sure.net.actor.parameters()))


def test_a_bfloat16_fit_passes_whole_minibatches_and_the_rows_filling_the_last_weigh_nothing():
    """In bfloat16 every pass of a fit is one minibatch's size (a new size makes oneDNN build
    kernels again); the rows that fill up the last, partial minibatch change nothing: one plain
    SGD step on 40 rows in a minibatch of 64 moves the actor as a step on exactly those 40 rows
    does."""
    obs = np.random.default_rng(4).normal(size=(40, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    labels = np.random.default_rng(5).integers(0, 6, 40)
    moved = []
    for batch_size in (64, 40):
        torch.manual_seed(6)
        agent = PPOAgent(36, 6, SMALL_PPO)
        agent.learn_dtype = torch.bfloat16
        sizes = []
        logits = agent.net.logits
        agent.net.logits = lambda x, mask: sizes.append(len(x)) or logits(x, mask)
        before = [p.detach().clone() for p in agent.net.actor.parameters()]
        agent.imitate(obs, labels, torch.optim.SGD(agent.net.actor.parameters(), lr=1.0),
                      batch_size, judge=True)
        # The judge's sample, then the pass; fewer rows than a minibatch are all the sample.
        assert sizes == [40, batch_size]
        moved.append([p.detach() - b for p, b in zip(agent.net.actor.parameters(), before)])
    for padded, exact in zip(*moved):
        assert torch.allclose(padded, exact, atol=1e-5, rtol=1e-3)
    assert any(p.abs().max() > 1e-3 for p in moved[0])  # the step did move the actor


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
    want = np.array([agents[w].select_action(o, deterministic=True) for o, w in zip(obs, which)])
    assert np.array_equal(got, want)
    sampled = PolicyStack(agents).act(obs, which)
    for a, m in zip(sampled, obs[:, 30:]):
        assert m[a] == 1.0 or (not m.any() and a == 0)
    with pytest.raises(ValueError, match="one shape"):
        PolicyStack([agents[0], PPOAgent(36, 6, PPOConfig(hidden_sizes=(8,)))])


def test_a_rollout_handed_over_in_slices_trains_as_the_whole():
    """What rollout workers do (`arrays` of each one's buffer, `joined` on the learner): a
    rollout of 6 games handed over whole, or in slices of 4 and 2 games, gives the update, bit
    for bit, that the buffer it was played into gives."""
    cfg = PPOConfig(n_steps=8, hidden_sizes=(16,), num_minibatches=2, update_epochs=2)
    torch.manual_seed(0)
    player = PPOAgent(36, 6, cfg)

    def played():
        torch.manual_seed(2)
        rng = np.random.default_rng(0)
        buffer = player.new_buffer(6)
        for _ in range(cfg.n_steps):
            d = player.decide(rng.normal(size=(6, 36)).astype(np.float32))
            buffer.add(d, rng.integers(0, 6, 6), rng.normal(size=6), rng.random(6) < 0.2)
        return buffer

    buffer = played()
    rollout = buffer.arrays()
    assert buffer.step == 0 and rollout["actions"].shape == (8, 6)
    with pytest.raises(RuntimeError, match="full"):
        buffer.arrays()
    halves = [{k: v[:, :4] for k, v in rollout.items()}, {k: v[:, 4:] for k, v in rollout.items()}]
    next_obs = np.random.default_rng(1).normal(size=(6, 36)).astype(np.float32)
    weights = []
    for buffer in (played(), RolloutBuffer.joined([rollout]), RolloutBuffer.joined(halves)):
        learner = PPOAgent(36, 6, cfg)
        learner.load_state_dict(player.state_dict())
        torch.manual_seed(1)
        learner.update(buffer, next_obs)
        weights.append(learner.net.state_dict())
    for other in weights[1:]:
        assert all(torch.equal(weights[0][k], other[k]) for k in other)


def test_a_learner_warmed_up_while_its_workers_start_learns_as_one_that_was_not():
    """What the trainer does while rollout workers start: warming up a resumed learner (its
    saved optimizer state not yet applied) leaves what its next updates give unchanged."""
    cfg = PPOConfig(n_steps=4, hidden_sizes=(16,))

    def learn(agent, seed):
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        buffer = agent.new_buffer(6)
        for _ in range(cfg.n_steps):
            d = agent.decide(rng.normal(size=(6, 36)).astype(np.float32))
            buffer.add(d, d.action, rng.normal(size=6), rng.random(6) < 0.2)
        agent.update(buffer, rng.normal(size=(6, 36)).astype(np.float32))

    torch.manual_seed(0)
    trained = PPOAgent(36, 6, cfg)
    learn(trained, 0)
    saved = trained.state_dict()
    after = []
    for warm in (False, True):
        agent = PPOAgent(36, 6, cfg)
        agent.load_state_dict(copy.deepcopy(saved))  # Adam would step the saved moments
        if warm:
            agent.warm_up()
        learn(agent, 1)
        learn(agent, 2)
        after.append(agent.state_dict())
    plain, warmed = after
    assert all(torch.equal(plain["net"][k], warmed["net"][k]) for k in plain["net"])
    moments = [[v for s in state["optimizer"]["state"].values() for v in s.values()]
               for state in after]
    assert len(moments[0]) and all(torch.equal(a, b) for a, b in zip(*moments))


def test_a_runs_checkpoints_average_into_one_network_that_plays(tmp_path):
    """--export --average-with: the copy's weights and observation statistics are the members'
    means, it names them, it flies as any checkpoint, and the checkpoint copied is untouched."""
    from spacewar_ai.agents.saved import export_for_play, load_agent
    from spacewar_ai.pilots.build import make_pilot

    members = []
    for seed in range(3):
        torch.manual_seed(seed)
        agent = PPOAgent(36, 6, SMALL_PPO)
        agent.obs_norm.update(torch.randn(64, agent.input_dim) * (seed + 1) + seed)
        agent.save(tmp_path / f"m{seed}.pt")
        members.append(agent)
    before = {k: v.clone() for k, v in members[0].net.state_dict().items()}
    export_for_play(tmp_path / "m0.pt", tmp_path / "mean.pt",
                    average_with=[tmp_path / "m1.pt", tmp_path / "m2.pt", tmp_path / "m0.pt",
                                  tmp_path / "m2.pt"])  # a glob's repeats count once
    mean, ckpt = load_agent(tmp_path / "mean.pt")
    for name, value in mean.net.state_dict().items():
        expected = sum(m.net.state_dict()[name] for m in members) / 3
        assert torch.allclose(value, expected, atol=1e-6), name
        if name.endswith("weight"):  # drawn at random, where biases start at zero
            assert not torch.allclose(value, before[name])
    assert torch.allclose(mean.obs_norm.mean, sum(m.obs_norm.mean for m in members) / 3)
    assert torch.allclose(mean.obs_norm.var, sum(m.obs_norm.var for m in members) / 3)
    assert ckpt["metadata"]["average_with"] == [str(tmp_path / "m1.pt"), str(tmp_path / "m2.pt")]
    obs = np.random.default_rng(0).random((16, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    actions = make_pilot(str(tmp_path / "mean.pt")).act(obs)
    assert actions.shape == (16,) and ((0 <= actions) & (actions < 6)).all()
    kept, _ = load_agent(tmp_path / "m0.pt")
    assert all(torch.equal(kept.net.state_dict()[k], v) for k, v in before.items())


def test_a_network_widened_to_read_the_jumps_left_plays_as_it_did_until_it_learns_them():
    """--init-from a network saved before observations held the jumps left: the widened network
    gives the jumps zero weight, so it picks the moves the old one picked from the rest."""
    rng = np.random.default_rng(0)
    old = PPOAgent(46, 16, SMALL_PPO)  # the switches with hyperspace, before the jumps left
    rows = rng.uniform(-1, 1, (200, 48)).astype(np.float32)
    rows[:, 30:32] = rng.uniform(0, 1, (200, 2))
    rows[:, 32:] = rng.random((200, 16)) < 0.7
    new = PPOAgent(48, 16, SMALL_PPO)
    new.load_state_dict(ppo.shown_jumps(old.play_state()))
    learned = np.concatenate([rows[:, :30], rows[:, 32:]], 1)
    assert np.array_equal(new.select_action(rows, deterministic=True),
                          old.select_action(learned, deterministic=True))
    assert new.obs_norm.mean[30:32].tolist() == [0.5, 0.5]
    # Given weight on them, the jumps left move its choices.
    with torch.no_grad():
        new.net.actor[0].weight[:, 30] = 5.0
    assert not np.array_equal(new.select_action(rows, deterministic=True),
                              old.select_action(learned, deterministic=True))
