"""Datasets: games recorded with Minari and read back by Minari's own loader; the transitions
offline learners read; the dataset card; bad names and mismatched datasets in one line."""

import json
import os

import numpy as np
import pytest

from spacewar_ai.config import GameConfig, RewardConfig


@pytest.fixture()
def minari_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path / "minari"


@pytest.mark.slow
def test_the_readmes_datagen_runs_on_a_machine_without_minaris_folder(tmp_path):
    """Minari's datasets folder (~/.minari/datasets by default) is the library's place, not a
    path the user typed: on a fresh machine it is made, wherever it is, as Minari makes it."""
    from tests.commands import cli

    project, home = tmp_path / "project", tmp_path / "fresh-home" / ".minari" / "datasets"
    project.mkdir()
    env = {**os.environ, "MINARI_DATASETS_PATH": str(home)}
    done = cli("--datagen", "--players", "heuristic:hard,heuristic:medium", "--episodes", "2",
               "--dataset-id", "hm", cwd=project, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote spacewar/hm-v0: 2 games"), done.stdout
    assert (home / "spacewar" / "hm-v0").is_dir()
    assert list(project.iterdir()) == []  # nothing in the folder it ran in


def test_recorded_games_round_trip_through_minaris_loader(minari_home):
    import minari

    from spacewar_ai.training.datasets import GAMES_FILE, generate, info, transitions

    report = generate([("heuristic:hard", "heuristic:easy")], 6, "tiny", seed=3,
                      reward=RewardConfig.preset("sniper"), quiet=True)
    assert report.dataset == "spacewar/tiny-v0" and report.games == 6
    data = minari.load_dataset("spacewar/tiny-v0")  # Minari's own loader, nothing of ours
    assert data.total_episodes == 12 and data.total_steps == report.steps
    games = [json.loads(x) for x in (report.folder / GAMES_FILE).read_text().splitlines()]
    assert len(games) == 6
    for game in games:
        for ship in (0, 1):
            ep = data[game["episodes"][ship]]
            assert ep.observations.shape == (len(ep.actions) + 1, 36)
            assert ep.infos["action_mask"].dtype == np.int8
            np.testing.assert_array_equal(ep.infos["action_mask"], ep.observations[:, 30:] > 0.5)
            assert ep.terminations[-1] or ep.truncations[-1]
            # The rewards are the sniper table's, and they add up to the game's score.
            side = "a" if (game["a_side"] == ship) else "b"
            assert sum(ep.rewards) == pytest.approx(game[f"score_{side}"], abs=1e-6)
            assert len(ep.actions) == game["decisions"]
    card = info("tiny")
    assert "heuristic:hard vs heuristic:easy: 6 games" in card and "sniper" in card
    t = transitions("tiny", n_step=3, gamma=0.5)
    first = data[0]
    r = np.asarray(first.rewards)
    assert t["ret"][0] == pytest.approx(r[0] + 0.5 * r[1] + 0.25 * r[2])
    np.testing.assert_array_equal(t["next"][0], first.observations[3])
    assert t["discount"][0] == pytest.approx(0.125)
    last = len(first.actions) - 1  # the episode's last decision: one reward, the final state
    assert t["ret"][last] == pytest.approx(r[-1]) and t["discount"][last] == pytest.approx(0.5)
    assert bool(t["terminated"][last]) == bool(first.terminations[-1])


def test_bad_names_and_mismatched_datasets_are_one_line(minari_home):
    from spacewar_ai.config import RunConfig
    from spacewar_ai.training.datasets import arrays, dataset_id, generate

    with pytest.raises(ValueError, match="does not exist.*--datagen"):
        arrays("nothing-here")
    generate([("heuristic:easy", "random")], 2, "small", quiet=True)
    with pytest.raises(ValueError, match="exists already"):
        generate([("heuristic:easy", "random")], 2, "small", quiet=True)
    with pytest.raises(ValueError, match=r"shape \(36,\) and 6 actions.*\(39,\) and 7"):
        arrays("small", config=GameConfig(hyperspace=True))
    with pytest.raises(ValueError, match="no episodes flown by 'heuristic:hard'"):
        arrays("small", pilot="heuristic:hard")
    with pytest.raises(ValueError, match="did you mean 'sniper'"):
        RewardConfig.preset("snipper")
    with pytest.raises(ValueError, match="did you mean 'aggressive'"):
        RunConfig.from_dict({"reward": {"personality": "agressive"}})
    with pytest.raises(ValueError, match="--dataset-id"):
        dataset_id("bad name!")
