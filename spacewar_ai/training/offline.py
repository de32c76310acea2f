"""Learning from recorded games: behaviour cloning and conservative Q-learning (offline RL).

- `behaviour_clone`: a PPO actor imitates the actions of recorded decisions by masked
  cross-entropy, observation statistics set from the same data. The warm start
  (warm_start.py) is this on games it plays for the purpose; `--algorithm bc --dataset NAME` is
  this on a Minari dataset (datasets.py). Its ceiling is the teacher's skill.
- `train_cql`: a dueling double DQN learned from a dataset alone, with conservative Q-learning's
  regulariser (agents.cql_loss): Q-values of actions the data never took are pushed down, so the
  greedy policy stays where the data says something, and can still do better than the pilots
  that played, since it learns what their actions were worth. Masks are honoured in the policy
  (masked argmax), in the targets (masked argmax over the next state's valid actions) and in the
  regulariser (logsumexp over valid actions only). `--algorithm cql --dataset NAME`.

Both save ordinary checkpoints (a PPO model for BC, a DQN model for CQL) under
checkpoints/<run>/ (latest.pt, and best.pt by evaluation against `eval_opponent`), log to
TensorBoard, and the PPO trainer can start from either (`--init-from`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..config import RunConfig
from .run_frame import RunFrame

OFFLINE_UPDATE = 100  # gradient steps per "update" for CQL's logs, evaluations and saves


def behaviour_clone(agent, obs: np.ndarray, actions: np.ndarray, epochs: int, seed: int = 0,
                    batch_size: int = 1024, lr: float = 1e-3, report=None) -> dict[str, float]:
    """Fit a PPO agent's actor to `actions` taken at raw observations `obs` (masked
    cross-entropy, shuffled passes); returns the last pass's loss and agreement."""
    fitted = agent.imitate(obs, actions, torch.optim.Adam(agent.net.actor.parameters(), lr=lr),
                           batch_size, epochs, torch.Generator().manual_seed(seed),
                           on_epoch=report)
    return {"loss": fitted["loss"], "accuracy": fitted["accuracy"], "decisions": len(actions)}


class _Run(RunFrame):
    """An offline run (run_frame.RunFrame) with its evaluations and saves."""

    def __init__(self, cfg: RunConfig, kind: str):
        from ..pilots.build import make_pilot

        t = cfg.train
        name = t.named(kind)
        super().__init__(cfg, name, Path(t.checkpoint_dir) / name)
        torch.manual_seed(t.seed)
        self.opponent = make_pilot(t.eval_opponent, cfg.game)
        # Before anything is written: a second live run on the same name is refused.
        self.hold(checkpoints=self.run_dir, logs=self.log_dir)
        self.best = -1.0
        self.evaluations = 0

    def evaluate(self, agent, step: int, counters: dict) -> float:
        """Greedy play against eval_opponent on starts of its own; best.pt keeps the best."""
        from ..pilots.build import AgentPilot
        from ..rating.match import play_match

        t = self.cfg.train
        games = t.eval_episodes + t.eval_episodes % 2
        r = play_match(AgentPilot(agent.play_copy(), "learner"), self.opponent, games,
                       seed=20_000 + self.evaluations * games, config=self.cfg.game,
                       reward_config=self.cfg.reward)
        self.evaluations += 1
        rate = r.win_rate_a()
        self.writer.add_scalar("eval/win_rate", rate, step)
        if rate > self.best:
            self.best = rate
            counters.update(best_eval=rate, best_eval_games=games)
            self.save(agent, "best.pt", counters)
        return rate

    def save(self, agent, name: str, counters: dict) -> Path:
        from ..agents.checkpoints import publish_best

        path = self.run_dir / name
        agent.save(path, {"run_name": self.name, "config": self.cfg.to_dict(),
                          "counters": dict(counters)})
        if name == "best.pt":
            publish_best(path, self.cfg.train.algorithm)
        return path


