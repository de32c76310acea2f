"""Progress bars as a log file sees them: a line every few minutes and one when a job ends,
no last line when it fails."""

import io

import pytest

from spacewar_ai.util import progress
from spacewar_ai.util.progress import Progress


def test_a_pipe_gets_one_line_at_the_end():
    out = io.StringIO()
    with Progress(10, "evaluation", "game", stream=out) as bar:
        for _ in range(10):
            bar.update()
        assert out.getvalue() == ""  # nothing while it runs
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evaluation") and "10/10" in lines[0]


def test_a_long_job_tells_its_log_how_far_it_has_come(monkeypatch):
    """Once LOG_EVERY has passed (here at every step), the log gets the bar's state as a line
    while the job runs, each state once, and the final state at the end."""
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    out = io.StringIO()
    with Progress(3, "match", "game", stream=out) as bar:
        for _ in range(3):
            bar.update()
        running = out.getvalue().splitlines()
    lines = out.getvalue().splitlines()
    done = [int(line.split("|")[-1].split("/")[0]) for line in running]
    assert len(done) > 1 and done == sorted(set(done)), running  # how far, as it went
    assert lines[:len(running)] == running and len(set(lines)) == len(lines)
    assert "3/3" in lines[-1]


def test_a_failed_job_leaves_only_its_error():
    out = io.StringIO()
    with pytest.raises(ValueError):
        with Progress(10, "tournament", "game", stream=out) as bar:
            bar.update(3)
            raise ValueError("a node cannot import spacewar_ai")
    assert out.getvalue() == ""


def test_quiet_writes_nothing():
    out = io.StringIO()
    with Progress(4, "datagen", "game", quiet=True, stream=out) as bar:
        bar.update(4)
        bar.say("a line above the bar")
    assert out.getvalue() == ""


def test_a_terminal_that_reports_no_size_still_shows_the_bar():
    """A program whose standard error is a terminal of 0 columns and 0 lines (a new pty, as
    some containers give) shows its bar: tqdm would draw it 0 wide, and hide it below a screen
    0 lines high."""
    import os
    import pty
    import select
    import subprocess
    import sys

    master, slave = pty.openpty()  # a new pty reports 0 columns, 0 lines
    assert tuple(os.get_terminal_size(slave)) == (0, 0)
    child = subprocess.Popen(
        [sys.executable, "-c", "import time\nfrom spacewar_ai.util.progress import Progress\n"
         "with Progress(10, 'train') as bar:\n    for _ in range(10):\n"
         "        bar.update(1)\n        time.sleep(0.02)\n"], stderr=slave)
    os.close(slave)
    out = b""
    while select.select([master], [], [], 60)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child has gone and closed its end
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert child.wait(60) == 0
    assert b"train: 100%" in out and b"10/10" in out, out
