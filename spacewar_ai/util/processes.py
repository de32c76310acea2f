"""Worker processes that never outlive the run that started them.

Every process this package starts (tournament and evaluation workers, arena pairings, the
browser's game workers, sandboxed strategy files) carries Linux's parent-death signal from its
first instruction: it is started through `setpriv --pdeathsig KILL` (util-linux), which asks the
kernel before Python itself starts, so a SIGKILL of the run, which no Python code can catch,
takes with it even a worker still importing torch. `child_command` puts that in front of a
command line and `spawn_context` gives multiprocessing's spawn context a launcher that does it.
Each worker also calls `die_with_parent(parent_pid)` once it runs, which covers a parent that
died before the kernel was asked, and systems without setpriv.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import multiprocessing
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from functools import lru_cache

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int | None = None) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux; elsewhere a no-op).
    `parent_pid`: the parent as the caller knew it before this process started, to catch a
    parent that died in between."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


@lru_cache(maxsize=1)
def _setpriv() -> str | None:
    """setpriv's path if it is there and knows --pdeathsig (util-linux 2.33 and later)."""
    if not sys.platform.startswith("linux"):
        return None
    path = shutil.which("setpriv")
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return path if "--pdeathsig" in out.stdout else None


def child_command(command: list[str]) -> list[str]:
    """`command` started so that the kernel kills it when this process dies (module docstring);
    unchanged where that cannot be asked before the program starts."""
    setpriv = _setpriv()
    return [setpriv, "--pdeathsig", "KILL", "--", *command] if setpriv else list(command)


@lru_cache(maxsize=1)
def _launcher() -> str | None:
    """A script that starts this Python through child_command, for multiprocessing (which
    takes one executable, not a command line); in a private folder removed at exit."""
    if _setpriv() is None:
        return None
    folder = tempfile.mkdtemp(prefix="spacewar-ai-launch-")
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, "python")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec " + shlex.join(child_command([sys.executable])) + ' "$@"\n')
    os.chmod(path, 0o700)
    try:  # a temporary folder mounted noexec cannot start it: spawn as Python does, then
        ok = subprocess.run([path, "-c", "pass"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return path if ok else None


def spawn_context():
    """multiprocessing's spawn context, its children started through child_command. (The
    executable is the spawn module's one setting: every spawn child of this process starts so.)"""
    ctx = multiprocessing.get_context("spawn")
    launcher = _launcher()
    if launcher is not None:
        ctx.set_executable(launcher)
    return ctx


def package_env(**extra: str) -> dict[str, str]:
    """The environment for a `python -m spacewar_ai....` child: this one (and `extra`), with the
    folder that holds this package first on PYTHONPATH, so the child imports the same copy."""
    from .files import PACKAGE_DIR

    path = os.pathsep.join(filter(None, [str(PACKAGE_DIR.parent), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, **extra, PYTHONPATH=path)
