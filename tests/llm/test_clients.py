"""API keys (files, .env, environment, aliases, redaction) and the cloud clients against real
HTTP servers on 127.0.0.1 (errors, 429, slow answers, failover)."""

import logging
import pickle

import pytest

from spacewar_ai.llm.clients import (
    AnthropicClient,
    APIKeyManager,
    LLMError,
    OpenAICompatibleClient,
    Secret,
)
from spacewar_ai.llm.failover import FailoverClient, build_client
from tests.llm_server import FakeLLMServer

KEY = "sk-test-1234567890abcdef"
MESSAGES = [{"role": "system", "content": "You write code."},
            {"role": "user", "content": "Say hi."}]


def test_keys_from_files_dotenv_and_environment_with_aliases(tmp_path):
    (tmp_path / "claude.key.txt").write_text(KEY + "\n")
    (tmp_path / "grok.key.txt").write_text("xai-key-abcdefgh")
    (tmp_path / ".env").write_text("GEMINI_API_KEY=gem-key-abcdefgh\nOPENAI_API_KEY=oa-from-env-file\n")
    for p in tmp_path.iterdir():
        p.chmod(0o600)
    keys = APIKeyManager(tmp_path, environ={"OPENAI_API_KEY": "oa-from-environment",
                                            "GROQ_API_KEY": "groq-key-abcdefgh"})
    assert keys.get_available_providers() == ["anthropic", "openai", "google", "xai", "groq"]
    assert keys.get_key("claude").reveal() == KEY  # alias
    assert keys.get_key("gemini").reveal() == "gem-key-abcdefgh"
    assert keys.source("openai") == ".env (OPENAI_API_KEY)"  # .env before the environment
    assert keys.source("anthropic") == "claude.key.txt"
    assert keys.warnings == []
    assert APIKeyManager(tmp_path / "nowhere", environ={}).get_available_providers() == []


def test_keys_never_print_and_readable_key_files_warn(tmp_path, caplog):
    path = tmp_path / "openai.key.txt"
    path.write_text(KEY)
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING):
        keys = APIKeyManager(tmp_path, environ={})
    assert any("chmod 600" in w for w in keys.warnings)
    assert KEY not in caplog.text
    secret = keys.get_key("openai")
    for text in (repr(secret), str(secret), f"{secret}", repr(keys)):
        assert KEY not in text
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    assert keys.redact(f"bad key {KEY}!") == "bad key ***!"


@pytest.mark.slow
def test_anthropic_client_talks_to_a_messages_server():
    with FakeLLMServer([("text", "hello from claude")]) as server:
        client = AnthropicClient(Secret(KEY), "claude-test", server.url, timeout=5, retries=0)
        assert client.generate(MESSAGES) == "hello from claude"
        req = server.requests[0]
    assert req["path"] == "/v1/messages"
    # The SDK sends the key as x-api-key or as a bearer token, depending on its version.
    assert KEY in (req["headers"].get("x-api-key"), req["headers"].get("authorization", "")[7:])
    assert req["body"]["system"] == "You write code."
    assert req["body"]["messages"] == [{"role": "user", "content": "Say hi."}]
    assert req["body"]["model"] == "claude-test"


@pytest.mark.slow
def test_openai_compatible_client_retries_429_and_5xx_with_backoff():
    script = [("status", 429, "slow down", {"retry-after": "0"}), ("status", 503, "busy"),
              ("text", "third time lucky")]
    with FakeLLMServer(script) as server:
        client = OpenAICompatibleClient("together", Secret(KEY), "m", server.url + "/v1",
                                        timeout=5, retries=3, backoff=0.01)
        assert client.generate(MESSAGES) == "third time lucky"
        assert len(server.requests) == 3
        assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
        assert server.requests[0]["body"]["messages"] == MESSAGES


def test_errors_are_one_line_without_the_key_and_not_retried_when_pointless():
    keys = APIKeyManager("/nonexistent", environ={"OPENAI_API_KEY": KEY})
    with FakeLLMServer([("status", 401, f"invalid key {KEY}")]) as server:
        client = OpenAICompatibleClient("openai", keys.get_key("openai"), "m",
                                        server.url + "/v1", timeout=5, retries=3,
                                        backoff=0.01, redact=keys.redact)
        with pytest.raises(LLMError) as err:
            client.generate(MESSAGES)
        assert len(server.requests) == 1  # 401 is not retried
    message = str(err.value)
    assert "\n" not in message and KEY not in message and "401" in message


def _pieces(key: str, size: int = 8) -> set[str]:
    return {key[i:i + size] for i in range(len(key) - size + 1)}


def test_redaction_removes_pieces_of_every_known_key():
    keys = APIKeyManager("/nonexistent", environ={"OPENAI_API_KEY": KEY,
                                                  "GROQ_API_KEY": "gsk-other-0987654321"})
    text = (f"whole {KEY}, cut {KEY[:15]}, tail {KEY[-9:]}, masked sk-test-****cdef, "
            "other gsk-other-0987654321 and ok-words")
    clean = keys.redact(text)
    for key in (KEY, "gsk-other-0987654321"):
        assert not any(piece in clean for piece in _pieces(key)), clean
    assert "****cdef" in clean and "ok-words" in clean  # 4 characters are no piece


