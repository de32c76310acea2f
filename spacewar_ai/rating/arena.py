"""The arena: pilots that visitors submit (a strategy file or an ONNX model), played against the
house pilots and each other, rated by Bradley-Terry with 95% intervals (docs/browser.md).

Everything lives in `runs/arena/`: `arena.db` (SQLite in WAL mode), `submissions/` and
`replays/`. An upload is counted before its body is read (`attempt`), checked before it is
queued (`precheck`, then `check_submission` in a confined process) and stored (`add`). A pairing
is chosen when a runner is free (`next_pairing`): the house pilots' pairs first, then the entrant
with the fewest pairings against the opponent of the most even expected score, so the queue
grows with what arrives, not with its square, and a restarted server plays nothing twice.

Each pairing plays `PAIRING_GAMES` games, seeded by the players' ids, in a process of its own
(`run_pairing`) confined by `Confinement` (address space, CPU, a deadline per decision and per
pairing, whose time spent is kept in the database); a refused player never plays again. The
process hands back results and replays as data, so it may run on Ray."""

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

from ..util.errors import UserError
from ..util.files import hide_paths
from ..util.workers import Travel
from . import WORKER_PRELOAD
from .ratings import expected_score

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
CREATE TABLE IF NOT EXISTS attempts (client TEXT NOT NULL, time REAL NOT NULL);
CREATE INDEX IF NOT EXISTS attempts_by_client ON attempts (client, time);
CREATE INDEX IF NOT EXISTS players_by_client ON players (client, created);
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


class OverAllowance(UserError):
    """An address over its hourly allowance of `kind` ("attempts": uploads, refused ones too;
    "submissions": accepted ones), `count` of them in the hour: refused before anything it sent
    is read. Whoever sets the allowance (the server's budgets) words the refusal its way."""

    def __init__(self, kind: str, count: int, allowed: int):
        what = "uploads" if kind == "attempts" else "submissions"
        refused = ", refused ones included" if kind == "attempts" else ""
        super().__init__(f"{count} {what} from your address in the last hour{refused}: the most "
                         f"allowed ({allowed}); try again later")
        self.kind, self.count, self.allowed = kind, count, allowed


