"""Training: the Trainer runs one PPO or DQN run (new, resumed, or continued against champions).

The learner flies ship 0 in `num_envs` games at once (one engine batch); the league (league.py)
chooses who flies ship 1 in each game. `Trainer._run_ppo` is the loop to read first, top to
bottom (each rollout is `rollouts.play_steps`): act, let the league act, show the opponent model
the judged opponent's moves, step both ships, bootstrap truncated games, store, record finished
games, update, then snapshot, evaluate and save (`_after_update`). With [train]
rollout_workers, `_run_ppo_on_workers` gathers the rollouts from rollout workers instead
(rollouts.py) and learns from them the same way. TensorBoard logs go to runs/<run>/, checkpoints to
checkpoints/<run>/ (latest.pt, best.pt, ckpt_<update>.pt, league/ snapshots, opponent_model.pt).
A run stops at `total_timesteps`, `episodes` or `max_minutes`, whichever comes first.
"""

from __future__ import annotations

import collections
import dataclasses
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..agents.base import saved_architecture
from ..agents.checkpoints import CheckpointError, check_finite, error_summary, load_checkpoint
from ..agents.opponent_model import FILE_NAME as OPPONENT_MODEL_FILE
from ..agents.opponent_model import PAYLOAD_KEY as OPPONENT_MODEL_KEY
from ..agents.opponent_model import OpponentModel
from ..agents.saved import make_agent
from ..config import RunConfig
from ..game.environment import SpacewarVectorEnv
from ..pilots.spec import check_spec
from ..pilots.specs import make_pilot
from ..util.files import remove_stale_temps
from ..util.progress import Progress
from ..util.threads import use_torch_threads
from .evaluation import Evaluator
from .league import League
from .rollouts import (
    EPISODE_CAUSES,
    GAME_FIGURES,
    RolloutWorkers,
    finished_games,
    learner_rewards,
    play_steps,
)
from .warm_start import behaviour_clone, demonstration_start

DQN_ITERATION_STEPS = 64  # DQN vector steps per "update" for logging, evaluation and saving
PROGRESS_UNITS = 1000  # the progress bar counts thousandths of the run's budget
SCHEDULES = ("learning_rate", "epsilon", "priority_beta")  # logged as charts/<name>
# What the HParams dashboard compares runs by: the last value each run logged.
HPARAM_METRICS = ("eval/win_rate", "eval/best_win_rate", "charts/episodic_return",
                  "charts/win_rate")


