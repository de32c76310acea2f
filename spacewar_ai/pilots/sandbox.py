"""Strategy files: Python pilots written by people or LLMs, checked and then run in a sandbox.

A strategy file defines `strategy(obs) -> int` (docs/strategies.md). Two walls:

1. `validate_source` walks the file's syntax tree against an allow-list before any of it runs
   and refuses anything else with the file, line and reason.
2. `StrategyPilot` runs it in a child process (sandbox_child.py: `python -I`, an empty
   environment, resource limits, a builtins table of the allowed names), a batch of games per
   message.

The budget is counted in operations (calls, loop iterations, `range` elements), which load does
not change, so a seeded tournament gives the same results on any machine: `hard_ops` a decision,
`avg_ops` on average, `load_ops` to load. CPU time is only a wide safety net for work inside one
builtin call. A strategy that fails, overruns or answers badly forfeits that game (`forfeits`);
a child that dies or hangs forfeits the games it was deciding and is replaced."""

from __future__ import annotations

import ast
import contextlib
import json
import logging
import os
import select
import struct
import subprocess
import sys
import weakref
from pathlib import Path

import numpy as np

from ..game.pilot import Pilot
from ..util.errors import UserError
from ..util.files import printable
from ..util.processes import child_command

ALLOWED_BUILTINS = ("abs", "min", "max", "len", "range", "sum", "round", "enumerate", "zip",
                    "float", "int", "bool", "list", "tuple", "sorted", "reversed", "any", "all",
                    "isinstance", "print")
ALLOWED_IMPORTS = ("math",)
# Names refused outright, with a reason that tells the author why (most are also simply absent
# from the builtins table, which would refuse them anyway).
FORBIDDEN_NAMES = frozenset({
    "eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "hasattr", "vars",
    "globals", "locals", "type", "super", "__import__", "breakpoint", "input", "help", "dir",
    "object", "memoryview", "classmethod", "staticmethod", "property", "exit", "quit"})
FORBIDDEN_ATTRIBUTES = frozenset({"format", "format_map", "mro"})
# Frame, generator, coroutine, async-generator, traceback and code objects lead back to globals.
FORBIDDEN_ATTRIBUTE_PREFIXES = ("gi_", "cr_", "ag_", "f_", "tb_", "co_")

# Statement and expression kinds a strategy may use; every other node kind is refused.
_ALLOWED_NODES = (
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Assign, ast.AugAssign,
    ast.For, ast.While, ast.If, ast.Break, ast.Continue, ast.Pass, ast.Expr, ast.Import,
    ast.ImportFrom, ast.alias, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp,
    ast.Call, ast.keyword, ast.Constant, ast.Name, ast.Attribute, ast.Subscript, ast.Slice,
    ast.Starred, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.SetComp,
    ast.DictComp, ast.GeneratorExp, ast.comprehension, ast.NamedExpr, ast.Delete,
    ast.JoinedStr, ast.FormattedValue, ast.Load, ast.Store, ast.Del, ast.And, ast.Or,
    ast.operator, ast.unaryop, ast.cmpop,
)
# What to call the refused kinds in messages (the rest use their AST class name).
_NODE_WORDS = {
    ast.Lambda: "lambda", ast.Yield: "yield", ast.YieldFrom: "yield from",
    ast.ClassDef: "class definitions", ast.Global: "global", ast.Nonlocal: "nonlocal",
    ast.With: "with", ast.Try: "try/except", ast.AsyncFunctionDef: "async def",
    ast.AsyncFor: "async for", ast.AsyncWith: "async with", ast.Await: "await",
    ast.Raise: "raise", ast.Assert: "assert", ast.AnnAssign: "annotated assignments",
}
if hasattr(ast, "TryStar"):
    _NODE_WORDS[ast.TryStar] = "try/except*"

MAX_SOURCE_BYTES = 100_000
log = logging.getLogger(__name__)
_warned_limits: list[bool] = []
_ERROR_ACTION = 255
# The program the child runs (ours, trusted), started as a script: it imports nothing of this
# package, so the child holds only the standard library and the strategy.
CHILD_PROGRAM = Path(__file__).resolve().parent / "sandbox_child.py"
SAFETY_SECONDS = 5.0  # wall clock on top of five times the CPU limits, before a child is killed
AVG_OPS = 10_000  # operations a decision may use on average (judged after 20 decisions)
HARD_OPS = 100_000  # operations one decision may use
LOAD_OPS = 1_000_000  # operations the file's top level may use, once


