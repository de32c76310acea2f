"""What every learning agent shares: masked sampling, observation statistics, networks' building
blocks, devices, and `BaseAgent` (acting, play copies, state dicts, saving). No game rules here.

An agent's whole learnable state (networks, optimizer, observation statistics, counters) is a
`state_dict()` of tensors and plain values, so checkpoints load with `torch.load(weights_only=True)`.
"""

from __future__ import annotations

import abc
import copy
import math
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from ..config import JUMP_COLUMNS, OBS_MASK, GameConfig, without_jumps
from ..game.features import (
    FIRE_SWITCHES,
    MIN_DIM,
    apply_view,
    fire_when_ready,
    held_fire,
    view_constants,
    view_width,
)
from ..util.errors import UserError

NEG_INF = -1e9  # a finite "minus infinity": keeps softmax and log-probs free of NaN
# Config fields that shape the network: a checkpoint only loads into an agent built with the same.
ARCHITECTURE_FIELDS = {"ppo": ("hidden_sizes", "activation", "observation_view"),
                       "dqn": ("hidden_sizes", "stream_size", "observation_view")}
# Values of architecture fields for checkpoints saved before the field existed.
LEGACY_ARCHITECTURE = {"activation": "tanh", "observation_view": "world"}


def saved_architecture(algorithm: str, config: dict[str, Any]) -> dict[str, Any]:
    """The architecture fields of a saved agent config (lists as tuples, legacy defaults filled)."""
    out = {}
    for name in ARCHITECTURE_FIELDS.get(algorithm, ()):
        v = config.get(name, LEGACY_ARCHITECTURE.get(name))
        if v is not None:
            out[name] = tuple(v) if isinstance(v, list) else v
    return out


def sample_actions(logits: torch.Tensor, deterministic: bool) -> torch.Tensor:
    """Greedy, or an exact sample by Gumbel-max (cheaper than torch.distributions.Categorical);
    masked logits (NEG_INF) are never chosen."""
    if deterministic:
        return logits.argmax(-1)
    u = torch.rand_like(logits).clamp_(1e-12, 1.0)
    return (logits - torch.log(-torch.log(u))).argmax(-1)


def soft_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of (N, A) probability `targets` under masked `logits`: actions the
    targets give no weight add nothing, so an invalid action's -inf (or very low) logit is
    never multiplied by zero into NaN. With one-hot targets it is the ordinary cross-entropy."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -torch.where(targets > 0, targets * logp, torch.zeros_like(logp)).sum(-1).mean()


class RunningNorm(nn.Module):
    """Running mean and variance of observations (Welford, batched), saved with the model."""

    def __init__(self, dim: int, clip: float = 10.0):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim, dtype=torch.float64))
        self.register_buffer("var", torch.ones(dim, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64))
        self.clip = clip

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        x = x.reshape(-1, x.shape[-1]).to(torch.float64)
        n = x.shape[0]
        if n == 0:
            return
        b_mean = x.mean(0)
        b_var = x.var(0, unbiased=False)
        delta = b_mean - self.mean
        total = self.count + n
        self.mean += delta * n / total
        m2 = self.var * self.count + b_var * n + delta.pow(2) * self.count * n / total
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = (x - self.mean.float()) / torch.sqrt(self.var.float() + 1e-8)
        return z.clamp(-self.clip, self.clip)


def _mlp(sizes, out: int, out_std: float, activation: str = "tanh") -> nn.Sequential:
    act = {"tanh": nn.Tanh, "relu": nn.ReLU}[activation]
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [_init(nn.Linear(a, b)), act()]
    layers.append(_init(nn.Linear(sizes[-1], out), out_std))
    return nn.Sequential(*layers)


def _init(layer: nn.Linear, std: float = math.sqrt(2)) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.zeros_(layer.bias)
    return layer


def resolve_device(device: str | torch.device | None) -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise UserError("device 'cuda' was asked for but no CUDA GPU is available: use "
                        "--device cpu (or auto)")
    return dev


