"""The arena's pairings as Ray tasks: `spacewar-ai --serve --ray-address HEAD` over a two-node
cluster started on this machine plays an entrant's pairing there, and records the very games
(results and replays, bit for bit) that the same pairing gives played here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.helpers import RAY_GROUP, ROOT, house_as_if_played
from tests.rating.test_cluster import AUTH, _free_port, cluster  # noqa: F401 (the fixture)

pytestmark = [RAY_GROUP, pytest.mark.slow]

pytest.importorskip("ray")
pytest.importorskip("starlette")

AIM = (b"def strategy(obs):\n    if obs[34] > 0.5 and abs(obs[12]) < 0.2:\n        return 4\n"
       b"    return 1 if obs[12] > 0 else 2\n")


def _get(port: int, path: str):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, response.read()


def test_arena_pairings_on_a_two_node_cluster_equal_the_local_ones(tmp_path,
                                                                   cluster):  # noqa: F811
    from spacewar_ai.rating.arena import Arena, run_pairing

    address, second = cluster
    project = tmp_path / "project"
    house_as_if_played(project)
    arena = Arena(project / "runs" / "arena", per_entrant=1)
    arena.submit("aimer", "aim.py", AIM, "192.0.2.1", 5)
    arena.submit("spinner", "spin.py", b"def strategy(obs):\n    return 1\n", "192.0.2.2", 5)
    # What the server's two runners play at once, one on each node: each entrant's pairing.
    first = arena.next_pairing()
    expected = [first, arena.next_pairing(frozenset({(first[0]["id"], first[1]["id"])}))]
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "spacewar_ai", "--serve", "--port", str(port), "--ray-address",
         address, "--limits", "pairings_per_entrant=1"], cwd=project,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, **AUTH, "RAY_worker_niceness": "0", "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 600
        rows = {}
        while not all(rows.get(n, {}).get("games") for n in ("aimer", "spinner")):
            assert server.poll() is None and time.monotonic() < deadline, server.stdout.read()
            try:
                rows = {p["name"]: p for p in json.loads(_get(port, "/api/arena")[1])["players"]}
            except OSError:
                pass  # not listening yet
            time.sleep(1)
    finally:
        server.terminate()
        server.wait(60)
    for a, b in expected:  # the same pairings, played here
        played = run_pairing(a, b)[1]
        assert rows[b["name"]]["games"] == played["games"]
        assert rows[b["name"]]["score"] == played["wins_b"] + 0.5 * played["draws"]
        saved = sorted((project / "runs" / "arena" / "replays").glob(
            f"*-{a['id']}v{b['id']}-g*.json"))
        remote = [json.loads(p.read_text()) for p in saved]
        assert [(r["actions"], r["final_state"], r["seed"]) for r in remote] == \
            [(r["actions"], r["final_state"], r["seed"]) for r in played["replays"]]
    # The second node played one: a worker there ran a pairing's task.
    logs = (second / "session_latest" / "logs").glob("worker-*.out")
    assert any(":task_name:_in_task" in f.read_text() for f in logs)
