"""PPO and DQN agents: GAE, masking, batching, save/load."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from spacewar_ai.agents.base import RunningNorm
from spacewar_ai.agents.dqn import DQNAgent
from spacewar_ai.agents.ppo import PPOAgent
from spacewar_ai.config import DQNConfig, PPOConfig

SMALL_PPO = PPOConfig(hidden_sizes=(32, 32), n_steps=4)
SMALL_DQN = DQNConfig(hidden_sizes=(32, 32), stream_size=16, buffer_size=1000, batch_size=8)


def test_diagnostic_constructor():
    agent = PPOAgent(36, 6, None, "cpu")
    assert isinstance(agent.select_action(np.zeros(36, np.float32)), int)


def test_running_statistics_are_those_of_every_row_seen():
    """Batches of any size, one row included, give the mean and variance of all their rows at
    once, beside the prior every RunningNorm starts from (mean 0, variance 1, weight 1e-4),
    also where a column's spread is tiny beside its mean, or none."""
    rng = np.random.default_rng(0)
    norm = RunningNorm(4)
    batches = [rng.normal(loc=[0.0, 1e3, -5.0, 7.0], scale=[1.0, 1e-2, 30.0, 0.0], size=(n, 4))
               for n in (1, 700, 3, 2048, 64)]
    for batch in batches:
        norm.update(torch.from_numpy(batch.astype(np.float32)))
    rows = np.concatenate([b.astype(np.float32) for b in batches]).astype(np.float64)
    n, prior = len(rows), 1e-4
    mean = rows.mean(0) * n / (n + prior)
    var = (prior + rows.var(0) * n + rows.mean(0) ** 2 * prior * n / (n + prior)) / (n + prior)
    assert np.allclose(norm.mean.numpy(), mean, rtol=1e-9, atol=0)
    assert np.allclose(norm.var.numpy(), var, rtol=1e-6, atol=0)


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
    assert not twin.state_dict()["optimizer"]["state"]  # no optimizer moments either
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