def native_bfloat16(device: torch.device, cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether `device` multiplies bfloat16 natively: a CUDA GPU that says so, or a CPU whose
    flags (Linux's `cpuinfo`) list AVX-512 BF16 or AMX BF16. Elsewhere bfloat16 is emulated,
    slower than float32."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    try:
        with open(cpuinfo) as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def learner_dtype(precision: str, device: str | torch.device) -> torch.dtype:
    """The dtype a learner's passes run in for config.PRECISIONS' `precision` on `device`."""
    if precision == "auto":
        return torch.bfloat16 if native_bfloat16(torch.device(device)) else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16}[precision]


def autocast(device: torch.device, dtype: torch.dtype):
    """The forward passes of a learner's update in `dtype` (torch's autocast: its matrix
    products in bfloat16, its reductions and whatever follows in float32), or as they are."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=dtype == torch.bfloat16)


def load_optimizer(optimizer: torch.optim.Optimizer, state: dict[str, Any], rate: float) -> None:
    """A saved optimizer's state, at the learning rate the config gives now: a rate given on
    resume (or changed by population-based training) is the one it learns with, where a
    schedule does not set it at every update anyway."""
    optimizer.load_state_dict(state)
    for group in optimizer.param_groups:
        group["lr"] = rate


class BaseAgent(abc.ABC):
    """What training, evaluation, tournaments and human play need of a learned pilot."""

    algorithm = "base"
    config_class: type = object  # the agent's config dataclass
    _not_in_play_copies: tuple = ()  # play_state entries play_copy leaves out

    def __init__(self, state_dim: int, action_dim: int, config: Any = None,
                 device: str | torch.device = "cpu", game: GameConfig | None = None):
        if not isinstance(state_dim, int) or state_dim <= action_dim:
            raise UserError(f"state_dim={state_dim!r} is invalid: must be an int larger than "
                            f"action_dim ({action_dim}); Spacewar! observations have 36")
        if not isinstance(action_dim, int) or action_dim < 2:
            raise UserError(f"action_dim={action_dim!r} is invalid: must be an int >= 2")
        self.config = config if config is not None else self.config_class()
        if not isinstance(self.config, self.config_class):
            raise UserError(f"config must be a {self.config_class.__name__}, got "
                            f"{type(self.config).__name__}")
        self.state_dim = state_dim
        self.action_dim = action_dim
        self.view = self.config.observation_view
        if self.view != "world" and state_dim < MIN_DIM:
            raise UserError(f"observation_view={self.view!r} needs Spacewar! observations (36 "
                            f"values or more), not state_dim={state_dim}: use "
                            "observation_view='world'")
        # What the first layer takes: the view's width. The game constants the view reads are
        # saved with the weights (state_dict) and restored on loading.
        self.input_dim = view_width(self.view, state_dim)
        self.view_constants = view_constants(game)
        self.device = resolve_device(device)
        self.obs_norm = RunningNorm(self.input_dim).to(self.device)
        self.update_obs_stats = True
        # What its updates' passes run in (learner_dtype); playing is float32 whatever it is.
        self.learn_dtype = torch.float32
        self._optimizer: torch.optim.Optimizer | None = None
        self._saved_optimizer: dict[str, Any] | None = None  # loaded, not yet applied

    # --- the optimizer ------------------------------------------------------------------------
    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """Built on first use: an agent that only plays (a pilot, a worker, a league opponent)
        never needs one, and building one makes torch load its compiler, seconds of start-up in
        every process that plays."""
        if self._optimizer is None:
            self._optimizer = self._make_optimizer()
            if self._saved_optimizer is not None:
                load_optimizer(self._optimizer, self._saved_optimizer, self.config.learning_rate)
                self._saved_optimizer = None
        return self._optimizer

    @abc.abstractmethod
    def _make_optimizer(self) -> torch.optim.Optimizer: ...

    def _load_optimizer_state(self, state: dict[str, Any]) -> None:
        # Its own copy, now: torch's loader keeps the tensors it is given, so an agent given
        # another's live state would share (and, built later, inherit) its moments.
        state = copy.deepcopy(state)
        if self._optimizer is None:
            self._saved_optimizer = state
        else:
            load_optimizer(self._optimizer, state, self.config.learning_rate)

    def warm_up(self) -> None:
        """Load now what a first update loads on its way: the optimizer (building one makes torch
        load its compiler) and the view's compiled kernels. The trainer calls it while its
        rollout workers' processes start, so that the first update costs what the others do;
        it changes nothing a seed gives."""
        _ = self.optimizer
        self.features(np.zeros((1, self.state_dim), dtype=np.float32))

    # --- helpers ------------------------------------------------------------------------------
    def features(self, obs: np.ndarray) -> np.ndarray:
        """What the network reads of observations (N, D): the config's observation_view."""
        return apply_view(self._as_learned(self._own_width(np.asarray(obs, dtype=np.float32))),
                          self.view, self.view_constants)

    def _own_width(self, rows: np.ndarray) -> np.ndarray:
        """A game's observations as a network saved before they held the jumps left reads them:
        without those columns (every other value where it learned it)."""
        if rows.shape[-1] == self.state_dim or without_jumps(rows.shape[-1]) != self.state_dim:
            return rows
        return np.concatenate([rows[..., :OBS_MASK], rows[..., OBS_MASK + JUMP_COLUMNS:]], -1)

    @property
    def fires_when_ready(self) -> bool:
        """A switches network saved before the mask offered fire held through a reload's end,
        shown the mask as it learned it (features.fire_when_ready)."""
        return self.action_dim == len(FIRE_SWITCHES) and not self.view_constants.get("fire_held")

    def offer_held_fire(self) -> None:
        """Show the network the switches' mask as the game offers it from now on, fire held
        through a reload's end included, whatever mask it learned with: for a network that
        goes on learning (a new run from it, an adapting planner's model)."""
        self.view_constants = {**self.view_constants, "fire_held": 1.0}

    def _as_learned(self, rows: np.ndarray) -> np.ndarray:
        if not self.fires_when_ready:
            return rows
        rows = np.asarray(rows, dtype=np.float32)
        return fire_when_ready(rows.reshape(-1, rows.shape[-1])).reshape(rows.shape)

    def _batch(self, state, mask=None, viewed: bool = False):
        """(D,) or (N, D) array -> float tensor (N, input_dim) as the network reads it, bool mask
        (N, A), was_single. `viewed`: the rows are network inputs already (a replay buffer's)."""
        arr = np.asarray(state, dtype=np.float32)
        single = arr.ndim == 1
        if single:
            arr = arr[None]
        if not viewed:
            arr = self._own_width(arr)
        width = self.input_dim if viewed else self.state_dim
        if arr.ndim != 2 or arr.shape[1] != width:
            raise UserError(f"state has shape {np.shape(state)}: expected ({width},) or "
                            f"(N, {width})")
        m = (arr[:, -self.action_dim:] if mask is None
             else np.asarray(mask).reshape(arr.shape[0], self.action_dim)) > 0.5
        if self.fires_when_ready:
            m = m & ~held_fire(arr)
        m[~m.any(axis=1), 0] = True  # a row with no valid action may still drift
        obs = torch.from_numpy(arr if viewed else self.features(arr)).to(self.device)
        return obs, torch.from_numpy(m).to(self.device), single

    @abc.abstractmethod
    def select_action(self, state, mask=None, deterministic: bool = False):
        """Actions for one observation (an int) or a batch (an int64 array)."""

    @abc.abstractmethod
    def play_state(self) -> dict[str, Any]:
        """Everything that plays, as tensors and plain values: state_dict without the
        optimizer (what workers and the league are sent, and play copies are made of)."""

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume learning: play_state and the optimizer's state (a loaded
        one not yet applied passes through as it was)."""
        if self._optimizer is None and self._saved_optimizer is not None:
            return {**self.play_state(), "optimizer": self._saved_optimizer}
        return {**self.play_state(), "optimizer": self.optimizer.state_dict()}

    @abc.abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def play_copy(self) -> BaseAgent:
        """A frozen copy that plays and learns nothing: the networks, observation statistics,
        view constants and exploration state, without the replay or rollout buffers and the
        optimizer's state. League opponents and evaluations hold these: a deep copy would carry a
        DQN learner's whole replay buffer into every snapshot."""
        # Building networks draws their initial weights from torch's global generator, which
        # the learner's sampling also draws from: leave its stream as it was.
        with torch.random.fork_rng(devices=[]):
            twin = self._empty_twin()
        twin.load_state_dict({k: v for k, v in self.play_state().items()
                              if k not in self._not_in_play_copies})
        return twin

    @abc.abstractmethod
    def _empty_twin(self) -> BaseAgent:
        """A new agent of this one's shape, with the smallest buffers it can have."""

    def _check_architecture(self, state: dict[str, Any]) -> None:
        """Refuse weights saved by a differently shaped network (an activation mismatch would
        otherwise load silently and play badly)."""
        if "config" not in state:
            return
        saved = saved_architecture(self.algorithm, state["config"])
        mine = self.architecture
        if saved != mine:
            raise UserError(f"the saved {self.algorithm} network is {saved} but this agent was "
                            f"built with {mine}: build it with the saved config "
                            "(agents.saved.load_agent does)")

    def _load_view_constants(self, state: dict[str, Any]) -> None:
        """The view reads the game as the network learned it: the saved constants win."""
        saved = state.get("view_constants")
        if saved is not None:
            self.view_constants = {k: float(v) for k, v in saved.items()}

    @property
    def architecture(self) -> dict[str, Any]:
        """The config fields that shape this agent's network (ARCHITECTURE_FIELDS)."""
        return {k: getattr(self.config, k) for k in ARCHITECTURE_FIELDS[self.algorithm]}

    @property
    def shape(self) -> tuple:
        """What two networks must share for one to stand in for the other's weights: the
        architecture, the view's constants and the input width."""
        return (self.architecture, self.view_constants, self.input_dim)

    def save(self, path, metadata: dict[str, Any] | None = None,
             extra: dict[str, Any] | None = None) -> None:
        from .checkpoints import save_checkpoint

        save_checkpoint(path, self, metadata or {}, extra)

    def load(self, path) -> dict[str, Any]:
        """Load weights and learning state from a checkpoint; returns its metadata."""
        from .checkpoints import load_checkpoint

        ckpt = load_checkpoint(path, expect_algorithm=self.algorithm,
                               expect_obs_dim=self.state_dim)
        self.load_state_dict(ckpt["agent"])
        return ckpt


