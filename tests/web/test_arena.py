"""The arena's routes in the browser app over real HTTP on 127.0.0.1: the leaderboard, and
submissions refused in one line (too large, a file of another kind, a bad or taken name, a
secret in the file, too many an hour) or queued, played against the house pilots, rated, and
still there after a restart."""

import json
import time
from urllib.parse import urlencode

import pytest

from tests.helpers import house_as_if_played, http_request, key_pieces

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

pytestmark = pytest.mark.slow

KEY = "AIzaSyD3x4mpl3K3yN0tR34l-abcdefghijklmno"


def test_the_routes_answer_and_refuse_before_anything_is_queued(tmp_path):
    from spacewar_ai.rating.arena import HOUSE, PAIRING_GAMES
    from spacewar_ai.web.app import BackgroundServer
    from spacewar_ai.web.guard import Limits

    house_as_if_played(tmp_path)  # the house's pairings need not play here
    srv = BackgroundServer(tmp_path, limits=Limits(submission_bytes=2000))
    try:
        status, body = http_request(srv, "GET", "/api/arena")
        board = json.loads(body)
        assert status == 200 and board["games_per_pairing"] == PAIRING_GAMES
        assert board["limits"]["submission_bytes"] == 2000
        assert {p["name"] for p in board["players"]} == set(HOUSE)
        for name, filename, data, code, says in (
                ("big", "big.py", b"x" * 5000, 413, "submission_bytes"),
                ("text", "notes.txt", AIM.encode(), 400, "a strategy file (.py) or an ONNX"),
                ("", "aim.py", AIM.encode(), 400, "1-40 letters"),
                ("empty", "aim.py", b"", 400, "the file is empty"),
                ("imports", "aim.py", b"import os\n", 400, "an import other than")):
            status, reply = _submit(srv, name, filename, data)
            assert status == code and says in reply["error"], (name, reply)
            assert "\n" not in reply["error"] and str(tmp_path) not in reply["error"]
        assert http_request(srv, "GET", "/api/arena/submit")[0] == 405
        assert {p["name"] for p in json.loads(http_request(srv, "GET", "/api/arena")[1])[
            "players"]} == set(HOUSE)  # nothing refused was queued
    finally:
        srv.stop()


AIM = '''import math


def strategy(obs):
    if obs[34] > 0.5 and abs(obs[12]) < 0.2:
        return 4
    return 1 if obs[12] > 0 else 2
'''


def _submit(server, name, filename, data: bytes):

    status, body = http_request(server, "POST", "/api/arena/submit?" + urlencode(
        {"name": name, "file": filename}), data)
    return status, json.loads(body)


def test_an_arena_submission_is_rated_and_survives_a_restart(tmp_path):
    from spacewar_ai.rating.arena import HOUSE, PAIRING_GAMES
    from spacewar_ai.web.app import BackgroundServer
    from spacewar_ai.web.guard import Limits

    house_as_if_played(tmp_path)
    srv = BackgroundServer(tmp_path, limits=Limits(submissions_per_hour=1,
                                                   pairings_per_entrant=2))
    try:
        status, reply = _submit(srv, "leaker", "x.py", f"def strategy(obs):\n    return {KEY}\n"
                                .encode())
        assert status == 400 and not any(p in json.dumps(reply) for p in key_pieces(KEY))
        assert _submit(srv, "random", "aim2.py", AIM.encode()) == (
            400, {"error": "name 'random' is taken: choose another"})
        assert _submit(srv, "bad kind", "aim.txt", AIM.encode())[0] == 400
        status, reply = _submit(srv, "aimer", "aim.py", AIM.encode())
        # The uploader is told the queue ahead: its own two pairings (the house's are done;
        # nothing timed yet, so no estimate of the wait).
        assert status == 200 and reply["pairings_ahead"] == 2, reply
        assert reply["expected_wait_seconds"] is None
        status, reply = _submit(srv, "third", "aim3.py", AIM.encode())
        assert status == 429 and "submissions_per_hour=1" in reply["error"]
        # Played its two pairings, then rated with an interval.
        deadline = time.monotonic() + 900
        while True:
            board = json.loads(http_request(srv, "GET", "/api/arena")[1])
            mine = next(p for p in board["players"] if p["name"] == "aimer")
            if mine["games"] >= PAIRING_GAMES * 2 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert mine["games"] == PAIRING_GAMES * 2 and mine["pairings"] == 2, board
        # Pairings were timed: the wait is an estimate now, zero once the queue is empty.
        while True:
            board = json.loads(http_request(srv, "GET", "/api/arena")[1])
            if board["pairings_left"] == 0 or time.monotonic() > deadline:
                break
            assert board["expected_wait_seconds"] > 0, board
            time.sleep(1)
        assert board["pairings_left"] == 0 and board["expected_wait_seconds"] == 0.0, board
        assert mine["rating"] is not None and mine["ci95"] > 0 and mine["replays"]
        assert http_request(srv, "GET", "/api/replay?path=" + mine["replays"][0])[0] == 200
    finally:
        srv.stop()
    # The same folder served again: the same players and results, nothing played twice.
    again = BackgroundServer(tmp_path)
    try:
        board2 = json.loads(http_request(again, "GET", "/api/arena")[1])
        assert [(p["name"], p["games"], p["rating"]) for p in board2["players"]] == \
            [(p["name"], p["games"], p["rating"]) for p in board["players"]]
    finally:
        again.stop()
    # The CLI reads the same players.
    from spacewar_ai.rating.arena import Arena

    specs = Arena(tmp_path / "runs" / "arena").player_specs()
    assert any(s.startswith("strategy:") and s.endswith(".py") for s in specs)
    assert set(HOUSE) <= set(specs)


