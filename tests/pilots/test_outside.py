"""Pilots trained elsewhere: ONNX files and Stable-Baselines3 models enter tournaments."""

import numpy as np
import pytest

from spacewar_ai.bench.throughput import sb3_quiet
from spacewar_ai.pilots.build import make_pilot
from spacewar_ai.rating.ratings import standings
from spacewar_ai.rating.tournament import play_round_robin, resolve_entrants
from spacewar_ai.util.workers import Where


@pytest.mark.slow
def test_an_sb3_model_trained_on_the_env_plays_in_a_tournament(tmp_path):
    import gymnasium as gym
    from stable_baselines3 import DQN, PPO

    import spacewar_ai  # noqa: F401

    for cls, name in ((PPO, "ppo_model"), (DQN, "dqn_model")):
        model = cls("MlpPolicy", gym.make("Spacewar-v0", opponent="heuristic:easy"), seed=0,
                    device="cpu", policy_kwargs={"net_arch": [32]},
                    **({"n_steps": 128, "batch_size": 64} if cls is PPO else
                       {"learning_starts": 100}))
        sb3_quiet(model)
        model.learn(total_timesteps=500)
        model.save(tmp_path / name)
    specs = [f"sb3:{tmp_path / 'ppo_model.zip'}", f"sb3:{tmp_path / 'dqn_model.zip'}",
             "heuristic:easy"]
    entrants = resolve_entrants(specs)
    assert [e.name for e in entrants][:2] == ["sb3:ppo_model", "sb3:dqn_model"]
    result = play_round_robin(entrants, 4, seed=2, where=Where("local", 2))
    rows = standings(result)
    assert sum(r["games"] for r in rows) == 3 * 2 * 4
    assert all(r["forfeits"] == 0 for r in rows)


def test_an_onnx_model_of_scores_plays_with_the_mask_applied(tmp_path):
    """An outside ONNX model whose output is scores: the masked actions are taken out."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    # scores = obs[:, 30:36] * -1 + constant that prefers action 4 (fire): masked when reloading.
    graph = helper.make_graph(
        [helper.make_node("Slice", ["obs", "start", "end", "axis"], ["mask"]),
         helper.make_node("Mul", ["mask", "minus"], ["neg"]),
         helper.make_node("Add", ["neg", "prefer"], ["scores"])],
        "scores", [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [None, 36])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, 6])],
        [helper.make_tensor("start", TensorProto.INT64, [1], [30]),
         helper.make_tensor("end", TensorProto.INT64, [1], [36]),
         helper.make_tensor("axis", TensorProto.INT64, [1], [1]),
         helper.make_tensor("minus", TensorProto.FLOAT, [1], [-1.0]),
         helper.make_tensor("prefer", TensorProto.FLOAT, [6], [0, 0, 0, 0, 10, 0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "fire.onnx")
    pilot = make_pilot(f"onnx:{tmp_path / 'fire.onnx'}")
    obs = np.zeros((2, 36), np.float32)
    obs[:, 30:] = 1.0
    obs[1, 34:36] = 0.0  # row 1 is reloading: fire is masked
    assert list(pilot.act(obs)) == [4, 0]  # reloading: the best valid score, not fire
    with pytest.raises(ValueError, match="no such ONNX file"):
        make_pilot(f"onnx:{tmp_path / 'none.onnx'}")
    (tmp_path / "junk.onnx").write_bytes(b"junk")
    with pytest.raises(ValueError, match="not a readable ONNX model"):
        make_pilot(f"onnx:{tmp_path / 'junk.onnx'}")


SB3_KINDS = {  # algorithm -> (package, policy, settings for a tiny run)
    "DQN": ("stable_baselines3", "MlpPolicy", {"learning_starts": 0}),
    "QRDQN": ("sb3_contrib", "MlpPolicy", {"learning_starts": 0}),
    "PPO": ("stable_baselines3", "MlpPolicy", {"n_steps": 16, "batch_size": 16}),
    "A2C": ("stable_baselines3", "MlpPolicy", {"n_steps": 16}),
    "TRPO": ("sb3_contrib", "MlpPolicy", {"n_steps": 16, "batch_size": 16}),
    "RecurrentPPO": ("sb3_contrib", "MlpLstmPolicy", {"n_steps": 16, "batch_size": 16}),
}


@pytest.fixture(scope="module")
def sb3_models(tmp_path_factory):
    """One model of each kind, trained for 32 steps and saved as a user would."""
    import importlib

    import gymnasium as gym

    import spacewar_ai  # noqa: F401

    folder = tmp_path_factory.mktemp("sb3")
    for name, (package, policy, settings) in SB3_KINDS.items():
        cls = getattr(importlib.import_module(package), name)
        extra = {"lstm_hidden_size": 8} if name == "RecurrentPPO" else {}
        model = cls(policy, gym.make("Spacewar-v0", opponent="idle"), seed=0, device="cpu",
                    policy_kwargs={"net_arch": [8], **extra}, **settings)
        sb3_quiet(model)
        model.learn(32)
        model.save(folder / name)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SB3_KINDS))
def test_sb3_reads_the_algorithm_from_the_zip_and_plays_it(sb3_models, name):
    from spacewar_ai.rating.match import play_match

    pilot = make_pilot(f"sb3:{sb3_models / name}.zip")
    assert type(pilot.model).__name__ == name
    result = play_match(pilot, "heuristic:easy", 4, seed=3)
    assert result.n == 4 and not any(g.forfeit for g in result.games)


@pytest.mark.slow
def test_a_recurrent_sb3_model_keeps_its_state_per_game(sb3_models):
    """The pilot's greedy actions are the model's own predict() with its LSTM state carried
    (all actions allowed, so the mask changes nothing), and a new game starts a fresh state."""
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (6, 2, 36)).astype(np.float32)
    obs[..., 30:36] = 1.0  # every action allowed
    pilot = make_pilot(f"sb3:{sb3_models / 'RecurrentPPO'}.zip")
    pilot.reset(np.ones(2, dtype=bool))
    mine = [pilot.act(o) for o in obs]
    state, start, theirs = None, np.ones(2, dtype=bool), []
    for o in obs:
        action, state = pilot.model.predict(o, state=state, episode_start=start,
                                            deterministic=True)
        start = np.zeros(2, dtype=bool)
        theirs.append(action)
    assert all((a == b).all() for a, b in zip(mine, theirs))
    pilot.reset(np.array([True, False]))  # game 0 starts again, game 1 goes on
    again = pilot.act(obs[0])
    assert again[0] == mine[0][0]
