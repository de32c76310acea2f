"""Training: the Trainer runs one PPO or DQN run (new, resumed, or continued against champions).

The learner flies ship 0 in `num_envs` games at once; the league chooses who flies ship 1. The
Trainer builds the run and holds its parts, each in its own module: the frame (run_frame.py),
the loops (loops.py), the rollout (rollouts.py), the counters and budget (budget.py), the log
(run_log.py), the files (run_files.py) and the evaluation that keeps best.pt (evaluation.py).
Read the loops first, then agents/ppo.py's `ppo_update`; what was played comes to the Trainer as
data (`take`), and every update ends in `after_update`: snapshot, log, evaluate, save."""

from __future__ import annotations

import collections
import dataclasses
import random
import shlex
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...agents.base import OnPolicyAgent, learner_dtype, saved_architecture
from ...agents.checkpoints import CheckpointError, check_finite, error_summary, load_checkpoint
from ...agents.opponent_model import FILE_NAME as OPPONENT_MODEL_FILE
from ...agents.opponent_model import PAYLOAD_KEY as OPPONENT_MODEL_KEY
from ...agents.opponent_model import OpponentModel
from ...agents.ppo import shown_jumps
from ...agents.saved import make_agent
from ...config import UNLIMITED_STEPS, RunConfig
from ...game.environment import SpacewarVectorEnv
from ...pilots.build import make_pilot
from ...pilots.spec import STAND_IN_PILOT, check_spec, stand_in_model
from ...util.errors import UserError
from ...util.files import remove_stale_temps
from ...util.progress import Interrupted, Progress
from ...util.threads import available_cores
from ...util.workers import Where
from ..budget import Budget, Counters
from ..evaluation import Evaluator
from ..run_frame import RunFrame
from ..run_log import RunLog
from . import loops
from .league import League
from .rollouts import Played, RolloutWorkers, WorkersLost
from .run_files import GAME_FILE, RunFiles, saved_game
from .warm_start import behaviour_clone, demonstration_start

PROGRESS_UNITS = 1000  # the progress bar counts thousandths of the run's budget


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


class TrainingWindow:
    """--render: the learner's first game, drawn at most at the game's fps and never waited
    for (the other games must not slow down); the window opens at the first frame."""

    def __init__(self, game):
        self.game, self.renderer, self.last = game, None, 0.0

    def show(self, batch) -> None:
        if self.renderer is None:
            from ...game.rendering import Renderer

            self.renderer = Renderer(self.game, 512, "human", "Spacewar! AI: training")
        now = time.time()
        if now - self.last >= 1.0 / self.game.fps:
            self.last = now
            self.renderer.draw(batch, 0, wait=False)

    def close(self) -> None:
        if self.renderer is not None:
            self.renderer.close()
            self.renderer = None


def _setting(name: str, build, *args, **kwargs):
    """build(*args), with a refusal naming the setting it came from."""
    try:
        return build(*args, **kwargs)
    except ValueError as exc:
        raise UserError(f"{name}: {exc}") from None


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


