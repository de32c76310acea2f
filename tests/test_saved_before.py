"""Files saved before the package moved into subpackages load after it (tests/data/flat_layout/,
written by the flat layout: its README says how): checkpoints, a ratings file, a replay, a
Minari dataset, and the LM adapters the package ships."""

import shutil

import pytest

from tests.helpers import ROOT

SAVED = ROOT / "tests" / "data" / "flat_layout"


def test_checkpoints_load_and_play_with_their_old_settings():
    from spacewar_ai.agents import DQNAgent, PPOAgent, load_agent
    from spacewar_ai.agents.checkpoints import saved_run_config
    from spacewar_ai.pilots import make_pilot
    from spacewar_ai.rating.match import play_match

    ppo, _ = load_agent(SAVED / "ppo.pt")
    dqn, _ = load_agent(SAVED / "dqn.pt")
    assert isinstance(ppo, PPOAgent) and isinstance(dqn, DQNAgent)
    cfg = saved_run_config(SAVED / "ppo.pt")  # [train] keys that have moved since
    assert cfg.sft.learning_rate == 1e-3 and cfg.grpo.games == 4 and cfg.offline.cql_steps == 300
    result = play_match(make_pilot(f"ppo:{SAVED / 'ppo.pt'}"), f"dqn:{SAVED / 'dqn.pt'}", 2)
    assert result.n == 2


def test_a_ratings_file_is_read_and_added_to(tmp_path):
    from spacewar_ai.rating.ratings import RatingsFile, standings
    from spacewar_ai.rating.tournament import play_round_robin, resolve_entrants

    path = tmp_path / "ratings.json"
    shutil.copy(SAVED / "ratings.json", path)
    ratings = RatingsFile(path)
    assert ratings.top(1)[0]["name"] == "heuristic:hard"
    result = play_round_robin(resolve_entrants(["idle", "heuristic:hard"]), 2, seed=5)
    ratings.add(result, standings(result), "after the move")
    again = RatingsFile(path).data
    assert len(again["history"]) == 2  # the old entry and the new one


def test_a_replay_replays_to_its_recorded_state():
    from spacewar_ai.game.replays import load_replay, replay_game, state_hash

    replay = load_replay(SAVED / "replay.json")
    assert state_hash(replay_game(replay)) == replay["final_state"]


def test_a_dataset_loads_by_its_old_env_id(tmp_path, monkeypatch):
    pytest.importorskip("minari")
    from spacewar_ai.training.datasets import arrays, info, load

    shutil.copytree(SAVED / "minari", tmp_path / "minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    dataset, _ = load("flat-v0")
    assert dataset.total_episodes == 4 and "heuristic:hard" in info("flat-v0")
    obs, actions = arrays("flat-v0", pilot="heuristic:hard")
    assert obs.shape[1] == 36 and len(obs) == len(actions) > 0
    env = dataset.recover_environment()  # the spec names spacewar_ai.environment:SpacewarEnv
    assert env.reset(seed=0)[0].shape == (36,)


def test_the_shipped_adapters_are_found_by_name():
    from spacewar_ai.lm.models import adapter_meta, resolve_lm, shipped_adapters

    assert shipped_adapters() == ["dagger", "grpo", "sft"]
    for name in ("sft", "grpo", "dagger"):
        base, folder = resolve_lm(name)
        assert folder.name == name and adapter_meta(folder)["base_model"] == base == "smollm2"
