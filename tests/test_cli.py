"""The CLI, reached three ways with the same flags."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WAYS = [["spacewar-ai"], [sys.executable, "-m", "spacewar_ai"],
        [sys.executable, str(ROOT / "spacewar_ai" / "main.py")]]


def _run(cmd, timeout=300):
    env = dict(os.environ, SDL_VIDEODRIVER="dummy")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


@pytest.mark.parametrize("way", WAYS, ids=["script", "module", "file"])
def test_demo_runs_every_way(way):
    out = _run(way + ["--demo", "--players", "heuristic:hard,random", "--episodes", "6"])
    assert out.returncode == 0, out.stderr
    assert "heuristic:hard vs random: 6 games" in out.stdout


def test_demo_with_render_opens_a_window_and_reports():
    out = _run(["spacewar-ai", "--demo", "--render", "--seed", "3"])
    assert out.returncode == 0, out.stderr
    assert "game 1: winner" in out.stdout


def test_benchmark_prints_figures():
    out = _run(["spacewar-ai", "--benchmark", "--quick"])
    assert out.returncode == 0, out.stderr
    for row in ("single env step_both", "1024 games", "4096 games", "hard pilot"):
        assert row in out.stdout
    assert "game-steps/s" in out.stdout
    planner = next(line for line in out.stdout.splitlines() if "search:pretrained" in line)
    assert float(planner.split()[-2].replace(",", "")) > 0, planner  # the shipped models load


def test_bad_spec_is_one_clear_line():
    out = _run(["spacewar-ai", "--demo", "--players", "idle,grandmaster"])
    assert out.returncode == 2
    assert "player 'grandmaster'" in out.stderr and "heuristic:hard" in out.stderr
    assert "Traceback" not in out.stderr


def test_training_benchmark_prints_ours_and_sb3_side_by_side():
    out = _run(["spacewar-ai", "--benchmark-training", "--quick"], timeout=600)
    assert out.returncode == 0, out.stderr
    assert "spacewar-ai PPO" in out.stdout and "Stable-Baselines3 PPO" in out.stdout
    assert "league full (10 snapshots" in out.stdout
    rates = [float(line.split()[-2].replace(",", "")) for line in out.stdout.splitlines()
             if line.rstrip().endswith("steps/s")]
    assert "without the opponent model" in out.stdout
    assert len(rates) == 4 and all(r > 0 for r in rates)
    assert "ratio:" in out.stdout


def test_the_original_designs_whole_flag_set_is_accepted():
    from spacewar_ai.main import build_parser

    args = build_parser().parse_args([
        "--algorithm", "dqn", "--episodes", "10", "--learning-rate", "1e-3", "--render",
        "--seed", "3", "--checkpoint", "x.pt", "--checkpoint-dir", "ck", "--eval-episodes", "4",
        "--tournament-mode", "swiss", "--matches-per-pairing", "6", "--difficulty", "insane",
        "--iterations", "2", "--episodes-per-iteration", "8", "--use-llm", "--llm-provider",
        "claude", "--llm-model", "m", "--keys-dir", "keys", "--llm-local", "--llm-local-model",
        "m.gguf", "--local-llm-only", "--include-local-llm", "--gpu-vram", "24"])
    assert (args.algorithm, args.episodes, args.difficulty, args.gpu_vram) == ("dqn", 10,
                                                                               "insane", 24.0)
    assert args.use_llm == "generate" and args.llm_local and args.local_llm_only
    for mode in ("--demo", "--evaluate", "--tournament", "--champion-train", "--human-play",
                 "--iterative", "--llm-arena"):
        assert getattr(build_parser().parse_args([mode]), mode[2:].replace("-", "_"))


def test_export_joins_dqn_runs_and_ensemble_with_needs_export(tmp_path):
    import torch

    from spacewar_ai.agents import DQNAgent
    from spacewar_ai.checkpoints import load_agent
    from spacewar_ai.config import DQNConfig

    cfg = DQNConfig(hidden_sizes=(16,), stream_size=8, buffer_size=64)
    for seed, name in ((0, "a.pt"), (1, "b.pt")):
        torch.manual_seed(seed)
        DQNAgent(36, 6, cfg).save(tmp_path / name)
    out = _run(["spacewar-ai", "--export", str(tmp_path / "ab.pt"), "--checkpoint",
                str(tmp_path / "a.pt"), "--ensemble-with", str(tmp_path / "b.pt")])
    assert out.returncode == 0, out.stderr
    assert "wrote" in out.stdout
    assert len(load_agent(tmp_path / "ab.pt")[0].play_members) == 1
    out = _run(["spacewar-ai", "--algorithm", "dqn", "--ensemble-with", str(tmp_path / "b.pt")])
    assert out.returncode == 2 and "applies to --export" in out.stderr
    assert "Traceback" not in out.stderr
