"""The suite's closing summary names the browser tests a machine without Chromium skipped, and
the one command that lets them run (tests/browser_summary.py)."""

import os
import subprocess
import sys

from tests.helpers import ROOT


def _pytest(tmp_path, body: str) -> str:
    (tmp_path / "test_page.py").write_text("import pytest\n\n" + body)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                                     os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-c", os.devnull, "-p",
                          "tests.browser_summary", "--rootdir", str(tmp_path), str(tmp_path)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    return out.stdout


def test_skipped_browser_tests_are_counted_with_the_command_that_runs_them(tmp_path):
    out = _pytest(tmp_path, "@pytest.mark.parametrize('page', ['play', 'arena'])\n"
                            "def test_page(page):\n"
                            "    pytest.skip('no browser at /usr/bin/chromium: apt-get install "
                            "chromium')\n\n"
                            "def test_other():\n"
                            "    pytest.skip('something else')\n")
    assert ("2 browser tests were skipped: this machine has no Chromium; "
            "`apt-get install -y chromium` (as root) lets them run") in out, out
    assert out.strip().splitlines()[-1].startswith("3 skipped")  # pytest's own line stays last


def test_nothing_is_said_when_no_browser_test_was_skipped(tmp_path):
    out = _pytest(tmp_path, "def test_page():\n    pass\n")
    assert "browser tests" not in out and "1 passed" in out
