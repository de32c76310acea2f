"""The server's budgets tried as a hostile visitor would, over real sockets on 127.0.0.1: each
refuses in one line before the work it bounds (connections per address and in all, slow
headers, slow bodies, idle WebSockets, checks and their CPU), a replay with extreme settings is
refused or stopped while pages answer beside it, forwarded values that are not addresses are
refused, and the server keeps serving at its descriptor limit."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.helpers import ROOT, hold_a_replay_check, http_request, idle_replay, long_replay

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
websockets = pytest.importorskip("websockets")

pytestmark = pytest.mark.slow


def _server(tmp_path, proxies=(), **limits):
    from spacewar_ai.web.app import BackgroundServer
    from spacewar_ai.web.guard import Limits

    return BackgroundServer(tmp_path, limits=Limits(**limits), proxies=proxies)


def _connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket()
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    sock.settimeout(60)
    return sock


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes `sock` within `within` seconds (what it sends is read)."""
    sock.settimeout(within)
    try:
        while sock.recv(65536):
            continue  # what the server sends before it closes is read and dropped
        return True
    except (socket.timeout, TimeoutError):
        return False
    except OSError:
        return True


def _served(port: int) -> bool:
    """Whether a page is served from 127.0.0.1 now (a connection refused or closed: no)."""
    try:
        with _connect(port) as sock:
            sock.sendall(b"GET /api/pilots HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            return sock.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def test_connections_past_their_budget_are_refused_and_slow_headers_are_closed(tmp_path):
    srv = _server(tmp_path, connections_per_address=3, head_seconds=2)
    try:
        held = [_connect(srv.port, "127.0.0.2") for _ in range(3)]
        extra = _connect(srv.port, "127.0.0.2")
        answer = extra.recv(4096).decode()
        assert answer.startswith("HTTP/1.1 503") and answer.count("\r\n\r\n") == 1
        assert "connections_per_address" in answer and _closed_by_server(extra, 30)
        # Another address is served meanwhile.
        assert http_request(srv, "GET", "/api/pilots")[0] == 200
        # Headers trickled a byte at a time, and a connection that sends nothing, are closed
        # once the headers' time is up, however the bytes arrive.
        held[0].sendall(b"GET /api/pilots HT")
        for _ in range(6):
            try:
                held[0].send(b"T")
            except OSError:
                break
            time.sleep(0.5)
        assert all(_closed_by_server(s, 60) for s in held)
        # With them gone, the address is served again.
        fresh = _connect(srv.port, "127.0.0.2")
        fresh.sendall(b"GET /api/pilots HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert fresh.recv(4096).startswith(b"HTTP/1.1 200")
        fresh.close()
    finally:
        srv.stop()


def test_a_head_past_head_bytes_is_refused_however_it_arrives(tmp_path, caplog):
    """h11 bounds a head only while it is incomplete: one sent whole, in one write, is refused
    all the same, in one line (431), and logged once however many come (and once when it
    ends)."""
    srv = _server(tmp_path, head_bytes=4096)
    try:
        head = (b"GET /api/pilots HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 100_000
                + b"\r\n\r\n")
        for _ in range(3):
            with _connect(srv.port) as sock:
                sock.sendall(head)
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
            assert answer.startswith(b"HTTP/1.1 431") and b"head_bytes" in answer
        # A head within the bound is served on the same server.
        assert http_request(srv, "GET", "/api/pilots", headers={"X-Pad": "a" * 2000})[0] == 200
    finally:
        srv.stop()
    # One line when the condition began, one when a head within the bound ended it.
    said = [r.getMessage() for r in caplog.records if "head_bytes" in r.getMessage()]
    assert said == ["headers: a request's head over head_bytes; refusing until it clears",
                    "headers: a request's head over head_bytes no longer: 3 refused meanwhile"]


def test_a_slow_upload_and_idle_websockets_are_ended_with_one_line(tmp_path):
    # Behind a proxy this machine stands for, so that forwarded addresses are visitors.
    srv = _server(tmp_path, proxies=["127.0.0.1"], body_seconds=2, first_message_seconds=2,
                  websockets_per_address=1, websockets_in_all=2)
    try:
        sock = _connect(srv.port)
        sock.sendall(b"POST /api/replay?name=t.json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Length: 1000\r\n\r\n{")
        answer = b""
        while b"body_seconds" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408") and b"took over 2 s to arrive" in answer
        assert b"connection: close" in answer.lower()

        async def sockets():
            url = srv.url.replace("http", "ws") + "/ws/live"

            async def visitor(address):
                return await websockets.connect(url, open_timeout=60, additional_headers={
                    "X-Forwarded-For": address})

            idle = [await visitor("203.0.113.1"), await visitor("203.0.113.2")]
            same = await visitor("203.0.113.1")  # its address has its one
            third = await visitor("203.0.113.3")  # the server has its two
            refused = [json.loads(await asyncio.wait_for(ws.recv(), 60)) for ws in (same, third)]
            ended = [json.loads(await asyncio.wait_for(ws.recv(), 60)) for ws in idle]
            for ws in idle:  # then the server closes them
                with pytest.raises(websockets.exceptions.ConnectionClosed):
                    await asyncio.wait_for(ws.recv(), 60)
            return refused, ended

        refused, ended = asyncio.run(sockets())
        assert [r["type"] for r in refused] == ["error", "error"]
        assert "websockets_per_address" in refused[0]["message"]
        assert "websockets_in_all" in refused[1]["message"]
        assert all(e["type"] == "error" and "first_message_seconds" in e["message"]
                   for e in ended), ended
    finally:
        srv.stop()


def test_replays_past_the_bounds_are_refused_and_a_long_one_stopped_while_pages_answer(
        tmp_path):
    srv = _server(tmp_path, proxies=["127.0.0.1"], check_seconds=3.0, replay_frames=10**8,
                  check_cpu_per_hour=0.2, checks_per_address=1, checks_queued=1)
    try:
        # Settings past a config's bounds: refused in one line naming the field.
        status, body = http_request(srv, "POST", "/api/replay?name=big.json",
                                    idle_replay(torpedo_lifetime=10**9))
        error = json.loads(body)["error"]
        assert status == 400 and "torpedo_lifetime" in error and "at most 100,000" in error

        # Within the bounds but seconds of replaying: stopped at its deadline in its checker,
        # while a page asked meanwhile answers before it ends.
        thread, result = hold_a_replay_check(srv)
        checks = srv.app.state.checks
        assert http_request(srv, "GET", "/api/pilots")[0] == 200
        # Meanwhile its address has its one check under way, and the server its one queued.
        status, body = http_request(srv, "POST", "/api/replay?name=x.json", idle_replay())
        assert status == 429 and "checks_per_address=1" in json.loads(body)["error"]
        status, body = http_request(srv, "POST", "/api/replay?name=x.json", idle_replay(),
                                    {"X-Forwarded-For": "203.0.113.9"})
        assert status == 503 and "checks_queued=1" in json.loads(body)["error"]
        assert checks.queued == 1  # all answered while the replay was being played
        thread.join(120)
        status, body = result["answer"]
        assert status == 400
        assert json.loads(body)["error"] == ("its check took over 3 s and was stopped "
                                             "(--limits check_seconds)")
        # Checks stopped at their deadline are charged the CPU they used (read from the
        # kernel): once the address's hour is spent, the next is refused before it is queued.
        for _ in range(10):
            status, body = http_request(srv, "POST", "/api/replay?name=again.json",
                                        long_replay())
            if status != 400:
                break
        assert status == 429 and "check_cpu_per_hour" in json.loads(body)["error"]
        assert srv.app.state.checks.cpu_used("127.0.0.1") >= 0.2
    finally:
        srv.stop()


def test_an_abandoned_check_is_dropped_and_busy_refusals_cost_no_attempts(tmp_path):
    """A costly replay whose sender leaves: its check is killed at once, not at its deadline.
    An arena upload goes to the quick checkers, so the replay does not hold it up; while the
    quick lane's queue is full, an honest uploader is refused as busy three times, and none of
    those counts against its two attempts an hour."""
    from urllib.parse import urlencode

    srv = _server(tmp_path, proxies=["127.0.0.1"], check_seconds=300, replay_frames=10**8,
                  checks_queued=1, attempts_per_hour=2)
    try:
        long = long_replay()  # minutes of replaying at check_seconds=300
        sock = _connect(srv.port)
        sock.sendall(b"POST /api/replay?name=long.json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"X-Forwarded-For: 198.51.100.1\r\ncontent-type: application/json\r\n"
                     b"content-length: " + str(len(long)).encode() + b"\r\n\r\n" + long)
        checks = srv.app.state.checks
        deadline = time.monotonic() + 60
        while not checks.queued and time.monotonic() < deadline:
            time.sleep(0.01)
        assert checks.queued == 1
        strategy = (ROOT / "examples" / "strategies" / "aim_and_fire.py").read_bytes()

        def upload(name):
            status, body = http_request(srv, "POST", "/api/arena/submit?" + urlencode(
                {"name": name, "file": f"{name}.py"}), strategy,
                headers={"X-Forwarded-For": "203.0.113.9"})
            return status, json.loads(body)

        status, body = upload("first")  # beside the replay being played
        assert status == 200 and body["submitted"]["name"] == "first", body
        quick = checks.lanes["quick"].queue
        quick.take("192.0.2.1")  # another visitor's upload holds the quick lane's one place
        for _ in range(3):
            status, body = upload("second")
            assert status == 503 and "checks_queued=1" in body["error"], body
        quick.give("192.0.2.1")
        sock.close()  # the replay's sender leaves
        deadline = time.monotonic() + 120  # far under the check's minutes, had it run on
        while checks.queued and time.monotonic() < deadline:
            time.sleep(0.05)
        assert checks.queued == 0
        status, body = upload("second")
        assert status == 200 and body["submitted"]["name"] == "second", body
    finally:
        srv.stop()


def test_checks_dropped_as_others_finish_never_lose_a_checker(tmp_path, caplog):
    """One visitor checks tiny replays in a loop while another posts one and closes its socket
    0-40 ms later, over and over, so that drops land as checks finish: the lane keeps its one
    checker, nothing ends in a traceback, and a fresh visitor's replay is answered after."""
    import random

    srv = _server(tmp_path, proxies=["127.0.0.1"], check_cpu_per_hour=10**6)
    tiny = idle_replay(5)
    post = (b"POST /api/replay?name=tiny.json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"content-type: application/json\r\ncontent-length: "
            + str(len(tiny)).encode() + b"\r\n")
    until = time.monotonic() + 20
    answered = []

    def checker():
        while time.monotonic() < until:
            answered.append(http_request(srv, "POST", "/api/replay?name=tiny.json", tiny,
                                         headers={"X-Forwarded-For": "198.51.100.1"})[0])

    def dropper(seed):
        rng = random.Random(seed)
        while time.monotonic() < until:
            with contextlib.suppress(OSError), _connect(srv.port) as sock:
                sock.sendall(post + b"X-Forwarded-For: 198.51.100.%d\r\n\r\n" % (seed + 2)
                             + tiny)
                time.sleep(rng.uniform(0.0, 0.04))

    try:
        threads = [threading.Thread(target=checker)] + [
            threading.Thread(target=dropper, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        status, _ = http_request(srv, "POST", "/api/replay?name=tiny.json", tiny,
                                 headers={"X-Forwarded-For": "203.0.113.5"}, timeout=60)
        lane = srv.app.state.checks.lanes["replays"]
        state = (lane.free, lane.running, lane.waiting, srv.app.state.checks.queued)
    finally:
        srv.stop()
    # How many checks fit in the storm is the host's pace; that they go on being answered, and
    # that the lane ends with its one checker free, is the behaviour.
    assert status == 200 and answered.count(200) >= 2
    assert state == (1, 0, {}, 0)
    assert not [r for r in caplog.records if r.exc_info or "Error" in r.getMessage()]


def test_a_visitor_polling_live_games_is_held_to_its_rate(tmp_path):
    """One address polling /api/live as fast as it can is refused (429, one line) past
    live_polls_per_second, while another address is answered as usual."""
    srv = _server(tmp_path, proxies=["127.0.0.1"], live_polls_per_second=2)
    try:
        statuses = [http_request(srv, "GET", "/api/live/g1",
                                 headers={"X-Forwarded-For": "198.51.100.9"})[0]
                    for _ in range(30)]
        other = http_request(srv, "GET", "/api/live/g1",
                             headers={"X-Forwarded-For": "203.0.113.9"})
    finally:
        srv.stop()
    assert statuses[:2] == [404] * 2 and 429 in statuses  # no such game, then the rate
    assert other[0] == 404 and b"no such game" in other[1]


def _firing(steps: int = 4000, **config) -> bytes:
    """A replay in which both ships fire every decision with torpedoes that live long: each
    frame holds every torpedo in flight, so its frames make a large answer."""
    from spacewar_ai.config import GameConfig

    settings = {**GameConfig().to_dict(), "no_star": True, "torpedo_lifetime": 100_000,
                "max_ammo": 10_000, "max_episode_steps": steps * 4, **config}
    return json.dumps({"version": 1, "config": settings, "seed": 1, "players": ["a", "b"],
                       "actions": ["4" * steps, "4" * steps], "result": {}}).encode()


def test_a_replay_answer_is_bounded_in_bytes_and_a_slow_reader_is_cut_off(tmp_path):
    """A small replay can ask for a huge answer (every torpedo of every frame): refused in one
    line once its frames pass answer_mb, before the rest is played. An answer within the bound
    sent to a reader who does not read is cut off after answer_seconds, freeing it; while it is
    held, another answer that would take the server past answers_mb_in_all is refused as busy."""
    srv = _server(tmp_path, answer_mb=1, check_seconds=120)
    try:
        status, body = http_request(srv, "POST", "/api/replay?name=fire.json", _firing())
        error = json.loads(body)["error"]
        assert status == 400 and "over 1 MB" in error and "answer_mb" in error, error
    finally:
        srv.stop()
    # An answer larger than what the kernel's socket buffers absorb on 127.0.0.1.
    request = _firing(20_000)
    srv = _server(tmp_path, answer_mb=64, check_seconds=120)
    try:
        status, whole = http_request(srv, "POST", "/api/replay?name=fire.json", request)
        assert status == 200 and len(whole) > 10 * 2**20  # read at once, the answer is whole
    finally:
        srv.stop()
    # The budget of answers in flight holds that answer and not a megabyte more.
    srv = _server(tmp_path, proxies=["127.0.0.1"], answer_mb=64,
                  answers_mb_in_all=-(-len(whole) // 2**20),
                  answer_seconds=8, check_seconds=120)  # far over a small check's time
    try:
        sock = _connect(srv.port)
        sock.sendall(b"POST /api/replay?name=fire.json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"content-type: application/json\r\ncontent-length: "
                     + str(len(request)).encode() + b"\r\n\r\n" + request)
        sock.settimeout(120)
        sock.recv(1, socket.MSG_PEEK)  # the answer has begun (its check is done)
        began = time.monotonic()
        status, body = http_request(srv, "POST", "/api/replay?name=small.json", idle_replay(100),
                                    headers={"X-Forwarded-For": "203.0.113.1"})
        error = json.loads(body)["error"]
        assert status == 503 and "answers_mb_in_all" in error, error
        # The reader's own address holds the whole budget, past its share of it.
        status, body = http_request(srv, "POST", "/api/replay?name=small.json", idle_replay(100))
        error = json.loads(body)["error"]
        assert status == 429 and "address_share" in error, error
        time.sleep(max(0.0, began + 10 - time.monotonic()))  # its deadline passes, unread
        got = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(2**20):
                got += chunk
        sock.close()
        assert got.startswith(b"HTTP/1.1 200") and len(got) < len(whole)
        assert srv.app.state.answers.total == 0  # the cut-off answer's bytes were given back
        assert http_request(srv, "POST", "/api/replay?name=small.json", idle_replay(100))[0] == 200
    finally:
        srv.stop()


def test_a_replay_beyond_the_servers_frames_is_refused_and_the_board_lists_no_escape(
        tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text("{}")
    replays = tmp_path / "project" / "runs" / "replays"
    replays.mkdir(parents=True)
    (replays / "link.json").symlink_to(outside / "secret.json")
    srv = _server(tmp_path / "project", replay_frames=100_000)
    try:
        status, body = http_request(srv, "POST", "/api/replay?name=x.json",
                                    idle_replay(max_episode_steps=10**6, frame_skip=100))
        error = json.loads(body)["error"]
        assert status == 400 and "replay_frames=100,000" in error and "\n" not in error
        status, body = http_request(srv, "GET", "/api/replays")
        assert status == 200 and json.loads(body)["replays"] == []
    finally:
        srv.stop()


def test_a_forwarded_value_that_is_not_an_address_is_refused(tmp_path):
    srv = _server(tmp_path, proxies=["127.0.0.1"])
    try:
        for value in ("unknown", "A" * 300):
            status, body = http_request(srv, "GET", "/api/arena",
                                        headers={"X-Forwarded-For": value})
            assert status == 400 and "is not an address" in json.loads(body)["error"]
        assert http_request(srv, "GET", "/api/arena",
                            headers={"X-Forwarded-For": "2001:db8::1"})[0] == 200
    finally:
        srv.stop()


def _serve_process(tmp_path, limits: str, *flags, wrap=()):
    """`spacewar-ai --serve` as a process of its own on a free port of 127.0.0.1, with
    `--limits limits` and `flags`, its output in server.log, once it serves pages: (process,
    port, log)."""
    log = tmp_path / "server.log"
    for _ in range(3):  # a port found free may be taken by another test before the server binds
        with socket.socket() as port:
            port.bind(("127.0.0.1", 0))
            number = port.getsockname()[1]
        with open(log, "w") as out:
            proc = subprocess.Popen(
                [*wrap, sys.executable, "-m", "spacewar_ai", "--serve", "--port", str(number),
                 "--limits", limits, *flags], cwd=tmp_path, stdout=out,
                stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        deadline = time.monotonic() + 180  # a safety net for a loaded host's start
        while not _served(number):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                break
            time.sleep(0.5)
        else:
            return proc, number, log
        if "address already in use" not in log.read_text():
            break
    raise AssertionError(log.read_text()[-3000:])


def test_the_server_serves_on_at_its_descriptor_limit(tmp_path):
    """Under a descriptor limit of 256, connections past what it leaves are answered in one
    line and closed; each condition is logged once; once the idle ones are closed, pages are
    served again."""
    proc, number, log = _serve_process(
        tmp_path, "connections_per_address=40,head_seconds=4,games_in_all=1,sandboxes_in_all=1",
        wrap=("prlimit", "--nofile=256:256"))
    held = []
    try:
        answers = []
        for k in range(2, 8):  # 240 connections from six addresses
            for _ in range(40):
                sock = _connect(number, f"127.0.0.{k}")
                held.append(sock)
        time.sleep(1.0)
        for sock in held:
            sock.setblocking(False)
            try:
                answers.append(sock.recv(4096))
            except BlockingIOError:
                answers.append(b"")
        refused = [a for a in answers if a.startswith(b"HTTP/1.1 503")]
        assert refused and all(b"connections_in_all" in a for a in refused)
        assert len(refused) < len(answers)  # some were let in: the budget is not zero
        # The idle ones are closed at their headers' deadline, and the server serves again.
        deadline = time.monotonic() + 120
        while not _served(number):
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
    finally:
        for sock in held:
            sock.close()
        proc.terminate()
        proc.wait(60)
    text = log.read_text()
    # One line when the condition began (and one when it ended), not one per connection; the
    # descriptors kept for connections accepted in one go (the backlog) keep accepting clear of
    # the limit, and should it ever be met, that is one line too, not one a second.
    assert text.count("refusing until it clears") == 1, text[-3000:]
    assert text.count("out of file descriptors") <= 1, text[-3000:]


def test_a_server_stopped_with_checks_queued_ends_them_and_exits(tmp_path):
    """SIGTERM while costly checks run and wait: the server gives them `shutdown_seconds`,
    then ends them, each quietly (no traceback in its log), and exits instead of waiting for
    minutes of checking."""
    proc, number, log = _serve_process(
        tmp_path, "check_seconds=300,replay_frames=100000000,shutdown_seconds=2",
        "--trusted-proxies", "127.0.0.1")
    long = long_replay()  # minutes of replaying at check_seconds=300
    held = []
    try:
        for k in range(20):  # one runs, the lane's queue fills, the rest are refused
            sock = _connect(number)
            sock.sendall(b"POST /api/replay?name=long.json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"X-Forwarded-For: 198.51.100.%d\r\n" % k
                         + b"content-type: application/json\r\ncontent-length: "
                         + str(len(long)).encode() + b"\r\n\r\n" + long)
            held.append(sock)
        time.sleep(3)
        assert proc.poll() is None
        proc.terminate()
        proc.wait(120)  # a safety net: the checks alone would take many minutes
    finally:
        for sock in held:
            sock.close()
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert "Traceback" not in text and "Exception in ASGI application" not in text, text


def test_limits_alone_prints_every_budget_and_serves_nothing(tmp_path):
    from spacewar_ai.web.guard import Limits

    out = subprocess.run([sys.executable, "-m", "spacewar_ai", "--serve", "--limits"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [[n, v] for n, v, _, _ in Limits().rows()]
