"""Rollouts: the learner's games stepped for one PPO update, here or on rollout workers.

`play_steps` is the loop every PPO rollout runs, whoever runs it: the learner flies ship 0, the
league ship 1, timeouts are bootstrapped, each step goes into the rollout buffer, and what was
played comes back as data (`Played`).

`RolloutWorkers` splits the run's games among N workers, wherever util.workers runs them:
child processes ("local"), Ray actors ("ray"), or objects in the learner's process ("inline",
for tests). Each update the learner publishes its weights and league; each worker plays
`n_steps` with them and returns `buffer.arrays()` and its `Played`; the learner records the
games and joins the rollouts in worker order. With `async_rollouts` they play the next rollout
while the learner updates (a policy lag of one update). Worker k is seeded by (seed, k, the
update it starts at), so the same seed and worker count give the same weights wherever it
runs; a worker that dies is replaced and plays the lost rollout again
(docs/scaling.md)."""

from __future__ import annotations

import collections
import dataclasses
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from ...config import RunConfig
from ...game.environment import SpacewarVectorEnv
from ...game.shaping import potential, shaped
from ...util.workers import Where, WorkerLost, Workers, received, this_process
from ..run_log import EPISODE_CAUSES, GAME_FIGURES
from .league import League

LOST_WORKER_RETRIES = 3  # new workers tried for one lost rollout before the run gives up


def learner_rewards(scale: float, constants: dict, obs, next_obs, info, term, reward,
                    gamma: float) -> np.ndarray:
    """The learner's rewards, with potential-based shaping when `scale` ([train] shaping) > 0."""
    if not scale:
        return reward.astype(np.float32)
    after = next_obs[:, 0].copy()
    if "final_obs" in info:
        done = info["_final_obs"]
        after[done] = info["final_obs"][done, 0]
    return shaped(reward, potential(obs[:, 0], scale, constants),
                  potential(after, scale, constants), term, gamma).astype(np.float32)


def finished_games(info: dict, done: np.ndarray, sums: collections.Counter):
    """The games that ended this step: their rows, the learner's score in each (1 win, 0.5 draw,
    0 loss) and whether it won by a hit; their figures are added to `sums` (written once per
    update as means, PufferLib's habit: a scalar per game cost a fifth of a run's time in
    TensorBoard's queue)."""
    rows = np.flatnonzero(done)
    info = info["final_info"]  # the finished games' statistics (same-step autoreset)
    real = info["real_winner"][rows]
    winner = info["winner"][rows]
    score = np.where(real == 0, 1.0, np.where((winner == -1) | (real == -1) & (winner == 0),
                                              0.5, 0.0))
    score = np.where(real == 1, 0.0, score)
    sums["count"] += len(rows)
    sums["return"] += float(info["episode_return"][rows, 0].sum())
    sums["length"] += float(info["episode_length"][rows].sum())
    causes = info["death_cause"][rows, 0]
    for c in EPISODE_CAUSES:
        sums[c.name.lower()] += float(np.count_nonzero(causes == c))
    for key in GAME_FIGURES:
        sums[key] += float(info[key][rows, 0].sum())
    return rows, score, (real == 0).astype(float)


class Played:
    """What a stretch of play leaves for the learner's records (Trainer.take): the finished
    games' opponents (`keys`), the learner's score in each (1 win, 0.5 draw, 0 loss) and
    whether it won by a hit, their figures summed (finished_games), the decisions played, and,
    where a pilot is `watch`ed for the opponent model, its moves at each of `steps` steps."""

    def __init__(self, steps: int, games: int, obs_dim: int, watch: str | None = None):
        self.keys: list[str] = []
        self._scores: list[np.ndarray] = []
        self._wins: list[np.ndarray] = []
        self.sums: collections.Counter = collections.Counter()
        self.decisions = 0
        self.watch = watch
        self.watched = None if watch is None else {
            "obs": np.zeros((steps, games, obs_dim), np.float32),
            "actions": np.zeros((steps, games), np.int64), "rows": np.zeros((steps, games), bool)}

    @property
    def scores(self) -> np.ndarray:
        return np.concatenate(self._scores) if self._scores else np.zeros(0)

    @property
    def wins(self) -> np.ndarray:
        return np.concatenate(self._wins) if self._wins else np.zeros(0)

    def see(self, t: int, obs: np.ndarray, actions: np.ndarray, league: League) -> None:
        """Step `t`'s moves of ship 1, kept where the watched pilot flies it."""
        if self.watched is not None:
            self.watched["obs"][t] = obs[:, 1]
            self.watched["actions"][t] = actions[:, 1]
            self.watched["rows"][t] = league.assignment == self.watch

    def end_games(self, info: dict, done: np.ndarray, league: League,
                  env: SpacewarVectorEnv) -> None:
        """The games that ended this step: kept, and given their next opponents."""
        rows, score, won = finished_games(info, done, self.sums)
        self.keys.extend(league.end_games(rows, score, done, env.batch.rng.copy()))
        self._scores.append(score)
        self._wins.append(won)


