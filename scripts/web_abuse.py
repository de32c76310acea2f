"""Load and abuse on the browser app: a server started as `spacewar-ai --serve` over a temporary
project on 127.0.0.1 (trusting this machine as its proxy, so forwarded addresses stand for
visitors), players and watchers throughout, and hostile visitors in phases:

1. one address uploads --refused models that its checks refuse (tests/hostile_onnx.py's
   costly_to_refuse): the server's CPU for them (its own process and its checkers'), and how
   long the last refusals take;
2. a replay whose game settings ask for millions of engine frames;
3. --idle raw connections and --idle WebSockets that never send a first message (from
   127.0.0.2), and --trickle uploads sent a byte a second (from 127.0.0.3): how many the server
   still holds after --hold seconds;
4. a crowd of --crowd visitors each uploading a strategy file, then one honest upload: the
   pairings queued, and the time until the honest upload has a rating;
5. a request whose head is 100 kB, sent whole;
6. --abandoned costly replays (torpedoes that live long, fired every decision) posted two from
   each of half as many addresses whose sockets close within 0.8 s, then a fresh visitor's
   small replay: how long until it is answered;
7. 20 addresses keeping the checkers busy with costly replays (--costly-steps decisions) while
   an honest visitor uploads to the arena every 5 s: how long until its upload is checked,
   whether the busy refusals spent its hourly attempts, and how long a fresh visitor's small
   replay (retried every 5 s while busy) waits beside the crowd;
8. 8 slow readers of a replay answer near answer_mb, reading a byte a second: the server's
   memory meanwhile and after answer_seconds;
9. --replays saved games written under runs/replays: /api/replays and the pages meanwhile;
10. --churn seconds of drop-while-finishing churn on both lanes (a visitor looping on small
    checks, another posting and leaving 0-40 ms later; replays over HTTP, pilot specs over
    /ws/live), then a fresh visitor on each lane: how long until answered;
11. 4 slow readers of a large replay answer from one address, then another visitor's replay;
12. a tournament of --tournament-games saved games: its API and page, the pages meanwhile;
13. --addresses visitors keeping the replays' lane full with the costly replays of 7 for
    --crowd-seconds, each asking again after the Retry-After of a busy refusal, and --newcomers
    fresh visitors asking for a small replay beside them: how long each waited, in how many
    tries; the log's tracebacks.

Pages (/api/pilots, /api/arena, /play, /api/replays) are requested throughout from 127.0.0.1:
their latency, and that of those asked during each phase, are printed with the descriptors and
memory the server holds at the end and whether anything was lost (an accepted upload missing
from the board, an answer of 500, the server gone), and how many seconds each phase took.

    python scripts/web_abuse.py                      # the figures in docs/browser.md
    python scripts/web_abuse.py --refused 5 --idle 10 --trickle 5 --crowd 4 --hold 4 \
        --churn 20 --tournament-games 1000 --addresses 50 --crowd-seconds 40 --newcomers 2

Every request goes to 127.0.0.1, and the script stops the server when it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

AIM = ("def strategy(obs):\n    if obs[34] > 0.5 and abs(obs[12]) < 0.2:\n        return 4\n"
       "    return 1 if obs[12] > 0 else 2\n")


def _tree(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of pid and all its descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(stat[1]), []).append(int(entry))
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        try:
            cmd = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        out.append((p, cmd))
        stack.extend(children.get(p, []))
    return out


def _cpu(pid: int) -> float:
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu(pid: int) -> float:
    """CPU seconds of the server's own process and its checker processes."""
    return sum(_cpu(p) for p, cmd in _tree(pid) if p == pid or "spacewar_ai.web.checks" in cmd)


def rss_mb(pid: int, tree: bool = True) -> float:
    """Resident memory of `pid` and, with `tree`, all its descendants (MB)."""
    total = 0.0
    for p, _ in _tree(pid) if tree else [(pid, "")]:
        with contextlib.suppress(OSError, StopIteration):  # a process gone meanwhile
            line = next(x for x in open(f"/proc/{p}/status") if x.startswith("VmRSS:"))
            total += int(line.split()[1]) / 1024
    return total


