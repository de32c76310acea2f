"""The sandbox's child process: runs one strategy file for sandbox.StrategyPilot.

Started as `python -I sandbox_child.py` with an empty environment, so it imports nothing of the
package: only the standard library, then the strategy. Protocol on stdin/stdout (little-endian):

- in: a header (4-byte length, JSON: source, filename, hard_ms, limits, builtins, n_actions);
  out: a status message (4-byte length, JSON {"ok", "error" or "unapplied"}).
- in: a batch (n, dim as two uint32, then n * dim float64 observations; n = 0 ends the child);
  out: n action bytes (255: failed), n float32 seconds, then a message of JSON errors by row.

It lowers its own resource limits before the strategy runs, and runs the strategy's module with
a builtins table of the allowed names only; a SIGALRM timer interrupts a decision that overruns
the hard limit (strategies cannot `try`, so they cannot swallow it).
"""

import builtins
import json
import math
import resource
import signal
import struct
import sys
import time

FAILED = 255
LOAD_SECONDS = 1.0  # the strategy's module must finish running its top level within this


class HardTimeout(Exception):
    """Raised by the SIGALRM handler inside the strategy's call (which cannot catch it)."""


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


def load_strategy(hdr: dict):
    """Run the strategy's module with the allowed builtins; return its strategy function."""
    table = {k: getattr(builtins, k) for k in hdr["builtins"] if k != "print"}
    table["print"] = discard
    table["__import__"] = safe_import
    glb = {"__builtins__": table, "__name__": "strategy"}
    code = compile(hdr["source"], hdr["filename"], "exec")
    signal.setitimer(signal.ITIMER_REAL, LOAD_SECONDS)
    exec(code, glb)
    signal.setitimer(signal.ITIMER_REAL, 0)
    fn = glb.get("strategy")
    if not callable(fn):
        raise TypeError("the file defines no function strategy(obs)")
    return fn


def answer(fn, n: int, dim: int, hdr: dict) -> None:
    """Decide one batch of n observations and send the actions, times and errors."""
    flat = struct.unpack(f"<{n * dim}d", read_exact(8 * n * dim))
    nact = hdr["n_actions"]
    hard = hdr["hard_ms"] / 1000.0
    acts = bytearray(n)
    times = [0.0] * n
    errors = {}
    for i in range(n):
        obs = flat[i * dim:(i + 1) * dim]
        t0 = time.perf_counter()
        try:
            signal.setitimer(signal.ITIMER_REAL, hard)
            a = fn(obs)
            signal.setitimer(signal.ITIMER_REAL, 0)
            if type(a) is not int or not 0 <= a < nact:
                raise ValueError(f"returned {str(a)[:40]!r} ({type(a).__name__}); "
                                 f"an action must be an int 0..{nact - 1}")
            acts[i] = a
        except BaseException as exc:
            signal.setitimer(signal.ITIMER_REAL, 0)
            acts[i] = FAILED
            errors[i] = f"{type(exc).__name__}: {exc}"[:300]
        times[i] = time.perf_counter() - t0
    sys.stdout.buffer.write(bytes(acts) + struct.pack(f"<{n}f", *times))
    send(json.dumps(errors).encode())


def main() -> None:
    hdr = json.loads(read_exact(struct.unpack("<I", read_exact(4))[0]))

    def on_alarm(signum, frame):
        raise HardTimeout(f"decision took longer than the hard limit of {hdr['hard_ms']} ms")

    signal.signal(signal.SIGALRM, on_alarm)
    unapplied = lower_limits(hdr["limits"])
    try:
        fn = load_strategy(hdr)
    except BaseException as exc:
        signal.setitimer(signal.ITIMER_REAL, 0)
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
