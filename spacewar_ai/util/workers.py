"""Where work runs, decided once (`Where.from_flags`, at the command's door): in this process
("inline"), in processes of this machine ("local"), or on Ray ("ray"). Three shapes of work,
and the callers hold no branch of their own on where it runs:

- jobs, each a pure function of its arguments: `map_jobs(fn, jobs, where)` gives fn(job) for
  every job in the jobs' order (a local process pool forked from a server that preloads what
  the jobs import, or Ray tasks whose files travel with them, `Travel`), so the results do not
  depend on where they ran; `where.parts` splits a count into one job's share each;
- one job begun for a server to await (`submit`: a thread here, or a Ray task);
- workers, each an object of one class with methods to ask, built in this process, in a child
  process of this machine (`python -m spacewar_ai.util.workers`, spoken to in util.processes'
  framing), or as a Ray actor:

    workers = Workers(Where("local"), RolloutWorker)
    w = workers.start(cfg, 0, ...)          # a worker, built from these arguments
    asked = workers.ask_all([w], "play", update, weights)  # one request, sent once to each
    rollout = workers.answer(w, asked[0])   # WorkerLost if its process or its answer was lost
    workers.stop(w)

`ship(path)` sends a file with the work (Ray's object store; elsewhere the path itself), which
a worker makes local with util.cluster.local_copy. A local child reads its class's module and
arguments first (a pickle in a frame), then one (method, arguments) request a frame, answering
each with ("ok", value) or ("error", the exception's last line); it ends when its stdin
closes, dies with its parent, and ignores Ctrl-C (the caller stops at a safe point and closes
it). A command of its own, not multiprocessing's spawn, so that a user's script without a
`__main__` guard is not run again in the child."""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import signal
import subprocess
import sys
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from .errors import UserError
from .processes import read_frame, write_frame

BACKENDS = {"local": "in child processes of this machine",
            "inline": "in this process, one after another", "ray": "as Ray actors"}


@dataclass(frozen=True)
class Where:
    """Where work runs: `backend` "inline" (this process), "local" (`processes` processes of
    this machine; a worker is a child each) or "ray" (the cluster at `address`; None: this
    machine's Ray). Made once, at the door (`from_flags`), and passed down as it is."""

    backend: str = "inline"
    processes: int = 1
    address: str | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise UserError(f"backend {self.backend!r}: choose one of {', '.join(BACKENDS)}")

    @classmethod
    def from_flags(cls, backend: str | None, ray_address: str | None,
                   workers: int | None = None, processes: int = 1) -> "Where":
        """The door: --backend, --ray-address and --workers as one value, their conflicts
        refused in one line. Ray when either of the first two asks for it, else `workers` (or
        `processes` when --workers is not given) processes of this machine."""
        if ray_address and backend == "local":
            raise UserError("--ray-address joins a Ray cluster and --backend local plays here: "
                            "drop one")
        if ray_address or backend == "ray":
            if workers is not None:
                raise UserError("--workers counts processes on this machine; on Ray the "
                                "cluster's CPUs play: drop --workers")
            return cls("ray", address=ray_address or None)
        return cls("local", workers or processes)

    @property
    def words(self) -> str:
        """Where the work runs, in words."""
        return BACKENDS[self.backend]

    @property
    def spread(self) -> bool:
        """Whether jobs leave this process (a pool of processes, or Ray)."""
        return self.backend == "ray" or (self.backend == "local" and self.processes > 1)

    def only_here(self, what: str) -> None:
        """Refuse, in one line, work that must run in this process (`what` says which and
        why) when the flags sent work to Ray."""
        if self.backend == "ray":
            raise UserError(f"{what}: drop --backend ray and --ray-address")

    def parts(self, count: int, size: int) -> list[tuple[int, int]]:
        """`count` units of work as (first, n) parts, one job each: one part where the jobs do
        not leave this process, else parts of `size` units (the last may be smaller)."""
        if not self.spread:
            return [(0, count)]
        return [(first, min(size, count - first)) for first in range(0, count, size)]

    def start(self) -> None:
        """Start or join Ray now where the work runs there, so that a cluster that does not
        answer is refused before any work; nothing elsewhere."""
        if self.backend == "ray":
            from .cluster import connect

            connect(self.address)