def test_a_server_that_echoes_the_key_across_the_cut_leaks_no_piece_of_it(capsys):
    keys = APIKeyManager("/nonexistent", environ={"OPENAI_API_KEY": KEY})
    said = "x" * 190 + f" invalid key {KEY} " + "y" * 300  # the key straddles 200 characters
    with FakeLLMServer([("status", 400, said)]) as server:
        client = OpenAICompatibleClient("openai", keys.get_key("openai"), "m",
                                        server.url + "/v1", timeout=5, retries=0,
                                        redact=keys.redact)
        failover = FailoverClient([client], keys.redact)
        with pytest.raises(LLMError) as err:
            failover.generate(MESSAGES)
    shown = str(err.value) + "".join(failover.failures) + capsys.readouterr().err
    assert not any(piece in shown for piece in _pieces(KEY)), shown
    assert "\n" not in str(err.value) and "400" in str(err.value)


@pytest.mark.slow
def test_a_trickling_server_is_given_up_at_the_deadline_retries_included():
    """A server that sends headers and then a byte every second never trips the SDK's read
    timeout; the request's total deadline ends it, and a retry does not start past it."""
    import time

    with FakeLLMServer([("trickle", 1.0)]) as server:
        client = OpenAICompatibleClient("custom", None, "m", server.url + "/v1", timeout=60,
                                        retries=3, backoff=0.01, deadline=3.0)
        start = time.monotonic()
        with pytest.raises(LLMError) as err:
            client.generate(MESSAGES)
        took = time.monotonic() - start
    assert took < 5.0, took
    assert "deadline of 3 s" in str(err.value) and "--llm-timeout" in str(err.value)
    with FakeLLMServer([("status", 429, "slow down", {"retry-after": "20"})]) as server:
        client = OpenAICompatibleClient("custom", None, "m", server.url + "/v1", timeout=5,
                                        retries=3, backoff=0.01, deadline=2.0)
        start = time.monotonic()
        with pytest.raises(LLMError, match="no time left for a retry"):
            client.generate(MESSAGES)
        assert time.monotonic() - start < 2.0 and len(server.requests) == 1


@pytest.mark.parametrize("step, fix", [
    (("status", 401, "no"), "check the key in environment (OPENAI_API_KEY)"),
    (("status", 404, "no such model"), "--llm-model"),
    (("status", 429, "later"), "--llm-provider")])
def test_each_failure_says_what_to_do(step, fix):
    keys = APIKeyManager("/nonexistent", environ={"OPENAI_API_KEY": KEY})
    with FakeLLMServer([step]) as server:
        client = build_client(keys, provider="openai", base_url=server.url + "/v1",
                              retries=0).clients[0]
        with pytest.raises(LLMError) as err:
            client.generate(MESSAGES)
    assert fix in str(err.value), str(err.value)


def test_an_unreachable_server_names_the_flag_to_check():
    client = OpenAICompatibleClient("custom", None, "m", "http://127.0.0.1:9/v1", timeout=2,
                                    retries=0)
    with pytest.raises(LLMError, match="could not reach http://127.0.0.1:9/v1.*--llm-base-url"):
        client.generate(MESSAGES)


@pytest.mark.parametrize("content, said", [({"0": "x"}, "an object, not text"),
                                           (7, "a number, not text"),
                                           ([{"type": "text", "text": 5}], "a list, not text")])
def test_a_reply_whose_content_is_not_text_is_one_line(content, said):
    with FakeLLMServer([("content", content)]) as server:
        for cls, args in ((OpenAICompatibleClient, ("custom", None, "m", server.url + "/v1")),
                          (AnthropicClient, ("k" * 20, "m", server.url))):
            client = cls(*args, timeout=5, retries=2, backoff=0.01)
            with pytest.raises(LLMError) as err:
                client.generate(MESSAGES)
            assert said in str(err.value) and "\n" not in str(err.value)
            assert client.attempts == 1  # a malformed reply is not asked for again


def test_text_in_content_parts_is_joined():
    parts = [{"type": "text", "text": "def strategy"}, {"type": "image_url"},
             {"type": "text", "text": "(obs)"}]
    with FakeLLMServer([("content", parts)]) as server:
        client = OpenAICompatibleClient("custom", None, "m", server.url + "/v1", timeout=5)
        assert client.generate(MESSAGES) == "def strategy(obs)"


def test_a_huge_reply_is_cut_off_not_read_whole():
    import time

    from spacewar_ai.llm.clients import MAX_REPLY_BYTES

    with FakeLLMServer([("big", 60_000_000)]) as server:
        client = OpenAICompatibleClient("custom", None, "m", server.url + "/v1", timeout=30,
                                        retries=2, backoff=0.01)
        start = time.monotonic()
        with pytest.raises(LLMError) as err:
            client.generate(MESSAGES)
        took = time.monotonic() - start
        assert f"larger than {MAX_REPLY_BYTES // 1024} KB" in str(err.value)
        assert client.attempts == 1 and took < 30, took
