"""The pilot specs of a job that travel with it to Ray's nodes (`SpecTravel`, for
util.workers.map_jobs): each spec made absolute, and the files it names shipped, so checkpoints
need not be on every machine and a tournament on Ray gives the same crosstable, byte for byte,
as on this machine."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from ..pilots.build import absolute_spec, map_spec_files, spec_files
from ..util.workers import Travel


class SpecTravel(Travel):
    """The pilot specs at `fields` of a job (module docstring)."""

    def __init__(self, fields: tuple[int, ...]):
        self.fields = fields

    def prepare(self, job: tuple) -> tuple:
        return tuple(absolute_spec(x) if k in self.fields else x for k, x in enumerate(job))

    def paths(self, job: tuple) -> Iterable[Path]:
        return [path for k in self.fields for path in spec_files(job[k])]

    def localize(self, job: tuple, local: Callable[[Path], Path]) -> tuple:
        return tuple(map_spec_files(x, local) if k in self.fields else x
                     for k, x in enumerate(job))