def play_steps(agent, league: League, env: SpacewarVectorEnv, obs: np.ndarray, buffer,
               shaping: float, watch: str | None = None, guide=None, screen=None,
               stop=None) -> tuple[np.ndarray, Played]:
    """Fill `buffer` (agents/ppo.RolloutBuffer) with the next steps of every game: the learner
    flies ship 0 (`guide` may replace some of its actions), the league ship 1; rewards are
    shaped by `shaping` ([train] shaping) and timeouts bootstrapped from the critic. Returns the
    observations after them and what was played (Played). `screen` (Trainer's window) is shown
    each step, and `stop` (StopAtSafePoint) checked."""
    gamma, scale = agent.config.gamma, agent.config.reward_scale
    steps, n = len(buffer.actions), env.num_envs
    played = Played(steps, n, obs.shape[2], watch)
    actions = np.zeros((n, 2), dtype=np.int64)
    for t in range(steps):
        decision = agent.decide(obs[:, 0])
        actions[:, 0] = decision.action
        if guide is not None:
            actions[:, 0] = guide.mix(obs[:, 0], actions[:, 0])
        actions[:, 1] = league.act(obs[:, 1])
        played.see(t, obs, actions, league)
        next_obs, rewards, term, trunc, info = env.step_both(actions)
        reward = learner_rewards(shaping, agent.view_constants, obs, next_obs, info, term,
                                 rewards[:, 0], gamma)
        if trunc.any():
            # A timeout is not the end of the world: bootstrap from the last state.
            rows = np.flatnonzero(trunc)
            # Values are in scaled reward units; the reward is scaled when stored.
            reward[rows] += gamma * agent.value_of(info["final_obs"][rows, 0]) / scale
        done = term | trunc
        buffer.add(decision, actions[:, 0], np.asarray(reward, dtype=np.float32) * scale, done)
        if done.any():
            played.end_games(info, done, league, env)
        played.decisions += n
        obs = next_obs
        if screen is not None:
            screen.show(env.batch)
        if stop is not None:
            stop.check()
    return obs, played


def _seed(*parts: int) -> int:
    """One 31-bit seed from several integers (games take seed + i as 64-bit integers)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0] >> 1)


def _on_cpu(state):
    """A state dict (nested dicts of tensors and plain values) with every tensor on the CPU."""
    if isinstance(state, dict):
        return {k: _on_cpu(v) for k, v in state.items()}
    return state.cpu() if isinstance(state, torch.Tensor) else state


class RolloutWorker:
    """A slice of a PPO run's games with its own copy of the policy and of the league (module
    docstring). `play` returns one update's rollout of them."""

    def __init__(self, cfg: RunConfig, index: int, num_games: int, start_update: int,
                 watch: str | None = None, own_process: bool = False):
        from ...agents.base import learner_dtype
        from ...agents.saved import make_agent
        from ...util.threads import use_torch_threads

        if own_process:
            use_torch_threads(1)  # workers share their node's cores with each other
        seed = _seed(cfg.train.seed, index, start_update)
        self.cfg, self.index, self.watch_spec = cfg, index, watch
        self.shaping = cfg.train.shaping
        # Networks built here must not move the generator of a learner in the same process.
        with torch.random.fork_rng(devices=[]):
            # It plays in the precision the learner's passes run in here (PPOAgent.decide).
            self.agent = make_agent("ppo", cfg.game.obs_dim, cfg.game.num_actions, cfg.ppo,
                                    "cpu", game=cfg.game,
                                    learn_dtype=learner_dtype(cfg.train.precision, "cpu"))
        self.buffer = self.agent.new_buffer(num_games)
        self.env = SpacewarVectorEnv(num_games, cfg.game, cfg.reward, opponent=None,
                                     count_dodges=True)
        self.league = League(cfg.league, cfg.game, num_games, seed)
        self.obs, _ = self.env.reset_both(seed=seed)
        self.league.reset_pilots(np.ones(num_games, bool), self.env.batch.rng.copy())
        self._drawn = False  # the first games' opponents are drawn once the league is known
        self._files: dict[str, Path] = {}
        self.node = "the learner's process"
        if own_process:
            self.node = this_process()

    def _local_files(self, files: dict[str, tuple]) -> dict[str, Path]:
        """The pool's files on this machine: the learner's own when it is here, else copies
        from Ray's object store (util.workers.received)."""
        for key, shipped in files.items():
            if key not in self._files:
                self._files[key] = received(shipped)
        return self._files

    def play(self, update: int, weights: dict[str, Any], league_view: dict[str, Any],
             files: dict[str, tuple]) -> dict[str, Any]:
        """`n_steps` of every game with `weights`, the league as `league_view` has it."""
        started = time.perf_counter()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(_seed(self.cfg.train.seed, self.index, update))
            self.agent.load_state_dict(weights)
            self.league.set_learner(self.agent)
            self.league.follow(league_view, self._local_files(files))
            if not self._drawn:
                self.league.assign()
                self._drawn = True
            self.obs, played = play_steps(self.agent, self.league, self.env, self.obs,
                                          self.buffer, self.shaping, watch=self.watch_spec)
        return {"update": update, "worker": self.index, "node": self.node,
                "rollout": self.buffer.arrays(), "next_obs": self.obs[:, 0].copy(),
                "played": played, "seconds": time.perf_counter() - started}


