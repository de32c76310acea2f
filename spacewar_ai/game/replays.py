"""Replays: a finished game as its config, seed and both ships' actions, replayed bit for bit.

A replay file is JSON: `{"version", "config" (GameConfig fields), "seed", "players" [ship 0,
ship 1], "actions" [ship 0 string, ship 1 string] (one hexadecimal digit per engine step: the
sixteen actions of the 1962 switches fit one, and the six actions write decimal digits), "result",
"final_state" (SHA-256 of the engine state at the end)}`. A game depends only on its config, seed
and actions, so replaying reproduces the final state exactly; `replay_game` checks the hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

from ..config import GameConfig
from ..util.errors import UserError
from ..util.files import atomic_write_bytes
from . import engine
from .engine import GameBatch

VERSION = 1
DIGITS = "0123456789abcdef"  # an action's character in a replay's action strings
REPLAY_DIR = Path("runs") / "replays"
SEED_RANGE = 2**62  # seeds the engine takes as 64-bit integers, with room for seed + i


class ReplayError(UserError):
    """A replay file cannot be used; the message names the file and the problem."""


def state_hash(batch: GameBatch, g: int = 0) -> str:
    """SHA-256 over every array of game g's state (positions, torpedoes, counters, random
    stream)."""
    h = hashlib.sha256()
    ship_i = batch.ship_i[g]
    later = ship_i[:, engine.SI_SAVED_FIRST:]
    arrays = [batch.ship_f[g], ship_i[:, :engine.SI_SAVED_FIRST], batch.torp_f[g],
              batch.torp_t[g], batch.game_i[g], batch.rng[g]]
    for a in arrays + ([later] if later.any() else []):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def make_replay(config: GameConfig, seed: int, actions, players, result: dict,
                final_state: str) -> dict:
    acts = np.asarray(actions, dtype=np.int64).reshape(-1, 2)
    return {"version": VERSION, "config": config.to_dict(), "seed": int(seed),
            "players": [str(p) for p in players],
            "actions": ["".join(DIGITS[a] for a in acts[:, 0]),
                        "".join(DIGITS[a] for a in acts[:, 1])],
            "result": result, "final_state": final_state,
            "saved": time.strftime("%Y-%m-%dT%H:%M:%S")}


def save_replay(path, replay: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(replay, indent=1).encode()
    atomic_write_bytes(path, lambda f: f.write(payload))
    return path


def new_replay_path(label: str, directory=REPLAY_DIR) -> Path:
    """A fresh file name under runs/replays/ (time stamp plus label; never overwrites)."""
    directory = Path(directory)
    stem = time.strftime("%Y%m%d-%H%M%S") + "-" + "".join(
        c if c.isalnum() or c in "-_" else "_" for c in label)[:80]
    path = directory / f"{stem}.json"
    k = 1
    while path.exists():
        path = directory / f"{stem}-{k}.json"
        k += 1
    return path


def replay_files(directory) -> list[tuple[int, str, int]]:
    """(modified ns, name, bytes) of the replay files in `directory`, links left out; [] where
    there is no such folder. One directory read and one stat a file."""
    found = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                    with contextlib.suppress(FileNotFoundError):  # removed meanwhile
                        info = entry.stat(follow_symlinks=False)
                        found.append((info.st_mtime_ns, entry.name, info.st_size))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return found


def prune_replays(directory, keep: int, max_bytes: int) -> int:
    """Remove the oldest replays of `directory` until at most `keep` files of at most
    `max_bytes` in all remain (a retention); returns how many went. Another process pruning
    the same folder at once is harmless: a file it removed first is passed over."""
    found = sorted(replay_files(directory))
    total, left, removed = sum(size for *_, size in found), len(found), 0
    for _, name, size in found:
        if left <= keep and total <= max_bytes:
            break
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(directory, name))
            removed += 1
        left, total = left - 1, total - size
    return removed


def load_replay(path) -> dict:
    path = Path(path)
    if not path.exists():
        raise ReplayError(f"replay {path}: no such file (replays are saved under {REPLAY_DIR}/)")
    from ..util.preflight import read_bounded

    try:
        raw = read_bounded(path, "replay", 64 * 1024 * 1024)
    except ValueError as exc:  # a special file, too large or unreadable
        raise ReplayError(str(exc)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReplayError(f"replay {path}: cannot be read as text ({exc})") from None
    return parse_replay(text, str(path))


def parse_replay(text: str, source: str = "the replay") -> dict:
    """A replay from its JSON text, checked; ReplayError names `source` and the problem."""
    from ..util.json_input import loads_strict

    try:
        data = loads_strict(text, "its JSON")
        if not isinstance(data, dict):
            raise UserError("not a JSON object")
        config = GameConfig.from_dict(data["config"])
        a0, a1 = data["actions"]
        if not (isinstance(a0, str) and isinstance(a1, str)) or len(a0) != len(a1) or \
                not set(a0 + a1) <= set(DIGITS):
            raise UserError("the two action strings differ in length or hold what is not a "
                            "hexadecimal digit (0-9, a-f)")
        if data.get("version") != VERSION:
            raise UserError(f"version {data.get('version')!r}, expected {VERSION}")
        if any(int(c, 16) >= config.num_actions for c in set(a0 + a1)):
            raise UserError(f"an action is outside 0..{config.num_actions - 1}")
        longest = -(-config.max_episode_steps // config.frame_skip)
        if len(a0) > longest:
            raise UserError(f"{len(a0)} steps are longer than a game of this config lasts "
                            f"({longest})")
        seed = data["seed"]
        if type(seed) is not int or not -SEED_RANGE <= seed < SEED_RANGE:
            raise UserError(f"seed {seed!r} is not an integer within +-2**62")
        players = data.get("players", [])
        if not (isinstance(players, list) and len(players) in (0, 2)
                and all(isinstance(p, str) for p in players)):
            raise UserError(f"players {players!r} is not a list of two names")
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ReplayError(f"replay {source}: not a valid replay file ({exc})") from None
    data["game_config"] = config
    return data


def replay_game(replay: dict, on_step=None) -> GameBatch:
    """Play the recorded actions from the recorded seed. on_step(batch) is called after the reset
    and after every step (for drawing or recording). Raises ReplayError if the final state
    differs from the one recorded."""
    config = replay["game_config"] if "game_config" in replay else \
        GameConfig.from_dict(replay["config"])
    batch = GameBatch(1, config)
    batch.reset(seeds=np.array([int(replay["seed"])], dtype=np.int64))
    batch.observe()
    if on_step is not None and on_step(batch) is False:
        return batch
    a0, a1 = (np.array([int(c, 16) for c in side], dtype=np.int64) if isinstance(side, str)
              else side for side in replay["actions"])
    actions = np.zeros((1, 2), dtype=np.int64)
    for c0, c1 in zip(a0, a1):
        actions[0, 0], actions[0, 1] = int(c0), int(c1)
        batch.step(actions)
        batch.observe()
        if on_step is not None and on_step(batch) is False:
            return batch
    expected = replay.get("final_state")
    if expected and state_hash(batch) != expected:
        raise ReplayError("the replayed game ended in a different state than the one recorded "
                          "(was it saved by another engine version?)")
    return batch


def game_gif(config, seed: int, actions, size: int = 192, last: int = 100) -> bytes:
    """An animated GIF of a played game's last `last` decisions, one frame per decision at the
    decision pace, replayed from its seed and both ships' actions (GameResult.actions).
    Greyscale: a GIF of grey levels needs no colour quantisation, which would cost more than
    the drawing (TensorBoard's evaluation videos, training/online/trainer.py)."""
    import io

    from PIL import Image

    from .rendering import Renderer

    acts = np.asarray(actions, dtype=np.int64).reshape(-1, 2)
    renderer = Renderer(config, size, "rgb_array")
    first = max(0, len(acts) - last)
    frames: list = []
    step = [0]

    def draw(batch) -> None:
        if step[0] >= first:
            renderer.draw(batch, 0, (), wait=False)
            frames.append(Image.fromarray(renderer.frame_rgb()).convert("L"))
        step[0] += 1

    replay_game({"game_config": config, "seed": seed, "actions": (acts[:, 0], acts[:, 1])}, draw)
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], loop=0,
                   duration=round(1000 * config.frame_skip / config.fps))
    return out.getvalue()


