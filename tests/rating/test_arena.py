"""The arena's database and pairings without the server: an ONNX model and a strategy file
submitted, played in a process of their own, rated; refusals named."""

from __future__ import annotations

import time

import pytest

from spacewar_ai.rating.arena import HOUSE, PAIRING_GAMES, Arena, Confinement, run_pairing


def test_an_onnx_model_is_played_and_a_broken_one_refused(tmp_path):
    pytest.importorskip("onnxruntime")
    from spacewar_ai.pilots.onnx_export import export_onnx

    export_onnx("pretrained", tmp_path / "net.onnx")
    arena = Arena(tmp_path / "arena")
    arena.submit("exported", "net.onnx", (tmp_path / "net.onnx").read_bytes(), "1.1.1.1", 5)
    with pytest.raises(ValueError, match="^broken.onnx: not an ONNX model"):
        arena.submit("broken", "junk.onnx", b"not a model at all", "1.1.1.1", 5)
    arena.submit("swapped", "net.onnx", (tmp_path / "net.onnx").read_bytes(), "1.1.1.1", 5)
    players = {p["name"]: p for p in arena.players()}
    hard = players["heuristic:hard"]
    outcome = run_pairing(hard, players["exported"])
    assert outcome[0] == "ok" and outcome[1]["games"] == PAIRING_GAMES
    arena.record(hard, players["exported"], outcome[1])
    # A file changed on disk after it was checked is checked again before it plays.
    swapped = players["swapped"]
    (arena.submissions / swapped["file"]).write_bytes(b"not a model at all")
    outcome = run_pairing(hard, swapped)
    assert outcome[0] == "refused" and outcome[1] == swapped["id"]
    assert outcome[2] == "swapped: not an ONNX model (it does not parse)"
    arena.refuse(swapped, outcome[2], (hard, swapped))
    board = {row["name"]: row for row in arena.leaderboard()}
    assert board["exported"]["games"] == PAIRING_GAMES and board["exported"]["rating"] is not None
    assert board["swapped"]["status"] == "refused"
    assert board["swapped"]["note"] == "swapped: not an ONNX model (it does not parse)"
    assert swapped["spec"] not in arena.player_specs()
    while (pair := arena.next_pairing()) is not None:  # the rest of the queue, without it
        assert swapped["id"] not in (pair[0]["id"], pair[1]["id"])
        arena.record(*pair, {"games": 2, "wins_a": 1, "wins_b": 1, "draws": 0, "replays": []})


DRAW = {"games": 2, "wins_a": 1, "wins_b": 1, "draws": 0, "replays": []}


