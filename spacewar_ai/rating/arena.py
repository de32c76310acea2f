"""The arena: pilots that visitors submit (a strategy file or an ONNX model), played against the
house pilots and each other, rated by Bradley-Terry with 95% intervals.

Everything lives in one folder (`runs/arena/` of the project the server runs in): `arena.db`, a
SQLite database in WAL mode (the operator backs it up with `sqlite3 arena.db ".backup copy.db"`
while the server runs), `submissions/` (the files, named by id and content hash) and `replays/`
(two saved games of every pairing). Players and the results of pairings are rows; the pairings
still to play are those with no row yet, so a server that stops mid-queue picks up where it was,
and nothing is played twice.

A submission is checked before it is queued: its name, its size, the submitter's hourly allowance
(`web.guard.Limits`), for a strategy file the sandbox's static check and for an ONNX model
`pilots.onnx_check` (no external data, standard policy operators only, bounded tensors); nothing
of either runs in the server. Each pairing is `PAIRING_GAMES` games with sides swapped, seeded by
the two players' ids, so the same arena plays the same games.

Each pairing plays in a process of its own (`run_pairing`), confined by `Confinement`: its
address space and CPU time are capped by the kernel, an ONNX model's every decision has a
deadline (a model over it too often, or failing, gives up: its player is refused), and the
pairing has a wall-clock deadline whose time spent is kept in the database (`running`), so a
server restarted mid-pairing does not give a slow submission its time again. A player refused is
never played again. Which pairing comes next is fair between submitters (`next_pairing`).

`spacewar-ai --tournament --players arena:runs/arena/arena.db,heuristic:hard` reads the same
players as specs.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..util.files import hide_paths

HOUSE = ("random", "heuristic:easy", "heuristic:medium", "heuristic:hard", "pretrained")
PAIRING_GAMES = 20
KEPT_REPLAYS = 2
NAME_RULE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,39}$")
KINDS = {".py": "strategy", ".onnx": "onnx"}

SCHEMA = """
CREATE TABLE IF NOT EXISTS players (
    id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, spec TEXT NOT NULL, kind TEXT NOT NULL,
    file TEXT, sha256 TEXT, client TEXT, created REAL NOT NULL,
    status TEXT NOT NULL, note TEXT DEFAULT '');
CREATE TABLE IF NOT EXISTS pairings (
    a INTEGER NOT NULL, b INTEGER NOT NULL, games INTEGER NOT NULL, wins_a INTEGER NOT NULL,
    wins_b INTEGER NOT NULL, draws INTEGER NOT NULL, replays TEXT NOT NULL, played REAL NOT NULL,
    PRIMARY KEY (a, b));
CREATE TABLE IF NOT EXISTS running (
    a INTEGER NOT NULL, b INTEGER NOT NULL, spent REAL NOT NULL, PRIMARY KEY (a, b));
