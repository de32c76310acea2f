"""Checkpoint files: tensors and plain values only, written atomically, read with one clear error.

A checkpoint is a dict saved with torch.save and read with `torch.load(weights_only=True)`:

    format           "spacewar-ai-checkpoint"
    format_version   1
    algorithm        "ppo" or "dqn"
    obs_dim, action_dim
    agent            the agent's state_dict (networks, optimizer, observation statistics, counters)
    metadata_json    JSON text: resolved configs, training counters, league identities, RNG states
    opponent_model   (a run's latest.pt) the opponent model's state, kept in the same file so a
                     resumed run goes on with the model of the same update

Writes go to a temporary file in the same folder, are flushed to disk, then renamed over the
target, so a run killed at any moment leaves the previous checkpoint intact.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pickle
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import torch

FORMAT = "spacewar-ai-checkpoint"
FORMAT_VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint that cannot be used, with the file and the reason in the message."""


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


def save_checkpoint(path, agent, metadata: dict[str, Any],
                    extra: dict[str, Any] | None = None) -> None:
    """Write a checkpoint atomically; `extra` are more entries of the payload (tensors and
    plain data) that must stay consistent with the agent, because one file holds both."""
    payload = {**(extra or {}),
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "algorithm": agent.algorithm,
        "obs_dim": agent.state_dim,
        "action_dim": agent.action_dim,
        "agent": agent.state_dict(),
        "metadata_json": json.dumps(metadata, sort_keys=True),
    }
    atomic_write_bytes(path, lambda f: torch.save(payload, f))


def rewrite_metadata(path, edit) -> None:
    """Replace a checkpoint's metadata by edit(metadata), atomically; the weights stay as saved."""
    payload = load_checkpoint(path)
    payload["metadata_json"] = json.dumps(edit(payload.pop("metadata")), sort_keys=True)
    atomic_write_bytes(path, lambda f: torch.save(payload, f))


def load_checkpoint(path, expect_algorithm: str | None = None,
                    expect_obs_dim: int | None = None) -> dict[str, Any]:
    """Read and check a checkpoint; returns the payload with `metadata` parsed."""
    p = Path(path)
    if not p.is_file():
        raise CheckpointError(f"checkpoint {p}: no such file")
    try:
        payload = torch.load(p, map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, pickle.UnpicklingError, zipfile.BadZipFile, OSError,
            ValueError, KeyError) as exc:
        raise CheckpointError(f"checkpoint {p}: not a readable checkpoint (a truncated or corrupt "
                              f"file, or not a checkpoint: {type(exc).__name__}); use another "
                              "checkpoint of the run") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {p}: not a Spacewar! AI checkpoint (no "
                              f"'{FORMAT}' header)")
    version = payload.get("format_version")
    if not isinstance(version, int):
        raise CheckpointError(f"checkpoint {p}: not a Spacewar! AI checkpoint (no format "
                              "version); use a checkpoint written by spacewar-ai")
    if version > FORMAT_VERSION:
        raise CheckpointError(f"checkpoint {p}: format version {version} is newer than this "
                              f"spacewar-ai reads ({FORMAT_VERSION}); upgrade spacewar-ai")
    algo = payload.get("algorithm")
    if expect_algorithm is not None and algo != expect_algorithm:
        raise CheckpointError(f"checkpoint {p}: holds a {str(algo).upper()} model, not "
                              f"{expect_algorithm.upper()}; load it as {algo} (for example "
                              f"--algorithm {algo}, or the spec {algo}:{p})")
    obs_dim = payload.get("obs_dim")
    if expect_obs_dim is not None and obs_dim != expect_obs_dim:
        raise CheckpointError(f"checkpoint {p}: trained on {obs_dim}-float observations but this "
                              f"game gives {expect_obs_dim}; use the GameConfig it was trained "
                              f"with (hyperspace adds one)")
    for key, kind in (("agent", dict), ("obs_dim", int), ("action_dim", int),
                      ("metadata_json", str)):
        value = payload.get(key)
        if not isinstance(value, kind) or (kind is int and value < 1):
            raise CheckpointError(f"checkpoint {p}: damaged ({key} is missing or not a "
                                  f"{'positive int' if kind is int else kind.__name__}); use "
                                  "another checkpoint of the run")
    try:
        payload["metadata"] = json.loads(payload["metadata_json"])
    except json.JSONDecodeError:
        raise CheckpointError(f"checkpoint {p}: its metadata is not valid JSON") from None
    if not isinstance(payload["metadata"], dict):
        raise CheckpointError(f"checkpoint {p}: its metadata is not a JSON object; use another "
                              "checkpoint of the run")
    return payload