class StrategyError(UserError):
    """A strategy file was refused; the message names the file, the line and the reason.
    `public` says the same with the file's base name and without a word of the file's own text
    (a name, an import, a string): what a server may show to whoever named the file, which may
    not be its author (a key file named as a strategy must not come back quoted)."""

    def __init__(self, message: str, public: str | None = None):
        super().__init__(message)
        self.public = public or message


def _refuse(filename: str, line: int, reason: str, rule: str | None = None) -> StrategyError:
    """`reason` may quote the file; `rule`, the reason without the quote, must not."""
    return StrategyError(f"{filename}:{line}: {reason}",
                         f"{Path(filename).name}:{line}: {rule or reason}")


def validate_source(source: str, filename: str = "<strategy>") -> ast.Module:
    """Check a strategy's source against the allow-list; returns the parsed tree or raises
    StrategyError naming the file, line and reason. Nothing of the source runs here."""
    if len(source.encode("utf-8", "replace")) > MAX_SOURCE_BYTES:
        raise _refuse(filename, 0, f"the file is larger than {MAX_SOURCE_BYTES} bytes")
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise _refuse(filename, exc.lineno or 0, f"syntax error: {exc.msg}",
                      "not valid Python") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
        raise _refuse(filename, 0, f"cannot be parsed ({type(exc).__name__})") from None
    bound = set(ALLOWED_BUILTINS)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    # Report the first problem in reading order (the innermost of nested ones on a line).
    for where, node in sorted(_located(tree, (0, 0, 0)), key=lambda item: item[0]):
        if not isinstance(node, _ALLOWED_NODES):
            word = _NODE_WORDS.get(type(node), type(node).__name__)
            raise _refuse(filename, where[0], f"{word} is not allowed in a strategy")
        _check_node(node, where[0], filename, bound)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "strategy"]
    if not defs:
        raise _refuse(filename, 0, "no top-level `def strategy(obs):` found")
    # What plays is the function the def makes: nothing else may bind the name, nor a
    # decorator wrap it.
    for node in ast.walk(tree):
        rebinds = (isinstance(node, ast.Name) and node.id == "strategy"
                   and isinstance(node.ctx, (ast.Store, ast.Del))) or \
            (isinstance(node, ast.alias) and (node.asname or node.name) == "strategy") or \
            (isinstance(node, ast.FunctionDef) and node.name == "strategy"
             and (node not in tree.body or node.decorator_list))
        if rebinds:
            raise _refuse(filename, getattr(node, "lineno", 0),
                          "`strategy` must be bound once, by a plain top-level `def "
                          "strategy(obs):` (no other assignment, import or decorator)")
    args = defs[-1].args
    if len(args.args) != 1 or args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise _refuse(filename, defs[-1].lineno, "strategy must take exactly one argument: "
                                          "def strategy(obs)")
    return tree


def _located(root, where):
    """Every node with its (line, column, end column); nodes without a position (withitem,
    comprehension, arguments) take their parent's, so messages name a real line. Iterative, so
    deep nesting cannot exhaust the stack."""
    out = []
    stack = [(root, where)]
    while stack:
        node, where = stack.pop()
        if hasattr(node, "lineno"):
            where = (node.lineno, node.col_offset, node.end_col_offset or 0)
        out.append((where, node))
        stack.extend((child, where) for child in ast.iter_child_nodes(node))
    return out


