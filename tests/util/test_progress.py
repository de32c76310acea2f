"""Progress bars as a log file sees them: one line when a job ends, none when it fails."""

import io

import pytest

from spacewar_ai.util.progress import Progress


def test_a_pipe_gets_one_line_at_the_end():
    out = io.StringIO()
    with Progress(10, "evaluation", "game", stream=out) as bar:
        for _ in range(10):
            bar.update()
        assert out.getvalue() == ""  # nothing while it runs
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evaluation") and "10/10" in lines[0]


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
    import os
    import pty
    import select

    master, slave = pty.openpty()  # a new pty reports 0 columns, 0 lines
    assert os.get_terminal_size(slave).columns == 0
    with os.fdopen(slave, "w") as stream:
        with Progress(10, "train", stream=stream) as bar:
            bar.update(10)
        stream.flush()
        out = b""
        while select.select([master], [], [], 0.5)[0]:
            out += os.read(master, 65536)
    os.close(master)
    assert b"train: 100%" in out and b"10/10" in out