def request(port: int, method: str, path: str, body: bytes = b"", headers=None,
            timeout: float = 120) -> tuple[int, bytes, float]:
    """(status, body, milliseconds) of one request; status 0 if the connection failed."""
    began = time.perf_counter()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        data, status = response.read(), response.status
        conn.close()
    except OSError:
        data, status = b"", 0
    return status, data, (time.perf_counter() - began) * 1000


class Pages(threading.Thread):
    """Requests the pages in a loop, noting each latency with the phase it fell in."""

    PATHS = ("/api/pilots", "/api/arena", "/play", "/api/replays")

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.port = port
        self.times: list[tuple[str, float]] = []
        self.statuses: list[int] = []
        self.stop = False
        self.entered: dict[str, float] = {}  # when each phase began
        self.phase = "start"

    @property
    def phase(self) -> str:
        return self._phase

    @phase.setter
    def phase(self, name: str) -> None:
        self._phase = name
        self.entered[name] = time.monotonic()

    def phase_seconds(self) -> str:
        """How long each phase lasted, in order: where a run of the harness spends its time."""
        marks = [*self.entered.items(), ("end", time.monotonic())]
        return ", ".join(f"{name} {b - a:,.0f}" for (name, a), (_, b) in zip(marks, marks[1:]))

    def run(self) -> None:
        k = 0
        while not self.stop:
            status, _, ms = request(self.port, "GET", self.PATHS[k % len(self.PATHS)])
            self.times.append((self.phase, ms))
            self.statuses.append(status)
            k += 1
            time.sleep(0.05)


def submit(port: int, name: str, filename: str, data: bytes, address: str):
    query = urlencode({"name": name, "file": filename})
    return request(port, "POST", f"/api/arena/submit?{query}", data,
                   {"X-Forwarded-For": address})


def replay_text(steps: int, **config) -> bytes:
    """A replay file of idle ships in a game of `config`, `steps` decisions long."""
    from spacewar_ai.config import GameConfig

    cfg = GameConfig(**config)
    return json.dumps({"version": 1, "config": cfg.to_dict(), "seed": 1, "players": ["a", "b"],
                       "actions": ["0" * steps, "0" * steps], "result": {}}).encode()


def firing_replay(steps: int) -> bytes:
    """A replay in bounds whose frames are large: both ships fire every decision with
    torpedoes that live long and no star, so every frame holds every torpedo in flight."""
    from spacewar_ai.config import GameConfig

    cfg = GameConfig(no_star=True, torpedo_lifetime=100_000, max_ammo=10_000,
                     max_episode_steps=steps * 4)
    return json.dumps({"version": 1, "config": cfg.to_dict(), "seed": 1, "players": ["a", "b"],
                       "actions": ["4" * steps, "4" * steps], "result": {}}).encode()


