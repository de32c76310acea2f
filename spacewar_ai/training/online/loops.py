"""The training loops, each read top to bottom as CleanRL's ppo.py reads: `on_policy` (PPO, the
learner playing), `on_policy_on_workers` and `on_policy_async` (rollout workers in step or
playing ahead), and `off_policy` (DQN, from a replay). The agent's kind (agents/base.py) picks
the loop, and each calls only what that kind declares.

One PPO update is read here and in agents/ppo.py: the loop fills a rollout buffer
(`play_steps`), hands what was played to the run (`take`) and calls `agent.update(buffer, ...)`,
which runs `ppo_update`. `run` is the Trainer, as `Run` lists what the loops use of it."""

from __future__ import annotations

import collections
import time
from typing import Protocol

import numpy as np

from ...agents.base import OffPolicyAgent, OnPolicyAgent
from ...agents.ppo import RolloutBuffer
from ...config import RunConfig
from ...game.engine import GameBatch
from ...game.environment import SpacewarVectorEnv
from ..budget import Budget, Counters
from ..run_log import RunLog
from .league import League
from .rollouts import Played, RolloutWorkers, learner_rewards, play_steps

# Vector steps of an off-policy run between two "updates": when it logs, evaluates and saves.
OFF_POLICY_STEPS = 64


class SafePoint(Protocol):
    """Where Ctrl-C takes effect (trainer.StopAtSafePoint)."""

    def check(self) -> None: ...  # raises KeyboardInterrupt once Ctrl-C was pressed


class Screen(Protocol):
    """The learner's first game drawn (trainer.TrainingWindow, with --render)."""

    def show(self, batch: GameBatch) -> None: ...


class Guide(Protocol):
    """Exploration guided by a strategy (llm/strategies.py, a layer above training)."""

    def mix(self, obs: np.ndarray, actions: np.ndarray, rate: float = 1.0) -> np.ndarray: ...


class Run(Protocol):
    """What the loops use of a run (trainer.Trainer)."""

    cfg: RunConfig
    agent: OnPolicyAgent | OffPolicyAgent  # the loop is chosen by which
    env: SpacewarVectorEnv | None  # the learner's games; None when workers hold them
    league: League
    workers: RolloutWorkers | None
    budget: Budget
    counters: Counters
    interrupt: SafePoint
    guide: Guide | None
    watch: str | None  # the pilot the opponent model learns, or None
    screen: Screen | None
    log: RunLog

    def reset_games(self) -> np.ndarray: ...

    def take(self, played: Played) -> None: ...

    def fit_opponent_model(self) -> None: ...

    def after_update(self, losses: dict[str, float], sps: float) -> None: ...


def on_policy(run: Run) -> None:
    """Play a rollout of every game, learn from it; again until the budget ends."""
    agent, n = run.agent, run.env.num_envs
    buffer = agent.new_buffer(n)
    obs = run.reset_games()
    while not run.budget.done(run.counters):
        t0 = time.time()
        # 1. Every game plays rollout_steps decisions into the buffer: the learner acts, the
        # league answers, finished games draw their next opponents.
        obs, played = play_steps(agent, run.league, run.env, obs, buffer, run.cfg.train.shaping,
                                 watch=run.watch, guide=run.guide, screen=run.screen,
                                 stop=run.interrupt)
        run.take(played)
        # 2. Learn from that rollout, and the opponent model from its pilot's moves.
        losses = agent.update(buffer, obs[:, 0], run.budget.fraction(run.counters, clock=False))
        run.fit_opponent_model()
        # 3. Snapshot, log, evaluate, save.
        run.after_update(losses, agent.rollout_steps * n / (time.time() - t0))


def on_policy_on_workers(run: Run) -> None:
    """on_policy with the games on rollout workers (rollouts.py): every update each worker
    plays its games with the current weights; the learner takes their rollouts in worker order
    as one rollout of all the games, and learns."""
    while not run.budget.done(run.counters):
        t0 = time.time()
        updates = run.counters.updates
        parts = run.workers.finish(run.workers.start(run.agent, run.league, updates, updates))
        _take(run, parts)
        _learn(run, parts, t0)


