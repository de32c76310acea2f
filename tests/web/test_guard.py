"""The browser app tried as an attacker would, over real HTTP and WebSockets on 127.0.0.1: other
origins and rebinding hosts refused, nothing of a file quoted back, bodies refused before they
are read, hostile JSON answered with 400, a hung pilot stalling only its own game, and limits
on games per client."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import time

import pytest

from tests.helpers import http_request, key_pieces

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


def test_a_page_of_another_origin_cannot_open_a_game(server):
    with pytest.raises(websockets.exceptions.InvalidStatus) as exc:
        asyncio.run(_first_reply(server, {"mode": "watch", "a": "idle", "b": "idle"},
                                 origin="https://evil.example"))
    assert exc.value.response.status_code == 403
    # Its own pages may, and so may a client that is not a browser page (no Origin).
    reply = asyncio.run(_first_reply(server, {"mode": "watch", "a": "idle", "b": "random"},
                                     origin=server.url))
    assert reply["type"] == "start", reply
    status, _ = http_request(server, "POST", "/api/replay?name=x.json", b"{}",
                         {"Origin": "https://evil.example"})
    assert status == 403


def test_a_rebinding_host_is_refused(server):
    status, body = http_request(server, "GET", "/api/pilots", headers={"Host": "evil.example"})
    assert status == 400 and b"not a name of this server" in body
    assert http_request(server, "GET", "/api/pilots",
                    headers={"Host": f"localhost:{server.port}"})[0] == 200
    assert http_request(server, "GET", "/api/pilots",
                    headers={"Host": f"[::1]:{server.port}"})[0] == 200
    with pytest.raises(websockets.exceptions.InvalidStatus):
        asyncio.run(_open(server, host="evil.example"))


@pytest.mark.parametrize("spec", ["strategy:google.key.txt", "google.key.txt",
                                  "strategy:notes.py", "search:google.key.txt"])
def test_a_key_file_named_as_a_pilot_leaks_nothing(server, spec):
    reply = asyncio.run(_first_reply(server, {"mode": "watch", "a": spec, "b": "idle"}))
    assert reply["type"] == "error"
    text = json.dumps(reply)
    leaked = [p for p in key_pieces(KEY) | key_pieces(KEY.replace("-", "_")) if p in text]
    assert not leaked, text
    assert "google.key.txt" in text or "notes.py" in text  # the file is named


def test_an_oversize_upload_is_refused_before_it_is_read(server):
    # A body announced at 500 MB but never sent: answered at once, without waiting for it.
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.putrequest("POST", "/api/replay?name=big.json")
    conn.putheader("Content-Length", str(500 * 2**20))
    conn.putheader("Content-Type", "application/json")
    conn.endheaders()
    conn.send(b"{" * 1000)
    response = conn.getresponse()
    assert response.status == 413 and b"upload_bytes" in response.read()
    conn.close()
    # Sent in chunks with no length: refused once past the limit. The refusal may close the
    # connection before a slow sender's last chunks leave it (a broken pipe here, as a browser
    # would meet it), and the answer is read all the same.
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        conn.request("POST", "/api/replay?name=big.json", body=iter([b" " * 50_000] * 4),
                     encode_chunked=True)
    response = conn.getresponse()
    assert response.status == 413
    conn.close()


def test_a_nan_replay_and_deep_json_get_400_naming_the_problem(server):
    replay = {"version": 1, "config": {}, "seed": 1, "players": ["a", "b"],
              "actions": ["0", "0"], "result": {"winner": float("nan")}, "final_state": ""}
    status, body = http_request(server, "POST", "/api/replay?name=nan.json",
                            json.dumps(replay).encode())
    assert status == 400 and b"result.winner is NaN" in body
    status, body = http_request(server, "POST", "/api/replay?name=deep.json",
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
        first = json.loads(await asyncio.wait_for(stuck.recv(), 120))
        assert first["type"] == "start", first
        other = await _open(server)
        await other.send(json.dumps({"mode": "watch", "a": "heuristic:hard", "b": "random"}))
        first = json.loads(await asyncio.wait_for(other.recv(), 120))
        assert first["type"] == "start", first
        frames = 0
        began = time.monotonic()
        answered = []
        while frames < 50:
            if json.loads(await asyncio.wait_for(other.recv(), 60))["type"] == "frame":
                frames += 1
            if frames == 25:
                t = time.monotonic()
                status, _ = await asyncio.to_thread(http_request, server, "GET", "/api/pilots")
                answered.append((status, time.monotonic() - t))
        other_seconds = time.monotonic() - began
        await stuck.close()
        await other.close()
        return other_seconds, answered

    other_seconds, answered = asyncio.run(scenario())
    # 50 frames are a second of play: far less than one of the stuck pilot's decisions.
    assert answered and answered[0][0] == 200
    assert other_seconds < 20, other_seconds


def test_a_strategy_that_fails_to_start_hands_its_sandbox_back_before_the_page_hears(project):
    """An address holds one strategy file's sandbox at a time here: a strategy game that fails
    at its start is refused only once its budgets are back, so the page's next strategy game
    (the file mended) starts at once rather than being refused for the game that just failed.
    Its own server: no other test's strategy game may still hold the address's sandbox."""
    from spacewar_ai.web.app import BackgroundServer

    (project / "mended.py").write_text("def strategy(obs):\n    return 0\n")
    server = BackgroundServer(project)
    try:
        async def scenario():
            failed = await _first_reply(server, {"mode": "watch", "a": "strategy:notes.py",
                                                 "b": "idle"})
            again = await _first_reply(server, {"mode": "watch", "a": "strategy:mended.py",
                                                "b": "idle"})
            return failed, again

        failed, again = asyncio.run(scenario())
    finally:
        server.stop()
    assert failed["type"] == "error" and "notes.py" in failed["message"], failed
    assert again["type"] == "start", again


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


def test_one_quota_holds_every_budget_and_refuses_in_its_rows_words():
    """guard.Quota: what an address and all visitors hold, taken before the work and given back
    however it ends; a refusal is one line of the budget's own row (what it bounds, how much is
    held, the setting), 429 for an address at its most, 503 for the server."""
    from spacewar_ai.web.guard import Limits, Quota, Refused

    limits = Limits(websockets_per_address=2, websockets_in_all=3)
    quota = Quota(limits, "websockets_per_address", "websockets_in_all")
    with quota.hold("a"), quota.hold("a"):
        refused = quota.refusal("a")
        assert refused.status == 429 and str(refused) == (
            "open WebSockets: your address is at its most (2 of 2, --limits "
            "websockets_per_address=2); finish or close some first")
        with quota.hold("b"):
            refused = quota.refusal("c")
            assert refused.status == 503 and str(refused).startswith(
                "open WebSockets in all: the server is at its most (3 of 3, --limits "
                "websockets_in_all=3)")
            assert quota.refusal("c", per_address=False).status == 503
        with pytest.raises(Refused, match="websockets_per_address"):
            quota.hold("a").__enter__()
    with pytest.raises(RuntimeError), quota.hold("a"):
        raise RuntimeError("the work failed")
    assert quota.total == 0 and not quota.held  # given back however the work ended


def test_no_address_holds_a_budget_that_all_visitors_share():
    """A budget in all with no budget per address (the answers being sent, the sandboxes)
    gives each address at most `address_share` of it, though always one thing of any size, so
    one address's slow readers leave the others their answers; connections are counted by an
    IPv6 host's /64, as every other budget counts it."""
    from spacewar_ai.web.connections import ConnectionBudget
    from spacewar_ai.web.guard import Limits, Quota

    limits = Limits(answers_mb_in_all=64)
    answers = Quota(limits, None, "answers_mb_in_all")
    answers.take("198.51.100.1", 16)  # one answer of the largest size
    refused = answers.refusal("198.51.100.1", 1)
    assert refused.status == 429 and "--limits address_share=0.25" in str(refused)
    assert answers.refusal("203.0.113.5", 16) is None  # another visitor is answered
    alone = Quota(limits, None, "answers_mb_in_all")
    assert alone.refusal("198.51.100.1", 40) is None  # one answer, whatever its size

    class Transport:
        def __init__(self, host):
            self.host = host

        def get_extra_info(self, name):
            return (self.host, 40000, 0, 0) if name == "peername" else None

        def is_closing(self):
            return False

    budget = ConnectionBudget(Limits(connections_per_address=32), 1000)
    said = [budget.admit(Transport(f"2001:db8:0:1::{k:x}")) for k in range(40)]
    assert said[:32] == [""] * 32
    assert all("connections_per_address" in why for why in said[32:])
    assert budget.admit(Transport("2001:db8:0:2::1")) == ""  # another /64


def test_live_polling_and_game_starts_are_held_to_a_rate_per_address():
    """`live_polls_per_second` and `game_starts_per_minute` count an address's requests in a
    sliding window: past the budget each is refused in one line (429) until the window moves
    on, and another address is not held back."""
    from spacewar_ai.web.guard import AddressRate, Limits

    rate = AddressRate(Limits(live_polls_per_second=3), "live_polls_per_second", 1.0)
    assert [rate.refusal("a", now=10.0 + k / 100) is None for k in range(5)] == [
        True, True, True, False, False]
    refused = rate.refusal("a", now=10.5)
    assert refused.status == 429 and "--limits live_polls_per_second=3" in str(refused)
    assert rate.refusal("b", now=10.5) is None  # another address
    assert rate.refusal("a", now=11.01) is None  # the window has moved on
