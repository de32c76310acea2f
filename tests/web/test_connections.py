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
    protocol = budgeted_protocol(ConnectionBudget(1, 1, 1.0))
    assert issubclass(protocol, H11Protocol)
    config = Config(app=lambda scope, receive, send: None, http=protocol)
    config.load()
    assert config.http_protocol_class is protocol