class Trainer(RunFrame):
    """One training run (new or resumed), in its frame (run_frame.RunFrame: name, folders,
    writer, locks). `run()` trains and returns a summary."""

    def __init__(self, cfg: RunConfig, resume: str | Path | None = None,
                 init_weights: str | Path | None = None, champions: list[str] | None = None,
                 render: bool = False, quiet: bool = False, guide=None,
                 where: Where = Where("local")):
        # "auto" rollouts decided for this machine; the checkpoints and logs keep the decision.
        self.auto_rollouts = cfg.train.rollout_workers == "auto"
        cfg = dataclasses.replace(cfg, train=cfg.train.with_rollouts(
            available_cores(), own_games=render or guide is not None))
        self.auto_rollouts &= bool(cfg.train.rollout_workers)
        self.cfg = cfg
        t = cfg.train
        if t.rollout_workers and (render or guide is not None):
            raise UserError(f"{'--render' if render else '--use-llm'} shows or guides the "
                            "learner's own games; with --rollout-workers the workers play them: "
                            "drop one of the two")
        self.device = "cuda" if t.device == "auto" and torch.cuda.is_available() else (
            "cpu" if t.device == "auto" else t.device)
        self.render, self.guide = render, guide
        # Every pilot the run will meet is built (and a bad spec refused) before the first step;
        # fork_rng: a network built here must not move the generator the learner samples from.
        with torch.random.fork_rng(devices=[]):
            self.eval_opponent = _setting("[train] eval_opponent", make_pilot, t.eval_opponent,
                                          cfg.game)
            if t.warm_start:
                _setting("--warm-start ([train] warm_start)", check_spec, t.warm_start)
        self.counters = Counters()
        resume_ckpt, name = self._read_resume(resume) if resume is not None else (None, None)
        init_ckpt = None
        if init_weights is not None and resume_ckpt is None:
            init_ckpt = load_checkpoint(init_weights, expect_algorithm=t.algorithm,
                                        expect_obs_dim=cfg.game.obs_dim)
            if init_ckpt["obs_dim"] != cfg.game.obs_dim and t.algorithm != "ppo":
                raise UserError(f"--init-from {init_weights}: a DQN network saved before "
                                "observations held the jumps left trains on only in a game "
                                "without hyperspace; start this run afresh")
        # A run against champions says so: runs/ otherwise lists it like a fresh start.
        name = name or t.named(("champion-" if champions else "") + t.algorithm)
        fresh = self.counters.updates == 0
        super().__init__(cfg, name, Path(t.checkpoint_dir) / name,
                         lambda folder: RunLog(folder, cfg, fresh), quiet)
        _seed_everything(t.seed + self.counters.updates)
        warm = bool(t.warm_start) and resume_ckpt is None and init_weights is None
        self._shape_configs(resume_ckpt if resume_ckpt is not None else init_ckpt, warm)
        # The learner's own games; rollout workers hold theirs instead (rollouts.py).
        self.env = None if t.rollout_workers else SpacewarVectorEnv(
            t.num_envs, cfg.game, cfg.reward, opponent=None,
            count_dodges=True)  # for game/dodged in TensorBoard
        self.agent = make_agent(t.algorithm, cfg.game.obs_dim, cfg.game.num_actions,
                                getattr(cfg, t.algorithm), self.device, seed=t.seed,
                                game=cfg.game,
                                learn_dtype=learner_dtype(t.precision, self.device))
        self.on_policy = isinstance(self.agent, OnPolicyAgent)
        self.league = _setting("[league] curriculum", League, cfg.league, cfg.game, t.num_envs,
                               t.seed, snapshot_dir=self.run_dir / "league")
        self.progress: Progress | None = None
        # The judged opponent when it is a league pilot: the opponent model learns its moves,
        # watched wherever it flies.
        self.watch = t.eval_opponent if t.opponent_model and \
            t.eval_opponent in self.league.scripted else None
        self.workers: RolloutWorkers | None = None
        if t.rollout_workers:
            # Before any work (a warm start can take minutes): a cluster that cannot be
            # reached is refused first.
            self.workers = RolloutWorkers(cfg, where, self.say, self.watch)
        if resume_ckpt is not None:
            self._restore(resume_ckpt, resume)
        elif init_ckpt is not None:
            state = dict(init_ckpt["agent"])
            state.pop("optimizer", None)  # a fresh optimizer for a new run
            if init_ckpt["obs_dim"] != cfg.game.obs_dim:  # saved before the jumps left were seen
                state = shown_jumps(state)
            self._load_weights(state, init_weights)
            self.agent.offer_held_fire()  # a new run learns the game's moves as offered today
        if warm:
            clone = behaviour_clone if self.on_policy else demonstration_start
            stats = clone(self.agent, t.warm_start, cfg.game, t.warm_start_decisions,
                          t.warm_start_epochs, t.seed, quiet=quiet)
            self.counters.warm_start_accuracy = stats["accuracy"]
        for path in champions or []:
            self.league.add_fixed(path, self.device)
        self.league.set_learner(self.agent)
        self.league.assign()
        self.opponent_model = self._opponent_model(resume_ckpt)
        self._model_fit_at: int | None = None  # the step of the fit under way, to log
        self.interrupt = StopAtSafePoint()
        self.evaluator = Evaluator(cfg, self.run_dir, self.eval_opponent, self.device,
                                   self.counters)
        self.files = RunFiles(self.run_dir, self.name, cfg, self.agent, self.league,
                              self.counters, self.opponent_model)
        self.recent_wins = collections.deque(maxlen=100)  # 1 where the learner won by a hit
        self.episode_sums: collections.Counter = collections.Counter()
        self.resumed_from = Path(resume) if resume is not None else None
        self.screen = TrainingWindow(cfg.game) if render else None

    # --- building the run ---------------------------------------------------------------------
    def _read_resume(self, resume) -> tuple[dict[str, Any], str]:
        """The checkpoint a resume continues, and the run's name; the counters restored."""
        t = self.cfg.train
        ckpt = load_checkpoint(resume, expect_algorithm=t.algorithm,
                               expect_obs_dim=self.cfg.game.obs_dim)
        if ckpt["obs_dim"] != self.cfg.game.obs_dim:
            raise UserError(f"--resume {resume}: the run was saved before observations held the "
                            f"jumps left, so its optimizer does not fit them; train on from it "
                            f"in a new run: --init-from {resume}")
        meta = ckpt["metadata"]
        # A resumed run keeps its name unless the config names another (pbt.py's members
        # continue a better member's weights under their own).
        name = t.run_name or meta.get("run_name") or Path(resume).resolve().parent.name
        self.counters = Counters.from_saved(meta.get("counters", {}))
        if self.counters.best_eval >= 0 and not self.counters.best_eval_games:
            # Written before the figure was pooled: it stood for one evaluation's games.
            self.counters.best_eval_games = t.eval_episodes
        return ckpt, name

    def _shape_configs(self, source, warm: bool) -> None:
        """The network's shape comes from the weights being continued, whatever the config says;
        a warm-started DQN explores at its final epsilon from the start."""
        cfg, t = self.cfg, self.cfg.train
        if source is not None:
            shape = saved_architecture(t.algorithm, source["agent"].get("config", {}))
            setattr(cfg, t.algorithm, dataclasses.replace(getattr(cfg, t.algorithm), **shape))
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

    def _opponent_model(self, resumed: dict[str, Any] | None) -> OpponentModel | None:
        """The model of the watched pilot (opponent_model.py), when there is one."""
        cfg, t = self.cfg, self.cfg.train
        if self.watch is None:
            return None
        steps = self.agent.rollout_steps if self.on_policy else loops.OFF_POLICY_STEPS
        model = OpponentModel(t.eval_opponent, cfg.game, steps * t.num_envs,
                              t.opponent_model_batch, t.opponent_model_lr, self.device,
                              t.opponent_model_share, self.agent.learn_dtype,
                              t.opponent_model_sure)
        saved = (resumed or {}).get(OPPONENT_MODEL_KEY)
        if saved is not None:
            model.restore(saved)
            model.save(self.run_dir / OPPONENT_MODEL_FILE)  # its copy, as of latest.pt again
        elif resumed is not None and (self.run_dir / OPPONENT_MODEL_FILE).is_file():
            model.load(self.run_dir / OPPONENT_MODEL_FILE)  # a run saved before latest.pt held it
        return model

    # --- what the loops call (loops.py) -------------------------------------------------------
    def say(self, line: str) -> None:
        """A line for the user, above the progress bar once there is one."""
        if self.progress is not None:
            self.progress.say(line)
        elif not self.quiet:
            print(line, flush=True)

    def reset_games(self):
        seed = self.cfg.train.seed * 1_000_003 + self.counters.updates * 7919
        obs, _ = self.env.reset_both(seed=seed)
        self.league.reset_pilots(np.ones(self.env.num_envs, bool), self.env.batch.rng.copy())
        return obs

    def take(self, played: Played) -> None:
        """What the learner's games (or a worker's) played: counted, logged, and the watched
        pilot's moves shown to the opponent model."""
        self.recent_wins.extend(played.wins.tolist())
        self.episode_sums.update(played.sums)
        self.counters.played(played.decisions, len(played.keys))
        watched = played.watched
        if watched is not None and self.opponent_model is not None:
            for obs, actions, rows in zip(watched["obs"], watched["actions"], watched["rows"]):
                self.opponent_model.observe(obs, actions, np.flatnonzero(rows))

    def fit_opponent_model(self) -> None:
        """Begin learning from the update's decisions of the modelled opponent, in the model's
        thread while the next update plays and learns (opponent_model.py); the fit before it
        is logged, at its own step, once it has ended."""
        if self.opponent_model is None:
            return
        self._log_model_fit()
        if self.opponent_model.fit():
            self._model_fit_at = self.counters.global_step

    def _log_model_fit(self) -> None:
        if self._model_fit_at is not None:
            self.log.opponent_model(self._model_fit_at, self.opponent_model.settle())
            self._model_fit_at = None

    def after_update(self, losses: dict[str, float], sps: float) -> None:
        """What every update ends with: the league's snapshot, the log, an evaluation now and
        then, the saves (run_files.py says when), the bar."""
        t, c = self.cfg.train, self.counters
        c.updates += 1
        c.wall_seconds = self._wall_base + self.seconds
        self._at_update = (c.global_step, c.episodes)
        self.league.set_learner(self.agent)
        if c.updates % self.cfg.league.snapshot_interval == 0:
            self.league.add_snapshot(self.agent, f"u{c.updates:06d}")
        self.log.update(c.global_step, losses, sps, self.episode_sums, self.recent_wins,
                        self.league, self.guide)
        self.episode_sums = collections.Counter()
        evaluating = c.updates % t.eval_interval == 0
        if self.files.latest_due(evaluating):
            self.save("latest.pt")
        if evaluating:
            rate = self.evaluate_now()
            self.progress.say(f"update {c.updates:,}, {c.global_step:,} steps: "
                              f"{rate:.0%} against {t.eval_opponent}")
            self.save("latest.pt")
        self.files.save_periodic()
        win = np.mean(self.recent_wins) if self.recent_wins else 0.0
        # Won by the learner in its own recent games, against whoever the league sent.
        self.progress.note(steps=f"{c.global_step:,}", sps=f"{sps:,.0f}",
                           win_vs_league=f"{win:.0%}", stage=self.league.stage_spec)
        self.progress.set(round(PROGRESS_UNITS * self.budget.fraction(c)))

    def save(self, name: str) -> Path:
        return self.files.save(name)

    def evaluate_now(self) -> float:
        """Evaluate the learner now and let it challenge best.pt (evaluation.py); the win rate."""
        return self.evaluator.evaluate(self.agent, self.writer, lambda: self.save("best.pt"))

    # --- the run --------------------------------------------------------------------------------
    def run(self, until_step: int | None = None) -> dict[str, Any]:
        """Train until the budget ends, or (until_step) pause at that many steps, the schedules
        still following the whole budget: population-based training runs a member in rounds."""
        t, c = self.cfg.train, self.counters
        if not self.folders:  # before the run writes anything there
            self.hold(checkpoints=self.run_dir, logs=self.log_dir)
            # What a killed run left half-written: cleared only by the folder's one live run,
            # never under another run's writes.
            remove_stale_temps(self.run_dir)
            self.files.write_game()
        self.budget = Budget(t, until_step if until_step is not None else t.total_timesteps)
        if until_step is None and self.resumed_from is not None and self.budget.done(c):
            if self.workers is not None:
                self.workers.close()
            self.release()
            print(self.budget.finished_line(self.name, c, self.resumed_from), flush=True)
            return self._summary()
        if self.on_policy:
            chunk = t.num_envs * self.agent.rollout_steps
            how = f"rollouts of {t.num_envs} games x {self.agent.rollout_steps} steps"
        else:
            chunk, how = t.num_envs, f"steps of all {t.num_envs} games"
        self.progress = Progress(PROGRESS_UNITS, self.name, quiet=self.quiet,
                                 bar_format="{desc} {percentage:3.0f}%|{bar}| "
                                            "{elapsed}<{remaining}{postfix}")
        self.evaluator.say = self.progress.say
        self.progress.say(f"training {self.name} ({t.algorithm}), until "
                          f"{self.budget.describe(c, chunk, how)}; watch it with: tensorboard "
                          f"--logdir {shlex.quote(str(self.log_dir))}")
        if self.resumed_from is not None and until_step is None:
            self.progress.say(f"resuming {self.name} from {self.resumed_from}: update "
                              f"{c.updates:,}, {c.global_step:,} steps, "
                              f"{c.episodes:,} games, {c.wall_seconds / 60:.1f} minutes "
                              f"in; {self.budget.left(c)} left")
        learner = (f"the learner updates on {self.device} in "
                   f"{str(self.agent.learn_dtype).removeprefix('torch.')}")
        if self.workers is None:
            self.progress.say(learner)
        else:
            self.workers.open(c.updates)
            # Their processes take seconds to start, which the learner spends loading what its
            # first update needs instead of after the first rollout comes back.
            self.agent.warm_up()
            n = t.rollout_workers
            self.progress.say(f"{learner}; {n} rollout "
                              f"worker{'s play' if n > 1 else ' plays'} the games "
                              f"{self.workers.where()}"
                              + (", the next rollout while the learner updates"
                                 if t.async_rollouts else "")
                              + (" (the default on two or more cores; --rollout-workers 0: "
                                 "the learner plays them, in step)" if self.auto_rollouts
                                 else ""))
        # Wall-clock time of the whole run (evaluations and saves included), across resumes.
        self._wall_base = c.wall_seconds
        self.start_clock()
        self.files.last_write = time.monotonic()
        if not self.on_policy:
            loop = loops.off_policy
        elif self.workers is None:
            loop = loops.on_policy
        else:
            loop = loops.on_policy_async if t.async_rollouts else loops.on_policy_on_workers
        self._at_update = (c.global_step, c.episodes)
        with self.interrupt:  # the closing below included: it is where a stray signal hung
            try:
                loop(self)
                if c.updates % t.eval_interval:
                    # Otherwise the final network, which had no evaluation of its own, could
                    # never become best.pt; saved first, as at every evaluation.
                    self.files.save_latest_once()
                    self.evaluate_now()
                    self.save("latest.pt")
                else:
                    self.files.save_latest_once()
            except KeyboardInterrupt:
                self._save_interrupted()
                raise Interrupted from None
            except WorkersLost:
                self._save_interrupted("stopped")  # resumable from its last update
                raise
            finally:
                if self.workers is not None:
                    self.workers.close()
                self.progress.close()
                self._log_model_fit()
                self.log.close()
                if self.screen is not None:
                    self.screen.close()
                if until_step is None:
                    self.release()
        print(f"done: {c.updates} updates, {c.global_step:,} steps, "
              f"{c.episodes:,} games -> {self.run_dir}", flush=True)
        return self._summary()

    def train_more(self, steps: int = 0, games: int = 0) -> dict[str, Any]:
        """Train on for `games` more games if given, else `steps` more steps: the rounds of the
        iterative strategy loop (llm/strategies.py) between two strategies."""
        c = self.counters
        budget = {"episodes": c.episodes + games, "total_timesteps": UNLIMITED_STEPS} \
            if games else {"total_timesteps": c.global_step + steps}
        self.cfg.train = dataclasses.replace(self.cfg.train, **budget)
        return self.run()

    def _save_interrupted(self, how: str = "interrupted") -> None:
        """Ctrl-C (or workers that cannot be kept running): latest.pt as of the last update,
        which a resume continues (the games of the rollout in flight are played again), and a
        line saying how far the run got."""
        c = self.counters
        if c.updates == 0:
            self.say(f"{how} before the first update: nothing to save")
            return
        c.global_step, c.episodes = self._at_update
        self.files.save_latest_once()
        latest = self.run_dir / "latest.pt"
        self.say(f"{how}: saved {latest} at update {c.updates:,} ({c.global_step:,} "
                 f"steps, {c.episodes:,} games); continue with: spacewar-ai --resume "
                 f"{shlex.quote(str(latest))}")

    def _summary(self) -> dict[str, Any]:
        summary = {"run_dir": str(self.run_dir), "log_dir": str(self.log_dir),
                   **self.counters.saved()}
        model = self.opponent_model
        if model is not None and model.decisions:
            summary["opponent_model"] = {"path": str(self.run_dir / OPPONENT_MODEL_FILE),
                                         "of": model.spec, "accuracy": model.accuracy}
        return summary


