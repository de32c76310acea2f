"""The sandbox's child process: runs one strategy file for sandbox.StrategyPilot.

Started as `python -I sandbox_child.py` with an empty environment, so it imports only the
standard library, then the strategy. Protocol on stdin/stdout (little-endian):

- in: a header (4-byte length, JSON: source, filename, limits and budgets, builtins, n_actions,
  parent); out: a status message (4-byte length, JSON {"ok", "error" or "unapplied"});
- in: a batch (n, dim as two uint32, then n * dim float64; n = 0 ends the child); out: n action
  bytes (255: failed), n float32 CPU seconds, n uint32 operation counts, then JSON errors by row.

It dies with its parent, lowers its own resource limits, and rewrites the strategy's syntax tree
so that every call, loop iteration and `range` element counts one operation; CPU time under a
profiling timer is the safety net for work inside one builtin call. Its protocol and limits are
its own, not the package's process toolkit (util.processes): nothing outside the standard
library is imported into a process that runs hostile code."""

import ast
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


# The operation count of the running decision (or of loading the file), its limit, and what
# to say when the limit is passed.
OPS = [0, 0, ""]
TICK, COUNT = "__spacewar_tick", "__spacewar_count"


def tick():
    OPS[0] += 1
    if OPS[0] > OPS[1]:
        raise HardLimit(OPS[2])


def count(iterable):
    """Iterate, counting one operation per item."""
    for item in iterable:
        OPS[0] += 1
        if OPS[0] > OPS[1]:
            raise HardLimit(OPS[2])
        yield item


def counted_range(*args):
    """range, counting its length up front: sum(range(n)) is n operations of work."""
    r = range(*args)
    try:
        OPS[0] += len(r)
    except OverflowError:
        OPS[0] = OPS[1] + 1
    if OPS[0] > OPS[1]:
        raise HardLimit(OPS[2])
    return r


def budget(ops: int, what: str) -> None:
    OPS[0], OPS[1], OPS[2] = 0, ops, what


class Counted(ast.NodeTransformer):
    """Adds the operation count to a strategy's syntax tree (the module docstring)."""

    @staticmethod
    def _tick():
        return ast.Expr(ast.Call(ast.Name(TICK, ast.Load()), [], []))

    @staticmethod
    def _count(node):
        return ast.Call(ast.Name(COUNT, ast.Load()), [node], [])

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.body.insert(0, self._tick())
        return node

    def visit_While(self, node):
        self.generic_visit(node)
        node.body.insert(0, self._tick())
        return node

    def visit_For(self, node):
        self.generic_visit(node)
        node.iter = self._count(node.iter)
        return node

    def visit_comprehension(self, node):
        self.generic_visit(node)
        node.iter = self._count(node.iter)
        return node


def load_strategy(hdr: dict):
    """Run the strategy's module with the allowed builtins; return its strategy function."""
    table = {k: getattr(builtins, k) for k in hdr["builtins"] if k != "print"}
    table["print"] = discard
    table["range"] = counted_range
    table["__import__"] = safe_import
    glb = {"__builtins__": table, "__name__": "strategy", TICK: tick, COUNT: count}
    tree = ast.fix_missing_locations(Counted().visit(ast.parse(hdr["source"], hdr["filename"])))
    code = compile(tree, hdr["filename"], "exec")
    budget(hdr["load_ops"], f"loading the file took more than {hdr['load_ops']:,} operations "
                            "(its top level runs once, before any game)")
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
    """Decide one batch of n observations and send the actions, CPU times, operation counts
    and errors."""
    flat = struct.unpack(f"<{n * dim}d", read_exact(8 * n * dim))
    nact = hdr["n_actions"]
    hard = hdr["hard_ms"] / 1000.0
    what = (f"decision took more than the CPU-time safety limit of {hdr['hard_ms']:g} ms (work "
            "inside builtin calls, which the operation count does not see)")
    over = f"decision took more than the hard limit of {hdr['hard_ops']:,} operations"
    acts = bytearray(n)
    times = [0.0] * n
    ops = [0] * n
    errors = {}
    for i in range(n):
        obs = flat[i * dim:(i + 1) * dim]
        budget(hdr["hard_ops"], over)
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
            # The error's text is the strategy's work too (a KeyError's repr of a huge key):
            # it is made while the limit still runs, and is the type's name if that fires.
            try:
                text = f"{type(exc).__name__}: {exc}"
            except BaseException:
                text = type(exc).__name__
            limit(0, "")
            acts[i] = FAILED
            errors[i] = text[:300]
        times[i] = time.process_time() - t0
        ops[i] = min(OPS[0], 2**32 - 1)
    sys.stdout.buffer.write(bytes(acts) + struct.pack(f"<{n}f", *times)
                            + struct.pack(f"<{n}I", *ops))
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
