"""Learning agents: PPO and DQN over batches of observations. No game rules here.

Both agents take observations shaped (D,) or (N, D) and an action mask (the observation's last
`action_dim` entries unless given). Invalid actions are never chosen: PPO sets their logits to
-inf before the softmax, DQN takes a masked argmax and masked targets.

An agent's whole learnable state (networks, optimizer, observation statistics, counters) is a
`state_dict()` of tensors and plain values, so checkpoints load with `torch.load(weights_only=True)`.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import math
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import DQNConfig, GameConfig, PPOConfig
from .features import MIN_DIM, apply_view, view_constants, view_width
from .replay_buffer import ReplayBuffer

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
        raise ValueError("device 'cuda' was asked for but no CUDA GPU is available: use "
                         "--device cpu (or auto)")
    return dev


class BaseAgent(abc.ABC):
    """What training, evaluation, tournaments and human play need of a learned pilot."""

    algorithm = "base"
    config_class: type = object  # the agent's config dataclass
    _not_in_play_copies: tuple = ("optimizer",)  # state_dict entries play_copy leaves out

    def __init__(self, state_dim: int, action_dim: int, config: Any = None,
                 device: str | torch.device = "cpu", game: GameConfig | None = None):
        if not isinstance(state_dim, int) or state_dim <= action_dim:
            raise ValueError(f"state_dim={state_dim!r} is invalid: must be an int larger than "
                             f"action_dim ({action_dim}); Spacewar! observations have 36")
        if not isinstance(action_dim, int) or action_dim < 2:
            raise ValueError(f"action_dim={action_dim!r} is invalid: must be an int >= 2")
        self.config = config if config is not None else self.config_class()
        if not isinstance(self.config, self.config_class):
            raise ValueError(f"config must be a {self.config_class.__name__}, got "
                             f"{type(self.config).__name__}")
        self.state_dim = state_dim
        self.action_dim = action_dim
        self.view = self.config.observation_view
        if self.view != "world" and state_dim < MIN_DIM:
            raise ValueError(f"observation_view={self.view!r} needs Spacewar! observations (36 or "
                             f"37 values), not state_dim={state_dim}: use observation_view='world'")
        # What the first layer takes: the view's width. The game constants the view reads are
        # saved with the weights (state_dict) and restored on loading.
        self.input_dim = view_width(self.view, state_dim)
        self.view_constants = view_constants(game)
        self.device = resolve_device(device)
        self.obs_norm = RunningNorm(self.input_dim).to(self.device)
        self.update_obs_stats = True

    # --- helpers ------------------------------------------------------------------------------
    def features(self, obs: np.ndarray) -> np.ndarray:
        """What the network reads of observations (N, D): the config's observation_view."""
        return apply_view(obs, self.view, self.view_constants)

    def _batch(self, state, mask=None, viewed: bool = False):
        """(D,) or (N, D) array -> float tensor (N, input_dim) as the network reads it, bool mask
        (N, A), was_single. `viewed`: the rows are network inputs already (a replay buffer's)."""
        arr = np.asarray(state, dtype=np.float32)
        single = arr.ndim == 1
        if single:
            arr = arr[None]
        width = self.input_dim if viewed else self.state_dim
        if arr.ndim != 2 or arr.shape[1] != width:
            raise ValueError(f"state has shape {np.shape(state)}: expected ({width},) or "
                             f"(N, {width})")
        if mask is None:
            m = arr[:, -self.action_dim:] > 0.5
        else:
            m = np.asarray(mask).reshape(arr.shape[0], self.action_dim) > 0.5
        m = m.copy()
        m[~m.any(axis=1), 0] = True  # a row with no valid action may still drift
        obs = torch.from_numpy(arr if viewed else self.features(arr)).to(self.device)
        return obs, torch.from_numpy(m).to(self.device), single

    @abc.abstractmethod
    def select_action(self, state, mask=None, deterministic: bool = False):
        """Actions for one observation (an int) or a batch (an int64 array)."""

    @abc.abstractmethod
    def store_transition(self, *args, **kwargs) -> None:
        """Record experience for the next update."""

    @abc.abstractmethod
    def update(self, **kwargs) -> dict[str, float]:
        """Learn from stored experience; returns the losses to log."""

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume learning, as tensors and plain values."""

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
        twin.load_state_dict({k: v for k, v in self.state_dict().items()
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
            raise ValueError(f"the saved {self.algorithm} network is {saved} but this agent was "
                             f"built with {mine}: build it with the saved config "
                             "(checkpoints.load_agent does)")

    def _load_view_constants(self, state: dict[str, Any]) -> None:
        """The view reads the game as the network learned it: the saved constants win."""
        saved = state.get("view_constants")
        if saved is not None:
            self.view_constants = {k: float(v) for k, v in saved.items()}

    @property
    def architecture(self) -> dict[str, Any]:
        """The config fields that shape this agent's network (ARCHITECTURE_FIELDS)."""
        return {k: getattr(self.config, k) for k in ARCHITECTURE_FIELDS[self.algorithm]}

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