def _submit_as(server, name, address):
    status, body = http_request(server, "POST", "/api/arena/submit?" + urlencode(
        {"name": name, "file": f"{name}.py"}), AIM.encode(),
        headers={"X-Forwarded-For": address})
    return status, json.loads(body)


def test_a_forwarded_address_is_believed_only_from_a_named_proxy(tmp_path):
    """A client that writes X-Forwarded-For itself is still its own address (one submission an
    hour here, whatever addresses it claims); behind a proxy the operator names, the header
    names the visitor, and each visitor has its own allowance."""
    from spacewar_ai.web.app import BackgroundServer
    from spacewar_ai.web.guard import Limits

    house_as_if_played(tmp_path / "direct")  # the house's pairings need not play here
    direct = BackgroundServer(tmp_path / "direct", limits=Limits(submissions_per_hour=1))
    try:
        assert _submit_as(direct, "one", "203.0.113.1")[0] == 200
        status, reply = _submit_as(direct, "two", "203.0.113.2")
        assert status == 429 and "submissions_per_hour=1" in reply["error"]
    finally:
        direct.stop()
    house_as_if_played(tmp_path / "proxied")  # the house's pairings need not play here
    proxied = BackgroundServer(tmp_path / "proxied", limits=Limits(submissions_per_hour=1),
                               proxies=["127.0.0.1"])
    try:
        assert _submit_as(proxied, "one", "203.0.113.1")[0] == 200
        assert _submit_as(proxied, "two", "203.0.113.2")[0] == 200
        status, reply = _submit_as(proxied, "three", "203.0.113.1")
        assert status == 429 and "submissions_per_hour=1" in reply["error"]
    finally:
        proxied.stop()


def test_a_burst_over_the_limit_is_refused_before_any_model_is_checked(tmp_path):
    """An address over its allowance is refused before its upload is read: after the one
    submission allowed, a burst of models is never checked (no check reaches the quick lane's
    checker), and each refusal is one line (429)."""
    from spacewar_ai.web.app import BackgroundServer
    from spacewar_ai.web.guard import Limits

    house_as_if_played(tmp_path)  # the house's pairings need not play here
    srv = BackgroundServer(tmp_path, limits=Limits(submissions_per_hour=1))
    try:
        assert _submit(srv, "aimer", "aim.py", AIM.encode())[0] == 200
        lane, asked = srv.app.state.checks.lanes["quick"], []
        ask = lane.ask
        lane.ask = lambda *args: asked.append(args) or ask(*args)  # runs on the server's loop
        replies = [_submit(srv, f"model{k}", "m.onnx", b"not a model at all" * 10_000)
                   for k in range(6)]
    finally:
        srv.stop()
    assert all(status == 429 and "submissions_per_hour=1" in reply["error"]
               for status, reply in replies), replies
    assert asked == []