def test_the_house_plays_itself_once_then_each_entrant_its_share(tmp_path):
    """The house pilots' pairings anchor the scale; each entrant then plays `per_entrant`
    pairings, never the same opponent twice, so the queue grows with the entrants, not with
    their square."""
    arena = Arena(tmp_path / "arena", per_entrant=3)
    for k in range(4):
        arena.submit(f"spinner{k}", "s.py", b"def strategy(obs):\n    return 1\n",
                     f"2.2.2.{k}", 5)
    n_house = len(HOUSE)
    assert arena.pairings_left() == n_house * (n_house - 1) // 2 + 4 * 3
    seen, order = set(), []
    while (pair := arena.next_pairing()) is not None:
        a, b = pair
        assert (a["id"], b["id"]) not in seen and a["id"] < b["id"]
        seen.add((a["id"], b["id"]))
        order.append(pair)
        arena.record(a, b, DRAW)
    assert all(a["kind"] == b["kind"] == "house" for a, b in order[:n_house * (n_house - 1) // 2])
    pairings = {p["name"]: p["pairings"] for p in arena.leaderboard()}
    assert all(pairings[f"spinner{k}"] >= 3 for k in range(4)), pairings
    assert len(seen) <= n_house * (n_house - 1) // 2 + 4 * 3 and arena.pairings_left() == 0


def test_an_entrant_meets_the_opponent_nearest_its_rating(tmp_path):
    """Opponents are chosen for what a game can say: an entrant that beat everyone so far
    meets the strongest player next, and a new entrant's first opponent is the one nearest the
    middle of the board."""
    arena = Arena(tmp_path / "arena", per_entrant=4)
    while (pair := arena.next_pairing()) is not None:  # a house ladder: the later, the stronger
        a, b = pair
        arena.record(a, b, {"games": 20, "wins_a": 2, "wins_b": 18, "draws": 0, "replays": []})
    board = {p["name"]: p["rating"] for p in arena.leaderboard()}
    ranked = sorted(board, key=board.get)
    arena.submit("champ", "s.py", b"def strategy(obs):\n    return 1\n", "4.4.4.4", 5)
    a, b = arena.next_pairing()
    assert b["name"] == "champ" and a["name"] == ranked[len(ranked) // 2]
    arena.record(a, b, {"games": 20, "wins_a": 0, "wins_b": 20, "draws": 0, "replays": []})
    a, b = arena.next_pairing()
    assert b["name"] == "champ" and a["name"] == ranked[-1]


def test_a_new_upload_plays_before_older_entrants_play_again(tmp_path):
    """The entrant with the fewest pairings goes next: an upload that arrives after a crowd
    plays its first pairing before any of the crowd plays its second, and its rating is shown
    (provisional) from that first pairing."""
    arena = Arena(tmp_path / "arena", per_entrant=3)
    while (pair := arena.next_pairing()) is not None:
        arena.record(*pair, DRAW)
    source = b"def strategy(obs):\n    return 1\n"
    for k in range(6):
        arena.submit(f"crowd{k}", "s.py", source, f"198.51.100.{k}", 5)
    for _ in range(3):  # some of the crowd has played once
        arena.record(*arena.next_pairing(), DRAW)
    arena.submit("honest", "s.py", source, "192.0.2.1", 5)
    first = arena.next_pairing()
    assert "honest" in (first[0]["name"], first[1]["name"])
    arena.record(*first, DRAW)
    row = next(p for p in arena.leaderboard() if p["name"] == "honest")
    assert row["rating"] is not None and row["ci95"] > 0 and row["provisional"]


@pytest.mark.parametrize("name, file, data, says", [
    ("", "a.py", b"def strategy(obs):\n    return 1\n", "1-40 letters"),
    ("ok", "a.exe", b"MZ", "submit a strategy file"),
    ("ok", "a.py", b"", "empty"),
    ("ok", "a.py", b"\xff\xfe", "not UTF-8"),
    ("ok", "a.py", b"import os\ndef strategy(obs):\n    return 1\n", "an import other than"),
])
def test_a_refused_submission_is_one_line(tmp_path, name, file, data, says):
    with pytest.raises(ValueError, match=says):
        Arena(tmp_path / "arena").submit(name, file, data, "3.3.3.3", 5)


def _arena_with(tmp_path, *builds):
    """An arena with one ONNX submission per (name, builder) from address 9.9.9.9."""
    arena = Arena(tmp_path / "arena")
    for name, build in builds:
        arena.submit(name, "m.onnx", build(tmp_path / f"{name}.onnx").read_bytes(), "9.9.9.9", 9)
    players = {p["name"]: p for p in arena.players()}
    return arena, players


def test_a_memory_bomb_and_a_slow_model_are_confined_and_refused(tmp_path):
    pytest.importorskip("onnxruntime")
    from tests import hostile_onnx as hostile

    arena, players = _arena_with(tmp_path, ("bomb", hostile.memory_bomb), ("slow", hostile.slow))
    house = players["random"]
    outcome = run_pairing(house, players["bomb"], Confinement(memory_mb=2048))
    assert outcome[:2] == ("refused", players["bomb"]["id"])
    assert outcome[2].startswith("bomb: the model failed while deciding (")
    outcome = run_pairing(house, players["slow"], Confinement(decision_ms=50))
    assert outcome == ("refused", players["slow"]["id"],
                       "slow: a decision over the limit of 50 ms")


def test_one_long_operator_and_a_slow_load_are_stopped_at_their_deadlines(tmp_path):
    """The runtime stops a run only between operators: one huge MatMul runs on past the
    decision's deadline, so the pairing's process is ended a grace period after it, with the
    model refused after that first decision. Loading the model has a deadline of its own."""
    pytest.importorskip("onnxruntime")
    from tests import hostile_onnx as hostile

    # One integer MatMul: many seconds on any host, far past the grace, after inputs that fill
    # in a small part of the deadline even on a loaded host, so the runtime cannot stop the run
    # between operators before the long one starts.
    arena, players = _arena_with(tmp_path, ("matmul", hostile.one_long_operator),
                                 ("heavy", hostile.slow_to_load))
    house = players["random"]
    began = time.monotonic()
    outcome = run_pairing(house, players["matmul"], Confinement(decision_ms=2000))
    assert outcome == ("refused", players["matmul"]["id"],
                       "matmul: a decision ran past the limit of 2000 ms and was stopped at "
                       "4000 ms"), outcome
    assert time.monotonic() - began < 120  # a safety net: not the minutes of many decisions
    outcome = run_pairing(house, players["heavy"], Confinement(load_seconds=0.05))
    assert outcome == ("refused", players["heavy"]["id"],
                       "heavy: its model took over 0.05 s to load"), outcome
    # With time to load (and to decide: its decisions are slow too), the model plays.
    outcome = run_pairing(house, players["heavy"], Confinement(decision_ms=30_000))
    assert outcome[0] == "ok", outcome


def test_a_pairing_deadline_counts_the_time_spent_before_a_restart(tmp_path):
    arena = Arena(tmp_path / "arena")
    a, b = arena.next_pairing()
    assert arena.spent(a, b) == 0.0
    arena.charge(a, b, 42.5)  # written every few seconds while the pairing runs
    assert Arena(tmp_path / "arena").spent(a, b) == 42.5  # what a restarted server reads
    limits = Confinement(seconds=40.0)
    assert run_pairing(a, b, limits, arena.spent(a, b)) == ("timeout",)
    arena.refuse(b, "its pairing took too long", (a, b))
    assert arena.spent(a, b) == 0.0 and b["id"] not in {
        p["id"] for p in arena.players() if p["status"] != "refused"}


def test_the_next_pairing_is_fair_between_submitters(tmp_path):
    arena = Arena(tmp_path / "arena")
    while (pair := arena.next_pairing()) is not None:  # the house pilots' own pairings
        arena.record(*pair, DRAW)
    source = b"def strategy(obs):\n    return 1\n"
    for k in range(3):
        arena.submit(f"many{k}", "s.py", source, "6.6.6.6", 9)
    arena.submit("late", "s.py", source, "7.7.7.7", 9)
    client = {p["id"]: p["client"] for p in arena.players()}

    def entrant(pair):
        return next(client[p["id"]] for p in pair if p["kind"] != "house")

    first = arena.next_pairing()
    busy = frozenset({(first[0]["id"], first[1]["id"])})
    second = arena.next_pairing(busy)  # the other runner: not the busy address again
    assert {entrant(first), entrant(second)} == {"6.6.6.6", "7.7.7.7"}
    arena.record(*first, DRAW)
    arena.record(*second, DRAW)
    # Each address has had a pairing this hour; of the entrants with none, 6.6.6.6's go next.
    assert entrant(arena.next_pairing()) == "6.6.6.6"


def test_an_address_over_its_attempts_is_refused_before_its_upload_is_read(tmp_path):
    """Uploads count when they arrive, refused ones too: once an address has tried its
    allowance of attempts, or had its submissions accepted, the next is refused at once."""
    from spacewar_ai.rating.arena import OverAllowance

    arena = Arena(tmp_path / "arena")
    # One refused because the server was busy is taken back: it costs the visitor nothing.
    arena.forgive(arena.attempt("5.5.5.5", 3, 2))
    for _ in range(3):
        arena.attempt("5.5.5.5", 3, 2)
    with pytest.raises(OverAllowance, match=r"3 uploads from your address.*allowed \(3\)") as exc:
        arena.attempt("5.5.5.5", 3, 2)
    assert "--limits" not in str(exc.value)  # the server's words are the server's to add
    arena.attempt("5.5.5.6", 3, 2)  # another address has its own
    arena.submit("one", "s.py", b"def strategy(obs):\n    return 1\n", "5.5.5.7", 1)
    with pytest.raises(OverAllowance, match=r"1 submissions .* allowed \(1\)"):
        arena.attempt("5.5.5.7", 3, 1)
