"""Learning from a pilot before RL: PPO's actor cloned, DQN's demonstrations (DQfD)."""

from pathlib import Path

import numpy as np
import pytest

from spacewar_ai.agents.checkpoints import load_checkpoint
from spacewar_ai.config import (
    DQNConfig,
    GameConfig,
    PPOConfig,
)
from spacewar_ai.training.online.trainer import Trainer
from tests.helpers import tiny_run


def _agreement_with_hard_pilot(**agents) -> dict[str, float]:
    """How often each agent's greedy action is the hard pilot's, on held-out positions (another
    seed, the hard pilot flying against medium); "drift" is always answering 0, the teacher's
    most common action."""
    from spacewar_ai.game.environment import SpacewarVectorEnv
    from spacewar_ai.pilots.build import make_pilot

    cfg = GameConfig()
    env = SpacewarVectorEnv(64, cfg, opponent="heuristic:medium")
    obs, _ = env.reset(seed=777)
    teacher = make_pilot("heuristic:hard", cfg)
    teacher.reset(np.ones(64, dtype=bool), env.batch.rng.copy())
    agree = {name: [] for name in (*agents, "drift")}
    for _ in range(60):
        target = teacher.act(obs)
        for name, agent in agents.items():
            agree[name].append(np.mean(agent.select_action(obs, deterministic=True) == target))
        agree["drift"].append(np.mean(target == 0))
        obs, *_ = env.step(target)
    return {name: float(np.mean(v)) for name, v in agree.items()}


@pytest.mark.slow
def test_warm_start_makes_the_actor_imitate_its_teacher():
    from spacewar_ai.agents.ppo import PPOAgent
    from spacewar_ai.config import GameConfig
    from spacewar_ai.training.online.warm_start import behaviour_clone

    fresh = PPOAgent(36, 6, PPOConfig(hidden_sizes=(64, 64)), "cpu")
    agent = PPOAgent(36, 6, PPOConfig(hidden_sizes=(64, 64)), "cpu")
    stats = behaviour_clone(agent, "heuristic:hard", GameConfig(), decisions=80_000, epochs=4,
                            seed=0)
    assert stats["decisions"] >= 78_000 and stats["accuracy"] > 0.75
    a = _agreement_with_hard_pilot(clone=agent, fresh=fresh)
    assert a["clone"] > a["drift"] + 0.15 and a["clone"] > a["fresh"] + 0.15


@pytest.mark.slow
def test_dqn_demonstrations_make_the_greedy_policy_follow_its_teacher():
    """DQfD-style warm start: the teacher's games fill the buffer, the TD + margin pre-training
    makes the greedy policy agree with the teacher far more than an untrained network does, on
    positions from other games."""
    from spacewar_ai.agents.dqn import DQNAgent
    from spacewar_ai.config import GameConfig
    from spacewar_ai.training.online.warm_start import demonstration_start

    small = DQNConfig(hidden_sizes=(64, 64), stream_size=32, buffer_size=40_000, batch_size=256)
    fresh, agent = DQNAgent(36, 6, small, seed=0), DQNAgent(36, 6, small, seed=0)
    stats = demonstration_start(agent, "heuristic:hard", GameConfig(), decisions=40_000,
                                epochs=4, seed=0)
    assert stats["decisions"] >= 38_000 and stats["accuracy"] > 0.6
    # 0 once the teacher's action leads every other by the margin (0.8) everywhere; an untrained
    # network starts near the margin itself.
    assert stats["margin_loss"] < 0.5
    a = _agreement_with_hard_pilot(demo=agent, fresh=fresh)
    assert a["demo"] > a["drift"] + 0.1 and a["demo"] > a["fresh"] + 0.1


def test_zero_steps_with_a_warm_start_saves_the_imitation_alone(tmp_path):
    """What makes the opponent model of search.py: the checkpoint holds the cloned actor, no step
    of RL; zero steps without a warm start (an untrained network) is refused."""
    from spacewar_ai.agents.saved import load_agent

    cfg = tiny_run(tmp_path, total_timesteps=0, warm_start="heuristic:hard",
               warm_start_decisions=40_000, warm_start_epochs=4)
    trainer = Trainer(cfg, quiet=True)
    cloned = trainer.agent.select_action(np.eye(36, dtype=np.float32), deterministic=True)
    out = trainer.run()
    assert out["global_step"] == 0 and out["updates"] == 0
    agent, meta = load_agent(Path(out["run_dir"]) / "latest.pt", "cpu", "ppo", 36)
    eye = np.eye(36, dtype=np.float32)
    assert np.array_equal(agent.select_action(eye, deterministic=True), cloned)
    assert meta["metadata"]["counters"]["warm_start_accuracy"] > 0.6
    a = _agreement_with_hard_pilot(saved=agent)  # on positions of other games
    assert a["saved"] > a["drift"] + 0.1, a
    with pytest.raises(ValueError, match="total_timesteps=0 is invalid.*only with a warm start"):
        tiny_run(tmp_path, total_timesteps=0)


@pytest.mark.slow
def test_a_warm_started_dqn_run_explores_at_its_final_epsilon(tmp_path):
    cfg = tiny_run(tmp_path, algorithm="dqn", warm_start="heuristic:hard", warm_start_decisions=3840,
               warm_start_epochs=1)
    trainer = Trainer(cfg, quiet=True)
    assert trainer.agent.config.start_epsilon == trainer.agent.config.end_epsilon
    # 5 opponents x 3 steps x 256 games, every open n-step transition flushed at the cut.
    assert len(trainer.agent) == 3840 and trainer.counters.warm_start_accuracy > 0
    trainer.run()
    meta = load_checkpoint(Path(trainer.run_dir) / "latest.pt")["metadata"]
    assert meta["config"]["dqn"]["start_epsilon"] == meta["config"]["dqn"]["end_epsilon"]