class Travel:
    """What a job needs besides its arguments, for Ray's nodes: `prepare(job)` the job as it
    travels (paths made absolute), `paths(job)` the files it reads, `localize(job, local)` the
    job with each path p replaced by local(p). A subclass knows a job's layout."""

    def prepare(self, job: tuple) -> tuple:
        return job

    def paths(self, job: tuple) -> Iterable[Path]:
        return ()

    def localize(self, job: tuple, local: Callable[[Path], Path]) -> tuple:
        return job


def map_jobs(fn, jobs: list, where: Where, progress=None, sizes: list[int] | int = 1,
             travel: Travel | None = None, preload: tuple[str, ...] = ()) -> list:
    """fn(job) for every job, results in the jobs' order, wherever `where` says (module
    docstring); `progress` is told each job's size (games) as it ends; `preload`: the modules
    a local pool's fork server imports once. A Ray node that cannot import this package is one
    UserError saying what to install where."""
    sizes = sizes if isinstance(sizes, list) else [sizes] * len(jobs)
    if where.backend == "ray":
        return _ray_results(_ray_tasks(fn, jobs, where, travel), progress, sizes)
    out = []
    if where.spread and len(jobs) > 1:
        from concurrent.futures import ProcessPoolExecutor

        from .processes import worker_context

        # Forked from a fork server that never ran torch, not from this process: a child forked
        # from a process that has run torch inherits its OpenMP state and can spin forever.
        with ProcessPoolExecutor(max_workers=where.processes, mp_context=worker_context(
                list(preload)), initializer=_one_thread) as pool:
            for k, done in enumerate(pool.map(fn, jobs)):
                out.append(done)
                if progress is not None:
                    progress.update(sizes[k])
        return out
    for k, job in enumerate(jobs):
        out.append(fn(job))
        if progress is not None:
            progress.update(sizes[k])
    return out


def submit(fn, job, where: Where, travel: Travel | None = None) -> Future:
    """fn(job) begun now, off the caller's thread: a Ray task where `where` says Ray, else a
    thread of this process (a job that must be confined starts a process of its own); the
    Future of its result, for a server to await."""
    if where.backend == "ray":
        return _ray_tasks(fn, [job], where, travel)[0].future()
    return _SUBMITTED.submit(fn, job)


# Threads that live as long as this process, since the fork server the first confined job
# starts dies with the thread that started it (util.processes).
_SUBMITTED = ThreadPoolExecutor(thread_name_prefix="submitted")


def _one_thread() -> None:
    """A job process's start: it dies with its parent and runs torch on one thread, so that
    jobs side by side do not oversubscribe the cores."""
    from .processes import die_with_parent
    from .threads import use_torch_threads

    die_with_parent()
    use_torch_threads(1)


def _ray_tasks(fn, jobs: list, where: Where, travel: Travel | None) -> list:
    """fn(job) for each job as a Ray task, each file the jobs read sent once (util.cluster.ship),
    a node that lacks it (or holds other contents at its path) playing from a copy."""
    from .cluster import connect, ship

    ray, travel = connect(where.address), travel or Travel()
    jobs = [travel.prepare(job) for job in jobs]
    files = {}
    for job in jobs:
        for path in travel.paths(job):
            if str(path) not in files and path.is_file():
                files[str(path)] = ship(path)
    remote = ray.remote(num_cpus=1)(_in_task)
    return [remote.remote(fn, job, travel, files) for job in jobs]


