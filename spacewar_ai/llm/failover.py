"""Which LLM answers: `FailoverClient` tries clients in order until one answers, and `build_client`
makes the list the CLI's flags describe (a local model first or last, a server URL, one provider,
or every provider with a key; docs/strategies.md has the rules). Each failure is one line, with
any key redacted."""

from __future__ import annotations

import logging
import os

from ..util.errors import UserError
from .clients import (
    DEFAULT_DEADLINE,
    ENV_VARS,
    PROVIDER_CONFIGS,
    AnthropicClient,
    APIKeyManager,
    LLMError,
    OpenAICompatibleClient,
    Secret,
    canonical_provider,
    shorten,
)
from .local import LocalLLMClient

log = logging.getLogger(__name__)


class FailoverClient:
    """Tries its clients in order by generating; the first that answers is used (and tried first
    next time). `failures` holds one redacted line per failed attempt."""

    def __init__(self, clients: list, redact=None):
        if not clients:
            raise LLMError("no LLM client to try")
        self.clients = list(clients)
        self.failures: list[str] = []
        self.active = None
        self._redact = redact or (lambda s: s)

    @property
    def provider(self) -> str:
        return (self.active or self.clients[0]).provider

    @property
    def model(self) -> str:
        return (self.active or self.clients[0]).model

    def generate(self, messages: list[dict], max_tokens: int = 2048,
                 temperature: float = 0.7) -> str:
        order = self.clients if self.active is None else \
            [self.active] + [c for c in self.clients if c is not self.active]
        errors = []
        for client in order:
            try:
                text = client.generate(messages, max_tokens=max_tokens, temperature=temperature)
            except LLMError as exc:
                line = shorten(self._redact(str(exc)), 400)
                errors.append(line)
                self.failures.append(line)
                log.info("LLM provider failed: %s", line)
                continue
            self.active = client
            return text
        raise LLMError("no LLM provider answered: " + " | ".join(errors))

    def __repr__(self) -> str:
        return f"FailoverClient({[repr(c) for c in self.clients]})"


def build_client(keys: APIKeyManager | None = None, provider: str | None = None,
                 model: str | None = None, base_url: str | None = None, local: bool = False,
                 local_model: str | None = None, local_only: bool = False,
                 include_local: bool = False, gpu_vram: float | None = None,
                 timeout: float = 60.0, retries: int = 3, backoff: float = 1.0,
                 models_dir: str | os.PathLike = "models",
                 deadline: float = DEFAULT_DEADLINE) -> FailoverClient:
    """The client the CLI flags describe (docs/strategies.md has the rules). `timeout` bounds
    each read, `deadline` each request, retries included (--llm-timeout)."""
    keys = keys if keys is not None else APIKeyManager(".")
    redact = keys.redact
    common = {"timeout": timeout, "retries": retries, "backoff": backoff, "redact": redact,
              "deadline": deadline}

    def local_client():
        return LocalLLMClient.from_flags(local_model, gpu_vram=gpu_vram, models_dir=models_dir)

    if local_only:
        return FailoverClient([local_client()], redact)
    clients = []
    if local:
        clients.append(local_client())
    if base_url:
        key = keys.get_key(provider) if provider else None
        clients.append(OpenAICompatibleClient(provider or "custom", key, model, base_url,
                                              key_source=keys.source(provider or "custom"),
                                              **common))
    elif provider:
        name = canonical_provider(provider)
        if name not in PROVIDER_CONFIGS:
            raise UserError(f"--llm-provider {provider!r} is unknown: use one of "
                            f"{', '.join(PROVIDER_CONFIGS)} (or --llm-base-url URL)")
        key = keys.get_key(name)
        if key is None:
            var = ENV_VARS.get(name, (f"{name.upper()}_API_KEY",))[0]
            raise UserError(f"no API key for {name}: put it in {keys.keys_dir / (name + '.key.txt')}"
                            f", in {keys.keys_dir / '.env'} as {var}=..., or in the environment "
                            f"as {var}")
        clients.append(_cloud_client(name, key, model, keys.source(name), **common))
    else:
        for name in keys.get_available_providers():
            if name in PROVIDER_CONFIGS:
                # --llm-model names one provider's model: it goes with the first one tried.
                clients.append(_cloud_client(name, keys.get_key(name),
                                             model if not clients else None, keys.source(name),
                                             **common))
    if include_local and not local:
        clients.append(local_client())
    if not clients:
        raise UserError(f"no LLM available: no API key found in {keys.keys_dir}/*.key.txt, "
                        f"{keys.keys_dir / '.env'} or the environment; add one (e.g. "
                        "claude.key.txt), point --llm-base-url at an OpenAI-compatible "
                        "server, or use a local model with --llm-local")
    return FailoverClient(clients, redact)


def _cloud_client(name: str, key: Secret, model: str | None, source: str | None, **common):
    config = PROVIDER_CONFIGS[name]
    if config.kind == "anthropic":
        return AnthropicClient(key, model, config.base_url, key_source=source, **common)
    return OpenAICompatibleClient(name, key, model, config.base_url, key_source=source,
                                  **common)


def client_from_flags(keys_dir=".", provider=None, model=None, base_url=None, local=False,
                      local_model=None, local_only=False, include_local=False, gpu_vram=None,
                      timeout=None) -> FailoverClient:
    """The client the CLI's LLM flags describe, with its key manager's warnings printed and the
    providers it will try listed."""
    import sys

    keys = APIKeyManager(keys_dir)
    for warning in keys.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    client = build_client(keys, provider, model, base_url, local=local, local_model=local_model,
                          local_only=local_only, include_local=include_local, gpu_vram=gpu_vram,
                          **({"deadline": timeout} if timeout else {}))
    client.keys = keys
    print("LLM providers, in order: " + ", ".join(f"{c.provider} ({c.model})"
                                                  for c in client.clients))
    return client
