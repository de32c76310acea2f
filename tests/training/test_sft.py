"""Supervised fine-tuning of the LM pilot (--algorithm sft) on a tiny model built offline."""

import pytest

from tests.helpers import require_lm

require_lm()


def test_sft_trains_an_adapter_that_agrees_more_with_its_teacher(tiny, tmp_path, monkeypatch):
    """--algorithm sft on a recorded dataset, one pilot's side: the loss falls, agreement on
    held-out decisions rises, and the adapter saved under models/adapters/ plays as lm:RUN."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from spacewar_ai.config import RunConfig, SFTConfig, TrainConfig
    from spacewar_ai.lm.models import adapter_meta
    from spacewar_ai.pilots.build import make_pilot
    from spacewar_ai.training import train
    from spacewar_ai.training.datasets import generate
    from spacewar_ai.training.lm.run import agreement, split

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    generate([("heuristic:hard", "heuristic:medium")], 32, "teach", seed=1, quiet=True)
    # device "auto": on a machine with CUDA this is the test of training there.
    cfg = RunConfig(train=TrainConfig(
        algorithm="sft", dataset="teach", dataset_pilot="heuristic:hard", run_name="sft-tiny",
        log_dir=str(tmp_path / "runs"), seed=2, device="auto"),
        sft=SFTConfig(base_model=str(tiny), examples=1000, held_out=200, epochs=3, batch_size=32,
                      learning_rate=3e-3))
    out = train(cfg, quiet=True)
    assert out["agreement"] > out["agreement_before"] + 0.1, out

    events = EventAccumulator(str(tmp_path / "runs" / "sft-tiny"))
    events.Reload()
    losses = [e.value for e in events.Scalars("lm/loss")]
    assert len(losses) >= 3 and losses[-1] < losses[0]
    assert [round(e.value, 6) for e in events.Scalars("lm/agreement")][-1] == round(
        out["agreement"], 6)

    folder = tmp_path / "models" / "adapters" / "sft-tiny"
    meta = adapter_meta(folder)
    assert meta["base_model"] == str(tiny) and meta["dataset_pilot"] == "heuristic:hard"
    assert meta["view"] == SFTConfig().view == 2  # trained on the view that says the aim
    pilot = make_pilot("lm:sft-tiny")  # the run's name alone: on the base it names
    assert pilot.coder.view == 2  # and shown the view it was trained with
    from spacewar_ai.training.datasets import arrays

    obs, actions = arrays("teach", "heuristic:hard")
    _, _, held_obs, held_actions = split(obs, actions, 1000, 200, 2)
    played = agreement(pilot.model, pilot.coder, held_obs, held_actions)
    assert played == pytest.approx(out["agreement"], abs=0.01)  # merged, it plays as trained


def test_sft_refuses_a_pilot_the_dataset_does_not_hold(tiny, tmp_path, monkeypatch, capsys):
    from spacewar_ai.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    from spacewar_ai.training.datasets import generate

    generate([("heuristic:hard", "heuristic:easy")], 2, "teach", seed=1, quiet=True)
    with pytest.raises(SystemExit) as exc:
        main(["--algorithm", "sft", "--dataset", "teach", "--dataset-pilot", "random",
              "--base-model", str(tiny)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "random" in err[0], err
    assert not (tmp_path / "models").exists()


def test_sft_stops_at_minutes_and_saves_what_it_learned(tiny, tmp_path, monkeypatch):
    """--minutes: a limit no step fits ends SFT after its first step; the adapter is still
    measured and saved, saying how far it got."""
    from spacewar_ai.config import RunConfig, SFTConfig, TrainConfig
    from spacewar_ai.lm.models import adapter_meta
    from spacewar_ai.training import train
    from spacewar_ai.training.datasets import generate

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    generate([("heuristic:hard", "heuristic:easy")], 4, "teach", seed=1, quiet=True)
    cfg = RunConfig(train=TrainConfig(
        algorithm="sft", dataset="teach", dataset_pilot="heuristic:hard", run_name="timed",
        log_dir=str(tmp_path / "runs"), max_minutes=1e-9),
        sft=SFTConfig(base_model=str(tiny), examples=200, held_out=20, epochs=3, batch_size=32))
    out = train(cfg, quiet=True)
    meta = adapter_meta(tmp_path / "models" / "adapters" / "timed")
    assert meta["steps"] == 1 and meta["complete"] and meta["agreement"] == out["agreement"]


def test_an_imitation_step_learns_soft_targets_of_a_hand_made_group(tiny, tmp_path):
    """The soft targets of expert iteration (a planner's improved policy): at a few states,
    70% on one action and 30% on another; steps of imitation_step on them bring the LM's answer
    toward that split, where hard labels of the first action move it toward that one alone."""
    import numpy as np
    import torch

    from spacewar_ai.config import GameConfig
    from spacewar_ai.game.engine import GameBatch
    from spacewar_ai.lm.models import add_lora, load_base
    from spacewar_ai.lm.pilot import PromptCoder, answer_logits
    from spacewar_ai.training.lm.run import imitation_step

    torch.manual_seed(0)
    games = GameBatch(4, GameConfig())
    games.reset(seeds=np.arange(4))
    obs = games.observe()[:, 0]
    targets = np.zeros((4, 6), dtype=np.float32)
    targets[:, 4], targets[:, 2] = 0.7, 0.3

    def trained(given):
        base, tokenizer = load_base(str(tiny))
        model = add_lora(base, 8, 0)
        coder = PromptCoder(tokenizer, 6, 1)
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                      lr=3e-2)
        for _ in range(100):
            imitation_step(model, optimizer, coder, obs, torch.as_tensor(given), "cpu", False)
        return torch.softmax(answer_logits(model, coder, obs).float(), -1).numpy()

    start = trained(np.zeros((4, 6), dtype=np.float32))  # no weight anywhere: no gradient
    soft = trained(targets)
    hard = trained(np.full(4, 4))
    # A model this tiny moves its answer only so far, but the way the targets say: toward
    # both weighted actions with soft targets, toward the one label with hard ones.
    others = [0, 1, 3, 5]
    assert (soft[:, 4] > soft[:, 2]).all() and (soft[:, 2] > soft[:, others].max(1)).all()
    assert (soft[:, 2] > start[:, 2]).all() and (soft[:, 2] > hard[:, 2]).all()
    assert (hard[:, 4] > soft[:, 4]).all()
