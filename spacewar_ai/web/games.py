"""The browser app's live games, each in a worker process (worker.py), and the limits on them.
The event loop starts workers, relays their messages to the page and the page's keys to them,
and never runs a pilot: a pilot that hangs stalls its own game, which ends after
`Limits.stall_seconds` without a frame, and nothing else.

`Workers` keeps one spare worker started ahead (util.processes.StartedAhead: torch and the
pilots imported), so a page's game starts at once; `run_live` is one WebSocket's game from its
start message to its end; `live_routes` serves it, and a live game's state to pages that poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from ..util.errors import UserError
from ..util.json_input import loads_strict
from ..util.processes import (
    FrameTooLong,
    NotReady,
    StartedAhead,
    frame,
    package_env,
    read_frame_async,
)
from .checks import Gone
from .guard import AddressRate, Limits, Quota, refusal, visitor
from .live import SPEEDS, public_message

START_SECONDS = 120.0  # to load a game's pilots (a big model on a busy host) before giving up
MESSAGE = 2**20  # the most a worker's message may hold (a frame's state is a few kB)


@dataclass
class LiveGame:
    """A game being played or watched: its worker, who opened it, and its last frame (as the
    worker wrote it; parsed only when /api/live asks)."""

    proc: Any
    client: str
    names: list
    sandboxes: int
    last_frame: str = ""

    def state(self) -> dict | None:
        if not self.last_frame:
            return None
        frame = json.loads(self.last_frame)
        return {"state": frame["state"], "names": self.names, "score": frame["score"],
                "held": frame.get("held", [])}


class Workers:
    """Game worker processes: one spare started ahead, the live ones by game id."""

    def __init__(self, limits: Limits, game=None):
        from ..config import GameConfig

        self.limits = limits
        self.game = game if game is not None else GameConfig()  # what live games play
        self.games = Quota(limits, "games_per_client", "games_in_all")
        self.sandboxes = Quota(limits, None, "sandboxes_in_all")
        self.live: dict[str, LiveGame] = {}
        self._ids = itertools.count(1)
        self.pool = StartedAhead([sys.executable, "-m", "spacewar_ai.web.worker",
                                  str(os.getpid())], 1, START_SECONDS, "a game's worker",
                                 single_use=True, env=package_env(SPACEWAR_TORCH_THREADS="1"))

    def refusal(self, client: str, sandboxes: int) -> str:
        """Why a new game from `client` with `sandboxes` strategy files may not start, or ""."""
        refused = self.games.refusal(client) or \
            (self.sandboxes.refusal(client, sandboxes) if sandboxes else None)
        return str(refused) if refused is not None else ""

    @contextlib.contextmanager
    def holding(self, gid: str, game: "LiveGame"):
        """`game` counted in the budgets from here on (so that pages arriving together cannot
        all pass them) and listed as live, until it ends however it ends."""
        self.games.take(game.client)
        self.sandboxes.take(game.client, game.sandboxes)
        self.live[gid] = game
        try:
            yield
        finally:
            self.live.pop(gid, None)
            self.games.give(game.client)
            self.sandboxes.give(game.client, game.sandboxes)

    async def close(self) -> None:
        # A game still waiting for its worker has none yet.
        for proc in [g.proc for g in self.live.values() if g.proc is not None]:
            await self.pool.give_back(proc, healthy=False)
        await self.pool.close()


def _sandboxes(message: dict) -> int:
    """How many strategy files (each a sandboxed process) a start message asks to play."""
    specs = [message.get(k) for k in ("a", "b", "opponent")]
    return sum(str(s).lower().count("strategy:") for s in specs if s)


async def _refuse(ws, message: str) -> None:
    await ws.send_json({"type": "error", "message": message})
    await ws.close()


async def run_live(ws, files, workers: Workers, checks, client: str, seed: int) -> None:
    """One WebSocket's game: its start message awaited for at most `first_message_seconds`,
    then checked (size, JSON, limits here; its pilot specs in a checker process, web.checks),
    the game started in a worker, then frames relayed to the page and keys to the game until
    one side ends it or the game stalls. `client`: the visitor's address (guard.visitor)."""

    limits = workers.limits
    try:
        try:
            text = await asyncio.wait_for(ws.receive_text(), limits.first_message_seconds)
        except asyncio.TimeoutError:
            raise UserError(f"no start message within {limits.first_message_seconds:g} s "
                            "(--limits first_message_seconds)") from None
        first = loads_strict(text, "the start message", limits.json_depth)
        if not isinstance(first, dict):
            raise UserError("the start message is not a JSON object")
        if first.get("speed", 1) not in SPEEDS:
            raise UserError(f"speed {first.get('speed')!r}: use one of "
                            f"{', '.join(map(str, SPEEDS))}")
        for key in ("a", "b", "opponent"):
            if first.get(key):
                answer = await checks.run_for(ws, "spec", {
                    "spec": str(first[key])[:500], "root": str(files.root),
                    "checkpoint_dir": str(files.checkpoints),
                    "ratings_file": str(files.ratings)}, client)
                first[key] = json.loads(answer)["spec"]
    except Gone:
        return  # the page left while its pilots were checked
    except Exception as exc:  # every problem with what the page asked for: one line back
        return await _refuse(ws, public_message(exc))
    sandboxes = _sandboxes(first)
    why = workers.refusal(client, sandboxes)
    if why:
        return await _refuse(ws, why)
    gid = f"g{next(workers._ids)}"
    game = LiveGame(None, client, [], sandboxes)
    with workers.holding(gid, game):
        refused = await _play(ws, workers, files, first, seed, gid, game)
    # Told only once its budgets are back, so a page that starts again at once (a strategy file
    # mended, say) is not refused for the game that has just failed.
    if refused:
        await _refuse(ws, refused)