def saved_run_config(path):
    """The settings a checkpoint's run was made with (the resolved config saved in it): the base
    of a resumed run. A bad file raises CheckpointError (a ValueError) naming it."""
    from .config import RunConfig

    saved = load_checkpoint(path)["metadata"].get("config") or {}
    try:
        return RunConfig.from_dict(saved)
    except ValueError as exc:
        raise CheckpointError(f"checkpoint {path}: its saved settings cannot be read ({exc}); "
                              "it was written by another version of spacewar-ai") from None


def load_agent(path, device: str = "cpu", expect_algorithm: str | None = None,
               expect_obs_dim: int | None = None):
    """Build the agent a checkpoint holds (algorithm read from the file) and load it."""
    from .agents import make_agent
    from .config import DQNConfig, PPOConfig

    ckpt = load_checkpoint(path, expect_algorithm, expect_obs_dim)
    algo = ckpt["algorithm"]
    cfg_cls = {"ppo": PPOConfig, "dqn": DQNConfig}.get(algo)
    if cfg_cls is None:
        raise CheckpointError(f"checkpoint {path}: unknown algorithm {algo!r}")
    try:
        from .agents import saved_architecture

        saved = dict(ckpt["agent"]["config"])
        saved.update(saved_architecture(algo, saved))
        config = cfg_cls.from_dict(saved)
        agent = make_agent(algo, ckpt["obs_dim"], ckpt["action_dim"], config, device)
        agent.load_state_dict(ckpt["agent"])
    except (KeyError, IndexError, AttributeError, RuntimeError, ValueError, TypeError) as exc:
        raise CheckpointError(f"checkpoint {path}: its {algo} model does not load "
                              f"({error_summary(exc)})") from None
    check_finite(ckpt["agent"], path)
    return agent, ckpt


def error_summary(exc: Exception, limit: int = 160) -> str:
    """An exception in one short line: torch's load errors put the detail on later lines."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def check_finite(state, path) -> None:
    """Refuse weights holding NaN or infinity: such a model would play, silently, at random."""
    def tensors(x):
        if isinstance(x, torch.Tensor):
            yield x
        elif isinstance(x, dict):
            for v in x.values():
                yield from tensors(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                yield from tensors(v)

    for t in tensors({k: v for k, v in state.items() if k != "optimizer"}):
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise CheckpointError(f"checkpoint {path}: its weights hold NaN or infinite values "
                                  "(a diverged run); use an earlier checkpoint of the run")


def export_for_play(src, dst, ensemble_with=()) -> int:
    """Write a play-only copy of a checkpoint (weights, observation statistics, config and
    metadata; no optimizer state or target network), atomically. Returns its size in bytes.
    ensemble_with: DQN checkpoints whose greedy players join src's ensemble in the copy."""
    if Path(dst).is_dir():
        raise CheckpointError(f"--export {dst}: is a folder; give a file name such as "
                              f"{Path(dst) / 'model.pt'}")
    agent, ckpt = load_agent(src)  # the model must load before a copy of it is written
    if not ensemble_with:
        agent_state = ckpt["agent"]
    else:
        if agent.algorithm != "dqn":
            raise CheckpointError(f"checkpoint {src}: holds a {agent.algorithm.upper()} model; "
                                  "only DQN models join an ensemble")
        for path in ensemble_with:
            other, _ = load_agent(path)
            try:
                agent.join_ensemble(other, f"checkpoint {path}")
            except ValueError as exc:
                raise CheckpointError(str(exc)) from None
        agent_state = agent.state_dict()
    agent_state = {k: v for k, v in agent_state.items() if k not in ("optimizer", "q_target")}
    meta = ckpt["metadata"]
    meta = {"exported_from": str(src), "run_name": meta.get("run_name"),
            "counters": meta.get("counters", {}), "config": meta.get("config", {})}
    if ensemble_with:
        meta["ensemble_with"] = [str(p) for p in ensemble_with]
    payload = {k: ckpt[k] for k in ("format", "format_version", "algorithm", "obs_dim",
                                    "action_dim")}
    payload["agent"] = agent_state
    payload["metadata_json"] = json.dumps(meta, sort_keys=True)
    atomic_write_bytes(dst, lambda f: torch.save(payload, f))
    return Path(dst).stat().st_size