def on_policy_async(run: Run) -> None:
    """on_policy_on_workers, playing ahead: while the learner updates on one rollout, the
    workers play the next with the weights from before that update, a policy lag of one update
    (IMPALA's and APPO's actors lag so). PPO's ratio is taken against the policy that played
    (the rollout's own log-probabilities, computed by the worker), so the lag is corrected as
    far as the clip allows; the first rollout has no lag."""
    agent, c = run.agent, run.counters
    pending = run.workers.start(agent, run.league, c.updates, c.updates)
    while not run.budget.done(c):
        t0 = time.time()
        parts = run.workers.finish(pending)
        _take(run, parts)
        # The next rollout's games are drawn from the league with this rollout's games in it;
        # it plays while _learn updates (its random streams those of the next update).
        if not run.budget.done(c):
            pending = run.workers.start(agent, run.league, c.updates + 1, c.updates)
        _learn(run, parts, t0)


def _take(run: Run, parts: list) -> None:
    """The workers' finished games recorded in the learner's league (theirs only draw), and
    what they played handed to the run as if played here."""
    run.interrupt.check()
    for part in parts:
        played = part["played"]
        run.league.record(played.keys, played.scores)
        run.take(played)


def _learn(run: Run, parts: list, t0: float) -> None:
    """The learner's half of an update on workers' rollouts: learn, log, end the update."""
    agent, c = run.agent, run.counters
    buffer = RolloutBuffer.joined([part["rollout"] for part in parts], agent.device)
    t1 = time.time()
    losses = agent.update(buffer, np.concatenate([part["next_obs"] for part in parts]),
                          run.budget.fraction(c, clock=False))
    run.fit_opponent_model()
    t2 = time.time()
    run.log.workers(c.global_step, parts, c.updates, t1 - t0, t2 - t1)
    run.after_update(losses, agent.rollout_steps * run.cfg.train.num_envs / (t2 - t0))


def off_policy(run: Run) -> None:
    """Step every game once, store the steps, learn from the replay when the agent is ready;
    OFF_POLICY_STEPS such steps make an update."""
    agent, env, league = run.agent, run.env, run.league
    n, gamma = env.num_envs, agent.config.gamma
    actions = np.zeros((n, 2), dtype=np.int64)
    obs = run.reset_games()
    steps = 0
    while not run.budget.done(run.counters):
        t0 = time.time()
        losses: dict[str, list[float]] = collections.defaultdict(list)
        for _ in range(OFF_POLICY_STEPS):
            run.interrupt.check()
            # 1. The learner acts (exploring as far through the budget as the run is), the
            # league answers; the step's play is counted at its end, before the next step's
            # exploration reads the budget.
            agent.set_progress(run.budget.fraction(run.counters, clock=False))
            actions[:, 0] = agent.select_action(obs[:, 0])
            if run.guide is not None:
                # Only exploration is guided: epsilon x share of the rows.
                actions[:, 0] = run.guide.mix(obs[:, 0], actions[:, 0], agent.epsilon)
            actions[:, 1] = league.act(obs[:, 1])
            played = Played(1, n, obs.shape[2], run.watch)
            played.see(0, obs, actions, league)
            # 2. Step; a finished game's last observation is the one stored, not its restart.
            next_obs, rewards, term, trunc, info = env.step_both(actions)
            done = term | trunc
            stored_next = next_obs[:, 0].copy()
            if done.any():
                stored_next[done] = info["final_obs"][done, 0]
            reward = learner_rewards(run.cfg.train.shaping, agent.view_constants, obs, next_obs,
                                     info, term, rewards[:, 0], gamma)
            agent.store_transition(obs[:, 0], actions[:, 0], reward, stored_next, term,
                                   done=done)
            steps += 1
            # 3. Learn from the replay.
            if agent.ready(steps):
                for k, v in agent.update().items():
                    losses[k].append(v)
            if done.any():
                played.end_games(info, done, league, env)
            played.decisions = n
            run.take(played)
            obs = next_obs
            if run.screen is not None:
                run.screen.show(env.batch)
        run.fit_opponent_model()
        mean = {k: float(np.mean(v)) for k, v in losses.items()}
        mean.setdefault("epsilon", float(agent.epsilon))
        # 4. Snapshot, log, evaluate, save.
        run.after_update(mean, OFF_POLICY_STEPS * n / (time.time() - t0))
