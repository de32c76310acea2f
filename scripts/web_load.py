"""Load on the browser app: N players and M watchers over WebSockets, a stream of arena
submissions and page requests, against a server on 127.0.0.1 for a bounded time; prints the
pages' latency percentiles, the frames each game got, games and pairings completed, and the
memory of the server with its workers.

    python scripts/web_load.py --players 4 --watchers 4 --seconds 60
    python scripts/web_load.py --players 2 --watchers 2 --seconds 90 --hostile

Every request goes to 127.0.0.1 (a server this script starts over a temporary project), and the
script stops by itself after --seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STRATEGY = "def strategy(obs):\n    return {action}\n"
MIN_FRAMES = 10  # every game that starts is watched for at least this many frames
# Seconds inside one C call at every decision, where no timer can interrupt it.
STUCK = ("import math\n\ndef strategy(obs):\n    math.factorial(700000 + int(obs[0] * 0))\n"
         "    return 0\n")


def _rss_mb(pid: int) -> float:
    """Resident memory of pid and all its descendants, in MB (Linux /proc)."""
    children: dict[int, list[int]] = {}
    rss = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            status = open(f"/proc/{entry}/status").read()
        except OSError:
            continue
        children.setdefault(int(stat[1]), []).append(int(entry))
        line = next((x for x in status.splitlines() if x.startswith("VmRSS:")), "VmRSS: 0 kB")
        rss[int(entry)] = int(line.split()[1]) / 1024
    total, stack = 0.0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0.0)
        stack.extend(children.get(p, []))
    return total


def _get(port: int, path: str, method="GET", body=b"", headers=None) -> tuple[int, float]:
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, body=body, headers=headers or {})
    status = conn.getresponse().status
    conn.close()
    return status, (time.perf_counter() - began) * 1000


async def _game(url: str, start: dict, until: float, stats: dict, keys: bool,
                wait_for_a_frame: bool = True) -> None:
    import websockets

    try:
        async with websockets.connect(url, open_timeout=120) as ws:
            await ws.send(json.dumps(start))
            reply = json.loads(await ws.recv())
            if reply["type"] != "start":
                stats["refused"] += 1
                return
            stats["started"] += 1
            last = time.perf_counter()
            gaps = []
            # At least MIN_FRAMES frames, however late: on a loaded host a game's worker may
            # take longer to start than the whole window, and a game that never showed its
            # frames is a failure, not a figure of zero.
            while time.monotonic() < until or (wait_for_a_frame and len(gaps) < MIN_FRAMES):
                if keys and random.random() < 0.2:
                    await ws.send(json.dumps({"type": "key", "key": random.choice(
                        ["left", "right", "thrust", "fire"]), "down": random.random() < 0.5}))
                msg = json.loads(await asyncio.wait_for(ws.recv(), 300))
                if msg["type"] == "frame":
                    now = time.perf_counter()
                    gaps.append((now - last) * 1000)
                    last = now
            stats["frames"].append(len(gaps))
            stats["gaps"].extend(gaps[1:])
    except Exception as exc:  # a refused or dropped socket is a figure, not a crash
        stats["errors"].append(type(exc).__name__)


def _hostile_uploads(folder: Path) -> dict[str, bytes]:
    """A slow ONNX model and a memory bomb (tests/hostile_onnx.py), as a visitor would upload."""
    from tests import hostile_onnx

    return {name: build(folder / f"{name}.onnx").read_bytes()
            for name, build in (("slow", hostile_onnx.slow), ("bomb", hostile_onnx.memory_bomb))}


async def run(players: int, watchers: int, seconds: float, submit_every: float,
              stuck: bool = False, hostile: bool = False) -> dict:
    from spacewar_ai.web.app import BackgroundServer
    from spacewar_ai.web.guard import Limits

    root = Path(tempfile.mkdtemp(prefix="web-load-"))
    (root / "stuck.py").write_text(STUCK)
    n = max(players + watchers + stuck, 1)  # the limits are > 0 even when no game is played
    server = BackgroundServer(root, limits=Limits(
        games_per_client=n, games_in_all=n, websockets_per_address=n, submissions_per_hour=10**6,
        attempts_per_hour=10**6))
    port = int(server.url.rsplit(":", 1)[1])
    for name, data in (_hostile_uploads(root) if hostile else {}).items():
        query = urlencode({"name": name, "file": f"{name}.onnx"})
        await asyncio.to_thread(_get, port, f"/api/arena/submit?{query}", "POST", data)
    ws_url = server.url.replace("http", "ws") + "/ws/live"
    stats = {"started": 0, "refused": 0, "frames": [], "gaps": [], "errors": []}
    until = time.monotonic() + seconds
    memory = [_rss_mb(os.getpid())]
    tasks = [asyncio.ensure_future(_game(ws_url, {"mode": "play", "difficulty": "medium"},
                                         until, stats, True)) for _ in range(players)]
    tasks += [asyncio.ensure_future(_game(ws_url, {"mode": "watch", "a": "pretrained",
                                                   "b": "heuristic:hard", "speed": 2},
                                          until, stats, False)) for _ in range(watchers)]
    stuck_stats = {"started": 0, "refused": 0, "frames": [], "gaps": [], "errors": []}
    if stuck:
        tasks.append(asyncio.ensure_future(_game(
            ws_url, {"mode": "watch", "a": "strategy:stuck.py", "b": "idle"}, until,
            stuck_stats, False, wait_for_a_frame=False)))
    latencies, submitted, k = [], 0, 0
    next_submit = time.monotonic()
    while time.monotonic() < until:
        for path in ("/api/pilots", "/api/arena", "/play"):
            status, ms = await asyncio.to_thread(_get, port, path)
            latencies.append(ms)
        if submit_every and time.monotonic() >= next_submit:
            k += 1
            query = urlencode({"name": f"load{k}", "file": f"load{k}.py"})
            status, _ = await asyncio.to_thread(
                _get, port, f"/api/arena/submit?{query}", "POST",
                STRATEGY.format(action=k % 6).encode())
            submitted += status == 200
            next_submit += submit_every
        memory.append(_rss_mb(os.getpid()))
        await asyncio.sleep(0.2)
    await asyncio.gather(*tasks)
    board = json.loads(http_get_body(port, "/api/arena"))
    pairings = sum(p["games"] for p in board["players"]) // 2 // 20
    mine = [p for p in board["players"] if p["name"].startswith("load")]
    refused = [p for p in board["players"] if p["name"] in ("slow", "bomb")
               and p["status"] == "refused"]
    server.stop()
    q = statistics.quantiles(latencies, n=100)
    gaps = sorted(stats["gaps"]) or [0.0]
    return {"players": players, "watchers": watchers, "seconds": seconds,
            "page_ms_p50": q[49], "page_ms_p95": q[94], "page_ms_p99": q[98],
            "requests": len(latencies), "games_started": stats["started"],
            "games_refused": stats["refused"], "socket_errors": len(stats["errors"]),
            "frames_per_game_min": min(stats["frames"] or [0]),
            "frame_gap_ms_p50": gaps[len(gaps) // 2],
            "frame_gap_ms_p99": gaps[int(len(gaps) * 0.99)],
            "page_ms_max": max(latencies),
            "submissions": submitted, "pairings_played": pairings,
            "submissions_rated": sum(p["status"] == "rated" for p in mine),
            "hostile_refused": f"{len(refused)} of 2" if hostile else "-",
            "stuck_game_frames": sum(stuck_stats["frames"]) if stuck else "-",
            "memory_mb_start": memory[0], "memory_mb_peak": max(memory)}


def http_get_body(port: int, path: str) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    body = conn.getresponse().read()
    conn.close()
    return body


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--players", type=int, default=4)
    p.add_argument("--watchers", type=int, default=4)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--submit-every", type=float, default=10.0,
                   help="seconds between arena submissions (0: none)")
    p.add_argument("--stuck", action="store_true",
                   help="one more game watched whose strategy spends seconds in C code at every "
                        "decision")
    p.add_argument("--hostile", action="store_true",
                   help="a slow ONNX model and a memory bomb submitted to the arena first")
    a = p.parse_args(argv)
    out = asyncio.run(run(a.players, a.watchers, a.seconds, a.submit_every, a.stuck,
                          a.hostile))
    print(f"web load: {a.players} players, {a.watchers} watchers (x2 speed)"
          f"{', a stuck pilot' if a.stuck else ''}"
          f"{', a slow model and a memory bomb queued' if a.hostile else ''}, a submission "
          f"every {a.submit_every:g} s, "
          f"{a.seconds:g} s on 127.0.0.1")
    for key, value in out.items():
        print(f"  {key:<22} {value:,.1f}" if isinstance(value, float) else
              f"  {key:<22} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