class Arena:
    """The arena's database and folders under `folder`; `per_entrant` pairings rate a new
    entrant (module docstring)."""

    def __init__(self, folder: str | Path, per_entrant: int = 8):
        self.folder = Path(folder).resolve()
        self.per_entrant = int(per_entrant)
        self.submissions = self.folder / "submissions"
        self.replays = self.folder / "replays"
        self.submissions.mkdir(parents=True, exist_ok=True)
        self.replays.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "arena.db"
        # The last fit: (what it depends on, the board, the pairings left when it was made).
        self._board: tuple[tuple, list[dict[str, Any]], int] | None = None
        self._fit_lock = threading.Lock()
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
    def attempt(self, client: str, attempts_per_hour: int, per_hour: int) -> int:
        """Count an upload from `client` before anything of it is read (returns the count's
        row, for `forgive`); OverAllowance if the address has made `attempts_per_hour` uploads
        this hour (refused ones too) or had `per_hour` accepted."""
        since = time.time() - 3600
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            tried = db.execute("SELECT COUNT(*) FROM attempts WHERE client = ? AND time > ?",
                               (client, since)).fetchone()[0]
            accepted = db.execute("SELECT COUNT(*) FROM players WHERE client = ? AND "
                                  "created > ?", (client, since)).fetchone()[0]
            if accepted >= per_hour or tried >= attempts_per_hour:
                db.execute("ROLLBACK")
                if accepted >= per_hour:
                    raise OverAllowance("submissions", accepted, per_hour)
                raise OverAllowance("attempts", tried, attempts_per_hour)
            db.execute("DELETE FROM attempts WHERE time < ?", (since,))
            row = db.execute("INSERT INTO attempts VALUES (?, ?)",
                             (client, time.time())).lastrowid
            db.execute("COMMIT")
        return row

    def forgive(self, row: int) -> None:
        """Take back an upload `attempt` counted, refused for the server's own reasons."""
        with self._db() as db:
            db.execute("DELETE FROM attempts WHERE rowid = ?", (row,))

    def precheck(self, name: str, filename: str, data: bytes, client: str,
                 per_hour: int) -> str:
        """The cheap refusals of a submission, before any parsing (ValueError, one line): its
        name, its kind by its file's ending, an empty file, a taken name, the allowance. The
        kind ("strategy" or "onnx") if it passes."""
        name = str(name).strip()
        if not NAME_RULE.match(name):
            raise UserError(f"name {name[:40]!r}: 1-40 letters, digits, spaces, '_', '.' or "
                            "'-', starting with a letter or digit")
        kind = KINDS.get(Path(str(filename)).suffix.lower())
        if kind is None:
            raise UserError(f"{Path(str(filename)).name[:60]}: submit a strategy file (.py) or "
                            "an ONNX model (.onnx)")
        if not data:
            raise UserError(f"{name}: the file is empty")
        with self._db() as db:
            self._admissible(db, name, client, per_hour)
        return kind

    def add(self, name: str, kind: str, data: bytes, client: str,
            per_hour: int) -> dict[str, Any]:
        """Queue a submission that passed its checks (precheck, check_submission)."""
        from ..util.files import atomic_write_bytes

        name = str(name).strip()
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

    def submit(self, name: str, filename: str, data: bytes, client: str,
               per_hour: int) -> dict[str, Any]:
        """Check and queue a submission here, in this process; ValueError (one line) if it is
        refused. (The server runs check_submission in a confined process instead.)"""
        kind = self.precheck(name, filename, data, client, per_hour)
        check_submission(str(name).strip(), kind, data)
        return self.add(name, kind, data, client, per_hour)

    @staticmethod
    def _admissible(db, name: str, client: str, per_hour: int) -> None:
        """Refuse a taken name or an address over its hourly allowance (ValueError)."""
        if db.execute("SELECT 1 FROM players WHERE name = ?", (name,)).fetchone():
            raise UserError(f"name {name!r} is taken: choose another")
        recent = db.execute("SELECT COUNT(*) FROM players WHERE client = ? AND created > ?",
                            (client, time.time() - 3600)).fetchone()[0]
        if recent >= per_hour:
            raise OverAllowance("submissions", recent, per_hour)

    # --- pairings -------------------------------------------------------------------------------
    def players(self) -> list[dict[str, Any]]:
        with self._db() as db:
            return [dict(r) for r in db.execute("SELECT * FROM players ORDER BY id")]

    def _pairing_state(self, busy) -> tuple[list[dict], set, dict, dict, dict]:
        """(players not refused, pairs played or busy, pairings by player id, pairings
        running by address, pairings played in the last hour by address)."""
        players = [p for p in self.players() if p["status"] != "refused"]
        with self._db() as db:
            played = {(r["a"], r["b"]) for r in db.execute("SELECT a, b FROM pairings")}
            lately = {r[0]: r[1] for r in db.execute(
                "SELECT players.client, COUNT(*) FROM pairings JOIN players ON players.id = "
                "pairings.b WHERE pairings.played > ? GROUP BY players.client",
                (time.time() - 3600,))}
        taken = played | set(busy)
        count: dict[int, int] = {}
        for a, b in taken:
            count[a] = count.get(a, 0) + 1
            count[b] = count.get(b, 0) + 1
        client = {p["id"]: p["client"] for p in players}
        running: dict = {}
        for a, b in busy:
            for who in {client.get(a), client.get(b)} - {None}:
                running[who] = running.get(who, 0) + 1
        return players, taken, count, running, lately

    def next_pairing(self, busy: frozenset = frozenset()) -> tuple[dict, dict] | None:
        """The next pairing to play, none of `busy` ((a, b) ids being played now), as (older
        player, newer player), or None: the house pilots' pairings first, then for the entrant
        with the fewest pairings (then the address with the fewest running, then with the
        fewest played in the last hour, then the newest) the opponent of the most even
        expected score (module docstring). Refused players take no part."""
        players, taken, count, running, lately = self._pairing_state(busy)
        house = [p for p in players if p["kind"] == "house"]
        for i, b in enumerate(house):
            for a in house[:i]:
                if (a["id"], b["id"]) not in taken:
                    return a, b
        entrants = [p for p in players if p["kind"] != "house"
                    and count.get(p["id"], 0) < self.per_entrant]
        if not entrants:
            return None
        rating = self._ratings()
        prior = float(np.median(list(rating.values()))) if rating else 1500.0
        entrants.sort(key=lambda p: (count.get(p["id"], 0), running.get(p["client"], 0),
                                     lately.get(p["client"], 0), -p["id"]))
        for e in entrants:
            mine = rating.get(e["id"], prior)
            best = None
            for o in players:
                pair = (min(o["id"], e["id"]), max(o["id"], e["id"]))
                if o["id"] == e["id"] or pair in taken:
                    continue
                p = expected_score(mine, rating.get(o["id"], prior))
                key = (p * (1 - p), o["id"] in rating, -o["id"])
                if best is None or key > best[0]:
                    best = (key, o)
            if best is not None:
                o = best[1]
                return (o, e) if o["id"] < e["id"] else (e, o)
        return None

    def pairings_left(self) -> int:
        """Pairings still to play: the house pilots' own, and each entrant's up to
        `per_entrant` (at most the opponents it has left)."""
        players, taken, count, _, _ = self._pairing_state(frozenset())
        house = [p["id"] for p in players if p["kind"] == "house"]
        left = sum((a, b) not in taken for i, b in enumerate(house) for a in house[:i])
        others = len(players) - 1
        return left + sum(max(0, min(self.per_entrant, others) - count.get(p["id"], 0))
                          for p in players if p["kind"] != "house")

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
        """A pairing's result: its replays (data, as the pairing's process handed them back)
        saved under replays/, then its row."""
        from ..game.replays import save_replays

        saved = save_replays(result.get("replays", []), f"{a['id']}v{b['id']}", self.replays)
        rel = [str(p.relative_to(self.folder.parent.parent)) for p in saved]
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM running WHERE a = ? AND b = ?", (a["id"], b["id"]))
            db.execute("INSERT OR REPLACE INTO pairings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (a["id"], b["id"], result["games"], result["wins_a"], result["wins_b"],
                        result["draws"], "\n".join(rel), time.time()))
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
    def _ratings(self) -> dict[int, float]:
        """The rating of every player that has one, by id, from all results so far."""
        return {row["id"]: row["rating"] for row in self.leaderboard()
                if row["rating"] is not None}

    def _key(self) -> tuple:
        """What a fit depends on: the pairings played and the players (and who was refused)."""
        with self._db() as db:
            return (tuple(db.execute("SELECT COUNT(*), MAX(played) FROM pairings").fetchone()),
                    tuple(db.execute("SELECT COUNT(*), MAX(id), SUM(status = 'refused') FROM "
                                     "players").fetchone()))

    def stale(self) -> bool:
        """Whether a result or a player has changed since the last fit."""
        return self._board is None or self._board[0] != self._key()

    def last_board(self) -> tuple[list[dict[str, Any]], int]:
        """The board as last fitted (fitted now only if it never was) and the pairings that
        were left then, the two of one moment: what a page reads, while the server fits the
        next one off its path."""
        if self._board is None:
            self.leaderboard()
        return self._board[1], self._board[2]

    def leaderboard(self) -> list[dict[str, Any]]:
        """Every player: Bradley-Terry rating (Elo scale) with its 95% interval over all pairings
        played, games, wins, pairings, whether the rating is still provisional, status and its
        saved games; rated players first, best first. Fitted again only when a result or a player
        has changed since the last fit."""
        key = self._key()
        board = self._board
        if board is not None and board[0] == key:
            return board[1]
        with self._fit_lock:  # one fit at a time; a second caller reads the first's
            board = self._board
            if board is None or board[0] != key:
                board = self._board = (key, self._fit(), self.pairings_left())
        return board[1]

    def _fit(self) -> list[dict[str, Any]]:
        from .ratings import bradley_terry

        players = self.players()
        index = {p["id"]: k for k, p in enumerate(players)}
        n = len(players)
        scores, games = np.zeros((n, n)), np.zeros((n, n))
        pairings, wins = np.zeros(n, dtype=int), np.zeros(n, dtype=int)
        replays: dict[int, list[str]] = {p["id"]: [] for p in players}
        with self._db() as db:
            rows = [dict(r) for r in db.execute("SELECT * FROM pairings ORDER BY played")]
        for r in rows:
            i, j = index[r["a"]], index[r["b"]]
            scores[i, j] += r["wins_a"] + 0.5 * r["draws"]
            scores[j, i] += r["wins_b"] + 0.5 * r["draws"]
            games[i, j] += r["games"]
            games[j, i] += r["games"]
            pairings[[i, j]] += 1
            wins[i] += r["wins_a"]
            wins[j] += r["wins_b"]
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
            out.append({"id": p["id"], "name": p["name"], "kind": p["kind"],
                        "status": p["status"], "note": p["note"], "games": int(games[k].sum()),
                        "pairings": int(pairings[k]),
                        "provisional": bool(p["kind"] != "house" and p["status"] == "rated"
                                            and pairings[k] < self.per_entrant),
                        "wins": int(wins[k]), "score": float(scores[k].sum()),
                        "rating": None if np.isnan(ratings[k]) else round(float(ratings[k]), 1),
                        "ci95": None if np.isnan(ci[k]) else round(float(ci[k]), 1),
                        "replays": replays[p["id"]][-6:]})
        out.sort(key=lambda row: (row["rating"] is None, -(row["rating"] or 0.0)))
        return out

    def player_specs(self) -> list[str]:
        """The specs of every player not refused, for --tournament (arena:PATH)."""
        return [p["spec"] for p in self.players() if p["status"] != "refused"]


