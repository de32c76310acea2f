"""A run's evaluations and its best.pt: fresh starts every time, and best.pt changing hands only by
winning the same fresh games as the challenger."""

import numpy as np
import pytest
import torch

from spacewar_ai.agents.checkpoints import load_checkpoint
from spacewar_ai.config import (
    RunConfig,
    TrainConfig,
)
from spacewar_ai.training.evaluation import evaluation_seeds
from spacewar_ai.training.online.trainer import Trainer
from tests.helpers import tiny_run


def _eval_events(tr, tag):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(tr.log_dir))
    ea.Reload()
    return [e.value for e in ea.Scalars(tag)] if tag in ea.Tags()["scalars"] else []


def test_evaluation_videos_can_be_turned_off(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = Trainer(tiny_run(tmp_path, eval_video=0.0), quiet=True).run()
    ea = EventAccumulator(out["log_dir"])
    ea.Reload()
    assert "eval/win_rate" in ea.Tags()["scalars"] and ea.Tags()["images"] == []


@pytest.mark.slow
def test_best_checkpoints_figure_does_not_climb_on_luck(tmp_path):
    """One unchanging network evaluated again and again: every new high of eval/win_rate is luck.
    It challenges best.pt (itself) on fresh games, ties, and the figure pools those games: it
    settles on the network's mean instead of climbing to the luckiest confirmation, as it did
    when best.pt kept the highest confirmed figure."""
    tr = Trainer(tiny_run(tmp_path, eval_episodes=20, eval_opponent="idle"), quiet=True)
    firsts = []
    for update in range(10):
        tr.counters.updates = 20 * update  # evaluations fall every 20 updates by default
        tr.counters.global_step = update
        firsts.append(tr.evaluate_now())
    tr.writer.close()
    confirmed = _eval_events(tr, "eval/confirmed_win_rate")
    assert len(set(firsts)) > 1 and len(set(confirmed)) > 1  # the games do differ by seed
    assert len(confirmed) > 1  # it was challenged, and kept its place
    best = tr.counters.best_eval
    assert best == pytest.approx(np.mean(confirmed), abs=1e-6)
    assert best < max(confirmed) and tr.counters.best_eval_games == 20 * len(confirmed)
    assert load_checkpoint(tr.run_dir / "best.pt")["metadata"]["counters"]["best_eval"] == best
    assert _eval_events(tr, "eval/best_win_rate")[-1] == pytest.approx(best)


def test_best_checkpoint_changes_hands_by_winning_the_same_fresh_games(tmp_path):
    """An untrained network holds best.pt until the shipped model challenges it; after a resume
    best.pt's player is read back from the file, without moving torch's generator."""
    from spacewar_ai.pilots.build import PRETRAINED_PATH

    cfg = RunConfig(train=TrainConfig(num_envs=16, seed=3, eval_episodes=20, run_name="h2h",
                                      checkpoint_dir=str(tmp_path / "ck"),
                                      log_dir=str(tmp_path / "runs")))
    tr = Trainer(cfg, quiet=True)  # the default network, the shipped model's shape
    for update in (20, 40):
        tr.counters.updates = update
        tr.evaluate_now()
    untrained = tr.counters.best_eval
    assert untrained < 0.2
    shipped = load_checkpoint(PRETRAINED_PATH)["agent"]
    tr.agent.load_state_dict(shipped)
    tr.counters.updates = 60
    tr.evaluate_now()
    assert tr.counters.best_eval > untrained + 0.2 and tr.counters.best_eval_games == 20
    saved = load_checkpoint(tr.run_dir / "best.pt")["agent"]["net"]
    assert all(torch.equal(saved[k], v) for k, v in shipped["net"].items())
    tr.save("latest.pt")
    tr.writer.close()

    resumed = Trainer(cfg, resume=tr.run_dir / "latest.pt", quiet=True)
    assert resumed.counters.best_eval == tr.counters.best_eval
    before = torch.get_rng_state()
    held = resumed.evaluator.incumbent().agent.state_dict()["net"]
    assert torch.equal(torch.get_rng_state(), before)
    assert all(torch.equal(held[k], v) for k, v in shipped["net"].items())

    # A checkpoint written before the figure was pooled: its figure stood for one evaluation.
    from spacewar_ai.agents.checkpoints import rewrite_metadata

    def unpooled(meta):
        meta["counters"].pop("best_eval_games")
        return meta

    rewrite_metadata(tr.run_dir / "latest.pt", unpooled)
    old = Trainer(cfg, resume=tr.run_dir / "latest.pt", quiet=True)
    assert old.counters.best_eval_games == 20


def test_evaluations_and_confirmations_never_share_a_starting_position():
    """Each evaluation (and each candidate's confirmation) plays starts of its own, so the noise
    of successive evaluations is independent. They once shared 30 of 50 starts."""
    games = TrainConfig().eval_episodes
    seen: set[int] = set()
    for updates in range(0, 2000, TrainConfig().eval_interval):
        for first in evaluation_seeds(updates, games):
            starts = set(range(first, first + games // 2))  # sides swapped: half the games
            assert not starts & seen, f"update {updates} replays starts"
            seen |= starts


def test_the_designs_best_file_holds_the_best_model_measured_not_the_latest(tmp_path):
    """`<checkpoint_dir>/ppo_best.pt` changes runs only when the new run's best.pt wins more of
    the same games than the model there: an untrained run publishes first, the shipped model's
    run replaces it, and a later untrained run leaves it in place, each said in one line."""
    from spacewar_ai.pilots.build import PRETRAINED_PATH

    published = tmp_path / "ck" / "ppo_best.pt"
    said = []

    def trainer(name, weights=None):
        cfg = RunConfig(train=TrainConfig(num_envs=16, seed=3, eval_episodes=20, run_name=name,
                                          checkpoint_dir=str(tmp_path / "ck"),
                                          log_dir=str(tmp_path / "runs")))
        tr = Trainer(cfg, quiet=True)
        if weights is not None:
            tr.agent.load_state_dict(weights)
        tr.evaluator.say = said.append
        tr.counters.updates = 20
        tr.evaluate_now()
        tr.writer.close()
        return tr

    first = trainer("untrained")
    assert published.read_bytes() == (first.run_dir / "best.pt").read_bytes() and said == []
    strong = trainer("shipped", load_checkpoint(PRETRAINED_PATH)["agent"])
    assert published.read_bytes() == (strong.run_dir / "best.pt").read_bytes()
    assert said[-1].startswith(f"{published} is now this run's best.pt") \
        and "run untrained's model" in said[-1]
    late = trainer("untrained-again")
    assert published.read_bytes() == (strong.run_dir / "best.pt").read_bytes()
    assert (late.run_dir / "best.pt").read_bytes() != published.read_bytes()
    assert said[-1].startswith(f"{published} stays run shipped's model"), said
    # A run that reaches the same weights ties, and says so rather than an earlier gap.
    trainer("shipped-again", load_checkpoint(PRETRAINED_PATH)["agent"])
    assert said[-1].startswith(f"{published} stays run shipped's model") \
        and said[-1].endswith("(a tie keeps it)"), said


def test_runs_of_other_games_keep_a_best_file_each(tmp_path):
    """A network plays only the game it learned: a run under other rules, controls or with
    hyperspace publishes the best of its game's runs beside `ppo_best.pt`, named for the game,
    in either order, and one line says so; a `ppo_best.pt` that holds another game's network
    (written before files were named for games) is neither played nor replaced."""
    from spacewar_ai.config import GameConfig

    folder = tmp_path / "ck"
    said = []

    def trainer(name, game):
        cfg = RunConfig(game=game, train=TrainConfig(
            num_envs=16, seed=3, eval_episodes=4, run_name=name, checkpoint_dir=str(folder),
            log_dir=str(tmp_path / "runs")))
        tr = Trainer(cfg, quiet=True)
        tr.evaluator.say = said.append
        tr.counters.updates = 20
        tr.evaluate_now()
        tr.writer.close()
        return (tr.run_dir / "best.pt").read_bytes()

    peer = GameConfig.from_dict({"rules": "rllib_sw", "controls": "switches"})
    named = folder / "ppo_best_rllib_sw_switches_hyperspace.pt"
    preset_first = trainer("preset", peer)
    assert named.read_bytes() == preset_first and not (folder / "ppo_best.pt").exists()
    assert said == [f"{named}: the best of this game's PPO runs (a network plays only the game "
                    "it learned; ppo_best.pt is the default game's)"]
    default = trainer("default", GameConfig())
    assert (folder / "ppo_best.pt").read_bytes() == default
    assert named.read_bytes() == preset_first
    jumping = trainer("jumping", GameConfig(hyperspace=True))
    assert (folder / "ppo_best_1962_six_hyperspace.pt").read_bytes() == jumping
    assert (folder / "ppo_best.pt").read_bytes() == default
    # A later preset run plays the preset's best, never the default game's.
    trainer("preset-again", peer)
    assert (folder / "ppo_best.pt").read_bytes() == default
    assert "stays run preset's model" in said[-1] or "is now this run's best.pt" in said[-1]
    # The old layout: ppo_best.pt holding the preset's network.
    (folder / "ppo_best.pt").write_bytes(preset_first)
    trainer("default-again", GameConfig())
    assert (folder / "ppo_best.pt").read_bytes() == preset_first
    assert said[-1].startswith(f"{folder / 'ppo_best.pt'} holds a network of another game")
