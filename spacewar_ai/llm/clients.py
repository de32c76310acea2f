"""LLM access: API keys, cloud clients behind one interface, retries and failover.

LLMs answer in hundreds of milliseconds, so they write strategy files (strategies.py), never
play. `APIKeyManager(keys_dir)` finds keys in `<provider>.key.txt`, `.env` and the environment
(in that order), resolves aliases and keeps each in a `Secret` that never prints. Every client
has `generate(messages, max_tokens, temperature) -> str`: `AnthropicClient`,
`OpenAICompatibleClient` (any provider of `PROVIDER_CONFIGS` or a server URL) and
`local.LocalLLMClient`. Retryable failures are retried within one deadline;
`failover.FailoverClient` moves to the next provider; each failure is one line, keys redacted."""

from __future__ import annotations

import logging
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from ..util.errors import UserError
from ..util.preflight import read_bounded

log = logging.getLogger(__name__)

# Provider name -> environment variables that may hold its key (first found wins).
ENV_VARS = {
    "anthropic": ("ANTHROPIC_API_KEY", "CLAUDE_API_KEY"),
    "openai": ("OPENAI_API_KEY",),
    "google": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "xai": ("XAI_API_KEY", "GROK_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
}
PROVIDERS = tuple(ENV_VARS)
ALIASES = {"claude": "anthropic", "gemini": "google", "grok": "xai", "gpt": "openai",
           "chatgpt": "openai", "mistralai": "mistral", "togetherai": "together",
           "together_ai": "together", "open_router": "openrouter", "x.ai": "xai"}


def canonical_provider(name: str) -> str:
    low = name.strip().lower()
    return ALIASES.get(low, low)


class Secret:
    """A key that never prints itself: repr, str and f-strings show `Secret('***')`."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("a Secret cannot be pickled (keys are never written anywhere)")


FRAGMENT = 8  # characters of a key that count as a piece of it
MAX_KEY_FILE_BYTES = 64 * 1024  # a key file or .env holds a few keys, never more than this


def redact_secrets(text: str, secrets: list[str]) -> str:
    """Replace every run of text that is a piece (FRAGMENT characters or more) of a secret.
    Anything but a string is redacted as its str()."""
    if not isinstance(text, str):
        text = str(text)
    pieces = {v[i:i + FRAGMENT] for v in secrets if len(v) >= 6
              for i in range(max(1, len(v) - FRAGMENT + 1))}
    if not pieces or not text:
        return text
    covered = bytearray(len(text))
    for value in secrets:  # short keys (under FRAGMENT characters) are matched whole
        if 6 <= len(value) < FRAGMENT:
            start = text.find(value)
            while start >= 0:
                covered[start:start + len(value)] = b"\1" * len(value)
                start = text.find(value, start + 1)
    width = min((len(p) for p in pieces), default=FRAGMENT)
    for i in range(len(text) - width + 1):
        if text[i:i + width] in pieces:
            covered[i:i + width] = b"\1" * width
    out, i = [], 0
    while i < len(text):
        if covered[i]:
            while i < len(text) and covered[i]:
                i += 1
            out.append("***")
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


class APIKeyManager:
    """Finds API keys; `get_available_providers()` lists the providers that have one."""

    def __init__(self, keys_dir: str | os.PathLike = ".", environ: dict | None = None):
        self.keys_dir = Path(keys_dir)
        self._keys: dict[str, Secret] = {}
        self._source: dict[str, str] = {}
        self.warnings: list[str] = []
        environ = os.environ if environ is None else environ
        if self.keys_dir.is_dir():
            for path in sorted(self.keys_dir.glob("*.key.txt")):
                provider = canonical_provider(path.name[: -len(".key.txt")])
                self._check_permissions(path)
                value = read_bounded(path, "key file", MAX_KEY_FILE_BYTES).decode(
                    "utf-8", errors="replace").strip()
                if value and provider not in self._keys:
                    self._add(provider, value, path.name)
            dotenv_path = self.keys_dir / ".env"
            if dotenv_path.exists():
                import io

                from dotenv import dotenv_values

                self._check_permissions(dotenv_path)
                text = read_bounded(dotenv_path, "keys file", MAX_KEY_FILE_BYTES).decode(
                    "utf-8", errors="replace")
                self._from_mapping(dotenv_values(stream=io.StringIO(text)), ".env")
        self._from_mapping(environ, "environment")

    def _from_mapping(self, mapping, source: str) -> None:
        for provider, names in ENV_VARS.items():
            for name in names:
                value = (mapping.get(name) or "").strip()
                if value and provider not in self._keys:
                    self._add(provider, value, f"{source} ({name})")

    def _add(self, provider: str, value: str, source: str) -> None:
        self._keys[provider] = Secret(value)
        self._source[provider] = source

    def _check_permissions(self, path: Path) -> None:
        mode = path.stat().st_mode
        if mode & (stat.S_IRGRP | stat.S_IROTH):
            msg = (f"{path} can be read by other users (mode {stat.filemode(mode)}); "
                   f"chmod 600 {path}")
            self.warnings.append(msg)
            log.warning(msg)

    def get_available_providers(self) -> list[str]:
        """Providers with a key, in the order they are tried."""
        return [p for p in PROVIDERS if p in self._keys] + \
               sorted(p for p in self._keys if p not in PROVIDERS)

    def get_key(self, provider: str) -> Secret | None:
        return self._keys.get(canonical_provider(provider))

    def source(self, provider: str) -> str | None:
        """Where a provider's key came from (a file name, .env or the environment)."""
        return self._source.get(canonical_provider(provider))

    def redact(self, text: str) -> str:
        """text with every known key, and every piece of one FRAGMENT characters or longer,
        replaced by ***: a server that echoes part of a key (cut short, or masked in the middle)
        leaks nothing either."""
        return redact_secrets(text, [k.reveal() for k in self._keys.values()])

    def __repr__(self) -> str:
        return f"APIKeyManager(keys_dir={str(self.keys_dir)!r}, " \
               f"providers={self.get_available_providers()})"


@dataclass(frozen=True)
class ProviderConfig:
    kind: str  # "anthropic" or "openai" (the OpenAI Chat Completions format)
    base_url: str | None
    default_model: str


# Users can add entries (any OpenAI-compatible server) or change the default models here.
PROVIDER_CONFIGS: dict[str, ProviderConfig] = {
    "anthropic": ProviderConfig("anthropic", None, "claude-sonnet-4-5"),
    "openai": ProviderConfig("openai", "https://api.openai.com/v1", "gpt-4o-mini"),
    "google": ProviderConfig("openai", "https://generativelanguage.googleapis.com/v1beta/openai/",
                             "gemini-2.0-flash"),
    "xai": ProviderConfig("openai", "https://api.x.ai/v1", "grok-3-mini"),
    "groq": ProviderConfig("openai", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile"),
    "together": ProviderConfig("openai", "https://api.together.xyz/v1",
                               "Qwen/Qwen2.5-Coder-32B-Instruct"),
    "mistral": ProviderConfig("openai", "https://api.mistral.ai/v1", "mistral-large-latest"),
    "deepseek": ProviderConfig("openai", "https://api.deepseek.com/v1", "deepseek-chat"),
    "openrouter": ProviderConfig("openai", "https://openrouter.ai/api/v1",
                                 "qwen/qwen-2.5-coder-32b-instruct"),
}


DEFAULT_DEADLINE = 120.0  # seconds for one request, retries included (--llm-timeout)
# Bytes of one reply read at most: a strategy file is at most sandbox.MAX_SOURCE_BYTES, and a
# server that sends more (ignoring max_tokens) is cut off at this size rather than read whole.
MAX_REPLY_BYTES = 256 * 1024


class LLMError(RuntimeError):
    """A provider could not answer; the message is one line, with keys redacted."""


def _status(exc) -> int | None:
    status = getattr(exc, "status_code", None)
    return int(status) if isinstance(status, int) else None


def _retryable(exc) -> bool:
    status = _status(exc)
    if status is not None:
        return status in (408, 409, 429) or status >= 500
    name = type(exc).__name__
    return name in ("APITimeoutError", "APIConnectionError")


def _retry_after(exc) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _describe(exc) -> str:
    """The error in one line, whole: cut only after redaction (`shorten`), or a cut key could
    leave a prefix behind that no longer matches the key."""
    status = _status(exc)
    text = " ".join(str(exc).split()) if str(exc) else type(exc).__name__
    return f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "") + f": {text}"


def shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def _fix(exc, client) -> str:
    """What the user can do about a failed request."""
    status = _status(exc)
    name = type(exc).__name__
    if status in (401, 403):
        where = client.key_source or f"{client.provider}.key.txt, .env or the environment"
        return f"the key was refused: check the key in {where}"
    if status == 404:
        return f"check the model name (--llm-model; {client.model!r} was asked for) and the URL"
    if status == 429:
        return "the provider is rate-limiting: wait, or choose another with --llm-provider"
    if status is not None and status >= 500:
        return "the provider's server failed: try again later, or another --llm-provider"
    if isinstance(exc, ReplyError):
        return (f"{client.endpoint} does not answer like the {client.provider} API: check the "
                "server (--llm-base-url)")
    if "Connection" in name:
        return (f"could not reach {client.endpoint}: check the network, or --llm-base-url for "
                "a server of your own")
    if "Timeout" in name:
        return "no answer in time: give it longer with --llm-timeout SECONDS"
    return "see the provider's message above"


class ReplyError(UserError):
    """A reply that cannot be a strategy (too large, or its text is not text): not retried."""


def _read_reply(response) -> dict:
    """The JSON body of a streamed HTTP response, read up to MAX_REPLY_BYTES."""
    import json

    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise ReplyError(f"the reply is larger than {MAX_REPLY_BYTES // 1024} KB (a strategy "
                             "file is far smaller): the server ignored max_tokens")
        chunks.append(chunk)
    try:
        data = json.loads(b"".join(chunks))
    except ValueError:
        raise ReplyError("the reply is not JSON") from None
    if not isinstance(data, dict):
        raise ReplyError(f"the reply is a JSON {type(data).__name__}, not an object")
    return data


def _text(content, where: str) -> str:
    """A reply's text: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        parts = [p.get("text") for p in content if p.get("type", "text") == "text"]
        if all(isinstance(t, str) for t in parts):
            return "".join(parts)
    kind = {dict: "an object", list: "a list", bool: "a boolean", int: "a number",
            float: "a number"}.get(type(content), type(content).__name__)
    raise ReplyError(f"the reply's {where} is {kind}, not text")


class _RetryingClient:
    """Shared by the cloud clients: `_call()` does one request; `generate` retries it within one
    total deadline (`deadline` seconds for the whole request, retries and waits included: the
    SDKs' timeouts are per read, and a server that sends a byte now and then never trips them)."""

    provider = "?"
    model = "?"
    endpoint = "?"

    def __init__(self, timeout: float, retries: int, backoff: float, redact,
                 deadline: float | None = None, key_source: str | None = None):
        self.deadline = float(deadline if deadline is not None else 2 * timeout)
        self.timeout = min(float(timeout), self.deadline)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self._redact = redact or (lambda s: s)
        self.key_source = key_source
        self.attempts = 0

    def _error(self, text: str, exc=None) -> LLMError:
        line = self._redact(f"{self.provider} ({self.model}): {text}")
        fix = f"; {_fix(exc, self)}" if exc is not None else ""
        return LLMError(shorten(line) + fix)

    def generate(self, messages: list[dict], max_tokens: int = 2048,
                 temperature: float = 0.7) -> str:
        end = time.monotonic() + self.deadline
        for attempt in range(self.retries + 1):
            self.attempts += 1
            try:
                return self._within(end, messages, max_tokens, temperature)
            except LLMError:
                raise
            except Exception as exc:  # the SDKs' errors share no base class between them
                if not _retryable(exc) or attempt == self.retries:
                    raise self._error(_describe(exc), exc) from None
                wait = self.backoff * (2 ** attempt)
                hint = _retry_after(exc)
                if hint is not None:
                    wait = max(wait, min(hint, 30.0))
                if time.monotonic() + wait >= end:
                    raise self._error(f"{_describe(exc)}; no time left for a retry within the "
                                      f"deadline of {self.deadline:g} s", exc) from None
                log.info("%s: %s; retrying in %.1f s", self.provider,
                         shorten(self._redact(_describe(exc))), wait)
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _within(self, end: float, messages, max_tokens, temperature) -> str:
        """One request, given up when the deadline passes: the SDK call runs in a thread, and
        closing its client aborts the read it is stuck in."""
        import concurrent.futures

        left = end - time.monotonic()
        if left <= 0:
            raise self._error(f"no answer within the deadline of {self.deadline:g} s",
                              TimeoutError())
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        try:
            future = pool.submit(self._call, messages, max_tokens, temperature)
            try:
                return future.result(timeout=left)
            except concurrent.futures.TimeoutError:
                self._client.close()  # the stuck read ends with an error in its thread
                self._client = self._make_client()
                raise self._error(f"no answer within the deadline of {self.deadline:g} s",
                                  TimeoutError()) from None
        finally:
            pool.shutdown(wait=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider={self.provider!r}, model={self.model!r})"


def _secret(key: Secret | str | None) -> Secret:
    return key if isinstance(key, Secret) else Secret(key or "")


class AnthropicClient(_RetryingClient):
    """Claude through the anthropic SDK (Messages API)."""

    def __init__(self, api_key: Secret | str, model: str | None = None,
                 base_url: str | None = None, timeout: float = 60.0, retries: int = 3,
                 backoff: float = 1.0, redact=None, deadline: float | None = None,
                 key_source: str | None = None):
        super().__init__(timeout, retries, backoff, redact, deadline, key_source)
        self.provider = "anthropic"
        self.model = model or PROVIDER_CONFIGS["anthropic"].default_model
        self.base_url = base_url
        self.endpoint = base_url or "api.anthropic.com"
        self._key = _secret(api_key)
        self._client = self._make_client()

    def _make_client(self):
        import anthropic

        # Our own retry loop decides about retries; the SDK's is switched off.
        return anthropic.Anthropic(api_key=self._key.reveal(), base_url=self.base_url,
                                   timeout=self.timeout, max_retries=0)

    def _call(self, messages, max_tokens, temperature) -> str:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        chat = [{"role": m["role"], "content": m["content"]} for m in messages
                if m["role"] != "system"]
        kwargs = {"system": system} if system else {}
        # The current Messages API takes no temperature (the SDK refuses it): sampling is the
        # model's own, and several samples differ anyway.
        with self._client.messages.with_streaming_response.create(
                model=self.model, max_tokens=max_tokens, messages=chat, **kwargs) as response:
            data = _read_reply(response)
        return _text(data.get("content"), "content")


class OpenAICompatibleClient(_RetryingClient):
    """Any server that speaks OpenAI Chat Completions: the providers of PROVIDER_CONFIGS, or a
    `base_url` of your own (llama.cpp server, vLLM, Ollama: a key is optional there)."""

    def __init__(self, provider: str = "openai", api_key: Secret | str | None = None,
                 model: str | None = None, base_url: str | None = None,
                 timeout: float = 60.0, retries: int = 3, backoff: float = 1.0, redact=None,
                 deadline: float | None = None, key_source: str | None = None):
        super().__init__(timeout, retries, backoff, redact, deadline, key_source)
        provider = canonical_provider(provider)
        config = PROVIDER_CONFIGS.get(provider)
        if base_url is None and (config is None or config.kind != "openai"):
            raise UserError(f"provider {provider!r} has no OpenAI-compatible entry in "
                            "PROVIDER_CONFIGS; pass base_url (e.g. --llm-base-url "
                            "http://127.0.0.1:8080/v1)")
        self.provider = provider
        self.base_url = base_url or config.base_url
        self.endpoint = self.base_url
        self.model = model or (config.default_model if config else "default")
        self._key = _secret(api_key)
        self._client = self._make_client()

    def _make_client(self):
        import openai

        return openai.OpenAI(api_key=self._key.reveal() or "no-key", base_url=self.base_url,
                             timeout=self.timeout, max_retries=0)

    def _call(self, messages, max_tokens, temperature) -> str:
        with self._client.chat.completions.with_streaming_response.create(
                model=self.model, messages=messages, max_tokens=max_tokens,
                temperature=temperature) as response:
            data = _read_reply(response)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict) \
                or not isinstance(choices[0].get("message"), dict):
            raise ReplyError("the reply has no choices[0].message")
        return _text(choices[0]["message"].get("content"), "message content")
