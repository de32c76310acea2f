"""The arena's database and pairings without the server: an ONNX model and a strategy file
submitted, played in a process of their own, rated; refusals named."""

from __future__ import annotations

import pytest

from spacewar_ai.rating.arena import HOUSE, PAIRING_GAMES, Arena, run_pairing


def test_an_onnx_model_is_played_and_a_broken_one_refused(tmp_path):
    pytest.importorskip("onnxruntime")
    from spacewar_ai.pilots.onnx_export import export_onnx

    export_onnx("pretrained", tmp_path / "net.onnx")
    arena = Arena(tmp_path / "arena")
    arena.submit("exported", "net.onnx", (tmp_path / "net.onnx").read_bytes(), "1.1.1.1", 5)
    arena.submit("broken", "junk.onnx", b"not a model at all", "1.1.1.1", 5)
    players = {p["name"]: p for p in arena.players()}
    hard = players["heuristic:hard"]
    outcome = run_pairing(arena.folder, hard, players["exported"], 600)
    assert outcome[0] == "ok" and outcome[1]["games"] == PAIRING_GAMES
    arena.record(hard, players["exported"], outcome[1])
    outcome = run_pairing(arena.folder, hard, players["broken"], 600)
    assert outcome[0] == "refused" and outcome[1] == players["broken"]["id"]
    assert "not a readable ONNX model" in outcome[2]
    arena.refuse(players["broken"], outcome[2])
    board = {row["name"]: row for row in arena.leaderboard()}
    assert board["exported"]["games"] == PAIRING_GAMES and board["exported"]["rating"] is not None
    assert board["broken"]["status"] == "refused"
    assert players["broken"]["spec"] not in arena.player_specs()


def test_pairings_are_each_played_once_in_order(tmp_path):
    arena = Arena(tmp_path / "arena")
    arena.submit("spinner", "s.py", b"def strategy(obs):\n    return 1\n", "2.2.2.2", 5)
    seen = set()
    while (pair := arena.next_pairing()) is not None:
        a, b = pair
        assert (a["id"], b["id"]) not in seen and a["id"] < b["id"]
        seen.add((a["id"], b["id"]))
        arena.record(a, b, {"games": 2, "wins_a": 1, "wins_b": 1, "draws": 0, "replays": []})
    n = len(HOUSE) + 1
    assert len(seen) == n * (n - 1) // 2


@pytest.mark.parametrize("name, file, data, says", [
    ("", "a.py", b"def strategy(obs):\n    return 1\n", "1-40 letters"),
    ("ok", "a.exe", b"MZ", "submit a strategy file"),
    ("ok", "a.py", b"", "empty"),
    ("ok", "a.py", b"\xff\xfe", "not UTF-8"),
    ("ok", "a.py", b"import os\ndef strategy(obs):\n    return 1\n", "an import other than"),
])
def test_a_refused_submission_is_one_line(tmp_path, name, file, data, says):
    with pytest.raises(ValueError, match=says):
        Arena(tmp_path / "arena").submit(name, file, data, "3.3.3.3", 5)
