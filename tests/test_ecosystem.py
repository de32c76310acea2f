"""The RL ecosystem's own tools on Spacewar-v0, unchanged: Gymnasium's vector envs and wrappers,
sb3-contrib's MaskablePPO and PettingZoo's test suite (AEC and parallel)."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import spacewar_ai  # noqa: F401 (registers Spacewar-v0)
from spacewar_ai.bench.throughput import sb3_quiet
from spacewar_ai.game.engine import DeathCause
from spacewar_ai.game.environment import SpacewarEnv, SpacewarVectorEnv
from tests.helpers import ROOT


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_gymnasiums_own_vector_envs_run_thousands_of_steps(mode):
    """Info values keep one type per key whether a game is running or over, so Gymnasium's
    `_add_info` batches them; RecordEpisodeStatistics counts every finished game."""
    envs = gym.make_vec("Spacewar-v0", num_envs=3, vectorization_mode=mode,
                        vector_kwargs={"autoreset_mode": "SameStep"},
                        wrappers=[gym.wrappers.RecordEpisodeStatistics],
                        opponent="heuristic:easy")
    try:
        obs, info = envs.reset(seed=0)
        episodes = 0
        for _ in range(1500):
            obs, rew, term, trunc, info = envs.step(envs.action_space.sample())
            episodes += int((term | trunc).sum())
            assert info["winner"].dtype.kind == "i" and info["action_mask"].dtype == np.int8
        assert episodes > 0
    finally:
        envs.close()


def test_a_cleanrl_style_sync_vector_env_of_wrapped_envs():
    envs = gym.vector.SyncVectorEnv(
        [lambda: gym.wrappers.RecordEpisodeStatistics(gym.make("Spacewar-v0")) for _ in range(4)])
    envs.reset(seed=1)
    returns = []
    for _ in range(2000):
        _, _, _, _, info = envs.step(envs.action_space.sample())
        if "episode" in info:
            returns += list(info["episode"]["r"][info["_episode"]])
    envs.close()
    assert len(returns) >= 4


def test_the_native_vector_env_offers_next_step_autoreset_for_gymnasiums_wrappers():
    envs = SpacewarVectorEnv(4, opponent="idle", autoreset_mode="NextStep")
    envs = gym.wrappers.vector.FlattenObservation(
        gym.wrappers.vector.NormalizeObservation(envs))
    obs, _ = envs.reset(seed=2)
    ended = started = 0
    kept = None
    for _ in range(900):
        obs, rew, term, trunc, info = envs.step(np.full(4, 2))  # spin: the idle ship drifts
        done = term | trunc
        if done.any():
            ended += int(done.sum())
            assert set(info["winner"][done]) <= {-1, 0, 1} and info["_winner"][done].all()
            kept, kept_mask = info, info["_winner"].copy()
        elif kept is not None:
            # The next step starts those games; the infos handed out before stay as they were.
            assert np.array_equal(kept["_winner"], kept_mask)
        if "winner" not in info and ended > started:
            started = ended  # the step after an end starts the game: no statistics then
    assert ended > 0 and obs.shape == (4, 36)


def test_same_step_autoreset_emits_final_obs_and_final_info():
    envs = SpacewarVectorEnv(4, opponent="heuristic:hard")
    envs.reset(seed=3)
    for _ in range(600):
        obs, _, term, trunc, info = envs.step(np.zeros(4, dtype=np.int64))
        if "final_obs" in info:
            done = term | trunc
            assert np.array_equal(info["_final_obs"], done)
            assert np.array_equal(info["final_info"]["_winner"], done)
            assert info["final_obs"].shape == (4, 36)
            assert all(DeathCause(c) != DeathCause.NONE
                       for c in info["final_info"]["death_cause"][done, 0])
            return
    pytest.fail("no game ended")


def test_masks_are_int8_and_gymnasium_samples_with_them():
    env = SpacewarEnv(opponent="idle")
    obs, info = env.reset(seed=0)
    assert info["action_mask"].dtype == np.int8
    for _ in range(50):
        action = env.action_space.sample(mask=info["action_mask"])
        assert info["action_mask"][action] == 1 and env.action_masks()[action]
        obs, _, term, trunc, info = env.step(action)
        if term or trunc:
            break


@pytest.mark.slow
def test_maskable_ppo_trains_and_never_picks_a_masked_action():
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks

    env = gym.make("Spacewar-v0", opponent="heuristic:easy")
    model = MaskablePPO("MlpPolicy", env, n_steps=256, batch_size=64, n_epochs=1, seed=0,
                        device="cpu", policy_kwargs={"net_arch": [32, 32]})
    sb3_quiet(model)
    model.learn(total_timesteps=3000)
    assert model.num_timesteps >= 3000
    obs, info = env.reset(seed=5)
    masked = 0
    for _ in range(400):
        action, _ = model.predict(obs, action_masks=get_action_masks(env))
        obs, _, term, trunc, info = env.step(int(action))
        masked = info["masked_actions"]
        if term or trunc:
            obs, info = env.reset()
    assert masked == 0


def test_vector_record_video_gets_one_frame_per_game(tmp_path):
    pytest.importorskip("moviepy")
    envs = SpacewarVectorEnv(2, opponent="idle", render_mode="rgb_array", render_size=96)
    frames = envs.render()
    assert len(frames) == 2 and frames[0].shape == (96, 96, 3)
    envs = gym.wrappers.vector.RecordVideo(envs, str(tmp_path), step_trigger=lambda s: s == 1,
                                           video_length=20)
    envs.reset(seed=0)
    for _ in range(25):
        envs.step(np.zeros(2, dtype=np.int64))
    envs.close()
    assert list(tmp_path.glob("*.mp4"))


def test_single_env_record_video(tmp_path):
    pytest.importorskip("moviepy")
    env = gym.wrappers.RecordVideo(gym.make("Spacewar-v0", render_mode="rgb_array",
                                            render_size=96), str(tmp_path),
                                   episode_trigger=lambda e: e == 0)
    env.reset(seed=0)
    done = False
    while not done:
        _, _, term, trunc, _ = env.step(0)
        done = term or trunc
    env.close()
    assert list(tmp_path.glob("*.mp4"))


# --- PettingZoo -------------------------------------------------------------------------------
def test_pettingzoo_aec_env_passes_api_seed_and_render_tests():
    from pettingzoo.test import api_test, render_test, seed_test

    from spacewar_ai.game.environment import env, raw_env

    api_test(env(), num_cycles=300)
    seed_test(raw_env, num_cycles=100)
    render_test(lambda render_mode=None: env(render_mode=render_mode))


def test_pettingzoo_parallel_env_passes_its_tests_and_has_a_state():
    from pettingzoo.test import max_cycles_test, parallel_api_test, parallel_seed_test, state_test

    import spacewar_ai.game.environment as module
    from spacewar_ai.game.environment import env, parallel_env

    parallel_api_test(parallel_env(), num_cycles=300)
    parallel_seed_test(parallel_env, num_cycles=100)
    max_cycles_test(module)
    state_test(env(), parallel_env())
    par = parallel_env()
    par.reset(seed=4)
    assert par.state().shape == par.state_space.shape == (72,)


def _load_example():
    import importlib.util

    path = ROOT / "examples" / "cleanrl_ppo.py"
    spec = importlib.util.spec_from_file_location("cleanrl_ppo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def five_decision_games():
    """An env id whose games last exactly five decisions (20 frames: no ship can die that
    soon), so a rollout's game ends can be counted by hand."""
    import gymnasium as gym

    from spacewar_ai.game.environment import SpacewarEnv

    env_id = "FiveDecisionSpacewar-v0"
    gym.register(env_id, entry_point=lambda opponent: SpacewarEnv(
        config={"max_episode_steps": 20}, opponent=opponent))
    yield env_id
    gym.registry.pop(env_id)


