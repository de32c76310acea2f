"""Failover between LLM clients and the client list the CLI's flags describe."""

import os

import pytest

from spacewar_ai.llm.clients import (
    AnthropicClient,
    APIKeyManager,
    OpenAICompatibleClient,
)
from spacewar_ai.llm.failover import FailoverClient, build_client
from tests.llm_server import FakeLLMServer

KEY = "sk-test-1234567890abcdef"


MESSAGES = [{"role": "system", "content": "You write code."},
            {"role": "user", "content": "Say hi."}]


@pytest.mark.slow
def test_slow_server_times_out_and_failover_moves_on():
    keys = APIKeyManager("/nonexistent", environ={"ANTHROPIC_API_KEY": KEY})
    with FakeLLMServer([("sleep", 3, "too late")]) as slow, \
            FakeLLMServer([("status", 500, "boom")]) as broken, \
            FakeLLMServer([("text", "from the third")]) as good:
        clients = [AnthropicClient(keys.get_key("anthropic"), "a", slow.url, timeout=0.5,
                                   retries=0, redact=keys.redact),
                   OpenAICompatibleClient("custom", None, "b", broken.url + "/v1", timeout=2,
                                          retries=1, backoff=0.01),
                   OpenAICompatibleClient("custom", None, "c", good.url + "/v1", timeout=2,
                                          retries=0)]
        failover = FailoverClient(clients, keys.redact)
        assert failover.generate(MESSAGES) == "from the third"
        assert failover.active is clients[2]
        assert len(failover.failures) == 2
        assert "Timeout" in failover.failures[0] and "500" in failover.failures[1]
        assert all(KEY not in f for f in failover.failures)
        # The provider that worked is tried first next time.
        assert failover.generate(MESSAGES) == "from the third"
        assert len(slow.requests) == 1 and len(broken.requests) == 2


def test_build_client_orders_providers_and_explains_missing_keys(tmp_path):
    keys = APIKeyManager(tmp_path, environ={"OPENAI_API_KEY": "oa-abcdefgh",
                                            "ANTHROPIC_API_KEY": "an-abcdefgh"})
    client = build_client(keys)
    assert [c.provider for c in client.clients] == ["anthropic", "openai"]
    with pytest.raises(ValueError, match="no API key for groq.*groq.key.txt"):
        build_client(keys, provider="groq")
    with pytest.raises(ValueError, match="no LLM available"):
        build_client(APIKeyManager(tmp_path, environ={}))
    custom = build_client(APIKeyManager(tmp_path, environ={}), base_url="http://127.0.0.1:9/v1")
    assert custom.clients[0].base_url == "http://127.0.0.1:9/v1"
    assert os.environ.get("OPENAI_API_KEY") != "oa-abcdefgh"  # nothing leaked into os.environ
