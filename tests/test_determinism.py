"""Same seed, same game, bit for bit, whatever the batch size; single env == vector env."""

import numpy as np

from spacewar_ai import SpacewarEnv, SpacewarVectorEnv
from spacewar_ai.game.engine import GameBatch


def _actions(seed, steps, n):
    return np.random.default_rng(seed).integers(0, 6, size=(steps, n, 2))


def test_same_seed_same_game():
    runs = []
    for _ in range(2):
        env = SpacewarEnv(opponent="random")
        obs, _ = env.reset(seed=42)
        traj = [obs]
        for a in _actions(1, 300, 1)[:, 0, 0]:
            obs, r, term, trunc, _ = env.step(int(a))
            traj.append(obs)
            if term or trunc:
                traj.append(env.reset()[0])
        runs.append(np.stack(traj))
    assert np.array_equal(runs[0], runs[1])


def test_different_seeds_give_different_starts():
    a = SpacewarEnv().reset(seed=1)[0]
    b = SpacewarEnv().reset(seed=2)[0]
    assert not np.array_equal(a, b)


def test_single_env_equals_vector_env_for_every_game_and_across_autoresets():
    n, steps, seed = 5, 400, 7
    acts = _actions(3, steps, n)
    venv = SpacewarVectorEnv(n, opponent=None)
    vobs, _ = venv.reset_both(seed=seed)
    vtraj, vrew = [vobs], []
    some_ended = 0  # steps where some games start again while others play on
    for t in range(steps):
        vobs, rew, term, trunc, info = venv.step_both(acts[t])
        vtraj.append(vobs)
        vrew.append(rew)
        some_ended += 0 < (term | trunc).sum() < n
    assert some_ended >= 3
    vtraj, vrew = np.stack(vtraj), np.stack(vrew)
    for g in range(n):
        env = SpacewarEnv(opponent=None)
        obs, _ = env.reset(seed=seed + g)
        assert np.array_equal(obs, vtraj[0, g, 0])
        for t in range(steps):
            obs, rew, term, trunc, _ = env.step_both(acts[t, g, 0], acts[t, g, 1])
            assert np.array_equal(rew, vrew[t, g]), (g, t)
            if term or trunc:
                obs = env.reset()[0]  # the vector env autoresets from the same stream
                obs = env.batch.obs[0]
            assert np.array_equal(obs, vtraj[t + 1, g]), (g, t)


def test_vector_env_with_scripted_opponents_matches_single_env():
    for opponent in ("heuristic:hard", "random", "heuristic:easy"):
        venv = SpacewarVectorEnv(3, opponent=opponent)
        vobs, _ = venv.reset(seed=11)
        env = SpacewarEnv(opponent=opponent)
        obs, _ = env.reset(seed=12)  # game 1 of the batch
        assert np.array_equal(obs, vobs[1])
        for t in range(150):
            a = np.full(3, t % 6, dtype=np.int64)
            vobs, vrew, vterm, vtrunc, _ = venv.step(a)
            obs, rew, term, trunc, _ = env.step(int(a[1]))
            assert rew == vrew[1], (opponent, t)
            if term or trunc:
                obs, _ = env.reset()
            assert np.array_equal(obs, vobs[1]), (opponent, t)


def test_a_game_does_not_depend_on_the_batch_it_is_played_in():
    acts = _actions(5, 200, 9)
    small = GameBatch(3)
    small.reset(seeds=np.array([100, 101, 102]))
    big = GameBatch(9)
    big.reset(seeds=np.arange(94, 103))  # games 6, 7, 8 have seeds 100, 101, 102
    for t in range(200):
        small.step(acts[t, 6:])
        big.step(acts[t])
        assert np.array_equal(small.reward, big.reward[6:])
        assert np.array_equal(small.observe(), big.observe()[6:])
