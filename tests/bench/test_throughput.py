"""--benchmark and --benchmark-training print their figures (the figures are not asserted: a
benchmark measures, a test checks that it runs and reports)."""

import os

import pytest
import torch

from spacewar_ai.agents.base import native_bfloat16
from spacewar_ai.config import TrainConfig
from spacewar_ai.util.threads import available_cores
from tests.commands import cli
from tests.helpers import RAY_GROUP, ROOT


def _run(*args, timeout=300, **extra_env):
    env = dict(os.environ, SDL_VIDEODRIVER="dummy", **extra_env)
    return cli(*args, cwd=ROOT, env=env, timeout=timeout)


@RAY_GROUP  # its Ray row starts Ray on this machine
@pytest.mark.slow
def test_benchmark_prints_figures(tiny):
    pytest.importorskip("transformers")
    # The LM rows of a tiny model built here: SmolLM2's take a minute and more on two cores.
    out = _run("--benchmark", "--quick", "--base-model", str(tiny))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Spacewar! AI benchmark: one run each (--quick)")
    for row in ("single env step_both", "1024 games", "4096 games", "hard pilot",
                "1024 games, against its default opponent", "CartPoleVectorEnv, 1024 envs",
                f"LM pilot lm:{tiny}", "bf16, batch of 64 games", "SFT (LoRA", "GRPO (64 states",
                # Trained where the pilot ran: CUDA where there is one.
                f"a step, on {'cuda' if __import__('torch').cuda.is_available() else 'cpu'})"):
        assert row in out.stdout
    assert "game-steps/s" in out.stdout
    cartpole = next(line for line in out.stdout.splitlines() if "CartPoleVectorEnv" in line)
    assert float(cartpole.split("above is ")[1].split("x")[0]) > 0, cartpole
    planner = next(line for line in out.stdout.splitlines() if "search:pretrained" in line)
    assert float(planner.split()[-2].replace(",", "")) > 0, planner  # the shipped models load
    pytest.importorskip("ray")
    rates = [float(line.split()[-2].replace(",", "")) for line in out.stdout.splitlines()
             if line.strip().startswith("tournament games, ")]
    assert len(rates) == 2 and min(rates) > 0, out.stdout  # the pool, then Ray
    assert "a Ray task's round trip" in out.stdout


@pytest.mark.slow
def test_training_benchmark_prints_ours_and_sb3_side_by_side(tmp_path):
    out = _run("--benchmark-training", "--quick", timeout=600,
               TMPDIR=str(tmp_path))
    assert out.returncode == 0, out.stderr
    # Stable-Baselines3 logs nowhere: no SB3-<time> folder left in the temp dir.
    assert not list(tmp_path.glob("SB3-*")), list(tmp_path.iterdir())
    from stable_baselines3 import __version__ as sb3_version

    assert "spacewar-ai PPO" in out.stdout
    assert f"Stable-Baselines3 {sb3_version} PPO" in out.stdout  # which one it timed
    assert "league full (10 snapshots" in out.stdout
    rates = [float(line.split()[-2].replace(",", "")) for line in out.stdout.splitlines()
             if line.rstrip().endswith("steps/s")]
    assert "without the opponent model" in out.stdout
    bf16 = native_bfloat16(torch.device("cpu"))
    assert len(rates) == 4 and all(r > 0 for r in rates)
    assert f"the learner in {'bfloat16' if bf16 else 'float32'})" in out.stdout
    assert ("the learner in float32 (--precision float32)" in out.stdout) == bf16
    assert "ratio:" in out.stdout
    # Where the time goes: every part's row at one and two threads, adding up to the whole (the
    # features are taken out of the forward pass's row, not counted twice).
    lines = out.stdout.splitlines()
    start = lines.index(next(x for x in lines if x.startswith("Where a default PPO run's time")))
    end = lines.index(next(x for x in lines if x.startswith("  in all (1e6 / decisions")))
    rows = {x[:54].strip(): [float(v) for v in x[54:].split()] for x in lines[start + 2:end + 1]}
    for part in ("the engine's step (and both ships' observations)", "the league's opponents",
                 "the PPO update", "waiting for the opponent model's fit", "TensorBoard", "checkpoints",
                 "the observation's features (the view)", "in all (1e6 / decisions per "
                 "second)"):
        # A column for one thread and, on a machine with two cores or more, one for two; each
        # in float32 and, where the processor has it, bfloat16.
        assert len(rows[part]) == min(2, os.cpu_count() or 1) * (1 + bf16), (part, out.stdout)
        assert all(v >= 0 for v in rows[part]), (part, out.stdout)
    whole = rows.pop("in all (1e6 / decisions per second)")
    for column in range(len(whole)):
        # Each row is printed to 0.01 us: their sum is the whole to within their rounding.
        assert sum(v[column] for v in rows.values()) == pytest.approx(whole[column], abs=0.1)
        assert min(rows["the PPO update"][column], rows["the engine's step (and both ships' "
                                                         "observations)"][column]) > 0
    # The default's row says how it played: on two or more cores, one rollout worker playing
    # ahead, with the same run in step beside it and the ratio of the two.
    ahead = TrainConfig().with_rollouts(available_cores()).async_rollouts
    default = next(x for x in lines if "spacewar-ai PPO, defaults (" in x)
    assert ("one rollout worker playing ahead" if ahead else "in step") in default
    assert ("the same in step, the learner playing its games" in out.stdout) == ahead
    # What it does is said up front, and how long it took at the end.
    assert "trainers one after another (ours, by default and in step;" in out.stdout
    assert "the benchmark took" in out.stdout.splitlines()[-1]


@pytest.mark.slow
def test_rollout_benchmark_prints_each_worker_count_the_bound_and_a_projection():
    """The workers in child processes of this machine (no Ray needed)."""
    out = _run("--benchmark-rollouts", "--quick", timeout=900)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    for row in ("the learner plays its games",
                "1 rollout worker in child processes of this machine",
                "2 rollout workers in child processes of this machine",
                "1 rollout worker in child processes of this machine, playing ahead"):
        line = next(x for x in lines if x.startswith(f"  {row} "))
        assert float(line.split()[line.split().index("decisions/s") - 1].replace(",", "")) > 0
    assert "update bound, PPO updates alone" in out.stdout and "1 torch thread" in out.stdout
    projection = lines[lines.index(next(x for x in lines if "worker machines (2 cores)" in x))
                       + 1:-1]
    assert [row.split()[0] for row in projection] == ["1", "2", "4", "8"], out.stdout
    # More worker machines never project a slower run.
    for column in (1, 2, 3):
        figures = [float(row.split()[column].replace(",", "")) for row in projection]
        assert figures == sorted(figures) and figures[0] > 0, out.stdout
    assert "the benchmark took" in lines[-1]
