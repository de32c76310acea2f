"""The arena's pairings as Ray tasks on a two-node cluster started on this machine: the same
results, replays included, as the pairings played here, and the server's runner on Ray
records them as it does its own."""

from __future__ import annotations

import json
import time

import pytest

from tests.helpers import RAY_GROUP, http_request
from tests.rating.test_cluster import AUTH, cluster  # noqa: F401 (the fixture)

pytestmark = [RAY_GROUP, pytest.mark.slow]

ray = pytest.importorskip("ray")
pytest.importorskip("starlette")

AIM = (b"def strategy(obs):\n    if obs[34] > 0.5 and abs(obs[12]) < 0.2:\n        return 4\n"
       b"    return 1 if obs[12] > 0 else 2\n")
DRAW = {"games": 2, "wins_a": 1, "wins_b": 1, "draws": 0, "replays": []}


def test_arena_pairings_on_a_two_node_cluster_equal_the_local_ones(tmp_path, cluster,  # noqa: F811
                                                                   monkeypatch):
    from spacewar_ai.rating.arena import Arena, Confinement, pairing_on_ray, run_pairing
    from spacewar_ai.web.app import BackgroundServer
    from spacewar_ai.web.guard import Limits

    address, second = cluster
    for key, value in AUTH.items():
        monkeypatch.setenv(key, value)
    arena = Arena(tmp_path / "project" / "runs" / "arena", per_entrant=1)
    while (pair := arena.next_pairing()) is not None:  # the house's own, as if played
        arena.record(*pair, DRAW)
    arena.submit("aimer", "aim.py", AIM, "192.0.2.1", 5)
    players = {p["name"]: p for p in arena.players()}
    pairs = [(players["heuristic:hard"], players["aimer"]),
             (players["random"], players["aimer"])]
    expected = arena.next_pairing()  # what the server's runner plays first
    local = [run_pairing(a, b) for a, b in pairs]
    assert all(outcome[0] == "ok" and outcome[1]["replays"] for outcome in local)
    try:
        remote = ray.get([pairing_on_ray(a, b, Confinement(), 0.0, address) for a, b in pairs])
        assert remote == local
        # The server with its pairings on the cluster records the same games.
        srv = BackgroundServer(tmp_path / "project", backend=address,
                               limits=Limits(pairings_per_entrant=1))
        try:
            deadline = time.monotonic() + 600
            while True:
                board = json.loads(http_request(srv, "GET", "/api/arena")[1])
                mine = next(p for p in board["players"] if p["name"] == "aimer")
                if mine["games"] or time.monotonic() > deadline:
                    break
                time.sleep(1)
        finally:
            srv.stop()
    finally:
        ray.shutdown()
    played = run_pairing(*expected)[1]
    assert mine["games"] == played["games"]
    assert mine["score"] == played["wins_b"] + 0.5 * played["draws"]
    # The second node played some of them: a worker there ran the pairing's task.
    logs = (second / "session_latest" / "logs").glob("worker-*.out")
    assert any(":task_name:_pairing_task" in f.read_text() for f in logs)