def post_raw(port: int, path: str, body: bytes, address: str) -> socket.socket:
    """A POST sent whole on a socket of its own, its answer left unread."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: {address}\r\n"
                 f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
                 .encode() + body)
    return sock


def bound_socket(source: str) -> socket.socket:
    sock = socket.socket()
    sock.bind((source, 0))
    return sock


async def idle_websockets(port: int, count: int, hold: float) -> int:
    """Open `count` WebSockets from 127.0.0.2 that never send a first message; how many are
    still open after `hold` seconds."""
    import websockets
    import websockets.exceptions

    async def one():
        sock = bound_socket("127.0.0.2")
        try:
            sock.connect(("127.0.0.1", port))
            sock.setblocking(False)
            ws = await websockets.connect(f"ws://127.0.0.1:{port}/ws/live", sock=sock,
                                          open_timeout=30)
        except Exception:
            return None
        return ws

    async def still_open(ws) -> bool:
        try:
            while True:  # what the server sent (an error line), then whether it closed
                await asyncio.wait_for(ws.recv(), 0.2)
        except asyncio.TimeoutError:
            return True  # nothing more came, and no close
        except websockets.exceptions.ConnectionClosed:
            return False
        finally:
            await ws.close()

    sockets = [ws for ws in await asyncio.gather(*(one() for _ in range(count))) if ws]
    await asyncio.sleep(hold)
    return sum([await still_open(ws) for ws in sockets])


def idle_and_trickled(port: int, idle: int, trickle: int, hold: float) -> tuple[int, int, int]:
    """(raw connections, trickled uploads still held after `hold` seconds, connections
    refused at once)."""
    raw, refused = [], 0
    for _ in range(idle):
        sock = bound_socket("127.0.0.2")
        try:
            sock.connect(("127.0.0.1", port))
            raw.append(sock)
        except OSError:
            refused += 1
    trickled = []
    for _ in range(trickle):
        sock = bound_socket("127.0.0.3")
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(b"POST /api/replay?name=t.json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Content-Length: 100000\r\n\r\n")
            trickled.append(sock)
        except OSError:
            refused += 1
    end = time.monotonic() + hold
    while time.monotonic() < end:
        for sock in trickled:
            with contextlib.suppress(OSError):  # closed by the server: nothing to send to
                sock.send(b"x")
        time.sleep(1.0)

    def still_open(sock) -> bool:
        sock.setblocking(False)
        try:
            while True:
                if not sock.recv(65536):
                    return False
        except BlockingIOError:
            return True
        except OSError:
            return False

    held = sum(still_open(s) for s in raw), sum(still_open(s) for s in trickled)
    for sock in raw + trickled:
        sock.close()
    return (*held, refused)


async def games(port: int, players: int, watchers: int, until: float) -> list[int]:
    """Frames each game got while it ran."""
    import websockets
    import websockets.exceptions

    async def one(start: dict) -> int:
        frames = 0
        # A game refused or dropped counts the frames it got.
        with contextlib.suppress(OSError, asyncio.TimeoutError,
                                 websockets.exceptions.WebSocketException):
            async with websockets.connect(f"ws://127.0.0.1:{port}/ws/live",
                                          open_timeout=120) as ws:
                await ws.send(json.dumps(start))
                while time.monotonic() < until:
                    msg = json.loads(await asyncio.wait_for(ws.recv(), 120))
                    frames += msg.get("type") == "frame"
                    if msg.get("type") == "error":
                        break
        return frames

    starts = [{"mode": "play", "difficulty": "medium"}] * players + \
        [{"mode": "watch", "a": "heuristic:hard", "b": "heuristic:medium"}] * watchers
    return list(await asyncio.gather(*(one(s) for s in starts)))


def ask_until_answered(port: int, body: bytes, address: str, give_up: float) -> tuple:
    """A visitor's replay, asked again after the Retry-After of each busy refusal: (status,
    seconds until answered, tries)."""
    began, tries = time.monotonic(), 0
    while True:
        tries += 1
        status, _, _ = request(port, "POST", "/api/replay?name=small.json", body,
                               {"X-Forwarded-For": address}, timeout=600)
        if status != 503 or time.monotonic() - began > give_up:
            return status, time.monotonic() - began, tries
        time.sleep(5)


async def live_start(port: int, address: str, start: dict, drop_after: float | None = None,
                     wait: float = 120) -> str:
    """One /ws/live start from `address`: the type of the first message that came back (a
    game's "start", an "error", or "none"), or "dropped" when the socket is closed
    `drop_after` seconds after its start message."""
    import websockets

    try:
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws/live", open_timeout=wait,
                                      additional_headers={"X-Forwarded-For": address}) as ws:
            await ws.send(json.dumps(start))
            if drop_after is not None:
                await asyncio.sleep(drop_after)
                return "dropped"
            return json.loads(await asyncio.wait_for(ws.recv(), wait)).get("type", "none")
    except Exception:  # refused at the door, closed, or too slow: nothing came back
        return "none"


def churn(port: int, seconds: float) -> dict:
    """Drop-while-finishing churn on both lanes for `seconds`: on the replays' lane one visitor
    checks tiny replays in a loop while another posts them and closes its socket 0-40 ms later;
    on the quick lane the same over /ws/live with pilot specs (the looping visitor's spec is
    refused by its check, so no game starts). Each side moves to a fresh address from time to
    time, so no hourly allowance stops it. Then a fresh visitor asks each lane."""
    import random

    rng = random.Random(7)
    stop = time.monotonic() + seconds
    counts = collections.Counter()
    tiny = replay_text(20)

    def replays_loop() -> None:
        k = 0
        while time.monotonic() < stop:
            status = request(port, "POST", "/api/replay?name=t.json", tiny,
                             {"X-Forwarded-For": f"198.22.{k // 250}.{k % 250 + 1}"})[0]
            counts[f"replays looped {status}"] += 1
            k += status == 429

    def replays_drop() -> None:
        k = 0
        while time.monotonic() < stop:
            sock = post_raw(port, "/api/replay?name=t.json", tiny,
                            f"198.23.{k // 250 % 250}.{k % 250 + 1}")
            time.sleep(rng.uniform(0, 0.04))
            sock.close()
            counts["replays dropped"] += 1
            k += 1

    async def quick(drop: bool) -> None:
        k = 0
        while time.monotonic() < stop:
            start = {"mode": "watch", "a": "heuristic:hard", "b": "heuristic:medium"} if drop \
                else {"mode": "watch", "a": "no-such-pilot:x", "b": "heuristic:medium"}
            answer = await live_start(port, f"198.{24 + drop}.{k // 250 % 250}.{k % 250 + 1}",
                                      start, rng.uniform(0, 0.04) if drop else None)
            counts[f"quick {'dropped' if drop else 'looped ' + answer}"] += 1
            k += 1

    async def both_quick() -> None:
        await asyncio.gather(quick(False), quick(True))

    threads = [threading.Thread(target=f, daemon=True) for f in (replays_loop, replays_drop)]
    threads.append(threading.Thread(target=lambda: asyncio.run(both_quick()), daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    status, waited, tries = ask_until_answered(port, replay_text(100), "192.0.2.70", 120)
    began = time.monotonic()
    first = asyncio.run(live_start(port, "192.0.2.71", {
        "mode": "watch", "a": "heuristic:hard", "b": "heuristic:medium"}))
    return {"churn": ", ".join(f"{n:,} {what}" for what, n in sorted(counts.items())),
            "churn_fresh_replay": f"{status} after {waited:,.1f} s and {tries} tries",
            "churn_fresh_watch": f"{first} after {time.monotonic() - began:,.1f} s"}


def one_address_answers(port: int, readers: int) -> str:
    """`readers` slow readers of a large answer, all from one address, then another visitor's
    small replay: its status and time."""
    large = firing_replay(20_000)  # about 12 MB of frames, under answer_mb
    socks = [post_raw(port, "/api/replay?name=l.json", large, "198.26.0.1")
             for _ in range(readers)]
    began, first = time.monotonic(), [b""] * readers
    while time.monotonic() - began < 120 and sum(bool(f) for f in first) < readers:
        for k, sock in enumerate(socks):  # the first bytes of each answer (or refusal)
            sock.settimeout(0.2)
            if not first[k]:
                with contextlib.suppress(OSError):
                    first[k] = sock.recv(12)
    status, _, ms = request(port, "POST", "/api/replay?name=small.json", replay_text(100),
                            {"X-Forwarded-For": "192.0.2.72"})
    for sock in socks:
        sock.close()
    held = collections.Counter(f[9:12].decode() or "none" for f in first)
    return (f"its answers {', '.join(f'{n} {s}' for s, n in sorted(held.items()))}; another "
            f"visitor's replay: {status} in {ms:,.0f} ms")


def big_tournament(root: Path, port: int, games: int) -> str:
    """A tournament folder holding `games` saved games: the Tournaments page and its API."""
    folder = root / "runs" / "tournaments" / "20261205-000000"
    (folder / "replays").mkdir(parents=True)
    (folder / "standings.json").write_text(json.dumps([{"name": "a", "rating": 1000}]))
    one = replay_text(10)
    for k in range(games):
        (folder / "replays" / f"{k:06d}.json").write_bytes(one)
    api = []
    for _ in range(20):
        status, data, ms = request(port, "GET", "/api/tournaments")
        api.append(ms)
        time.sleep(0.5)
    page = request(port, "GET", "/tournaments")[2]
    listed = json.loads(data)["tournaments"][0]
    return (f"{listed['saved']:,} games: API slowest {max(api):,.0f} ms, median "
            f"{statistics.median(api):,.0f} of {len(api)} ({len(data):,} bytes); page "
            f"{page:,.0f} ms")


def thousand_crowd(port: int, addresses: int, seconds: float, newcomers: int,
                   costly_steps: int) -> dict:
    """`addresses` visitors keeping the replays' lane full for `seconds` with costly replays,
    each asking again after Retry-After when refused as busy and at once when answered; after
    the first third of that, `newcomers` fresh visitors 5 s apart each ask
    for a small replay the same way: how long each waits and how many tries."""
    costly = firing_replay(costly_steps)
    stop = time.monotonic() + seconds
    answers = collections.Counter()

    def visitor(k: int) -> None:
        time.sleep(k * seconds / 10 / addresses)  # the crowd arrives over its first tenth
        while time.monotonic() < stop:
            status = request(port, "POST", "/api/replay?name=c.json", costly,
                             {"X-Forwarded-For": f"10.{k // 250}.{k % 250}.1"},
                             timeout=600)[0]
            answers[status] += 1
            if status in (429, 503):
                time.sleep(5 if status == 503 else 60)

    crowd = [threading.Thread(target=visitor, args=(k,), daemon=True) for k in range(addresses)]
    for thread in crowd:
        thread.start()
    time.sleep(seconds / 3)  # the crowd arrived and has kept the lane full a while
    waits: list[tuple] = []

    def newcomer(k: int) -> None:
        waits.append(ask_until_answered(port, replay_text(100), f"192.0.2.{100 + k}", 600))

    arrivals = [threading.Thread(target=newcomer, args=(k,), daemon=True)
                for k in range(newcomers)]
    for thread in arrivals:
        thread.start()
        time.sleep(5)
    for thread in arrivals:
        thread.join()
    began = time.monotonic()
    for thread in crowd:
        thread.join()
    refusals = answers[503] / seconds
    return {"crowd_answers": ", ".join(f"{n:,} {s}" for s, n in sorted(answers.items()))
            + f" ({refusals:,.0f} busy refusals a second)",
            "crowd_newcomers_s": ", ".join(f"{w:,.1f}" for _, w, _ in sorted(
                waits, key=lambda x: x[1])),
            "crowd_newcomers": (f"{sum(s == 200 for s, _, _ in waits)} of {newcomers} answered; "
                                f"slowest {max(w for _, w, _ in waits):,.1f} s; tries "
                                f"{max(t for _, _, t in waits)} at most"),
            "crowd_drained_s": time.monotonic() - began}


def start_server(root: Path, limits: str) -> tuple[subprocess.Popen, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(root / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "spacewar_ai", "--serve", "--port", str(port),
                             "--trusted-proxies", "127.0.0.1", "--limits", limits],
                            cwd=root, stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    deadline = time.monotonic() + 180
    while request(port, "GET", "/api/pilots", timeout=5)[0] != 200:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server did not start: {(root / 'server.log').read_text()}")
        time.sleep(0.5)
    return proc, port


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100)[q - 1]


def run(a) -> dict:
    from tests import hostile_onnx

    root = Path(tempfile.mkdtemp(prefix="web-abuse-"))
    proc, port = start_server(root, a.limits)
    pages = Pages(port)
    pages.start()
    until = time.monotonic() + 10**6
    game_thread_result: list = []
    game_thread = threading.Thread(target=lambda: game_thread_result.extend(
        asyncio.run(games(port, a.players, a.watchers, until))), daemon=True)
    game_thread.start()
    out: dict = {}

    # 1. Refused uploads from one address.
    pages.phase = "refused uploads"
    bad = hostile_onnx.costly_to_refuse(root / "bad.onnx").read_bytes()
    before = server_cpu(proc.pid)
    answers = [submit(port, f"bad{k}", "bad.onnx", bad, "203.0.113.66") for k in range(a.refused)]
    spent = server_cpu(proc.pid) - before
    out["refused_uploads"] = (f"{sum(s in (400, 429) for s, _, _ in answers)} of {a.refused} "
                              f"refused ({sum(s == 429 for s, _, _ in answers)} for the "
                              f"allowance, before any check)")
    out["server_cpu_s_per_refused"] = spent / max(a.refused, 1)
    out["server_cpu_s_all_refused"] = spent
    out["last_refusal_ms"] = answers[-1][2] if answers else 0.0

    # 2. A replay whose settings ask for ten million engine frames (10,000 decisions of 1,000
    # frames each, 20 kB of actions), from a visitor's address.
    pages.phase = "extreme replay"
    body = replay_text(10_000, max_episode_steps=10**7, frame_skip=1000)
    status, data, ms = request(port, "POST", "/api/replay?name=x.json", body,
                               {"X-Forwarded-For": "203.0.113.77"})
    error = json.loads(data or b"{}").get("error", "played") if status else "no answer"
    out["replay_extreme"] = f"{len(body):,} bytes: {status} in {ms:,.0f} ms: {error[:80]}"

    # 3. Idle connections, idle WebSockets, trickled uploads.
    pages.phase = "idle sockets"
    ws_held = asyncio.run(idle_websockets(port, a.idle, a.hold)) if a.idle else 0
    raw_held, trickled_held, refused_at_once = idle_and_trickled(port, a.idle, a.trickle, a.hold)
    out["idle_websockets_held"] = f"{ws_held} of {a.idle} after {a.hold:g} s"
    out["idle_connections_held"] = f"{raw_held} of {a.idle - refused_at_once} after {a.hold:g} s"
    out["trickled_uploads_held"] = f"{trickled_held} of {a.trickle} after {a.hold:g} s"
    out["connections_refused_at_once"] = refused_at_once

    # 4. A crowd, then an honest upload.
    pages.phase = "crowd"
    accepted = []
    for k in range(a.crowd):
        status, _, _ = submit(port, f"crowd{k}", "c.py", AIM.replace("4", str(k % 5)).encode(),
                              f"198.51.{k // 250}.{k % 250 + 1}")
        if status == 200:
            accepted.append(f"crowd{k}")
    board = json.loads(request(port, "GET", "/api/arena")[1])
    out["pairings_queued_after_crowd"] = board["pairings_left"]
    began = time.monotonic()
    status, data, _ = submit(port, "honest", "honest.py", AIM.encode(), "192.0.2.200")
    if status == 200:
        accepted.append("honest")
    rated = None
    while time.monotonic() - began < a.seconds:
        board = json.loads(request(port, "GET", "/api/arena")[1])
        mine = next((p for p in board["players"] if p["name"] == "honest"), None)
        if mine and mine["rating"] is not None:
            rated = time.monotonic() - began
            out["honest_first_rating"] = (f"{mine['rating']:.0f} +- {mine['ci95']:.0f} after "
                                          f"{mine['games']} games")
            break
        time.sleep(1.0)
    out["honest_rated_after_s"] = rated if rated is not None else f"not within {a.seconds:g} s"

    # 5. A head of 100 kB, sent whole.
    pages.phase = "oversized head"
    sock = socket.create_connection(("127.0.0.1", port))
    began = time.perf_counter()
    sock.sendall(b"GET /api/pilots HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 100_000
                 + b"\r\n\r\n")
    answer = sock.recv(200)
    sock.close()
    out["oversized_head"] = (f"{answer.split(b' ')[1].decode() if answer else 'closed'} in "
                             f"{(time.perf_counter() - began) * 1000:,.0f} ms")

    # 6. Costly checks abandoned by their senders, then a fresh visitor.
    pages.phase = "abandoned checks"
    costly = firing_replay(50_000)  # long enough to be under way when its sender leaves
    left = [post_raw(port, "/api/replay?name=c.json", costly, f"198.18.0.{k // 2 + 1}")
            for k in range(a.abandoned)]
    time.sleep(0.8)
    for sock in left:
        sock.close()
    status, _, ms = request(port, "POST", "/api/replay?name=small.json", replay_text(100),
                            {"X-Forwarded-For": "192.0.2.50"})
    out["fresh_check_after_abandoned"] = f"{status} in {ms / 1000:,.1f} s"

    # 7. The checkers kept busy by 20 addresses, an honest arena upload retrying every 5 s.
    pages.phase = "checkers crowd"
    costly = firing_replay(a.costly_steps)
    stop = time.monotonic() + a.busy
    crowd_answers: list[int] = []

    def keep_busy(address: str) -> None:
        while time.monotonic() < stop:
            crowd_answers.append(request(port, "POST", "/api/replay?name=c.json", costly,
                                         {"X-Forwarded-For": address})[0])

    crowd = [threading.Thread(target=keep_busy, args=(f"198.19.0.{k + 1}",), daemon=True)
             for k in range(20) for _ in range(2)]
    for thread in crowd:
        thread.start()
    time.sleep(2)
    began, tries, statuses = time.monotonic(), 0, []
    while time.monotonic() < stop + 180:  # on past the crowd, for the queue it left
        tries += 1
        status, _, _ = submit(port, f"patient{tries}", "p.py", AIM.encode(), "192.0.2.60")
        statuses.append(status)
        if status == 200:
            break
        time.sleep(5)
    waited = time.monotonic() - began  # until the answer, not until the crowd is done
    # A replay from a fresh address beside the same crowd, retried every 5 s while refused as
    # busy: its fair turn in the replays' lane.
    asked, replay_tries = time.monotonic(), 0
    while True:
        replay_tries += 1
        replay_status, _, _ = request(port, "POST", "/api/replay?name=small.json",
                                      replay_text(100), {"X-Forwarded-For": "192.0.2.61"},
                                      timeout=600)
        if replay_status != 503 or time.monotonic() > stop + 180:
            break
        time.sleep(5)
    replay_s = time.monotonic() - asked
    for thread in crowd:
        thread.join()
    out["honest_upload_beside_checkers_crowd"] = (
        f"{'accepted' if statuses[-1:] == [200] else 'not accepted'} after "
        f"{waited:,.1f} s and {tries} tries ({statuses.count(503)} busy, "
        f"{statuses.count(429)} over its allowance); a fresh visitor's small replay beside the "
        f"crowd: {replay_status} after {replay_s:,.1f} s and {replay_tries} tries")
    if statuses[-1:] == [200]:
        accepted.append(f"patient{tries}")

    # 8. Slow readers of a large answer.
    pages.phase = "slow readers"
    large = firing_replay(20_000)  # about 12 MB of frames, under answer_mb
    # The server's own process: what it holds for answers in flight (its checkers build them
    # and are measured with the tree at the end).
    before = rss_mb(proc.pid, tree=False)
    readers = [post_raw(port, "/api/replay?name=l.json", large, f"198.20.0.{k + 1}")
               for k in range(8)]
    peak = before
    got = [b""] * len(readers)
    end = time.monotonic() + a.answer_seconds + 20
    while time.monotonic() < end:
        for k, sock in enumerate(readers):
            sock.setblocking(False)
            with contextlib.suppress(OSError):
                got[k] += sock.recv(1)
        peak = max(peak, rss_mb(proc.pid, tree=False))
        time.sleep(1.0)
    for sock in readers:
        sock.close()
    statuses = collections.Counter(g[9:12].decode() or "none" for g in got)
    out["slow_readers_memory_mb"] = (f"{before:,.0f} before, {peak:,.0f} at most, "
                                     f"{rss_mb(proc.pid, tree=False):,.0f} after "
                                     "answer_seconds (the server's process); answers "
                                     + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())))

    # 9. Many saved games on disk.
    pages.phase = "many replays"
    folder = root / "runs" / "replays"
    folder.mkdir(parents=True, exist_ok=True)
    one = replay_text(10)
    for k in range(a.replays):
        (folder / f"r{k:06d}.json").write_bytes(one)
    listings = [request(port, "GET", "/api/replays")[2] for _ in range(5)]
    time.sleep(6)
    listings += [request(port, "GET", "/api/replays")[2] for _ in range(5)]
    out["replays_listing_ms"] = (f"{a.replays:,} files: slowest {max(listings):,.0f}, median "
                                 f"{statistics.median(listings):,.0f} of {len(listings)}")

    # 10. Drop-while-finishing churn on both lanes.
    if a.churn:
        pages.phase = "churn"
        out.update(churn(port, a.churn))

    # 11. One address at the answers' budget.
    pages.phase = "one address's answers"
    out["one_address_answers"] = one_address_answers(port, 4)

    # 12. A tournament of many saved games.
    if a.tournament_games:
        pages.phase = "big tournament"
        out["big_tournament"] = big_tournament(root, port, a.tournament_games)

    # 13. A thousand addresses at the checkers, and newcomers.
    if a.addresses:
        pages.phase = "thousand addresses"
        out.update(thousand_crowd(port, a.addresses, a.crowd_seconds, a.newcomers,
                                  a.costly_steps))

    log = (root / "server.log").read_text()
    out["log_tracebacks"] = (f"{log.count('Traceback')} tracebacks, "
                             f"{log.count('InvalidStateError')} InvalidStateError")

    # The end: what the server holds, what was lost.
    out["phase_seconds"] = pages.phase_seconds()
    pages.stop = True
    pages.join()
    names = {p["name"] for p in json.loads(request(port, "GET", "/api/arena")[1])["players"]}
    out["lost"] = ", ".join(
        [f"{n} (accepted, not on the board)" for n in accepted if n not in names] +
        (["the server died"] if proc.poll() is not None else []) +
        ([f"{pages.statuses.count(500)} answers of 500"] if 500 in pages.statuses else [])
    ) or "nothing"
    out["server_descriptors_end"] = len(os.listdir(f"/proc/{proc.pid}/fd"))
    out["server_memory_mb_end"] = rss_mb(proc.pid)
    proc.terminate()
    proc.wait(30)
    out["server_log_lines"] = (root / "server.log").read_text().count("\n")
    out["games_frames_min"] = min(game_thread_result, default="-")
    every = [ms for _, ms in pages.times]
    out["pages"] = len(every)
    for phase in ("all", *dict.fromkeys(p for p, _ in pages.times)):
        ms = every if phase == "all" else [m for p, m in pages.times if p == phase]
        out[f"page_ms_{phase.replace(' ', '_')}"] = (
            f"p50 {percentile(ms, 50):,.1f}, p95 {percentile(ms, 95):,.1f}, "
            f"max {max(ms, default=0):,.1f} ({len(ms)})")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--players", type=int, default=1)
    p.add_argument("--watchers", type=int, default=1)
    p.add_argument("--refused", type=int, default=100, help="refused uploads from one address")
    p.add_argument("--idle", type=int, default=200,
                   help="idle connections and idle WebSockets from one address")
    p.add_argument("--trickle", type=int, default=50, help="uploads trickled a byte a second")
    p.add_argument("--hold", type=float, default=30.0,
                   help="seconds the idle and trickled sockets are held before counting")
    p.add_argument("--crowd", type=int, default=60, help="visitors uploading before the honest one")
    p.add_argument("--seconds", type=float, default=300.0,
                   help="at most this long waiting for the honest upload's rating")
    p.add_argument("--abandoned", type=int, default=16, help="costly checks whose senders leave")
    p.add_argument("--costly-steps", type=int, default=50_000,
                   help="decisions of the costly replays the two crowds post (phases 7 and 13)")
    p.add_argument("--busy", type=float, default=90.0,
                   help="seconds 20 addresses keep the checkers busy")
    p.add_argument("--answer-seconds", type=float, default=60.0,
                   help="the server's answer_seconds, which the slow readers outlast")
    p.add_argument("--replays", type=int, default=100_000, help="saved games written to disk")
    p.add_argument("--churn", type=float, default=600.0,
                   help="seconds of drop-while-finishing churn on both lanes (0: none)")
    p.add_argument("--tournament-games", type=int, default=100_000,
                   help="saved games of one tournament written to disk (0: none)")
    p.add_argument("--addresses", type=int, default=1000,
                   help="addresses keeping the replays' lane full (0: none)")
    p.add_argument("--crowd-seconds", type=float, default=180.0,
                   help="seconds those addresses keep at it")
    p.add_argument("--newcomers", type=int, default=10,
                   help="fresh visitors asking for a small replay beside them")
    p.add_argument("--limits", default="games_per_client=8",
                   help="the server's --limits (default: the defaults, with room for the games "
                        "this script plays from one address)")
    a = p.parse_args(argv)
    began = time.monotonic()
    out = run(a)
    print(f"web abuse: {a.players} players, {a.watchers} watchers; {a.refused} refused uploads, "
          f"{a.idle} idle connections and WebSockets, {a.trickle} trickled uploads, a crowd of "
          f"{a.crowd}; {time.monotonic() - began:,.0f} s on 127.0.0.1")
    for key, value in out.items():
        shown = f"{value:,.2f}" if isinstance(value, float) else str(value)
        print(f"  {key:<30} {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
