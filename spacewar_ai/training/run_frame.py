"""What every kind of run sets up the same way, written once: `RunFrame`. The Trainer (PPO, DQN:
online/trainer.py), the offline runs (BC, CQL: offline/learners.py) and `LMRun` (SFT,
DAgger, GRPO: lm/run.py) are each one and keep only their own parts.

A frame holds the run's name (`[train] run_name`, else `ALGORITHM-sSEED-TIME`:
`TrainConfig.named`), its checkpoint folder where it has one and its log folder
(`runs/<name>/`), torch's threads as `[train] torch_threads` says, its TensorBoard writer
(opened at the first figure, so a run refused before it leaves no folder), its clock against
`[train] max_minutes`, and its folders' locks (`hold`, taken where the run starts writing: a
second live run on the same folders is refused in one line; `close` releases them).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from ..config import RunConfig
from ..util.files import hold_run_folders
from ..util.threads import use_torch_threads
from .run_log import LazyWriter


class RunFrame:
    """One run's name, folders, threads, writer, clock and locks (module docstring)."""

    def __init__(self, cfg: RunConfig, name: str, run_dir: Path | None = None,
                 log: Callable[[Path], LazyWriter] = LazyWriter, quiet: bool = False):
        self.cfg, self.name, self.quiet = cfg, name, quiet
        self.run_dir = run_dir
        self.log_dir = Path(cfg.train.log_dir) / name
        self.log = log(self.log_dir)  # the writer of the log folder (run_log.RunLog, ...)
        self.folders: list = []
        self.began = time.time()
        use_torch_threads(cfg.train.torch_threads)

    @property
    def writer(self):
        """TensorBoard's writer, opened at the first figure."""
        return self.log.writer

    def start_clock(self) -> None:
        """Time the run from here (after its models are loaded)."""
        self.began = time.time()

    @property
    def seconds(self) -> float:
        return time.time() - self.began

    def out_of_time(self) -> bool:
        """Whether `[train] max_minutes` (0: no limit) has run out."""
        minutes = self.cfg.train.max_minutes
        return bool(minutes) and self.seconds >= 60 * minutes

    def hold(self, replaced: tuple = (), **folders) -> None:
        """Lock the run's folders (util.files.hold_run_folders) before it writes there."""
        if not self.folders:
            self.folders = hold_run_folders(replaced, **folders)

    def release(self) -> None:
        """Let another run write into this run's folders."""
        for lock in self.folders:
            lock.release()
        self.folders = []

    def close(self) -> None:
        self.log.close()
        self.release()