"""
TICK_SECONDS = 5.0  # how often a running pairing's time spent is written down


@dataclass(frozen=True)
class Confinement:
    """What one pairing's process may use (the server's `--limits` give them)."""

    memory_mb: int = 2048  # address space; a pairing with the network pilots maps about 1.3 GB
    cpu_seconds: int = 1800
    decision_ms: float = 250.0  # an ONNX model's decision
    seconds: float = 900.0  # the pairing's wall-clock time, across restarts of the server
    load_seconds: float = 20.0  # an ONNX model's loading (the runtime builds its session)


class Arena:
    """The arena's database and folders under `folder`."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder).resolve()
        self.submissions = self.folder / "submissions"
        self.replays = self.folder / "replays"
        self.submissions.mkdir(parents=True, exist_ok=True)
        self.replays.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "arena.db"
        with self._db() as db:
            db.executescript(SCHEMA)
            for spec in HOUSE:
                db.execute("INSERT OR IGNORE INTO players (name, spec, kind, created, status) "
                           "VALUES (?, ?, 'house', ?, 'ready')", (spec, spec, time.time()))

    def _db(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.row_factory = sqlite3.Row
        return _Closing(db)

    # --- submissions ----------------------------------------------------------------------------
    def submit(self, name: str, filename: str, data: bytes, client: str,
               per_hour: int) -> dict[str, Any]:
        """Check and queue a submission; ValueError (one line) if it is refused."""
        from ..pilots.onnx_check import onnx_problems
        from ..pilots.sandbox import StrategyError, validate_source
        from ..util.files import atomic_write_bytes

        name = str(name).strip()
        if not NAME_RULE.match(name):
            raise ValueError(f"name {name[:40]!r}: 1-40 letters, digits, spaces, '_', '.' or "
                             "'-', starting with a letter or digit")
        kind = KINDS.get(Path(str(filename)).suffix.lower())
        if kind is None:
            raise ValueError(f"{Path(str(filename)).name[:60]}: submit a strategy file (.py) or "
                             "an ONNX model (.onnx)")
        if not data:
            raise ValueError(f"{name}: the file is empty")
        # The cheap refusals before any parsing: a burst over the allowance costs two reads.
        with self._db() as db:
            self._admissible(db, name, client, per_hour)
        if kind == "strategy":
            try:
                validate_source(data.decode("utf-8-sig"), f"{name}.py")
            except UnicodeDecodeError:
                raise ValueError(f"{name}.py: not UTF-8 text") from None
            except StrategyError as exc:
                raise ValueError(exc.public) from None
        else:
            try:
                problems = onnx_problems(data)
            except ImportError:
                raise ValueError("this server takes no ONNX models (its onnx package is not "
                                 "installed); submit a strategy file") from None
            if problems:
                raise ValueError(f"{name}.onnx: {problems[0]}")
        digest = hashlib.sha256(data).hexdigest()
        with self._db() as db:
            # One writer at a time from the count to the insert: an address's allowance holds
            # against submissions that arrive together.
            db.execute("BEGIN IMMEDIATE")
            try:
                self._admissible(db, name, client, per_hour)
            except ValueError:
                db.execute("ROLLBACK")
                raise
            suffix = ".py" if kind == "strategy" else ".onnx"
            cur = db.execute("INSERT INTO players (name, spec, kind, sha256, client, created, "
                             "status) VALUES (?, '', ?, ?, ?, ?, 'queued')",
                             (name, kind, digest, client, time.time()))
            pid = cur.lastrowid
            file = self.submissions / f"{pid}-{digest[:12]}{suffix}"
            atomic_write_bytes(file, lambda f: f.write(data))
            spec = f"{kind}:{file}"
            db.execute("UPDATE players SET spec = ?, file = ? WHERE id = ?",
                       (spec, file.name, pid))
            db.execute("COMMIT")
        return {"id": pid, "name": name, "kind": kind, "status": "queued"}

    @staticmethod
    def _admissible(db, name: str, client: str, per_hour: int) -> None:
        """Refuse a taken name or an address over its hourly allowance (ValueError)."""
        if db.execute("SELECT 1 FROM players WHERE name = ?", (name,)).fetchone():
            raise ValueError(f"name {name!r} is taken: choose another")
        recent = db.execute("SELECT COUNT(*) FROM players WHERE client = ? AND created > ?",
                            (client, time.time() - 3600)).fetchone()[0]
        if recent >= per_hour:
            raise ValueError(f"{recent} submissions from your address in the last hour, the "
                             f"most allowed (--limits submissions_per_hour={per_hour})")

    # --- pairings -------------------------------------------------------------------------------
    def players(self) -> list[dict[str, Any]]:
        with self._db() as db:
            return [dict(r) for r in db.execute("SELECT * FROM players ORDER BY id")]

    def next_pairing(self, busy: frozenset = frozenset()) -> tuple[dict, dict] | None:
        """The next pairing to play, none of `busy` ((a, b) ids being played now): for each
        player its first unplayed opponent, oldest first; of those, the submitter with the fewest
        pairings being played now, then with the fewest played in the last hour, then the oldest
        player, so that one address's many submissions cannot hold the queue. Refused players
        take no part."""
        players = [p for p in self.players() if p["status"] != "refused"]
        with self._db() as db:
            played = {(r["a"], r["b"]) for r in db.execute("SELECT a, b FROM pairings")}
            lately = {r[0]: r[1] for r in db.execute(
                "SELECT players.client, COUNT(*) FROM pairings JOIN players ON players.id = "
                "pairings.b WHERE pairings.played > ? GROUP BY players.client",
                (time.time() - 3600,))}
        taken = played | set(busy)
        client = {p["id"]: p["client"] for p in players}
        now: dict = {}
        for _, b in busy:
            now[client.get(b)] = now.get(client.get(b), 0) + 1
        candidates = []
        for later in players:
            for earlier in players:
                if earlier["id"] >= later["id"]:
                    break
                if (earlier["id"], later["id"]) not in taken:
                    who = later["client"]
                    candidates.append(((now.get(who, 0), lately.get(who, 0), later["id"]),
                                       earlier, later))
                    break
        return min(candidates, key=lambda c: c[0])[1:] if candidates else None

    def pairings_left(self) -> int:
        """Pairings still to play between players not refused."""
        ids = [p["id"] for p in self.players() if p["status"] != "refused"]
        with self._db() as db:
            played = {(r["a"], r["b"]) for r in db.execute("SELECT a, b FROM pairings")}
        return sum((a, b) not in played for i, b in enumerate(ids) for a in ids[:i])

    def spent(self, a: dict, b: dict) -> float:
        """Seconds a pairing has run so far, across restarts of the server."""
        with self._db() as db:
            row = db.execute("SELECT spent FROM running WHERE a = ? AND b = ?",
                             (a["id"], b["id"])).fetchone()
        return float(row[0]) if row else 0.0

    def charge(self, a: dict, b: dict, spent: float) -> None:
        with self._db() as db:
            db.execute("INSERT OR REPLACE INTO running VALUES (?, ?, ?)", (a["id"], b["id"], spent))

    def record(self, a: dict, b: dict, result: dict) -> None:
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM running WHERE a = ? AND b = ?", (a["id"], b["id"]))
            db.execute("INSERT OR REPLACE INTO pairings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (a["id"], b["id"], result["games"], result["wins_a"], result["wins_b"],
                        result["draws"], "\n".join(result["replays"]), time.time()))
            for p in (a, b):
                if p["status"] == "queued":
                    db.execute("UPDATE players SET status = 'rated' WHERE id = ? AND "
                               "status = 'queued'", (p["id"],))
            db.execute("COMMIT")

    def refuse(self, player: dict, note: str, pairing: tuple[dict, dict] | None = None) -> None:
        """Take `player` out of the arena, saying why (`note`, shown to everybody, so it names
        the player as submitted and no path); the pairing it failed in is no longer running."""
        with self._db() as db:
            db.execute("UPDATE players SET status = 'refused', note = ? WHERE id = ?",
                       (public_note(note, player)[:300], player["id"]))
            if pairing is not None:
                db.execute("DELETE FROM running WHERE a = ? AND b = ?",
                           (pairing[0]["id"], pairing[1]["id"]))

    # --- the leaderboard ------------------------------------------------------------------------
    def leaderboard(self) -> list[dict[str, Any]]:
        """Every player: Bradley-Terry rating (Elo scale) with its 95% interval over all pairings
        played, games, status and its saved games; rated players first, best first."""
        from .ratings import bradley_terry

        players = self.players()
        index = {p["id"]: k for k, p in enumerate(players)}
        n = len(players)
        scores, games = np.zeros((n, n)), np.zeros((n, n))
        replays: dict[int, list[str]] = {p["id"]: [] for p in players}
        with self._db() as db:
            rows = [dict(r) for r in db.execute("SELECT * FROM pairings")]
        for r in rows:
            i, j = index[r["a"]], index[r["b"]]
            scores[i, j] += r["wins_a"] + 0.5 * r["draws"]
            scores[j, i] += r["wins_b"] + 0.5 * r["draws"]
            games[i, j] += r["games"]
            games[j, i] += r["games"]
            for rel in filter(None, r["replays"].split("\n")):
                replays[r["a"]].append(rel)
                replays[r["b"]].append(rel)
        played = games.sum(axis=1) > 0
        ratings = np.full(n, np.nan)
        ci = np.full(n, np.nan)
        if played.sum() >= 2:
            sub = np.flatnonzero(played)
            r, se = bradley_terry(scores[np.ix_(sub, sub)], games[np.ix_(sub, sub)])
            ratings[sub], ci[sub] = r, 1.96 * se
        out = []
        for k, p in enumerate(players):
            out.append({"name": p["name"], "kind": p["kind"], "status": p["status"],
                        "note": p["note"], "games": int(games[k].sum()),
                        "score": float(scores[k].sum()),
                        "rating": None if np.isnan(ratings[k]) else round(float(ratings[k]), 1),
                        "ci95": None if np.isnan(ci[k]) else round(float(ci[k]), 1),
                        "replays": replays[p["id"]][-6:]})
        out.sort(key=lambda row: (row["rating"] is None, -(row["rating"] or 0.0)))
        return out

    def player_specs(self) -> list[str]:
        """The specs of every player not refused, for --tournament (arena:PATH)."""
        return [p["spec"] for p in self.players() if p["status"] != "refused"]


