"""--benchmark-threads times every torch path at each thread count, idle and busy; --quick, a
check that every path runs, idle only."""

import os
import subprocess

import pytest

from tests.helpers import ROOT


def _run(cmd, timeout=300):
    env = dict(os.environ, SDL_VIDEODRIVER="dummy")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


@pytest.mark.slow
def test_the_quick_thread_benchmark_times_every_path_at_each_thread_count():
    out = _run(["spacewar-ai", "--benchmark-threads", "--quick"], timeout=3600)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if "idle 1t" in line]
    paths = ("PPO training", "DQN training", "behaviour cloning", "conservative Q-learning",
             "evaluation", "search:pretrained", "adapt:pretrained")
    assert len(rows) == len(paths) and all(p in r for p, r in zip(paths, rows))
    for row in rows:
        seconds = [float(x[:-1]) for x in row.split() if x.endswith("s") and x[:-1]
                   .replace(".", "").isdigit()]
        assert len(seconds) == 2 and min(seconds) > 0, row  # 1 and 2 threads, idle
        assert "idle: default/best" in row and "busy" not in row
