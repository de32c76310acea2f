"""Pilots trained elsewhere: ONNX files and Stable-Baselines3 models enter tournaments."""

import numpy as np
import pytest

from spacewar_ai.pilots import make_pilot
from spacewar_ai.ratings import standings
from spacewar_ai.tournament import play_round_robin, resolve_entrants


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
        model.learn(total_timesteps=500)
        model.save(tmp_path / name)
    specs = [f"sb3:{tmp_path / 'ppo_model.zip'}", f"sb3:{tmp_path / 'dqn_model.zip'}",
             "heuristic:easy"]
    entrants = resolve_entrants(specs)
    assert [e.name for e in entrants][:2] == ["sb3:ppo_model", "sb3:dqn_model"]
    result = play_round_robin(entrants, 4, seed=2, workers=2)
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