def test_the_cleanrl_example_trains_on_played_decisions_and_every_sample_once_an_epoch(
        tmp_path, five_decision_games):
    """examples/cleanrl_ppo.py over Gymnasium's SyncVectorEnv, 2 envs x 16 steps, 2 iterations,
    games of 5 decisions. By hand: games end after decisions 5, 10, ..., 30 of each env, so a new
    game starts at steps 5, 10, 15 of the first rollout and 4, 9, 14 of the second; each step
    costs -0.01 points and a game's last also the draw's -10 (x 0.01 scale); no step is the
    ignored one Gymnasium's next-step autoreset inserts (reward 0). Each epoch's minibatches
    cover the batch exactly once; CleanRL's logs are written; the learning rate anneals."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    example = _load_example()
    rollouts, minibatches = [], []
    steps = example.main(
        ["--env-id", five_decision_games, "--num-envs", "2", "--num-steps", "16",
         "--total-timesteps", "64", "--log-dir", str(tmp_path)],
        on_rollout=lambda it, batch: rollouts.append({k: v.clone() for k, v in batch.items()}),
        on_minibatch=lambda epoch, inds: minibatches.append((epoch, inds)))
    assert steps == 64 and len(rollouts) == 2

    for rollout, starts in zip(rollouts, ([5, 10, 15], [4, 9, 14])):
        for env in range(2):
            assert np.flatnonzero(rollout["dones"][:, env].numpy()).tolist() == starts
            expected = np.full(16, -0.01 * 0.01)
            expected[[s - 1 for s in starts]] = (-0.01 - 10) * 0.01  # a game's last decision
            np.testing.assert_allclose(rollout["rewards"][:, env].numpy(), expected, rtol=1e-5)

    assert len(minibatches) == 2 * 4 * 4  # iterations x epochs x minibatches
    for k in range(0, len(minibatches), 4):
        epoch = minibatches[k:k + 4]
        assert len({e for e, _ in epoch}) == 1
        assert sorted(np.concatenate([inds for _, inds in epoch]).tolist()) == list(range(32))

    events = EventAccumulator(str(next(tmp_path.glob("cleanrl_ppo__1__*"))))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"losses/approx_kl", "losses/old_approx_kl", "losses/clipfrac",
            "losses/explained_variance", "losses/entropy", "charts/episodic_return",
            "charts/episodic_length"} <= tags
    lrs = [e.value for e in events.Scalars("charts/learning_rate")]
    assert lrs == pytest.approx([2.5e-4, 1.25e-4])
    assert {e.value for e in events.Scalars("charts/episodic_length")} == {5}
    assert [e.value for e in events.Scalars("charts/episodic_return")] == pytest.approx(
        [-10.05] * 12)  # the game's own points, six games in each of two envs


def test_the_cleanrl_example_stops_an_update_at_its_target_kl(tmp_path, five_decision_games):
    """--target-kl 0: the first epoch's updates move the policy, so every update stops there."""
    example = _load_example()
    epochs = []
    example.main(["--env-id", five_decision_games, "--num-envs", "2", "--num-steps", "16",
                  "--total-timesteps", "64", "--target-kl", "0", "--log-dir", str(tmp_path)],
                 on_minibatch=lambda epoch, inds: epochs.append(epoch))
    assert epochs == [0] * 8  # two iterations of one epoch's four minibatches


