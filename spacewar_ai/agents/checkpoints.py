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

import json
import os
import warnings
from pathlib import Path
from typing import Any

import torch

from ..config import without_jumps
from ..util.errors import UserError
from ..util.files import atomic_write_bytes
from ..util.preflight import check_model_size

FORMAT = "spacewar-ai-checkpoint"
FORMAT_VERSION = 1


class CheckpointError(UserError):
    """A checkpoint that cannot be used, with the file and the reason in the message."""


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
    if p.is_dir():
        found = sorted(p.glob("*/latest.pt")) if not (p / "latest.pt").is_file() else \
            [p / "latest.pt"]
        hint = f" such as {found[0]}" if found else " (a run's checkpoints/<run>/latest.pt)"
        raise CheckpointError(f"checkpoint {p}: is a folder; give a checkpoint file{hint}")
    if not p.is_file():
        raise CheckpointError(f"checkpoint {p}: no such file")
    try:
        check_model_size(p, "checkpoint")
    except ValueError as exc:
        raise CheckpointError(str(exc)) from None
    try:
        with warnings.catch_warnings():
            # torch warns of what it meets in a damaged file in lines that name its own install;
            # the refusal below says what the user needs.
            warnings.simplefilter("ignore")
            payload = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # a damaged file can make torch's unpickler raise anything
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
    if expect_obs_dim is not None and obs_dim not in (expect_obs_dim,
                                                      without_jumps(expect_obs_dim)):
        raise CheckpointError(f"checkpoint {p}: trained on {obs_dim}-float observations but this "
                              f"game gives {expect_obs_dim}; use the GameConfig it was trained "
                              f"with (hyperspace adds three)")
    for key, kind in (("agent", dict), ("obs_dim", int), ("action_dim", int),
                      ("metadata_json", str)):
        value = payload.get(key)
        if not isinstance(value, kind) or (kind is int and value < 1):
            raise CheckpointError(f"checkpoint {p}: damaged ({key} is missing or not a "
                                  f"{'positive int' if kind is int else kind.__name__}); use "
                                  "another checkpoint of the run")
    try:
        payload["metadata"] = json.loads(payload["metadata_json"])
    except (ValueError, RecursionError):
        raise CheckpointError(f"checkpoint {p}: its metadata is not valid JSON") from None
    if not isinstance(payload["metadata"], dict):
        raise CheckpointError(f"checkpoint {p}: its metadata is not a JSON object; use another "
                              "checkpoint of the run")
    return payload


def saved_run_config(path):
    """The settings a checkpoint's run was made with (the resolved config saved in it): the base
    of a resumed run. A bad file raises CheckpointError (a ValueError) naming it."""
    from ..config import RunConfig

    saved = load_checkpoint(path)["metadata"].get("config") or {}
    try:
        return RunConfig.from_dict(saved)
    except ValueError as exc:
        raise CheckpointError(f"checkpoint {path}: its saved settings cannot be read ({exc}); "
                              "it was written by another version of spacewar-ai") from None


def best_name(algorithm: str, game) -> str:
    """The file of the best of all runs of `algorithm` in `game` (a GameConfig): the design's
    `<algorithm>_best.pt` for the default game, and for another the same name followed by the
    game's rules and controls (and hyperspace where it is on), since a network plays only the
    game whose observations and actions it learned."""
    key = (game.rules, game.controls, game.hyperspace)
    if key == ("1962", "six", False):
        return f"{algorithm}_best.pt"
    return f"{algorithm}_best_{game.rules}_{game.controls}{'_hyperspace' * game.hyperspace}.pt"


def game_of(payload: dict[str, Any]) -> tuple:
    """What a loaded checkpoint's network can play: its observation and action widths and the
    rules it learned under ("1962" where its settings name none)."""
    game = (payload["metadata"].get("config") or {}).get("game") or {}
    return payload["obs_dim"], payload["action_dim"], game.get("rules", "1962")


def publish_best(best: Path, algorithm: str, name: str | None = None) -> Path:
    """The original design's paths for a run's best model: `<checkpoint_dir>/<algorithm>_best.pt`
    (or `name`, best_name's for another game), a copy of `best` (a run's best.pt;
    training/evaluation.py publishes one only when it beats the model already there), and for
    the default game `<algorithm>_best_model.pt`, a link to that copy, the design's other name
    for it. Both appear at once: the copy is written atomically, and the link is made under a
    temporary name and renamed over the old one."""
    best = Path(best)
    folder = best.parent.parent
    copy = folder / (name or f"{algorithm}_best.pt")
    data = best.read_bytes()
    atomic_write_bytes(copy, lambda f: f.write(data))
    if copy.name != f"{algorithm}_best.pt":
        return copy
    link = folder / f"{algorithm}_best_model.pt"
    if not link.is_symlink() or os.readlink(link) != copy.name:
        temporary = folder / f".{link.name}.{os.getpid()}.link"
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(copy.name)
        os.replace(temporary, link)
    return copy


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
