"""--benchmark and --benchmark-training print their figures (the figures are not asserted: a
benchmark measures, a test checks that it runs and reports)."""

import os
import subprocess

import pytest

from tests.helpers import ROOT


def _run(cmd, timeout=300):
    env = dict(os.environ, SDL_VIDEODRIVER="dummy")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


@pytest.mark.slow
def test_benchmark_prints_figures(tiny):
    pytest.importorskip("transformers")
    # The LM rows of a tiny model built here: SmolLM2's take a minute and more on two cores.
    out = _run(["spacewar-ai", "--benchmark", "--quick", "--base-model", str(tiny)])
    assert out.returncode == 0, out.stderr
    for row in ("single env step_both", "1024 games", "4096 games", "hard pilot",
                f"LM pilot lm:{tiny}", "bf16, batch of 64 games", "SFT (LoRA", "GRPO (64 states"):
        assert row in out.stdout
    assert "game-steps/s" in out.stdout
    planner = next(line for line in out.stdout.splitlines() if "search:pretrained" in line)
    assert float(planner.split()[-2].replace(",", "")) > 0, planner  # the shipped models load
    pytest.importorskip("ray")
    rates = [float(line.split()[-2].replace(",", "")) for line in out.stdout.splitlines()
             if line.strip().startswith("tournament games, ")]
    assert len(rates) == 2 and min(rates) > 0, out.stdout  # the pool, then Ray
    assert "a Ray task's round trip" in out.stdout


@pytest.mark.slow
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
    # What it does is said up front, and how long it took at the end.
    assert "four trainers one after another" in out.stdout
    assert "the benchmark took" in out.stdout.splitlines()[-1]
