"""The parts of uvicorn the connection budget leans on (web/connections.py): its h11 protocol
class is not a documented API, so the hooks the budget overrides and the attributes it reads are
checked here, against the version pyproject.toml pins."""

import inspect

import pytest

pytest.importorskip("uvicorn")


def test_the_h11_protocol_hooks_the_budget_overrides_are_there():
    import h11
    from uvicorn.config import Config
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from spacewar_ai.web.connections import ConnectionBudget, budgeted_protocol

    for hook in ("connection_made", "data_received", "connection_lost"):
        assert list(inspect.signature(getattr(H11Protocol, hook)).parameters)[0] == "self"
    assert "self.transport = transport" in inspect.getsource(H11Protocol.connection_made)
    init = inspect.getsource(H11Protocol.__init__)
    assert "self.conn = h11.Connection(" in init and "self.loop = " in init
    assert isinstance(h11.IDLE, type)  # the state the head deadline compares with
    # uvicorn takes a protocol class as `http` and builds it with these keywords.
    from spacewar_ai.web.guard import Limits

    protocol = budgeted_protocol(ConnectionBudget(Limits(), 1))
    assert issubclass(protocol, H11Protocol)
    config = Config(app=lambda scope, receive, send: None, http=protocol)
    config.load()
    assert config.http_protocol_class is protocol


def test_uvicorns_refusals_are_one_line_per_condition():
    """uvicorn logs each connection past limit_concurrency; the filter on its logger keeps the
    first of a run of them and says, at the next run, how many it held."""
    import logging

    from spacewar_ai.web.connections import OncePerCondition

    now = [0.0]
    folded = OncePerCondition(clock=lambda: now[0])

    def record(message):
        return logging.LogRecord("uvicorn.error", logging.WARNING, "", 0, message, (), None)

    kept = []
    for t in (0.0, 1.0, 2.0, 30.0, 200.0, 201.0):
        now[0] = t
        r = record("Exceeded concurrency limit.")
        if folded.filter(r):
            kept.append(r.getMessage())
    assert len(kept) == 2 and "refusing connections" in kept[0]
    assert "(3 more were refused the last time)" in kept[1]
    assert folded.filter(record("something else"))  # other lines pass untouched
    # What the filter matches is the line uvicorn writes.
    from uvicorn.protocols.http import h11_impl
    assert f'message = "{OncePerCondition.MESSAGE}"' in inspect.getsource(h11_impl)