def _ray_results(refs: list, progress, sizes: list[int]) -> list:
    """The tasks' results as they end, put back in the jobs' order."""
    from .cluster import INSTALL, ray_module

    ray = ray_module()
    pending = {ref: k for k, ref in enumerate(refs)}
    out = [None] * len(refs)
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            k = pending.pop(ref)
            try:
                out[k] = ray.get(ref)
            except ray.exceptions.RayError as exc:
                if "No module named" in str(exc) and "spacewar_ai" in str(exc):
                    raise UserError(f"a Ray node cannot import spacewar_ai; {INSTALL}") \
                        from None
                raise
            if progress is not None:
                progress.update(sizes[k])
    return out


def _in_task(fn, job, travel: Travel, files: dict):
    """A Ray task's body: the job's files made local, then fn(job) on one torch thread."""
    from .threads import use_torch_threads

    use_torch_threads(1)
    if files:
        job = travel.localize(job, lambda path: received(files[str(path)])
                              if str(path) in files else path)
    return fn(job)


class WorkerLost(Exception):
    """A worker's process ended before it answered, or Ray lost what it answered."""


def pickled(value: Any) -> bytes:
    """`value` pickled by the standard pickler (tensors travel as bytes), for one frame."""
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def read_pickled(stream) -> Any:
    """What the next frame holds; EOFError when the other end is gone."""
    return pickle.loads(read_frame(stream))


class Workers:
    """Workers of class `cls` (module docstring) where `where` says: objects of this process
    ("inline"), a child process each ("local"), or Ray actors; `what` names one in messages."""

    def __init__(self, where: Where, cls: type, what: str = "worker"):
        self.backend, self.cls, self.what = where.backend, cls, what
        if self.backend == "ray":
            from .cluster import connect, fold_worker_deaths

            self.ray = connect(where.address)
            fold_worker_deaths()  # a lost worker is said in one line, by the caller
            self._remote = self.ray.remote(num_cpus=1)(cls)

    @property
    def own_process(self) -> bool:
        """Whether each worker has a process of its own (local children, Ray actors)."""
        return self.backend != "inline"

    @property
    def host(self) -> str:
        """Where the workers' processes run, in words."""
        return "the cluster" if self.backend == "ray" else "this machine"

    def where(self) -> str:
        if self.backend == "ray":
            return (f"{BACKENDS['ray']} ({self.ray.cluster_resources().get('CPU', 0):g} CPUs in "
                    "the Ray cluster)")
        return BACKENDS[self.backend]

    def start(self, *args, **kwargs):
        """A new worker, `cls(*args, **kwargs)` where it runs."""
        if self.backend == "ray":
            return self._remote.remote(*args, **kwargs)
        if self.backend == "local":
            return _Child(self.cls, args, kwargs, self.what)
        return self.cls(*args, **kwargs)

    def ask_all(self, workers: list, method: str, *args) -> list:
        """Ask each of `workers` for `method(*args)`, the arguments sent once for all (pickled
        once, or put in Ray's object store once); what `answer` takes back. Inline workers
        answer at once, one after another."""
        if self.backend == "inline":
            return [getattr(w, method)(*args) for w in workers]
        if self.backend == "local":
            request = pickled((method, args))
            for w in workers:
                w.send(request)
            return [None] * len(workers)
        shared = [self.ray.put(a) for a in args]
        return [getattr(w, method).remote(*shared) for w in workers]

    def ask(self, worker, method: str, *args):
        return self.ask_all([worker], method, *args)[0]

    def answer(self, worker, asked):
        """The answer `asked` (from ask_all) of `worker`; WorkerLost when its process ended
        first or Ray lost the answer."""
        if self.backend == "inline":
            return asked
        if self.backend == "local":
            return worker.answer()
        try:
            return self.ray.get(asked)
        except self.ray.exceptions.RayActorError as exc:
            if "No module named" in str(exc) and "spacewar_ai" in str(exc):
                from .cluster import INSTALL

                raise UserError(f"a Ray node cannot import spacewar_ai; {INSTALL}") from None
            raise WorkerLost from exc
        except self.ray.exceptions.ObjectLostError as exc:
            # Ray could not get the answer back (a node too busy to answer, say).
            raise WorkerLost("Ray lost its answer") from exc

    def stop(self, worker) -> None:
        if self.backend == "ray":
            self.ray.kill(worker)
        elif self.backend == "local":
            worker.close()

    def ship(self, path: str | Path) -> tuple[str, str, Any]:
        """A file to travel with the work: on Ray (util.cluster.ship) its full path, the SHA-256
        of its contents and its reference in the object store, so a node holding the same file
        there reads it in place; elsewhere (its path, "", None), read where it is."""
        if self.backend == "ray":
            from .cluster import ship

            return ship(Path(path).resolve())
        return str(path), "", None


