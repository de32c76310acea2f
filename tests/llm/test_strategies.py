"""LLM-written strategies end to end against a real HTTP server on 127.0.0.1 that returns
scripted replies (improving, broken, malicious): generation, repair, rejection, the iterative
loop with resume, the league, guided exploration and the arena."""

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

from spacewar_ai.config import GameConfig
from spacewar_ai.llm.clients import APIKeyManager, OpenAICompatibleClient
from spacewar_ai.llm.strategies import (
    IterativeStrategyTrainer,
    LLMExplorationGuide,
    LLMStrategyGenerator,
    extract_code,
    strategy_prompt,
)
from spacewar_ai.pilots.sandbox import StrategyError
from tests.commands import cli
from tests.helpers import ROOT
from tests.llm_server import FakeLLMServer

GOOD = (ROOT / "examples" / "strategies" / "aim_and_fire.py").read_text()
WEAK = "def strategy(obs):\n    return 0\n"
BROKEN = "def strategy(obs)\n    return 4\n"
INVALID_ACTION = "def strategy(obs):\n    return 9\n"
MALICIOUS = "import os\n\ndef strategy(obs):\n    os.system('echo owned')\n    return 0\n"
KEY = "sk-secret-key-0123456789"


def fenced(code: str, chatter: str = "Here is my pilot.") -> str:
    return f"{chatter}\n\n```python\n{code}```\nGood luck!"


def _client(server, keys=None):
    return OpenAICompatibleClient("custom", KEY, "scripted", server.url + "/v1", timeout=10,
                                  retries=0, redact=keys.redact if keys else None)


def test_prompt_explains_the_game_and_the_rules():
    prompt = strategy_prompt(GameConfig())
    for needle in ("1024 x 1024", "torpedo", "| 9-10 | opponent position", "| 5 | thrust + fire",
                   "import math", "isinstance", "strategy(obs)", "forfeits"):
        assert needle in prompt, needle


def test_extract_code_takes_the_block_that_defines_strategy():
    reply = "```python\nX = 1\n```\ntext\n```python\n" + WEAK + "```"
    assert extract_code(reply) == WEAK
    assert extract_code(WEAK) == WEAK  # a bare-code reply
    with pytest.raises(StrategyError, match="no ```python block"):
        extract_code("I cannot help with that.")


def test_generator_repairs_broken_code_and_a_strategy_that_forfeits(tmp_path):
    script = [("text", fenced(BROKEN)), ("text", fenced(INVALID_ACTION)), ("text", fenced(GOOD))]
    with FakeLLMServer(script) as server:
        gen = LLMStrategyGenerator(_client(server), tmp_path, max_repairs=2, smoke_games=2)
        cand = gen.generate("first")
        assert cand.ok and cand.attempts == 3
        feedback = [r["body"]["messages"][-1]["content"] for r in server.requests[1:]]
    assert "syntax error" in feedback[0]
    assert "forfeited" in feedback[1] and "int 0..5" in feedback[1]
    assert Path(cand.path).read_text() == GOOD
    saved = json.loads((tmp_path / "first" / "attempt1.json").read_text())
    assert saved["reply"] == fenced(INVALID_ACTION)


def test_generator_rejects_malicious_code_without_running_it(tmp_path):
    with FakeLLMServer([("text", fenced(MALICIOUS))]) as server:
        cand = LLMStrategyGenerator(_client(server), tmp_path, max_repairs=1).generate("evil")
        assert len(server.requests) == 2
    assert not cand.ok and cand.path is None
    assert "import os is not allowed" in cand.error
    assert not (tmp_path / "evil" / "strategy.py").exists()


def _scripted_llm():
    """Round 1: a weak pilot (the reply also echoes the key, which must never be saved).
    Round 2: broken code, then a good pilot after the repair request. Round 3: malicious, twice
    (the first attempt and its one repair)."""
    return [("text", fenced(WEAK, f"Using key {KEY}.")), ("text", fenced(BROKEN)),
            ("text", fenced(GOOD)), ("text", fenced(MALICIOUS)), ("text", fenced(MALICIOUS))]


def _tiny_trainer(tmp_path):
    from spacewar_ai.config import RunConfig
    from spacewar_ai.training.online.trainer import Trainer

    cfg = RunConfig()
    cfg.train = dataclasses.replace(cfg.train, num_envs=8, total_timesteps=1, seed=1,
                                    checkpoint_dir=str(tmp_path / "ck"),
                                    log_dir=str(tmp_path / "runs"), run_name="iter",
                                    eval_interval=1000, torch_threads=1, rollout_workers=0)
    cfg.ppo = dataclasses.replace(cfg.ppo, n_steps=16, hidden_sizes=(32, 32))
    return Trainer(cfg, quiet=True)


