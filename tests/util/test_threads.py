"""Torch's thread count: one by default in every process that does torch work, overridable by
flag, config and environment, and a bad environment value refused in one line."""

import multiprocessing
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

import pytest
import torch

from spacewar_ai.util.threads import DEFAULT_THREADS, ENV_VAR, configure_process, torch_threads
from tests.helpers import ROOT


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    yield monkeypatch
    torch.set_num_threads(before)


def test_the_order_is_flag_then_our_variable_then_openmps_then_one(clean_env):
    assert DEFAULT_THREADS == 1 and torch_threads() == 1 and torch_threads(0) == 1
    clean_env.setenv("OMP_NUM_THREADS", "3")
    assert torch_threads() == 3
    clean_env.setenv(ENV_VAR, "2")
    assert torch_threads() == 2
    assert torch_threads(4) == 4


@pytest.mark.parametrize("value", ["two", "0", "-1", "1.5"])
def test_a_bad_environment_value_names_the_variable(clean_env, value):
    clean_env.setenv(ENV_VAR, value)
    with pytest.raises(ValueError, match=f"{ENV_VAR}=.*whole number >= 1"):
        torch_threads()


def test_the_cli_refuses_a_bad_environment_value_in_one_line():
    env = dict(os.environ, **{ENV_VAR: "lots"})
    out = subprocess.run([sys.executable, "-m", "spacewar_ai", "--dataset-info", "x"], env=env,
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 2
    assert f"{ENV_VAR}='lots'" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def _threads_in_child() -> int:
    import torch

    return torch.get_num_threads()


def test_a_commands_setting_reaches_the_processes_it_starts(clean_env):
    torch.set_num_threads(2)
    assert configure_process(0) == 1
    assert torch.get_num_threads() == 1  # torch was imported already: set at once
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        assert pool.submit(_threads_in_child).result(timeout=300) == 1
    configure_process(2)
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        assert pool.submit(_threads_in_child).result(timeout=300) == 2


# A run that asked for two threads starts tournament workers, with the tournament's start and
# without it; a fresh process, so that its fork server starts with that environment.
WORKERS_THREADS = """
from concurrent.futures import ProcessPoolExecutor
from spacewar_ai.rating import WORKER_PRELOAD
from spacewar_ai.util.workers import _one_thread
from spacewar_ai.util.processes import worker_context
from spacewar_ai.util.threads import configure_process
from tests.util.test_threads import _threads_in_child

if __name__ == "__main__":
    configure_process(2)
    for init in (None, _one_thread):
        with ProcessPoolExecutor(1, mp_context=worker_context(WORKER_PRELOAD),
                                 initializer=init) as pool:
            print(pool.submit(_threads_in_child).result(timeout=300))
"""


def test_tournament_workers_use_one_thread_whatever_the_run_asked(clean_env, tmp_path):
    script = tmp_path / "workers_threads.py"
    script.write_text(WORKERS_THREADS)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    # The run's two threads reach a worker unless the tournament's start sets one.
    assert out.stdout.split() == ["2", "1"]


def test_a_trainer_sets_its_threads_from_its_config(clean_env, tmp_path):
    from spacewar_ai.config import RunConfig, TrainConfig
    from spacewar_ai.training.online.trainer import Trainer

    torch.set_num_threads(2)
    Trainer(RunConfig(train=TrainConfig(checkpoint_dir=str(tmp_path), log_dir=str(tmp_path))),
            quiet=True)
    assert torch.get_num_threads() == 1
    Trainer(RunConfig(train=TrainConfig(checkpoint_dir=str(tmp_path), log_dir=str(tmp_path),
                                        torch_threads=2)), quiet=True)
    assert torch.get_num_threads() == 2
