"""Who may ask the browser app for what, and how much of it (web.py's guard).

- **Hosts.** Every request's Host header must name the server by one of its names
  (`--server-name`, default the loopback names): a page on another domain that resolves to this
  machine (DNS rebinding) is refused with 400. Starlette's TrustedHostMiddleware does this for
  HTTP, but reads `[::1]:8000` as the host `[`; `host_name` parses the header as a URL does.
- **Origins.** A WebSocket, and any request that is not a read (POST and the like), is accepted
  only from a page served under one of those names (the Origin header's host) or from an origin
  of `--allowed-origins`: any other site the user has open cannot drive the app or upload to it.
  A request without an Origin header is let through: browsers send one on every WebSocket and
  cross-site POST, and whoever sends none is not a browser page riding on the user's access.
- **Limits** (`Limits`, `--limits NAME=VALUE,...`): bodies read in chunks and refused once past
  their size (never read whole first), JSON depth, live games per client and in all, sandboxed
  strategy processes in all, a socket's messages per second, arena submissions per client per
  hour, and what an arena pairing may use (runners at once, memory, CPU time, wall-clock time,
  an ONNX model's time per decision). Each refusal is one line naming the limit and its
  setting.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..rating.arena import Confinement

_PAIRING = Confinement()

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class Limits:
    """What one server allows; `--limits games_in_all=16,...` changes any of them."""

    upload_bytes: int = 4 * 2**20  # an uploaded replay (the longest game's is a few hundred kB)
    submission_bytes: int = 4 * 2**20  # an arena submission (a strategy file is at most 64 kB)
    json_depth: int = 64  # nesting of any JSON the app reads
    message_bytes: int = 64 * 2**10  # one WebSocket message
    messages_per_second: int = 60  # from one socket (a player's keys: a few a second)
    games_per_client: int = 2  # live games (play or watch) one address has open
    games_in_all: int = 8  # live games on the server
    sandboxes_in_all: int = 4  # strategy files playing live, each a sandboxed process
    submissions_per_hour: int = 5  # arena uploads from one address
    stall_seconds: float = 10.0  # a live game whose worker sends nothing for this long ends
    arena_runners: int = 2  # arena pairings played at once, each a process of its own
    # What each pairing's process may use (rating.arena.Confinement, whose defaults these are).
    pairing_memory_mb: int = _PAIRING.memory_mb  # address space
    pairing_cpu_seconds: int = _PAIRING.cpu_seconds
    pairing_seconds: float = _PAIRING.seconds  # wall-clock time, kept across restarts
    decision_ms: float = _PAIRING.decision_ms  # an ONNX model's decision
    model_load_seconds: float = _PAIRING.load_seconds  # an ONNX model's loading

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"--limits {f.name}={v!r}: give a number > 0")

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
                raise ValueError(f"--limits {part.strip()!r}: {hint}")
            try:
                given[name] = float(value) if names[name] == "float" else int(value)
            except ValueError:
                raise ValueError(f"--limits {name}={value.strip()!r}: give a number") from None
        return cls(**given)


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


class TooLarge(ValueError):
    """A request body past its limit."""


async def read_body(request, limit: int, what: str, setting: str) -> bytes:
    """The request's body, read in chunks and refused (TooLarge) as soon as it passes `limit`
    bytes, or at once when its Content-Length says it will."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"{what} is {int(declared):,} bytes; at most {limit:,} "
                       f"(--limits {setting}=...)")
    size, chunks = 0, []
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"{what} is over {limit:,} bytes (--limits {setting}=...)")
        chunks.append(chunk)
    return b"".join(chunks)


class RateLimit:
    """At most `per_second` events in any one-second window (a sliding count)."""

    def __init__(self, per_second: int):
        self.per_second = per_second
        self.times: list[float] = []

    def allow(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        self.times = [t for t in self.times if now - t < 1.0]
        if len(self.times) >= self.per_second:
            return False
        self.times.append(now)
        return True
