"""The spec language: every kind of spec builds its kind of pilot, the files a spec names are
found and mapped (what Ray ships and the browser confines), and a bad spec is one line that
names it and what to use instead."""

import os

import numpy as np
import pytest

from spacewar_ai.agents.checkpoints import CheckpointError, load_checkpoint
from spacewar_ai.config import GameConfig
from spacewar_ai.game.pilot import ForeignPilot
from spacewar_ai.pilots.build import (
    PRETRAINED_PATH,
    AgentPilot,
    CallablePilot,
    absolute_spec,
    file_identity,
    make_pilot,
    map_spec_files,
    path_label,
    spec_files,
    spec_path,
)
from spacewar_ai.pilots.sandbox import StrategyPilot
from spacewar_ai.pilots.scripted import DelayedPilot, HeuristicPilot, IdlePilot, RandomPilot
from spacewar_ai.pilots.search import SearchPilot
from tests.commands import cli
from tests.helpers import ROOT

STRATEGY = ROOT / "examples" / "strategies" / "aim_and_fire.py"


def test_each_kind_of_spec_builds_its_kind_of_pilot():
    kinds = {"idle": IdlePilot, "random": RandomPilot, "heuristic:medium": HeuristicPilot,
             "heuristic": HeuristicPilot, "heuristic:easy": DelayedPilot,
             "pretrained": AgentPilot, f"ppo:{PRETRAINED_PATH}": AgentPilot,
             str(PRETRAINED_PATH): AgentPilot, "search:pretrained": SearchPilot,
             f"strategy:{STRATEGY}": StrategyPilot}
    for spec, kind in kinds.items():
        pilot = make_pilot(spec, GameConfig())
        try:
            assert isinstance(pilot, kind), (spec, pilot)
        finally:
            pilot.close()
    assert make_pilot("pretrained").name == "pretrained"
    assert make_pilot("pretrained").identity == file_identity(PRETRAINED_PATH)


def test_functions_and_objects_of_ones_own_fly_too():
    one_at_a_time = make_pilot(lambda row: 4)
    assert isinstance(one_at_a_time, CallablePilot)
    assert list(one_at_a_time.act(np.zeros((3, 36), dtype=np.float32))) == [4, 4, 4]

    class Mine:
        def act(self, obs):
            return np.zeros(len(obs), dtype=np.int64)

        def reset(self, mask=None, seeds=None):
            return None

    assert isinstance(make_pilot(Mine()), ForeignPilot)


def test_the_files_a_spec_names(tmp_path):
    assert spec_path("pretrained") == PRETRAINED_PATH
    assert spec_path("ppo:runs/x/best.pt").as_posix() == "runs/x/best.pt"
    assert spec_path("onnx:m.onnx").name == "m.onnx" and spec_path("heuristic:hard") is None
    assert spec_path("search:pretrained") is None and spec_path("lm:sft") is None
    planner = "search:ppo:a/best.pt+b/model.pt"
    assert [p.as_posix() for p in spec_files(planner)] == ["a/best.pt", "b/model.pt"]
    assert map_spec_files(planner, lambda p: tmp_path / p.name) == \
        f"search:ppo:{tmp_path / 'best.pt'}+{tmp_path / 'model.pt'}"
    assert spec_files("pretrained") == []  # installed wherever the package is: never shipped
    assert absolute_spec("strategy:x.py") == f"strategy:{(tmp_path.cwd() / 'x.py').resolve()}"
    assert path_label(tmp_path / "run-7" / "best.pt") == "run-7/best.pt"