class OnPolicyAgent(BaseAgent):
    """An agent that learns from the rollout it has just played (PPO): what the on-policy loop
    (training/loops.py) and the rollout workers call."""

    @property
    @abc.abstractmethod
    def rollout_steps(self) -> int:
        """Decisions of every game in one rollout: an update comes after this many."""

    @abc.abstractmethod
    def new_buffer(self, games: int):
        """An empty rollout buffer for `games` games (agents/ppo.RolloutBuffer)."""

    @abc.abstractmethod
    def decide(self, obs: np.ndarray):
        """Sampled actions for observations (N, D), with what the buffer keeps of them
        (agents/ppo.Decision)."""

    @abc.abstractmethod
    def value_of(self, obs: np.ndarray) -> np.ndarray:
        """The critic's values (N,) of observations (N, D), in scaled reward units: a timed-out
        game's last state is bootstrapped with it."""

    @abc.abstractmethod
    def update(self, buffer, next_obs: np.ndarray, progress: float | None = None
               ) -> dict[str, float]:
        """Learn from a full rollout `buffer`, bootstrapping from `next_obs`; `progress` (0 to
        1, the run's budget) drives the schedules. Returns the figures to log; the buffer is
        empty again."""


class OffPolicyAgent(BaseAgent):
    """An agent that learns from a replay of past steps (DQN): what the off-policy loop
    (training/loops.py) calls, in its order."""

    epsilon: float  # the share of exploring actions now (set_progress moves it)

    @abc.abstractmethod
    def set_progress(self, progress: float) -> None:
        """How far the run is through its budget (0 to 1): exploration and schedules follow."""

    @abc.abstractmethod
    def store_transition(self, obs: np.ndarray, action: np.ndarray, reward: np.ndarray,
                         next_obs: np.ndarray, terminated: np.ndarray,
                         done: np.ndarray | None = None) -> None:
        """Store one step of every game (`done`: the game ended, by its end or the clock)."""

    @abc.abstractmethod
    def ready(self, steps: int) -> bool:
        """Whether to learn after the `steps`-th step of the games (enough stored, and the
        config's update frequency)."""

    @abc.abstractmethod
    def update(self, margin: float = 0.0, cql_alpha: float = 0.0) -> dict[str, float]:
        """One round of gradient steps on the replay; returns the figures to log."""
