"""The arena's pages in the browser app: `/arena` (submit a pilot, read the leaderboard),
`GET /api/arena` and `POST /api/arena/submit?name=NAME&file=FILE` (the file as the body), and
`ArenaRunner`, which plays the pairings `Arena.next_pairing` chooses, `arena_runners` at a
time, each in a confined process of its own (rating.arena.run_pairing) on this machine or as a
Ray task (`--serve --backend ray`), so that no pilot ever runs in the server's event loop and no
one submission can hold the queue.

An upload is counted against its address's allowance before its body is read, refused ones
too (`Arena.attempt`); its body is read against a size and a deadline; its parsing checks run
in a checker process (web.checks) under the address's CPU budget; only then is it queued.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from pathlib import Path

from ..rating.arena import (
    PAIRING_GAMES,
    TICK_SECONDS,
    Arena,
    Confinement,
    OverAllowance,
    PairingTravel,
    pairing_job,
)
from ..util.workers import Where, submit

IDLE_SECONDS = 30.0  # a runner looks for work this often when nothing woke it
DURATIONS_KEPT = 20  # the latest pairings whose wall-clock times estimate the queue's wait


class ArenaRunner:
    """Plays the arena's pairings for as long as the server runs, `runners` at once, in
    confined processes wherever `where` says (util.workers: begun from a thread here, or as
    Ray tasks); `wake()` after a submission starts its games at once."""

    def __init__(self, arena: Arena, limits: Confinement = Confinement(), runners: int = 1,
                 where: Where = Where()):
        self.arena = arena
        self.limits = limits
        self.runners = int(runners)
        self.where = where
        self.busy: set[tuple[int, int]] = set()
        self.durations: collections.deque[float] = collections.deque(maxlen=DURATIONS_KEPT)
        self._wake = asyncio.Event()
        self._choosing = asyncio.Lock()
        self._tasks: list[asyncio.Task] = []

    def start(self) -> None:
        self._tasks = [asyncio.ensure_future(self._loop()) for _ in range(self.runners)]

    def wake(self) -> None:
        self._wake.set()

    def expected_wait(self, pairings: int) -> float | None:
        """Seconds until `pairings` pairings are played, from the mean wall-clock time of the
        latest ones and the runners sharing them; None before any was timed."""
        if not self.durations:
            return None
        mean = sum(self.durations) / len(self.durations)
        return round(mean * pairings / self.runners, 1)

    async def _loop(self) -> None:
        while True:
            async with self._choosing:  # chosen and marked busy before another runner looks
                pairing = await asyncio.to_thread(self.arena.next_pairing, frozenset(self.busy))
                if pairing is not None:
                    self.busy.add((pairing[0]["id"], pairing[1]["id"]))
            if pairing is None:
                self._wake.clear()
                # Woken by a submission, or after IDLE_SECONDS to look again either way.
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), IDLE_SECONDS)
                continue
            a, b = pairing
            key = (a["id"], b["id"])
            self._wake.set()  # another runner may take the next pairing now
            began = time.monotonic()
            try:
                await self._play(a, b)
            finally:
                self.busy.discard(key)
                self.durations.append(time.monotonic() - began)

    async def _outcome(self, a: dict, b: dict, spent: float) -> tuple:
        # The pairing keeps its own deadline; the time it spends is charged from here.
        future = asyncio.wrap_future(await asyncio.to_thread(
            submit, pairing_job, (a, b, self.limits, spent), self.where, PairingTravel()))
        began = time.monotonic() - spent
        while True:
            done, _ = await asyncio.wait({future}, timeout=TICK_SECONDS)
            if done:
                return future.result()
            await asyncio.to_thread(self.arena.charge, a, b, time.monotonic() - began)

    async def _play(self, a: dict, b: dict) -> None:
        spent = await asyncio.to_thread(self.arena.spent, a, b)
        outcome = await self._outcome(a, b, spent)
        if outcome[0] == "ok":
            await asyncio.to_thread(self.arena.record, a, b, outcome[1])
        elif outcome[0] == "refused":
            who = a if outcome[1] == a["id"] else b
            await asyncio.to_thread(self.arena.refuse, who, outcome[2], (a, b))
        else:  # too slow: the newer player, whose games these were, leaves the arena
            await asyncio.to_thread(self.arena.refuse, b, (
                f"its pairing against {a['name']} took over {self.limits.seconds:.0f} s"), (a, b))
        # The board fitted with this result, off the pages' path: the last pairing's result is
        # no choice's (next_pairing fits only to choose), and pages read the last fit.
        await asyncio.to_thread(self.arena.leaderboard)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def arena_routes(files, limits, checks, where: Where = Where()):
    """(routes, runner) of the arena over the project's `runs/arena/` folder, its uploads'
    checks run by `checks` (web.checks.Checks)."""
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from .checks import Gone
    from .guard import (
        Refused,
        TooLarge,
        TooSlow,
        discard_body,
        failure,
        over_budget,
        refusal,
        visitor,
    )

    arena = Arena(Path(files.runs) / "arena", limits.pairings_per_entrant)
    confinement = Confinement(memory_mb=limits.pairing_memory_mb,
                              cpu_seconds=limits.pairing_cpu_seconds,
                              decision_ms=limits.decision_ms, seconds=limits.pairing_seconds,
                              load_seconds=limits.model_load_seconds)
    runner = ArenaRunner(arena, confinement, limits.arena_runners, where)
    where.start()  # in the thread that builds the app: a bad address is one line before serving

    fitting: list[asyncio.Future] = []

    async def board() -> tuple[list[dict], int]:
        """The last fitted board and the pairings left then, at once; a newer one is fitted in
        a thread meanwhile when a result or a player has arrived since (one fit at a time)."""
        if (not fitting or fitting[0].done()) and await asyncio.to_thread(arena.stale):
            fitting[:] = [asyncio.ensure_future(asyncio.to_thread(arena.leaderboard))]
        return await asyncio.to_thread(arena.last_board)

    async def api_arena(request):
        rows, left = await board()
        queued = sum(r["status"] == "queued" for r in rows)
        return JSONResponse({"players": rows, "queued": queued, "pairings_left": left,
                             "expected_wait_seconds": runner.expected_wait(left),
                             "games_per_pairing": PAIRING_GAMES,
                             "pairings_per_entrant": limits.pairings_per_entrant,
                             "limits": {"submission_bytes": limits.submission_bytes,
                                        "submissions_per_hour": limits.submissions_per_hour,
                                        "attempts_per_hour": limits.attempts_per_hour,
                                        "decision_ms": limits.decision_ms,
                                        "pairing_seconds": limits.pairing_seconds}})

    async def api_submit(request):
        client = visitor(request.scope)
        name = request.query_params.get("name", "")
        filename = request.query_params.get("file", "")
        counted = None
        try:
            counted = await asyncio.to_thread(arena.attempt, client, limits.attempts_per_hour,
                                              limits.submissions_per_hour)
            data = await checks.body_for("submission", request, client, "submission_bytes",
                                         "the submission")
            kind = await asyncio.to_thread(arena.precheck, name, filename, data, client,
                                           limits.submissions_per_hour)
            await checks.run_for(request, "submission", {"name": str(name).strip(),
                                                         "kind": kind, "data": data}, client)
            row = await asyncio.to_thread(arena.add, name, kind, data, client,
                                          limits.submissions_per_hour)
        except OverAllowance as exc:
            await discard_body(request, limits.submission_bytes, limits.body_seconds)
            return refusal(over_budget(limits, f"{exc.kind}_per_hour", exc.count, True), 429)
        except (Refused, Gone) as exc:
            if counted is not None and (isinstance(exc, Gone) or exc.status == 503):
                # The server's business (its queue full, a client gone), not the visitor's:
                # the upload is not counted against its allowance.
                await asyncio.to_thread(arena.forgive, counted)
            return Response(status_code=499) if isinstance(exc, Gone) else \
                refusal(exc, exc.status)
        except (TooLarge, TooSlow) as exc:  # each knows its status
            return refusal(exc, exc.status)
        except ValueError as exc:
            return refusal(exc)
        except Exception as exc:  # never a traceback to a visitor
            return failure(exc, "this upload")
        runner.wake()
        left = await asyncio.to_thread(arena.pairings_left)
        return JSONResponse({"submitted": row, "pairings_ahead": left,
                             "expected_wait_seconds": runner.expected_wait(left)})

    routes = [Route("/api/arena", api_arena),
              Route("/api/arena/submit", api_submit, methods=["POST"])]
    return routes, runner
