"""The package's commands and scripts for the tests, each in a process forked from one that has
loaded what they load.

A test that runs `spacewar-ai ...` or `python scripts/x.py ...` to its end wants what a user's
command does: a process of its own, its exit code, its stdout and stderr, its files. Started
with `subprocess.run`, every such process first imports torch (and its compiler, which an
optimizer loads), the package and the engine's compiled code, which costs more than most of
what the tests ask of it. `cli(...)` and `script(...)` ask a server instead, one per test
process, that has loaded all of that once and forks a child per command. The child takes the
command's folder, environment, argv and output files, runs the CLI's `main` (or the script, as
`python` would) and leaves Python the normal way (atexit handlers, flushed streams), so its
exit code is the command's.

What a child cannot take afresh is what Python, numba and torch read from the environment as
they start (PYTHONPATH, NUMBA_*, PYTHON*): a command whose environment changes one of those
runs as a process of its own. So do the tests of the process itself (the three ways to start
the CLI, what a command imports, its threads, its signals and kills): they use `subprocess`.

The server starts through setpriv (`child_command`), so it ends with the test process; each
child asks the kernel to end it with the server.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The environment's names that Python, numba and torch have read by the time the server forks
# (PYTHONBREAKPOINT is read at each breakpoint(), and Ray sets it in the process it runs in).
READ_AT_START = ("PYTHON", "NUMBA_")
READ_LATER = {"PYTHONBREAKPOINT"}


def _read_at_start(env) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(READ_AT_START) and k not in READ_LATER}


class _Server:
    def __init__(self):
        from spacewar_ai.util.processes import child_command, package_env

        self.started_in = _read_at_start(os.environ)
        env = package_env()
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env["PYTHONPATH"]])
        self.env = env
        self.proc = subprocess.Popen(child_command([sys.executable, "-m", "tests.commands"]),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     cwd=ROOT, bufsize=0)
        self.lock, self.said = threading.Lock(), b""
        if self._line(300) != "ready":
            raise RuntimeError("the commands' server did not start: see its stderr above")

    def serves(self, env) -> bool:
        """Whether a child of this server starts as a process with `env` would."""
        asked, has = _read_at_start(env), _read_at_start(self.env)
        path = set(asked.pop("PYTHONPATH", "").split(os.pathsep)) - {""}
        return asked == {k: v for k, v in has.items() if k != "PYTHONPATH"} and \
            path <= set(has["PYTHONPATH"].split(os.pathsep))

    def _line(self, timeout: float) -> str | None:
        """The server's next line, or None after `timeout` seconds without one (read
        unbuffered: a buffered reader could hold the line that select waits for)."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.said:
            if not select.select([fd], [], [], timeout)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError("the commands' server ended: see its stderr above")
            self.said += chunk
        line, self.said = self.said.split(b"\n", 1)
        return line.decode()

    def run(self, command, script, argv, cwd, env, timeout):
        with self.lock, tempfile.TemporaryDirectory(prefix="command-") as folder:
            out, err = Path(folder, "out"), Path(folder, "err")
            request = {"script": script, "argv": argv, "cwd": str(cwd), "env": dict(env),
                       "out": str(out), "err": str(err)}
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            pid = int(self._line(60))
            code = self._line(timeout)
            if code is None:
                os.kill(pid, signal.SIGKILL)
                self._line(60)
                raise subprocess.TimeoutExpired(command, timeout, out.read_text(errors="replace"),
                                                err.read_text(errors="replace"))
            return subprocess.CompletedProcess(command, int(code), out.read_text(errors="replace"),
                                               err.read_text(errors="replace"))


_server: _Server | None = None


def _run(command, script, argv, cwd, env, timeout) -> subprocess.CompletedProcess:
    global _server
    argv, cwd = [str(a) for a in argv], os.getcwd() if cwd is None else cwd
    env = dict(os.environ if env is None else env)
    # A server started before this process changed its own environment serves it no longer.
    if _server is None or _server.proc.poll() is not None or \
            _server.started_in != _read_at_start(os.environ):
        if _server is not None:
            _server.proc.kill()
            _server.proc.wait()
        _server = _Server()
    if not _server.serves(env):
        return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env,
                              timeout=timeout)
    return _server.run(command, script, argv, cwd, env, timeout)


def cli(*argv, cwd=None, env=None, timeout=600) -> subprocess.CompletedProcess:
    """`spacewar-ai *argv` run to its end in `cwd` with `env` (this process's folder and
    environment where None): what `subprocess.run(..., capture_output=True, text=True)` gives,
    in a fraction of the start-up (module docstring)."""
    return _run([sys.executable, "-m", "spacewar_ai", *map(str, argv)], None, argv, cwd, env,
                timeout)


def script(path, *argv, cwd=None, env=None, timeout=600) -> subprocess.CompletedProcess:
    """`python path *argv`, as `cli` runs the CLI."""
    path = str(path)
    return _run([sys.executable, path, *map(str, argv)], path, argv, cwd, env, timeout)


def _serve():
    """The server's loop: one request a line on stdin; answers the child's pid, then its exit
    code. Returns (in the child only) the request the child is to run."""
    import torch

    from spacewar_ai import main  # noqa: F401  the CLI, loaded before the first fork
    from spacewar_ai.rating import preload  # noqa: F401  torch, the pilots, the engine's code

    torch.optim.Adam(torch.nn.Linear(1, 1).parameters())  # an optimizer loads torch's compiler
    # What was loaded stays out of the collector's way: a child's collections and its exit would
    # otherwise touch, and so copy, every page of it.
    gc.freeze()
    server = os.getpid()
    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            from spacewar_ai.util.processes import die_with_parent

            die_with_parent(server)
            return request
        print(pid, flush=True)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)
    sys.exit(0)


def _become(request) -> None:
    """In the child: the command's streams, folder, environment and argv."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for fd, path in ((1, request["out"]), (2, request["err"])):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    sys.stdin = open(0, closefd=False)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # the temporary folder found again, from TMPDIR as it is now
    sys.argv = [request["script"] or "spacewar-ai", *request["argv"]]


if __name__ == "__main__":
    request = _serve()
    _become(request)
    if request["script"] is None:
        from spacewar_ai.main import main

        raise SystemExit(main(request["argv"]))
    import runpy

    sys.path[0] = os.path.dirname(os.path.abspath(request["script"]))  # as `python FILE` has it
    runpy.run_path(request["script"], run_name="__main__")
