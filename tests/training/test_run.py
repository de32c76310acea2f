"""train(cfg) by table: every algorithm has its entry, and what an algorithm cannot take (a
resume, a starting model, champions, or no adapter for GRPO) is refused in one line before any
work (no folder made, no dataset read, no model loaded)."""

import pytest

from spacewar_ai.config import ALGORITHMS as CONFIG_ALGORITHMS
from spacewar_ai.config import RunConfig, TrainConfig
from spacewar_ai.training import ALGORITHMS, train


def test_every_algorithm_the_config_takes_has_an_entry():
    assert set(ALGORITHMS) == set(CONFIG_ALGORITHMS)


@pytest.mark.parametrize("algorithm, kwargs, says", [
    ("sft", {"resume": "x/latest.pt"}, "--algorithm sft trains a new adapter from a dataset: "
                                       "--resume does not apply"),
    ("bc", {"start_from": "pretrained", "champion": True},
     "--algorithm bc learns from a dataset alone: --init-from and --champion-train do not apply"),
    ("cql", {"resume": "l.pt", "start_from": "m.pt"}, "--resume and --init-from do not apply"),
    ("grpo", {}, "--algorithm grpo trains an LM adapter further by playing: name the adapter it "
                 "starts from with --init-from ADAPTER"),
    ("grpo", {"resume": "l.pt", "start_from": "sft"}, "--resume does not apply"),
])
def test_what_an_algorithm_cannot_take_is_refused_before_any_work(tmp_path, algorithm, kwargs,
                                                                   says):
    dataset = {"dataset": "never-read"} if algorithm in ("bc", "cql", "sft") else {}
    cfg = RunConfig(train=TrainConfig(algorithm=algorithm, checkpoint_dir=str(tmp_path / "ck"),
                                      log_dir=str(tmp_path / "runs"), **dataset))
    with pytest.raises(ValueError) as exc:
        train(cfg, **kwargs)
    assert says in str(exc.value), str(exc.value)
    assert not (tmp_path / "ck").exists() and not (tmp_path / "runs").exists()


def test_episodes_are_the_games_a_run_in_rounds_plays():
    """--episodes N for DAgger's rounds and GRPO's iterations: exactly N games, a smaller round
    where N is less than one, and a refusal naming what fits where no whole rounds make N."""
    from spacewar_ai.training.budget import whole_rounds

    assert whole_rounds(8, 64, 4, "round", "[dagger] games") == (1, 8)
    assert whole_rounds(128, 64, 4, "round", "[dagger] games") == (2, 64)
    with pytest.raises(ValueError, match=r"^--episodes 100: the run plays whole rounds of 64 "
                                         r"games \(\[dagger\] games\).* multiple of 64"):
        whole_rounds(100, 64, 4, "round", "[dagger] games")
    with pytest.raises(ValueError, match="fewer games in a multiple of 4"):
        whole_rounds(6, 64, 4, "iteration", "[grpo] games")


def test_two_runs_on_one_folder_are_refused_and_a_dead_runs_lock_is_not(tmp_path):
    """The second run on a folder is refused in one line naming it and the process that holds
    it; the kernel lets go of a lock with its process, so one killed mid-run blocks nothing."""
    import os
    import signal
    import subprocess
    import sys

    from spacewar_ai.util.files import FolderLock

    first = FolderLock(tmp_path / "run", "the run's checkpoints folder")
    with pytest.raises(ValueError) as refused:
        FolderLock(tmp_path / "run", "the run's checkpoints folder")
    assert str(refused.value).startswith(
        f"the run's checkpoints folder {tmp_path / 'run'}: a live run (process {os.getpid()})")
    first.release()
    FolderLock(tmp_path / "run", "the run's checkpoints folder").release()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom spacewar_ai.util.files import FolderLock\n"
        f"lock = FolderLock({str(tmp_path / 'run')!r}, 'x')\nprint('held', flush=True)\n"
        "time.sleep(600)\n")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    with pytest.raises(ValueError, match=f"process {holder.pid}"):
        FolderLock(tmp_path / "run", "x")
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    FolderLock(tmp_path / "run", "x").release()  # a stale lock blocks nothing
