"""Who may ask the browser app for what, and how much of it.

- **Hosts.** A request's Host header must name the server (`--server-name`), against DNS
  rebinding; `host_name` parses it as a URL does (Starlette's middleware misreads `[::1]:8000`).
- **Origins.** A WebSocket or any request that is not a read is accepted only from a page served
  under those names or an origin of `--allowed-origins`; a request without an Origin header is
  not a browser page and is let through.
- **Visitors.** Budgets count `visitor(scope)`: the client's address or a trusted proxy's
  forwarded one (an IPv6 address by its /64).
- **Budgets** (`Limits`, `--limits NAME=VALUE,...`): every resource a visitor can use, declared
  once with its default, what it bounds and whether per address or in all. Each refusal is one
  line naming the budget."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import ipaddress
import json
import logging
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..rating.arena import Confinement
from ..util.errors import UserError

_PAIRING = Confinement()
LOG = logging.getLogger("spacewar_ai.web")  # the server's one log (connections.py writes it too)

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


EACH, ADDRESS, ALL = "each", "per address", "in all"
RETRY_SECONDS = 5  # the Retry-After of a busy refusal


def budget(default, what: str, scope: str = EACH):
    """A field of Limits: its default, what it bounds (the words of `--limits` and
    docs/browser.md) and what it counts over: each connection, request, socket or process
    (EACH), each visitor's address (ADDRESS) or the whole server (ALL)."""
    return dataclasses.field(default=default, metadata={"what": what, "scope": scope})


