"""train(cfg) by table: every algorithm has its entry, and what an algorithm cannot take (a
resume, a starting model, champions, or no adapter for GRPO) is refused in one line before any
work (no folder made, no dataset read, no model loaded)."""

import pytest

from spacewar_ai.config import ALGORITHMS as CONFIG_ALGORITHMS
from spacewar_ai.config import RunConfig, TrainConfig
from spacewar_ai.training import ALGORITHMS, train


def test_every_algorithm_the_config_takes_has_an_entry():
    assert set(ALGORITHMS) == set(CONFIG_ALGORITHMS)


@pytest.mark.parametrize("algorithm, kwargs, says", [
    ("sft", {"resume": "x/latest.pt"}, "--algorithm sft trains a new adapter from a dataset: "
                                       "--resume does not apply"),
    ("bc", {"start_from": "pretrained", "champion": True},
     "--algorithm bc learns from a dataset alone: --init-from and --champion-train do not apply"),
    ("cql", {"resume": "l.pt", "start_from": "m.pt"}, "--resume and --init-from do not apply"),
    ("grpo", {}, "--algorithm grpo trains an LM adapter further by playing: name the adapter it "
                 "starts from with --init-from ADAPTER"),
    ("grpo", {"resume": "l.pt", "start_from": "sft"}, "--resume does not apply"),
])
def test_what_an_algorithm_cannot_take_is_refused_before_any_work(tmp_path, algorithm, kwargs,
                                                                   says):
    dataset = {"dataset": "never-read"} if algorithm in ("bc", "cql", "sft") else {}
    cfg = RunConfig(train=TrainConfig(algorithm=algorithm, checkpoint_dir=str(tmp_path / "ck"),
                                      log_dir=str(tmp_path / "runs"), **dataset))
    with pytest.raises(ValueError) as exc:
        train(cfg, **kwargs)
    assert says in str(exc.value), str(exc.value)
    assert not (tmp_path / "ck").exists() and not (tmp_path / "runs").exists()
