"""Checkpoint files: atomic writes, and one clear error for every bad file."""

import os

import pytest
import torch

from spacewar_ai.agents.checkpoints import FORMAT_VERSION, CheckpointError, load_checkpoint
from spacewar_ai.agents.dqn import DQNAgent
from spacewar_ai.agents.ppo import PPOAgent
from spacewar_ai.agents.saved import load_agent
from spacewar_ai.config import DQNConfig, PPOConfig
from spacewar_ai.util.files import atomic_write_bytes
from tests.commands import cli
from tests.helpers import ROOT

PPO = PPOConfig(hidden_sizes=(16,))


@pytest.fixture
def ppo_file(tmp_path):
    path = tmp_path / "ppo.pt"
    PPOAgent(36, 6, PPO).save(path, {"counters": {"updates": 3}})
    return path


def test_a_failed_write_leaves_the_previous_file_intact(ppo_file):
    before = ppo_file.read_bytes()

    def dies_halfway(f):
        f.write(b"partial")
        raise KeyboardInterrupt  # like a kill in the middle of torch.save

    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(ppo_file, dies_halfway)
    assert ppo_file.read_bytes() == before
    assert [p.name for p in ppo_file.parent.iterdir()] == ["ppo.pt"], "no temp file left"
    load_checkpoint(ppo_file)


def _assert_clear(exc_info, path, *words):
    msg = str(exc_info.value)
    assert str(path) in msg
    for w in words:
        assert w in msg, msg
    assert "\n" not in msg


def test_missing_random_and_truncated_files(tmp_path, ppo_file):
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(tmp_path / "nope.pt")
    _assert_clear(e, tmp_path / "nope.pt", "no such file")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"\x00\x01 not a checkpoint" * 50)
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(junk)
    _assert_clear(e, junk, "truncated or corrupt")
    cut = tmp_path / "cut.pt"
    cut.write_bytes(ppo_file.read_bytes()[:700])
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(cut)
    _assert_clear(e, cut, "truncated or corrupt")


def test_every_broken_file_is_one_line_and_no_warning(tmp_path):
    """Random bytes of many sizes and truncations of the shipped network: each is refused in
    one line (CheckpointError), whatever torch's unpickler makes of it, and none of torch's
    warnings about the file reaches the user."""
    import warnings

    import numpy as np

    rng = np.random.default_rng(0)
    shipped = (ROOT / "spacewar_ai" / "pretrained" / "ppo_spacewar.pt").read_bytes()
    broken = [rng.integers(0, 256, int(size), dtype=np.uint8).tobytes()
              for size in rng.integers(64, 40_000, 300)]
    broken += [shipped[:int(cut)] for cut in rng.integers(1, len(shipped), 60)]
    path = tmp_path / "broken.pt"
    for data in broken:
        path.write_bytes(data)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            with pytest.raises(CheckpointError) as e:
                load_checkpoint(path)
        _assert_clear(e, path)
        assert not said, [str(w.message)[:200] for w in said]


def test_wrong_algorithm_observation_size_and_newer_format(tmp_path, ppo_file):
    dqn = tmp_path / "dqn.pt"
    DQNAgent(36, 6, DQNConfig(hidden_sizes=(16,), stream_size=8, buffer_size=10)).save(dqn)
    with pytest.raises(CheckpointError) as e:
        PPOAgent(36, 6, PPO).load(dqn)
    _assert_clear(e, dqn, "holds a DQN model, not PPO")
    with pytest.raises(CheckpointError) as e:
        PPOAgent(37, 7, PPO).load(ppo_file)
    _assert_clear(e, ppo_file, "36-float observations", "gives 37")
    payload = torch.load(ppo_file, weights_only=True)
    payload["format_version"] = FORMAT_VERSION + 1
    newer = tmp_path / "newer.pt"
    torch.save(payload, newer)
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(newer)
    _assert_clear(e, newer, "newer", "upgrade")
    plain = tmp_path / "plain.pt"
    torch.save({"weights": torch.zeros(3)}, plain)
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(plain)
    _assert_clear(e, plain, "not a Spacewar! AI checkpoint")


def test_load_agent_reads_the_algorithm_from_the_file(tmp_path, ppo_file):
    agent, ckpt = load_agent(ppo_file)
    assert isinstance(agent, PPOAgent) and ckpt["metadata"]["counters"]["updates"] == 3


@pytest.mark.slow
def test_cli_reports_a_bad_checkpoint_in_one_line(tmp_path):
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"garbage")
    out = cli("--evaluate", "--checkpoint", junk, cwd=ROOT, timeout=120)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert str(junk) in out.stderr and "truncated or corrupt" in out.stderr


def test_the_network_shape_comes_from_the_file(tmp_path):
    """A relu model loads as relu; a file saved before `activation` and `observation_view`
    existed loads as tanh reading the world view, and plays as it did; weights never load
    silently into a differently shaped network."""
    import numpy as np

    relu = PPOAgent(36, 6, PPOConfig(hidden_sizes=(16,), activation="relu"))
    relu.save(tmp_path / "relu.pt")
    loaded, _ = load_agent(tmp_path / "relu.pt")
    assert loaded.config.activation == "relu"
    obs = np.random.default_rng(0).normal(size=(64, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    assert np.array_equal(loaded.select_action(obs, deterministic=True),
                          relu.select_action(obs, deterministic=True))
    # An old file: the same payload without the two fields, as session 1 wrote them.
    old = PPOAgent(36, 6, PPOConfig(hidden_sizes=(16,), activation="tanh",
                                    observation_view="world"))
    old.save(tmp_path / "old.pt")
    payload = torch.load(tmp_path / "old.pt", weights_only=True)
    for name in ("activation", "observation_view"):
        del payload["agent"]["config"][name]
    torch.save(payload, tmp_path / "old.pt")
    legacy, _ = load_agent(tmp_path / "old.pt")
    assert (legacy.config.activation, legacy.config.observation_view) == ("tanh", "world")
    assert np.array_equal(legacy.select_action(obs, deterministic=True),
                          old.select_action(obs, deterministic=True))
    tanh = PPOAgent(36, 6, PPOConfig(hidden_sizes=(16,), activation="tanh"))
    with pytest.raises(ValueError, match="relu.*tanh.*saved config"):
        tanh.load(tmp_path / "relu.pt")


def test_the_latest_runs_best_model_is_published_under_the_designs_names(tmp_path):
    from spacewar_ai.agents.checkpoints import publish_best

    for run, updates in (("first", 1), ("second", 2)):
        best = tmp_path / run / "best.pt"
        PPOAgent(36, 6, PPO).save(best, {"counters": {"updates": updates}})
        assert publish_best(best, "ppo") == tmp_path / "ppo_best.pt"
        assert (tmp_path / "ppo_best.pt").read_bytes() == best.read_bytes()
    link = tmp_path / "ppo_best_model.pt"
    assert link.is_symlink() and os.readlink(link) == "ppo_best.pt"
    assert load_checkpoint(link)["metadata"]["counters"]["updates"] == 2  # the latest run's
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "first", "ppo_best.pt", "ppo_best_model.pt", "second"]  # no temporary left
