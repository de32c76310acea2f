"""What an ONNX model must be before it flies (pilots/onnx_check.py), and how an ONNX pilot is
confined: each hostile model refused in one line naming its file and problem; a model that keeps
the rules but answers actions out of range forfeits those games; a slow one has its decisions
stopped at the deadline, then gives up."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from spacewar_ai.pilots.build import make_pilot  # noqa: E402
from spacewar_ai.pilots.onnx_check import check_onnx_file, onnx_problems  # noqa: E402
from tests import hostile_onnx as hostile  # noqa: E402


def _secret(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(6, dtype=np.float32).tobytes())
    return secret


@pytest.mark.parametrize("build, says", [
    (lambda d, s: hostile.external_data(d / "m.onnx", "../secret.bin"), "external data"),
    (lambda d, s: hostile.external_data(d / "m.onnx", str(s)), "external data"),
    (lambda d, s: hostile.symlinked(d / "m.onnx", str(s)), "external data"),
    (lambda d, s: hostile.custom_op(d / "m.onnx"), "operator domain 'com.evil'"),
    (lambda d, s: hostile.huge_tensor(d / "m.onnx"), "declares 1,000,000,000 elements"),
    (lambda d, s: hostile.constant_of_shape(d / "m.onnx"), "'ConstantOfShape' is not one"),
    (lambda d, s: hostile.old_opset(d / "m.onnx"), "opset 12 is outside"),
], ids=["relative", "absolute", "symlink", "custom-op", "huge-tensor", "constant-of-shape",
        "opset"])
def test_a_model_that_breaks_a_rule_is_refused_in_one_line(tmp_path, build, says):
    (tmp_path / "up").mkdir()
    path = build(tmp_path / "up", _secret(tmp_path))
    with pytest.raises(ValueError) as caught:
        check_onnx_file(path, "visitor.onnx")
    message = str(caught.value)
    assert message.startswith("visitor.onnx: ") and says in message and "\n" not in message
    assert str(tmp_path) not in message


def test_junk_and_models_that_keep_the_rules(tmp_path):
    assert onnx_problems(b"junk") == ["not an ONNX model (it does not parse)"]
    assert onnx_problems(hostile.plain(tmp_path / "plain.onnx").read_bytes()) == []
    # These keep every rule a file can be checked for; confinement deals with them at run time.
    for build in (hostile.memory_bomb, hostile.slow, hostile.fails):
        assert onnx_problems(build(tmp_path / "m.onnx").read_bytes()) == []
    with pytest.raises(ValueError, match="^gone.onnx: no such ONNX file$"):
        check_onnx_file(tmp_path / "nothing.onnx", "gone.onnx")


def test_on_the_command_line_a_problem_is_a_warning(tmp_path, capsys):
    pilot = make_pilot(f"onnx:{hostile.old_opset(tmp_path / 'old.onnx')}")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: onnx:") and "opset 12" in err[0]
    obs = np.ones((2, 36), np.float32)
    assert list(pilot.act(obs)) == [0, 0]


@pytest.mark.parametrize("value", [123456, -1, 6])
def test_an_action_out_of_range_forfeits_its_game_and_is_recorded_as_drift(tmp_path, value):
    pilot = make_pilot(f"onnx:{hostile.actions(tmp_path / 'a.onnx', value)}")
    pilot.reset(np.ones(3, dtype=bool))
    obs = np.ones((3, 36), np.float32)
    active = np.array([True, True, False])
    assert list(pilot.act(obs, active)) == [0, 0, 0]
    assert pilot.forfeits() == {0: f"answered action {value}, not one of 0..5",
                                1: f"answered action {value}, not one of 0..5"}
    pilot.act(obs, np.ones(3, dtype=bool))  # the forfeited games are not asked again
    assert list(pilot.forfeits()) == [2]
    pilot.reset(np.array([True, False, False]))  # a new game in row 0 is asked again
    pilot.act(obs, np.ones(3, dtype=bool))
    assert list(pilot.forfeits()) == [0]


def test_a_slow_model_has_its_decisions_stopped_then_gives_up(tmp_path):
    pilot = make_pilot(f"onnx:{hostile.slow(tmp_path / 'slow.onnx')}")
    pilot.confine(0.05)
    obs = np.ones((2, 36), np.float32)
    obs[:, 30:] = 1.0
    for _ in range(pilot.MAX_SLOW_DECISIONS - 1):  # each decision forfeited: both ships drift
        assert list(pilot.act(obs)) == [0, 0] and pilot.forfeits() == {}
    assert pilot.gave_up is None
    pilot.act(obs)
    assert pilot.gave_up == "a decision over the limit of 50 ms"
    assert pilot.forfeits() == {0: pilot.gave_up, 1: pilot.gave_up}
    # The same model unconfined answers (slowly): the deadline is what stopped it.
    free = make_pilot(f"onnx:{tmp_path / 'slow.onnx'}")
    assert list(free.act(obs)) == [0, 0] and free.gave_up is None and free.forfeits() == {}


def test_a_model_that_fails_while_deciding_gives_up(tmp_path):
    pilot = make_pilot(f"onnx:{hostile.fails(tmp_path / 'fails.onnx')}")
    pilot.act(np.ones((2, 36), np.float32))
    assert pilot.gave_up.startswith("the model failed while deciding (")
    assert set(pilot.forfeits()) == {0, 1}