class WorkersLost(RuntimeError):
    """The rollout workers could not be kept running: the run stops, saved, in one line."""


@dataclasses.dataclass
class Pending:
    """Rollouts asked for and not yet taken: the update whose random streams they play, the
    learner's update count when their weights were sent, what the workers were asked (what
    Workers.answer takes back) and with what, to ask again of a worker that replaces a lost
    one."""

    update: int
    version: int
    asked: list
    args: tuple


class RolloutWorkers:
    """The learner's side: N workers, asked for one update's rollouts at a time (`start`, then
    `finish`, which lets them play the next rollout while the learner updates), replaced when
    their process dies. Where they run is `where` (util.workers): a child process each of this
    machine ("local"), Ray actors, or objects in the learner's process ("inline", played one
    after another: the same weights, at no parallel speed, for tests)."""

    def __init__(self, cfg: RunConfig, where: Where, say: Callable[[str], None],
                 watch: str | None = None):
        t = cfg.train
        self.pool = Workers(where, RolloutWorker, what="rollout worker")
        self.cfg, self.say, self.watch = cfg, say, watch
        self.sizes = [len(a) for a in np.array_split(np.arange(t.num_envs), t.rollout_workers)]
        self._files: dict[str, tuple] = {}  # pool key -> Workers.ship's (path, sha256, ref)
        self._nodes: dict[int, str] = {}
        self.workers: list = []

    def open(self, update: int) -> None:
        """Start the workers, their games seeded by `update`, unless they run: at the start of
        each of the trainer's runs (run again after `close` in the iterative strategy loop's
        rounds), so a Trainer that is built and never run starts no process."""
        if not self.workers:
            self._nodes.clear()
            self.workers = [self._start(k, update) for k in range(len(self.sizes))]

    def _start(self, index: int, update: int):
        return self.pool.start(self.cfg, index, self.sizes[index], update, self.watch,
                               own_process=self.pool.own_process)

    def where(self) -> str:
        return self.pool.where()

    def _pool_files(self, league: League) -> dict[str, tuple]:
        """Every pool file the workers may need, each shipped once (util.workers)."""
        for key in league.snapshot_keys + league.fixed_keys:
            path = league.files.get(key)
            if key not in self._files and path:
                self._files[key] = self.pool.ship(path)
        pool = set(league.snapshot_keys + league.fixed_keys)
        return {k: v for k, v in self._files.items() if k in pool}

    def start(self, agent, league: League, update: int, version: int) -> Pending:
        """Ask every worker for a rollout with `agent`'s weights as they are now (the learner's
        `version`, its update count), the games' random streams those of `update`; workers in
        processes play while the learner goes on (`finish` waits for them), inline ones at
        once."""
        # On the CPU: a learner on a GPU sends weights that workers without one can load.
        args = (_on_cpu(agent.play_state()), league.view(), self._pool_files(league))
        return Pending(update, version, self.pool.ask_all(self.workers, "play", update, *args),
                       args)

    def finish(self, pending: Pending) -> list[dict[str, Any]]:
        """The rollouts `start` asked for, in worker order."""
        parts = [self._get(k, pending) for k in range(len(self.workers))]
        for part in parts:
            part["version"] = pending.version
            if self._nodes.get(part["worker"]) != part["node"]:
                self._nodes[part["worker"]] = part["node"]
                self.say(f"rollout worker {part['worker']} ({self.sizes[part['worker']]} games) "
                         f"runs on {part['node']}")
        return parts

    def _get(self, index: int, pending: Pending) -> dict[str, Any]:
        """A worker's rollout; a worker whose process died is replaced and its rollout played
        again by the new one."""
        asked, lost = pending.asked[index], 0
        while True:
            try:
                return self.pool.answer(self.workers[index], asked)
            except WorkerLost as exc:
                lost += 1
                if lost > LOST_WORKER_RETRIES:
                    raise WorkersLost(f"rollout worker {index} was lost {lost} times in a row "
                                      f"at update {pending.update}; {self.pool.host} cannot "
                                      "keep one running") from exc
                self.say(f"rollout worker {index} was lost ({exc or 'its process ended'}); a "
                         f"new one plays its games again from update {pending.update}")
                self.pool.stop(self.workers[index])
                self.workers[index] = self._start(index, pending.update)
                self._nodes.pop(index, None)
                asked = self.pool.ask(self.workers[index], "play", pending.update,
                                      *pending.args)

    def close(self) -> None:
        for w in self.workers:
            self.pool.stop(w)
        self.workers = []
