"""Progress bars as a log file sees them: one line when a job ends, none when it fails."""

import io

import pytest

from spacewar_ai.progress import Progress


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
