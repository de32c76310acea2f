"""Warm starts: learn from a pilot before reinforcement learning (behaviour cloning on games it
plays for the purpose: offline.learners.behaviour_clone; from a recorded dataset: --algorithm bc).

A teacher (any pilot spec, e.g. `heuristic:hard`) flies ship 0 against the scripted ladder and
random (`teacher_games`), and the learner learns from its decisions:
- PPO (`behaviour_clone`): the actor imitates the teacher by masked cross-entropy and the
  observation statistics are set from the same data; the critic is left to PPO.
- DQN (`demonstration_start`, after DQfD): the teacher's games go into the replay buffer as
  ordinary n-step transitions and the Q-network pre-trains on them with the TD loss plus a
  large-margin loss; the run then explores at its final epsilon.
"""

from __future__ import annotations

import numpy as np

from ...config import GameConfig
from ...game.environment import SpacewarVectorEnv
from ...pilots.build import make_pilot
from ..offline import learners

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
        pilots = [make_pilot(teacher, config, seed), make_pilot(spec, config, seed + 1)]
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
    return learners.behaviour_clone(agent, np.concatenate(xs), np.concatenate(ys), epochs,
                                    seed, batch_size, lr, report)


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
                  f"{losses['td_loss']:.3f}, margin loss {losses['margin_loss']:.3f}")
    idx = np.arange(0, size, max(1, size // 20_000))
    greedy = agent.stored_greedy(idx)
    accuracy = float(np.mean(greedy == agent.replay.actions[idx]))
    return {"accuracy": accuracy, "decisions": size, **losses}
