"""The opponent model a training run learns by watching the opponent it is judged against
(opponent_model.py): it learns that opponent's moves, it leaves the learner's training exactly as
it was, it survives a resume, and `search:` plans with it."""

import numpy as np
import pytest
import torch

from spacewar_ai.agents.checkpoints import load_checkpoint
from spacewar_ai.agents.opponent_model import FILE_NAME
from spacewar_ai.agents.saved import export_for_play
from spacewar_ai.config import GameConfig, LeagueConfig, PPOConfig, RunConfig, TrainConfig
from spacewar_ai.game import engine
from spacewar_ai.pilots.build import file_identity, make_pilot, search_pilot
from spacewar_ai.pilots.scripted import HeuristicPilot
from spacewar_ai.pilots.spec import OPPONENT_MODEL_PATH
from spacewar_ai.training.online.trainer import Trainer
from tests.commands import cli

CFG = GameConfig()


def _run_config(tmp_path, steps, name="watch", **train):
    t = dict(algorithm="ppo", num_envs=64, total_timesteps=steps, seed=4,
             checkpoint_dir=str(tmp_path / "ck"), log_dir=str(tmp_path / "runs"), run_name=name,
             eval_interval=10**6, save_interval=5)
    t.update(train)
    # Every game against the hard pilot, the default evaluation opponent.
    return RunConfig(train=TrainConfig(**t), ppo=PPOConfig(n_steps=32, hidden_sizes=(32, 32)),
                     league=LeagueConfig(curriculum=("heuristic:hard",), scripted_share=1.0))


def _agreement_with_hard(model, games=64, seed=70_000):
    """How often `model` (a pilot) picks the hard pilot's move, on positions of games it was not
    fitted on: the hard pilot against the random pilot, from starts no run uses."""
    hard, other = HeuristicPilot("hard", CFG), make_pilot("random", CFG, seed=1)
    batch = engine.GameBatch(games, CFG)
    batch.reset(seeds=np.arange(seed, seed + games))
    other.reset(np.ones(games, bool), batch.rng.copy())
    same = total = 0
    while not batch.game_i[:, engine.OVER].all():
        obs = batch.observe()
        running = batch.game_i[:, engine.OVER] == 0
        moves = np.stack([other.act(obs[:, 0]), hard.act(obs[:, 1])], axis=1)
        same += int(np.sum(model.act(obs[running, 1]) == moves[running, 1]))
        total += int(running.sum())
        batch.step(moves)
    return same / total