def _check_node(node, line: int, filename: str, bound: set[str]) -> None:
    if isinstance(node, ast.Name):
        if node.id.startswith("_"):
            raise _refuse(filename, line, f"name {node.id!r} begins with an underscore",
                          "a name begins with an underscore")
        if node.id in FORBIDDEN_NAMES:
            raise _refuse(filename, line, f"{node.id}() is not allowed in a strategy")
        if isinstance(node.ctx, ast.Load) and node.id not in bound:
            raise _refuse(filename, line, f"name {node.id!r} is not defined in the file and is "
                                          f"not an allowed builtin ({', '.join(ALLOWED_BUILTINS)})",
                          "a name is neither defined in the file nor an allowed builtin")
    elif isinstance(node, ast.Attribute):
        attr = node.attr
        if attr.startswith("_"):
            raise _refuse(filename, line, f"attribute {attr!r} begins with an underscore",
                          "an attribute begins with an underscore")
        if attr in FORBIDDEN_ATTRIBUTES or attr.startswith(FORBIDDEN_ATTRIBUTE_PREFIXES):
            raise _refuse(filename, line, f"attribute {attr!r} is not allowed in a strategy",
                          "an attribute that is not allowed in a strategy")
    elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
        if "__" in text:
            raise _refuse(filename, line, "string constants may not contain '__' (dunder names)")
    elif isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name not in ALLOWED_IMPORTS:
                raise _refuse(filename, line, f"import {alias.name} is not allowed; `import math` "
                                              "is the only import",
                              "an import other than `import math`")
    elif isinstance(node, ast.ImportFrom):
        if node.module not in ALLOWED_IMPORTS or node.level:
            raise _refuse(filename, line, f"from {node.module} import is not allowed; "
                                          "`import math` is the only import",
                          "an import other than `import math`")
        for alias in node.names:
            if alias.name == "*" or alias.name.startswith("_"):
                raise _refuse(filename, line, f"from math import {alias.name} is not allowed",
                              "a from-math import of * or a private name")
    elif isinstance(node, ast.FunctionDef):
        if node.decorator_list:
            raise _refuse(filename, line, "decorators are not allowed in a strategy")
        if node.returns is not None or any(a.annotation is not None for a in node.args.args):
            raise _refuse(filename, line, "annotations are not allowed in a strategy")
        if node.name.startswith("_"):
            raise _refuse(filename, line, f"function name {node.name!r} begins with an underscore",
                          "a function name begins with an underscore")
    elif isinstance(node, ast.arg) and node.arg.startswith("_"):
        raise _refuse(filename, line, f"argument {node.arg!r} begins with an underscore",
                      "an argument begins with an underscore")
    elif isinstance(node, ast.alias) and (node.asname or "").startswith("_"):
        raise _refuse(filename, line, f"alias {node.asname!r} begins with an underscore",
                      "an alias begins with an underscore")


def load_strategy_file(path) -> str:
    """Read and validate a strategy file; StrategyError (a ValueError) names the problem."""
    path = Path(path)
    if not path.is_file():
        raise StrategyError(f"{path}: no such strategy file",
                            f"{path.name}: no such strategy file")
    with path.open("rb") as f:
        data = f.read(MAX_SOURCE_BYTES + 1)  # no more than that is ever read
    if len(data) > MAX_SOURCE_BYTES:
        raise _refuse(str(path), 0, f"the file is larger than {MAX_SOURCE_BYTES} bytes")
    try:
        # utf-8-sig: editors on Windows save a byte-order mark, which is not Python.
        source = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _refuse(str(path), 0, f"not UTF-8 text ({exc.reason})", "not UTF-8 text") from None
    validate_source(source, str(path))
    return source


DEFAULT_LIMITS = {
    "RLIMIT_AS": 512 * 1024 * 1024,  # bytes of address space: a memory bomb meets MemoryError
    "RLIMIT_CPU": 900,               # CPU seconds for the whole process, a backstop to the timers
    "RLIMIT_NOFILE": 4,              # stdin, stdout, stderr: nothing new can be opened
    "RLIMIT_FSIZE": 0,               # bytes: no file can be written
    "RLIMIT_NPROC": 0,               # no new processes (ignored by the kernel for root)
    "RLIMIT_CORE": 0,
}


