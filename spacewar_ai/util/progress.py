"""Progress bars for long jobs (training, evaluation, tournaments), drawn by tqdm.

On a terminal the bar redraws in place (FALLBACK_COLUMNS wide on one that reports no size). On
a pipe or in a log file it writes its state as a line every LOG_EVERY seconds and the final
state when the job ends (a redrawn bar would fill a log with carriage returns), and no final
line when it fails. With `quiet`, nothing. Bars go to stderr, so a report on stdout stays clean
for other programs to read.
"""

from __future__ import annotations

import os
import sys
import time

from tqdm import tqdm

FALLBACK_COLUMNS = 100
FALLBACK_LINES = 24
# A log learns how far a job has come this often (seconds): an hour's run or match would
# otherwise say nothing until it ends.
LOG_EVERY = 300.0


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, after the job has said where it stopped and what was saved: the command adds
    no line of its own."""


def _size(stream) -> tuple[int, int]:
    """(columns, lines) of the terminal `stream` writes to; 0 where it reports none."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return 0, 0
    return size.columns, size.lines


class _LogLines:
    """A file-like sink that keeps the bar's latest state and prints it as a line every
    LOG_EVERY seconds and at close."""

    def __init__(self, stream):
        self.stream = stream
        self.line = self.shown = ""
        self.said = time.monotonic()

    def write(self, text: str) -> None:
        parts = [p for p in text.replace("\n", "\r").split("\r") if p.strip()]
        if parts:
            self.line = parts[-1].rstrip()
            if time.monotonic() - self.said >= LOG_EVERY:
                self.emit()

    def flush(self) -> None:
        return None

    def emit(self) -> None:
        if self.line and self.line != self.shown:
            print(self.line, file=self.stream, flush=True)
            self.shown = self.line
        self.said = time.monotonic()


class Progress:
    """A tqdm bar of `total` units; `update(n)`, `note(**values)` for the figures beside it,
    `say(text)` for a line above it, `close()` at the end (also as a context manager)."""

    def __init__(self, total: float, desc: str, unit: str = "it", quiet: bool = False,
                 stream=None, bar_format: str | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        live = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._sink = None if live else _LogLines(self.stream)
        # A terminal that reports no size (a serial console, some containers' ptys) would get
        # a bar 0 columns wide, and tqdm hides every bar below a screen 0 lines high: that is
        # nothing at all, so it gets a fixed width and height instead.
        columns, lines = _size(self.stream) if live else (0, 0)
        sized = columns > 0 and lines > 0
        self.bar = tqdm(total=total, desc=desc, unit=unit, disable=quiet, dynamic_ncols=sized,
                        ncols=None if sized or not live else FALLBACK_COLUMNS,
                        nrows=None if sized or not live else FALLBACK_LINES,
                        file=self.stream if live else self._sink, mininterval=0.5 if live else 0,
                        bar_format=bar_format, smoothing=0.1)

    def update(self, n: float = 1) -> None:
        self.bar.update(n)

    def set(self, value: float) -> None:
        """Move the bar to `value` units done (for budgets measured by a fraction)."""
        self.bar.update(value - self.bar.n)

    def note(self, **values) -> None:
        self.bar.set_postfix(values, refresh=False)

    def say(self, text: str) -> None:
        if not self.quiet:
            self.bar.write(text, file=self.stream)

    def close(self, failed: bool = False) -> None:
        """A job that failed leaves no bar on a pipe: its error is the one line to read."""
        if failed and self.bar.leave:
            self.bar.leave = False  # on a terminal, the bar is wiped
        self.bar.close()
        if self._sink is not None and not self.quiet and not failed:
            self._sink.emit()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.close(failed=kind is not None and not issubclass(kind, KeyboardInterrupt))


class DecisionCounter:
    """Counts a language model's decisions onto a tqdm bar's postfix, redrawn at most once a
    second: a weak student's games run to the time limit, and a bar that counts games alone
    would seem to stand still. Call it with the number of decisions just made."""

    def __init__(self, bar):
        self.bar, self.count, self._shown = bar, 0, 0.0

    def __call__(self, n: int) -> None:
        self.count += n
        due = time.monotonic() - self._shown >= 1.0
        if due:
            self._shown = time.monotonic()
        # Kept between redraws too, so that the bar's last line has the final count.
        self.bar.set_postfix_str(f"{self.count:,} decisions", refresh=due)
