"""The self-play league: curriculum stages, snapshots and their eviction, and opponents of every
kind (snapshots, the current self, champions of another shape, DQN) playing their games."""

import numpy as np
import torch

from spacewar_ai.agents.dqn import DQNAgent
from spacewar_ai.agents.ppo import PPOAgent
from spacewar_ai.config import DQNConfig, GameConfig, LeagueConfig, PPOConfig
from spacewar_ai.game.environment import SpacewarVectorEnv
from spacewar_ai.training.online.league import SELF, League

SMALL = PPOConfig(hidden_sizes=(16,), activation="relu")


def _obs(n: int) -> np.ndarray:
    env = SpacewarVectorEnv(n, GameConfig())
    obs, _ = env.reset_both(seed=3)
    return obs[:, 1]


def test_the_curriculum_moves_on_when_the_stage_is_beaten():
    league = League(LeagueConfig(curriculum=("idle", "heuristic:easy"),
                                          curriculum_window=10, curriculum_threshold=0.6),
                             GameConfig(), num_envs=8, seed=0)
    league.assign()
    assert league.stage_spec == "idle"
    assert list(league.assignment) == ["idle"] * 8  # no learner yet: all play the stage
    assert not league.record(["idle"] * 10, np.array([1.0] * 5 + [0.5] * 5))  # draws: no
    assert league.record(["idle"] * 10, np.ones(10))
    assert league.stage_spec == "heuristic:easy"


def test_evicted_snapshots_give_their_games_a_new_opponent(tmp_path):
    cfg = LeagueConfig(scripted_share=0.0, past_share=1.0, pool_size=2)
    league = League(cfg, GameConfig(), num_envs=32, seed=1, snapshot_dir=tmp_path)
    agent = PPOAgent(36, 6, SMALL)
    league.set_learner(agent)
    first = league.add_snapshot(agent, "u1")
    league.assign()
    assert (league.assignment == first).all()
    league.add_snapshot(agent, "u2")
    league.add_snapshot(agent, "u3")  # pool of 2: u1 goes
    assert first not in league.snapshot_keys and first not in league.assignment
    assert len(list(tmp_path.glob("*.pt"))) == 3  # files stay: checkpoints may name them


def _mixed_league(folder):
    cfg = LeagueConfig(scripted_share=0.25, past_share=0.8, pool_size=3)
    league = League(cfg, GameConfig(), num_envs=64, seed=2, snapshot_dir=folder)
    torch.manual_seed(10)
    league.set_learner(PPOAgent(36, 6, SMALL))
    for k in range(3):
        torch.manual_seed(k)
        league.add_snapshot(PPOAgent(36, 6, SMALL), f"u{k}")
    torch.manual_seed(20)
    PPOAgent(36, 6, PPOConfig(hidden_sizes=(8,), activation="tanh")).save(folder / "tanh.pt")
    DQNAgent(36, 6, DQNConfig(hidden_sizes=(8,), stream_size=4, buffer_size=10),
             seed=3).save(folder / "dqn.pt")
    keys = league.add_fixed(folder / "tanh.pt"), league.add_fixed(folder / "dqn.pt")
    league.assign()
    return league, keys


def test_opponents_of_every_kind_play_valid_actions_reproducibly(tmp_path):
    """Snapshots and the current self play in one batched pass; a champion of another shape and
    a DQN champion play on their own. The same league from the same seeds plays the same."""
    played = []
    for k in range(2):
        (tmp_path / str(k)).mkdir()
        league, (tanh_key, dqn_key) = _mixed_league(tmp_path / str(k))
        kinds = set(league.assignment.tolist())
        assert SELF in kinds and len(kinds) >= 5, kinds
        obs = _obs(64)
        torch.manual_seed(0)
        played.append(league.act(obs))
        for a, m in zip(played[-1], obs[:, 30:]):
            assert m[a] == 1.0
        index, stack = league._policy_stack()
        assert set(index) == {SELF, *league.snapshot_keys}
        assert tanh_key not in index and dqn_key not in index and stack.size == 4
    assert np.array_equal(played[0], played[1])


def test_champions_of_another_generation_play_beside_new_ones(tmp_path):
    """The shipped model reads the game with older view constants (no `gravity`): it cannot share
    a batched pass with a new model of the same shape, and once crashed champion training. Each
    plays its own games; the new models still share one pass."""
    from spacewar_ai.pilots.build import PRETRAINED_PATH

    new = PPOAgent(36, 6, PPOConfig())
    new.save(tmp_path / "new.pt")
    league = League(LeagueConfig(scripted_share=0.0, past_share=1.0, pfsp=False), GameConfig(),
                    num_envs=64, seed=0)
    league.add_fixed(PRETRAINED_PATH)
    league.add_fixed(tmp_path / "new.pt")
    league.set_learner(new)
    league.assign()
    old = league.pilots[league.fixed_keys[0]].agent
    assert "gravity" not in old.view_constants and "gravity" in new.view_constants
    actions = league.act(_obs(64))
    assert actions.shape == (64,) and set(league.assignment) == set(league.fixed_keys)
    index, _ = league._policy_stack()
    assert league.fixed_keys[0] not in index and league.fixed_keys[1] in index and SELF in index


def test_a_replica_follows_the_learners_pool_stage_and_results(tmp_path):
    """A rollout worker's league (League.follow): snapshots and champions loaded from the
    learner's files, evicted snapshots dropped with their games redrawn, the stage and the
    results PFSP weighs taken over; its snapshots play as the learner's do."""
    cfg = LeagueConfig(curriculum=("idle", "heuristic:easy"), scripted_share=0.0,
                       past_share=1.0, pool_size=2)
    learner = League(cfg, GameConfig(), num_envs=4, seed=1, snapshot_dir=tmp_path / "pool")
    agent = PPOAgent(36, 6, SMALL)
    learner.set_learner(agent)
    learner.add_snapshot(agent, "u1")
    champion = tmp_path / "champ" / "best.pt"
    agent.save(champion)
    learner.add_fixed(champion)
    learner.record(["snapshot:u1", "snapshot:u1"], [1.0, 0.0])
    learner.stage = 1
    replica = League(cfg, GameConfig(), num_envs=16, seed=9)
    replica.set_learner(agent)
    replica.follow(learner.view(), learner.files)
    assert replica.stage_spec == "heuristic:easy"
    assert replica.win_rate("snapshot:u1") == 0.5
    assert replica.snapshot_keys == ["snapshot:u1"] and replica.fixed_keys == learner.fixed_keys
    for key in ("snapshot:u1", "champion:champ/best"):
        theirs = replica.pilots[key].agent.net.state_dict()
        assert all(torch.equal(v, theirs[k]) for k, v in agent.net.state_dict().items())
    replica.assign()
    assert set(replica.assignment) <= {"snapshot:u1", "champion:champ/best", SELF}
    assert replica.act(_obs(16)).shape == (16,)
    # Two more snapshots evict u1: the replica drops it and its games get other opponents.
    learner.add_snapshot(agent, "u2")
    learner.add_snapshot(agent, "u3")
    replica.follow(learner.view(), learner.files)
    assert replica.snapshot_keys == ["snapshot:u2", "snapshot:u3"]
    assert "snapshot:u1" not in replica.pilots
    assert not np.any(replica.assignment == "snapshot:u1")
