"""Worker processes that never outlive the run that started them.

Tournament workers ask the kernel to kill them when their parent dies (Linux's parent-death
signal), so a SIGKILL of the run, which no Python code can catch, still takes them with it; a
worker whose parent died before it could ask exits at once. Sandboxed strategy children do the
same in their own program (sandbox_child.py), which imports nothing of this package.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys

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