class _Closing:
    """A sqlite3 connection as a context manager that also closes it (sqlite3's own only
    commits)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        return self.db

    def __exit__(self, *exc) -> None:
        self.db.close()


def pairing_seed(a: dict, b: dict) -> int:
    return (a["id"] * 1_000_003 + b["id"] * 7919) % 2**31


def public_note(text: str, player: dict) -> str:
    """`text` as the leaderboard may show it: the player's spec (which holds the server's path
    of its file) named by the player's name, and any other absolute path by its last part."""
    text = " ".join(str(text).split())
    for s in filter(None, (player.get("spec"), str(player.get("spec", "")).partition(":")[2])):
        text = text.replace(s, player["name"])
    return hide_paths(text)


def play_pairing(folder: str, a: dict, b: dict, decision_seconds: float | None = None,
                 stuck=None, load_seconds: float = 0.0) -> dict[str, Any]:
    """Play one pairing (a worker process's job): PAIRING_GAMES games with sides swapped, two
    of them saved as replays under the arena's folder. PlayerRefused names a player that cannot
    play (an ONNX model that breaks onnx_check's rules or gives up deciding, say).
    `decision_seconds`: each ONNX model's deadline per decision (OnnxPilot.confine);
    `stuck(player, why)` ends the process for a player whose model outruns a deadline that
    cannot stop it: a decision's, or `load_seconds` to load the model."""
    from ..config import GameConfig
    from ..game.replays import save_match_replays
    from ..pilots.onnx_check import check_onnx_file
    from ..pilots.outside import OnnxPilot
    from ..pilots.specs import make_pilot
    from .match import play_match

    config = GameConfig()
    seed = pairing_seed(a, b)
    pilots = []
    try:
        for p, s in ((a, seed), (b, seed + 1)):
            try:
                watch = None
                if p["kind"] == "onnx":  # checked at submission; checked again before it runs
                    check_onnx_file(p["spec"].partition(":")[2], p["name"])
                    if stuck is not None and load_seconds > 0:
                        watch = threading.Timer(load_seconds, stuck, (p, (
                            f"its model took over {load_seconds:g} s to load")))
                        watch.daemon = True
                        watch.start()
                try:
                    pilots.append(make_pilot(p["spec"], config, s))
                finally:
                    if watch is not None:
                        watch.cancel()
            except ValueError as exc:
                raise PlayerRefused(p["id"], getattr(exc, "public", None) or str(exc)) from None
        for pilot, p in zip(pilots, (a, b)):
            pilot.name = p["name"]
            if isinstance(pilot, OnnxPilot) and decision_seconds is not None:
                pilot.confine(decision_seconds, None if stuck is None else
                              (lambda why, p=p: stuck(p, why)))
        match = play_match(pilots[0], pilots[1], PAIRING_GAMES, seed, config,
                           keep_actions=KEPT_REPLAYS)
        for pilot, p in zip(pilots, (a, b)):
            if isinstance(pilot, OnnxPilot) and pilot.gave_up:
                raise PlayerRefused(p["id"], f"{p['name']}: {pilot.gave_up}")
    finally:
        for pilot in pilots:
            pilot.close()
    folder = Path(folder)
    saved = save_match_replays(match, config, f"{a['id']}v{b['id']}", folder / "replays")
    return {"games": match.n, "wins_a": match.wins_a, "wins_b": match.wins_b,
            "draws": match.draws, "replays": [str(p.relative_to(folder.parent.parent))
                                             for p in saved]}


