"""The browser app tried as an attacker would, over real HTTP and WebSockets on 127.0.0.1: other
origins and rebinding hosts refused, nothing of a file quoted back, bodies refused before they
are read, hostile JSON answered with 400, a hung pilot stalling only its own game, and limits
on games per client."""

from __future__ import annotations

import asyncio
import http.client
import json
import time

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
websockets = pytest.importorskip("websockets")

pytestmark = pytest.mark.slow

KEY = "AIzaSyD3x4mpl3K3yN0tR34l-abcdefghijklmno"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("guarded")
    (root / "google.key.txt").write_text(KEY + "\n")
    (root / "notes.py").write_text(KEY.replace("-", "_") + "\n")
    # A strategy that spends seconds inside one C call, where no timer can interrupt it.
    (root / "stuck.py").write_text("import math\n\ndef strategy(obs):\n"
                                   "    math.factorial(700000 + int(obs[0] * 0))\n    return 0\n")
    return root


@pytest.fixture(scope="module")
def server(project):
    from spacewar_ai.web.app import BackgroundServer
    from spacewar_ai.web.guard import Limits

    srv = BackgroundServer(project, limits=Limits(games_per_client=2, upload_bytes=100_000,
                                                  stall_seconds=30))
    yield srv
    srv.stop()


def _port(server) -> int:
    return int(server.url.rsplit(":", 1)[1])


def _request(server, method, path, body=b"", headers=None, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=timeout)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


async def _open(server, origin=None, host=None):
    headers = {}
    if origin:
        headers["Origin"] = origin
    if host:
        headers["Host"] = host
    return await websockets.connect(server.url.replace("http", "ws") + "/ws/live",
                                    additional_headers=headers, open_timeout=60)


async def _first_reply(server, message, origin=None):
    async with await _open(server, origin) as ws:
        await ws.send(json.dumps(message))
        return json.loads(await asyncio.wait_for(ws.recv(), 120))


def _pieces(secret: str, n: int = 8):
    return {secret[i:i + n] for i in range(len(secret) - n + 1)}


def test_a_page_of_another_origin_cannot_open_a_game(server):
    with pytest.raises(websockets.exceptions.InvalidStatus) as exc:
        asyncio.run(_first_reply(server, {"mode": "watch", "a": "idle", "b": "idle"},
                                 origin="https://evil.example"))
    assert exc.value.response.status_code == 403
    # Its own pages may, and so may a client that is not a browser page (no Origin).
    reply = asyncio.run(_first_reply(server, {"mode": "watch", "a": "idle", "b": "random"},
                                     origin=server.url))
    assert reply["type"] == "start", reply
    status, _ = _request(server, "POST", "/api/replay?name=x.json", b"{}",
                         {"Origin": "https://evil.example"})
    assert status == 403


def test_a_rebinding_host_is_refused(server):
    status, body = _request(server, "GET", "/api/pilots", headers={"Host": "evil.example"})
    assert status == 400 and b"not a name of this server" in body
    assert _request(server, "GET", "/api/pilots",
                    headers={"Host": f"localhost:{_port(server)}"})[0] == 200
    assert _request(server, "GET", "/api/pilots",
                    headers={"Host": f"[::1]:{_port(server)}"})[0] == 200
    with pytest.raises(websockets.exceptions.InvalidStatus):
        asyncio.run(_open(server, host="evil.example"))


@pytest.mark.parametrize("spec", ["strategy:google.key.txt", "google.key.txt",
                                  "strategy:notes.py", "search:google.key.txt"])
def test_a_key_file_named_as_a_pilot_leaks_nothing(server, spec):
    reply = asyncio.run(_first_reply(server, {"mode": "watch", "a": spec, "b": "idle"}))
    assert reply["type"] == "error"
    text = json.dumps(reply)
    leaked = [p for p in _pieces(KEY) | _pieces(KEY.replace("-", "_")) if p in text]
    assert not leaked, text
    assert "google.key.txt" in text or "notes.py" in text  # the file is named


