"""tests/commands.py: a command forked from the server behaves as one started with subprocess."""

import os
import subprocess

import pytest

from tests.commands import cli, script

pytestmark = pytest.mark.slow  # they start the server, a process of its own

SHOW = """
import atexit, os, sys
atexit.register(lambda: print("atexit ran", flush=True))
print(os.getcwd(), os.environ.get("SHOWN"), sys.argv[1:], "torch" in sys.modules)
print("to stderr", file=sys.stderr)
sys.exit(3)
"""


def test_a_forked_command_has_its_folder_environment_streams_and_exit(tmp_path):
    path = tmp_path / "show.py"
    path.write_text(SHOW)
    out = script(path, "a b", 7, cwd=tmp_path, env={**os.environ, "SHOWN": "yes"})
    assert out.returncode == 3
    shown, ran = out.stdout.splitlines()
    # Forked: torch was loaded before the script ran, which a fresh `python` would not do.
    assert shown == f"{tmp_path} yes ['a b', '7'] True" and ran == "atexit ran"
    assert out.stderr == "to stderr\n"
    # What numba reads as it starts cannot change in a fork: that command gets a process.
    fresh = script(path, cwd=tmp_path, env={**os.environ, "SHOWN": "no", "NUMBA_DISABLE_JIT": "1"})
    assert fresh.returncode == 3 and fresh.stdout.startswith(f"{tmp_path} no [] False")


def test_a_forked_cli_command_refuses_as_the_cli_does_and_times_out(tmp_path):
    out = cli("--episodes", "0", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == "spacewar-ai: error: argument --episodes: must be >= 1, got 0\n"
    path = tmp_path / "slow.py"
    path.write_text("import time\nprint('started', flush=True)\ntime.sleep(600)\n")
    with pytest.raises(subprocess.TimeoutExpired) as stopped:
        script(path, cwd=tmp_path, timeout=5)
    assert stopped.value.output == "started\n"
    assert cli("--episodes", "0", cwd=tmp_path).returncode == 2  # the server goes on