class StrategyPilot(Pilot):
    """A strategy file flying as a pilot (the pilot interface: act, reset, name, identity).

    `act(obs, active)` asks the child for one action per active row; rows whose game was forfeited
    get action 0 and are not asked again until `reset` starts a new game in that row. Forfeits
    at the last call are `forfeits()` ({row: reason}); all of them are in `forfeit_reason`.
    """

    def __init__(self, path, name: str | None = None, identity: str | None = None,
                 hard_ms: float = 200.0, avg_ms: float = 50.0, min_decisions_for_avg: int = 20,
                 limits: dict | None = None, source: str | None = None, n_actions: int = 6,
                 load_ms: float = 2000.0, avg_ops: int = AVG_OPS, hard_ops: int = HARD_OPS,
                 load_ops: int = LOAD_OPS):
        self.path = Path(path)
        self.source = source if source is not None else load_strategy_file(self.path)
        # A file's name is its author's choice: one printable line wherever it is shown.
        self.name = printable(name or f"strategy:{self.path.name}", 120)
        self.identity = identity or self.name
        self.hard_ms = float(hard_ms)
        self.load_ms = float(load_ms)
        self.n_actions = int(n_actions)
        self.avg_ms = float(avg_ms)
        self.avg_ops, self.hard_ops, self.load_ops = int(avg_ops), int(hard_ops), int(load_ops)
        self.min_decisions_for_avg = int(min_decisions_for_avg)
        self.limits = dict(DEFAULT_LIMITS if limits is None else limits)
        self.forfeit_reason: dict[int, str] = {}
        self._new_forfeits: dict[int, str] = {}
        self.restarts = 0
        self.unapplied_limits: list[str] = []  # rlimits the system refused (reported by the child)
        self._proc: subprocess.Popen | None = None
        self._finalizer = None
        self._n = 0
        self._resize(0)

    # --- the child process -------------------------------------------------------------------
    def _start(self) -> None:
        proc = subprocess.Popen(child_command([sys.executable, "-I", str(CHILD_PROGRAM)]),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env={}, close_fds=True)
        self._proc = proc
        self._finalizer = weakref.finalize(self, _kill, proc)
        header = {"source": self.source, "filename": str(self.path), "hard_ms": self.hard_ms,
                  "load_ms": self.load_ms, "hard_ops": self.hard_ops, "load_ops": self.load_ops,
                  "limits": self.limits,
                  "builtins": list(ALLOWED_BUILTINS), "n_actions": self.n_actions,
                  "parent": os.getpid()}
        reply = self._request(_frame(json.dumps(header).encode()), SAFETY_SECONDS + 5 *
                              self.load_ms / 1000.0, expect_actions=0)
        if reply is None:
            self.close()
            raise StrategyError(f"{self.path}: the sandbox process did not start",
                                f"{Path(self.path).name}: the sandbox process did not start")
        status = json.loads(reply[3])
        if not status.get("ok"):
            self.close()
            raise StrategyError(f"{self.path}: failed while loading: {status.get('error')}",
                                f"{Path(self.path).name}: failed while loading")
        self.unapplied_limits = status.get("unapplied", [])
        if self.unapplied_limits and not _warned_limits:
            # Said once per process: the other walls still stand, but the user should know.
            log.warning("sandbox: this system refused some resource limits: %s",
                        "; ".join(self.unapplied_limits))
            _warned_limits.append(True)

    def _request(self, payload: bytes, timeout: float, expect_actions: int):
        """Send payload; return (actions, CPU times, operation counts, json_bytes) or None if
        the child died or hung."""
        proc = self._proc
        try:
            proc.stdin.write(payload)
            proc.stdin.flush()
            fd = proc.stdout.fileno()
            need = expect_actions * 9
            body = _read(fd, need, timeout) if need else b""
            if body is None:
                return None
            head = _read(fd, 4, timeout)
            if head is None:
                return None
            blob = _read(fd, struct.unpack("<I", head)[0], timeout)
            if blob is None:
                return None
        except (BrokenPipeError, OSError, ValueError):
            return None
        acts = np.frombuffer(body[:expect_actions], dtype=np.uint8)
        times = np.frombuffer(body[expect_actions:5 * expect_actions], dtype="<f4")
        ops = np.frombuffer(body[5 * expect_actions:], dtype="<u4")
        return acts, times, ops, blob

    def forfeits(self) -> dict[int, str]:
        return self._new_forfeits

    def close(self) -> None:
        """Stop the child process (also done when the pilot is garbage collected)."""
        if self._finalizer is not None:
            self._finalizer()
        self._proc = None
        self._finalizer = None

    # --- the pilot interface -----------------------------------------------------------------
    def _resize(self, n: int) -> None:
        self._n = n
        self._dead = np.zeros(n, dtype=bool)
        self._time = np.zeros(n, dtype=np.float64)
        self._ops = np.zeros(n, dtype=np.int64)
        self._count = np.zeros(n, dtype=np.int64)

    def reset(self, mask=None, seeds=None) -> None:
        if mask is None:
            return
        mask = np.asarray(mask, dtype=bool)
        if mask.shape[0] != self._n:
            self._resize(mask.shape[0])
            self.forfeit_reason = {}
            return
        self._dead[mask] = False
        self._time[mask] = 0.0
        self._ops[mask] = 0
        self._count[mask] = 0
        for r in np.flatnonzero(mask):
            self.forfeit_reason.pop(int(r), None)

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float64)
        n = obs.shape[0]
        self._new_forfeits = {}
        out = np.zeros(n, dtype=np.int64)
        if n == 0:
            return out
        # Per-game bookkeeping only holds when the rows are the same games from call to call.
        tracked = n == self._n
        ask = np.ones(n, dtype=bool) if active is None else np.asarray(active, dtype=bool).copy()
        if tracked:
            ask &= ~self._dead
        rows = np.flatnonzero(ask)
        if rows.size == 0:
            return out
        if self._proc is None or self._proc.poll() is not None:
            try:
                self._start()
            except StrategyError as exc:
                for r in rows:
                    self._forfeit(int(r), str(exc), tracked)
                return out
        block = np.ascontiguousarray(obs[rows], dtype="<f8")
        # Wall-clock safety net only: the CPU-time limits in the child decide every other case.
        timeout = SAFETY_SECONDS + 5 * self.hard_ms / 1000.0 * rows.size
        reply = self._request(struct.pack("<II", rows.size, obs.shape[1]) + block.tobytes(),
                              timeout, rows.size)
        if reply is None:
            code = self._proc.poll() if self._proc is not None else None
            self.close()
            self.restarts += 1
            why = (f"the sandbox process did not answer within the wall-clock safety limit of "
                   f"{timeout:.0f} s (a hang inside C code, or an overloaded machine: this "
                   "forfeit depends on the machine's load) and was killed"
                   if code is None else f"the sandbox process died (exit code {code})")
            for r in rows:
                self._forfeit(int(r), why, tracked)
            return out
        acts, times, ops, blob = reply
        errors = {int(k): v for k, v in json.loads(blob).items()}
        out[rows] = np.where(acts == _ERROR_ACTION, 0, acts)
        for i, reason in errors.items():
            self._forfeit(int(rows[i]), reason, tracked)
        if tracked:
            self._time[rows] += times
            self._ops[rows] += ops
            self._count[rows] += 1
            judged = rows[(self._count[rows] >= self.min_decisions_for_avg) & ~self._dead[rows]]
            for r in judged:
                if self._ops[r] > self._count[r] * self.avg_ops:
                    self._forfeit(int(r), f"decisions averaged {self._ops[r] / self._count[r]:,.0f}"
                                          f" operations, over the budget of {self.avg_ops:,}",
                                  tracked)
                elif self._time[r] > self._count[r] * self.avg_ms / 1000.0:
                    mean = self._time[r] / self._count[r] * 1000.0
                    self._forfeit(int(r), f"decisions averaged {mean:.1f} ms of CPU time, over "
                                          f"the safety limit of {self.avg_ms:g} ms (work inside "
                                          "builtin calls, which the operation count does not "
                                          "see)", tracked)
        return out

    def _forfeit(self, row: int, reason: str, tracked: bool) -> None:
        # The text comes from the strategy (its exception's message): one short printable line
        # before it reaches a terminal, a report file or a page.
        reason = printable(reason)
        self._new_forfeits[row] = reason
        if tracked:
            self._dead[row] = True
            self.forfeit_reason[row] = reason


def _frame(payload: bytes) -> bytes:
    return struct.pack("<I", len(payload)) + payload


def _read(fd: int, n: int, timeout: float) -> bytes | None:
    """Read exactly n bytes from fd within timeout seconds; None on EOF or timeout."""
    chunks = []
    got = 0
    while got < n:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return None
        chunk = os.read(fd, n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _kill(proc: subprocess.Popen) -> None:
    """Ask the child to exit (an empty batch), kill it if it does not, close the pipes. Every
    step may meet a child that is already gone; that is the point of calling this."""
    gone = (OSError, ValueError, subprocess.TimeoutExpired)
    if proc.poll() is None:
        with contextlib.suppress(*gone):
            proc.stdin.write(struct.pack("<II", 0, 0))
            proc.stdin.flush()
            proc.wait(timeout=0.5)
    if proc.poll() is None:
        with contextlib.suppress(*gone):
            proc.kill()
            proc.wait(timeout=5)
    for stream in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):
            stream.close()
