"""The environments as outside clients use them: Gymnasium, Stable-Baselines3, PettingZoo."""

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import spacewar_ai  # noqa: F401  (registers Spacewar-v0)
from spacewar_ai import SpacewarEnv, SpacewarVectorEnv
from spacewar_ai.bench.throughput import sb3_quiet
from spacewar_ai.config import GameConfig
from spacewar_ai.game.engine import DeathCause
from tests.helpers import ROOT


def test_diagnostic_observation_shape():
    assert SpacewarEnv().reset()[0].shape == (36,)
    # Hyperspace adds its action and each ship's jumps left.
    assert SpacewarEnv(GameConfig(hyperspace=True)).reset()[0].shape == (39,)


@pytest.mark.slow
def test_the_diagnostics_import_from_the_package_and_the_env_alone_needs_no_torch(tmp_path):
    # A fresh interpreter: this one has torch loaded already by other tests.
    code = (
        "import sys, spacewar_ai\n"
        "assert 'torch' not in sys.modules, 'import spacewar_ai loaded torch'\n"
        "from spacewar_ai import SpacewarEnv, PPOAgent, DQNAgent, APIKeyManager\n"
        "assert SpacewarEnv().reset()[0].shape == (36,)\n"
        "agent = PPOAgent(36, 6, None, 'cpu')\n"
        "print(agent.select_action(SpacewarEnv().reset(seed=0)[0]) in range(6))\n"
        "print(APIKeyManager('.').get_available_providers())\n"
        "try:\n"
        "    spacewar_ai.PPOAgnet\n"
        "except AttributeError as e:\n"
        "    print(e)\n"
    )
    (tmp_path / "openai.key.txt").write_text("sk-test-not-a-real-key\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "True", "['openai']", "module 'spacewar_ai' has no attribute 'PPOAgnet'"]


def test_gymnasium_check_env():
    from gymnasium.utils.env_checker import check_env

    check_env(SpacewarEnv(), skip_render_check=True)
    check_env(gym.make("Spacewar-v0").unwrapped, skip_render_check=True)


@pytest.mark.slow
def test_stable_baselines3_check_env_and_ppo_trains_2000_steps():
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_checker import check_env

    env = gym.make("Spacewar-v0")
    check_env(env)
    model = PPO("MlpPolicy", env, n_steps=256, batch_size=64, n_epochs=2, seed=0, device="cpu")
    sb3_quiet(model)
    model.learn(total_timesteps=2000)
    assert model.num_timesteps >= 2000
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, deterministic=True)
    assert env.action_space.contains(int(action))


def test_pettingzoo_parallel_api():
    from pettingzoo.test import parallel_api_test

    from spacewar_ai.game.environment import parallel_env

    parallel_api_test(parallel_env(), num_cycles=300)
    env = parallel_env()
    obs, infos = env.reset(seed=3)
    assert set(obs) == {"ship_0", "ship_1"}
    assert infos["ship_0"]["action_mask"].shape == (6,)


def test_make_vec_uses_the_batch_engine_with_same_step_autoreset():
    envs = gym.make_vec("Spacewar-v0", num_envs=8, vectorization_mode="vector_entry_point",
                        opponent="heuristic:hard")
    assert isinstance(envs, SpacewarVectorEnv)
    obs, info = envs.reset(seed=0)
    assert obs.shape == (8, 36) and obs.dtype == np.float32
    finished = 0
    for _ in range(400):
        obs, rew, term, trunc, info = envs.step(np.zeros(8, dtype=np.int64))
        assert obs.shape == (8, 36) and rew.shape == (8,)
        if "final_obs" in info:
            done = info["_final_obs"]
            assert np.array_equal(done, term | trunc)
            finished += done.sum()
            # The idle ship 0 either died or timed out; the next game has started.
            assert np.all(info["final_info"]["death_cause"][done, 0] != DeathCause.NONE)
            assert np.all(obs[done, 6] == 1.0), "autoreset: full fuel in the new game"
    assert finished > 0