async def _play(ws, workers: Workers, files, first: dict, seed: int, gid: str, game) -> str:
    """The game in a worker process, relayed until one side ends it; its process killed.
    Why it could not start, or ""."""
    limits = workers.limits
    try:
        game.proc = proc = await workers.pool.take()
        asked = first.get("seed")
        request = {"message": first, "root": str(files.root),
                   "checkpoint_dir": str(files.checkpoints), "ratings_file": str(files.ratings),
                   "seed": asked if type(asked) is int and 0 <= asked < 2**32 else seed,
                   "game": workers.game.to_dict(), "replays_kept": limits.replays_kept,
                   "replays_bytes": limits.replays_mb * 2**20}
        proc.stdin.write(frame(json.dumps(request).encode()))
        await proc.stdin.drain()
        try:
            reply = json.loads(await asyncio.wait_for(read_frame_async(proc.stdout, MESSAGE),
                                                      START_SECONDS))
        except EOFError:
            reply = {"type": "error", "message": "the game could not start"}
        if reply.get("type") != "start":
            return reply.get("message", "the game could not start")
        game.names = reply["names"]
        await ws.send_json({**reply, "id": gid})
        await _relay(ws, proc, game, limits)
    except asyncio.TimeoutError:
        return f"the game's pilots did not load within {START_SECONDS:.0f} s"
    except NotReady as exc:
        return str(exc)
    except Exception:  # the page went away mid-send (the server's disconnect types vary)
        return ""
    finally:
        if game.proc is not None:
            await workers.pool.give_back(game.proc, healthy=False)
    return ""


async def _relay(ws, proc, game: LiveGame, limits: Limits) -> None:

    async def frames():
        while True:
            try:
                data = await asyncio.wait_for(read_frame_async(proc.stdout, MESSAGE),
                                              limits.stall_seconds)
            except asyncio.TimeoutError:
                await ws.send_json({"type": "error", "message": (
                    f"the game stalled: a pilot took more than {limits.stall_seconds:g} s over "
                    "one frame, so it was ended")})
                return
            except (EOFError, FrameTooLong):
                return  # the game is over (or its worker died)
            text = data.decode()
            if text.startswith('{"type":"frame"'):
                game.last_frame = text
            await ws.send_text(text)

    async def keys():
        rate = AddressRate(limits, "messages_per_second", 1.0)
        while True:
            text = await ws.receive_text()
            if rate.refusal("this socket") is not None:
                await ws.send_json({"type": "error", "message": (
                    f"more than {limits.messages_per_second} messages a second (--limits "
                    f"messages_per_second); the game was ended")})
                return
            try:
                msg = loads_strict(text, "a message", limits.json_depth)
            except ValueError:
                continue  # not JSON: a page of ours never sends it; nothing to pass on
            if not isinstance(msg, dict):
                continue
            if msg.get("type") == "key" and isinstance(msg.get("key"), str):
                out = {"type": "key", "key": msg["key"][:20], "down": bool(msg.get("down"))}
            elif msg.get("type") == "speed" and msg.get("speed") in SPEEDS:
                out = {"type": "speed", "speed": msg["speed"]}
            else:
                continue
            proc.stdin.write(frame(json.dumps(out).encode()))
            await proc.stdin.drain()

    tasks = [asyncio.ensure_future(frames()), asyncio.ensure_future(keys())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        # A page that left ends its side with a disconnect error: the game ends with it.
        await asyncio.gather(*tasks, return_exceptions=True)


def live_routes(files, workers: Workers, checks, limits: Limits) -> list:
    """The routes of `/api/live/<game>` (a live game's state, polled) and `/ws/live` (a game
    played or watched over a WebSocket, `run_live`)."""
    from starlette.responses import JSONResponse
    from starlette.routing import Route, WebSocketRoute
    from starlette.websockets import WebSocketDisconnect

    polls = AddressRate(limits, "live_polls_per_second", 1.0)
    starts = AddressRate(limits, "game_starts_per_minute", 60.0)

    async def api_live(request):
        refused = polls.refusal(visitor(request.scope))
        if refused is not None:
            return refusal(refused, refused.status)
        game = workers.live.get(request.path_params["gid"])
        state = game.state() if game is not None else None
        if state is None:
            return refusal(ValueError("no such game (it has ended, or not begun?)"), 404)
        return JSONResponse(state)

    sockets = Quota(limits, "websockets_per_address", "websockets_in_all")

    async def ws_live(websocket):
        who = visitor(websocket.scope)
        refused = sockets.refusal(who) or starts.refusal(who)
        if refused is not None:
            await websocket.accept()
            await websocket.send_json({"type": "error", "message": str(refused)})
            return await websocket.close()
        with sockets.hold(who):  # before the first await: sockets opened together count
            try:
                await websocket.accept()
                await run_live(websocket, files, workers, checks, who, time.time_ns() % 10**9)
            except (WebSocketDisconnect, RuntimeError):
                return  # the page closed

    return [Route("/api/live/{gid}", api_live), WebSocketRoute("/ws/live", ws_live)]
