"""Training, evaluation and champion training. Reads top to bottom like CleanRL's ppo.py.

The learner flies ship 0 in `num_envs` games at once (one engine batch); `SelfPlayManager`
chooses who flies ship 1 in each game. TensorBoard logs go to runs/<run>/, checkpoints to
checkpoints/<run>/ (latest.pt, best.pt, ckpt_<update>.pt, league/ snapshots).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .agents import make_agent, saved_architecture
from .arena import play_match
from .checkpoints import CheckpointError, load_agent, load_checkpoint, rewrite_metadata
from .config import DQNConfig, GameConfig, LeagueConfig, PPOConfig, RewardConfig, TrainConfig
from .engine import DeathCause
from .environment import SpacewarVectorEnv
from .league import SelfPlayManager
from .opponent_model import FILE_NAME as OPPONENT_MODEL_FILE
from .opponent_model import OpponentModel
from .players import AgentPilot, resolve_player

DQN_ITERATION_STEPS = 64  # DQN vector steps per "update" for logging, evaluation and saving
# How the learner's games end, as logged under charts/death_cause/ (shares of the update's games).
EPISODE_CAUSES = (DeathCause.TORPEDO, DeathCause.STAR, DeathCause.COLLISION, DeathCause.TIMEOUT)


@dataclass
class RunConfig:
    """Everything a run is made of; its dict is the resolved config saved in checkpoints."""

    train: TrainConfig = field(default_factory=TrainConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    dqn: DQNConfig = field(default_factory=DQNConfig)
    league: LeagueConfig = field(default_factory=LeagueConfig)
    game: GameConfig = field(default_factory=GameConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k).to_dict() for k in
                ("train", "ppo", "dqn", "league", "game", "reward")}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunConfig":
        parts = {"train": TrainConfig, "ppo": PPOConfig, "dqn": DQNConfig, "league": LeagueConfig,
                 "game": GameConfig, "reward": RewardConfig}
        unknown = sorted(set(data) - set(parts))
        if unknown:
            raise ValueError(f"config sections {unknown} are unknown; valid sections are "
                             f"{sorted(parts)}")
        return cls(**{k: parts[k].from_dict(data.get(k, {})) for k in parts})


def load_run_config(path: str | Path, base: RunConfig | None = None) -> RunConfig:
    """Read a TOML or JSON file with sections [train], [ppo], [dqn], [league], [game], [reward].
    Its fields override `base` (default: the defaults); a resumed run's base is its saved config."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"config file {p}: no such file")
    text = p.read_text()
    try:
        if p.suffix.lower() == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - any parse error becomes one clear line
        raise ValueError(f"config file {p}: cannot be parsed ({exc})") from None
    merged = (base or RunConfig()).to_dict()
    for section, fields in data.items():
        if isinstance(fields, dict) and isinstance(merged.get(section), dict):
            merged[section].update(fields)
        else:
            merged[section] = fields  # an unknown section or a bad value: from_dict names it
    try:
        return RunConfig.from_dict(merged)
    except ValueError as exc:
        raise ValueError(f"config file {p}: {exc}") from None


def saved_run_config(path: str | Path) -> RunConfig:
    """The settings a checkpoint's run was made with (the resolved config saved in it): the base
    of a resumed run. A bad file raises CheckpointError (a ValueError) naming it."""
    saved = load_checkpoint(path)["metadata"].get("config") or {}
    try:
        return RunConfig.from_dict(saved)
    except ValueError as exc:
        raise ValueError(f"{path}: its saved settings cannot be read ({exc}); it was written by "
                         "another version of spacewar-ai") from None


