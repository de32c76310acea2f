"""Connections as a budget: how many one address may hold, how many the server holds in all (never
more than its file descriptors allow), and how long a request's headers may take.

`budgeted_protocol` gives uvicorn (`uvicorn.Config(http=...)`) a subclass of its h11 protocol
that checks the three before any of the app runs. `H11Protocol` is not a documented API: the
uvicorn range is pinned in pyproject.toml and tests/web/test_connections.py checks the methods
overridden (`connection_made`, `data_received`) and the attributes read (`transport`, `conn`).

A connection over a count gets one 503 line and is closed; a trusted proxy's count in all only.
The count in all is lowered to what the descriptor limit leaves after the server's own files. A
connection waiting for headers is closed `head_seconds` after it began waiting, however slowly
it trickles. Each condition is logged once when it begins and once when it ends."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import resource
import time

from ..util.errors import UserError
from .guard import LOG, Quota, address_key

# Descriptors the server keeps for itself beyond connections: the listening socket, the
# database, static files, logs, and a few pipes for every worker process.
RESERVED_FDS = 64
FDS_PER_WORKER = 6
ANSWER_WATCH_SECONDS = 1.0  # how often a connection's answer in flight is looked at


def descriptor_budget(wanted: int, workers: int, backlog: int) -> int:
    """Connections the server may hold: `wanted`, lowered to what the descriptor limit leaves
    after the server's own (RESERVED_FDS and FDS_PER_WORKER for each of `workers`) and a
    `backlog` of connections accepted in one go before any is counted (asyncio accepts up to the
    backlog at a time). The soft limit is raised towards the hard one first, as servers do.
    ValueError if nothing is left."""
    reserve = RESERVED_FDS + FDS_PER_WORKER * workers + backlog
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = wanted + reserve
    if soft != resource.RLIM_INFINITY and soft < want:
        raised = want if hard == resource.RLIM_INFINITY else min(want, hard)
        with contextlib.suppress(ValueError, OSError):  # not ours to raise: the limit stands
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
    fit = wanted if soft == resource.RLIM_INFINITY else min(wanted, soft - reserve)
    if fit < 1:
        raise UserError(f"the descriptor limit ({soft}) leaves no connections after the "
                        f"server's own {reserve}: raise it (ulimit -n) or lower games_in_all")
    return fit


class Condition:
    """A refusal that may last (an address at its most, the server at its most): logged once
    when it begins and once when it ends, with the count it refused meanwhile."""

    def __init__(self, says: str):
        self.says = says
        self.refused = 0

    def hit(self) -> None:
        if self.refused == 0:
            LOG.warning("%s; refusing until it clears", self.says)
        self.refused += 1

    def clear(self) -> None:
        if self.refused:
            LOG.warning("%s no longer: %d refused meanwhile", self.says, self.refused)
            self.refused = 0


class ConnectionBudget:
    """The open connections by address, held against `connections_per_address` and
    `connections_in_all` (lowered to `in_all` to fit the descriptors) through the budgets'
    Quota; a trusted proxy's count in all only."""

    def __init__(self, limits, in_all: int, proxies=()):
        self.limits = limits
        self.quota = Quota(limits, "connections_per_address", "connections_in_all", in_all)
        self.proxies = [ipaddress.ip_network(p, strict=False) for p in proxies]
        self.admitted: dict = {}  # transport -> the address it is counted under
        self.conditions: dict[str, Condition] = {}
        self.heads = Condition("headers: a request's head over head_bytes")
        self.slow_readers = Condition("answers: a reader slower than answer_seconds cut off")

    @property
    def total(self) -> int:
        return self.quota.total

    def _proxy(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in net for net in self.proxies)

    def admit(self, transport) -> str:
        """"" if the connection may be served (it is counted until `release`), else why not."""
        peer = transport.get_extra_info("peername")
        raw = str(peer[0]) if peer else "?"
        try:
            address = address_key(raw)  # an IPv6 host by its /64, as every budget counts it
        except ValueError:
            address = raw
        # A proxy's connections are checked against the count in all alone.
        proxy = self._proxy(raw)
        refused = self.quota.refusal(address, per_address=not proxy)
        if refused is not None and self._prune():
            refused = self.quota.refusal(address, per_address=not proxy)
        if refused is not None:
            key = "*" if refused.status == 503 else address
            self.conditions.setdefault(key, Condition(
                f"connections: {'the server' if key == '*' else address} holds its most")).hit()
            return str(refused)
        for key in ("*", address):
            if key in self.conditions:
                self.conditions.pop(key).clear()
        self.quota.take(address)
        self.admitted[transport] = address
        return ""

    def _prune(self) -> bool:
        """Release the connections that closed without this protocol hearing it (one upgraded
        to a WebSocket closes under the WebSocket's protocol); whether any were."""
        closed = [t for t in self.admitted if t.is_closing()]
        for transport in closed:
            self.release(transport)
        return bool(closed)

    def release(self, transport) -> None:
        """The connection has closed: what it held goes back."""
        address = self.admitted.pop(transport, None)
        if address is not None:
            self.quota.give(address)


