"""The arena's matchmaking and board at scale, with game results drawn from known strengths
instead of played (the server's own Arena, database and Bradley-Terry fit; no pilot runs):

1. --entrants N pilots of known ratings (normal around 1500, sd 200) join the five house pilots
   (1200 to 1800) and are paired as the server pairs them (Arena.next_pairing), each pairing 20
   games won with the probability the ratings give. Printed: after each number of pairings, the
   mean 95% interval of an entrant's rating, how often it holds the true rating (both scales
   centred on the players' mean), and the pairings played in all against what every pair
   would have cost.
2. --board N entrants with 8 pairings each in the database, and a server on it: the latency of
   GET /api/arena (median, 95th percentile, slowest of 50), the fit that makes the board, timed
   once.

    python scripts/arena_scale.py --entrants 200 --board 1000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HOUSE_TRUE = {"random": 1200.0, "heuristic:easy": 1350.0, "heuristic:medium": 1500.0,
              "heuristic:hard": 1650.0, "pretrained": 1800.0}
SOURCE = b"def strategy(obs):\n    return 1\n"


def _result(rng, ra: float, rb: float, games: int = 20) -> dict:
    wins_b = int(rng.binomial(games, 1.0 / (1.0 + 10 ** ((ra - rb) / 400.0))))
    return {"games": games, "wins_a": games - wins_b, "wins_b": wins_b, "draws": 0,
            "replays": []}


def intervals(entrants: int, root: Path, seed: int = 0) -> list[tuple]:
    """(pairings, games, mean 95% interval, share holding the true rating, entrants) at each
    count of pairings, and the pairings played in all; the arena's database under `root`."""
    from spacewar_ai.rating.arena import Arena

    rng = np.random.default_rng(seed)
    arena = Arena(root / "arena")
    true = {p["id"]: HOUSE_TRUE[p["name"]] for p in arena.players()}
    for k in range(entrants):
        row = arena.add(f"e{k}", "strategy", SOURCE, f"10.0.{k // 250}.{k % 250}", 10**6)
        true[row["id"]] = float(rng.normal(1500.0, 200.0))
    seen: dict[int, list] = {}
    played = 0
    while (pair := arena.next_pairing()) is not None:
        a, b = pair
        arena.record(a, b, _result(rng, true[a["id"]], true[b["id"]]))
        played += 1
        board = arena.leaderboard()
        rated = [r for r in board if r["rating"] is not None]
        est_mean = np.mean([r["rating"] for r in rated])
        true_mean = np.mean([true[r["id"]] for r in rated])
        for r in board:
            if r["kind"] != "house" and r["id"] in (a["id"], b["id"]):
                error = (r["rating"] - est_mean) - (true[r["id"]] - true_mean)
                seen.setdefault(r["pairings"], []).append((r["ci95"], abs(error) <= r["ci95"]))
    rows = [(k, 20 * k, float(np.mean([c for c, _ in v])), float(np.mean([h for _, h in v])),
             len(v)) for k, v in sorted(seen.items())]
    return rows, played


def board_latency(entrants: int, root: Path, seed: int = 0) -> dict:
    """GET /api/arena over an arena of `entrants` entrants with 8 pairings each, served from
    the project folder `root`."""
    from spacewar_ai.rating.arena import Arena
    from spacewar_ai.web.app import BackgroundServer
    from tests.helpers import http_request

    rng = np.random.default_rng(seed)
    arena = Arena(root / "runs" / "arena")
    players = arena.players()
    for k in range(entrants):
        players.append(arena.add(f"e{k}", "strategy", SOURCE, f"10.1.{k // 250}.{k % 250}",
                                 10**6))
    ids = [p["id"] for p in players]
    true = {i: float(rng.normal(1500.0, 200.0)) for i in ids}
    rows = {p["id"]: p for p in arena.players()}
    done = set()
    for i in ids[len(HOUSE_TRUE):]:
        for j in rng.choice([x for x in ids if x != i], size=8, replace=False):
            a, b = sorted((int(i), int(j)))
            if (a, b) not in done:
                done.add((a, b))
                arena.record(rows[a], rows[b], _result(rng, true[a], true[b]))
    began = time.perf_counter()
    arena.leaderboard()
    fit = time.perf_counter() - began
    server = BackgroundServer(root)
    try:
        http_request(server, "GET", "/api/arena")  # the server's first fit
        times = []
        for _ in range(50):
            began = time.perf_counter()
            status, body = http_request(server, "GET", "/api/arena")
            times.append((time.perf_counter() - began) * 1000)
            assert status == 200 and len(json.loads(body)["players"]) == len(ids)
    finally:
        server.stop()
    times.sort()
    return {"entrants": entrants, "pairings": len(done), "fit_seconds": fit,
            "board_ms_p50": statistics.median(times), "board_ms_p95": times[int(0.95 * 50)],
            "board_ms_max": times[-1]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--entrants", type=int, default=200,
                   help="entrants paired as the server pairs them (0: skip)")
    p.add_argument("--board", type=int, default=1000,
                   help="entrants in the database whose board is timed (0: skip)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arena-scale-") as tmp:
        return report(a, Path(tmp))


def report(a, tmp: Path) -> int:
    if a.entrants:
        rows, played = intervals(a.entrants, tmp / "matchmaking", a.seed)
        every = (a.entrants + 5) * (a.entrants + 4) // 2
        print(f"matchmaking: {a.entrants} entrants and the house, {played:,} pairings played "
              f"(every pair: {every:,})")
        print("  pairings  games  mean 95% interval  holds the true rating  entrants")
        for k, games, ci, held, n in rows:
            print(f"  {k:>8}  {games:>5}  {ci:>17.0f}  {held:>20.0%}  {n:>8}")
    if a.board:
        out = board_latency(a.board, tmp / "board", a.seed)
        print(f"board: {out['entrants']:,} entrants, {out['pairings']:,} pairings; fit "
              f"{out['fit_seconds']:.2f} s; GET /api/arena median {out['board_ms_p50']:.1f} ms, "
              f"95th percentile {out['board_ms_p95']:.1f} ms, slowest {out['board_ms_max']:.1f} "
              "ms (50 requests)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