def received(shipped: tuple[str, str, Any]) -> Path:
    """A file `Workers.ship` sent, on this machine: its path where it was not sent through Ray,
    else a copy from Ray's object store (util.cluster.local_copy)."""
    path, sha256, ref = shipped
    if ref is None:
        return Path(path)
    from .cluster import local_copy

    return local_copy(Path(path), sha256, ref)


def this_process() -> str:
    """Where the calling worker runs, in words: its host and its Ray node's id (its first 8
    digits) on Ray, else its process id."""
    import socket

    ray = sys.modules.get("ray")
    node = ray.get_runtime_context().get_node_id()[:8] if ray is not None \
        and ray.is_initialized() else ""
    return f"{socket.gethostname()} " + (f"(Ray node {node})" if node else
                                         f"(process {os.getpid()})")


class _Child:
    """A worker in a child process of this machine (module docstring), asked through its stdin
    and answering on its stdout."""

    def __init__(self, cls: type, args: tuple, kwargs: dict, what: str = "worker"):
        from .processes import child_command, package_env

        self.what = what
        self.process = subprocess.Popen(
            child_command([sys.executable, "-m", "spacewar_ai.util.workers", str(os.getpid())]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=package_env())
        self.send(pickled((cls.__module__, cls.__qualname__, args, kwargs)))

    def send(self, request: bytes) -> None:
        with contextlib.suppress(OSError):  # its process is gone: answer() says so
            write_frame(self.process.stdin, request)

    def answer(self) -> Any:
        try:
            kind, value = read_pickled(self.process.stdout)
        except (EOFError, OSError, pickle.UnpicklingError):
            raise WorkerLost from None
        if kind == "error":
            raise RuntimeError(f"a {self.what} failed: {value}")
        return value

    def close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):  # a pipe its process already broke
                stream.close()  # the child's loop ends at the closed pipe
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a child that does not end is killed
            self.process.kill()
            self.process.wait()


def _last_line() -> str:
    """The exception being handled, as its traceback's last line ("ValueError: ...")."""
    return traceback.format_exc().strip().splitlines()[-1]


def main(parent: int) -> None:
    """A local worker's process: its object built from the first frame, then each request
    answered (module docstring). Anything else that prints goes to stderr: stdout carries the
    frames only."""
    from .processes import die_with_parent, protocol_streams

    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests, answers = protocol_streams()
    worker, failed = None, ""
    try:
        module, name, args, kwargs = read_pickled(requests)
        worker = getattr(importlib.import_module(module), name)(*args, **kwargs)
    except EOFError:
        return
    except Exception:  # noqa: BLE001 - each request is answered with it
        failed = _last_line()
    while True:
        try:
            method, args = read_pickled(requests)
        except EOFError:
            return
        try:
            answer = ("error", failed) if worker is None else \
                ("ok", getattr(worker, method)(*args))
        except Exception:  # noqa: BLE001 - the caller raises it, in one line
            answer = ("error", _last_line())
        try:
            write_frame(answers, pickled(answer))
        except BrokenPipeError:
            return


if __name__ == "__main__":
    main(int(sys.argv[1]))