def wilson_interval(wins: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% confidence interval of a proportion (Wilson score)."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, centre - half), min(1.0, centre + half)


def evaluation_seeds(updates: int, games: int) -> tuple[int, int]:
    """First seeds of the evaluation after `updates` updates and of its confirmation (each plays
    games / 2 starts, sides swapped). Every evaluation and every confirmation has starts of its
    own: shared starts would make successive evaluations' noise agree."""
    return 10_000 + 2 * updates * games, 10_000 + (2 * updates + 1) * games


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


class _Progress:
    """A live line on a terminal (at most once a second); on a pipe, one line per evaluation;
    with quiet, nothing but the final summary."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.live = sys.stdout.isatty() and not quiet
        self.last = 0.0

    def show(self, text: str, milestone: bool = False, final: bool = False) -> None:
        if final:
            print(("\n" if self.live else "") + text, flush=True)
        elif self.live and time.time() - self.last > 1.0:
            self.last = time.time()
            print("\r" + text[:150].ljust(150), end="", flush=True)
        elif milestone and not self.quiet and not self.live:
            print(text, flush=True)


class Trainer:
    """One training run (new or resumed)."""

    def __init__(self, cfg: RunConfig, resume: str | Path | None = None,
                 init_weights: str | Path | None = None, champions: list[str] | None = None,
                 render: bool = False, quiet: bool = False, guide=None):
        self.cfg = cfg
        t = cfg.train
        torch.set_num_threads(t.torch_threads or os.cpu_count() or 1)
        self.device = "cuda" if t.device == "auto" and torch.cuda.is_available() else (
            "cpu" if t.device == "auto" else t.device)
        # best_eval: best.pt's win rate in evaluations, pooled over best_eval_games games.
        self.counters = {"global_step": 0, "episodes": 0, "updates": 0, "best_eval": -1.0,
                         "best_eval_games": 0, "wall_seconds": 0.0}
        resume_ckpt = None
        if resume is not None:
            resume_ckpt = load_checkpoint(resume, expect_algorithm=t.algorithm,
                                          expect_obs_dim=cfg.game.obs_dim)
            meta = resume_ckpt["metadata"]
            self.run_name = meta.get("run_name") or t.run_name
            self.counters.update(meta.get("counters", {}))
            if self.counters["best_eval"] >= 0 and not self.counters["best_eval_games"]:
                # Written before the figure was pooled: it stood for one evaluation's games.
                self.counters["best_eval_games"] = t.eval_episodes
        else:
            # A run against champions says so: runs/ otherwise lists it like a fresh start.
            kind = "champion-" if champions else ""
            self.run_name = t.run_name or (
                f"{kind}{t.algorithm}-s{t.seed}-{time.strftime('%Y%m%d-%H%M%S')}")
        self.run_dir = Path(t.checkpoint_dir) / self.run_name
        self.log_dir = Path(t.log_dir) / self.run_name
        _seed_everything(t.seed + self.counters["updates"])
        init_ckpt = None
        if init_weights is not None and resume_ckpt is None:
            init_ckpt = load_checkpoint(init_weights, expect_algorithm=t.algorithm,
                                        expect_obs_dim=cfg.game.obs_dim)
        source = resume_ckpt if resume_ckpt is not None else init_ckpt
        if source is not None:
            # The network's shape comes from the weights being continued, whatever the config says.
            shape = saved_architecture(t.algorithm, source["agent"].get("config", {}))
            if t.algorithm == "ppo":
                cfg.ppo = dataclasses.replace(cfg.ppo, **shape)
            else:
                cfg.dqn = dataclasses.replace(cfg.dqn, **shape)
        warm = bool(t.warm_start) and resume_ckpt is None and init_weights is None
        if warm and t.algorithm == "dqn":
            # A warm-started Q-network already flies; epsilon 1.0 would only bury its
            # demonstrations in random games (DQfD explores at a small constant epsilon too).
            cfg.dqn = dataclasses.replace(cfg.dqn, start_epsilon=cfg.dqn.end_epsilon)
        self.env = SpacewarVectorEnv(t.num_envs, cfg.game, cfg.reward, opponent=None)
        algo_cfg = cfg.ppo if t.algorithm == "ppo" else cfg.dqn
        self.agent = make_agent(t.algorithm, cfg.game.obs_dim, cfg.game.num_actions, algo_cfg,
                                self.device, num_envs=t.num_envs, seed=t.seed, game=cfg.game)
        self.league = SelfPlayManager(cfg.league, cfg.game, t.num_envs, t.seed,
                                      snapshot_dir=self.run_dir / "league")
        if resume_ckpt is not None:
            self.agent.load_state_dict(resume_ckpt["agent"])
            meta = resume_ckpt["metadata"]
            self.league.load_state(meta.get("league", {}), self.device)
            rng = meta.get("rng", {})
            if "torch" in rng:
                torch.set_rng_state(torch.tensor(rng["torch"], dtype=torch.uint8))
            if "numpy" in rng:
                np.random.set_state(tuple(rng["numpy"]))
        elif init_ckpt is not None:
            state = dict(init_ckpt["agent"])
            state.pop("optimizer", None)  # a fresh optimizer for a new run
            self.agent.load_state_dict(state)
        if warm:
            clone = behaviour_clone if t.algorithm == "ppo" else demonstration_start
            stats = clone(self.agent, t.warm_start, cfg.game, t.warm_start_decisions,
                          t.warm_start_epochs, t.seed, quiet=quiet)
            self.counters["warm_start_accuracy"] = stats["accuracy"]
        for path in champions or []:
            if not any(k.endswith(Path(path).stem) for k in self.league.fixed_keys):
                self.league.add_fixed(path, self.device)
        self.league.set_learner(self.agent)
        self.league.assign()
        self.opponent_model: OpponentModel | None = None
        if t.opponent_model and t.eval_opponent in self.league.scripted:
            steps = cfg.ppo.n_steps if t.algorithm == "ppo" else DQN_ITERATION_STEPS
            self.opponent_model = OpponentModel(
                t.eval_opponent, cfg.game, steps * t.num_envs, t.opponent_model_batch,
                t.opponent_model_lr, self.device)
            saved = self.run_dir / OPPONENT_MODEL_FILE
            if resume_ckpt is not None and saved.is_file():
                self.opponent_model.load(saved)
        self.render = render
        self.guide = guide
        self.progress = _Progress(quiet)
        self._best_pilot: AgentPilot | None = None  # best.pt's player, once loaded or made
        self.recent = collections.deque(maxlen=100)  # learner outcomes: 1 win, 0.5 draw, 0 loss
        self.recent_wins = collections.deque(maxlen=100)
        self.writer = None
        self._episode_sums: collections.Counter = collections.Counter()

    # --- helpers ------------------------------------------------------------------------------
    def _open_writer(self):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(self.log_dir))
        if self.counters["updates"] == 0:
            self.writer.add_text("hyperparameters", _hparams_table(self.cfg))

    def _reset_games(self):
        seed = self.cfg.train.seed * 1_000_003 + self.counters["updates"] * 7919
        obs, _ = self.env.reset_both(seed=seed)
        self.league.reset_pilots(np.ones(self.env.num_envs, bool), self.env.batch.rng.copy())
        return obs

    def _finished(self, info: dict, done: np.ndarray) -> None:
        rows = np.flatnonzero(done)
        real = info["real_winner"][rows]
        winner = info["winner"][rows]
        score = np.where(real == 0, 1.0, np.where((winner == -1) | (real == -1) & (winner == 0),
                                                  0.5, 0.0))
        score = np.where(real == 1, 0.0, score)
        self.league.record(rows, score)
        self.recent.extend(score.tolist())
        self.recent_wins.extend((real == 0).astype(float).tolist())
        # Summed here, written once per update as means (PufferLib's habit): a scalar per game
        # cost a fifth of the run's time in TensorBoard's queue.
        ep = self._episode_sums
        ep["count"] += len(rows)
        ep["return"] += float(info["episode_return"][rows, 0].sum())
        ep["length"] += float(info["episode_length"][rows].sum())
        causes = info["death_cause"][rows, 0]
        for c in EPISODE_CAUSES:
            ep[c.name.lower()] += float(np.count_nonzero(causes == c))
        self.counters["episodes"] += len(rows)
        self.league.assign(done)
        self.league.reset_pilots(done, self.env.batch.rng.copy())

    def _log_iteration(self, losses: dict[str, float], sps: float) -> None:
        w, step = self.writer, self.counters["global_step"]
        for k, v in losses.items():
            w.add_scalar(f"losses/{k}", v, step)
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
        self.agent.save(path, self._metadata())
        if name == "latest.pt" and self.opponent_model is not None and \
                self.opponent_model.decisions:
            # Saved with latest.pt, so a resumed run continues the model it had then.
            self.opponent_model.save(self.run_dir / OPPONENT_MODEL_FILE)
        return path

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
        """Evaluate the greedy player (eval/win_rate, the learning curve) and let it challenge
        best.pt. Returns the evaluation's win rate."""
        t = self.cfg.train
        pilot = AgentPilot(self.agent.play_copy(), "learner", deterministic=True)
        opponent = resolve_player(t.eval_opponent, self.cfg.game)
        games = t.eval_episodes + t.eval_episodes % 2
        updates = self.counters["updates"]

        def play(player, seed: int):
            return play_match(player, opponent, games, seed=seed, config=self.cfg.game,
                              reward_config=self.cfg.reward)

        selection, confirmation = evaluation_seeds(updates, games)
        r = play(pilot, selection)
        rate = r.win_rate_a()
        step = self.counters["global_step"]
        self.writer.add_scalar("eval/win_rate", rate, step)
        self.writer.add_scalar("eval/draw_rate", r.draws / r.n, step)
        self.writer.add_scalar("eval/wall_minutes", self.counters["wall_seconds"] / 60, step)
        c = self.counters
        incumbent = self._incumbent()
        if incumbent is None or rate > c["best_eval"]:
            # The highest of many noisy evaluations is mostly luck, and so was best.pt while it
            # was the highest confirmed figure: a figure that only ever went up. Instead the
            # challenger and best.pt replay the same fresh games, the challenger must win more of
            # them, and best.pt's figure pools every replay it survives, so it settles on what
            # best.pt is worth (README, Performance: DQN's best.pt against medium).
            challenger = play(pilot, confirmation).wins_a
            self.writer.add_scalar("eval/confirmed_win_rate", challenger / games, step)
            defended = play(incumbent, confirmation).wins_a if incumbent is not None else -1
            if challenger > defended:
                self._best_pilot = pilot
                c["best_eval"], c["best_eval_games"] = challenger / games, games
                self.save("best.pt")
            else:
                n = c["best_eval_games"]
                c["best_eval"] = (c["best_eval"] * n + defended) / (n + games)
                c["best_eval_games"] = n + games
                figure = {"best_eval": c["best_eval"], "best_eval_games": c["best_eval_games"]}
                rewrite_metadata(self.run_dir / "best.pt",
                                 lambda meta: {**meta, "counters": {**meta["counters"], **figure}})
            self.writer.add_scalar("eval/best_win_rate", c["best_eval"], step)
        return rate

    def _incumbent(self) -> AgentPilot | None:
        """The player saved as best.pt, loaded from the file after a resume."""
        if self._best_pilot is None and self.counters["best_eval"] >= 0:
            path = self.run_dir / "best.pt"
            if not path.exists():
                return None
            # Building the network draws initial weights from torch's generator, which the
            # learner samples from: leave its stream as it was.
            with torch.random.fork_rng(devices=[]):
                agent, _ = load_agent(path, self.device)
            self._best_pilot = AgentPilot(agent, "best", deterministic=True)
        return self._best_pilot

    def _progress(self) -> float:
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
        if self.counters["global_step"] >= t.total_timesteps:
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
        eval_text = ""
        if c["updates"] % t.eval_interval == 0:
            eval_text = f"eval vs {t.eval_opponent} {self.evaluate_now():.0%}"
        if c["updates"] % t.save_interval == 0:
            self.save("latest.pt")
        if c["updates"] % (t.save_interval * 10) == 0:
            self.save(f"ckpt_{c['updates']:06d}.pt")
        mix = ", ".join(f"{k} {v:.0%}" for k, v in sorted(self.league.mix().items()))
        win = np.mean(self.recent_wins) if self.recent_wins else 0.0
        self.progress.show(
            f"upd {c['updates']} | steps {c['global_step']:,} | episodes {c['episodes']:,} | "
            f"{sps:,.0f} steps/s | win {win:.0%} | stage {self.league.stage_spec} | {eval_text}"
            f" | vs {mix}", milestone=bool(eval_text))

    def _draw(self) -> None:
        if not self.render:
            return
        if not hasattr(self, "_renderer"):
            from .rendering import Renderer

            self._renderer = Renderer(self.cfg.game, 512, "human", "Spacewar! AI: training")
            self._last_draw = 0.0
        # Draw at most at the game's fps and never wait: the other games must not slow down.
        now = time.time()
        if now - self._last_draw >= 1.0 / self.cfg.game.fps:
            self._last_draw = now
            self._renderer.draw(self.env.batch, 0, wait=False)

    # --- the loops ----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self._open_writer()
        # Wall-clock time of the whole run (evaluations and saves included), across resumes.
        self._wall_base = self.counters["wall_seconds"]
        self._t_start = time.time()
        try:
            if self.cfg.train.algorithm == "ppo":
                self._run_ppo()
            else:
                self._run_dqn()
            if self.counters["updates"] % self.cfg.train.eval_interval:
                # Otherwise the final network, which had no evaluation of its own, could never
                # become best.pt (DQN's default run did on seed 4 of five; README).
                self.evaluate_now()
            self.save("latest.pt")
        finally:
            self.writer.close()
            if hasattr(self, "_renderer"):
                self._renderer.close()
        self.progress.show(f"done: {self.counters['updates']} updates, "
                           f"{self.counters['global_step']:,} steps, "
                           f"{self.counters['episodes']:,} episodes -> {self.run_dir}", final=True)
        summary = {"run_dir": str(self.run_dir), "log_dir": str(self.log_dir), **self.counters}
        model = self.opponent_model
        if model is not None and model.decisions:
            summary["opponent_model"] = {"path": str(self.run_dir / OPPONENT_MODEL_FILE),
                                         "of": model.spec, "accuracy": model.accuracy}
        return summary

    def _run_ppo(self) -> None:
        agent, env, league = self.agent, self.env, self.league
        gamma = self.cfg.ppo.gamma
        n = env.num_envs
        actions = np.zeros((n, 2), dtype=np.int64)
        obs = self._reset_games()
        while not self._done():
            t0 = time.time()
            for _ in range(self.cfg.ppo.n_steps):
                actions[:, 0] = agent.select_action(obs[:, 0])
                if self.guide is not None:
                    actions[:, 0] = self.guide.mix(obs[:, 0], actions[:, 0])
                actions[:, 1] = league.act(obs[:, 1])
                self._watch_opponent(obs, actions)
                next_obs, rewards, term, trunc, info = env.step_both(actions)
                reward = rewards[:, 0].astype(np.float32)
                if trunc.any():
                    # A timeout is not the end of the world: bootstrap from the last state.
                    rows = np.flatnonzero(trunc)
                    # Values are in scaled reward units; the reward is scaled when stored.
                    reward[rows] += (gamma * agent.value_of(info["final_obs"][rows, 0])
                                     / self.cfg.ppo.reward_scale)
                done = term | trunc
                agent.store_transition(reward, done, action=actions[:, 0])
                self.counters["global_step"] += n
                if done.any():
                    self._finished(info, done)
                obs = next_obs
                self._draw()
            losses = agent.update(next_obs=obs[:, 0], progress=self._progress())
            self._fit_opponent_model()
            dt = time.time() - t0
            self._after_update(losses, self.cfg.ppo.n_steps * n / dt)

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
                agent.set_progress(self._progress())
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
                agent.store_transition(obs[:, 0], actions[:, 0], rewards[:, 0], stored_next, term,
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


WARM_START_OPPONENTS = ("heuristic:hard", "heuristic:medium", "heuristic:easy", "idle", "random")


def teacher_games(teacher: str, config: GameConfig, decisions: int, seed: int, on_step) -> None:
    """The teacher (a pilot spec) flies ship 0 for about `decisions` decisions against a mix of
    opponents (itself, the scripted ladder, random), so the data covers winning and losing
    positions. `on_step(obs, action, reward, next_obs, terminated, done)` gets ship 0's view of
    each vector step (next_obs holds the final observation of games that just ended; at each
    opponent's last step every game counts as done, cut off)."""
    n = 256
    steps = max(1, decisions // (n * len(WARM_START_OPPONENTS)))
    for k, spec in enumerate(WARM_START_OPPONENTS):
        env = SpacewarVectorEnv(n, config, opponent=None)
        obs, _ = env.reset_both(seed=seed * 1000 + k * 100_000)
        pilots = [resolve_player(teacher, config, seed), resolve_player(spec, config, seed + 1)]
        for p in pilots:
            p.reset(np.ones(n, dtype=bool), env.batch.rng.copy())
        actions = np.zeros((n, 2), dtype=np.int64)
        for step in range(steps):
            actions[:, 0] = pilots[0].act(obs[:, 0])
            actions[:, 1] = pilots[1].act(obs[:, 1])
            next_obs, rewards, term, trunc, info = env.step_both(actions)
            done = term | trunc
            after = next_obs[:, 0].copy()
            if done.any():
                after[done] = info["final_obs"][done, 0]
            # The last step cuts every game off (a truncation): nothing may run on into the next
            # opponent's games.
            cut = np.ones(n, dtype=bool) if step == steps - 1 else done
            on_step(obs[:, 0].copy(), actions[:, 0].copy(), rewards[:, 0], after, term, cut)
            obs = next_obs
            if done.any():
                for p in pilots:
                    p.reset(done, env.batch.rng.copy())


def behaviour_clone(agent, teacher: str, config: GameConfig, decisions: int = 500_000,
                    epochs: int = 6, seed: int = 0, batch_size: int = 1024, lr: float = 1e-3,
                    quiet: bool = True) -> dict[str, float]:
    """Warm start: the PPO actor imitates `teacher` (a pilot spec) before RL.

    The actor is fitted by cross-entropy on the teacher's actions (`teacher_games`) under the
    action mask, and the observation statistics are set from the same data. Returns the final
    epoch's loss and accuracy (agreement with the teacher)."""
    xs, ys = [], []
    teacher_games(teacher, config, decisions, seed,
                  lambda obs, action, *_: (xs.append(obs), ys.append(action)))
    report = None if quiet else (
        lambda epoch, loss, agreement: print(f"warm start from {teacher}: epoch {epoch + 1}/"
                                             f"{epochs}, loss {loss:.3f}, agreement "
                                             f"{agreement:.1%}"))
    actions = np.concatenate(ys)
    fitted = agent.imitate(np.concatenate(xs), actions,
                           torch.optim.Adam(agent.net.actor.parameters(), lr=lr), batch_size,
                           epochs, torch.Generator().manual_seed(seed), on_epoch=report)
    return {"loss": fitted["loss"], "accuracy": fitted["accuracy"], "decisions": len(actions)}


def demonstration_start(agent, teacher: str, config: GameConfig, decisions: int = 200_000,
                        epochs: int = 6, seed: int = 0, margin: float = 0.8,
                        quiet: bool = True) -> dict[str, float]:
    """Warm start for DQN, after DQfD (Hester et al. 2018): the teacher's games go into the
    replay buffer as ordinary n-step transitions (at most a buffer's worth), then the Q-network
    is pre-trained on them with the TD loss plus a large-margin loss (the teacher's action must
    beat every other by `margin`), `epochs` passes over the data. RL then goes on with the
    demonstrations in the buffer until new games overwrite them. Returns the greedy policy's
    agreement with the teacher on the stored positions and the final losses."""
    decisions = min(decisions, agent.config.buffer_size)
    teacher_games(teacher, config, decisions, seed,
                  lambda obs, action, reward, nxt, term, done:
                  agent.store_transition(obs, action, reward, nxt, term, done=done))
    size = len(agent)
    steps = max(1, epochs * size // agent.config.batch_size // agent.config.gradient_steps)
    losses: dict[str, float] = {}
    for k in range(steps):
        losses = agent.update(margin=margin)
        if not quiet and (k + 1) % max(1, steps // epochs) == 0:
            print(f"warm start from {teacher}: {k + 1}/{steps} updates, q-loss "
                  f"{losses['q_loss']:.3f}, margin loss {losses['margin_loss']:.3f}")
    idx = np.arange(0, size, max(1, size // 20_000))
    greedy = agent.stored_greedy(idx)
    accuracy = float(np.mean(greedy == agent.buf_actions[idx]))
    return {"accuracy": accuracy, "decisions": size, **losses}


def _np_state_json(state) -> list:
    name, keys, pos, has_gauss, cached = state
    return [name, keys.tolist(), int(pos), int(has_gauss), float(cached)]


def evaluate(checkpoint: str, opponent: str = "heuristic:hard", episodes: int = 200,
             seed: int = 0, config: GameConfig | None = None, deterministic: bool = True,
             render: bool = False, recorder=None, keep_actions: int = 0) -> dict[str, Any]:
    """Play `episodes` games (sides swapped) and print the outcome with a 95% interval.
    With render (or a video recorder) the games are played one by one and drawn instead."""
    from .arena import watch_games

    config = config if config is not None else GameConfig()
    player = resolve_player(checkpoint, config, seed, deterministic)
    opp = resolve_player(opponent, config, seed + 1)
    if render or recorder is not None:
        for k, info in enumerate(watch_games(player, opp, episodes, seed, config,
                                             recorder=recorder)):
            print(f"game {k + 1}: real winner {info['real_winner']}, "
                  f"deaths {info['ship_0_death_cause']} / {info['ship_1_death_cause']}")
        return {}
    games = episodes + episodes % 2
    r = play_match(player, opp, games, seed, config, keep_actions=keep_actions)
    lo, hi = wilson_interval(r.wins_a, r.n)
    losses = r.wins_b
    print(f"{player.name} vs {opp.name}: {r.n} games, sides swapped")
    print(f"  wins {r.wins_a} ({r.win_rate_a():.1%}, 95% CI {lo:.1%}-{hi:.1%}), "
          f"losses {losses}, draws {r.draws}")
    for who, name in (("a", player.name), ("b", opp.name)):
        causes = ", ".join(f"{k.lower()} {v}" for k, v in r.causes(who).items())
        print(f"  deaths of {name}: {causes}; accuracy {r.accuracy(who):.1%}")
    print(f"  mean game length {r.mean_frames():.0f} frames")
    return {"wins": r.wins_a, "losses": losses, "draws": r.draws, "games": r.n,
            "win_rate": r.win_rate_a(), "ci": (lo, hi), "causes_a": r.causes("a"),
            "causes_b": r.causes("b"), "mean_frames": r.mean_frames(), "match": r,
            "players": [(checkpoint, player), (opponent, opp)]}


def champion_paths(checkpoint_dir: str | Path, exclude: str | Path | None = None,
                   top: int = 3, ratings_file: str | Path | None = None) -> list[str]:
    """The strongest past models: the top-rated checkpoints of the ratings file when there is one
    (`<checkpoint_dir>/ratings.json` by default), then each run's `best.pt` under checkpoint_dir,
    ranked by the evaluation win rate recorded in it."""
    from .players import spec_path
    from .tournament import RatingsFile

    def same(p) -> bool:
        return exclude is not None and Path(p).resolve() == Path(exclude).resolve()

    chosen: list[str] = []
    rpath = Path(ratings_file) if ratings_file else Path(checkpoint_dir) / "ratings.json"
    if rpath.is_file():
        try:
            for player in RatingsFile(rpath).top(len(RatingsFile(rpath).data["players"])):
                path = spec_path(player.get("spec", ""))
                if path is not None and path.is_file() and not same(path) \
                        and str(path) not in chosen:
                    chosen.append(str(path))
        except ValueError:
            pass  # an unreadable ratings file: fall back to the runs' own evaluations
    ranked = []
    for path in Path(checkpoint_dir).glob("*/best.pt"):
        if same(path) or str(path) in chosen:
            continue
        try:
            meta = load_checkpoint(path)["metadata"]
        except CheckpointError:
            continue
        ranked.append((meta.get("counters", {}).get("best_eval", 0.0), str(path)))
    ranked.sort(reverse=True)
    return (chosen + [p for _, p in ranked])[:top]
