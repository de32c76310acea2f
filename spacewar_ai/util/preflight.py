"""Checks made before any work starts, so that a run that cannot finish says so at once.

- `fits_in_memory(what, nbytes, fix)`: a count sized against the memory free on this machine;
- `writable(path, what, folder=...)`: an output path checked by a scratch file where it will go;
- `read_bounded(path, what, limit)`: only regular files of a sane size are read whole.

Every refusal is a ValueError naming the flag or file and the fix (one line, exit code 2)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from .errors import UserError

# Bytes one game in play needs: the engine's state (about 1.4 KB), both observations, the
# pilots' per-game buffers and its result record, rounded up.
GAME_BYTES = 4096
OBSERVATION_FLOATS = 40  # floats of one observation of the default game (36), rounded up


def available_memory() -> int | None:
    """Bytes of memory free for a new allocation (MemAvailable), or None where unknown."""
    with contextlib.suppress(OSError, ValueError, IndexError):  # not Linux: ask sysconf
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


# The most a pilot's or a checkpoint's file may hold: far more than any network here, and
# checked before such a file is hashed or loaded, so a huge one is one line, not a MemoryError.
MAX_MODEL_BYTES = 2 * 1024**3


def check_model_size(path, what: str) -> None:
    """ValueError in one line when the file at `path` holds more than MAX_MODEL_BYTES."""
    size = Path(path).stat().st_size
    if size > MAX_MODEL_BYTES:
        raise UserError(f"{what} {path}: {_size(size)}, more than the {_size(MAX_MODEL_BYTES)} "
                        "a model's file can be; give the right file")


def fits_in_memory(what: str, nbytes: float, fix: str) -> None:
    """Refuse `what` when it needs more memory than is free; `fix` says what to lower."""
    free = available_memory()
    if free is not None and nbytes > free:
        raise UserError(f"{what} needs about {_size(nbytes)} of memory and this machine has "
                        f"{_size(free)} free; {fix}")


def check_games(flag: str, games: int) -> None:
    """Games played at once (an evaluation, a pairing of a tournament, a demo)."""
    fits_in_memory(f"{flag} {games:,}", games * GAME_BYTES, f"lower {flag}")


def check_training(cfg) -> None:
    """The arrays a training run allocates for its settings: the games it plays at once with
    PPO's rollout or DQN's replay buffer, and the evaluation games."""
    t = cfg.train
    obs = OBSERVATION_FLOATS * 4
    if t.algorithm == "dqn":
        b = cfg.dqn.buffer_size
        need, what, fix = b * (2 * obs + 32), f"[dqn] buffer_size {b:,}", "lower it"
    else:
        n = cfg.ppo.n_steps
        need = t.num_envs * n * (obs + 32)
        what = f"--num-envs {t.num_envs:,} with [ppo] n_steps {n:,}"
        fix = "lower --num-envs or [ppo] n_steps"
    fits_in_memory(what, need + t.num_envs * GAME_BYTES, fix)
    check_games("--eval-episodes", t.eval_episodes)


def writable(path, what: str, folder: bool = False, chosen_for_the_user: bool = False) -> None:
    """Refuse an output path that cannot be written: under a file, a file where a folder is
    wanted (or the other way round), or a place where no file can be created. Creates nothing
    that stays. `chosen_for_the_user`: the path is not one a user typed but the library's own
    place (Minari's datasets folder), whose missing folders are made wherever it is."""
    p = Path(path)
    if p.exists():
        if folder and not p.is_dir():
            raise UserError(f"{what} {p}: is a file; give a folder")
        if not folder and p.is_dir():
            raise UserError(f"{what} {p}: is a folder; give a file name inside it")
    place = p if folder and p.is_dir() else p.parent
    while not place.exists() and place != place.parent:
        place = place.parent
    if not place.is_dir():
        raise UserError(f"{what} {p}: {place} is a file, so nothing can be written under it; "
                        "give another path")
    # Folders are made for an output only inside the folder the command runs in (the project):
    # a mistyped path elsewhere is refused rather than made, at the filesystem's root say.
    if not p.parent.exists() and not chosen_for_the_user and \
            not p.parent.resolve().is_relative_to(Path.cwd().resolve()):
        raise UserError(f"{what} {p}: the folder {p.parent} does not exist; make it first "
                        "(only folders inside this project's folder are made for you)")
    try:
        tempfile.TemporaryFile(dir=place).close()  # made and removed: only the trial stays
    except OSError as exc:
        raise UserError(f"{what} {p}: cannot be written ({exc.strerror or exc}); give a path "
                        "in a folder you can write to") from None


def read_bounded(path, what: str, limit: int = 64 * 1024 * 1024) -> bytes:
    """A file's bytes, if it is a regular file of at most `limit` bytes (links are followed to
    what they name). OSError is turned into a ValueError naming the file."""
    p = Path(path)
    try:
        # Opened without blocking: opening a FIFO for reading would wait for a writer.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise UserError(f"{what} {p}: cannot be read ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{what} {p}: not a regular file (a device, pipe or socket, or a "
                            "link to one); give a file")
        if st.st_size > limit:
            raise UserError(f"{what} {p}: {_size(st.st_size)}, more than the {_size(limit)} "
                            "such a file can be; give the right file")
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise UserError(f"{what} {p}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise UserError(f"{what} {p}: more than {_size(limit)}; give the right file")
    return data
