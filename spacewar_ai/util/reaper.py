"""Ends every process a run started, with the run, SIGKILL included: the watcher Ray needs.

The package's own workers carry the parent-death signal (processes.py). A Ray instance that a
command starts for itself (`ray.init()` without an address) also starts processes the package
does not launch: Ray's agents are children of its raylet and notice the raylet's death only a
minute later, so a learner killed with SIGKILL left them running. `watch(pid)` starts a small
process, `python -m spacewar_ai.util.reaper PID`, that keeps a list of PID's descendants (read
from /proc a few times a second) and, the moment PID is gone, SIGKILLs every one of them that is
still the same process (same start time). It needs nothing but /proc (Linux); elsewhere it is
not started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

INTERVAL = 0.25  # seconds between looks at the process table


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (which may hold spaces): state,
    parent, ..., user and system CPU ticks at 11 and 12, start time at 19; None once it ended."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process `pid` so far, 0.0 once it is gone."""
    fields = stat_fields(pid)
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / os.sysconf(
        "SC_CLK_TCK")


def process_table() -> dict[int, tuple[int, str]]:
    """{pid: (parent pid, start time)} of every process /proc shows."""
    table = {}
    for entry in os.listdir("/proc"):
        fields = stat_fields(entry) if entry.isdigit() else None
        if fields is not None:  # not a process, or ended while we looked
            table[int(entry)] = (int(fields[1]), fields[19])
    return table


def descendants(pid: int, table: dict[int, tuple[int, str]] | None = None) -> dict[int, str]:
    """{pid: start time} of every process below `pid` (children, theirs, ...)."""
    table = process_table() if table is None else table
    children: dict[int, list[int]] = {}
    for child, (parent, _) in table.items():
        children.setdefault(parent, []).append(child)
    found: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in found:
                found[child] = table[child][1]
                frontier.append(child)
    return found


def alive(pid: int, start: str) -> bool:
    """Whether `pid` is still the process that started at `start` and has not ended."""
    fields = stat_fields(pid)
    return fields is not None and fields[19] == start and fields[0] != "Z"


def watch(pid: int) -> subprocess.Popen | None:
    """Start the watcher of `pid` (this process, usually); None where there is no /proc."""
    if not os.path.isdir("/proc/self"):
        return None
    return subprocess.Popen([sys.executable, "-m", "spacewar_ai.util.reaper", str(pid)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def main(pid: int) -> None:
    me = os.getpid()
    start = stat_fields(pid)[19]
    known: dict[int, str] = {}
    while alive(pid, start):
        known = {p: s for p, s in {**known, **descendants(pid)}.items()
                 if p != me and alive(p, s)}
        time.sleep(INTERVAL)
    for child, begun in known.items():
        if alive(child, begun):
            with contextlib.suppress(OSError):  # ended between the look and the kill
                os.kill(child, signal.SIGKILL)


if __name__ == "__main__":
    main(int(sys.argv[1]))