def match_replays(match, config: GameConfig) -> list[dict]:
    """The replays of every game of a MatchResult that kept its actions (play_match
    keep_actions), as data: what a process that plays a match hands back to be saved."""
    out = []
    for g in match.games:
        if g.actions is None:
            continue
        names = [match.name_a, match.name_b] if g.a_side == 0 else [match.name_b, match.name_a]
        side = {"a": g.a_side, "b": 1 - g.a_side}
        result = {"winner": side.get(g.winner), "real_winner": side.get(g.real_winner),
                  "causes": [g.cause_a, g.cause_b] if g.a_side == 0 else [g.cause_b, g.cause_a],
                  "frames": g.frames}
        out.append(make_replay(config, g.seed, g.actions, names, result, g.final_state))
    return out


def save_replays(replays: list[dict], label: str, directory=REPLAY_DIR) -> list[Path]:
    """Save replays as `<time>-<label>-g<k>.json` under `directory`."""
    return [save_replay(new_replay_path(f"{label}-g{k}", directory), r)
            for k, r in enumerate(replays)]


def save_match_replays(match, config: GameConfig, label: str, directory=REPLAY_DIR) -> list[Path]:
    """Save every game of a MatchResult that kept its actions (play_match keep_actions)."""
    return save_replays(match_replays(match, config), label, directory)


def play_replay(path, record=None, scale: float = 1.0, phosphor: bool = False) -> str:
    """The replay mode: play a saved game back in a window at the game's pace, or into a video
    (`record`); returns the line that says how it ended."""
    from .recording import open_recorder
    from .rendering import Renderer

    replay = load_replay(path)
    cfg = replay["game_config"]
    recorder = open_recorder(record, per_decision=True, config=cfg)
    names = " vs ".join(replay.get("players", []))
    renderer = Renderer(cfg, int(round(640 * scale)), "rgb_array" if recorder else "human",
                        f"Spacewar! AI - replay {path}", phosphor=phosphor)
    clock = None if recorder else renderer.pg.time.Clock()

    def show(batch):
        frame = renderer.draw(batch, 0, (f"replay: {names}",), wait=False)
        if recorder is not None:
            recorder.add(frame)
        elif renderer.closed:
            return False  # the window was closed: stop quietly
        else:
            clock.tick(cfg.fps / cfg.frame_skip)
        return True

    try:
        batch = replay_game(replay, show)
    finally:
        renderer.close()
    done = state_hash(batch) == replay.get("final_state")
    line = (f"replayed {len(replay['actions'][0])} steps ({names}); result {replay.get('result')};"
            f" final state {'identical to the recording' if done else 'not reached (stopped early)'}")
    if recorder is not None:
        written = recorder.close()
        if written is not None:
            line += f"\nrecorded {recorder.frames} frames to {written}"
    return line
