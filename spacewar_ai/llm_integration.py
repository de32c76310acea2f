"""The design's front door to LLM integration: `from spacewar_ai.llm_integration import APIKeyManager`.

Language models that write strategy code live in spacewar_ai/llm/: keys and cloud clients
(clients.py), a local GGUF model through llama.cpp (local.py), and the strategies they write,
measured, refined and played (strategies.py). The language model that flies a ship itself is
spacewar_ai/lm/ (`lm:` pilots).
"""

from .llm.clients import AnthropicClient, APIKeyManager, LLMError, OpenAICompatibleClient
from .llm.failover import FailoverClient, build_client, client_from_flags
from .llm.strategies import (
                                        IterativeStrategyTrainer,
                                        LLMExplorationGuide,
                                        LLMStrategyGenerator,
                                        evaluate_strategy,
                                        run_arena,
                                        strategy_prompt,
)

__all__ = ["APIKeyManager", "AnthropicClient", "FailoverClient", "IterativeStrategyTrainer",
           "LLMError", "LLMExplorationGuide", "LLMStrategyGenerator", "OpenAICompatibleClient",
           "build_client", "client_from_flags", "evaluate_strategy", "run_arena",
           "strategy_prompt"]