def test_a_loaded_optimizer_goes_on_with_its_moments_though_built_only_to_learn(tmp_path):
    """An agent builds its optimizer when it first learns (playing never needs one), and one
    loaded from a checkpoint then learns on from the moments it saved."""
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(64, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    actions = rng.integers(0, 6, 64)
    agent = PPOAgent(36, 6, SMALL_PPO)
    agent.imitate(obs, actions, agent.optimizer, 16, epochs=2, fit_scaling=False)
    agent.save(tmp_path / "a.pt", {})
    resumed, without = PPOAgent(36, 6, SMALL_PPO), PPOAgent(36, 6, SMALL_PPO)
    resumed.load(tmp_path / "a.pt")
    # Played and saved again before learning: the saved moments pass through unchanged.
    resumed.select_action(obs)
    resumed.save(tmp_path / "b.pt", {})
    again = PPOAgent(36, 6, SMALL_PPO)
    again.load(tmp_path / "b.pt")
    state = agent.state_dict()
    without.load_state_dict({k: v for k, v in state.items() if k != "optimizer"})
    for a in (agent, again, without):
        a.imitate(obs, actions, a.optimizer, 16, fit_scaling=False)
    learned = [torch.cat([p.flatten() for p in a.net.parameters()]) for a in
               (agent, again, without)]
    assert torch.equal(learned[0], learned[1])
    assert not torch.equal(learned[0], learned[2])  # the moments made the difference


def test_agents_given_one_live_state_learn_apart():
    """Two agents loaded from another's state_dict (not a file) own their optimizer's moments:
    each learns the same rows to the same weights, and neither moves the other or the source."""
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(64, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    actions = rng.integers(0, 6, 64)
    source = PPOAgent(36, 6, SMALL_PPO)
    source.imitate(obs, actions, source.optimizer, 16, fit_scaling=False)
    moments = [v.clone() for v in source.optimizer.state_dict()["state"][0].values()]
    twins = [PPOAgent(36, 6, SMALL_PPO) for _ in range(2)]
    for twin in twins:
        twin.load_state_dict(source.state_dict())
        twin.imitate(obs, actions, twin.optimizer, 16, fit_scaling=False)
    learned = [torch.cat([p.flatten() for p in t.net.parameters()]) for t in twins]
    assert torch.equal(learned[0], learned[1])
    assert all(torch.equal(a, b) for a, b in
               zip(moments, source.optimizer.state_dict()["state"][0].values()))


@pytest.mark.slow
def test_a_process_that_only_plays_a_network_never_loads_torchs_compiler():
    """Loading a network pilot and playing it builds no optimizer: building one loads
    torch._dynamo, seconds of start-up in every process that plays (a pilot, a worker)."""
    import subprocess
    import sys

    script = ("import sys\n"
              "from spacewar_ai.config import GameConfig\n"
              "from spacewar_ai.pilots.build import make_pilot\n"
              "from spacewar_ai.rating.match import play_match\n"
              "c = GameConfig()\n"
              "m = play_match(make_pilot('pretrained', c, 1), make_pilot('heuristic:hard', c, 2),"
              " 2, 0, c)\n"
              "print(m.n, 'torch._dynamo' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "False"], done.stdout


def test_the_learners_precision_is_detected_chosen_and_reproducible(tmp_path):
    """`--precision auto` is bfloat16 only where the processor lists native bfloat16 (float32
    elsewhere), either can be asked for, and a run in bfloat16 gives the same weights from the
    same seed, weights that differ from float32's (its passes really run in bfloat16)."""
    from spacewar_ai.agents.base import learner_dtype, native_bfloat16
    from spacewar_ai.training.online.trainer import Trainer
    from tests.helpers import tiny_run

    cpu = torch.device("cpu")
    for flags, native in (("fpu sse avx512f", False), ("fpu avx512_bf16", True),
                          ("amx_bf16 amx_tile", True)):
        info = tmp_path / "cpuinfo"
        info.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        assert native_bfloat16(cpu, str(info)) == native
    assert not native_bfloat16(cpu, str(tmp_path / "none"))  # no such file: float32
    assert learner_dtype("float32", cpu) == torch.float32
    assert learner_dtype("bfloat16", cpu) == torch.bfloat16
    assert learner_dtype("auto", cpu) == (torch.bfloat16 if native_bfloat16(cpu) else
                                          torch.float32)

    def weights(precision, name):
        cfg = tiny_run(tmp_path, run_name=name, precision=precision, eval_interval=100)
        trainer = Trainer(cfg, quiet=True)
        assert trainer.agent.learn_dtype == learner_dtype(precision, cpu)
        trainer.run()
        return torch.cat([p.detach().flatten() for p in trainer.agent.net.parameters()])

    half, again, full = weights("bfloat16", "a"), weights("bfloat16", "b"), weights("float32", "c")
    assert torch.equal(half, again)
    assert not torch.equal(half, full)
    assert half.dtype == torch.float32  # the master weights stay float32


def test_a_switches_network_keeps_the_fire_mask_it_learned_with(tmp_path):
    """The mask offers a fire switch held through the end of a reload; networks saved before it
    did (no `fire_held` among their constants) still read fire as offered only once the reload
    has ended, and so play the games they played; the shipped `pretrained:rllib_sw` learned to
    hold fire."""
    from spacewar_ai.config import GameConfig
    from spacewar_ai.game.controls import decode
    from spacewar_ai.pilots.build import make_pilot
    from tests.helpers import random_positions

    config = GameConfig.preset("rllib_sw").changed(controls="switches")
    rows = random_positions(config)
    # reloading, fire offered all the same
    held = (rows[:, 8] > 0) & (rows[:, config.mask_start + 8] > 0.5)
    assert held.sum() > 50
    torch.manual_seed(0)
    new = PPOAgent(config.obs_dim, 16, SMALL_PPO, game=config)
    new.save(tmp_path / "new.pt")
    state = torch.load(tmp_path / "new.pt", weights_only=False)
    del state["agent"]["view_constants"]["fire_held"]
    torch.save(state, tmp_path / "old.pt")
    for spec, fires_held in (("pretrained:rllib_sw", True), (str(tmp_path / "old.pt"), False),
                             (str(tmp_path / "new.pt"), True)):
        pilot = make_pilot(spec, config)
        chosen = np.concatenate([pilot.act(rows[i:i + 512]) for i in range(0, len(rows), 512)])
        fired = decode(chosen, "switches")[3]
        assert fired[held].any() == fires_held, spec
        # what the game refuses, none offers
        assert not fired[(rows[:, config.mask_start + 8] < 0.5)].any()