@pytest.mark.slow
def test_a_run_learns_the_moves_of_the_opponent_it_is_judged_against(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    steps = 64 * 32 * 40
    out = Trainer(_run_config(tmp_path, steps), quiet=True).run()
    path = tmp_path / "ck" / "watch" / FILE_NAME
    ckpt = load_checkpoint(path)
    assert ckpt["metadata"]["opponent_model_of"] == "heuristic:hard"
    # Every decision of ship 1 was the hard pilot's, and each was read once.
    assert ckpt["metadata"]["decisions"] == steps
    ea = EventAccumulator(out["log_dir"])
    ea.Reload()
    accuracy = [e.value for e in ea.Scalars("charts/opponent_model_accuracy")]
    assert len(accuracy) == 40 and "losses/opponent_model_loss" in ea.Tags()["scalars"]
    # It learned from every decision while it foresaw none surely, from fewer as it learned.
    learned = [e.value for e in ea.Scalars("charts/opponent_model_learned")]
    assert learned[0] == 1 and learned[-1] < 0.9, learned
    # Each figure is measured on the update's new positions before the model learns them.
    # Measured: 2.6% at the first update (an untrained network), 91.1% at the last.
    assert accuracy[0] < 0.3 and accuracy[-1] > 0.8, (accuracy[0], accuracy[-1])
    model = make_pilot(str(path), CFG)
    untrained = make_pilot(str(tmp_path / "ck" / "watch" / "latest.pt"), CFG)
    # Measured: 92.7% of the hard pilot's moves in other games, where the learner's own network
    # (which never imitated anybody) agrees on 7.3%.
    learned, chance = _agreement_with_hard(model), _agreement_with_hard(untrained)
    assert learned > 0.8 and learned > chance + 0.5, (learned, chance)


def test_watching_the_opponent_changes_nothing_in_the_learners_training(tmp_path):
    weights, rng = [], []
    for on in (True, False):
        t = Trainer(_run_config(tmp_path / str(on), 64 * 32 * 4, opponent_model=on,
                                eval_interval=2, eval_episodes=4), quiet=True)
        t.run()
        weights.append(t.agent.state_dict()["net"])
        rng.append(torch.get_rng_state())
        assert (t.run_dir / FILE_NAME).is_file() == on
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert torch.equal(rng[0], rng[1])


@pytest.mark.slow
def test_a_resumed_run_goes_on_with_the_model_it_had(tmp_path):
    first = Trainer(_run_config(tmp_path, 64 * 32 * 5), quiet=True)
    first.run()
    path = tmp_path / "ck" / "watch" / FILE_NAME
    saved = load_checkpoint(path)
    resumed = _run_config(tmp_path, 64 * 32 * 7)
    trainer = Trainer(resumed, resume=tmp_path / "ck" / "watch" / "latest.pt", quiet=True)
    model = trainer.opponent_model
    assert model.decisions == saved["metadata"]["decisions"]
    # What it foresaw when the first run stopped is known before its next fit (the resumed
    # run's last words would otherwise call it untaught).
    assert model.accuracy == first.opponent_model.accuracy is not None
    assert all(torch.equal(model.agent.net.state_dict()[k], v)
               for k, v in saved["agent"]["net"].items())
    trainer.run()
    assert load_checkpoint(path)["metadata"]["decisions"] == 64 * 32 * 7


def test_no_model_when_the_judge_never_plays_in_the_league(tmp_path):
    # Judged against idle while only the hard pilot plays: there is no one to watch.
    t = Trainer(_run_config(tmp_path, 64 * 32 * 2, eval_opponent="idle", eval_interval=2,
                            eval_episodes=4), quiet=True)
    t.run()
    assert t.opponent_model is None and not (t.run_dir / FILE_NAME).exists()


def test_search_plans_with_the_runs_own_model_unless_told_otherwise(tmp_path):
    Trainer(_run_config(tmp_path, 64 * 32 * 2), quiet=True).run()
    run = tmp_path / "ck" / "watch"
    own = search_pilot(str(run / "best.pt"), CFG, horizon=4, samples=1)
    assert own.opponent_model.identity == file_identity(run / FILE_NAME)
    named = search_pilot(f"{run / 'best.pt'}+pretrained", CFG, horizon=4, samples=1)
    assert named.opponent_model.identity == make_pilot("pretrained", CFG).identity
    # An exported copy has no run beside it: the shipped model of the hard pilot.
    export_for_play(run / "best.pt", tmp_path / "alone" / "best.pt")
    alone = search_pilot(str(tmp_path / "alone" / "best.pt"), CFG, horizon=4, samples=1)
    assert alone.opponent_model.identity == file_identity(OPPONENT_MODEL_PATH)


@pytest.mark.parametrize("field,value", [("opponent_model_batch", 0),
                                         ("opponent_model_lr", -1e-3),
                                         ("opponent_model", "yes"),
                                         ("opponent_model_share", 0),
                                         ("opponent_model_share", 1.5),
                                         ("opponent_model_sure", 0),
                                         ("opponent_model_sure", 1.01)])
def test_bad_opponent_model_settings_are_named(field, value):
    with pytest.raises(ValueError, match=field):
        TrainConfig(**{field: value})


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["ppo", "dqn"])
def test_the_cli_names_the_model_and_the_command_that_plans_with_it(tmp_path, algorithm):
    import json
    import shlex

    cfg = tmp_path / "watch.json"
    cfg.write_text(json.dumps({"ppo": {"n_steps": 16, "hidden_sizes": [32, 32]},
                               "dqn": {"hidden_sizes": [32, 32], "stream_size": 16,
                                       "learning_starts": 64, "batch_size": 32},
                               "league": {"curriculum": ["heuristic:hard"]},
                               "train": {"log_dir": str(tmp_path / "runs"),
                                         "eval_interval": 1000}}))
    train = cli("--algorithm", algorithm, "--config", cfg, "--num-envs", "16", "--timesteps",
                "1024", "--checkpoint-dir", tmp_path, "--run-name", "cli", "--quiet",
                timeout=300)
    assert train.returncode == 0, train.stderr
    line = next(x for x in train.stdout.splitlines() if x.startswith("opponent model of"))
    assert str(tmp_path / "cli" / FILE_NAME) in line
    assert "plan with it (40 games, about a minute" in line
    command = shlex.split(line.split("): ", 1)[1])
    assert command[:2] == ["spacewar-ai", "--evaluate"]
    # The printed command runs as printed (two games, to keep the test short).
    evaluated = cli(*command[1:], "--eval-episodes", "2", "--ratings-file",
                    tmp_path / "ratings.json", timeout=300)
    assert evaluated.returncode == 0, evaluated.stderr
    # A DQN network plans over itself too, its rollouts jittered (search.py).
    assert f"search:{algorithm}:cli/best.pt" in evaluated.stdout and "vs heuristic:hard: 2 games" in evaluated.stdout