def test_an_oversize_upload_is_refused_before_it_is_read(server):
    # A body announced at 500 MB but never sent: answered at once, without waiting for it.
    conn = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=60)
    conn.putrequest("POST", "/api/replay?name=big.json")
    conn.putheader("Content-Length", str(500 * 2**20))
    conn.putheader("Content-Type", "application/json")
    conn.endheaders()
    conn.send(b"{" * 1000)
    response = conn.getresponse()
    assert response.status == 413 and b"upload_bytes" in response.read()
    conn.close()
    # Sent in chunks with no length: refused once past the limit.
    conn = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=60)
    conn.request("POST", "/api/replay?name=big.json", body=iter([b" " * 50_000] * 4),
                 encode_chunked=True)
    response = conn.getresponse()
    assert response.status == 413
    conn.close()


def test_a_nan_replay_and_deep_json_get_400_naming_the_problem(server):
    replay = {"version": 1, "config": {}, "seed": 1, "players": ["a", "b"],
              "actions": ["0", "0"], "result": {"winner": float("nan")}, "final_state": ""}
    status, body = _request(server, "POST", "/api/replay?name=nan.json",
                            json.dumps(replay).encode())
    assert status == 400 and b"result.winner is NaN" in body
    status, body = _request(server, "POST", "/api/replay?name=deep.json",
                            b"[" * 40_000 + b"]" * 40_000)
    assert status == 400 and b"nested deeper" in body
    reply = asyncio.run(_first_reply(server, json.loads("[" * 10 + "]" * 10)))
    assert reply["type"] == "error"


def test_a_hung_pilot_stalls_only_its_own_game(server):
    """A strategy stuck in C code for seconds at each decision: its game's worker waits on it,
    while another game plays on and every page still answers."""
    async def scenario():
        stuck = await _open(server)
        await stuck.send(json.dumps({"mode": "watch", "a": "strategy:stuck.py", "b": "idle"}))
        assert json.loads(await asyncio.wait_for(stuck.recv(), 120))["type"] == "start"
        other = await _open(server)
        await other.send(json.dumps({"mode": "watch", "a": "heuristic:hard", "b": "random"}))
        assert json.loads(await asyncio.wait_for(other.recv(), 120))["type"] == "start"
        frames = 0
        began = time.monotonic()
        answered = []
        while frames < 50:
            if json.loads(await asyncio.wait_for(other.recv(), 60))["type"] == "frame":
                frames += 1
            if frames == 25:
                t = time.monotonic()
                status, _ = await asyncio.to_thread(_request, server, "GET", "/api/pilots")
                answered.append((status, time.monotonic() - t))
        other_seconds = time.monotonic() - began
        await stuck.close()
        await other.close()
        return other_seconds, answered

    other_seconds, answered = asyncio.run(scenario())
    # 50 frames are a second of play: far less than one of the stuck pilot's decisions.
    assert answered and answered[0][0] == 200
    assert other_seconds < 20, other_seconds


def test_games_per_client_are_limited(server):
    async def scenario():
        sockets, replies = [], []
        for _ in range(3):
            ws = await _open(server)
            await ws.send(json.dumps({"mode": "watch", "a": "idle", "b": "idle"}))
            replies.append(json.loads(await asyncio.wait_for(ws.recv(), 120)))
            sockets.append(ws)
        for ws in sockets:
            await ws.close()
        return replies

    replies = asyncio.run(scenario())
    assert [r["type"] for r in replies] == ["start", "start", "error"]
    assert "games_per_client=2" in replies[2]["message"]


def test_limits_are_one_line_each():
    from spacewar_ai.web.guard import Limits

    assert Limits.parse("games_in_all=16,stall_seconds=2.5").games_in_all == 16
    for text, culprit in (("games_in_al=3", "did you mean 'games_in_all'"),
                          ("games_in_all=x", "give a number"), ("upload_bytes=0", "> 0")):
        with pytest.raises(ValueError, match=culprit):
            Limits.parse(text)