def refuse_connection(transport, why: str,
                      status: bytes = b"503 Service Unavailable") -> None:
    """Answer a connection that is over budget with one line (503) and close it."""
    body = ('{"error": "' + why.replace('"', "'") + '"}').encode()
    transport.write(b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\n"
                    b"connection: close\r\ncontent-length: " + str(len(body)).encode() +
                    b"\r\n\r\n" + body)
    transport.close()


def budgeted_protocol(budget: ConnectionBudget):
    """uvicorn's h11 protocol class with `budget`'s checks (module docstring)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class BudgetedH11(H11Protocol):
        head_timer: asyncio.TimerHandle | None = None
        head_seen = 0  # bytes of the head now arriving
        answer_timer: asyncio.TimerHandle | None = None
        sending_since: float | None = None  # when the answer now going out began to

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            why = budget.admit(transport)
            if why:
                refuse_connection(transport, why)
                return
            self._wait_for_head()
            self._watch_answer()

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE:
                # h11 bounds a head only while it is incomplete; one that arrives whole in a
                # single read is counted here, so the bound holds however the bytes come.
                end = data.find(b"\r\n\r\n")
                self.head_seen += len(data) if end < 0 else end + 4
                if self.head_seen > budget.limits.head_bytes:
                    budget.heads.hit()
                    refuse_connection(self.transport, f"the request's headers are over "
                                      f"{budget.limits.head_bytes:,} bytes (--limits head_bytes)",
                                      b"431 Request Header Fields Too Large")
                    return
                if end >= 0:
                    self.head_seen = 0
                    budget.heads.clear()
            super().data_received(data)
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._wait_for_head()  # bytes of headers still to come: the clock runs on
            elif self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None

        def _wait_for_head(self) -> None:
            if self.head_timer is None:
                self.head_timer = self.loop.call_later(budget.limits.head_seconds, self._head_late)

        def _head_late(self) -> None:
            self.head_timer = None
            if self.conn.their_state is h11.IDLE:
                self.transport.close()

        def _watch_answer(self) -> None:
            """Every second: an answer that has been going out for answer_seconds (its
            headers sent and its body not yet all, or bytes still waiting in the buffer) is
            cut off, and the buffer holding it freed. After an upgrade to a WebSocket the
            connection is no longer this protocol's, and the watch ends."""
            self.answer_timer = None
            transport = self.transport
            if transport.is_closing() or transport.get_protocol() is not self:
                return
            now = self.loop.time()
            if self.conn.our_state is h11.SEND_BODY or transport.get_write_buffer_size():
                self.sending_since = self.sending_since or now
                if now - self.sending_since > budget.limits.answer_seconds:
                    budget.slow_readers.hit()
                    transport.abort()  # close() would keep the buffer until it is read
                    return
            else:
                self.sending_since = None
            self.answer_timer = self.loop.call_later(ANSWER_WATCH_SECONDS, self._watch_answer)

        def connection_lost(self, exc) -> None:
            for timer in (self.head_timer, self.answer_timer):
                if timer is not None:
                    timer.cancel()
            self.head_timer = self.answer_timer = None
            budget.release(self.transport)
            super().connection_lost(exc)

    return BudgetedH11


class OncePerCondition(logging.Filter):
    """uvicorn logs "Exceeded concurrency limit." once for every connection it refuses; this
    filter on its logger lets the first through and holds the rest until QUIET_SECONDS pass
    without one, then says how many were held: one line per condition, as ours."""

    MESSAGE = "Exceeded concurrency limit."
    QUIET_SECONDS = 60.0

    def __init__(self, clock=time.monotonic):
        super().__init__()
        self.clock = clock
        self.last = -float("inf")
        self.held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() != self.MESSAGE:
            return True
        now = self.clock()
        quiet, self.last = now - self.last > self.QUIET_SECONDS, now
        if not quiet:
            self.held += 1
            return False
        record.msg = ("Exceeded concurrency limit: refusing connections, logged once until a "
                      "minute passes without one"
                      + (f" ({self.held} more were refused the last time)" if self.held else ""))
        record.args, self.held = (), 0
        return True


def fold_uvicorn_refusals() -> None:
    """Put OncePerCondition on uvicorn's error logger, once per process."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, OncePerCondition) for f in logger.filters):
        logger.addFilter(OncePerCondition())


class quiet_accept_errors:
    """A loop exception handler that logs asyncio's "socket.accept() out of system resource"
    once while it lasts (asyncio retries every second) and passes everything else on."""

    MESSAGE = "socket.accept() out of system resource"
    QUIET_SECONDS = 60.0

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.previous = loop.get_exception_handler()
        self.last = -float("inf")
        self.count = 0

    def __call__(self, loop, context) -> None:
        if context.get("message") == self.MESSAGE:
            now = loop.time()
            if now - self.last > self.QUIET_SECONDS:
                LOG.warning("accept: out of file descriptors (%s); accepting again every "
                            "second, logged again after a minute of quiet",
                            context.get("exception"))
            self.last = now
            self.count += 1
            return
        if self.previous is not None:
            self.previous(loop, context)
        else:
            loop.default_exception_handler(context)
