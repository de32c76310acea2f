"""Learning from datasets: the CQL regulariser against a hand-computed example, behaviour
cloning and conservative Q-learning on a recorded dataset, and PPO started from either."""

import math

import pytest
import torch

from spacewar_ai.agents.dqn import cql_loss
from spacewar_ai.config import (
    DQNConfig,
    LeagueConfig,
    OfflineConfig,
    PPOConfig,
    RunConfig,
    TrainConfig,
)


def test_the_cql_regulariser_matches_a_hand_computed_example():
    q = torch.tensor([[1.0, 2.0, 3.0], [0.0, 5.0, -1.0]])
    actions = torch.tensor([0, 2])
    mask = torch.tensor([[True, True, False], [True, False, True]])
    # Row 0: logsumexp(1, 2) - Q(a=0) = log(e + e^2) - 1; the masked 3 is left out.
    # Row 1: logsumexp(0, -1) - Q(a=2) = log(1 + e^-1) + 1; the masked 5 is left out.
    expected = ((math.log(math.e + math.e ** 2) - 1) + (math.log(1 + math.exp(-1)) + 1)) / 2
    assert cql_loss(q, actions, mask).item() == pytest.approx(expected, abs=1e-6)


@pytest.fixture()
def recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    from spacewar_ai.training.datasets import generate

    generate([("heuristic:hard", "heuristic:easy")], 16, "teach", seed=1, quiet=True)
    return "teach"


def _cfg(tmp_path, algorithm, bc_epochs=3, cql_steps=400, **train):
    t = dict(algorithm=algorithm, dataset="teach", checkpoint_dir=str(tmp_path / "ck"),
             log_dir=str(tmp_path / "runs"), run_name=algorithm, eval_episodes=4,
             eval_interval=1, num_envs=16, total_timesteps=16 * 16 * 2)
    t.update(train)
    return RunConfig(train=TrainConfig(**t),
                     offline=OfflineConfig(bc_epochs=bc_epochs, cql_steps=cql_steps),
                     ppo=PPOConfig(hidden_sizes=(64, 64), n_steps=16),
                     dqn=DQNConfig(hidden_sizes=(64, 64), stream_size=32, batch_size=64,
                                   play_ensemble=1),
                     league=LeagueConfig(snapshot_interval=1, pool_size=2))


@pytest.mark.slow
def test_bc_then_cql_then_ppo_from_each(tmp_path, recorded, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from spacewar_ai.agents.saved import load_agent
    from spacewar_ai.training import train

    bc = train(_cfg(tmp_path, "bc", dataset_pilot="heuristic:hard"), quiet=True)
    assert bc["accuracy"] > 0.6  # it imitates the hard pilot's recorded moves
    agent, ckpt = load_agent(tmp_path / "ck" / "bc" / "best.pt")
    assert agent.algorithm == "ppo" and ckpt["metadata"]["counters"]["best_eval"] >= 0
    # best.pt is chosen as every run's is (evaluation.Evaluator): a confirmed challenger,
    # then published as the design's bc_best.pt.
    events = EventAccumulator(str(tmp_path / "runs" / "bc"))
    events.Reload()
    assert {"eval/win_rate", "eval/confirmed_win_rate", "eval/best_win_rate"} <= \
        set(events.Tags()["scalars"])
    assert load_agent(tmp_path / "ck" / "bc_best.pt")[1]["metadata"]["run_name"] == "bc"
    capsys.readouterr()
    cql = train(_cfg(tmp_path, "cql"))
    assert cql["gradient_steps"] == 400
    out = capsys.readouterr()
    # The bar (its last line, on a pipe) counts what the summary counts: gradient steps.
    bar = out.err.strip().splitlines()[-1]
    assert "400/400" in bar and "gradient step/s" in bar and "400 gradient steps" in out.out
    agent, _ = load_agent(tmp_path / "ck" / "cql" / "latest.pt")
    assert agent.algorithm == "dqn"
    # PPO from BC's weights, and from CQL's Q-network (imitated first, as a warm start).
    for source, name in (("bc", "from-bc"), ("cql", "from-cql")):
        cfg = _cfg(tmp_path, "ppo", run_name=name, dataset="", warm_start_decisions=2000,
                   warm_start_epochs=1)
        out = train(cfg, start_from=str(tmp_path / "ck" / source / "latest.pt"), quiet=True)
        assert out["updates"] == 2
    imitated = load_agent(tmp_path / "ck" / "from-cql" / "latest.pt")[1]["metadata"]
    assert imitated["counters"]["warm_start_accuracy"] > 0.0
    assert imitated["config"]["train"]["warm_start"].startswith("dqn:")


def test_bc_and_cql_need_a_dataset():
    with pytest.raises(ValueError, match="learns from a dataset"):
        TrainConfig(algorithm="cql")


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["cql", "bc"])
def test_the_same_seed_gives_the_same_weights(tmp_path, recorded, algorithm):
    from spacewar_ai.agents.saved import load_agent
    from spacewar_ai.training import train

    weights = []
    for k in range(2):
        train(_cfg(tmp_path, algorithm, run_name=f"{algorithm}{k}", cql_steps=100,
                   bc_epochs=1), quiet=True)
        agent, _ = load_agent(tmp_path / "ck" / f"{algorithm}{k}" / "latest.pt")
        net = agent.q if algorithm == "cql" else agent.net
        weights.append(net.state_dict())
    first, second = weights
    for name in first:
        assert torch.equal(first[name], second[name]), name


def test_bc_and_cql_stop_at_minutes(tmp_path, recorded, capsys):
    """--minutes ends behaviour cloning after the pass in which it ran out, and conservative
    Q-learning at the next gradient update: a limit no pass fits stops each after its first."""
    from spacewar_ai.main import main

    common = ["--dataset", "teach", "--checkpoint-dir", str(tmp_path / "ck"), "--quiet",
              "--minutes", "1e-9", "--eval-episodes", "2"]
    assert main(["--algorithm", "bc", "--run-name", "bc", *common]) == 0
    assert "done: behaviour cloning, 1 pass over" in capsys.readouterr().out
    assert main(["--algorithm", "cql", "--run-name", "cql", *common]) == 0
    out = capsys.readouterr().out
    one_update = DQNConfig().gradient_steps
    assert f"done: conservative Q-learning, {one_update} gradient steps" in out, out