@pytest.mark.slow
def test_iterative_loop_keeps_the_best_repairs_rejects_and_feeds_the_league(tmp_path):
    keys = APIKeyManager(tmp_path / "nokeys", environ={"OPENAI_API_KEY": KEY})
    trainer = _tiny_trainer(tmp_path)
    logs = []
    with FakeLLMServer(_scripted_llm()) as server:
        loop = IterativeStrategyTrainer(
            _client(server, keys), trainer.log_dir, iterations=3, episodes_per_iteration=4,
            opponents=("idle", "heuristic:hard"), trainer=trainer, train_steps=256,
            target_win_rate=1.0,
            redact=keys.redact, max_repairs=1, log=logs.append)
        state = loop.run()
    history = state["history"]
    assert [h["score"] is not None for h in history] == [True, True, False]
    assert history[1]["score"] > history[0]["score"]
    best = state["best"]
    assert best["iteration"] == 1 and best["source"] == GOOD
    assert (loop.llm_dir / "best_strategy.py").read_text() == GOOD
    # The league gained each new best as a fixed opponent; the agent trained between rounds.
    assert trainer.league.fixed_keys == ["strategy:competitor_000", "strategy:competitor_001"]
    assert trainer.counters.global_step >= 3 * 256
    # Round 2's prompt carried round 1's measured results; the malicious round was rejected.
    round2 = json.loads((loop.llm_dir / "iter001" / "sample0" / "attempt0.json").read_text())
    assert "Results of your last strategy" in round2["messages"][-1]["content"]
    assert any("rejected" in line and "import os" in line for line in logs)
    # Nothing saved holds the key.
    for path in loop.llm_dir.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(), path
    assert "***" in (loop.llm_dir / "iter000" / "sample0" / "attempt0.json").read_text()


@pytest.mark.slow
def test_iterative_loop_resumes_where_it_stopped(tmp_path):
    with FakeLLMServer([("text", fenced(WEAK))]) as server:
        first = IterativeStrategyTrainer(_client(server), tmp_path, iterations=1,
                                         episodes_per_iteration=2, opponents=("idle",),
                                         log=lambda s: None)
        first.run()
        assert len(server.requests) == 1
        again = IterativeStrategyTrainer(_client(server), tmp_path, iterations=2,
                                         episodes_per_iteration=2, opponents=("idle",),
                                         log=lambda s: None)
        state = again.run()
        assert len(server.requests) == 2 and state["iteration"] == 2


def test_exploration_guide_replaces_a_share_of_actions_with_valid_strategy_actions():
    from spacewar_ai.game.environment import SpacewarVectorEnv

    env = SpacewarVectorEnv(400, GameConfig(), opponent="idle")
    obs, _ = env.reset(seed=0)
    guide = LLMExplorationGuide(ROOT / "examples" / "strategies" / "aim_and_fire.py", share=0.25)
    try:
        actions = np.zeros(400, dtype=np.int64)
        mixed = guide.mix(obs, actions)
        changed = (mixed != actions).sum()
        assert 40 <= guide.used <= 160 and changed <= guide.used
        assert all(obs[i, 30 + a] > 0.5 for i, a in enumerate(mixed))
        assert (guide.mix(obs, actions, rate=0.0) == actions).all()
    finally:
        guide.close()