def check_submission(name: str, kind: str, data: bytes) -> None:
    """The parsing checks of a submission's bytes (ValueError, one line): a strategy file by the
    sandbox's static rules, an ONNX model by onnx_check's. Nothing of it runs."""
    from ..pilots.onnx_check import onnx_problems
    from ..pilots.sandbox import StrategyError, validate_source

    if kind == "strategy":
        try:
            validate_source(data.decode("utf-8-sig"), f"{name}.py")
        except UnicodeDecodeError:
            raise UserError(f"{name}.py: not UTF-8 text") from None
        except StrategyError as exc:
            raise UserError(exc.public) from None
        return
    try:
        problems = onnx_problems(data)
    except ImportError:
        raise UserError("this server takes no ONNX models (its onnx package is not "
                        "installed); submit a strategy file") from None
    if problems:
        raise UserError(f"{name}.onnx: {problems[0]}")


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


def play_pairing(a: dict, b: dict, decision_seconds: float | None = None, stuck=None,
                 load_seconds: float = 0.0) -> dict[str, Any]:
    """Play one pairing (a worker process's job): PAIRING_GAMES games with sides swapped, the
    counts and two of the games' replays (data) returned. PlayerRefused names a player that
    cannot play (an ONNX model that breaks onnx_check's rules or gives up deciding, say).
    `decision_seconds`: each ONNX model's deadline per decision (OnnxPilot.confine);
    `stuck(player, why)` ends the process for a player whose model outruns a deadline that
    cannot stop it: a decision's, or `load_seconds` to load the model."""
    from ..config import GameConfig
    from ..game.replays import match_replays
    from ..pilots.build import make_pilot
    from ..pilots.onnx_check import check_onnx_file
    from ..pilots.outside import OnnxPilot
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
    return {"games": match.n, "wins_a": match.wins_a, "wins_b": match.wins_b,
            "draws": match.draws, "replays": match_replays(match, config)}


