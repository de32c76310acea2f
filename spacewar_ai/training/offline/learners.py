"""Learning from recorded games: behaviour cloning and conservative Q-learning (docs/datasets.md).

- `behaviour_clone`: a PPO actor imitates recorded decisions by masked cross-entropy (the warm
  start is this on games it plays for the purpose; `--algorithm bc --dataset NAME` on a dataset).
- `train_cql`: a dueling double DQN from a dataset alone, with CQL's regulariser
  (agents.cql_loss) pushing down actions the data never took; masks are honoured in the
  policy, the targets and the regulariser. `--algorithm cql --dataset NAME`.

Both save ordinary checkpoints under checkpoints/<run>/ (best.pt chosen by evaluation), log to
TensorBoard, and PPO can start from either (`--init-from`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ...config import RunConfig
from ..budget import Counters
from ..evaluation import Evaluator
from ..run_frame import RunFrame

OFFLINE_UPDATE = 100  # gradient steps per "update" for CQL's logs, evaluations and saves


def behaviour_clone(agent, obs: np.ndarray, actions: np.ndarray, epochs: int, seed: int = 0,
                    batch_size: int = 1024, lr: float = 1e-3, report=None,
                    stop=None) -> dict[str, float]:
    """Fit a PPO agent's actor to `actions` taken at raw observations `obs` (masked
    cross-entropy, shuffled passes, fewer where `stop()` says so after one); returns the last
    pass's loss and agreement."""
    fitted = agent.imitate(obs, actions, torch.optim.Adam(agent.net.actor.parameters(), lr=lr),
                           batch_size, epochs, torch.Generator().manual_seed(seed),
                           on_epoch=report, stop=stop)
    return {"loss": fitted["loss"], "accuracy": fitted["accuracy"], "decisions": len(actions)}


class _Run(RunFrame):
    """An offline run (run_frame.RunFrame): its counters, and evaluations by the Evaluator every
    run has (evaluation.py), which chooses best.pt and the design's `<algorithm>_best.pt`."""

    def __init__(self, cfg: RunConfig, kind: str, quiet: bool):
        from ...pilots.build import make_pilot

        t = cfg.train
        name = t.named(kind)
        super().__init__(cfg, name, Path(t.checkpoint_dir) / name, quiet=quiet)
        torch.manual_seed(t.seed)
        # Before anything is written: a second live run on the same name is refused.
        self.hold(checkpoints=self.run_dir, logs=self.log_dir)
        self.counters = Counters()
        self.figures: dict = {}  # what this kind of run adds to its checkpoints' counters
        self.evaluator = Evaluator(cfg, self.run_dir, make_pilot(t.eval_opponent, cfg.game),
                                   "cpu", self.counters)
        if quiet:
            self.evaluator.say = lambda text: None

    def evaluate(self, agent, step: int) -> float:
        """Evaluate at `step` (an epoch, a gradient step): the evaluation's win rate."""
        c = self.counters
        c.global_step, c.wall_seconds = step, self.seconds
        rate = self.evaluator.evaluate(agent, self.writer, lambda: self.save(agent, "best.pt"))
        c.updates += 1  # each evaluation plays starts of its own (evaluation_seeds)
        return rate

    def save(self, agent, name: str) -> Path:
        path = self.run_dir / name
        agent.save(path, {"run_name": self.name, "config": self.cfg.to_dict(),
                          "counters": {**self.counters.saved(), **self.figures}})
        return path


def train_bc(cfg: RunConfig, quiet: bool = False) -> dict:
    """--algorithm bc: a PPO actor cloned from the dataset's decisions (or one pilot's)."""
    from ...agents.ppo import PPOAgent
    from ..datasets import arrays

    t = cfg.train
    obs, actions = arrays(t.dataset, t.dataset_pilot or None, cfg.game)
    run = _Run(cfg, "bc", quiet)
    agent = PPOAgent(cfg.game.obs_dim, cfg.game.num_actions, cfg.ppo, game=cfg.game)

    passes = 0

    def report(epoch, loss, agreement):
        nonlocal passes
        passes = epoch + 1
        run.writer.add_scalar("losses/bc_loss", loss, passes)
        run.writer.add_scalar("charts/bc_agreement", agreement, passes)
        if not quiet:
            print(f"behaviour cloning from {t.dataset}: pass {passes}/{cfg.offline.bc_epochs}, "
                  f"loss {loss:.3f}, agreement {agreement:.1%}")

    run.start_clock()
    # --minutes ends the passes after the one in which it ran out.
    fitted = behaviour_clone(agent, obs, actions, cfg.offline.bc_epochs, t.seed, report=report,
                             stop=run.out_of_time)
    run.figures = {"decisions": len(actions), "bc_agreement": fitted["accuracy"],
                   "bc_passes": passes}
    rate = run.evaluate(agent, passes)
    run.save(agent, "latest.pt")
    run.close()
    print(f"done: behaviour cloning, {passes} pass{'' if passes == 1 else 'es'} over "
          f"{len(actions):,} decisions, agreement "
          f"{fitted['accuracy']:.1%}, {rate:.0%} against {t.eval_opponent} -> {run.run_dir}")
    return {"run_dir": str(run.run_dir), "log_dir": str(run.log_dir), "win_rate": rate,
            "passes": passes, **fitted}


def train_cql(cfg: RunConfig, quiet: bool = False) -> dict:
    """--algorithm cql: conservative Q-learning on the dataset's n-step transitions."""
    import dataclasses

    from ...agents.dqn import DQNAgent
    from ...util.progress import Progress
    from ..datasets import transitions

    t, c = cfg.train, cfg.dqn
    data = transitions(t.dataset, c.n_step, c.gamma, t.dataset_pilot or None, cfg.game)
    size = len(data["action"])
    run = _Run(cfg, "cql", quiet)  # threads and seed first: the first weights come from them
    agent = DQNAgent(cfg.game.obs_dim, cfg.game.num_actions,
                     dataclasses.replace(c, buffer_size=size), seed=t.seed, game=cfg.game)
    _fill(agent, data, c.reward_scale)
    steps = cfg.offline.cql_steps // c.gradient_steps
    step = 0
    run.figures = {"decisions": size, "gradient_steps": step}
    run.start_clock()
    # The bar counts what the summary counts: gradient steps (`gradient_steps` an update).
    with Progress(steps * c.gradient_steps, run.name, "gradient step", quiet) as progress:
        if not quiet:
            run.evaluator.say = progress.say
        for k in range(1, steps + 1):
            losses = agent.update(cql_alpha=cfg.offline.cql_alpha)
            step = run.figures["gradient_steps"] = k * c.gradient_steps
            if k % OFFLINE_UPDATE == 0 or k == steps:
                for name in ("td_loss", "cql_loss", "q_values"):
                    run.writer.add_scalar(f"losses/{name}", losses[name], step)
                if (k // OFFLINE_UPDATE) % t.eval_interval == 0 or k == steps:
                    rate = run.evaluate(agent, step)
                    progress.say(f"{step:,} gradient steps: {rate:.0%} against "
                                 f"{t.eval_opponent}")
            progress.update(c.gradient_steps)
            if run.out_of_time():
                run.evaluate(agent, step)
                break
    run.save(agent, "latest.pt")
    run.close()
    best = run.counters.best_eval
    print(f"done: conservative Q-learning, {step:,} gradient steps on {size:,} transitions; "
          f"best {best:.0%} against {t.eval_opponent} -> {run.run_dir}")
    return {"run_dir": str(run.run_dir), "log_dir": str(run.log_dir), "best": best,
            **run.figures}


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
