"""Worker processes that never outlive the run that started them, even after a SIGKILL.

- A command the package starts (the browser's workers, rollout workers, sandboxed strategies)
  goes through `setpriv --pdeathsig KILL` (`child_command`), so the kernel kills it with its
  parent even while it imports, and it calls `die_with_parent(parent_pid)` once it runs.
- multiprocessing's workers (tournament workers, arena pairings) come from `worker_context`: a
  fork server, started through setpriv, imports `preload` once and forks each worker from it.
  The kernel ties the server to the thread that started it, so each worker also watches the
  process that asked for it (`die_with_parent()`) and ends when that one is gone."""

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
import threading
from functools import lru_cache

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int | None = None) -> None:
    """End this process when its parent dies: the kernel SIGKILLs it (Linux; `parent_pid`, the
    parent as the caller knew it before this process started, catches a parent that died in
    between), or, in a multiprocessing worker, a thread of its own ends it when the process that
    asked for it is gone (module docstring)."""
    asked_by = multiprocessing.parent_process()
    if asked_by is not None:
        threading.Thread(target=_exit_after, args=(asked_by,), daemon=True,
                         name="die-with-parent").start()
        return
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def _exit_after(process) -> None:
    process.join()
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
    try:  # a temporary folder mounted noexec cannot start it: start as Python does, then
        ok = subprocess.run([path, "-c", "pass"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return path if ok else None


def worker_context(preload: list[str]):
    """multiprocessing's context for the package's worker processes: the fork server where the
    platform has one (module docstring), else spawn. `preload`: the modules the server imports
    before it forks its first worker; the server is one per process, so every caller names the
    same list. A worker inherits the server's modules and environment; its working folder,
    sys.path and task come from the caller, as with spawn. (The launcher is the spawn module's
    one executable, which the fork server also starts with.)"""
    # Python 3.11.0's fork server listened on an abstract socket that any local user could ask
    # to run code (CVE-2022-42919); later ones use a file only this user can open.
    safe = sys.version_info >= (3, 11, 1)
    method = ("forkserver" if safe and "forkserver" in multiprocessing.get_all_start_methods()
              else "spawn")
    ctx = multiprocessing.get_context(method)
    launcher = _launcher()
    if launcher is not None:
        ctx.set_executable(launcher)
    if method == "forkserver":
        ctx.set_forkserver_preload(preload)
    return ctx


def package_env(**extra: str) -> dict[str, str]:
    """The environment for a `python -m spacewar_ai....` child: this one (and `extra`), with the
    folder that holds this package first on PYTHONPATH, so the child imports the same copy."""
    from .files import PACKAGE_DIR

    path = os.pathsep.join(filter(None, [str(PACKAGE_DIR.parent), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, **extra, PYTHONPATH=path)