class ActorCritic(nn.Module):
    def __init__(self, state_dim: int, action_dim: int, hidden: tuple, activation: str = "tanh"):
        super().__init__()
        sizes = (state_dim, *hidden)
        self.actor = _mlp(sizes, action_dim, 0.01, activation)
        self.critic = _mlp(sizes, 1, 1.0, activation)

    def logits(self, x, mask):
        return self.actor(x).masked_fill(~mask, NEG_INF)

    def value(self, x):
        return self.critic(x).squeeze(-1)


class PPOAgent(BaseAgent):
    """Proximal Policy Optimization: clipped surrogate, GAE(lambda), masked logits.

    Experience is collected into preallocated (n_steps, num_envs) buffers with
    `store_transition`; `update(next_obs, progress)` runs the epochs of minibatch updates.
    """

    algorithm = "ppo"
    config_class = PPOConfig

    def __init__(self, state_dim: int = 36, action_dim: int = 6, config: PPOConfig | None = None,
                 device: str | torch.device = "cpu", num_envs: int = 1,
                 game: GameConfig | None = None):
        super().__init__(state_dim, action_dim, config, device, game)
        c = self.config
        self.net = ActorCritic(self.input_dim, action_dim, tuple(c.hidden_sizes),
                               c.activation).to(self.device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=c.learning_rate, eps=1e-5,
                                          foreach=True)
        self.num_envs = int(num_envs)
        self.updates = 0
        self._alloc(self.num_envs)
        self._last_value: torch.Tensor | None = None
        self._last_logp_all: torch.Tensor | None = None

    def _alloc(self, n: int) -> None:
        t, d, a = self.config.n_steps, self.input_dim, self.action_dim
        dev = self.device
        self.num_envs = n
        self.buf_obs = torch.zeros((t, n, d), device=dev)  # normalized, as the policy saw them
        self.buf_raw = torch.zeros((t, n, d), device=dev)  # unnormalized, for the statistics
        self.buf_mask = torch.zeros((t, n, a), dtype=torch.bool, device=dev)
        self.buf_actions = torch.zeros((t, n), dtype=torch.long, device=dev)
        self.buf_logprobs = torch.zeros((t, n), device=dev)
        self.buf_rewards = torch.zeros((t, n), device=dev)
        self.buf_dones = torch.zeros((t, n), device=dev)
        self.buf_values = torch.zeros((t, n), device=dev)
        self.step = 0

    @torch.no_grad()
    def select_action(self, state, mask=None, deterministic: bool = False):
        obs, m, single = self._batch(state, mask)
        x = self.obs_norm(obs)
        logits = self.net.logits(x, m)
        action = sample_actions(logits, deterministic)
        self._last_raw, self._last_x, self._last_mask = obs, x, m
        # All log-probs are kept: store_transition takes the one of the action actually played,
        # which an exploration guide (llm_strategies.LLMExplorationGuide) may have replaced.
        self._last_logp_all = torch.log_softmax(logits, -1)
        self._last_value = self.net.value(x)
        out = action.cpu().numpy()
        return int(out[0]) if single else out

    @torch.no_grad()
    def act(self, state, mask=None, deterministic: bool = False):
        """Actions only, for playing (opponents, evaluation, human play): the actor alone, no
        critic pass and nothing kept for learning."""
        obs, m, single = self._batch(state, mask)
        action = sample_actions(self.net.logits(self.obs_norm(obs), m), deterministic)
        out = action.cpu().numpy()
        return int(out[0]) if single else out

    @torch.no_grad()
    def action_logits(self, state, mask=None) -> np.ndarray:
        """The actor's masked logits (N, A) for observations (N, D): for a planner that draws
        its own samples (search.SearchPilot), so that they depend on its seed alone."""
        obs, m, _ = self._batch(state, mask)
        return self.net.logits(self.obs_norm(obs), m).cpu().numpy()

    def store_transition(self, reward, done, action) -> None:
        """Record the step just taken by `select_action` (its observation, log-prob and value)
        with the action, its reward and whether the game ended (`done` ends it for GAE)."""
        if self.step >= self.config.n_steps:
            raise RuntimeError("the rollout buffer is full: call update() first")
        if self._last_value is None:
            raise RuntimeError("store_transition() needs a select_action() call before it")
        t = self.step
        self.buf_obs[t] = self._last_x
        self.buf_raw[t] = self._last_raw
        self.buf_mask[t] = self._last_mask
        played = torch.as_tensor(np.asarray(action), device=self.device).reshape(-1)
        self.buf_actions[t] = played
        self.buf_logprobs[t] = self._last_logp_all.gather(1, played[:, None].long()).squeeze(1)
        self.buf_values[t] = self._last_value
        self.buf_rewards[t] = torch.as_tensor(
            np.asarray(reward, dtype=np.float32) * self.config.reward_scale, device=self.device)
        self.buf_dones[t] = torch.as_tensor(np.asarray(done, dtype=np.float32), device=self.device)
        self.step += 1

    def imitate(self, obs, actions, optimizer: torch.optim.Optimizer, batch_size: int,
                epochs: int = 1, generator: torch.Generator | None = None, judge: bool = False,
                on_epoch=None, fit_scaling: bool = True) -> dict[str, float]:
        """Fit the actor to `actions` taken at raw observations `obs` (N, D) by masked
        cross-entropy: behaviour cloning (training.behaviour_clone) and the opponent model
        (opponent_model.py). The observation statistics take in the data first (unless
        `fit_scaling` is off); then `epochs` passes in minibatches, shuffled by `generator` or
        else in order. With `judge`, the share of `actions` the actor picked before learning
        anything from them comes back as "foreseen". Returns the last pass's mean loss and
        agreement (each minibatch's logits before its own step); `on_epoch(epoch, loss,
        agreement)` hears every pass."""
        x, mask, _ = self._batch(obs)
        y = torch.from_numpy(np.asarray(actions, dtype=np.int64)).to(self.device)
        n = len(y)
        out: dict[str, float] = {}
        if judge:
            with torch.no_grad():
                before = self.net.logits(self.obs_norm(x), mask).argmax(-1)
                out["foreseen"] = float((before == y).float().mean())
        if fit_scaling:
            self.obs_norm.update(x)
        xn = self.obs_norm(x)
        for epoch in range(epochs):
            order = (torch.randperm(n, generator=generator).to(self.device)
                     if generator is not None else torch.arange(n, device=self.device))
            loss_sum = correct = 0.0
            for start in range(0, n, batch_size):
                idx = order[start:start + batch_size]
                logits = self.net.logits(xn[idx], mask[idx])
                loss = F.cross_entropy(logits, y[idx])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                loss_sum += loss.item() * len(idx)
                correct += (logits.argmax(-1) == y[idx]).sum().item()
            out["loss"], out["accuracy"] = loss_sum / n, correct / n
            if on_epoch is not None:
                on_epoch(epoch, out["loss"], out["accuracy"])
        return out

    @torch.no_grad()
    def value_of(self, state) -> np.ndarray:
        obs, _, _ = self._batch(state)
        return self.net.value(self.obs_norm(obs)).cpu().numpy()

    @staticmethod
    def compute_gae(rewards, values, dones, next_value, gamma, lam):
        """Generalized advantage estimation over (T, N) tensors.

        dones[t] = 1 when the episode ended at step t (so values after it are not bootstrapped).
        Returns advantages and returns, both (T, N).
        """
        t_max = rewards.shape[0]
        adv = torch.zeros_like(rewards)
        last = torch.zeros_like(next_value)
        for t in reversed(range(t_max)):
            nxt = next_value if t == t_max - 1 else values[t + 1]
            nonterminal = 1.0 - dones[t]
            delta = rewards[t] + gamma * nxt * nonterminal - values[t]
            last = delta + gamma * lam * nonterminal * last
            adv[t] = last
        return adv, adv + values

    def update(self, next_obs=None, progress: float | None = None, **kwargs) -> dict[str, float]:
        c = self.config
        if self.step < c.n_steps:
            raise RuntimeError(f"update() needs a full rollout: {self.step}/{c.n_steps} steps stored")
        if next_obs is None:
            raise ValueError("PPOAgent.update needs next_obs (the observations after the rollout)")
        if c.anneal_lr and progress is not None:
            for g in self.optimizer.param_groups:
                g["lr"] = c.learning_rate * max(0.0, 1.0 - progress)
        with torch.no_grad():
            # Observation statistics change only after the epochs, so the stored inputs, values and
            # log-probs all belong to the policy that collected the rollout.
            next_value = torch.as_tensor(self.value_of(next_obs), device=self.device)
            values = self.buf_values
            adv, returns = self.compute_gae(self.buf_rewards, values, self.buf_dones, next_value,
                                            c.gamma, c.gae_lambda)
        b = c.n_steps * self.num_envs
        obs = self.buf_obs.reshape(b, -1)
        masks = self.buf_mask.reshape(b, -1)
        actions = self.buf_actions.reshape(b)
        old_logp = self.buf_logprobs.reshape(b)
        adv, returns, values = adv.reshape(b), returns.reshape(b), values.reshape(b)
        mb = max(1, b // c.num_minibatches)
        # Named as CleanRL names them in TensorBoard (losses/...), so runs compare side by side.
        stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "old_approx_kl": 0.0,
                 "approx_kl": 0.0, "clipfrac": 0.0}
        n_mb = 0
        for _ in range(c.update_epochs):
            perm = torch.randperm(b, device=self.device)
            for start in range(0, b, mb):
                idx = perm[start:start + mb]
                logits = self.net.logits(obs[idx], masks[idx])
                logp_all = torch.log_softmax(logits, -1)
                logp = logp_all.gather(1, actions[idx, None]).squeeze(1)
                probs = logp_all.exp()
                entropy = -(probs * logp_all).masked_fill(~masks[idx], 0.0).sum(-1).mean()
                ratio = (logp - old_logp[idx]).exp()
                with torch.no_grad():
                    old_approx_kl = (old_logp[idx] - logp).mean()
                    approx_kl = ((ratio - 1) - (logp - old_logp[idx])).mean()
                    clipfrac = ((ratio - 1.0).abs() > c.clip_coef).float().mean()
                a = adv[idx]
                if c.norm_adv and a.numel() > 1:
                    a = (a - a.mean()) / (a.std() + 1e-8)
                pg_loss = torch.max(-a * ratio,
                                    -a * ratio.clamp(1 - c.clip_coef, 1 + c.clip_coef)).mean()
                v_loss = 0.5 * (self.net.value(obs[idx]) - returns[idx]).pow(2).mean()
                loss = pg_loss - c.ent_coef * entropy + c.vf_coef * v_loss
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                # Clipped separately: one network's large gradient must not shrink the other's.
                nn.utils.clip_grad_norm_(self.net.actor.parameters(), c.max_grad_norm)
                nn.utils.clip_grad_norm_(self.net.critic.parameters(), c.max_grad_norm)
                self.optimizer.step()
                stats["policy_loss"] += pg_loss.item()
                stats["value_loss"] += v_loss.item()
                stats["entropy"] += entropy.item()
                stats["approx_kl"] += approx_kl.item()
                stats["old_approx_kl"] += old_approx_kl.item()
                stats["clipfrac"] += clipfrac.item()
                n_mb += 1
            if c.target_kl and stats["approx_kl"] / n_mb > c.target_kl:
                break
        if self.update_obs_stats:
            self.obs_norm.update(self.buf_raw)
        self.step = 0
        self.updates += 1
        out = {k: v / max(n_mb, 1) for k, v in stats.items()}
        var_y = returns.var()
        out["explained_variance"] = float(1 - (returns - values).var() / var_y) if var_y > 0 else 0.0
        out["learning_rate"] = self.optimizer.param_groups[0]["lr"]
        return out

    def _empty_twin(self) -> PPOAgent:
        return PPOAgent(self.state_dim, self.action_dim, self.config, self.device, num_envs=1)

    def state_dict(self) -> dict[str, Any]:
        return {"net": self.net.state_dict(), "obs_norm": self.obs_norm.state_dict(),
                "optimizer": self.optimizer.state_dict(), "updates": self.updates,
                "config": self.config.to_dict(), "view_constants": dict(self.view_constants)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._check_architecture(state)
        self._load_view_constants(state)
        self.net.load_state_dict(state["net"])
        self.obs_norm.load_state_dict(state["obs_norm"])
        if "optimizer" in state:
            self.optimizer.load_state_dict(state["optimizer"])
        self.updates = int(state.get("updates", 0))


class PolicyStack:
    """Several PPO actors of one shape played in one batched pass: one `baddbmm` per layer for
    all of them, instead of a forward pass per network. The league's opponents (up to a dozen
    snapshots, a few games each) cost about as much as the learner's own forward pass this way.

    A snapshot of the actors' weights and observation statistics: build a new stack when they
    change. Same masking and Gumbel-max sampling as `PPOAgent.act`."""

    def __init__(self, agents: list["PPOAgent"]):
        if not agents:
            raise ValueError("PolicyStack needs at least one agent")
        first = agents[0]
        shape = (first.state_dim, first.action_dim, first.architecture, first.view_constants)
        if any(not isinstance(a, PPOAgent)
               or (a.state_dim, a.action_dim, a.architecture, a.view_constants) != shape
               for a in agents):
            raise ValueError("PolicyStack needs PPO agents of one shape")
        linears = [i for i, m in enumerate(first.net.actor) if isinstance(m, nn.Linear)]
        with torch.no_grad():
            self.weights = [torch.stack([a.net.actor[i].weight.t() for a in agents]).contiguous()
                            for i in linears]  # (K, in, out)
            self.biases = [torch.stack([a.net.actor[i].bias for a in agents])[:, None, :]
                           for i in linears]  # (K, 1, out)
            self.mean = torch.stack([a.obs_norm.mean.float() for a in agents])[:, None, :]
            self.std = torch.stack([torch.sqrt(a.obs_norm.var.float() + 1e-8)
                                    for a in agents])[:, None, :]
        self.clip = first.obs_norm.clip
        self.activation = torch.tanh if first.config.activation == "tanh" else torch.relu
        self.features = first.features
        self.input_dim = first.input_dim
        self.action_dim = first.action_dim
        self.size = len(agents)

    @torch.no_grad()
    def act(self, obs: np.ndarray, which: np.ndarray, deterministic: bool = False) -> np.ndarray:
        """Actions for observations (M, D), row i played by agent which[i]."""
        which = np.asarray(which, dtype=np.int64)
        m = obs.shape[0]
        out = np.zeros(m, dtype=np.int64)
        if m == 0:
            return out
        order = np.argsort(which, kind="stable")
        counts = np.bincount(which, minlength=self.size)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        group = which[order]
        rank = np.arange(m) - starts[group]
        # Padded (K, longest group, D): wasted rows cost less than a pass per network.
        dev = self.weights[0].device
        x = torch.zeros((self.size, int(counts.max()), self.input_dim), device=dev)
        g_t, r_t = torch.from_numpy(group).to(dev), torch.from_numpy(rank).to(dev)
        x[g_t, r_t] = torch.from_numpy(self.features(obs[order])).to(dev)
        mask = x[..., -self.action_dim:] > 0.5
        mask[..., 0] |= ~mask.any(-1)  # a row with no valid action may still drift
        h = ((x - self.mean) / self.std).clamp(-self.clip, self.clip)
        for w, b in zip(self.weights[:-1], self.biases[:-1]):
            h = self.activation(torch.baddbmm(b, h, w))
        logits = torch.baddbmm(self.biases[-1], h, self.weights[-1]).masked_fill(~mask, NEG_INF)
        out[order] = sample_actions(logits, deterministic)[g_t, r_t].cpu().numpy()
        return out


def cql_loss(q_all: torch.Tensor, actions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Conservative Q-learning's regulariser (Kumar et al. 2020, discrete): the mean over the
    batch of logsumexp over the valid actions of Q(s, .) minus Q(s, a) of the action the data
    took. Masked actions are left out of the logsumexp: they cannot be taken, so they need no
    pushing down."""
    q_data = q_all.gather(1, actions[:, None]).squeeze(1)
    return (torch.logsumexp(q_all.masked_fill(~mask, -math.inf), 1) - q_data).mean()


@torch.no_grad()
def _move_toward(network: nn.Module, source: nn.Module, weight: float) -> None:
    """Move every weight of `network` this fraction of the way to `source`'s."""
    for mine, theirs in zip(network.parameters(), source.parameters()):
        mine.lerp_(theirs, weight)


class DuelingQNetwork(nn.Module):
    def __init__(self, state_dim: int, action_dim: int, hidden: tuple, stream: int):
        super().__init__()
        layers: list[nn.Module] = []
        sizes = (state_dim, *hidden)
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.trunk = nn.Sequential(*layers)
        self.value = nn.Sequential(nn.Linear(sizes[-1], stream), nn.ReLU(), nn.Linear(stream, 1))
        self.advantage = nn.Sequential(nn.Linear(sizes[-1], stream), nn.ReLU(),
                                       nn.Linear(stream, action_dim))

    def forward(self, x):
        h = self.trunk(x)
        adv = self.advantage(h)
        return self.value(h) + adv - adv.mean(-1, keepdim=True)


class DQNAgent(BaseAgent):
    """Dueling double DQN: target network, preallocated replay, epsilon schedule, masked argmax
    and masked targets, bootstrapping through truncation (only true terminations stop it)."""

    algorithm = "dqn"
    config_class = DQNConfig
    _not_in_play_copies = ("optimizer", "play_members")  # shared by play_copy, not copied

    def __init__(self, state_dim: int = 36, action_dim: int = 6, config: DQNConfig | None = None,
                 device: str | torch.device = "cpu", seed: int = 0,
                 game: GameConfig | None = None):
        super().__init__(state_dim, action_dim, config, device, game)
        c = self.config
        args = (self.input_dim, action_dim, tuple(c.hidden_sizes), c.stream_size)
        self.q = DuelingQNetwork(*args).to(self.device)
        self.q_target = DuelingQNetwork(*args).to(self.device)
        self.q_target.load_state_dict(self.q.state_dict())
        # The network greedy play uses: a moving average of `q` (play_average_tau), else `q`.
        self.q_play = None
        self.play_average_steps = 0
        if c.play_average_tau > 0:
            self.q_play = DuelingQNetwork(*args).to(self.device)
            self.q_play.load_state_dict(self.q.state_dict())
        # Frozen (observation statistics, network) pairs, oldest first: with play_ensemble > 1,
        # greedy play averages their Q-values with the played network's own.
        self.play_members: list[nn.Sequential] = []
        self.optimizer = torch.optim.Adam(self.q.parameters(), lr=c.learning_rate, foreach=True)
        self.epsilon = c.start_epsilon
        self.updates = 0
        self.rng = np.random.default_rng(seed)
        self.replay = ReplayBuffer(c.buffer_size, self.input_dim, c.n_step, c.gamma,
                                   c.priority_alpha)
        self.beta = c.priority_beta

    def set_progress(self, progress: float) -> None:
        """Linear epsilon decay over the first exploration_fraction of the run; with anneal_lr,
        the learning rate falls linearly to zero at the end of the run; prioritized replay's beta
        rises linearly to 1 at the end of the run."""
        c = self.config
        frac = min(1.0, progress / max(c.exploration_fraction, 1e-9))
        self.epsilon = c.start_epsilon + frac * (c.end_epsilon - c.start_epsilon)
        self.beta = c.priority_beta + min(1.0, max(0.0, progress)) * (1.0 - c.priority_beta)
        if c.anneal_lr:
            for g in self.optimizer.param_groups:
                g["lr"] = c.learning_rate * max(0.0, 1.0 - progress)

    @torch.no_grad()
    def select_action(self, state, mask=None, deterministic: bool = False):
        obs, m, single = self._batch(state, mask)
        if deterministic:
            action = self._masked_argmax(self.played_q(obs), m)
        else:
            action = self._greedy(obs, m)
        if not deterministic and self.epsilon > 0:
            explore = self.rng.random(action.shape[0]) < self.epsilon
            if explore.any():
                valid = m.cpu().numpy()[explore]
                scores = self.rng.random(valid.shape) * valid
                action[explore] = scores.argmax(-1)
        return int(action[0]) if single else action

    def _greedy(self, obs: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
        return self._masked_argmax(self.q(self.obs_norm(obs)), mask)

    @staticmethod
    def _masked_argmax(q: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
        return q.masked_fill(~mask, -math.inf).argmax(-1).cpu().numpy()

    @torch.no_grad()
    def played_q(self, obs: torch.Tensor) -> torch.Tensor:
        """The Q-values greedy play acts on, for network inputs (N, input_dim): the played
        network's (the moving average with play_average_tau, else the learning network), averaged
        with the ensemble's snapshots when there are any."""
        q = self._played_network()(self.obs_norm(obs))
        for member in self.play_members:
            q = q + member(obs)
        return q / (1 + len(self.play_members))

    def _played_network(self) -> nn.Module:
        """The network greedy play uses besides the ensemble: the moving average if kept."""
        return self.q if self.q_play is None else self.q_play

    def _frozen_player(self) -> nn.Sequential:
        """A frozen copy of the played network with its observation statistics: an ensemble
        member. Copied, not rebuilt: building draws from torch's generator, which the learner's
        sampling also draws from."""
        pair = nn.Sequential(self.obs_norm, self._played_network())
        return copy.deepcopy(pair).requires_grad_(False)

    def _snapshot_for_play(self) -> None:
        """Keep a frozen copy of the played network and its observation statistics, dropping the
        oldest beyond play_ensemble - 1."""
        members = self.play_members + [self._frozen_player()]
        self.play_members = members[-(self.config.play_ensemble - 1):]

    def join_ensemble(self, other: DQNAgent, name: str = "the other model") -> None:
        """Add another DQN's greedy player (its played network and its snapshots, each with its
        own observation statistics) to this one's ensemble for greedy play. Runs from other seeds
        err in other places, so two merged default runs beat the mean of the two on all five
        pairs of seeds measured (docs/performance.md). Learning is untouched; this is for play."""
        if not isinstance(other, DQNAgent):
            raise ValueError(f"{name} holds a {other.algorithm.upper()} model; only DQN models "
                             "average Q-values, so join DQN checkpoints")
        # Greedy play computes the view once for every member, and a load rebuilds members in
        # this model's shape: both must match.
        mine = (self.architecture, self.view_constants, self.input_dim)
        theirs = (other.architecture, other.view_constants, other.input_dim)
        if mine != theirs:
            raise ValueError(f"{name} has another shape or view ({theirs[0]}, {theirs[2]} "
                             f"inputs, against {mine[0]}, {mine[2]}); join models of one game "
                             "trained with the same hidden_sizes, stream_size and "
                             "observation_view")
        joined = [other._frozen_player()] + list(other.play_members)
        self.play_members = self.play_members + joined
        # Saved with the weights, so that loading keeps every member.
        self.config = dataclasses.replace(self.config,
                                          play_ensemble=1 + len(self.play_members))

    @torch.no_grad()
    def stored_greedy(self, idx: np.ndarray) -> np.ndarray:
        """Greedy actions for stored transitions: the buffer already holds what the network
        reads, so no second pass through `features`."""
        obs, m, _ = self._batch(self.replay.obs[idx], viewed=True)
        return self._greedy(obs, m)

    def store_transition(self, obs, action, reward, next_obs, terminated, done=None,
                         **kwargs) -> None:
        """Add one decision of every game (a batch, or one). next_obs of a finished game is its
        final observation; `terminated` is true only for real ends, `done` for any end
        (termination or truncation; defaults to `terminated`). The replay buffer holds what
        the network reads, with n-step returns (replay_buffer.ReplayBuffer)."""
        c = self.config
        obs = self.features(np.asarray(obs, dtype=np.float32).reshape(-1, self.state_dim))
        nxt = self.features(np.asarray(next_obs, dtype=np.float32).reshape(-1, self.state_dim))
        reward = np.asarray(reward, dtype=np.float32).reshape(-1) * c.reward_scale
        term = np.asarray(terminated, dtype=bool).reshape(-1)
        ended = term if done is None else np.asarray(done, dtype=bool).reshape(-1) | term
        self.replay.add_step(obs, action, reward, nxt, term, ended)
        if self.update_obs_stats:
            self.obs_norm.update(torch.from_numpy(obs).to(self.device))

    def __len__(self) -> int:
        return len(self.replay)

    def update(self, margin: float = 0.0, cql_alpha: float = 0.0, **kwargs) -> dict[str, float]:
        """`gradient_steps` steps on the TD loss. margin > 0 adds DQfD's large-margin loss,
        treating every stored action as a demonstration: only for a buffer of a teacher's games
        (`warm_start.demonstration_start`). cql_alpha > 0 adds conservative Q-learning's
        regulariser for learning from a fixed dataset (`offline.train_cql`): cql_loss below."""
        c = self.config
        size = len(self)
        if size < max(c.batch_size, 1):
            raise RuntimeError(f"update() needs at least batch_size={c.batch_size} transitions, "
                               f"the buffer has {size}")
        replay = self.replay
        losses, qs, margins, conservative = [], [], [], []
        for _ in range(c.gradient_steps):
            idx = replay.sample(c.batch_size, self.rng)
            weights = None
            if replay.priorities is not None:
                weights = torch.from_numpy(replay.importance_weights(idx, self.beta)).to(
                    self.device)
            obs, nxt, actions, rewards, term, discount = (
                torch.from_numpy(a).to(self.device) for a in replay.arrays(idx))
            next_mask = nxt[:, -self.action_dim:] > 0.5
            next_mask[~next_mask.any(1), 0] = True
            with torch.no_grad():
                xn = self.obs_norm(nxt)
                best = self.q(xn).masked_fill(~next_mask, -math.inf).argmax(-1, keepdim=True)
                target_q = self.q_target(xn).gather(1, best).squeeze(1)
                target = rewards + discount * (1.0 - term) * target_q
            q_all = self.q(self.obs_norm(obs))
            q = q_all.gather(1, actions[:, None]).squeeze(1)
            if weights is None:
                loss = F.smooth_l1_loss(q, target)
            else:
                loss = (weights * F.smooth_l1_loss(q, target, reduction="none")).mean()
            mask = obs[:, -self.action_dim:] > 0.5
            mask[~mask.any(1), 0] = True
            if cql_alpha > 0:
                cql = cql_loss(q_all, actions, mask)
                loss = loss + cql_alpha * cql
                conservative.append(cql.item())
            if margin > 0:
                # max over valid a of Q(s, a) + margin * [a != demonstrated] - Q(s, demonstrated)
                bonus = torch.full_like(q_all, margin).scatter_(1, actions[:, None], 0.0)
                best = (q_all + bonus).masked_fill(~mask, -math.inf).max(1).values
                margin_loss = (best - q).mean()
                loss = loss + margin_loss
                margins.append(margin_loss.item())
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(self.q.parameters(), c.max_grad_norm)
            self.optimizer.step()
            self.updates += 1
            if replay.priorities is not None:
                replay.set_priorities(idx, (np.abs((q - target).detach().cpu().numpy()).astype(
                    np.float64) + c.priority_eps) ** c.priority_alpha)
            if c.target_tau > 0:
                # Polyak averaging: the target trails the network smoothly instead of jumping to
                # it every target_update_interval updates.
                _move_toward(self.q_target, self.q, c.target_tau)
            elif self.updates % c.target_update_interval == 0:
                self.q_target.load_state_dict(self.q.state_dict())
            if self.q_play is not None:
                # A plain mean of every step so far until there are 1 / play_average_tau of them
                # (so the untrained start does not linger), then an exponential moving average.
                self.play_average_steps += 1
                _move_toward(self.q_play, self.q,
                             max(c.play_average_tau, 1.0 / self.play_average_steps))
            if c.play_ensemble > 1 and self.updates % c.play_ensemble_interval == 0:
                self._snapshot_for_play()
            losses.append(loss.item())
            qs.append(q.mean().item())
        out = {"td_loss": float(np.mean(losses)), "q_values": float(np.mean(qs)),
               "epsilon": float(self.epsilon),
               "learning_rate": float(self.optimizer.param_groups[0]["lr"])}
        if margins:
            out["margin_loss"] = float(np.mean(margins))
        if conservative:
            out["cql_loss"] = float(np.mean(conservative))
        if self.replay.priorities is not None:
            out["priority_beta"] = float(self.beta)
        return out

    def _empty_twin(self) -> DQNAgent:
        # Its config says so too, so that nothing takes the copy for a learner with a buffer.
        small = dataclasses.replace(self.config, buffer_size=1)
        return DQNAgent(self.state_dim, self.action_dim, small, self.device)

    def play_copy(self) -> DQNAgent:
        twin = super().play_copy()
        twin.rng = copy.deepcopy(self.rng)  # epsilon-greedy play draws from it
        # The ensemble's snapshots are frozen and never written to again, so copies share them:
        # the league's ten snapshots would otherwise hold 70 more networks.
        twin.play_members = list(self.play_members)
        return twin

    def state_dict(self) -> dict[str, Any]:
        state = {"q": self.q.state_dict(), "q_target": self.q_target.state_dict(),
                 "obs_norm": self.obs_norm.state_dict(), "optimizer": self.optimizer.state_dict(),
                 "updates": self.updates, "epsilon": float(self.epsilon),
                 "config": self.config.to_dict(), "view_constants": dict(self.view_constants)}
        if self.q_play is not None:
            state["q_play"] = self.q_play.state_dict()
            state["play_average_steps"] = self.play_average_steps
        if self.play_members:
            state["play_members"] = [m.state_dict() for m in self.play_members]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._check_architecture(state)
        self._load_view_constants(state)
        self.q.load_state_dict(state["q"])
        self.q_target.load_state_dict(state.get("q_target", state["q"]))
        if self.q_play is not None:
            self.q_play.load_state_dict(state.get("q_play", state["q"]))
            self.play_average_steps = int(state.get("play_average_steps", 0))
        self.obs_norm.load_state_dict(state["obs_norm"])
        self.play_members = []
        if self.config.play_ensemble > 1:
            for member_state in state.get("play_members", [])[-(self.config.play_ensemble - 1):]:
                self._snapshot_for_play()  # a frozen pair of the right shape, then its weights
                self.play_members[-1].load_state_dict(member_state)
        if "optimizer" in state:
            self.optimizer.load_state_dict(state["optimizer"])
        self.updates = int(state.get("updates", 0))
        self.epsilon = float(state.get("epsilon", self.epsilon))


def make_agent(algorithm: str, state_dim: int, action_dim: int, config=None, device="cpu",
               num_envs: int = 1, seed: int = 0, game: GameConfig | None = None) -> BaseAgent:
    if algorithm == "ppo":
        return PPOAgent(state_dim, action_dim, config, device, num_envs=num_envs, game=game)
    if algorithm == "dqn":
        return DQNAgent(state_dim, action_dim, config, device, seed=seed, game=game)
    raise ValueError(f"algorithm {algorithm!r} is unknown: use 'ppo' or 'dqn'")
