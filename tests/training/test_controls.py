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
    # In a game of the six actions it is refused in one line, naming what it was trained on.
    with pytest.raises(ValueError, match=f"trained on {GAME.obs_dim}-float observations"):
        play_match(str(best), "heuristic:hard", 2, seed=0, config=GameConfig())
