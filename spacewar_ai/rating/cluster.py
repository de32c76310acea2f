"""Matches and recorded games as Ray tasks (`run_tasks`), each a pure function of its arguments,
so a tournament on Ray gives the same crosstable, byte for byte, as the local backend; the pilot
specs of a job travel with their files. Ray itself (starting, joining, shipping a file) is
util.cluster's."""

from __future__ import annotations

from pathlib import Path

from ..pilots.build import absolute_spec, map_spec_files, spec_files
from ..util.cluster import INSTALL, connect, local_copy, ship
from ..util.errors import UserError


def run_tasks(fn, jobs: list, progress=None, sizes: list[int] | int = 1,
              address: str | None = None, spec_fields: tuple[int, ...] = ()) -> list:
    """fn(job) for every job (a tuple) as Ray tasks, results in the jobs' order (not the order
    they end), `progress` told of a job's size (games) as it ends. The pilot specs at
    `spec_fields` of each job travel with their files: a node that lacks a file (or holds other
    contents at its path) plays from a copy, so checkpoints need not be on every machine. A node
    that cannot import this package is one ValueError saying what to install where."""
    ray = connect(address)
    jobs = [_absolute(job, spec_fields) for job in jobs]
    files = {}  # path -> what util.cluster.ship gives: each file sent once, whatever plays it
    for job in jobs:
        for f in spec_fields:
            for path in spec_files(job[f]):
                if str(path) not in files and path.is_file():
                    files[str(path)] = ship(path)
    remote = ray.remote(num_cpus=1)(_in_worker)
    pending = {remote.remote(fn, job, spec_fields, files): k for k, job in enumerate(jobs)}
    out = [None] * len(jobs)
    sizes = sizes if isinstance(sizes, list) else [sizes] * len(jobs)
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


def _absolute(job: tuple, spec_fields) -> tuple:
    return tuple(absolute_spec(x) if k in spec_fields else x for k, x in enumerate(job))


def _in_worker(fn, job, spec_fields=(), files=None):
    """A task's body: the job's files made local, then fn(job) with one torch thread, so that
    tasks on a node do not oversubscribe it."""
    from ..util.threads import use_torch_threads

    use_torch_threads(1)
    if files:
        def local(path: Path) -> Path:
            return local_copy(path, *files[str(path)][1:]) if str(path) in files else path

        job = tuple(map_spec_files(x, local) if k in spec_fields else x
                    for k, x in enumerate(job))
    return fn(job)
