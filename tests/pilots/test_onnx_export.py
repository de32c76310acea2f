"""ONNX export: the torch rewrite of the views equals features.py, and an exported model played
by onnxruntime chooses the actions the torch pilot chooses."""

import numpy as np
import pytest
import torch

from spacewar_ai.game.environment import SpacewarVectorEnv
from spacewar_ai.game.features import apply_view, view_constants
from spacewar_ai.pilots.build import make_pilot
from spacewar_ai.pilots.onnx_export import Features


@pytest.fixture(scope="module")
def positions():
    """Observations from real games (both ships' views), torpedoes in flight included."""
    env = SpacewarVectorEnv(128, opponent=None)
    obs, _ = env.reset_both(seed=11)
    a, b = make_pilot("heuristic:hard"), make_pilot("heuristic:medium")
    rows = []
    for _ in range(60):
        obs, *_ = env.step_both(np.stack([a.act(obs[:, 0]), b.act(obs[:, 1])], 1))
        rows += [obs[:, 0].copy(), obs[:, 1].copy()]
    return np.concatenate(rows)


@pytest.mark.parametrize("view, constants", [
    ("egocentric", view_constants()), ("tactical", view_constants()),
    ("tactical", dict(view_constants(), gravity=0.0)),
    ("tactical", {k: v for k, v in view_constants().items() if k != "gravity"})])
def test_the_torch_views_equal_the_numba_views(positions, view, constants):
    ref = apply_view(positions, view, constants)
    got = Features(view, constants)(torch.from_numpy(positions)).numpy()
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["pretrained", "ppo", "dqn"])
def test_an_exported_model_chooses_what_the_torch_pilot_chooses(tmp_path, positions, algorithm):
    """The shipped network, a network of today's default run (its view bends paths by the
    star's pull, which the shipped one's predates) and a DQN ensemble: each exports to the
    operators the arena takes and chooses what the torch pilot chooses."""
    import onnxruntime as ort

    from spacewar_ai.agents.dqn import DQNAgent
    from spacewar_ai.agents.ppo import PPOAgent
    from spacewar_ai.config import DQNConfig, GameConfig, PPOConfig
    from spacewar_ai.pilots.onnx_check import onnx_problems
    from spacewar_ai.pilots.onnx_export import export_onnx

    if algorithm == "pretrained":
        spec = "pretrained"
    elif algorithm == "ppo":
        torch.manual_seed(0)
        agent = PPOAgent(36, 6, PPOConfig(hidden_sizes=(32, 32)), game=GameConfig())
        assert agent.view_constants["gravity"] > 0
        agent.obs_norm.update(torch.randn(50, agent.input_dim))
        agent.save(tmp_path / "ppo.pt")
        spec = str(tmp_path / "ppo.pt")
    else:  # an ensemble of snapshots, each with its own statistics, as DQN plays greedily
        torch.manual_seed(0)
        agent = DQNAgent(36, 6, DQNConfig(hidden_sizes=(32,), stream_size=16, buffer_size=64,
                                          play_ensemble=3, play_ensemble_interval=1))
        for _ in range(3):
            agent.obs_norm.update(torch.randn(50, agent.input_dim))
            agent._snapshot_for_play()
            agent.q.trunk[0].weight.data.add_(0.1)
        agent.save(tmp_path / "dqn.pt")
        spec = str(tmp_path / "dqn.pt")
    size = export_onnx(spec, tmp_path / "m.onnx")
    assert size == (tmp_path / "m.onnx").stat().st_size
    assert onnx_problems((tmp_path / "m.onnx").read_bytes()) == []  # the arena takes it
    session = ort.InferenceSession(str(tmp_path / "m.onnx"))
    actions, scores = session.run(None, {"obs": positions})
    expected = make_pilot(spec).act(positions)
    assert len(positions) > 7000 and np.mean(actions == expected) == 1.0
    masks = positions[:, 30:] > 0.5
    assert masks[np.arange(len(actions)), actions].all()  # never a masked action


@pytest.mark.slow
def test_an_exported_switches_network_reads_the_fire_mask_it_learned_with(tmp_path):
    """A switches network saved before the mask offered fire held through a reload's end (no
    `fire_held` among its constants), and the shipped one, which learned with it: exported, each
    chooses what its torch pilot chooses in those states. Both were saved before observations
    held the jumps left: the file reads today's peer's game and drops them, as their agent does,
    so `onnx:` flies it there."""
    import onnxruntime as ort

    from spacewar_ai.config import GameConfig
    from spacewar_ai.game.engine import OBS_JUMPS
    from spacewar_ai.pilots.onnx_check import input_width
    from spacewar_ai.pilots.onnx_export import export_onnx
    from spacewar_ai.pilots.spec import check_spec
    from tests.helpers import random_positions

    config = GameConfig.preset("rllib_sw").changed(controls="switches")
    rows = random_positions(config)
    held = (rows[:, 8] > 0) & (rows[:, config.mask_start + 8] > 0.5)
    assert held.sum() > 50  # fire held offered
    assert len(np.unique(rows[:, OBS_JUMPS:config.mask_start], axis=0)) > 4  # jumps left vary
    state = torch.load(check_spec("pretrained:rllib_sw").path, weights_only=False)
    del state["agent"]["view_constants"]["fire_held"]
    torch.save(state, tmp_path / "old.pt")
    for spec in ("pretrained:rllib_sw", str(tmp_path / "old.pt")):
        export_onnx(spec, tmp_path / "m.onnx")
        assert input_width((tmp_path / "m.onnx").read_bytes()) == config.obs_dim == 48
        actions, _ = ort.InferenceSession(str(tmp_path / "m.onnx")).run(None, {"obs": rows})
        expected = make_pilot(spec, config).act(rows)
        assert np.mean(actions == expected) == 1.0, spec
        flown = make_pilot(f"onnx:{tmp_path / 'm.onnx'}", config).act(rows)
        assert np.mean(flown == expected) == 1.0, spec
