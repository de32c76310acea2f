"""A worker asks the kernel to kill it when its parent dies: a SIGKILL of the run, which no
Python code can catch, still takes its workers with it, even one still importing torch."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT

# A parent that starts a worker, prints the worker's pid, and waits to be killed.
PARENT = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", '''
import os, sys, time
from spacewar_ai.util.processes import die_with_parent
die_with_parent(int(sys.argv[1]))
print("ready", flush=True)
time.sleep(600)
''', str(os.getpid())], stdout=subprocess.PIPE, text=True)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"  # a zombie has died; only its record is left


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_worker_dies_when_its_parent_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        worker = int(parent.stdout.readline())
        assert _alive(worker)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=60)
        _wait_gone([worker])
    finally:
        parent.kill()


def test_a_worker_whose_parent_died_before_it_asked_exits():
    out = subprocess.run([sys.executable, "-c", "from spacewar_ai.util.processes import "
                          "die_with_parent\ndie_with_parent(1)\nprint('still here')"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 1 and "still here" not in out.stdout  # its parent is not pid 1


# A parent that starts a command as the package starts its commands (child_command), prints its
# pid and waits to be killed; the command's own code would leave a mark once torch is imported
# and a pause has passed, so that a busy machine slow to deliver the kill cannot let it run.
EARLY = """
import sys, time
from spacewar_ai.util.processes import child_command
import subprocess
child = subprocess.Popen(child_command([sys.executable, "-c",
                                        "import sys, time; from tests.util.late_worker import "
                                        "run; time.sleep(30); run(sys.argv[1])", sys.argv[1]]))
print(child.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_command_killed_with_its_parent_while_it_imports_runs_none_of_its_code(tmp_path):
    from spacewar_ai.util.processes import _setpriv, child_command

    if _setpriv() is None:
        pytest.skip("setpriv --pdeathsig (util-linux) is not installed")
    assert child_command(["python"]) == [_setpriv(), "--pdeathsig", "KILL", "--", "python"]
    marker = tmp_path / "ran"
    parent = subprocess.Popen([sys.executable, "-c", EARLY, str(marker)], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        worker = int(parent.stdout.readline())
        deadline = time.monotonic() + 60  # a safety net for a slow host
        while not _runs_python(worker) and time.monotonic() < deadline:
            time.sleep(0.001)
        parent.send_signal(signal.SIGKILL)  # the command is still importing torch
        parent.wait(timeout=60)
        _wait_gone([worker])
        assert not marker.exists()  # killed before any of its code ran
    finally:
        parent.kill()


# A parent that starts a worker as the package starts its workers (worker_context) and waits to
# be killed; the worker asks to die with its parent, leaves a mark, and waits.
WORKERS = """
import sys, time
from spacewar_ai.rating import WORKER_PRELOAD
from spacewar_ai.util.processes import worker_context
from tests.util.late_worker import wait
print("starting", flush=True)
worker_context(WORKER_PRELOAD).Process(target=wait, args=(sys.argv[1],)).start()
time.sleep(600)
"""


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # a process that ended while the folder was read
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:  # a process that has ended (the launcher's own check is one)
        return ""


def _descendants(pid: int) -> list[int]:
    return [c for child in _children(pid) for c in [child, *_descendants(child)]]


def _runs_python(pid: int) -> bool:
    """Whether `pid` has become Python: setpriv, which it started as, asks for the parent-death
    signal before it hands over, so a parent killed earlier leaves the child to its own check
    (`die_with_parent(parent_pid)`, which the package's commands call first)."""
    try:
        return os.readlink(f"/proc/{pid}/exe") == os.path.realpath(sys.executable)
    except OSError:  # a process that has ended
        return False


def _wait_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 60  # a safety net for a slow host
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
@pytest.mark.parametrize("when", ["while the fork server loads", "once the worker runs"])
def test_a_killed_run_leaves_neither_its_fork_server_nor_its_workers_behind(tmp_path, when):
    marker = tmp_path / "ran"
    parent = subprocess.Popen([sys.executable, "-c", WORKERS, str(marker)], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert parent.stdout.readline() == "starting\n"
        deadline = time.monotonic() + 300  # a safety net: the server imports torch first
        while time.monotonic() < deadline:
            if when == "once the worker runs" and marker.exists():
                break
            if when == "while the fork server loads" and any(
                    "forkserver" in _command(c) and _runs_python(c) for c in _children(parent.pid)):
                break
            time.sleep(0.02)
        else:
            pytest.fail(f"never reached the moment {when!r}")
        started = _descendants(parent.pid)
        assert started
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=60)
        _wait_gone(started)
        assert marker.exists() == (when == "once the worker runs")
    finally:
        parent.kill()


@pytest.mark.skipif("forkserver" not in __import__("multiprocessing").get_all_start_methods(),
                    reason="this platform has no fork server")
def test_a_worker_starts_with_torch_and_the_package_loaded_by_its_server():
    from concurrent.futures import ProcessPoolExecutor

    from spacewar_ai.rating import WORKER_PRELOAD
    from spacewar_ai.util.processes import worker_context

    # eval, a builtin, so that unpickling the task imports nothing of its own
    found = ("[m for m in ('torch', 'spacewar_ai.rating.match', 'spacewar_ai.pilots.scripted') "
             "if m in __import__('sys').modules], __import__('os').getppid()")
    with ProcessPoolExecutor(1, mp_context=worker_context(WORKER_PRELOAD)) as pool:
        loaded, parent = pool.submit(eval, found).result(timeout=300)
    assert loaded == ["torch", "spacewar_ai.rating.match", "spacewar_ai.pilots.scripted"]
    assert parent != os.getpid()  # forked by the server, not by this process