@dataclass(frozen=True)
class Limits:
    """Every budget the server keeps, declared once: `--limits` prints them and changes any
    (`--limits games_in_all=16,...`), and docs/browser.md's table is this one. A budget is
    checked before the work it bounds, and a refusal is one line naming it."""

    # Connections and sockets.
    connections_per_address: int = budget(
        32, "open connections from one address (a trusted proxy's are counted in all only)",
        ADDRESS)
    connections_in_all: int = budget(
        1000, "open connections in all; lowered to fit the process's descriptor limit", ALL)
    backlog: int = budget(
        128, "connections waiting to be accepted (uvicorn's backlog), kept free of descriptors",
        ALL)
    head_seconds: float = budget(
        10.0, "time for a request's headers to arrive, from the connection or its last answer")
    head_bytes: int = budget(16384, "a request's headers, however they arrive (refused with 431)")
    keep_alive_seconds: int = budget(
        5, "an idle connection kept open after an answer (uvicorn's timeout_keep_alive)")
    shutdown_seconds: float = budget(
        5.0, "time a stopping server gives the requests in flight (queued and running checks "
             "included) before it ends them (uvicorn's timeout_graceful_shutdown)")
    ping_seconds: float = budget(
        20.0, "WebSocket ping interval, and the time a pong may take (uvicorn's ws_ping_*)")
    body_seconds: float = budget(
        60.0, "time for an upload's body to arrive (refused with 408 past it)")
    websockets_per_address: int = budget(4, "open WebSockets", ADDRESS)
    websockets_in_all: int = budget(64, "open WebSockets in all", ALL)
    first_message_seconds: float = budget(
        10.0, "time from a WebSocket's opening to its first message")
    message_bytes: int = budget(64 * 2**10, "one WebSocket message (uvicorn closes past it)")
    messages_per_second: int = budget(60, "messages from one socket; past it the game ends")
    address_share: float = budget(
        0.25, "the share of a budget in all with no budget per address that one address may "
              "hold (at least one of it), so that no address holds what all visitors share",
        ADDRESS)
    # What a visitor sends.
    upload_bytes: int = budget(4 * 2**20, "an uploaded replay")
    submission_bytes: int = budget(4 * 2**20, "an arena submission")
    json_depth: int = budget(64, "nesting of any JSON read")
    replay_frames: int = budget(
        200_000, "engine frames one replay may ask the server to play (steps x frame_skip)")
    answer_mb: int = budget(
        16, "one answer (a replay's frames, which its torpedoes in flight make large)")
    answers_mb_in_all: int = budget(
        64, "answers being sent at once, in all; past it a replay's answer is refused as busy",
        ALL)
    answer_seconds: float = budget(
        60.0, "time to send an answer; a reader slower than that is cut off and its answer freed")
    # Checks of a visitor's bytes, each in a confined process (web/checks.py).
    checkers: int = budget(1, "checker processes for replays", ALL)
    quick_checkers: int = budget(
        1, "checker processes for arena uploads and pages' pilot specs, apart from the replays' "
           "so that costly replays cannot hold them up", ALL)
    checks_queued: int = budget(
        16, "checks waiting or running in each lane (replays; uploads and specs)", ALL)
    checks_per_address: int = budget(2, "checks waiting or running", ADDRESS)
    check_seconds: float = budget(
        20.0, "wall-clock time of one check; its process is killed past it")
    check_memory_mb: int = budget(2048, "address space of a checker process")
    check_cpu_per_hour: float = budget(
        60.0, "seconds of checking one address may use in an hour (CPU or wall clock, "
              "whichever is more)", ADDRESS)
    # Live games.
    games_per_client: int = budget(2, "live games (play or watch) open", ADDRESS)
    games_in_all: int = budget(8, "live games on the server (each worker about 0.5 GB)", ALL)
    sandboxes_in_all: int = budget(4, "strategy files playing live, each a sandboxed process", ALL)
    game_starts_per_minute: int = budget(
        20, "live games (play or watch) started in a minute, those ended at once included",
        ADDRESS)
    live_polls_per_second: int = budget(
        10, "requests for a live game's state (/api/live) in a second", ADDRESS)
    stall_seconds: float = budget(10.0, "a live game whose worker sends nothing this long ends")
    replays_kept: int = budget(
        2000, "live games' saved rounds kept (runs/live/replays), the oldest removed first", ALL)
    replays_mb: int = budget(50, "the disk those saved rounds may fill", ALL)
    # The arena.
    submissions_per_hour: int = budget(5, "arena submissions accepted in an hour", ADDRESS)
    attempts_per_hour: int = budget(
        20, "arena uploads in an hour, refused ones included (checked before the body is "
            "read)", ADDRESS)
    pairings_per_entrant: int = budget(
        8, "pairings a new arena entrant plays, against opponents near its rating")
    arena_runners: int = budget(2, "arena pairings played at once, each a confined process", ALL)
    # What each pairing's process may use (rating.arena.Confinement, whose defaults these are).
    pairing_memory_mb: int = budget(_PAIRING.memory_mb, "a pairing process's address space")
    pairing_cpu_seconds: int = budget(_PAIRING.cpu_seconds, "a pairing process's CPU time")
    pairing_seconds: float = budget(
        _PAIRING.seconds, "a pairing's wall-clock time, counted across restarts")
    decision_ms: float = budget(_PAIRING.decision_ms, "an arena ONNX model's decision")
    model_load_seconds: float = budget(_PAIRING.load_seconds, "an arena ONNX model's loading")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise UserError(f"--limits {f.name}={v!r}: give a number > 0")

    @classmethod
    def parse(cls, text: str | None) -> "Limits":
        """`NAME=VALUE,NAME=VALUE` over the defaults; ValueError naming a bad part."""
        from ..config import nearest

        if not text:
            return cls()
        names = {f.name: f.type for f in dataclasses.fields(cls)}
        given = {}
        for part in text.split(","):
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or name not in names:
                hint = nearest(name, names) or f"the limits are {', '.join(names)}"
                raise UserError(f"--limits {part.strip()!r}: {hint}")
            try:
                given[name] = float(value) if names[name] == "float" else int(value)
            except ValueError:
                raise UserError(f"--limits {name}={value.strip()!r}: give a number") from None
        return cls(**given)

    def rows(self) -> list[tuple[str, str, str, str]]:
        """(name, value, scope, what) of every budget, in the order declared."""
        return [(f.name, f"{getattr(self, f.name):g}" if isinstance(getattr(self, f.name), float)
                 else str(getattr(self, f.name)), f.metadata["scope"], f.metadata["what"])
                for f in dataclasses.fields(self)]

    def table(self) -> str:
        """The budgets as `--limits` prints them."""
        rows = self.rows()
        width = max(len(r[0]) for r in rows)
        return "\n".join(f"{name:<{width}}  {value:>8}  {scope:<11}  {what}"
                         for name, value, scope, what in rows)


