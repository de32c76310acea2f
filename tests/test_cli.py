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


def test_bad_spec_is_one_clear_line():
    out = _run(["spacewar-ai", "--demo", "--players", "idle,grandmaster"])
    assert out.returncode == 2
    assert "player 'grandmaster'" in out.stderr and "heuristic:hard" in out.stderr
    assert "Traceback" not in out.stderr


def test_training_benchmark_prints_ours_and_sb3_side_by_side():
    out = _run(["spacewar-ai", "--benchmark-training", "--quick"], timeout=600)
    assert out.returncode == 0, out.stderr
    assert "spacewar-ai PPO" in out.stdout and "Stable-Baselines3 PPO" in out.stdout
    assert "ratio:" in out.stdout