def train_bc(cfg: RunConfig, quiet: bool = False) -> dict:
    """--algorithm bc: a PPO actor cloned from the dataset's decisions (or one pilot's)."""
    from ..agents.ppo import PPOAgent
    from .datasets import arrays

    t = cfg.train
    obs, actions = arrays(t.dataset, t.dataset_pilot or None, cfg.game)
    run = _Run(cfg, "bc")
    agent = PPOAgent(cfg.game.obs_dim, cfg.game.num_actions, cfg.ppo, game=cfg.game)

    def report(epoch, loss, agreement):
        run.writer.add_scalar("losses/bc_loss", loss, epoch + 1)
        run.writer.add_scalar("charts/bc_agreement", agreement, epoch + 1)
        if not quiet:
            print(f"behaviour cloning from {t.dataset}: pass {epoch + 1}/{cfg.offline.bc_epochs}, loss "
                  f"{loss:.3f}, agreement {agreement:.1%}")

    fitted = behaviour_clone(agent, obs, actions, cfg.offline.bc_epochs, t.seed, report=report)
    counters = {"decisions": len(actions), "bc_agreement": fitted["accuracy"]}
    rate = run.evaluate(agent, cfg.offline.bc_epochs, counters)
    run.save(agent, "latest.pt", counters)
    run.close()
    print(f"done: behaviour cloning on {len(actions):,} decisions, agreement "
          f"{fitted['accuracy']:.1%}, {rate:.0%} against {t.eval_opponent} -> {run.run_dir}")
    return {"run_dir": str(run.run_dir), "log_dir": str(run.log_dir), "win_rate": rate, **fitted}


def train_cql(cfg: RunConfig, quiet: bool = False) -> dict:
    """--algorithm cql: conservative Q-learning on the dataset's n-step transitions."""
    import dataclasses

    from ..agents.dqn import DQNAgent
    from ..util.progress import Progress
    from .datasets import transitions

    t, c = cfg.train, cfg.dqn
    data = transitions(t.dataset, c.n_step, c.gamma, t.dataset_pilot or None, cfg.game)
    size = len(data["action"])
    run = _Run(cfg, "cql")  # threads and seed first: the network's first weights come from them
    agent = DQNAgent(cfg.game.obs_dim, cfg.game.num_actions,
                     dataclasses.replace(c, buffer_size=size), seed=t.seed, game=cfg.game)
    _fill(agent, data, c.reward_scale)
    steps = cfg.offline.cql_steps // c.gradient_steps
    counters = {"decisions": size, "gradient_steps": 0}
    run.start_clock()
    # The bar counts what the summary counts: gradient steps (`gradient_steps` an update).
    with Progress(steps * c.gradient_steps, run.name, "gradient step", quiet) as progress:
        for k in range(1, steps + 1):
            losses = agent.update(cql_alpha=cfg.offline.cql_alpha)
            counters["gradient_steps"] = k * c.gradient_steps
            if k % OFFLINE_UPDATE == 0 or k == steps:
                step = counters["gradient_steps"]
                for name in ("td_loss", "cql_loss", "q_values"):
                    run.writer.add_scalar(f"losses/{name}", losses[name], step)
                if (k // OFFLINE_UPDATE) % t.eval_interval == 0 or k == steps:
                    rate = run.evaluate(agent, step, counters)
                    progress.say(f"{step:,} gradient steps: {rate:.0%} against "
                                 f"{t.eval_opponent}")
            progress.update(c.gradient_steps)
            if run.out_of_time():
                rate = run.evaluate(agent, counters["gradient_steps"], counters)
                break
    run.save(agent, "latest.pt", counters)
    run.close()
    print(f"done: conservative Q-learning, {counters['gradient_steps']:,} gradient steps on "
          f"{size:,} transitions; best {run.best:.0%} against {t.eval_opponent} -> {run.run_dir}")
    return {"run_dir": str(run.run_dir), "log_dir": str(run.log_dir), "best": run.best,
            **counters}


def _fill(agent, data: dict[str, np.ndarray], reward_scale: float, chunk: int = 65_536) -> None:
    """Put a dataset's transitions into the agent's replay buffer, as the network reads them,
    and set the observation statistics from them."""
    replay = agent.replay
    for start in range(0, len(data["action"]), chunk):
        part = slice(start, start + chunk)
        obs = agent.features(data["obs"][part].astype(np.float32))
        nxt = agent.features(data["next"][part].astype(np.float32))
        replay.obs[part], replay.next[part] = obs, nxt
        replay.actions[part] = data["action"][part]
        replay.rewards[part] = data["ret"][part] * reward_scale
        replay.terminated[part] = data["terminated"][part]
        replay.discount[part] = data["discount"][part]
        agent.obs_norm.update(torch.from_numpy(obs))
    replay.full = True