PLAN_GAMES = 40  # the printed command's games: a first look, not a figure


def _own_game(run_dir: Path) -> str:
    """The flag that plays a run's own game, where it has one (run_files.GAME_FILE), else ""."""
    game = run_dir / GAME_FILE
    return f" --config {shlex.quote(str(game))}" if game.is_file() else ""


def human_play_command(run_dir: str | Path) -> str | None:
    """The line that tells a user how to fly against what a run trained, in its game; None
    before its first best.pt."""
    best = Path(run_dir) / "best.pt"
    if not best.is_file():
        return None
    return (f"fly against it yourself: spacewar-ai --human-play --opponent "
            f"{shlex.quote(str(best))}{_own_game(Path(run_dir))}")


MIN_FORESEEN = 0.5  # a run's opponent model below it is not the one a planner is told to use


def planner_command(run_dir: str | Path, eval_opponent: str,
                    accuracy: float | None = None) -> str:
    """The line that tells a user how to play what a run trained with a lookahead (search.py),
    or why there is nothing to plan with yet. Printed at the end of every run, Ctrl-C included.
    `accuracy`: how many of the opponent's last moves its model foresaw, when the run knows."""
    run_dir = Path(run_dir)
    best, model = run_dir / "best.pt", run_dir / OPPONENT_MODEL_FILE
    if not best.is_file():
        return (f"no model to plan with yet: {run_dir} has no best.pt (the run stopped before "
                f"its first evaluation); continue it with --resume "
                f"{shlex.quote(str(run_dir / 'latest.pt'))}")
    # A PPO network's rollouts sample its policy; a DQN network's are jittered (search.py).
    # A model that foresees little yet forecasts worse than the stand-in, so without a usable
    # model of its own the planner is told the stand-in for the run's game.
    own_game = _own_game(run_dir)
    green = model.is_file() and accuracy is not None and accuracy < MIN_FORESEEN
    stand_in = stand_in_model(saved_game(run_dir))
    stand_in_says = "the hard pilot itself" if stand_in == STAND_IN_PILOT else \
        f"the shipped model of {STAND_IN_PILOT}"
    usable = model.is_file() and not green
    spec = f"search:{best}" if usable else f"search:{best}+{stand_in}"
    command = (f"plan with it ({PLAN_GAMES} games, about a minute on two cores; "
               "--eval-episodes 200 for a figure, five times as long): spacewar-ai --evaluate "
               f"--checkpoint {shlex.quote(spec)} --opponent "
               f"{shlex.quote(eval_opponent)} --eval-episodes {PLAN_GAMES}{own_game}")
    if green:
        return (f"opponent model of {eval_opponent}: {model} foresees only {accuracy:.1%} of "
                "its last moves yet (a longer run teaches it more), so the planner forecasts "
                f"with {stand_in_says}; {command}")
    if not model.is_file():
        return (f"no opponent model yet (the run had not met {eval_opponent} long enough to "
                f"learn one), so the planner forecasts with {stand_in_says}; {command}")
    return (f"opponent model of {eval_opponent}: {model}"
            + (f" ({accuracy:.1%} of its last moves foreseen)" if accuracy is not None else "")
            + f"; {command}")