class StopAtSafePoint:
    """Ctrl-C during training takes effect at the next game step (`check()`), not wherever the
    signal lands: a KeyboardInterrupt raised inside TensorBoard's writer once left its writing
    thread waiting for ever and the run hung on exit. A request made after the last check ends
    the block as interrupted all the same; a second Ctrl-C stops at once. Installed only on the
    main thread (signal handlers live there; Ray's workers run trainers elsewhere)."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def __enter__(self) -> StopAtSafePoint:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def check(self) -> None:
        if self.requested:
            raise KeyboardInterrupt

    def __exit__(self, kind, value, traceback) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        if self.requested and kind is None:  # asked for after the last check: still a stop
            raise KeyboardInterrupt


def _write_hparams(writer, cfg: RunConfig) -> None:
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


def _setting(name: str, build, *args, **kwargs):
    """build(*args), with a refusal naming the setting it came from."""
    try:
        return build(*args, **kwargs)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _hparams_table(cfg: RunConfig) -> str:
    rows = ["|section|param|value|", "|-|-|-|"]
    for section, values in cfg.to_dict().items():
        for k, v in values.items():
            rows.append(f"|{section}|{k}|{v}|")
    return "\n".join(rows)


class Trainer:
    """One training run (new or resumed). `run()` trains and returns a summary."""

    def __init__(self, cfg: RunConfig, resume: str | Path | None = None,
                 init_weights: str | Path | None = None, champions: list[str] | None = None,
                 render: bool = False, quiet: bool = False, guide=None,
                 rollout_backend: str = "ray", ray_address: str | None = None):
        self.cfg = cfg
        t = cfg.train
        if t.rollout_workers and (render or guide is not None):
            raise ValueError(f"{'--render' if render else '--use-llm'} shows or guides the "
                             "learner's own games; with --rollout-workers the workers play them: "
                             "drop one of the two")
        use_torch_threads(t.torch_threads)
        self.device = "cuda" if t.device == "auto" and torch.cuda.is_available() else (
            "cpu" if t.device == "auto" else t.device)
        # Every pilot the run will meet is built (and a bad spec refused) before the first step;
        # fork_rng: a network built here must not move the generator the learner samples from.
        with torch.random.fork_rng(devices=[]):
            self.eval_opponent = _setting("[train] eval_opponent", make_pilot, t.eval_opponent,
                                          cfg.game)
            if t.warm_start:
                _setting("--warm-start ([train] warm_start)", check_spec, t.warm_start)
        # best_eval: best.pt's win rate in evaluations, pooled over best_eval_games games.
        self.counters = {"global_step": 0, "episodes": 0, "updates": 0, "best_eval": -1.0,
                         "best_eval_games": 0, "wall_seconds": 0.0}
        resume_ckpt = self._read_resume(resume) if resume is not None else None
        if resume_ckpt is None:
            # A run against champions says so: runs/ otherwise lists it like a fresh start.
            kind = "champion-" if champions else ""
            self.run_name = t.named(kind + t.algorithm)
        self.run_dir = Path(t.checkpoint_dir) / self.run_name
        self.log_dir = Path(t.log_dir) / self.run_name
        remove_stale_temps(self.run_dir)
        _seed_everything(t.seed + self.counters["updates"])
        init_ckpt = None
        if init_weights is not None and resume_ckpt is None:
            init_ckpt = load_checkpoint(init_weights, expect_algorithm=t.algorithm,
                                        expect_obs_dim=cfg.game.obs_dim)
        warm = bool(t.warm_start) and resume_ckpt is None and init_weights is None
        self._shape_configs(resume_ckpt if resume_ckpt is not None else init_ckpt, warm)
        # The learner's own games; rollout workers hold theirs instead (rollouts.py).
        self.env = None if t.rollout_workers else SpacewarVectorEnv(
            t.num_envs, cfg.game, cfg.reward, opponent=None,
            count_dodges=True)  # for game/dodged in TensorBoard
        algo_cfg = cfg.ppo if t.algorithm == "ppo" else cfg.dqn
        self.agent = make_agent(t.algorithm, cfg.game.obs_dim, cfg.game.num_actions, algo_cfg,
                                self.device, num_envs=t.num_envs, seed=t.seed, game=cfg.game)
        self.league = _setting("[league] curriculum", League, cfg.league, cfg.game, t.num_envs,
                               t.seed, snapshot_dir=self.run_dir / "league")
        self.workers: RolloutWorkers | None = None
        if t.rollout_workers:
            # Before any work (a warm start can take minutes): a cluster that cannot be
            # reached is refused first.
            watch = t.eval_opponent if t.opponent_model and \
                t.eval_opponent in self.league.scripted else None
            self.workers = RolloutWorkers(cfg, rollout_backend, ray_address,
                                          self.counters["updates"], self._say, watch)
        if resume_ckpt is not None:
            self._restore(resume_ckpt, resume)
        elif init_ckpt is not None:
            state = dict(init_ckpt["agent"])
            state.pop("optimizer", None)  # a fresh optimizer for a new run
            self._load_weights(state, init_weights)
        if warm:
            clone = behaviour_clone if t.algorithm == "ppo" else demonstration_start
            stats = clone(self.agent, t.warm_start, cfg.game, t.warm_start_decisions,
                          t.warm_start_epochs, t.seed, quiet=quiet)
            self.counters["warm_start_accuracy"] = stats["accuracy"]
        for path in champions or []:
            self.league.add_fixed(path, self.device)
        self.league.set_learner(self.agent)
        self.league.assign()
        self._resumed_model = (resume_ckpt or {}).get(OPPONENT_MODEL_KEY)
        self.opponent_model = self._opponent_model(resume_ckpt is not None)
        self.render = render
        self.guide = guide
        self.quiet = quiet
        self._interrupt = StopAtSafePoint()
        self.progress: Progress | None = None
        self.evaluator = Evaluator(cfg, self.run_dir, self.eval_opponent, self.device,
                                   self.counters)
        self.recent = collections.deque(maxlen=100)  # learner outcomes: 1 win, 0.5 draw, 0 loss
        self.recent_wins = collections.deque(maxlen=100)
        self._writer = None
        self._fresh = self.counters["updates"] == 0  # a new run: its settings go to TensorBoard
        self._until = cfg.train.total_timesteps
        self._episode_sums: collections.Counter = collections.Counter()
        self.resumed_from = Path(resume) if resume is not None else None

    # --- building the run ---------------------------------------------------------------------
    def _read_resume(self, resume) -> dict[str, Any]:
        t = self.cfg.train
        ckpt = load_checkpoint(resume, expect_algorithm=t.algorithm,
                               expect_obs_dim=self.cfg.game.obs_dim)
        meta = ckpt["metadata"]
        # A resumed run keeps its name unless the config names another (pbt.py's members
        # continue a better member's weights under their own).
        self.run_name = t.run_name or meta.get("run_name") or Path(resume).resolve().parent.name
        self.counters.update(meta.get("counters", {}))
        if self.counters["best_eval"] >= 0 and not self.counters["best_eval_games"]:
            # Written before the figure was pooled: it stood for one evaluation's games.
            self.counters["best_eval_games"] = t.eval_episodes
        return ckpt

    def _shape_configs(self, source, warm: bool) -> None:
        """The network's shape comes from the weights being continued, whatever the config says;
        a warm-started DQN explores at its final epsilon from the start."""
        cfg, t = self.cfg, self.cfg.train
        if source is not None:
            shape = saved_architecture(t.algorithm, source["agent"].get("config", {}))
            if t.algorithm == "ppo":
                cfg.ppo = dataclasses.replace(cfg.ppo, **shape)
            else:
                cfg.dqn = dataclasses.replace(cfg.dqn, **shape)
        if warm and t.algorithm == "dqn":
            # A warm-started Q-network already flies; epsilon 1.0 would only bury its
            # demonstrations in random games (DQfD explores at a small constant epsilon too).
            cfg.dqn = dataclasses.replace(cfg.dqn, start_epsilon=cfg.dqn.end_epsilon)

    def _load_weights(self, state: dict[str, Any], path) -> None:
        check_finite(state, path)
        try:
            self.agent.load_state_dict(state)
        except (KeyError, RuntimeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {path}: its weights do not fit the network its "
                                  f"saved settings describe ({error_summary(exc)}); it was "
                                  "written by another version or edited") from None

    def _restore(self, ckpt: dict[str, Any], path) -> None:
        """Weights, optimizer, league and random streams of a resumed run."""
        self._load_weights(ckpt["agent"], path)
        meta = ckpt["metadata"]
        self.league.load_state(meta.get("league", {}), self.device)
        rng = meta.get("rng", {})
        if "torch" in rng:
            torch.set_rng_state(torch.tensor(rng["torch"], dtype=torch.uint8))
        if "numpy" in rng:
            np.random.set_state(tuple(rng["numpy"]))

    def _opponent_model(self, resumed: bool) -> OpponentModel | None:
        """The model of the judged opponent (opponent_model.py), when it is a league pilot."""
        cfg, t = self.cfg, self.cfg.train
        if not (t.opponent_model and t.eval_opponent in self.league.scripted):
            return None
        steps = cfg.ppo.n_steps if t.algorithm == "ppo" else DQN_ITERATION_STEPS
        model = OpponentModel(t.eval_opponent, cfg.game, steps * t.num_envs,
                              t.opponent_model_batch, t.opponent_model_lr, self.device,
                              t.opponent_model_share)
        if resumed and self._resumed_model is not None:
            model.restore(self._resumed_model)
            model.save(self.run_dir / OPPONENT_MODEL_FILE)  # its copy, as of latest.pt again
        elif resumed and (self.run_dir / OPPONENT_MODEL_FILE).is_file():
            model.load(self.run_dir / OPPONENT_MODEL_FILE)  # a run saved before latest.pt held it
        return model

    # --- helpers ------------------------------------------------------------------------------
    def _say(self, line: str) -> None:
        """A line for the user, above the progress bar once there is one."""
        if self.progress is not None:
            self.progress.say(line)
        elif not self.quiet:
            print(line, flush=True)

    @property
    def writer(self):
        """TensorBoard's writer, opened at the first figure: a run refused before its first
        update leaves no folder behind."""
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(str(self.log_dir))
            if self._fresh:
                self._writer.add_text("hyperparameters", _hparams_table(self.cfg))
                _write_hparams(self._writer, self.cfg)
        return self._writer

    def _reset_games(self):
        seed = self.cfg.train.seed * 1_000_003 + self.counters["updates"] * 7919
        obs, _ = self.env.reset_both(seed=seed)
        self.league.reset_pilots(np.ones(self.env.num_envs, bool), self.env.batch.rng.copy())
        return obs

    def _finished(self, info: dict, done: np.ndarray) -> None:
        rows, score, won = finished_games(info, done, self._episode_sums)
        self.league.record(rows, score)
        self.recent.extend(score.tolist())
        self.recent_wins.extend(won.tolist())
        self.counters["episodes"] += len(rows)
        self.league.assign(done)
        self.league.reset_pilots(done, self.env.batch.rng.copy())

    def _take(self, part: dict[str, Any]) -> None:
        """A rollout worker's finished games and watched moves, as if played here."""
        self.league.record_games(part["keys"], part["scores"])
        self.recent.extend(part["scores"].tolist())
        self.recent_wins.extend(part["wins"].tolist())
        self._episode_sums.update(part["sums"])
        self.counters["episodes"] += len(part["keys"])
        self.counters["global_step"] += part["decisions"]
        watched = part["watched"]
        if watched is not None and self.opponent_model is not None:
            for obs, actions, rows in zip(watched["obs"], watched["actions"], watched["rows"]):
                self.opponent_model.observe(obs, actions, np.flatnonzero(rows))

    def _log_iteration(self, losses: dict[str, float], sps: float) -> None:
        w, step = self.writer, self.counters["global_step"]
        for k, v in losses.items():
            # CleanRL's tags: schedules under charts/, the learning's figures under losses/.
            w.add_scalar(f"{'charts' if k in SCHEDULES else 'losses'}/{k}", v, step)
        w.add_scalar("charts/SPS", sps, step)
        ep = self._episode_sums
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
        self._episode_sums = collections.Counter()
        if self.recent_wins:
            w.add_scalar("charts/win_rate", float(np.mean(self.recent_wins)), step)
        w.add_scalar("league/pool_size", len(self.league.snapshot_keys), step)
        if self.guide is not None:
            w.add_scalar("charts/llm_guided_actions", self.guide.used, step)
        w.add_scalar("league/curriculum_stage", self.league.stage, step)
        for key in list(self.league.results):
            name = key.replace(":", "_")
            w.add_scalar(f"league/win_rate/{name}", self.league.win_rate(key), step)

    def _metadata(self) -> dict[str, Any]:
        return {"run_name": self.run_name, "config": self.cfg.to_dict(),
                "counters": dict(self.counters), "league": self.league.state(),
                "rng": {"torch": torch.get_rng_state().tolist(),
                        "numpy": _np_state_json(np.random.get_state())}}

    def save(self, name: str) -> Path:
        path = self.run_dir / name
        model = self.opponent_model
        if name == "latest.pt" and model is not None and model.decisions:
            # Inside latest.pt, so a kill between two writes cannot leave a resumed run with a
            # model from another update; opponent_model.pt is its copy for search: to read.
            self.agent.save(path, self._metadata(), {OPPONENT_MODEL_KEY: model.state()})
            model.save(self.run_dir / OPPONENT_MODEL_FILE)
        else:
            self.agent.save(path, self._metadata())
        self._last_save = time.monotonic()
        if name == "latest.pt":
            self._latest_at = self.counters["updates"]
        return path

    def _save_latest_once(self) -> None:
        """latest.pt, unless this update's is written already (nothing has changed since)."""
        if self._latest_at != self.counters["updates"]:
            self.save("latest.pt")

    def _fit_opponent_model(self) -> None:
        """Learn from the update's decisions of the modelled opponent (timed with the update:
        charts/SPS counts its cost)."""
        fitted = self.opponent_model.fit() if self.opponent_model is not None else {}
        if fitted:
            step = self.counters["global_step"]
            self.writer.add_scalar("charts/opponent_model_accuracy", fitted["accuracy"], step)
            self.writer.add_scalar("losses/opponent_model_loss", fitted["loss"], step)

    def _watch_opponent(self, obs: np.ndarray, actions: np.ndarray) -> None:
        """Show the opponent model ship 1's moves in the games the modelled opponent flies."""
        if self.opponent_model is not None:
            rows = np.flatnonzero(self.league.assignment == self.opponent_model.spec)
            self.opponent_model.observe(obs[:, 1], actions[:, 1], rows)

    def evaluate_now(self) -> float:
        """Evaluate the learner now and let it challenge best.pt (evaluation.py); the win rate."""
        return self.evaluator.evaluate(self.agent, self.writer, lambda: self.save("best.pt"))

    def _schedule_progress(self) -> float:
        """How far the run is through its budget, 0 to 1: epsilon's decay and learning-rate
        annealing follow it. With a budget of games (`episodes`), whichever budget is nearer its
        end; `--episodes` alone leaves a step budget no run reaches, and measured by steps alone
        DQN would explore at epsilon 1.0 to the end."""
        t, c = self.cfg.train, self.counters
        progress = c["global_step"] / t.total_timesteps if t.total_timesteps else 1.0
        if t.episodes:
            progress = max(progress, c["episodes"] / t.episodes)
        return min(1.0, progress)

    def _done(self) -> bool:
        t = self.cfg.train
        if self.counters["global_step"] >= min(t.total_timesteps, self._until):
            return True
        if t.max_minutes and self.counters["wall_seconds"] >= 60 * t.max_minutes:
            return True
        return bool(t.episodes) and self.counters["episodes"] >= t.episodes

    def _after_update(self, losses: dict[str, float], sps: float) -> None:
        t, c = self.cfg.train, self.counters
        c["updates"] += 1
        c["wall_seconds"] = self._wall_base + time.time() - self._t_start
        self.league.set_learner(self.agent)
        if c["updates"] % self.cfg.league.snapshot_interval == 0:
            self.league.add_snapshot(self.agent, f"u{c['updates']:06d}")
        self._log_iteration(losses, sps)
        evaluating = c["updates"] % t.eval_interval == 0
        # Saved before an evaluation too (a kill there loses only the evaluation), and again
        # after it, so that latest.pt holds what the evaluation decided.
        if evaluating or c["updates"] % t.save_interval == 0 or c["updates"] == 1 \
                or time.monotonic() - self._last_save >= t.save_seconds:
            self.save("latest.pt")
        if evaluating:
            rate = self.evaluate_now()
            self.progress.say(f"update {c['updates']:,}, {c['global_step']:,} steps: "
                              f"{rate:.0%} against {t.eval_opponent}")
            self.save("latest.pt")
        if c["updates"] % (t.save_interval * 10) == 0:
            self.save(f"ckpt_{c['updates']:06d}.pt")
        win = np.mean(self.recent_wins) if self.recent_wins else 0.0
        self.progress.note(steps=f"{c['global_step']:,}", sps=f"{sps:,.0f}", win=f"{win:.0%}",
                           stage=self.league.stage_spec)
        self.progress.set(round(PROGRESS_UNITS * self._budget_used()))

    def _budget_used(self) -> float:
        """How far the run is through whichever budget ends it first, 0 to 1."""
        t, c = self.cfg.train, self.counters
        used = c["global_step"] / t.total_timesteps if t.total_timesteps else 1.0
        if t.episodes:
            used = max(used, c["episodes"] / t.episodes)
        if t.max_minutes:
            used = max(used, c["wall_seconds"] / (60 * t.max_minutes))
        return min(1.0, used)

    def _shape(self, obs, next_obs, info, term, reward, gamma) -> np.ndarray:
        return learner_rewards(self.cfg.train.shaping, self.agent.view_constants, obs, next_obs,
                               info, term, reward, gamma)

    def _draw(self) -> None:
        if not self.render:
            return
        if not hasattr(self, "_renderer"):
            from ..game.rendering import Renderer

            self._renderer = Renderer(self.cfg.game, 512, "human", "Spacewar! AI: training")
            self._last_draw = 0.0
        # Draw at most at the game's fps and never wait: the other games must not slow down.
        now = time.time()
        if now - self._last_draw >= 1.0 / self.cfg.game.fps:
            self._last_draw = now
            self._renderer.draw(self.env.batch, 0, wait=False)

    # --- the loops ----------------------------------------------------------------------------
    def run(self, until_step: int | None = None) -> dict[str, Any]:
        """Train until the budget ends, or (until_step) pause at that many steps, the schedules
        still following the whole budget: population-based training runs a member in rounds."""
        t, c = self.cfg.train, self.counters
        self._until = until_step if until_step is not None else t.total_timesteps
        if until_step is None and self.resumed_from is not None and self._done():
            if self.workers is not None:
                self.workers.close()
            print(self._finished_line(), flush=True)
            return self._summary()
        budget = [self._steps_budget() if t.total_timesteps < 10**12 else "",
                  f"{t.episodes:,} games" if t.episodes else "",
                  f"{t.max_minutes:g} minutes" if t.max_minutes else ""]
        self.progress = Progress(PROGRESS_UNITS, self.run_name, quiet=self.quiet,
                                 bar_format="{desc} {percentage:3.0f}%|{bar}| "
                                            "{elapsed}<{remaining}{postfix}")
        self.evaluator.say = self.progress.say
        self.progress.say(f"training {self.run_name} ({t.algorithm}), until "
                          f"{' or '.join(b for b in budget if b)}; watch it with: tensorboard "
                          f"--logdir {self.log_dir}")
        if self.resumed_from is not None and until_step is None:
            self.progress.say(f"resuming {self.run_name} from {self.resumed_from}: update "
                              f"{c['updates']:,}, {c['global_step']:,} steps, "
                              f"{c['episodes']:,} games, {c['wall_seconds'] / 60:.1f} minutes in")
        if self.workers is not None:
            self.progress.say(f"the learner updates on {self.device}; {t.rollout_workers} rollout "
                              f"workers play the games {self.workers.where()}")
        # Wall-clock time of the whole run (evaluations and saves included), across resumes.
        self._wall_base = self.counters["wall_seconds"]
        self._t_start = time.time()
        self._last_save = time.monotonic()
        self._latest_at: int | None = None  # the update latest.pt was last written at
        with self._interrupt:  # the closing below included: it is where a stray signal hung
            try:
                if t.algorithm == "ppo":
                    self._run_ppo()
                else:
                    self._run_dqn()
                if self.counters["updates"] % t.eval_interval:
                    # Otherwise the final network, which had no evaluation of its own, could
                    # never become best.pt; saved first, as at every evaluation.
                    self._save_latest_once()
                    self.evaluate_now()
                    self.save("latest.pt")
                else:
                    self._save_latest_once()
            finally:
                if self.workers is not None:
                    self.workers.close()
                self.progress.close()
                if self._writer is not None:
                    self._writer.close()
                    self._writer = None
                    self._fresh = False
                if hasattr(self, "_renderer"):
                    self._renderer.close()
        print(f"done: {self.counters['updates']} updates, {self.counters['global_step']:,} "
              f"steps, {self.counters['episodes']:,} games -> {self.run_dir}", flush=True)
        return self._summary()

    def _steps_budget(self) -> str:
        """The step budget as the run will meet it: steps are counted a whole update at a time
        (PPO: a rollout of num_envs x n_steps; DQN: a step of every game), so a budget between
        two updates' counts is trained up to the next."""
        t, c = self.cfg.train, self.counters
        chunk = t.num_envs * (self.cfg.ppo.n_steps if t.algorithm == "ppo" else 1)
        goal = min(t.total_timesteps, self._until)
        real = c["global_step"] + -(-max(goal - c["global_step"], 0) // chunk) * chunk
        if real == goal:
            return f"{goal:,} steps"
        how = (f"rollouts of {t.num_envs} games x {self.cfg.ppo.n_steps} steps"
               if t.algorithm == "ppo" else f"steps of all {t.num_envs} games")
        return f"{real:,} steps ({goal:,} asked, rounded up to whole {how})"

    def _finished_line(self) -> str:
        """What a resume of a run that already met its budget says instead of training."""
        t, c = self.cfg.train, self.counters
        if c["global_step"] >= t.total_timesteps:
            met, flag = f"{c['global_step']:,} steps of its {t.total_timesteps:,}", \
                f"--timesteps {max(2 * c['global_step'], 1):,}".replace(",", "")
        elif t.episodes and c["episodes"] >= t.episodes:
            met, flag = f"{c['episodes']:,} games of its {t.episodes:,}", \
                f"--episodes {2 * c['episodes']}"
        else:
            met, flag = f"{c['wall_seconds'] / 60:.1f} minutes of its {t.max_minutes:g}", \
                f"--minutes {2 * t.max_minutes:g}"
        return (f"{self.run_name} is finished: it trained {met}; to train on, resume it with a "
                f"larger budget: spacewar-ai --resume {self.resumed_from} {flag}")

    def _summary(self) -> dict[str, Any]:
        summary = {"run_dir": str(self.run_dir), "log_dir": str(self.log_dir), **self.counters}
        model = self.opponent_model
        if model is not None and model.decisions:
            summary["opponent_model"] = {"path": str(self.run_dir / OPPONENT_MODEL_FILE),
                                         "of": model.spec, "accuracy": model.accuracy}
        return summary

    def _after_step(self) -> None:
        self.counters["global_step"] += self.env.num_envs
        self._draw()
        self._interrupt.check()

    def _run_ppo(self) -> None:
        if self.workers is not None:
            return self._run_ppo_on_workers()
        agent, n = self.agent, self.env.num_envs
        obs = self._reset_games()
        while not self._done():
            t0 = time.time()
            obs = play_steps(agent, self.league, self.env, obs, self.cfg.ppo.n_steps, self._shape,
                             self._finished, guide=self.guide, watch=self._watch_opponent,
                             after_step=self._after_step)
            losses = agent.update(next_obs=obs[:, 0], progress=self._schedule_progress())
            self._fit_opponent_model()
            dt = time.time() - t0
            self._after_update(losses, self.cfg.ppo.n_steps * n / dt)

    def _run_ppo_on_workers(self) -> None:
        """_run_ppo with the games on rollout workers (rollouts.py): every update each worker
        plays its games with the current weights; the learner takes their rollouts in worker
        order as one rollout of all the games, and updates."""
        agent, n = self.agent, self.cfg.train.num_envs
        while not self._done():
            t0 = time.time()
            parts = self.workers.collect(agent, self.league, self.counters["updates"])
            self._interrupt.check()
            for part in parts:
                self._take(part)
            agent.load_rollout([part["rollout"] for part in parts])
            t1 = time.time()
            losses = agent.update(next_obs=np.concatenate([part["next_obs"] for part in parts]),
                                  progress=self._schedule_progress())
            self._fit_opponent_model()
            t2 = time.time()
            self._log_workers(parts, t1 - t0, t2 - t1)
            self._after_update(losses, self.cfg.ppo.n_steps * n / (t2 - t0))

    def _log_workers(self, parts: list[dict[str, Any]], gather: float, update: float) -> None:
        """Per-worker throughput, the policy lag (updates between the weights a rollout was
        played with and the learner's; synchronous rollouts keep it 0), and where the time of
        an update went."""
        w, step = self.writer, self.counters["global_step"]
        for part in parts:
            w.add_scalar(f"workers/decisions_per_second/{part['worker']}",
                         part["decisions"] / part["seconds"], step)
        lag = max(self.counters["updates"] - part["update"] for part in parts)
        w.add_scalar("workers/policy_lag", lag, step)
        w.add_scalar("workers/gather_seconds", gather, step)
        w.add_scalar("workers/update_seconds", update, step)

    def _run_dqn(self) -> None:
        agent, env, league, c = self.agent, self.env, self.league, self.cfg.dqn
        n = env.num_envs
        actions = np.zeros((n, 2), dtype=np.int64)
        obs = self._reset_games()
        vector_steps = 0
        while not self._done():
            t0 = time.time()
            losses: dict[str, list[float]] = collections.defaultdict(list)
            for _ in range(DQN_ITERATION_STEPS):
                self._interrupt.check()
                agent.set_progress(self._schedule_progress())
                actions[:, 0] = agent.select_action(obs[:, 0])
                if self.guide is not None:
                    # Only exploration is guided: epsilon x share of the rows.
                    actions[:, 0] = self.guide.mix(obs[:, 0], actions[:, 0], agent.epsilon)
                actions[:, 1] = league.act(obs[:, 1])
                self._watch_opponent(obs, actions)
                next_obs, rewards, term, trunc, info = env.step_both(actions)
                done = term | trunc
                stored_next = next_obs[:, 0].copy()
                if done.any():
                    stored_next[done] = info["final_obs"][done, 0]
                reward = self._shape(obs, next_obs, info, term, rewards[:, 0], c.gamma)
                agent.store_transition(obs[:, 0], actions[:, 0], reward, stored_next, term,
                                       done=done)
                self.counters["global_step"] += n
                vector_steps += 1
                if len(agent) >= max(c.learning_starts, c.batch_size) and \
                        vector_steps % c.train_frequency == 0:
                    for k, v in agent.update().items():
                        losses[k].append(v)
                if done.any():
                    self._finished(info, done)
                obs = next_obs
                self._draw()
            self._fit_opponent_model()
            dt = time.time() - t0
            mean = {k: float(np.mean(v)) for k, v in losses.items()}
            mean.setdefault("epsilon", float(agent.epsilon))
            self._after_update(mean, DQN_ITERATION_STEPS * n / dt)


PLAN_GAMES = 40  # the printed command's games: a first look, not a figure


def planner_command(run_dir: str | Path, eval_opponent: str,
                    accuracy: float | None = None) -> str:
    """The line that tells a user how to play what a run trained with a lookahead (search.py),
    or why there is nothing to plan with yet. Printed at the end of every run, Ctrl-C included.
    `accuracy`: how many of the opponent's last moves its model foresaw, when the run knows."""
    run_dir = Path(run_dir)
    best, model = run_dir / "best.pt", run_dir / OPPONENT_MODEL_FILE
    if not best.is_file():
        return (f"no model to plan with yet: {run_dir} has no best.pt (the run stopped before "
                f"its first evaluation); continue it with --resume {run_dir / 'latest.pt'}")
    # A PPO network's rollouts sample its policy; a DQN network's are jittered (search.py).
    command = (f"plan with it ({PLAN_GAMES} games, about a minute on two cores; "
               "--eval-episodes 200 for a figure, five times as long): spacewar-ai --evaluate "
               f"--checkpoint search:{best} --opponent {eval_opponent} --eval-episodes "
               f"{PLAN_GAMES}")
    if not model.is_file():
        return (f"no opponent model yet (the run had not met {eval_opponent} long enough to "
                "learn one), so the planner forecasts with the shipped model of "
                f"heuristic:hard; {command}")
    return (f"opponent model of {eval_opponent}: {model}"
            + (f" ({accuracy:.1%} of its last moves foreseen)" if accuracy is not None else "")
            + f"; {command}")


def _np_state_json(state) -> list:
    name, keys, pos, has_gauss, cached = state
    return [name, keys.tolist(), int(pos), int(has_gauss), float(cached)]