@pytest.mark.slow
def test_cli_iterative_against_a_local_server(tmp_path):
    with FakeLLMServer(_scripted_llm()) as server:
        env = dict(os.environ, SDL_VIDEODRIVER="dummy")
        env.pop("OPENAI_API_KEY", None)
        out = cli("--iterative", "--llm-base-url", server.url + "/v1", "--iterations", "2",
                  "--episodes-per-iteration", "2", "--timesteps", "256", "--num-envs", "8",
                  "--run-name", "cli", "--quiet", "--keys-dir", tmp_path, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert "best strategy:" in out.stdout
    assert (tmp_path / "runs" / "cli" / "llm" / "best_strategy.py").read_text() == GOOD


@pytest.mark.slow
def test_cli_llm_arena_against_a_local_server(tmp_path):
    with FakeLLMServer([("text", fenced(GOOD)), ("text", fenced(WEAK))]) as server:
        env = dict(os.environ, SDL_VIDEODRIVER="dummy")
        out = cli("--llm-arena", "--llm-base-url", server.url + "/v1", "--llm-samples", "2",
                  "--matches-per-pairing", "4", "--keys-dir", tmp_path, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    table = out.stdout[out.stdout.index("| # |"):]
    assert "strategy:custom-0.py" in table and "strategy:custom-1.py" in table
    assert "heuristic:hard" in table
    assert list((tmp_path / "runs" / "llm-arena").glob("*/crosstable.md"))


def test_training_with_the_exploration_guide_plays_strategy_actions(tmp_path):
    trainer = _tiny_trainer(tmp_path)
    trainer.cfg.train = dataclasses.replace(trainer.cfg.train, total_timesteps=8 * 16 * 2)
    guide = LLMExplorationGuide(ROOT / "examples" / "strategies" / "aim_and_fire.py",
                                share=0.5, seed=1)
    trainer.guide = guide
    try:
        trainer.run()
    finally:
        guide.close()
    # 256 decisions, half of them offered to the strategy; those its mask allows are played.
    assert 60 <= guide.used <= 160
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(trainer.log_dir))
    events.Reload()
    assert events.Scalars("charts/llm_guided_actions")[-1].value == guide.used


@pytest.mark.slow
@pytest.mark.parametrize("mode", [["--llm-arena"], ["--use-llm", "--timesteps", "256"],
                                  ["--iterative", "--iterations", "1"]])
def test_every_llm_mode_ends_in_one_line_when_no_provider_answers(tmp_path, mode, capsys,
                                                                 monkeypatch):
    from spacewar_ai.main import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(mode + ["--llm-base-url", "http://127.0.0.1:9/v1", "--keys-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert exc.value.code == 1 and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("spacewar-ai: error: ") and "--llm-base-url" in last, err


IDENT_KEY = "ABCDEFGHIJKLMNOPQRSTUVWXYZ123456"  # a key that is also a valid Python name


def _leaks(text: str, key: str = IDENT_KEY) -> list[str]:
    return [key[i:i + 8] for i in range(len(key) - 7) if key[i:i + 8] in text]


def test_a_reply_that_echoes_the_key_into_code_leaks_it_nowhere(tmp_path, capsys):
    """The key in an import (refused, and the refusal printed) and in a string constant (a file
    that passes and is saved): no piece of it on screen, in a saved file or in a repair prompt."""
    from spacewar_ai.llm.failover import FailoverClient
    from spacewar_ai.llm.strategies import run_arena

    keys = APIKeyManager("/nonexistent", environ={"OPENAI_API_KEY": IDENT_KEY})
    refused = f"import {IDENT_KEY}\n\ndef strategy(obs):\n    return 0\n"
    kept = GOOD.replace("import math", f'import math\nNOTE = "{IDENT_KEY}"', 1)
    with FakeLLMServer([("text", fenced(refused, f"Key: {IDENT_KEY}")),
                        ("text", fenced(refused)), ("text", fenced(refused)),
                        ("text", fenced(kept))]) as server:
        client = FailoverClient([OpenAICompatibleClient(
            "custom", keys.get_key("openai"), "m", server.url + "/v1", timeout=10, retries=0,
            redact=keys.redact)], keys.redact)
        client.keys = keys
        folder = run_arena(client, samples=2, games=2, out_root=tmp_path / "arena")
        prompts = json.dumps([r["body"] for r in server.requests])  # the headers carry the key
    shown = capsys.readouterr()
    assert "custom-0: rejected: the file was refused" in shown.out  # the refusal was printed
    assert "custom-1: ok" in shown.out
    saved = "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())
    assert "NOTE" in saved and "import" in saved  # the code and the attempts were saved
    for where, text in (("stdout", shown.out), ("stderr", shown.err), ("files", saved),
                        ("prompts sent back", prompts)):
        assert not _leaks(text), (where, _leaks(text))


def test_the_iterative_loop_leaks_no_piece_of_an_echoed_key(tmp_path):
    keys = APIKeyManager("/nonexistent", environ={"OPENAI_API_KEY": IDENT_KEY})
    refused = f"import {IDENT_KEY}\n\ndef strategy(obs):\n    return 0\n"
    kept = GOOD.replace("import math", f'import math\nNOTE = "{IDENT_KEY}"', 1)
    lines = []
    with FakeLLMServer([("text", fenced(refused)), ("text", fenced(kept))]) as server:
        loop = IterativeStrategyTrainer(_client(server, keys), tmp_path / "run", iterations=1,
                                        episodes_per_iteration=2, opponents=("idle",),
                                        redact=keys.redact, log=lines.append)
        loop.run()
    saved = "".join(p.read_text() for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert "rejected" not in lines[0] and "NOTE" in saved and "file was refused" in saved
    assert not _leaks("\n".join(lines)) and not _leaks(saved)