def test_supersuit_turns_the_parallel_env_into_a_vector_env_for_shared_policies():
    """SuperSuit's parameter-sharing recipe: both ships as rows of one vector env, several games
    concatenated, ready for a single-agent learner such as Stable-Baselines3."""
    import supersuit as ss

    from spacewar_ai.game.environment import parallel_env

    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(parallel_env()), 3,
                                 num_cpus=0, base_class="stable_baselines3")
    obs = venv.reset()
    assert obs.shape == (6, 36)  # 3 games x 2 ships
    ended = 0
    for _ in range(300):
        obs, rewards, dones, infos = venv.step(np.array([venv.action_space.sample()
                                                          for _ in range(6)]))
        ended += int(dones.sum())
    venv.close()
    assert ended > 0


def test_the_spec_gives_the_games_own_step_limit_without_a_second_time_limit():
    from spacewar_ai import GameConfig

    env = gym.make("Spacewar-v0")
    assert env.spec.max_episode_steps == 750  # 3,000 frames, a decision every 4
    wrapper, chain = env, []
    while hasattr(wrapper, "env"):
        chain.append(type(wrapper).__name__)
        wrapper = wrapper.env
    assert "TimeLimit" not in chain  # the game truncates itself
    short = gym.make("Spacewar-v0", config=GameConfig(max_episode_steps=402),
                     opponent="idle")
    assert short.spec.max_episode_steps == 101
    short.reset(seed=3)
    steps, done = 0, False
    while not done:
        _, _, terminated, truncated, _ = short.step(0)
        steps += 1
        done = terminated or truncated
    assert steps <= 101 and (terminated or steps == 101)


