"""Files: writes a kill cannot tear (atomic_write_bytes) and where the package's shipped files are.

Every file that matters (checkpoints, ratings, replays, datasets' cards, the arena's uploads, LLM
state) is written to a temporary file beside its target, flushed to disk and renamed over it, so
a process killed at any moment leaves either the old file or the new one.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import tempfile
import time
from pathlib import Path

from .errors import UserError

PACKAGE_DIR = Path(__file__).resolve().parents[1]
# What the package ships besides code: the pretrained network and opponent model, the LM
# adapters (lm/) and the generalization panel's pilots (panel/).
SHIPPED_DIR = PACKAGE_DIR / "pretrained"

TEMP_SUFFIX = ".tmp"
# A temporary file of a write untouched this long was left by a writer that was killed: no
# write of a file here takes more than seconds, so a live one is never this old.
STALE_TEMP_SECONDS = 600.0


def atomic_write_bytes(path: str | os.PathLike, write) -> None:
    """Call write(file_object) on a temporary file beside `path`, fsync it, then rename it.
    Temporaries of the same file that a killed writer left behind go with it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a saved file should look like any other
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    old = time.time() - STALE_TEMP_SECONDS
    for left in path.parent.glob(f".{glob.escape(path.name)}.*{TEMP_SUFFIX}"):
        with contextlib.suppress(OSError):  # another process may have removed it first
            if left.stat().st_mtime < old:
                left.unlink()


def remove_stale_temps(folder: str | os.PathLike) -> list[Path]:
    """Remove the temporary files of writes that a kill interrupted (`.<name>.<random>.tmp`) in
    a run's folder and its league/. Called when the run starts or resumes, holding the folder's
    lock (FolderLock), so nothing else writes there; returns what it removed."""
    removed = []
    for sub in (Path(folder), Path(folder) / "league"):
        if sub.is_dir():
            for tmp in sub.glob(f".*{TEMP_SUFFIX}"):
                tmp.unlink(missing_ok=True)
                removed.append(tmp)
    return removed


_ABSOLUTE = re.compile(r"(?<![\w.~])/(?:[^\s/'\"]+/)+([^\s/'\"]+)")


def hide_paths(text: str) -> str:
    """`text` with every absolute path shortened to its last part, for words a visitor reads:
    a file's name helps them, where it lies on the server does not concern them."""
    return _ABSOLUTE.sub(lambda m: m.group(1), str(text))


def printable(text: str, limit: int = 200) -> str:
    """`text` as one line a terminal shows as it is: control characters (escapes, bells, line
    breaks) as `\\xNN` or `\\uNNNN`, cut to `limit` characters with "..." where cut."""
    out = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text)[:4 * limit])
    return out if len(out) <= limit else out[:limit - 3] + "..."


class FolderLock:
    """One live run per folder: an exclusive lock (flock) on `folder/.run.lock` (or, for a
    folder replaced whole at each save, the file `.NAME.run.lock` beside it), taken before a
    run writes anything there and held until `release()` or the process ends. The kernel drops
    it with the process, so a run that crashed or was killed never blocks the next one. A second
    run that would write into a held folder is refused (ValueError, one line naming it and the
    process that holds it)."""

    NAME = ".run.lock"

    def __init__(self, folder: str | os.PathLike, what: str, beside: bool = False):
        import fcntl
        import weakref

        folder = Path(folder)
        lock = folder.with_name(f".{folder.name}{self.NAME}") if beside else folder / self.NAME
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise UserError(f"{what} {folder}: a live run (process {holder}) is writing into it; "
                            "give this run another --run-name, or wait for that one to end")
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd: int | None = fd
        self._closer = weakref.finalize(self, os.close, fd)

    def release(self) -> None:
        if self.fd is not None:
            self._closer()
            self.fd = None


def hold_run_folders(replaced=(), **folders) -> list[FolderLock]:
    """A FolderLock on each folder, named by its keyword (`checkpoints=...`, `logs=...`; those
    named in `replaced` are replaced whole at each save, so locked beside); all or none (the
    ones taken are released if a later one is refused)."""
    held: list[FolderLock] = []
    seen = set()
    try:
        for what, folder in folders.items():
            if Path(folder).resolve() in seen:  # one folder for both (--log-dir the same)
                continue
            seen.add(Path(folder).resolve())
            held.append(FolderLock(folder, f"the run's {what} folder", what in replaced))
    except ValueError:
        for lock in held:
            lock.release()
        raise
    return held