def _pairing_child(conn, folder: str, a: dict, b: dict, parent_pid: int,
                   limits: Confinement) -> None:
    import resource

    # The kernel's caps come first, before the pilots' libraries are loaded.
    for what, value in ((resource.RLIMIT_AS, limits.memory_mb * 2**20),
                        (resource.RLIMIT_CPU, int(limits.cpu_seconds))):
        resource.setrlimit(what, (value, value))
    from ..util.processes import die_with_parent
    from ..util.threads import use_torch_threads

    die_with_parent(parent_pid)

    def stuck(player: dict, why: str) -> None:
        # Called from a timer thread while the main one is inside the runtime, which no
        # exception can stop: say why, then end the process.
        conn.send(("refused", player["id"], f"{player['name']}: {why}"))
        os._exit(0)

    try:
        use_torch_threads(1)
        conn.send(("ok", play_pairing(folder, a, b, limits.decision_ms / 1000.0, stuck,
                                      limits.load_seconds)))
    except PlayerRefused as exc:
        conn.send(("refused", exc.player, str(exc)))
    except MemoryError:  # a pilot's model or our own arrays over the address-space cap
        conn.send(("refused", b["id"], f"its pairing went over the memory limit of "
                                        f"{limits.memory_mb} MB"))
    except Exception as exc:  # reported to the runner, which refuses the newer player
        conn.send(("refused", b["id"], f"could not play: {type(exc).__name__}"))