def test_a_partial_reset_starts_only_the_games_it_names():
    envs = SpacewarVectorEnv(6, opponent=None)
    envs.reset_both(seed=0)
    for _ in range(20):
        before, *_ = envs.step_both(np.full((6, 2), 4))  # both fire: torpedoes in flight
    mask = np.array([False, True, False, False, True, False])
    obs, info = envs.reset(seed=50, options={"reset_mask": mask})
    for g in range(6):
        if mask[g]:  # game g starts afresh as the single env seeded 50 + g
            assert np.array_equal(obs[g], SpacewarEnv(opponent=None).reset(seed=50 + g)[0])
        else:  # the others play on from where they were
            assert np.array_equal(obs[g], before[g, 0])
    assert np.array_equal(info["action_mask"], obs[:, 30:].astype(np.int8))


def test_two_ship_batch_api_shapes():
    env = SpacewarVectorEnv(4, opponent=None)
    obs, info = env.reset_both(seed=5)
    assert obs.shape == (4, 2, 36) and info["action_mask"].shape == (4, 2, 6)
    obs, rew, term, trunc, info = env.step_both(np.ones((4, 2), dtype=np.int64))
    assert obs.shape == (4, 2, 36) and rew.shape == (4, 2)


def test_step_both_returns_per_ship_views():
    env = SpacewarEnv(opponent=None)
    env.reset(seed=2)
    obs, rew, term, trunc, info = env.step_both(0, 0)
    assert obs.shape == (2, 36) and rew.shape == (2,)
    # Each ship sees the other at the opposite relative position.
    assert obs[0, 9:11] == pytest.approx(-obs[1, 9:11], abs=1e-6)


def test_observation_stays_in_the_declared_space():
    env = SpacewarEnv(opponent="random")
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(2000):
        assert env.observation_space.contains(obs), obs
        obs, _, term, trunc, info = env.step(int(rng.integers(0, 6)))
        assert np.array_equal(info["action_mask"], obs[30:])
        if term or trunc:
            obs, _ = env.reset()


@pytest.mark.parametrize("bad", [6, -1, 2.0, float("nan"), "fire", None, True, np.array([1, 2])])
def test_bad_actions_raise_a_clear_error(bad):
    env = SpacewarEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"\[0, 5\]|shape"):
        env.step(bad)


def test_numpy_integer_actions_are_accepted():
    env = SpacewarEnv()
    env.reset(seed=0)
    env.step(np.int64(3))
    env.step(np.array(2))


def test_bad_vector_actions_raise_a_clear_error():
    env = SpacewarVectorEnv(3)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(4, dtype=np.int64))
    with pytest.raises(ValueError, match="dtype"):
        env.step(np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match="out of range"):
        env.step(np.array([0, 9, 1]))


def test_step_after_the_end_needs_reset():
    env = SpacewarEnv(GameConfig(max_episode_steps=8), opponent="idle")
    env.reset(seed=0)
    env.step(0)
    _, _, _, trunc, _ = env.step(0)
    assert trunc
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset()
    env.step(0)


def test_step_before_reset_is_refused():
    with pytest.raises(RuntimeError, match="reset"):
        SpacewarEnv().step(0)


def test_unknown_opponent_names_the_choices():
    with pytest.raises(ValueError, match="heuristic:hard"):
        SpacewarEnv(opponent="grandmaster")


def test_callable_opponent():
    seen = []

    def spin(obs):
        seen.append(obs.shape)
        return 2

    env = SpacewarEnv(opponent=spin)
    env.reset(seed=0)
    env.step(0)
    assert seen == [(36,)]


def test_the_documented_tables_are_the_environments_own():
    """docs/game.md shows the observation and action tables of SpacewarEnv's docstring: a change
    to either must reach the other."""
    import textwrap

    from spacewar_ai.game.environment import ACTION_DOC, OBSERVATION_DOC

    doc = (ROOT / "docs" / "game.md").read_text()
    for table in (OBSERVATION_DOC, ACTION_DOC):
        assert textwrap.dedent(table).strip().replace("## ", "### ", 1) in doc