def test_a_message_flood_ends_the_game(server):
    async def scenario():
        ws = await _open(server)
        await ws.send(json.dumps({"mode": "watch", "a": "idle", "b": "idle"}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 120))["type"] == "start"
        for _ in range(200):
            await ws.send(json.dumps({"type": "speed", "speed": 1}))
        while True:
            msg = json.loads(await asyncio.wait_for(ws.recv(), 60))
            if msg["type"] == "error":
                return msg["message"]

    assert "messages_per_second" in asyncio.run(scenario())


AIM = '''import math


def strategy(obs):
    if obs[34] > 0.5 and abs(obs[12]) < 0.2:
        return 4
    return 1 if obs[12] > 0 else 2
'''


def _submit(server, name, filename, data: bytes):
    from urllib.parse import urlencode

    status, body = _request(server, "POST", "/api/arena/submit?" + urlencode(
        {"name": name, "file": filename}), data)
    return status, json.loads(body)


def test_an_arena_submission_is_rated_and_survives_a_restart(tmp_path):
    from spacewar_ai.rating.arena import HOUSE, PAIRING_GAMES
    from spacewar_ai.web.app import BackgroundServer
    from spacewar_ai.web.guard import Limits

    srv = BackgroundServer(tmp_path, limits=Limits(submissions_per_hour=1))
    try:
        assert _submit(srv, "aimer", "aim.py", AIM.encode())[0] == 200
        status, reply = _submit(srv, "leaker", "x.py", f"def strategy(obs):\n    return {KEY}\n"
                                .encode())
        assert status == 400 and not any(p in json.dumps(reply) for p in _pieces(KEY))
        assert _submit(srv, "aimer", "aim2.py", AIM.encode()) == (
            400, {"error": "name 'aimer' is taken: choose another"})
        assert _submit(srv, "bad kind", "aim.txt", AIM.encode())[0] == 400
        status, reply = _submit(srv, "third", "aim3.py", AIM.encode())
        assert status == 400 and "submissions_per_hour=1" in reply["error"]
        # Played against every house pilot, then rated with an interval.
        deadline = time.monotonic() + 900
        while True:
            board = json.loads(_request(srv, "GET", "/api/arena")[1])
            mine = next(p for p in board["players"] if p["name"] == "aimer")
            if mine["games"] >= PAIRING_GAMES * len(HOUSE) or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert mine["games"] == PAIRING_GAMES * len(HOUSE), board
        assert mine["rating"] is not None and mine["ci95"] > 0 and mine["replays"]
        assert _request(srv, "GET", "/api/replay?path=" + mine["replays"][0])[0] == 200
    finally:
        srv.stop()
    # The same folder served again: the same players and results, nothing played twice.
    again = BackgroundServer(tmp_path)
    try:
        board2 = json.loads(_request(again, "GET", "/api/arena")[1])
        assert [(p["name"], p["games"], p["rating"]) for p in board2["players"]] == \
            [(p["name"], p["games"], p["rating"]) for p in board["players"]]
    finally:
        again.stop()
    # The CLI reads the same players.
    from spacewar_ai.rating.arena import Arena

    specs = Arena(tmp_path / "runs" / "arena").player_specs()
    assert any(s.startswith("strategy:") and s.endswith(".py") for s in specs)
    assert set(HOUSE) <= set(specs)


def test_games_and_sandboxes_in_all_are_limited():
    from spacewar_ai.web.games import LiveGame, Workers, _sandboxes
    from spacewar_ai.web.guard import Limits

    workers = Workers(Limits(games_in_all=3, games_per_client=5, sandboxes_in_all=2))
    assert _sandboxes({"mode": "watch", "a": "strategy:a.py", "b": "search:strategy:b.py"}) == 2
    workers.live["g1"] = LiveGame(None, "1.1.1.1", [], 2)
    assert "sandboxes_in_all=2" in workers.refusal("2.2.2.2", 1)
    assert workers.refusal("2.2.2.2", 0) == ""  # a game without strategy files may start
    workers.live["g2"] = LiveGame(None, "3.3.3.3", [], 0)
    workers.live["g3"] = LiveGame(None, "4.4.4.4", [], 0)
    assert "games_in_all=3" in workers.refusal("5.5.5.5", 0)
    asyncio.run(workers.close())  # games still waiting for a worker hold none to stop