def test_a_kill_between_the_two_writes_cannot_mislead_a_resumed_run(tmp_path):
    """latest.pt holds the opponent model itself; opponent_model.pt is a copy for search. A
    kill that leaves the copy from another update (here: an older run's) changes nothing: the
    resumed run goes on with latest.pt's model and writes the copy again."""
    Trainer(_run_config(tmp_path, 64 * 32 * 2, name="old"), quiet=True).run()
    Trainer(_run_config(tmp_path, 64 * 32 * 3), quiet=True).run()
    run = tmp_path / "ck" / "watch"
    inside = load_checkpoint(run / "latest.pt")["opponent_model"]
    (run / FILE_NAME).write_bytes((tmp_path / "ck" / "old" / FILE_NAME).read_bytes())
    assert load_checkpoint(run / FILE_NAME)["metadata"]["decisions"] != inside["decisions"]
    trainer = Trainer(_run_config(tmp_path, 64 * 32 * 4), resume=run / "latest.pt", quiet=True)
    model = trainer.opponent_model
    assert model.decisions == inside["decisions"] == 64 * 32 * 3
    assert all(torch.equal(model.agent.net.state_dict()[k], v)
               for k, v in inside["agent"]["net"].items())
    copy = load_checkpoint(run / FILE_NAME)
    assert copy["metadata"]["decisions"] == inside["decisions"]
    assert all(torch.equal(copy["agent"]["net"][k], v) for k, v in inside["agent"]["net"].items())


def test_a_model_fitted_on_part_of_the_decisions_forecasts_nearly_as_well(tmp_path):
    """The same stream of the hard pilot's decisions (a fixed batch of games, update by update)
    shown to a model that learns from all of them, to one that learns from every fourth and to
    one that learns only from the moves it does not already foresee surely: the second learns
    from a quarter of the decisions, evenly spread, the third from fewer and fewer as it learns,
    and both forecast the hard pilot on unseen positions nearly as well as the first."""
    from spacewar_ai.agents.opponent_model import OpponentModel
    from spacewar_ai.pilots.build import AgentPilot

    games, steps = 64, 32
    full = OpponentModel("heuristic:hard", CFG, games * steps, batch_size=256)
    part = OpponentModel("heuristic:hard", CFG, games * steps, batch_size=64, share=0.25)
    unsure = OpponentModel("heuristic:hard", CFG, games * steps, batch_size=256, sure=0.99)
    hard, other = HeuristicPilot("hard", CFG), make_pilot("random", CFG, seed=2)
    batch = engine.GameBatch(games, CFG)
    learned = []
    for update in range(12):
        batch.reset(seeds=np.arange(games) + 1000 * update)
        other.reset(np.ones(games, bool), batch.rng.copy())
        for _ in range(steps):
            obs = batch.observe()
            running = np.flatnonzero(batch.game_i[:, engine.OVER] == 0)
            moves = np.stack([other.act(obs[:, 0]), hard.act(obs[:, 1])], axis=1)
            for model in (full, part, unsure):
                model.observe(obs[:, 1], moves[:, 1], running)
            batch.step(moves)
        for model in (full, part, unsure):
            model.fit()
        learned.append(unsure.settle()["learned"])
    assert part.decisions == pytest.approx(full.decisions / 4, abs=1)
    assert unsure.decisions == full.decisions  # every one read, not every one learned from
    # Measured: all of the first five updates' decisions, 64% of the last's.
    assert learned[0] == 1 and learned[-1] < 0.8, learned
    agree = {name: _agreement_with_hard(AgentPilot(m.agent, name))
             for name, m in (("full", full), ("part", part), ("unsure", unsure))}
    assert all(agree[k] > 0.8 and agree[k] > agree["full"] - 0.05 for k in agree), agree


def test_decisions_shown_while_a_fit_runs_wait_for_the_next_fit():
    """A fit runs in its own thread while the next update's decisions are shown to the model:
    they go to the other buffer and are learned by the next fit, so the model learns what it
    would have learned had it waited for each fit before showing it more."""
    from spacewar_ai.agents.opponent_model import OpponentModel

    rows, rng = 4096, np.random.default_rng(5)
    updates = [(rng.normal(size=(rows, CFG.obs_dim)).astype(np.float32),
                rng.integers(0, CFG.num_actions, rows)) for _ in range(3)]
    models = [OpponentModel("heuristic:hard", CFG, rows, batch_size=256) for _ in range(2)]
    for waits, model in zip((False, True), models):
        for obs, actions in updates:
            if waits:
                model.settle()
            model.observe(obs, actions, np.arange(rows))
            assert model.fit()
    assert models[0].decisions == models[1].decisions == 3 * rows
    assert models[0].accuracy == models[1].accuracy
    nets = [m.agent.net.state_dict() for m in models]
    assert all(torch.equal(nets[0][k], nets[1][k]) for k in nets[0])
