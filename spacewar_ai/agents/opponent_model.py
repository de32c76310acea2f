"""A model of the opponent, learned from its moves in the learner's own games.

Once the curriculum reaches it, the judged opponent (`[train] eval_opponent`) flies ship 1 in
most of the learner's games, and each of its decisions is a labelled example of how it plays.
`OpponentModel` fits a PPO actor to them by cross-entropy, one pass over each update's fresh
decisions (with `sure` below 1, over those whose move it did not already give that
probability), in a thread of its own while the run plays and learns on (a rollout worker playing
ahead leaves part of its core idle, which the fit takes), and the run saves it beside its
checkpoints as `opponent_model.pt`, which `search:` plans with. It watches the opponent play
rather than reading its rules, as a planner facing a person or a network must. It draws nothing
from torch's or numpy's generators, so a run learns the same weights with it or without it, and
it learns the same weights whenever its thread runs: anything read of it waits for the fit under
way."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

from ..config import GameConfig, PPOConfig
from ..util.errors import UserError
from .checkpoints import load_checkpoint
from .ppo import PPOAgent

FILE_NAME = "opponent_model.pt"
# One thread for every model's fits, for as long as the process lives: a thread per model would
# stay behind, idle, after each run of a process that runs many (population-based training).
_FITS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="opponent-model")
PAYLOAD_KEY = "opponent_model"  # the model's state inside a run's latest.pt


class OpponentModel:
    """Imitates one opponent from the (observation, action) pairs it is shown.

    `observe(obs, actions, rows)` is called once per vector step with ship 1's observations and
    actions and the rows (games) where the modelled opponent flew; `fit()` once per update begins
    learning from everything observed since the last call (module docstring). The network is a
    PPO actor (the default PPOConfig's shape and view), so the saved file is a PPO model any
    player spec can load.
    """

    def __init__(self, spec: str, game: GameConfig, rows_per_update: int,
                 batch_size: int = 2048, learning_rate: float = 1e-3, device: str = "cpu",
                 share: float = 1.0, learn_dtype: torch.dtype = torch.float32,
                 sure: float = 1.0):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise UserError(f"batch_size={batch_size!r} is invalid: must be an integer >= 1")
        if not 0 < share <= 1:
            raise UserError(f"share={share!r} is invalid: must be above 0 and at most 1")
        if not 0 < sure <= 1:
            raise UserError(f"sure={sure!r} is invalid: must be above 0 and at most 1")
        self.spec = spec
        self.batch_size = batch_size
        self.share = float(share)
        self.sure = float(sure)
        self._shown = 0  # decisions shown, kept or not: where the even sample stands
        with torch.random.fork_rng(devices=[]):
            self._agent = PPOAgent(game.obs_dim, game.num_actions,
                                   PPOConfig(learning_rate=learning_rate), device,
                                   game=game)
        self._agent.learn_dtype = learn_dtype  # its fit's passes, as the learner's update
        self._decisions = 0  # decisions learned from, over the whole run
        self._figures: dict[str, float] = {}  # the last fit's
        # One update's worth of raw observations and actions, filled in place, and a second
        # such pair that the fit under way learns from meanwhile.
        self._obs, self._actions = self._buffers(rows_per_update, game.obs_dim)
        self._spare = self._buffers(rows_per_update, game.obs_dim)
        self._filled = 0
        self._fitting: Future | None = None

    @staticmethod
    def _buffers(rows: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros((rows, width), dtype=np.float32), np.zeros(rows, dtype=np.int64)

    def settle(self) -> dict[str, float]:
        """Wait for the fit under way, if any; the last fit's figures (module docstring): the
        share of its decisions the model foresaw before it learned from them (a held-out
        figure: it had never seen these positions), the mean loss and the share it learned
        from ("learned"), {} before any fit."""
        if self._fitting is not None:
            fitting, self._fitting = self._fitting, None
            fitting.result()  # its error, if it failed, is raised here
        return self._figures

    @property
    def agent(self) -> PPOAgent:
        self.settle()
        return self._agent

    @property
    def decisions(self) -> int:
        """Decisions learned from, over the whole run."""
        self.settle()
        return self._decisions

    @property
    def accuracy(self) -> float | None:
        """The share of the last fit's decisions foreseen before learning them; None before any
        fit, and in a run resumed from a latest.pt saved before the figures were kept."""
        return self.settle().get("accuracy")

    def observe(self, obs: np.ndarray, actions: np.ndarray, rows: np.ndarray) -> None:
        """Keep the decisions of games `rows` (indices into obs and actions), or with a share
        below 1 an even sample of them: the decision that takes the running count of decisions
        shown past a whole multiple of 1 / share (no generator is drawn from)."""
        if self.share < 1 and rows.size:
            count = self._shown + np.arange(rows.size + 1)
            taken = np.floor(count[1:] * self.share) > np.floor(count[:-1] * self.share)
            self._shown += rows.size
            rows = rows[taken]
        k = rows.size
        if k == 0:
            return
        end = self._filled + k
        if end > len(self._obs):
            raise RuntimeError(f"the opponent model holds {len(self._obs)} decisions per update "
                               f"and was shown {end}: call fit() once per update")
        self._obs[self._filled:end] = obs[rows]
        self._actions[self._filled:end] = actions[rows]
        self._filled = end

    def fit(self) -> bool:
        """Begin one pass over the decisions observed since the last fit, in minibatches, in
        order, in the model's thread, once the fit before it has ended; `observe` fills the
        other buffers meanwhile. Whether there was anything to learn from."""
        self.settle()
        n, self._filled = self._filled, 0
        if n == 0:
            return False
        obs, actions = self._obs[:n], self._actions[:n]
        (self._obs, self._actions), self._spare = self._spare, (self._obs, self._actions)
        self._fitting = _FITS.submit(self._learn, obs, actions)
        return True

    def _learn(self, obs: np.ndarray, actions: np.ndarray) -> None:
        # Judging each minibatch as it is learned would save the judge's forward pass but
        # count what the update's earlier minibatches had just taught it.
        fitted = self._agent.imitate(obs, actions, self._agent.optimizer, self.batch_size,
                                     judge=True, unsure_below=self.sure)
        self._decisions += len(actions)
        self._figures = {"accuracy": fitted["foreseen"], "loss": fitted["loss"],
                         "learned": fitted["learned"] / len(actions)}

    def save(self, path: str | Path) -> None:
        """An ordinary PPO checkpoint (atomic), with what it models in its metadata."""
        self.agent.save(path, {"opponent_model_of": self.spec, "decisions": self.decisions})

    def state(self) -> dict:
        """What a resumed run needs to continue this model (kept inside the run's latest.pt)."""
        return {"agent": self.agent.state_dict(), "decisions": self.decisions,
                "figures": dict(self.settle())}

    def restore(self, state: dict) -> None:
        """Continue from `state()`: weights, statistics, optimizer, count."""
        self.agent.load_state_dict(state["agent"])
        self._decisions = int(state["decisions"])
        # What the last fit foresaw, so that a resumed run that stops before its next fit
        # still says how good its model is.
        self._figures = dict(state.get("figures", {}))

    def load(self, path: str | Path) -> None:
        """Continue from a saved opponent_model.pt (runs saved before latest.pt held it)."""
        ckpt = load_checkpoint(path, expect_algorithm="ppo", expect_obs_dim=self.agent.state_dim)
        self.restore({"agent": ckpt["agent"],
                      "decisions": ckpt["metadata"].get("decisions", 0)})


def run_model_path(policy_path: str | Path) -> Path | None:
    """The opponent model saved by the training run a checkpoint belongs to: `opponent_model.pt`
    in its folder, or None. Exported copies and the shipped model have none beside them."""
    candidate = Path(policy_path).parent / FILE_NAME
    return candidate if candidate.is_file() else None

