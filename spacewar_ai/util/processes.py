"""Worker processes that never outlive the run that started them, even after a SIGKILL.

- A command the package starts (the browser's workers, rollout workers, sandboxed strategies)
  goes through `setpriv --pdeathsig KILL` (`child_command`), so the kernel kills it with its
  parent even while it imports, and it calls `die_with_parent(parent_pid)` once it runs.
- multiprocessing's workers (tournament workers, arena pairings) come from `worker_context`: a
  fork server, started through setpriv, imports `preload` once and forks each worker from it.
  The kernel ties the server to the thread that started it, so each worker also watches the
  process that asked for it (`die_with_parent()`) and ends when that one is gone; and a thread
  that may be the first to start a worker must live as long as the process (util.workers'
  `submit` runs its jobs on such threads), or the server dies with it.

The package's children share one toolkit: one framing for messages (`frame`, `write_frame`,
`read_frame`, `read_frame_async`, `FrameReader`: a length, then bytes; what the bytes hold is
the protocol's own), one pool of children started ahead (`StartedAhead`: a READY byte within a
deadline, taken, given back or ended), and one way to cap a child's memory and CPU (`confine`). The
sandbox of strategy files keeps a protocol of its own: its child imports only the standard
library before the hostile code runs (pilots/sandbox.py)."""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import ctypes.util
import multiprocessing
import os
import select
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from functools import lru_cache

from .errors import UserError
from .reaper import cpu_seconds

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


# --- the toolkit for the package's own child processes (not the sandbox's: pilots/sandbox.py) --
LENGTH = struct.Struct(">Q")


class FrameTooLong(Exception):
    """A frame announced as longer than its reader accepts."""


def frame(data: bytes) -> bytes:
    """`data` as one message to or from a child: its length, then the bytes."""
    return LENGTH.pack(len(data)) + data


def write_frame(stream, data: bytes) -> None:
    """`data` as one frame on a blocking binary stream, flushed; the length is written apart so
    that a large message is not copied to be framed."""
    stream.write(LENGTH.pack(len(data)))
    stream.write(data)
    stream.flush()


def read_frame(stream) -> bytes:
    """The next frame's bytes from a blocking binary stream; EOFError when the other end is
    gone."""
    head = stream.read(LENGTH.size)
    size = LENGTH.unpack(head)[0] if len(head) == LENGTH.size else 0
    data = stream.read(size) if len(head) == LENGTH.size else b""
    if len(head) < LENGTH.size or len(data) < size:
        raise EOFError
    return data


async def read_frame_async(reader, most: int) -> bytes:
    """The next frame's bytes from an asyncio StreamReader; EOFError when the child is gone,
    FrameTooLong past `most` bytes (nothing more is read into memory)."""
    try:
        size = LENGTH.unpack(await reader.readexactly(LENGTH.size))[0]
        if size > most:
            raise FrameTooLong
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        raise EOFError from None


class FrameReader:
    """Frames from a file descriptor read with os.read, so that select() on it never misses a
    frame already read into the buffer (a child that waits on its input and a clock)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = b""
        self.closed = False

    def _whole(self) -> bool:
        """Whether the buffer starts with a whole frame."""
        return len(self.buffer) >= LENGTH.size and \
            len(self.buffer) >= LENGTH.size + LENGTH.unpack_from(self.buffer)[0]

    def frames(self, timeout: float | None) -> list[bytes]:
        """The frames that arrive within `timeout` seconds (None: wait for one)."""
        while not self._whole() and not self.closed:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                break
            chunk = os.read(self.fd, 65536)
            if not chunk:
                self.closed = True
            self.buffer += chunk
            timeout = 0.0
        done = []
        while self._whole():
            end = LENGTH.size + LENGTH.unpack_from(self.buffer)[0]
            done.append(self.buffer[LENGTH.size:end])
            self.buffer = self.buffer[end:]
        return done


def protocol_streams():
    """A child's stdin and stdout for its protocol (binary); whatever else it prints, a
    library's warning say, goes to its stderr instead."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return os.fdopen(0, "rb"), out