@pytest.mark.slow
def test_the_module_qualified_id_works_in_spawned_workers():
    """Subprocess workers start without the user's imports: `spacewar_ai:Spacewar-v0` makes
    Gymnasium import the package (and register the env) in each of them."""
    envs = gym.make_vec("spacewar_ai:Spacewar-v0", 2, vectorization_mode="async",
                        vector_kwargs={"context": "spawn"})
    try:
        obs, _ = envs.reset(seed=0)
        assert obs.shape == (2, 36)
        envs.step(np.array([4, 4]))
    finally:
        envs.close()


@pytest.mark.slow
def test_the_first_step_after_an_install_says_it_is_compiling_once(tmp_path):
    """A process whose first step compiles part of the engine with numba (as after an install)
    tells the user, once; the next process loads the cache and says nothing. The cache starts
    with every function but one (the random pilot's kernel), so that a real compile happens
    without compiling the whole engine again."""
    import os
    import shutil
    import subprocess
    import sys

    from numba.core.caching import UserProvidedCacheLocator

    import spacewar_ai.pilots.scripted  # noqa: F401 (registers the pilots' warm-ups)
    from spacewar_ai.game.engine import COMPILE_NOTICE, GameBatch

    GameBatch(1)  # the warm-ups: the cache beside the sources is written if it was not
    cache = tmp_path / "cache"
    left_out = "scripted._random_kernel-"
    for entry in Path(spacewar_ai.__file__).parent.rglob("__pycache__/*.nb[ic]"):
        if not entry.name.startswith(left_out):
            # Where numba looks under NUMBA_CACHE_DIR for the entries of this source folder.
            sub = UserProvidedCacheLocator.get_suitable_cache_subpath(
                str(entry.parent.parent / "any.py"))
            (cache / sub).mkdir(parents=True, exist_ok=True)
            shutil.copy2(entry, cache / sub / entry.name)
    script = ("import gymnasium as gym, spacewar_ai\n"
              "env = gym.make('Spacewar-v0', opponent='heuristic:hard')\n"
              "env.reset(seed=0)\nenv.step(4)\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), NUMBA_DEBUG_CACHE="1")
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=900) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    assert runs[0].stderr.count(COMPILE_NOTICE) == 1, runs[0].stderr
    assert COMPILE_NOTICE not in runs[1].stderr
    # The first process compiled the one function left out and loaded the rest: numba's
    # cache layout is as this test assumes.
    saved = [line for line in runs[0].stdout.splitlines() if "data saved to" in line]
    assert saved and all(left_out in line for line in saved), runs[0].stdout
    assert not [line for line in runs[1].stdout.splitlines() if "data saved to" in line]


def test_the_dependency_surfaces_we_lean_on_are_there(tmp_path):
    """Two places use what their libraries do not document: TensorBoard's GIF goes through
    SummaryWriter.file_writer (no add_* method takes an encoded image), and PBT's seeding
    overrides Tune's PopulationBasedTraining._checkpoint_or_exploit. An upgrade that changes
    either fails here, not silently in a run."""
    import inspect

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.compat.proto.summary_pb2 import Summary
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(tmp_path))
    image = Summary.Image(height=1, width=1, colorspace=1, encoded_image_string=b"GIF89a")
    writer.file_writer.add_summary(Summary(value=[Summary.Value(tag="eval/video",
                                                                image=image)]), 3)
    writer.close()
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert events.Images("eval/video")[0].step == 3

    # What cluster.fold_worker_deaths wraps: the driver's printer of the raylet's reports.
    ray_worker = pytest.importorskip("ray._private.worker")
    assert list(inspect.signature(ray_worker.print_to_stdstream).parameters)[:2] == \
        ["data", "ignore_prefix"]
    assert "print_to_stdstream(" in inspect.getsource(ray_worker.listen_error_messages)
    # What cluster._start_local knows a slow node's start by.
    from spacewar_ai.util.cluster import STARTUP_TIMEOUT
    assert STARTUP_TIMEOUT in inspect.getsource(pytest.importorskip("ray._private.node"))

    ray_tune = pytest.importorskip("ray.tune.schedulers")
    method = ray_tune.PopulationBasedTraining._checkpoint_or_exploit
    assert list(inspect.signature(method).parameters)[:2] == ["self", "trial"]
    # What the override reads to make its seed (pbt._seeded).
    source = inspect.getsource(ray_tune.PopulationBasedTraining)
    assert "self._trial_state" in source and "last_train_time" in source
