"""What every language-model run sets up the same way, written once: SFT (sft.py), DAgger and
expert iteration (dagger.py) and GRPO (grpo.py) each open an `LMRun` and keep only their own
loop.

An `LMRun` holds the run's name (`[train] run_name`, else `ALGORITHM-sSEED-TIME`, as every
training run is named: `TrainConfig.named`), its adapter folder (`models/adapters/<name>/`, which
`lm:<name>` plays), its TensorBoard writer (`runs/<name>/`, opened at the first figure), one
progress bar (util.progress: redrawn on a terminal, one final line in a log), its clock
against `[train] max_minutes`, and `save`, which writes the adapter atomically with the run's
record (the algorithm and the seconds so far added to what the loop gives).
"""

from __future__ import annotations

import time
from pathlib import Path

from ..config import RunConfig
from ..lm.models import ADAPTERS_DIR, save_adapter
from ..util.files import hold_run_folders
from ..util.progress import DecisionCounter, Progress
from .run_log import LazyWriter


class LMRun:
    """One language-model run's name, folders, writer, bar, clock and saves (module docstring).
    Use it as a context manager: the bar and the writer close however the run ends."""

    def __init__(self, algorithm: str, cfg: RunConfig, quiet: bool = False):
        self.algorithm = algorithm
        self.name = cfg.train.named(algorithm)
        self.adapter_dir = ADAPTERS_DIR / self.name
        self.log_dir = Path(cfg.train.log_dir) / self.name
        self.folders: list = []  # held inside `with`, where the run writes
        self.max_minutes = cfg.train.max_minutes
        self.quiet = quiet
        self.began = time.time()
        self.progress: Progress | None = None
        self._log = LazyWriter(self.log_dir)

    @property
    def writer(self):
        return self._log.writer

    def start_clock(self) -> None:
        """Time the run from here (after its models are loaded)."""
        self.began = time.time()

    def bar(self, total: int, unit: str) -> Progress:
        """The run's one progress bar, started now; `counter` counts decisions on it."""
        self.progress = Progress(total, self.algorithm, unit, self.quiet)
        self.counter = DecisionCounter(self.progress.bar)
        return self.progress

    def log(self, values: dict, step: int, prefix: str | None = None) -> None:
        """Each figure as a TensorBoard scalar `PREFIX/KEY` (prefix: the algorithm), flushed."""
        for key, value in values.items():
            self.writer.add_scalar(f"{prefix or self.algorithm}/{key}", value, step)
        self.writer.flush()

    @property
    def seconds(self) -> float:
        return time.time() - self.began

    def out_of_time(self) -> bool:
        """Whether `[train] max_minutes` (0: no limit) has run out."""
        return bool(self.max_minutes) and self.seconds >= 60 * self.max_minutes

    def save(self, model, base_spec: str, base_model, record: dict) -> None:
        """The adapter so far, with the run's record: its algorithm, `record`, its seconds."""
        save_adapter(model, self.adapter_dir, base_spec, base_model,
                     {"algorithm": self.algorithm, **record,
                      "seconds": round(self.seconds, 1)})

    def close(self, failed: bool = False) -> None:
        if self.progress is not None:
            self.progress.close(failed)
        self._log.close()
        for lock in self.folders:
            lock.release()
        self.folders = []

    def __enter__(self) -> LMRun:
        # The adapter's folder is replaced whole at each save: its lock lies beside it.
        self.folders = hold_run_folders(("adapter",), adapter=self.adapter_dir,
                                        logs=self.log_dir)
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.close(failed=kind is not None and not issubclass(kind, KeyboardInterrupt))