@pytest.mark.parametrize("spec, says", [
    ("grandmaster", "not a pilot spec and no such checkpoint file"),
    ("heuristic:insane", "the heuristic levels are heuristic:easy, heuristic:medium and"),
    ("strategy:nowhere.py", "nowhere.py"),
    ("search:pretrained+lm:sft", "is a language model, which answers a few games at a time"),
    ("search:search:pretrained", "a planner cannot plan over another planner"),
    ("search:heuristic:hard@samples=many", "samples='many' is invalid"),
    ("heuristic:medium@aim=1.5", "aim='1.5' is invalid: must be a number from 0 to 1"),
    ("heuristic:easy@react=-1", "react='-1' is invalid: must be a number from 0 to 25"),
    ("heuristic:hard@samples=4", "unknown setting 'samples' after @; the settings are aim and "
                                 "react"),
    ("heuristic:hard@aim=0.5@aim=0.2", "aim is set twice"),
    ("  ", "invalid"),
])
def test_a_bad_spec_is_one_line_naming_it(spec, says):
    with pytest.raises(ValueError) as exc:
        make_pilot(spec)
    message = str(exc.value)
    assert says in message and "\n" not in message, message


def test_a_folder_is_told_which_files_there_are_to_give(tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.raises(ValueError, match="this folder holds none"):
        make_pilot(str(tmp_path / "run"))
    (tmp_path / "run" / "latest.pt").write_bytes(b"x")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "best.pt").write_bytes(b"x")
    with pytest.raises(ValueError) as told:
        make_pilot(str(tmp_path / "run"))
    assert str(tmp_path / "run" / "latest.pt") in str(told.value)
    assert "best.pt" not in str(told.value)  # only files that exist are suggested
    with pytest.raises(ValueError, match=str(tmp_path / "other" / "best.pt")):
        make_pilot(str(tmp_path))


def test_a_checkpoint_that_is_not_there_names_the_runs_that_are(tmp_path):
    for run in ("ppo-s0", "dqn-s1"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "best.pt").write_bytes(b"")
    with pytest.raises(ValueError) as exc:
        make_pilot(str(tmp_path / "ppo_best.pt"))
    message = str(exc.value)
    assert "no such checkpoint file; the runs in" in message and "\n" not in message
    assert str(tmp_path / "ppo-s0" / "best.pt") in message
    assert str(tmp_path / "dqn-s1" / "best.pt") in message


def test_the_shipped_adapters_are_named_from_one_list_and_a_near_miss_is_suggested(capsys):
    """Every shipped adapter appears wherever the specs are listed (errors, --help), from the
    package's own folder; a mistyped spec is answered with the one meant."""
    from spacewar_ai.cli import build_parser
    from spacewar_ai.lm.models import shipped_adapters
    from spacewar_ai.pilots.build import SPEC_HELP

    names = shipped_adapters()
    assert {"sft", "dagger", "grpo"} <= set(names)
    build_parser().print_help()
    shown = " ".join(capsys.readouterr().out.split())
    for name in names:
        assert f"lm:{name}" in SPEC_HELP and f"lm:{name}" in shown
    with pytest.raises(ValueError, match="did you mean pretrained\\?"):
        make_pilot("pretrianed")
    with pytest.raises(ValueError, match="did you mean heuristic:hard\\?"):
        make_pilot("heuristic:hrad")
    pytest.importorskip("transformers")
    with pytest.raises(ValueError, match="did you mean lm:dagger\\?"):
        make_pilot("lm:dagr")


def test_a_huge_file_as_any_kind_of_pilot_is_one_line(tmp_path):
    """A 20 GB file (sparse: it takes no disk) as a network, an ONNX or SB3 model, the peer's
    agent or a strategy file is refused in one line before anything reads it, and so is it as
    a checkpoint to load."""
    huge = tmp_path / "huge.bin"
    with huge.open("wb") as f:
        f.truncate(20 * 2**30)
    for spec in ("ppo:{}.pt", "onnx:{}.onnx", "sb3:{}.zip", "rllib_sw:{}.pkl",
                 "strategy:{}.py"):
        path = tmp_path / spec.split(":")[1].format("huge")
        os.link(huge, path)
        out = cli("--evaluate", "--checkpoint", "pretrained", "--opponent",
                  spec.split(":")[0] + ":" + str(path), "--eval-episodes", "2", cwd=tmp_path)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert str(path) in out.stderr and "Traceback" not in out.stderr
    with pytest.raises(CheckpointError, match="20.0 GB, more than the 2.0 GB"):
        load_checkpoint(tmp_path / "huge.pt")
