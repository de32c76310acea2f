import os
import sys

import pytest

pytest_plugins = ["tests.browser_summary"]

# Real pygame surfaces without a display.
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

# One torch thread in every process of the suite (its workers, and the scripts and library
# code they start, which do not go through the CLI's configure_process): three workers share
# two cores, and torch's threads would spin-wait for each other (util/threads.py).
os.environ.setdefault("OMP_NUM_THREADS", "1")
if "torch" in sys.modules:
    sys.modules["torch"].set_num_threads(1)


def pytest_configure(config):
    """Before the workers start, one process fills numba's cache (engine.jit_warm_up): on a fresh
    checkout every worker, and every command each starts, would otherwise compile the engine at
    once, the same code several times over on two cores."""
    workers = config.getoption("numprocesses", None)
    if not hasattr(config, "workerinput") and workers not in (None, 0):
        import subprocess

        subprocess.run([sys.executable, "-c", "import spacewar_ai.pilots.build; "
                        "from spacewar_ai.game.engine import GameBatch; GameBatch(1)"],
                       check=False, timeout=1200, capture_output=True)


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    """A failing test is named the moment it fails, even in -q runs on xdist workers (which
    name nobody until the summary): a run cut short by a timeout still says what failed."""
    if report.failed and not hasattr(report, "wasxfail") and \
            not os.environ.get("PYTEST_XDIST_WORKER"):  # the controller names it, once
        print(f"\nFAILED {report.nodeid} ({report.when})", file=sys.stderr, flush=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random-weight Llama model and tokenizer saved as a folder (tests/tiny_lm.py)."""
    from tests.tiny_lm import make_tiny_lm

    return make_tiny_lm(tmp_path_factory.mktemp("lm") / "tiny")


@pytest.fixture(autouse=True)
def no_ray_left_running():
    """A test that starts Ray in the test process stops it: a Ray instance left behind makes a
    later test's ray.init fail, and a later `ray stop` kills this process as its driver."""
    yield
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
        pytest.fail("the test left a Ray instance running in the test process")
