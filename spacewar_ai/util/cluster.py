"""Ray, started or joined once per process: the same commands on this machine or spread over a
cluster (docs/scaling.md). Without an address a command starts a local Ray instance; with
`--ray-address` (or RAY_ADDRESS) it joins a cluster. A file a task needs travels with it
(`ship`, `local_copy`), so checkpoints need not be on every machine. Ray lives in the `cluster`
extra, on every node; util.workers is the one module that runs work on it."""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import sys
import tempfile
from pathlib import Path

from . import reaper
from .errors import UserError
from .files import atomic_write_bytes

INSTALL = 'install it on this machine and every node of the cluster: pip install -e ".[cluster]"'


def ray_module():
    try:
        import ray
    except ImportError:
        raise UserError(f"Ray is not installed: {INSTALL}") from None
    return ray


TOKEN_FILE = Path.home() / ".ray" / "auth_token"
WORKER_NICENESS = "RAY_worker_niceness"  # Ray's setting, read by the processes it starts
# Ray marks a node dead once it misses a few health checks of ten seconds each, which a node
# that is only slow on a loaded host does; an instance of this machine waits them out (Ray's
# settings, read from the environment by the processes it starts).
PATIENT_HEALTH_CHECKS = {"RAY_health_check_timeout_ms": "30000",
                         "RAY_health_check_failure_threshold": "20"}


def connect(address: str | None = None, num_cpus: int | None = None):
    """Start or join Ray once per process; returns the ray module. A bad address is one
    ValueError that names it."""
    ray = ray_module()
    if ray.is_initialized():
        return ray
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address and address != "auto":
        _answers(address)
    if address and "RAY_AUTH_MODE" not in os.environ and (
            os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")
            or TOKEN_FILE.is_file()):
        # What `ray start` does: a token on this machine means the cluster asks for it (Ray
        # turns token authentication on wherever it finds one), while ray.init does not send
        # it unless told to.
        os.environ["RAY_AUTH_MODE"] = "token"
    try:
        if address:
            with _quiet_stderr():  # Ray's core logs every failed attempt; one line says it below
                ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        else:
            # Ray starts its workers at niceness 15, so on a machine busy with anything else
            # they get almost no CPU; the instance started for this command runs them as the
            # command itself runs. Read from the environment by the processes ray.init starts.
            os.environ.setdefault(WORKER_NICENESS, "0")
            for name, value in PATIENT_HEALTH_CHECKS.items():
                os.environ.setdefault(name, value)
            _start_local(ray, num_cpus)
            # Ray's agents outlive a killed driver by a minute; the reaper ends them with it.
            reaper.watch(os.getpid())
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = " ".join(str(exc).split())[:160]
        raise UserError(f"--ray-address {address}: the cluster there answers but refused this "
                        f"machine ({first}); with Ray's token authentication, set "
                        "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN to the head's token (`ray "
                        "get-auth-token` on the head prints it)") from None
    return ray


LOCAL_STARTS = 4  # tries at starting a local instance before the command gives up
STARTUP_TIMEOUT = "timed out during startup"  # Ray's words when its node is slow to register


def _start_local(ray, num_cpus: int | None) -> None:
    """`ray.init()` with tries to spare: Ray waits a fixed 30 s for its new node to register,
    which a loaded host can miss while the node is only slow, so a timed-out start is shut down
    and started again. Ray raises a bare Exception for it, known by its words (Ray's range is
    pinned; tests/test_ecosystem.py checks the words are still Ray's)."""
    for attempt in range(1, LOCAL_STARTS + 1):
        try:
            ray.init(num_cpus=num_cpus, log_to_driver=False, logging_level="ERROR",
                     include_dashboard=False)
            return
        except Exception as exc:  # noqa: BLE001 - Ray's own type for this is Exception
            if STARTUP_TIMEOUT not in str(exc):
                raise
            ray.shutdown()
            if attempt == LOCAL_STARTS:
                raise UserError(f"Ray's local node did not start in {LOCAL_STARTS} tries: the "
                                "machine is too busy; try again when it is quieter, or start "
                                "one with `ray start --head` and give --ray-address") from None


def fold_worker_deaths() -> None:
    """Drop the raylet's own report of a worker that died ("(raylet) A worker died or was
    killed ..."), which Ray's driver prints beside the one line a caller says of it (the
    rollout workers replace a lost worker and say so). Every other line of Ray's passes.
    `ray._private.worker.print_to_stdstream` is private: Ray's range is pinned (pyproject.toml)
    and tests/test_ecosystem.py checks it is there and called as this wraps it."""
    import ray._private.worker as worker

    original = worker.print_to_stdstream
    if getattr(original, "folded", False):
        return

    def printing(data, ignore_prefix=False):
        if data.get("pid") == "raylet" and any("A worker died" in str(line)
                                               for line in data.get("lines", ())):
            return None
        return original(data, ignore_prefix=ignore_prefix)

    printing.folded = True
    worker.print_to_stdstream = printing


@contextlib.contextmanager
def _quiet_stderr():
    """Standard error at the descriptor level (where Ray's C++ core writes) goes nowhere."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _answers(address: str) -> None:
    """Refuse an address nothing listens on at once: Ray itself would retry for minutes."""
    host, _, port = address.split("://")[-1].rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=10):
            return
    except ValueError:
        reason = "give it as HOST:PORT"
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    raise UserError(f"--ray-address {address}: no Ray cluster answers there ({reason}); start "
                    "one with `ray start --head` and give the address it prints, or leave the "
                    "flag out to run Ray on this machine")


def ship(path: str | Path) -> tuple[str, str, object]:
    """A file put in Ray's object store once, to travel with the tasks that need it: (its path
    as given, the SHA-256 of its contents, the object's reference), what `local_copy` takes."""
    data = Path(path).read_bytes()
    return str(path), hashlib.sha256(data).hexdigest(), ray_module().put(data)


def local_copy(path: Path, sha256: str, ref) -> Path:
    """`path` itself when this node holds those very contents there (one machine, a shared
    disk); otherwise a copy fetched from Ray's object store into a cache named by its contents.
    The copy keeps the file's name and folder name, which is what pilots are labelled by, so the
    results read the same wherever they were played."""
    path = Path(path)
    if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256:
        return path
    cache = Path(tempfile.gettempdir()) / "spacewar_ai-files" / sha256[:16]
    copy = cache / path.parent.name / path.name
    if not copy.is_file():
        data = ray_module().get(ref)
        atomic_write_bytes(copy, lambda f: f.write(data))
    return copy
