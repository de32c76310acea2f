"""The arena's pages in the browser app: `/arena` (submit a pilot, read the leaderboard),
`GET /api/arena` and `POST /api/arena/submit?name=NAME&file=FILE` (the file as the body), and
`ArenaRunner`, which plays the queued pairings one at a time in a process of its own
(arena.run_pairing) so that no pilot ever runs in the server's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from ..rating.arena import PAIRING_GAMES, Arena, run_pairing
from .live import public_message

PAIRING_DEADLINE = 900.0  # seconds for one pairing; past it the newer player is refused
IDLE_SECONDS = 30.0  # the runner looks for work this often when nothing woke it


class ArenaRunner:
    """Plays the arena's unplayed pairings in order, one at a time, for as long as the server
    runs; `wake()` after a submission starts its games at once."""

    def __init__(self, arena: Arena):
        self.arena = arena
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._loop())

    def wake(self) -> None:
        self._wake.set()

    async def _loop(self) -> None:
        while True:
            pairing = await asyncio.to_thread(self.arena.next_pairing)
            if pairing is None:
                self._wake.clear()
                # Woken by a submission, or after IDLE_SECONDS to look again either way.
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), IDLE_SECONDS)
                continue
            a, b = pairing
            outcome = await asyncio.to_thread(run_pairing, self.arena.folder, a, b,
                                              PAIRING_DEADLINE)
            if outcome[0] == "ok":
                await asyncio.to_thread(self.arena.record, a, b, outcome[1])
            elif outcome[0] == "refused":
                who = a if outcome[1] == a["id"] else b
                await asyncio.to_thread(self.arena.refuse, who, outcome[2])
            else:  # too slow: the newer player, whose games these were, leaves the arena
                await asyncio.to_thread(self.arena.refuse, b, (
                    f"its pairing against {a['name']} took over {PAIRING_DEADLINE:.0f} s"))

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def arena_routes(files, limits):
    """(routes, runner) of the arena over the project's `runs/arena/` folder."""
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from .guard import TooLarge, read_body

    arena = Arena(Path(files.runs) / "arena")
    runner = ArenaRunner(arena)

    async def api_arena(request):
        rows = await asyncio.to_thread(arena.leaderboard)
        queued = sum(r["status"] == "queued" for r in rows)
        return JSONResponse({"players": rows, "queued": queued,
                             "games_per_pairing": PAIRING_GAMES,
                             "limits": {"submission_bytes": limits.submission_bytes,
                                        "submissions_per_hour": limits.submissions_per_hour}})

    async def api_submit(request):
        client = request.client.host if request.client else "?"
        name = request.query_params.get("name", "")
        filename = request.query_params.get("file", "")
        try:
            data = await read_body(request, limits.submission_bytes, "the submission",
                                   "submission_bytes")
            row = await asyncio.to_thread(arena.submit, name, filename, data, client,
                                          limits.submissions_per_hour)
        except TooLarge as exc:
            return JSONResponse({"error": public_message(exc)}, status_code=413)
        except ValueError as exc:
            return JSONResponse({"error": public_message(exc)}, status_code=400)
        runner.wake()
        return JSONResponse({"submitted": row})

    routes = [Route("/api/arena", api_arena),
              Route("/api/arena/submit", api_submit, methods=["POST"])]
    return routes, runner
