"""--benchmark-threads times every torch path at each thread count, idle and busy; --quick, a
check that every path runs, idle only."""

import os

import pytest

from tests.commands import cli
from tests.helpers import ROOT


def _run(*args, timeout=300):
    return cli(*args, cwd=ROOT, env=dict(os.environ, SDL_VIDEODRIVER="dummy"), timeout=timeout)


@pytest.mark.slow
def test_the_quick_thread_benchmark_times_every_path_at_each_thread_count():
    out = _run("--benchmark-threads", "--quick", timeout=3600)
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
