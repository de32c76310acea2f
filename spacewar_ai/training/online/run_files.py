"""A PPO or DQN run's checkpoints in checkpoints/<run>/: latest.pt (what a resume continues),
best.pt (evaluation.py decides), ckpt_<update>.pt now and then, and opponent_model.pt, the
copy of the opponent model latest.pt holds, and game.json, the run's [game] where it is not the
default one, which `--config` reads again to play the run's networks in their own game. Every
write is atomic (agents/checkpoints.py, util/files.py).

When: latest.pt after the first update, at every save_interval-th update, before and after
every evaluation (a kill during one loses only the evaluation), and whenever save_seconds have
passed since the last write, so a kill costs at most about that much of the run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...agents.opponent_model import FILE_NAME as OPPONENT_MODEL_FILE
from ...agents.opponent_model import PAYLOAD_KEY as OPPONENT_MODEL_KEY
from ...config import GameConfig, RunConfig
from ...util.files import atomic_write_bytes

GAME_FILE = "game.json"


def saved_game(run_dir: Path) -> GameConfig:
    """The game a run in `run_dir` played: its game.json (RunFiles.write_game), else the
    default."""
    path = Path(run_dir) / GAME_FILE
    return GameConfig.from_dict(json.loads(path.read_text())["game"]) if path.is_file() \
        else GameConfig()


class RunFiles:
    """Writes one run's checkpoints: the agent, with what a resume needs beside it."""

    def __init__(self, run_dir: Path, run_name: str, cfg: RunConfig, agent, league,
                 counters, opponent_model=None):
        self.run_dir, self.run_name, self.cfg = run_dir, run_name, cfg
        self.agent, self.league, self.counters = agent, league, counters
        self.opponent_model = opponent_model
        self.last_write = time.monotonic()
        self.latest_at: int | None = None  # the update latest.pt was last written at

    def write_game(self) -> None:
        """game.json, where the run's game is not the default: a network's observations depend
        on its game, so the commands the run prints to plan with it or fly against it need
        that game again."""
        if self.cfg.game != GameConfig():
            text = json.dumps({"game": self.cfg.game.to_dict()}, indent=2) + "\n"
            atomic_write_bytes(self.run_dir / GAME_FILE, lambda f: f.write(text.encode()))

    def metadata(self) -> dict[str, Any]:
        return {"run_name": self.run_name, "config": self.cfg.to_dict(),
                "counters": self.counters.saved(), "league": self.league.state(),
                "rng": {"torch": torch.get_rng_state().tolist(),
                        "numpy": np_state_json(np.random.get_state())}}

    def save(self, name: str) -> Path:
        path = self.run_dir / name
        model = self.opponent_model
        if name == "latest.pt" and model is not None and model.decisions:
            # Inside latest.pt, so a kill between two writes cannot leave a resumed run with a
            # model from another update; opponent_model.pt is its copy for search: to read.
            self.agent.save(path, self.metadata(), {OPPONENT_MODEL_KEY: model.state()})
            model.save(self.run_dir / OPPONENT_MODEL_FILE)
        else:
            self.agent.save(path, self.metadata())
        self.last_write = time.monotonic()
        if name == "latest.pt":
            self.latest_at = self.counters.updates
        return path

    def save_latest_once(self) -> None:
        """latest.pt, unless this update's is written already (nothing has changed since)."""
        if self.latest_at != self.counters.updates:
            self.save("latest.pt")

    def latest_due(self, evaluating: bool) -> bool:
        """Whether this update writes latest.pt (the module docstring says when)."""
        t, updates = self.cfg.train, self.counters.updates
        return evaluating or updates % t.save_interval == 0 or updates == 1 \
            or time.monotonic() - self.last_write >= t.save_seconds

    def save_periodic(self) -> None:
        """ckpt_<update>.pt at every tenth save_interval."""
        updates = self.counters.updates
        if updates % (self.cfg.train.save_interval * 10) == 0:
            self.save(f"ckpt_{updates:06d}.pt")


def np_state_json(state) -> list:
    name, keys, pos, has_gauss, cached = state
    return [name, keys.tolist(), int(pos), int(has_gauss), float(cached)]