def _pairing_child(conn, a: dict, b: dict, limits: Confinement) -> None:
    from ..util.processes import confine, die_with_parent

    confine(limits.memory_mb, limits.cpu_seconds)  # before any pilot is built
    from ..util.threads import use_torch_threads

    die_with_parent()

    def stuck(player: dict, why: str) -> None:
        # Called from a timer thread while the main one is inside the runtime, which no
        # exception can stop: say why, then end the process.
        conn.send(("refused", player["id"], f"{player['name']}: {why}"))
        os._exit(0)

    try:
        use_torch_threads(1)
        conn.send(("ok", play_pairing(a, b, limits.decision_ms / 1000.0, stuck,
                                      limits.load_seconds)))
    except PlayerRefused as exc:
        conn.send(("refused", exc.player, str(exc)))
    except MemoryError:  # a pilot's model or our own arrays over the address-space cap
        conn.send(("refused", b["id"], f"its pairing went over the memory limit of "
                                        f"{limits.memory_mb} MB"))
    except Exception as exc:  # reported to the runner, which refuses the newer player
        conn.send(("refused", b["id"], f"could not play: {type(exc).__name__}"))


def run_pairing(a: dict, b: dict, limits: Confinement = Confinement(),
                spent: float = 0.0) -> tuple:
    """play_pairing in a process of its own, confined by `limits` and ended once its time spent
    (starting from `spent`, what earlier attempts used) passes `limits.seconds`: ("ok",
    result), ("refused", player id, why) or ("timeout",). Blocking: the server begins it with
    util.workers.submit (`pairing_job`), in a thread here or as a Ray task."""

    from ..util.processes import worker_context

    if spent >= limits.seconds:
        return ("timeout",)
    ctx = worker_context(WORKER_PRELOAD)
    here, there = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_pairing_child, args=(there, a, b, limits), daemon=True)
    start = time.monotonic() - spent
    proc.start()
    there.close()
    try:
        left = limits.seconds - (time.monotonic() - start)
        if left > 0 and here.poll(left):
            return here.recv()
        return ("timeout",)
    except EOFError:  # the process died without a word (killed, CPU time used up)
        return ("refused", b["id"], "its pairing's process died (over its CPU time or memory)")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        here.close()


def pairing_job(job: tuple) -> tuple:
    """run_pairing(*job), for util.workers.submit: job = (a, b, limits, spent)."""
    return run_pairing(*job)


class PairingTravel(Travel):
    """A pairing's players' files, for Ray's nodes (util.workers.Travel): each submitted file
    travels with the job, and a node plays from its own copy."""

    def paths(self, job: tuple) -> list[Path]:
        return [Path(p["spec"].partition(":")[2]) for p in job[:2] if p["kind"] != "house"]

    def localize(self, job: tuple, local) -> tuple:
        players = [p if p["kind"] == "house" else
                   {**p, "spec": f"{p['kind']}:{local(Path(p['spec'].partition(':')[2]))}"}
                   for p in job[:2]]
        return (*players, *job[2:])


class PlayerRefused(UserError):
    """A submitted player that cannot play; `player` is its id."""

    def __init__(self, player: int, message: str):
        super().__init__(message)
        self.player = player
