"""A worker asks the kernel to kill it when its parent dies: a SIGKILL of the run, which no
Python code can catch, still takes its workers with it, even one still importing torch."""

import os
import signal
import subprocess
import sys
import time

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
        deadline = time.monotonic() + 60  # a safety net for a slow host; the kernel acts at once
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(worker)
    finally:
        parent.kill()


def test_a_worker_whose_parent_died_before_it_asked_exits():
    out = subprocess.run([sys.executable, "-c", "from spacewar_ai.util.processes import "
                          "die_with_parent\ndie_with_parent(1)\nprint('still here')"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 1 and "still here" not in out.stdout  # its parent is not pid 1


# A parent that starts a worker as the package starts its workers (spawn_context), prints its pid
# and waits to be killed; the worker's own code would leave a mark once torch is imported.
EARLY = """
import sys, time
from spacewar_ai.util.processes import spawn_context
from tests.util.late_worker import run
proc = spawn_context().Process(target=run, args=(sys.argv[1],))
proc.start()
print(proc.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_worker_killed_with_its_parent_while_it_imports_runs_none_of_its_code(tmp_path):
    from spacewar_ai.util.processes import _setpriv, child_command

    if _setpriv() is None:
        pytest.skip("setpriv --pdeathsig (util-linux) is not installed")
    assert child_command(["python"]) == [_setpriv(), "--pdeathsig", "KILL", "--", "python"]
    marker = tmp_path / "ran"
    parent = subprocess.Popen([sys.executable, "-c", EARLY, str(marker)], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        worker = int(parent.stdout.readline())
        parent.send_signal(signal.SIGKILL)  # the worker is still importing torch
        parent.wait(timeout=60)
        deadline = time.monotonic() + 60  # a safety net for a slow host; the kernel acts at once
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(worker)
        assert not marker.exists()  # killed before any of its code ran
    finally:
        parent.kill()
