"""Checks of what a visitor sends, each in a confined process: nothing a visitor sends is parsed,
replayed or checked in the server's process.

Checks run in two lanes of checker processes started ahead (util.processes.StartedAhead), each
process with its address space capped by the kernel: replays, which can take seconds each, and
the quick checks (an arena upload's, a page's pilot spec), so that a crowd of costly replays
cannot hold up an upload. A check is one job with a deadline past which its process is killed
and replaced; before it is queued, three budgets are asked: checks per address (over both
lanes), checks in the lane, and the seconds the address's checks used in the last hour (CPU or
wall clock, whichever is more), before the request's body is read. In each lane the waiting
checks are served a visitor at a time, the address that has used the checkers least first (then:
been refused as busy least) and round robin among equals, so a crowd of addresses cannot starve
one; when the lane's queue is full a visitor with nothing in it takes the place of the last
waiting check of an address that has used the checkers more than twice as much in the hour, or
as much while refused as busy more than twice as often (Lane.heaviest_above). So a crowd that
keeps asking while the lane is full ranks behind a visitor that asks once, who is served at its
first or second try rather than retrying until lucky. A check whose asker has gone (`run_for`)
leaves the queue, or has its process killed if it was running. The jobs (`run_job`): a replay
replayed into frames, an arena upload's checks, a page's pilot spec. The server sends a job as a
pickle in a frame (util.processes); the process answers in bytes and JSON, never pickle, and its
stderr goes nowhere."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import pickle
import sys
import time

from ..util.errors import UserError
from ..util.processes import (
    FrameTooLong,
    StartedAhead,
    confine,
    frame,
    protocol_streams,
    read_frame,
    read_frame_async,
    say_ready,
    write_frame,
)
from ..util.reaper import cpu_seconds
from .guard import Limits, Quota, Refused, discard_body, over_budget, read_body

OK, ERROR = b"o", b"e"
HOUR = 3600.0
START_SECONDS = 120.0  # for a checker to load what checks need, on a busy host
LANE_OF = {"replay": "replays", "submission": "quick", "spec": "quick"}
CHARGES_MERGED = 60.0  # an address's charges within this many seconds are kept as one


class Checks:
    """The lanes of checker processes and the budgets of what they do (module docstring)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.checks = Quota(limits, "checks_per_address")  # waiting or running, both lanes
        self.spent: dict[str, collections.deque] = {}
        self.pruned = -CHARGES_MERGED  # when addresses with nothing in the hour were last forgotten
        self.lanes = {"replays": Lane(self, limits.checkers),
                      "quick": Lane(self, limits.quick_checkers)}

    def start(self) -> None:
        """Start the checker processes ahead (within the running event loop)."""
        for lane in self.lanes.values():
            lane.pool.start()

    async def close(self) -> None:
        for lane in self.lanes.values():
            await lane.pool.close()

    def ledger(self, visitor: str) -> tuple[float, int]:
        """Seconds the checks of `visitor` used in the last hour, and how many of its checks
        were refused as busy meanwhile: the order in which addresses are served (Lane)."""
        spent = self.spent.get(visitor)
        if not spent:
            return 0.0, 0
        since = time.monotonic() - HOUR
        while spent and spent[0][0] < since:
            spent.popleft()
        return sum(e[1] for e in spent), sum(e[2] for e in spent)

    def cpu_used(self, visitor: str) -> float:
        """Seconds the checks of `visitor` used in the last hour."""
        return self.ledger(visitor)[0]

    @property
    def queued(self) -> int:
        """Checks waiting or running, of every visitor."""
        return self.checks.total

    def charge(self, visitor: str, seconds: float = 0.0, refusals: int = 0) -> None:
        now = time.monotonic()
        # Addresses with nothing left in the hour are forgotten, in one pass a while at most:
        # every busy refusal is charged, and a pass on each would cost a crowd's size each.
        if len(self.spent) > 10_000 and now - self.pruned > CHARGES_MERGED:
            self.pruned = now
            for key in [k for k in self.spent if self.ledger(k) == (0.0, 0)]:
                del self.spent[key]
        spent = self.spent.setdefault(visitor, collections.deque())
        if spent and now - spent[-1][0] < CHARGES_MERGED:  # a crowd's refusals stay few entries
            spent[-1] = (spent[-1][0], spent[-1][1] + seconds, spent[-1][2] + refusals)
        else:
            spent.append((now, seconds, refusals))

    def refusal(self, kind: str, visitor: str) -> Refused | None:
        """What `run` would refuse a check of `kind` from `visitor` with now, asked before a
        request's body is read, so that a busy refusal costs the server almost nothing. A busy
        refusal is noted against the address: one that keeps asking while a lane is full ranks
        behind a newcomer (Lane.heaviest_above, Lane.release)."""
        lane = self.lanes[LANE_OF[kind]]
        used = self.cpu_used(visitor)
        if used >= self.limits.check_cpu_per_hour:
            return over_budget(self.limits, "check_cpu_per_hour", round(used, 1), True)
        refused = self.checks.refusal(visitor) or lane.queue.refusal(visitor)
        if refused is not None and refused.status == 503:
            if lane.heaviest_above(visitor) is not None:
                return None
            self.charge(visitor, refusals=1)
        return refused

    async def body_for(self, kind: str, request, visitor: str, limit: str, what: str) -> bytes:
        """The body of `request`, sent for a check of `kind`, read within budget `limit` (a
        field of Limits) only once the check's budgets would take it; a refusal is raised
        first, the body it came with read and dropped so that its line reaches the sender."""
        refused = self.refusal(kind, visitor)
        if refused is not None:
            await discard_body(request, getattr(self.limits, limit), self.limits.body_seconds)
            raise refused
        return await read_body(request, getattr(self.limits, limit), what, limit,
                               self.limits.body_seconds)

    async def run(self, kind: str, payload: dict, visitor: str) -> bytes:
        """The answer of job `kind` for `visitor` (JSON bytes); Refused if a budget refuses it
        first, ValueError (one line) if the check refuses what was sent or fails. Cancelled, it
        leaves the queue, or kills its checker if it was running."""
        if kind not in LANE_OF:
            raise UserError(f"no such check: {kind}")
        refused = self.refusal(kind, visitor)
        if refused is not None:
            raise refused
        lane = self.lanes[LANE_OF[kind]]
        if lane.queue.refusal(visitor) is not None:  # full: a place taken from the heaviest
            lane.make_room(visitor)
        self.checks.take(visitor)
        lane.queue.take(visitor)
        try:
            await lane.turn(visitor)
            try:
                return await lane.ask(kind, payload, visitor)
            finally:
                lane.release()
        finally:
            lane.queue.give(visitor)
            self.checks.give(visitor)

    async def run_for(self, request, kind: str, payload: dict, visitor: str) -> bytes:
        """`run`, dropped when the client that asked disconnects (an HTTP request, or a
        WebSocket's page): nobody is left to read its answer, so it spends no checker's
        time."""
        check = asyncio.ensure_future(self.run(kind, payload, visitor))
        gone = asyncio.ensure_future(_disconnected(request))
        stopping = False
        try:
            await asyncio.wait({check, gone}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            # The server is stopping and ends the requests still in flight: this one ends
            # quietly, as one whose client left, rather than as an error with a traceback.
            stopping = True
        finally:
            gone.cancel()
            if not check.done():
                check.cancel()
                # Its queue place given up, or its checker killed, before this returns.
                await asyncio.gather(check, return_exceptions=True)
        if stopping or check.cancelled():
            raise Gone("the client left before its check was done, or the server stopped")
        return check.result()


class Lane:
    """Checker processes for some kinds of check, and the checks waiting for them: a queue per
    address, taken in turn (module docstring)."""

    def __init__(self, checks: Checks, processes: int):
        self.checks = checks
        self.limits = limits = checks.limits
        self.pool = StartedAhead(
            [sys.executable, "-m", "spacewar_ai.web.checks", str(os.getpid()),
             str(limits.check_memory_mb)], processes, START_SECONDS, "the server's checker",
            stderr=asyncio.subprocess.DEVNULL)
        self.checkers = processes
        self.free = processes  # checkers no check holds
        self.running = 0  # checks holding a checker
        # Waiting or running in this lane; each address's part is bounded by checks_per_address.
        self.queue = Quota(limits, None, "checks_queued", shared=False)
        # The checks waiting for a checker, by address, and the addresses in their turn order.
        self.waiting: dict[str, collections.deque] = {}
        self.turns: collections.deque = collections.deque()

    # The lane's state changes only in the methods below, each of which ends by checking the
    # invariant: every checker is free or held by one running check, a waiting check's future is
    # still pending (one that was cancelled is dropped wherever it is met, never served), and a
    # checker is never free while a check waits.
    def _invariant(self) -> None:
        assert self.free >= 0 and self.running >= 0, (self.free, self.running)
        assert self.free + self.running == self.checkers, (self.free, self.running)
        assert set(self.turns) == set(self.waiting) and len(self.turns) == len(self.waiting)
        assert all(self.waiting.values())
        assert not self.free or not self.turns, "a checker is free while checks wait"

    def _next(self, visitor: str, last: bool = False):
        """The first (or last) check of `visitor` still waiting, taken out of the queue; checks
        met whose asker has gone are dropped on the way. None if there is none."""
        queue = self.waiting[visitor]
        granted = None
        while queue and granted is None:
            granted = queue.pop() if last else queue.popleft()
            if granted.done():  # cancelled: its asker left in this turn of the event loop
                granted = None
        if not queue:
            del self.waiting[visitor]
            self.turns.remove(visitor)
        return granted

    def heaviest_above(self, visitor: str) -> str | None:
        """The address whose last waiting check `visitor`, with no check in the lane's queue,
        may take the place of when the queue is full: the one that has used the checkers most
        in the hour (then: been refused most, holds the most), if it has used more than twice
        what the visitor has, or as much while holding more than one place or having been
        refused as busy more than twice as often. A swap between addresses that used about as
        much would only make the queue churn."""
        if self.queue.held[visitor] or not self.waiting:
            return None
        ledger = self.checks.ledger
        share = {a: (*ledger(a), self.queue.held[a]) for a in self.waiting}
        heaviest = max(share, key=share.get)
        (most, refused, held), (mine, mine_refused) = share[heaviest], ledger(visitor)
        if most > 2 * mine or (most == mine and (held > 1 or refused > 2 * mine_refused)):
            return heaviest
        return None

    def make_room(self, visitor: str) -> None:
        """The lane's queue is full: `visitor` takes the place of the last check waiting from
        `heaviest_above(visitor)`, which is refused as busy. So a newcomer finds a place behind
        a crowd keeping the queue full, at its first try, while the crowd's own retries do not
        push each other out."""
        heaviest = self.heaviest_above(visitor)
        if heaviest is None:
            return
        granted = self._next(heaviest, last=True)
        if granted is not None:
            granted.set_exception(over_budget(self.limits, "checks_queued", self.queue.total,
                                              False))
            self.checks.charge(heaviest, refusals=1)
        self._invariant()

    async def turn(self, visitor: str) -> None:
        """Wait for a checker: at once when one is free and nobody waits, else in the round
        robin of the addresses waiting."""
        if self.free and not self.turns:
            self.free -= 1
            self.running += 1
            self._invariant()
            return
        granted = asyncio.get_running_loop().create_future()
        queue = self.waiting.setdefault(visitor, collections.deque())
        if not queue:
            self.turns.append(visitor)
        queue.append(granted)
        self._invariant()
        try:
            await granted
        except asyncio.CancelledError:
            # Served as it left (a checker is its to pass on), still in the queue (leaves it),
            # or already dropped from it or refused by make_room (nothing of the lane's is its).
            if granted.done() and not granted.cancelled() and granted.exception() is None:
                self.release()
            elif granted in self.waiting.get(visitor, ()):
                self.waiting[visitor].remove(granted)
                if not self.waiting[visitor]:
                    del self.waiting[visitor]
                    self.turns.remove(visitor)
                self._invariant()
            raise

    def release(self) -> None:
        """A running check is done with its checker: to the waiting address that has used the
        checkers least in the hour, the first in turn among equals (it goes to the back of the
        line if it has more waiting), else back to the free ones."""
        self.running -= 1
        while self.turns:
            visitor = min(self.turns, key=self.checks.ledger)
            self.turns.remove(visitor)
            self.turns.append(visitor)  # to the back of the line, if it has more waiting
            granted = self._next(visitor)
            if granted is not None:
                granted.set_result(None)
                self.running += 1
                self._invariant()
                return
        self.free += 1
        self._invariant()

    async def ask(self, kind: str, payload: dict, visitor: str) -> bytes:
        lim = self.limits
        proc = await self.pool.take()
        began, started = cpu_seconds(proc.pid), time.monotonic()
        healthy = False
        try:
            proc.stdin.write(frame(pickle.dumps((kind, payload, lim))))
            answer = await asyncio.wait_for(
                read_frame_async(proc.stdout, lim.check_memory_mb * 2**20), lim.check_seconds)
            healthy = True
        except asyncio.TimeoutError:
            raise UserError(f"its check took over {lim.check_seconds:g} s and was stopped "
                            f"(--limits check_seconds)") from None
        except (EOFError, ConnectionError, FrameTooLong):
            raise UserError(f"its check went over its memory (--limits check_memory_mb="
                            f"{lim.check_memory_mb}) and was stopped") from None
        finally:
            # A check that waits on something holds the checker as one that computes does; one
            # that ends its checker (dropped, too slow, too big) pays for starting the next.
            self.checks.charge(visitor, max(0.0, cpu_seconds(proc.pid) - began,
                                            time.monotonic() - started)
                               + (0.0 if healthy else self.pool.start_cpu))
            await self.pool.give_back(proc, healthy)
        status, body = answer[:1], answer[1:]
        if status == ERROR:
            raise UserError(body.decode("utf-8", "replace"))
        return body


class Gone(Exception):
    """A check dropped because the client that asked for it disconnected."""


async def _disconnected(request) -> None:
    """Return once the client of `request` has disconnected: an HTTP request (its body already
    read) or a WebSocket (its start message already received)."""
    while (await request.receive())["type"] not in ("http.disconnect", "websocket.disconnect"):
        continue


# --- the checker process -------------------------------------------------------------------------
def run_job(kind: str, payload: dict, limits: Limits) -> bytes:
    """One check, in a checker process: the answer as JSON bytes; ValueError (one line) when
    what was sent is refused."""
    if kind == "replay":
        return _replay(payload, limits)
    if kind == "submission":
        from ..rating.arena import check_submission

        check_submission(payload["name"], payload["kind"], payload["data"])
        return b"{}"
    if kind == "spec":
        from .files import Files

        files = Files(payload["root"], payload["checkpoint_dir"], payload["ratings_file"])
        return json.dumps({"spec": files.check_spec(payload["spec"])}).encode()
    raise UserError(f"no such check: {kind}")


def _replay(payload: dict, limits: Limits) -> bytes:
    """A replay's frames as the page plays them: from a file of the server's (`path`, named
    `name` as the page asked for it) or from an upload's `text`."""
    from ..game.replays import ReplayError, load_replay, parse_replay
    from .live import replay_frames

    name = payload["name"]
    if payload.get("path"):
        try:
            replay = load_replay(payload["path"])
        except (ValueError, OSError):  # its words may quote the file or its path
            raise UserError(f"{name[:300]}: not a valid replay") from None
    else:
        try:
            text = payload["text"].decode("utf-8")
        except UnicodeDecodeError:
            raise ReplayError(f"replay {name}: not UTF-8 text") from None
        replay = parse_replay(text, name)
    steps = len(replay["actions"][0])
    frames = steps * replay["game_config"].frame_skip
    if frames > limits.replay_frames:
        raise UserError(f"replay {name}: {frames:,} engine frames, more than this server "
                        f"replays (--limits replay_frames={limits.replay_frames:,})")
    return replay_frames(replay, name, limits.answer_mb * 2**20)


def _serve(stdin, stdout) -> None:
    from .live import public_message

    while True:
        try:
            kind, payload, limits = pickle.loads(read_frame(stdin))
        except EOFError:
            return
        try:
            status, body = OK, run_job(kind, payload, limits)
        except MemoryError:
            # A process that ran out of memory may be broken: it ends, and the server, reading
            # no answer, says so of this job and starts another.
            os._exit(3)
        except Exception as exc:  # every refusal and failure: one line, nothing of the file
            status, body = ERROR, public_message(exc).encode()
        write_frame(stdout, status + body)


def main(argv: list[str]) -> int:
    from ..util.processes import die_with_parent

    confine(memory_mb=int(argv[1]))
    die_with_parent(int(argv[0]))
    stdin, stdout = protocol_streams()  # its stderr goes nowhere (Lane)
    # Loaded before the first job arrives: the engine (numba's cached code) and the checks.
    import numpy as np

    import spacewar_ai.pilots.sandbox  # noqa: F401
    from spacewar_ai.config import GameConfig
    from spacewar_ai.game.engine import GameBatch

    warm = GameBatch(1, GameConfig())
    warm.reset(seeds=np.zeros(1, dtype=np.int64))
    warm.step(np.zeros((1, 2), dtype=np.int64))
    warm.observe()
    say_ready(stdout)

    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):  # the server went away
        _serve(stdin, stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
