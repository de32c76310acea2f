"""Learning with the 1962 switches under the peer's rules: PPO and DQN heads of sixteen
actions, a league of six-action pilots flying through the switches, and what they learned
playing as a pilot there."""

from __future__ import annotations

import pytest

from spacewar_ai.config import GameConfig
from spacewar_ai.rating.match import play_match
from spacewar_ai.training import train
from tests.helpers import tiny_run

GAME = GameConfig.from_dict({"rules": "rllib_sw", "controls": "switches"})


@pytest.mark.parametrize("algorithm", ["ppo", "dqn"])
def test_a_run_learns_sixteen_actions_and_its_network_plays_them(tmp_path, algorithm):
    cfg = tiny_run(tmp_path, algorithm)
    cfg.game = GAME
    train(cfg)
    best = tmp_path / "ck" / "tiny" / "best.pt"
    from spacewar_ai.agents.saved import load_agent

    _, ckpt = load_agent(best)
    assert ckpt["action_dim"] == 16 and ckpt["obs_dim"] == GAME.obs_dim
    r = play_match(str(best), "heuristic:hard", 4, seed=0, config=GAME)
    assert r.n == 4
    # Exported to ONNX, it reads the switches' observation and flies the same games.
    pytest.importorskip("onnxruntime")
    from spacewar_ai.pilots.build import make_pilot
    from spacewar_ai.pilots.onnx_export import export_onnx

    export_onnx(str(best), tmp_path / "m.onnx")
    onnx = make_pilot(f"onnx:{tmp_path / 'm.onnx'}", GAME)
    assert type(onnx).__name__ == "OnnxPilot" and onnx.n_actions == 16  # no OnSwitches
    again = play_match(f"onnx:{tmp_path / 'm.onnx'}", "heuristic:hard", 4, seed=0, config=GAME)
    assert [g.to_dict() for g in again.games] == [g.to_dict() for g in r.games]
    # In a game of the six actions it is refused in one line, naming what it was trained on.
    with pytest.raises(ValueError, match=f"trained on {GAME.obs_dim}-float observations"):
        play_match(str(best), "heuristic:hard", 2, seed=0, config=GameConfig())


def test_a_dataset_records_the_switches_and_behaviour_cloning_learns_them(tmp_path, monkeypatch):
    """Games recorded under the switches keep the sixteen actions (a scripted pilot's moves as
    the switches it presses); cloning them gives a network of sixteen actions that flies there."""
    import numpy as np

    from spacewar_ai.agents.saved import load_agent
    from spacewar_ai.training.datasets import arrays, generate

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    generate([("heuristic:hard", "pretrained:rllib_sw")], 4, "switches", seed=1, config=GAME,
             quiet=True)
    obs, actions = arrays("switches", "pretrained:rllib_sw", GAME)
    assert obs.shape[1] == GAME.obs_dim and actions.max() < 16
    # The shipped network presses combinations the six actions cannot say (thrust with a turn).
    assert len(np.unique(actions)) > 6
    cfg = tiny_run(tmp_path, "bc", dataset="switches", dataset_pilot="pretrained:rllib_sw")
    cfg.game = GAME
    train(cfg, quiet=True)
    agent, ckpt = load_agent(tmp_path / "ck" / "tiny" / "best.pt")
    assert ckpt["action_dim"] == 16 and ckpt["obs_dim"] == GAME.obs_dim