class Refused(UserError):
    """A request refused by a budget before its work: one line, and `status` 429 when the
    visitor's address is at its most, 503 when the server is."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def over_budget(limits: Limits, name: str, held: float, yours: bool,
                most: float | None = None) -> Refused:
    """The refusal of budget `name` of `limits`, in the words of its row in the table
    (`--limits` and docs/browser.md): what it bounds, how much is held of `most` (default the
    budget's value) and the setting."""
    field = next(f for f in dataclasses.fields(limits) if f.name == name)
    value = getattr(limits, name)
    whose = "your address is" if yours else "the server is"
    most = value if most is None else most
    return Refused(f"{field.metadata['what']}: {whose} at its most ({held:g} of {most:g}, "
                   f"--limits {name}={value:g}); "
                   + ("finish or close some first" if yours else "try again in a minute"),
                   429 if yours else 503)


class Quota:
    """What visitors hold of one resource, kept against its budgets in Limits: `per_address`
    and `in_all` name the fields (either may be None), `in_all_value` overrides the latter's
    value (the connections' budget, lowered to the descriptor limit); `shared` is False where
    another Quota already bounds each address's part of the budget in all. The one mechanism
    every held budget uses: `refusal` is asked before the work, `hold` takes and gives back
    however the work ends."""

    def __init__(self, limits: Limits, per_address: str | None = None,
                 in_all: str | None = None, in_all_value: float | None = None,
                 shared: bool = True):
        self.limits = limits
        self.per_address = per_address
        self.in_all = in_all
        self.in_all_value = in_all_value
        self.shared = shared
        self.held: collections.Counter = collections.Counter()
        self.total = 0

    def refusal(self, visitor: str, n: int = 1, per_address: bool = True) -> Refused | None:
        """Why `n` more for `visitor` would pass a budget (the count in all alone without
        `per_address`), or None. Of a budget in all with no budget per address of its own, an
        address holds at most its share (`address_share`), though always one thing of any
        size."""
        held = self.held[visitor]
        if per_address and self.per_address is not None and \
                held + n > getattr(self.limits, self.per_address):
            return over_budget(self.limits, self.per_address, held, True)
        if self.in_all is not None:
            most = self.in_all_value if self.in_all_value is not None \
                else getattr(self.limits, self.in_all)
            share = max(1, int(most * self.limits.address_share))
            if self.shared and self.per_address is None and per_address and held and \
                    held + n > share:
                return over_budget(self.limits, "address_share", held, True, share)
            if self.total + n > most:
                return over_budget(self.limits, self.in_all, self.total, False, most)
        return None

    def take(self, visitor: str, n: int = 1) -> None:
        self.held[visitor] += n
        self.total += n

    def give(self, visitor: str, n: int = 1) -> None:
        self.held[visitor] -= n
        self.total -= n
        if self.held[visitor] <= 0:
            del self.held[visitor]

    @contextlib.contextmanager
    def hold(self, visitor: str, n: int = 1):
        """Take `n` for `visitor`, refused (Refused) past a budget; given back on leaving."""
        refused = self.refusal(visitor, n)
        if refused is not None:
            raise refused
        self.take(visitor, n)
        try:
            yield
        finally:
            self.give(visitor, n)


def visitor(scope) -> str:
    """The address a request's budgets count: the client's (a trusted proxy's X-Forwarded-For
    has replaced it already), an IPv6 address by its /64, which one host holds whole. ValueError
    if it is not an address (a forwarded value such as "unknown")."""
    client = scope.get("client")
    text = client[0] if client else ""
    try:
        return address_key(text)
    except ValueError:
        raise UserError(f"the client address {text[:60]!r} is not an address; a proxy must "
                        "forward the visitor's address in X-Forwarded-For") from None


def address_key(text: str) -> str:
    """What budgets count an address under: an IPv4 address as it is, an IPv6 one by its /64
    (one host holds a whole /64), an IPv4-mapped one as its IPv4. ValueError if not one."""
    address = ipaddress.ip_address(text)
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def host_name(value: str) -> str:
    """The host of a Host header or an Origin (no port, no brackets), lower case; "" if none."""
    value = value.strip()
    if not value or value == "null":
        return ""
    try:
        return (urlsplit(value if "//" in value else "//" + value).hostname or "").lower()
    except ValueError:
        return ""


class Guard:
    """ASGI middleware: the Host check on everything, the Origin check on WebSockets and on
    requests that are not reads."""

    READS = (b"GET", b"HEAD", b"OPTIONS")

    def __init__(self, app, names=LOOPBACK_NAMES, origins=()):
        self.app = app
        self.names = {n.lower().strip("[]") for n in names}
        self.origins = {o.rstrip("/").lower() for o in origins}

    def origin_allowed(self, origin: str) -> bool:
        return host_name(origin) in self.names or origin.rstrip("/").lower() in self.origins

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if host_name(host) not in self.names:
            return await self._refuse(scope, receive, send, 400,
                                      f"Host {host[:100]!r} is not a name of this server")
        try:
            visitor(scope)
        except ValueError as exc:
            return await self._refuse(scope, receive, send, 400, str(exc))
        origin = headers.get("origin")
        checks_origin = scope["type"] == "websocket" or \
            scope.get("method", "GET").encode() not in self.READS
        if checks_origin and origin is not None and not self.origin_allowed(origin):
            return await self._refuse(scope, receive, send, 403,
                                      f"requests from {origin[:100]!r} are not accepted")
        return await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(scope, receive, send, status: int, message: str):
        if scope["type"] == "websocket":
            await receive()  # websocket.connect; closing before accepting answers 403
            await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
            return
        body = json.dumps({"error": message}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def refusal(exc: BaseException, status: int = 400):
    """The answer to a request refused for `exc`: one line, nothing of any file or path
    (live.public_message); a refusal that may leave a body unread closes the connection."""
    from starlette.responses import JSONResponse

    from .live import public_message

    headers = {"connection": "close"} if status in (408, 413, 429) else {}
    if status == 503:  # busy: a client that heeds it comes back later instead of at once
        headers["retry-after"] = str(RETRY_SECONDS)
    return JSONResponse({"error": public_message(exc)}, status_code=status,
                        headers=headers or None)


def failure(exc: BaseException, what: str):
    """The answer when the server's own side fails at `what`: one line to the visitor, one to
    the log (the kind of failure only, nothing the visitor sent), never a traceback."""
    from starlette.responses import JSONResponse

    LOG.warning("%s failed: %s", what, type(exc).__name__)
    return JSONResponse({"error": f"the server could not do {what}; try again later"},
                        status_code=500)


class TooLarge(UserError):
    """A request body past its limit."""

    status = 413


class TooSlow(UserError):
    """A request body that took longer than its time to arrive."""

    status = 408


async def read_body(request, limit: int, what: str, setting: str, seconds: float) -> bytes:
    """The request's body, read in chunks and refused (TooLarge) as soon as it passes `limit`
    bytes, or at once when its Content-Length says it will; TooSlow if it has not all arrived
    within `seconds` (the body_seconds budget), however slowly it trickles."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"{what} is {int(declared):,} bytes; at most {limit:,} "
                       f"(--limits {setting}=...)")
    from starlette.requests import ClientDisconnect

    size, chunks = 0, []
    try:
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise TooLarge(f"{what} is over {limit:,} bytes (--limits {setting}=...)")
                chunks.append(chunk)
    except TimeoutError:
        raise TooSlow(f"{what} took over {seconds:g} s to arrive (--limits body_seconds)") \
            from None
    except ClientDisconnect:
        raise TooSlow(f"{what} stopped arriving: the connection closed") from None
    return b"".join(chunks)


async def discard_body(request, limit: int, seconds: float) -> None:
    """Read and drop what a refused request still sends (at most `limit` bytes, for at most
    `seconds`), so that its one-line answer reaches the sender instead of a reset connection.
    Reading costs the server little; checking is what a refusal spares it."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return
    size = 0
    with contextlib.suppress(Exception):  # a deadline passed or a sender gone: nothing to do
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    return


class AddressRate:
    """Budget `name` of Limits as a rate: at most that many events from one address (or one
    socket, whatever the key) in any `window` seconds (a sliding count). `refusal` counts the event when it passes; addresses
    with nothing in the window are forgotten, so the table holds only the recent."""

    def __init__(self, limits: Limits, name: str, window: float):
        self.limits, self.name, self.window = limits, name, window
        self.times: dict[str, collections.deque] = {}

    def refusal(self, visitor: str, now: float | None = None) -> Refused | None:
        now = time.monotonic() if now is None else now
        if len(self.times) > 10_000:
            for key in [k for k, t in self.times.items() if now - t[-1] >= self.window]:
                del self.times[key]
        seen = self.times.setdefault(visitor, collections.deque())
        while seen and now - seen[0] >= self.window:
            seen.popleft()
        if len(seen) >= getattr(self.limits, self.name):
            return over_budget(self.limits, self.name, len(seen), True)
        seen.append(now)
        return None
