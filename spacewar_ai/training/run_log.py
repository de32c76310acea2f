"""What a PPO or DQN run writes to TensorBoard (runs/<run>/), in CleanRL's tags: schedules
under charts/, the learning's figures under losses/, games under charts/ and game/, the league
under league/, rollout workers under workers/, and evaluations (evaluation.py) under eval/.

The writer opens at the first figure, so a run refused before its first update leaves no folder
behind; a new run's first figure also writes its settings (a text table and the HParams
dashboard's record).
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..config import RunConfig
from ..game.engine import DeathCause

# How the learner's games end, as logged under charts/death_cause/ (shares of the update's games).
EPISODE_CAUSES = (DeathCause.TORPEDO, DeathCause.STAR, DeathCause.COLLISION, DeathCause.TIMEOUT)
GAME_FIGURES = ("shots", "hits", "fuel_used", "dodged")  # logged per game under game/

SCHEDULES = ("learning_rate", "epsilon")  # logged as charts/<name>
# What the HParams dashboard compares runs by: the last value each run logged.
HPARAM_METRICS = ("eval/win_rate", "eval/best_win_rate", "charts/episodic_return",
                  "charts/win_rate")
# Events the writer may hold before its thread has written them: a few updates' figures. Past
# TensorBoard's default of ten, every figure an update logs waited for one to be written out.
QUEUED_EVENTS = 1000


class LazyWriter:
    """A TensorBoard writer opened at its first use, so a run refused before its first figure
    leaves no folder behind; `on_open(writer)` runs when it opens. Every training run's."""

    def __init__(self, log_dir: Path, on_open: Callable | None = None):
        self.log_dir, self.on_open = log_dir, on_open
        self._writer = None

    @property
    def writer(self):
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(str(self.log_dir), max_queue=QUEUED_EVENTS)
            if self.on_open is not None:
                self.on_open(self._writer)
        return self._writer

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class RunLog(LazyWriter):
    """One PPO or DQN run's TensorBoard writer and the figures of each update."""

    def __init__(self, log_dir: Path, cfg: RunConfig, fresh: bool):
        super().__init__(log_dir, self._settings)
        self.cfg = cfg
        self.fresh = fresh  # a new run: its settings go to TensorBoard with the first figure

    def _settings(self, writer) -> None:
        if self.fresh:
            writer.add_text("hyperparameters", hparams_table(self.cfg))
            write_hparams(writer, self.cfg)

    def update(self, step: int, losses: dict[str, float], sps: float,
               episodes: collections.Counter, recent_wins, league, guide=None) -> None:
        """An update's figures: its losses and schedules, its speed, the games that ended during
        it (`episodes`: their sums), the recent win rate and the league."""
        w = self.writer
        for k, v in losses.items():
            w.add_scalar(f"{'charts' if k in SCHEDULES else 'losses'}/{k}", v, step)
        w.add_scalar("charts/SPS", sps, step)
        ep = episodes
        if ep["count"]:
            # Means over the games that ended during this update.
            w.add_scalar("charts/episodic_return", ep["return"] / ep["count"], step)
            w.add_scalar("charts/episodic_length", ep["length"] / ep["count"], step)
            w.add_scalar("charts/episodes_per_update", ep["count"], step)
            for c in EPISODE_CAUSES:
                name = c.name.lower()
                w.add_scalar(f"charts/death_cause/{name}", ep[name] / ep["count"], step)
            # The learner's GameResult figures, per game (the styles personalities train).
            for key in GAME_FIGURES:
                w.add_scalar(f"game/{key}", ep[key] / ep["count"], step)
            if ep["shots"]:
                w.add_scalar("game/accuracy", ep["hits"] / ep["shots"], step)
        if recent_wins:
            w.add_scalar("charts/win_rate", float(np.mean(recent_wins)), step)
        w.add_scalar("league/pool_size", len(league.snapshot_keys), step)
        if guide is not None:
            w.add_scalar("charts/llm_guided_actions", guide.used, step)
        w.add_scalar("league/curriculum_stage", league.stage, step)
        for key in list(league.results):
            w.add_scalar(f"league/win_rate/{key.replace(':', '_')}", league.win_rate(key), step)

    def opponent_model(self, step: int, fitted: dict[str, float]) -> None:
        self.writer.add_scalar("charts/opponent_model_accuracy", fitted["accuracy"], step)
        self.writer.add_scalar("losses/opponent_model_loss", fitted["loss"], step)
        self.writer.add_scalar("charts/opponent_model_learned", fitted["learned"], step)

    def workers(self, step: int, parts: list[dict[str, Any]], updates: int, gather: float,
                update: float) -> None:
        """Per-worker throughput, the policy lag (updates between the weights a rollout was
        played with and the learner's: 0 for synchronous rollouts, 1 for asynchronous ones after
        the first), and where the time of an update went."""
        w = self.writer
        for part in parts:
            w.add_scalar(f"workers/decisions_per_second/{part['worker']}",
                         part["played"].decisions / part["seconds"], step)
        lag = max(updates - part["version"] for part in parts)
        w.add_scalar("workers/policy_lag", lag, step)
        w.add_scalar("charts/policy_lag", lag, step)
        w.add_scalar("workers/gather_seconds", gather, step)
        w.add_scalar("workers/update_seconds", update, step)

    def close(self) -> None:
        super().close()
        self.fresh = False


def write_hparams(writer, cfg: RunConfig) -> None:
    """The run's settings for TensorBoard's HParams dashboard, with the metrics it compares runs
    by (their values are the scalars the run logs under the same tags)."""
    from torch.utils.tensorboard.summary import hparams

    flat = {}
    for section, values in cfg.to_dict().items():
        for key, value in values.items():
            ok = isinstance(value, (int, float, str, bool))
            flat[f"{section}/{key}"] = value if ok else str(value)
    for summary in hparams(flat, dict.fromkeys(HPARAM_METRICS, 0.0)):
        writer.file_writer.add_summary(summary)


def hparams_table(cfg: RunConfig) -> str:
    rows = ["|section|param|value|", "|-|-|-|"]
    for section, values in cfg.to_dict().items():
        for k, v in values.items():
            rows.append(f"|{section}|{k}|{v}|")
    return "\n".join(rows)