def run_pairing(folder: str | Path, a: dict, b: dict, limits: Confinement = Confinement(),
                spent: float = 0.0, on_tick=None) -> tuple:
    """play_pairing in a process of its own, confined by `limits` and ended once its time spent
    (starting from `spent`, what earlier attempts used) passes `limits.seconds`: ("ok",
    result), ("refused", player id, why) or ("timeout",). `on_tick(spent)` is told the time
    spent every TICK_SECONDS. Blocking: the server calls it from a thread."""

    from ..util.processes import spawn_context

    if spent >= limits.seconds:
        return ("timeout",)
    ctx = spawn_context()
    here, there = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_pairing_child, args=(there, str(folder), a, b, os.getpid(),
                                                    limits), daemon=True)
    start = time.monotonic() - spent
    proc.start()
    there.close()
    try:
        while True:
            left = limits.seconds - (time.monotonic() - start)
            if left <= 0:
                return ("timeout",)
            if here.poll(min(TICK_SECONDS, left)):
                return here.recv()
            if on_tick is not None:
                on_tick(time.monotonic() - start)
    except EOFError:  # the process died without a word (killed, CPU time used up)
        return ("refused", b["id"], "its pairing's process died (over its CPU time or memory)")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        here.close()


class PlayerRefused(ValueError):
    """A submitted player that cannot play; `player` is its id."""

    def __init__(self, player: int, message: str):
        super().__init__(message)
        self.player = player
