"""The sandbox's child process: runs one strategy file for sandbox.StrategyPilot.

Started as `python -I sandbox_child.py` with an empty environment, so it imports nothing of the
package: only the standard library, then the strategy. Protocol on stdin/stdout (little-endian):

- in: a header (4-byte length, JSON: source, filename, hard_ms, load_ms, limits, builtins,
  n_actions, parent); out: a status message (4-byte length, JSON {"ok", "error" or "unapplied"}).
- in: a batch (n, dim as two uint32, then n * dim float64 observations; n = 0 ends the child);
  out: n action bytes (255: failed), n float32 CPU seconds, then a message of JSON errors by row.

It asks the kernel to kill it when its parent dies, lowers its own resource limits before the
strategy runs, and runs the strategy's module with a builtins table of the allowed names only.
Time is CPU time of this process, which the machine's load does not change: a profiling timer
interrupts a decision that overruns the hard limit (strategies cannot `try`, so they cannot
swallow it), and the seconds each decision used are reported for the average budget.
"""

import builtins
import ctypes
import ctypes.util
import json
import math
import os
import resource
import signal
import struct
import sys
import time

FAILED = 255
PR_SET_PDEATHSIG = 1


class HardLimit(Exception):
    """Raised by the profiling timer inside the strategy's code (which cannot catch it)."""


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when the process that started it dies (Linux), whatever kills it."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before we asked
        os._exit(1)


def read_exact(n: int) -> bytes:
    b = sys.stdin.buffer.read(n)
    if b is None or len(b) < n:
        sys.exit(0)  # the parent closed the pipe: nothing more to do
    return b


def send(payload: bytes) -> None:
    sys.stdout.buffer.write(struct.pack("<I", len(payload)) + payload)
    sys.stdout.buffer.flush()


def lower_limits(limits: dict) -> list[str]:
    """Apply the resource limits; returns those the system refused, for the parent to report."""
    unapplied = []
    for name, value in limits.items():
        try:
            resource.setrlimit(getattr(resource, name), (value, value))
        except (ValueError, OSError, AttributeError) as exc:
            unapplied.append(f"{name}: {exc}")
    return unapplied


def safe_import(name, globals=None, locals=None, fromlist=(), level=0):
    if name != "math" or level:
        raise ImportError("only math may be imported")
    return math


def discard(*args, **kwargs):
    return None


def limit(seconds: float, what: str) -> None:
    """Arm (seconds > 0) or disarm the CPU-time limit; `what` is said when it fires."""
    limit.what = what
    signal.setitimer(signal.ITIMER_PROF, seconds)


def on_limit(signum, frame):
    raise HardLimit(limit.what)


def load_strategy(hdr: dict):
    """Run the strategy's module with the allowed builtins; return its strategy function."""
    table = {k: getattr(builtins, k) for k in hdr["builtins"] if k != "print"}
    table["print"] = discard
    table["__import__"] = safe_import
    glb = {"__builtins__": table, "__name__": "strategy"}
    code = compile(hdr["source"], hdr["filename"], "exec")
    limit(hdr["load_ms"] / 1000.0, f"loading the file took more than {hdr['load_ms']:g} ms of "
                                   "CPU time (its top level runs once, before any game)")
    exec(code, glb)
    limit(0, "")
    fn = glb.get("strategy")
    if not callable(fn):
        raise TypeError("the file defines no function strategy(obs)")
    return fn


def refuse(a, nact: int) -> str:
    """Why a returned value is not an action, or "" when it is one. Never builds the text of a
    huge value (an int of thousands of digits cannot even be printed)."""
    if type(a) is int and 0 <= a < nact:
        return ""
    if type(a) is int:
        shown = str(a) if -10**6 < a < 10**6 else f"an int of {a.bit_length()} bits"
    else:
        shown = f"a {type(a).__name__}"
    return f"returned {shown}; an action must be an int 0..{nact - 1}"


def answer(fn, n: int, dim: int, hdr: dict) -> None:
    """Decide one batch of n observations and send the actions, CPU times and errors."""
    flat = struct.unpack(f"<{n * dim}d", read_exact(8 * n * dim))
    nact = hdr["n_actions"]
    hard = hdr["hard_ms"] / 1000.0
    what = f"decision took more than the hard limit of {hdr['hard_ms']:g} ms of CPU time"
    acts = bytearray(n)
    times = [0.0] * n
    errors = {}
    for i in range(n):
        obs = flat[i * dim:(i + 1) * dim]
        t0 = time.process_time()
        try:
            limit(hard, what)
            a = fn(obs)
            why = refuse(a, nact)  # checked while the limit still runs: it is the strategy's time
            limit(0, "")
            if why:
                raise ValueError(why)
            acts[i] = a
        except BaseException as exc:
            limit(0, "")
            acts[i] = FAILED
            errors[i] = f"{type(exc).__name__}: {exc}"[:300]
        times[i] = time.process_time() - t0
    sys.stdout.buffer.write(bytes(acts) + struct.pack(f"<{n}f", *times))
    send(json.dumps(errors).encode())


def main() -> None:
    hdr = json.loads(read_exact(struct.unpack("<I", read_exact(4))[0]))
    die_with_parent(hdr["parent"])
    signal.signal(signal.SIGPROF, on_limit)
    unapplied = lower_limits(hdr["limits"])
    try:
        fn = load_strategy(hdr)
    except BaseException as exc:
        limit(0, "")
        send(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}).encode())
        return
    send(json.dumps({"ok": True, "unapplied": unapplied}).encode())
    while True:
        n, dim = struct.unpack("<II", read_exact(8))
        if n == 0:
            return
        answer(fn, n, dim, hdr)


if __name__ == "__main__":
    main()