READY = b"R"  # what a started-ahead child writes once it has loaded what its jobs need


def say_ready(stream) -> None:
    stream.write(READY)
    stream.flush()


class NotReady(UserError):
    """A started-ahead child that died or was too slow to say it was ready."""


class StartedAhead:
    """Child processes of one command started before they are needed (asyncio), so a job does
    not wait for their imports: each says READY once loaded, within `ready_seconds`, and a
    job's deadline counts from then. `count` are kept started; `single_use` children serve one
    job each (taking one starts the next), the others are given back after each job and
    replaced only when they fail."""

    def __init__(self, command: list[str], count: int, ready_seconds: float, what: str, *,
                 single_use: bool = False, env: dict | None = None, stderr=None):
        self.command = command
        self.count = count
        self.ready_seconds = ready_seconds
        self.what = what
        self.single_use = single_use
        self.env = env if env is not None else package_env()
        self.stderr = stderr
        self.idle: list[asyncio.Future] = []  # children ready, or starting
        self.start_cpu = 0.0  # CPU seconds the last child to say READY took to get there

    def start(self) -> None:
        """Start children up to `count` (within the running event loop)."""
        while len(self.idle) < self.count:
            self.idle.append(asyncio.ensure_future(self._spawn()))

    async def _spawn(self):
        proc = await asyncio.create_subprocess_exec(
            *child_command(self.command), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=self.stderr, env=self.env, limit=2**20)
        try:
            if await asyncio.wait_for(proc.stdout.readexactly(1), self.ready_seconds) != READY:
                raise asyncio.IncompleteReadError(b"", 1)
            self.start_cpu = cpu_seconds(proc.pid)
        except BaseException as exc:  # too slow, dead at start, or the server closing
            await _end(proc)
            if isinstance(exc, (asyncio.TimeoutError, asyncio.IncompleteReadError)):
                raise NotReady(f"{self.what} could not start; try again later") from None
            raise
        return proc

    async def take(self):
        """A ready child for one job (NotReady if it could not start: the next may). A job
        that leaves while its child starts leaves the child to the next job."""
        waiting = self.idle.pop(0) if self.idle else asyncio.ensure_future(self._spawn())
        if self.single_use:
            self.start()
        try:
            return await asyncio.shield(waiting)
        except asyncio.CancelledError:
            self.idle.insert(0, waiting)
            raise
        except NotReady:
            if not self.single_use:
                self.start()
            raise

    async def give_back(self, proc, healthy: bool) -> None:
        """`proc` after its job: kept for the next one if `healthy` (and reusable), else ended,
        and a new one started in its place if the children are reusable."""
        if healthy and not self.single_use and proc.returncode is None:
            ready = asyncio.get_running_loop().create_future()
            ready.set_result(proc)
            self.idle.append(ready)
            return
        await _end(proc)
        if not self.single_use:
            self.start()

    async def close(self) -> None:
        waiting, self.idle = self.idle, []
        for future in waiting:
            future.cancel()  # one still starting ends its process (_spawn)
        for done in await asyncio.gather(*waiting, return_exceptions=True):
            if not isinstance(done, BaseException):
                await _end(done)


async def _end(proc) -> None:
    if proc.returncode is None:
        proc.kill()
    await proc.wait()


def confine(memory_mb: float | None = None, cpu_seconds: float | None = None) -> None:
    """The kernel's caps on this process, before it runs anything it was sent: its address
    space (a bigger allocation fails with MemoryError) and its CPU time (the kernel ends it
    past them)."""
    import resource

    if memory_mb is not None:
        size = int(memory_mb * 2**20)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if cpu_seconds is not None:
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_seconds), int(cpu_seconds)))
