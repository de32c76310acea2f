"""Uploads a hostile visitor might send to the arena, over real HTTP on 127.0.0.1: every model
that breaks a rule is refused in one line before it is queued; those that keep the rules and
misbehave when they run (a slow model, a memory bomb, actions out of range, a strategy that
crashes, one that burns its CPU inside a builtin) are confined: refused or forfeited, while
honest submissions are rated beside them and the server answers pages throughout. No answer
names a path of the server."""

import json
import time
from urllib.parse import urlencode

import pytest

from tests.helpers import house_as_if_played, http_request

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from tests import hostile_onnx as hostile  # noqa: E402

pytestmark = pytest.mark.slow

AIM = (b"def strategy(obs):\n    if obs[34] > 0.5 and abs(obs[12]) < 0.2:\n        return 4\n"
       b"    return 1 if obs[12] > 0 else 2\n")
CRASH = b"def strategy(obs):\n    return [1, 2][5]\n"
# Seconds inside one builtin call, which the operation count cannot see: the child's CPU limit.
BURN = b"import math\n\n\ndef strategy(obs):\n    return math.factorial(10 ** 7) % 6\n"


def _submit(server, name, filename, data: bytes):
    status, body = http_request(server, "POST", "/api/arena/submit?" + urlencode(
        {"name": name, "file": filename}), data)
    return status, json.loads(body)


def test_hostile_uploads_are_refused_or_confined_and_the_arena_goes_on(tmp_path):
    from spacewar_ai.rating.arena import HOUSE, PAIRING_GAMES
    from spacewar_ai.web.app import BackgroundServer
    from spacewar_ai.web.guard import Limits

    made = tmp_path / "made"
    made.mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(bytes(24))
    refused_at_once = {
        "relative": hostile.external_data(made / "r.onnx", "../secret.bin"),
        "absolute": hostile.external_data(made / "a.onnx", str(secret)),
        "symlinked": hostile.symlinked(made / "s.onnx", str(secret)),
        "custom-op": hostile.custom_op(made / "c.onnx"),
        "huge": hostile.huge_tensor(made / "h.onnx"),
        "shape-bomb": hostile.constant_of_shape(made / "b.onnx"),
    }
    # Two pairings an entrant: enough for every hostile one to play, and for the honest one to
    # meet two house pilots.
    house_as_if_played(tmp_path / "project")
    srv = BackgroundServer(tmp_path / "project", limits=Limits(
        # A deadline a loaded host cannot make a memory bomb miss before it fails by memory,
        # which the slow model's seconds a decision still pass.
        submissions_per_hour=50, attempts_per_hour=50, decision_ms=1000, pairing_memory_mb=2048,
        pairings_per_entrant=2))
    try:
        for name, path in refused_at_once.items():
            status, reply = _submit(srv, name, "model.onnx", path.read_bytes())
            assert status == 400 and reply["error"].startswith(f"{name}.onnx: "), reply
            assert "\n" not in reply["error"] and str(tmp_path) not in reply["error"]
        board = json.loads(http_request(srv, "GET", "/api/arena")[1])
        assert {p["name"] for p in board["players"]} == set(HOUSE)  # none of them queued

        uploads = {"slow": ("m.onnx", hostile.slow(made / "slow.onnx").read_bytes()),
                   "bomb": ("m.onnx", hostile.memory_bomb(made / "bomb.onnx").read_bytes()),
                   "wild": ("m.onnx", hostile.actions(made / "wild.onnx", 123456).read_bytes()),
                   "crash": ("c.py", CRASH), "burn": ("b.py", BURN), "aimer": ("a.py", AIM)}
        for name, (filename, data) in uploads.items():
            assert _submit(srv, name, filename, data)[0] == 200, name
        answered = 0
        deadline = time.monotonic() + 1500  # a safety net for a slow host
        while time.monotonic() < deadline:
            # The pages answer while the pairings play (the figures: scripts/web_load.py).
            status, _ = http_request(srv, "GET", "/api/pilots", timeout=30)
            assert status == 200
            answered += 1
            board = json.loads(http_request(srv, "GET", "/api/arena")[1])
            if board["pairings_left"] == 0:
                break
            time.sleep(0.5)
        players = {p["name"]: p for p in board["players"]}
        assert board["pairings_left"] == 0 and answered > 1, board
        assert players["slow"]["status"] == "refused"
        # The runtime stops the decision at the limit; on a loaded host it may run past the
        # grace as well, and its process is ended: refused for the limit either way.
        assert players["slow"]["note"] in (
            "slow: a decision over the limit of 1000 ms",
            "slow: a decision ran past the limit of 1000 ms and was stopped at 2000 ms")
        assert players["bomb"]["status"] == "refused"
        assert players["bomb"]["note"].startswith("bomb: the model failed while deciding (")
        # Forfeits, not refusals: every game of theirs is lost, and each saved game loads.
        for name in ("wild", "crash", "burn", "aimer"):
            assert players[name]["status"] == "rated", players[name]
            assert players[name]["games"] >= PAIRING_GAMES * 2, (name, players[name])
        # A forfeiter wins none of its games, whoever it meets (scores are not compared:
        # entrants meet different opponents); the honest one wins some. A forfeited game is not
        # a replay (it ends outside the rules); the saved games there are load.
        for name in ("wild", "crash", "burn"):
            assert players[name]["wins"] == 0, players[name]
        assert players["aimer"]["wins"] > 0, players["aimer"]
        for rel in [r for p in players.values() if p["kind"] != "house" for r in p["replays"]]:
            status, body = http_request(srv, "GET", "/api/replay?path=" + rel)
            assert status == 200, body
        shown = json.dumps(board)
        assert str(tmp_path) not in shown and "/runs/arena/submissions" not in shown
    finally:
        srv.stop()
