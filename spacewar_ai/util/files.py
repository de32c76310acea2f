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
    a run's folder and its league/. Called when the run starts or resumes, when nothing else
    writes there; returns what it removed."""
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
