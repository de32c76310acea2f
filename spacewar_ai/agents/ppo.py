"""PPO: the actor-critic, `PPOAgent` (clipped surrogate, GAE(lambda), masked logits), its
`RolloutBuffer`, `ppo_update` (one update, read top to bottom) and `PolicyStack`, many PPO
networks acting as one batched pass (the league's opponents).

One update's data path, as CleanRL's ppo.py reads it: `decide(obs)` returns a `Decision` (the
sampled actions with what the buffer keeps of them: inputs, mask, log-probabilities, value);
`RolloutBuffer.add(decision, played, reward, done)` stores it; `update(buffer, next_obs,
progress)` bootstraps from `next_obs` and runs `ppo_update` on the full buffer. The agent keeps
no data between two calls (in bfloat16, only its weights cast for play).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import JUMP_COLUMNS, OBS_MASK, GameConfig, PPOConfig
from ..util.errors import UserError
from .base import NEG_INF, OnPolicyAgent, _mlp, autocast, sample_actions, soft_cross_entropy

# A rollout's tensors, by name: what a worker hands over (RolloutBuffer.arrays) and a learner
# joins (RolloutBuffer.joined).
ROLLOUT_FIELDS = ("obs", "raw", "mask", "actions", "logprobs", "rewards", "dones", "values")
# The most rows one forward and backward pass of the update takes: a larger minibatch's
# activations outgrow the processor's cache and cost more per row than its parts do.
PASS_ROWS = 2048


class ActorCritic(nn.Module):
    def __init__(self, state_dim: int, action_dim: int, hidden: tuple, activation: str = "tanh"):
        super().__init__()
        sizes = (state_dim, *hidden)
        self.actor = _mlp(sizes, action_dim, 0.01, activation)
        self.critic = _mlp(sizes, 1, 1.0, activation)

    def logits(self, x, mask):
        return self.actor(x).masked_fill(~mask, NEG_INF)

    def value(self, x, dtype: torch.dtype = torch.float32, cast: ActorCritic | None = None):
        """The critic's value, its hidden layers in `dtype` (base.autocast) or through `cast`
        (this network's copy in bfloat16, as `decide` plays) and its last layer in float32: a
        value rounded to bfloat16 made the networks runs kept weaker."""
        if cast is not None:
            hidden = cast.critic[:-1](x.to(torch.bfloat16))
        elif dtype == torch.float32:  # no autocast to enter, no slice to build
            return self.critic(x).squeeze(-1)
        else:
            with autocast(x.device, dtype):
                hidden = self.critic[:-1](x)
        return self.critic[-1](hidden.float()).squeeze(-1)

    def decide(self, x, mask, cast: ActorCritic | None = None):
        """The masked logits and the value at play, in float32; or with `cast`, this network's
        copy in bfloat16, computed as the update's bfloat16 passes compute them (their matrix
        products in bfloat16, the value's last layer in float32)."""
        if cast is None:
            return self.logits(x, mask), self.value(x)
        logits = cast.actor(x.to(torch.bfloat16)).float().masked_fill(~mask, NEG_INF)
        return logits, self.value(x, cast=cast)


@dataclasses.dataclass
class Decision:
    """The policy's choice at one step of every game (N games), with what learning keeps of it.
    Every action's log-probability is kept: the buffer stores the one of the action actually
    played, which an exploration guide (llm/strategies.LLMExplorationGuide) may have replaced."""

    action: np.ndarray  # (N,) the sampled actions
    x: torch.Tensor  # (N, input_dim) the inputs as the policy read them, normalized
    raw: torch.Tensor  # (N, input_dim) the same before normalization, for the statistics
    mask: torch.Tensor  # (N, A) the valid actions
    logp_all: torch.Tensor  # (N, A) every action's log-probability
    value: torch.Tensor  # (N,) the critic's value, in scaled reward units


class RolloutBuffer:
    """`steps` decisions of each of `games` games, in (steps, games, ...) tensors named by
    ROLLOUT_FIELDS (Stable-Baselines3's habit: the buffer is its own object, filled by `add`)."""

    def __init__(self, steps: int, games: int, input_dim: int, action_dim: int,
                 device: str | torch.device = "cpu"):
        t, n = steps, games
        self.obs = torch.zeros((t, n, input_dim), device=device)  # normalized, as played
        self.raw = torch.zeros((t, n, input_dim), device=device)  # for the statistics
        self.mask = torch.zeros((t, n, action_dim), dtype=torch.bool, device=device)
        self.actions = torch.zeros((t, n), dtype=torch.long, device=device)
        self.logprobs = torch.zeros((t, n), device=device)
        self.rewards = torch.zeros((t, n), device=device)
        self.dones = torch.zeros((t, n), device=device)
        self.values = torch.zeros((t, n), device=device)
        self.step = 0

    @property
    def full(self) -> bool:
        return self.step == self.actions.shape[0]

    def add(self, decision: Decision, played, reward, done) -> None:
        """One step of every game: the decision, the action `played` (the decision's, or a
        guide's), its reward (scaled) and whether the game ended (GAE stops there)."""
        if self.full:
            raise RuntimeError("the rollout buffer is full: update on it first")
        t, device = self.step, self.actions.device
        self.obs[t], self.raw[t], self.mask[t] = decision.x, decision.raw, decision.mask
        played = torch.as_tensor(np.asarray(played), device=device).reshape(-1)
        self.actions[t] = played
        self.logprobs[t] = decision.logp_all.gather(1, played[:, None].long()).squeeze(1)
        self.values[t] = decision.value
        self.rewards[t] = torch.as_tensor(np.asarray(reward, dtype=np.float32), device=device)
        self.dones[t] = torch.as_tensor(np.asarray(done, dtype=np.float32), device=device)
        self.step += 1

    def arrays(self) -> dict[str, np.ndarray]:
        """The full rollout as arrays, and the buffer emptied: what a rollout worker
        (training/online/rollouts.py) sends its learner."""
        if not self.full:
            raise RuntimeError(f"a rollout is handed over full: {self.step}/"
                               f"{self.actions.shape[0]} steps stored")
        self.step = 0
        # Copies: on the CPU .numpy() shares the tensors, which the next rollout overwrites
        # while a learner playing ahead still holds this one.
        return {f: getattr(self, f).cpu().numpy().copy() for f in ROLLOUT_FIELDS}

    @classmethod
    def joined(cls, parts: list[dict[str, np.ndarray]],
               device: str | torch.device = "cpu") -> RolloutBuffer:
        """Rollouts played elsewhere (`arrays` of each worker, a slice of the games each), side
        by side in worker order as one full rollout of all the games."""
        first = parts[0]
        steps, _, width = first["obs"].shape
        games = sum(part["actions"].shape[1] for part in parts)
        buffer = cls(steps, games, width, first["mask"].shape[2], device)
        for f in ROLLOUT_FIELDS:
            joined = np.concatenate([part[f] for part in parts], axis=1)
            getattr(buffer, f).copy_(torch.from_numpy(joined))
        buffer.step = steps
        return buffer


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


def ppo_update(net: ActorCritic, optimizer: torch.optim.Optimizer, c: PPOConfig,
               buffer: RolloutBuffer, next_value: torch.Tensor,
               progress: float | None, dtype: torch.dtype = torch.float32) -> dict[str, float]:
    """One PPO update of `net` on a full rollout: the learning rate annealed to `progress` (0 to
    1, the run's budget), advantages by GAE(lambda) bootstrapped from `next_value`, then
    `update_epochs` passes of shuffled minibatches (each learned in parts of at most PASS_ROWS
    rows) on the clipped surrogate, the value loss and the entropy bonus, the actor's passes
    and the critic's hidden layers in `dtype` (bfloat16 where it pays: base.autocast) and
    everything else in float32. Returns the figures to log, named as CleanRL names them
    (losses/...) so that runs compare side by side."""
    if not buffer.full:
        raise RuntimeError(f"update() needs a full rollout: {buffer.step}/"
                           f"{buffer.actions.shape[0]} steps stored")
    if c.anneal_lr and progress is not None:
        for g in optimizer.param_groups:
            g["lr"] = c.learning_rate * max(0.0, 1.0 - progress)
    with torch.no_grad():
        adv, returns = compute_gae(buffer.rewards, buffer.values, buffer.dones, next_value,
                                   c.gamma, c.gae_lambda)
    b = buffer.actions.numel()
    obs = buffer.obs.reshape(b, -1)
    masks = buffer.mask.reshape(b, -1)
    actions = buffer.actions.reshape(b)
    old_logp = buffer.logprobs.reshape(b)
    adv, returns, values = adv.reshape(b), returns.reshape(b), buffer.values.reshape(b)
    mb = max(1, b // c.num_minibatches)
    stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "old_approx_kl": 0.0,
             "approx_kl": 0.0, "clipfrac": 0.0}
    n_mb = 0
    for _ in range(c.update_epochs):
        perm = torch.randperm(b, device=obs.device)
        for start in range(0, b, mb):
            rows = perm[start:start + mb]
            adv_mb = adv[rows]
            if c.norm_adv and adv_mb.numel() > 1:
                adv_mb = (adv_mb - adv_mb.mean()) / (adv_mb.std() + 1e-8)
            optimizer.zero_grad(set_to_none=True)
            # A minibatch is learned in parts of at most PASS_ROWS rows whose gradients add up:
            # one part's share scales its means, so a minibatch of one part learns as before.
            for part in range(0, len(rows), PASS_ROWS):
                idx, a = rows[part:part + PASS_ROWS], adv_mb[part:part + PASS_ROWS]
                share = len(idx) / len(rows)
                x, mask, old = obs[idx], masks[idx], old_logp[idx]
                with autocast(obs.device, dtype):
                    logits = net.logits(x, mask)
                logits, value = logits.float(), net.value(x, dtype)
                logp_all = torch.log_softmax(logits, -1)
                logp = logp_all.gather(1, actions[idx, None]).squeeze(1)
                probs = logp_all.exp()
                entropy = -(probs * logp_all).masked_fill(~mask, 0.0).sum(-1).mean()
                ratio = (logp - old).exp()
                with torch.no_grad():
                    old_approx_kl = (old - logp).mean()
                    approx_kl = ((ratio - 1) - (logp - old)).mean()
                    clipfrac = ((ratio - 1.0).abs() > c.clip_coef).float().mean()
                pg_loss = torch.max(-a * ratio,
                                    -a * ratio.clamp(1 - c.clip_coef, 1 + c.clip_coef)).mean()
                v_loss = 0.5 * (value - returns[idx]).pow(2).mean()
                loss = pg_loss - c.ent_coef * entropy + c.vf_coef * v_loss
                (loss * share).backward()
                for name, figure in (("policy_loss", pg_loss), ("value_loss", v_loss),
                                     ("entropy", entropy), ("approx_kl", approx_kl),
                                     ("old_approx_kl", old_approx_kl), ("clipfrac", clipfrac)):
                    stats[name] += figure.item() * share
            # Clipped separately: one network's large gradient must not shrink the other's.
            nn.utils.clip_grad_norm_(net.actor.parameters(), c.max_grad_norm)
            nn.utils.clip_grad_norm_(net.critic.parameters(), c.max_grad_norm)
            optimizer.step()
            n_mb += 1
        if c.target_kl and stats["approx_kl"] / n_mb > c.target_kl:
            break
    out = {k: v / max(n_mb, 1) for k, v in stats.items()}
    var_y = returns.var()
    out["explained_variance"] = float(1 - (returns - values).var() / var_y) if var_y > 0 else 0.0
    out["learning_rate"] = optimizer.param_groups[0]["lr"]
    return out


class PPOAgent(OnPolicyAgent):
    """Proximal Policy Optimization: clipped surrogate, GAE(lambda), masked logits. The module
    docstring says how one update's data travels."""

    algorithm = "ppo"
    config_class = PPOConfig

    def __init__(self, state_dim: int = 36, action_dim: int = 6, config: PPOConfig | None = None,
                 device: str | torch.device = "cpu", game: GameConfig | None = None):
        super().__init__(state_dim, action_dim, config, device, game)
        c = self.config
        self.net = ActorCritic(self.input_dim, action_dim, tuple(c.hidden_sizes),
                               c.activation).to(self.device)
        self.updates = 0
        self._cast: ActorCritic | None = None  # the rollout's copy in bfloat16 (`decide`)

    def _make_optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.net.parameters(), lr=self.config.learning_rate, eps=1e-5,
                                foreach=True)

    @property
    def rollout_steps(self) -> int:
        return self.config.n_steps

    def new_buffer(self, games: int) -> RolloutBuffer:
        return RolloutBuffer(self.config.n_steps, games, self.input_dim, self.action_dim,
                             self.device)

    @torch.no_grad()
    def decide(self, obs: np.ndarray) -> Decision:
        """Sampled actions for observations (N, D), with what the buffer keeps of them. A
        learner in bfloat16 plays its rollouts in bfloat16 too, through a copy of the network
        cast once after each change of the weights (`update`, `imitate`, `load_state_dict`):
        autocast would cast them again at every step, which costs what a step's few hundred
        rows gain."""
        raw, mask, _ = self._batch(obs)
        x = self.obs_norm(raw)
        cast = None
        if self.learn_dtype == torch.bfloat16:
            if self._cast is None:
                self._cast = copy.deepcopy(self.net).to(torch.bfloat16)
            cast = self._cast
        logits, value = self.net.decide(x, mask, cast)
        action = sample_actions(logits, False)
        return Decision(action.cpu().numpy(), x, raw, mask, torch.log_softmax(logits, -1),
                        value)

    @torch.no_grad()
    def select_action(self, state, mask=None, deterministic: bool = False):
        """Actions for playing (opponents, evaluation, human play): the actor alone."""
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

    @torch.no_grad()
    def value_of(self, state) -> np.ndarray:
        obs, _, _ = self._batch(state)
        return self.net.value(self.obs_norm(obs)).cpu().numpy()

    def update(self, buffer: RolloutBuffer, next_obs: np.ndarray,
               progress: float | None = None) -> dict[str, float]:
        # The observation statistics change only after the epochs, so the stored inputs,
        # values and log-probabilities all belong to the policy that played the rollout.
        next_value = torch.as_tensor(self.value_of(next_obs), device=self.device)
        out = ppo_update(self.net, self.optimizer, self.config, buffer, next_value, progress,
                         self.learn_dtype)
        self._cast = None
        if self.update_obs_stats:
            self.obs_norm.update(buffer.raw)
        buffer.step = 0
        self.updates += 1
        return out

    def imitate(self, obs, actions, optimizer: torch.optim.Optimizer, batch_size: int,
                epochs: int = 1, generator: torch.Generator | None = None, judge: bool = False,
                on_epoch=None, fit_scaling: bool = True, stop=None,
                unsure_below: float = 1.0) -> dict[str, float]:
        """Fit the actor to `actions` taken at raw observations `obs` (N, D) by masked
        cross-entropy: behaviour cloning (training.behaviour_clone) and the opponent model
        (opponent_model.py). The observation statistics take in the data first (unless
        `fit_scaling` is off); then `epochs` passes in minibatches, shuffled by `generator` or
        else in order. With `judge`, the share of `actions` the actor picked before learning
        anything from them comes back as "foreseen", judged on an even sample of about
        `batch_size` of them. With `unsure_below` under 1 the actor first reads every row and
        learns only from those whose action it gave a probability below that ("foreseen" is
        then judged on every row; "learned" always says how many it learned from): a move it
        already foresees surely teaches it little and costs a pass like any other. Returns the
        last pass's mean loss and agreement over the rows it learned from (each minibatch's
        logits before its own step); `on_epoch(epoch, loss, agreement)` hears every pass, and
        `stop()`, asked after each, ends them early."""
        self._cast = None
        x, mask, _ = self._batch(obs)
        # (N,) actions, or (N, A) probabilities (the improved policy of expert iteration).
        soft = np.ndim(actions) == 2
        y = torch.from_numpy(np.asarray(actions, dtype=np.float32 if soft else np.int64)
                             ).to(self.device)
        best = y.argmax(-1) if soft else y
        n = len(y)
        out: dict[str, float] = {}
        kept = torch.arange(n, device=self.device)
        if unsure_below < 1:
            picked, chance = self._chances(x, mask, best, batch_size)
            kept = torch.nonzero(chance < unsure_below)[:, 0]
            if judge:
                out["foreseen"] = float(picked.float().mean())
            if not len(kept):  # nothing to learn: the figures of a pass, read before it
                out["loss"] = float(-chance.clamp_min(1e-30).log().mean())
                out["accuracy"] = float(picked.float().mean())
        elif judge:
            # A pass over every row cost a tenth of the fit, for a figure that a sample of one
            # minibatch's size gives to about a point; the sample spans the whole data.
            k = min(n, batch_size)
            seen = torch.arange(k, device=self.device) * n // k
            with torch.no_grad(), autocast(self.device, self.learn_dtype):
                before = self.net.logits(self.obs_norm(x[seen]), mask[seen]).argmax(-1)
                out["foreseen"] = float((before == best[seen]).float().mean())
        if fit_scaling:
            self.obs_norm.update(x)
        xn = self.obs_norm(x)
        m = len(kept)
        out["learned"] = float(m)
        for epoch in range(epochs if m else 0):
            order = (kept[torch.randperm(m, generator=generator).to(self.device)]
                     if generator is not None else kept)
            loss_sum = correct = 0.0
            for start in range(0, m, batch_size):
                rows = order[start:start + batch_size]
                idx = self._filled(rows, order, batch_size)
                with autocast(self.device, self.learn_dtype):
                    logits = self.net.logits(xn[idx], mask[idx])
                logits = logits[:len(rows)].float()
                loss = soft_cross_entropy(logits, y[rows]) if soft else \
                    F.cross_entropy(logits, y[rows])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                loss_sum += loss.item() * len(rows)
                correct += (logits.argmax(-1) == best[rows]).sum().item()
            out["loss"], out["accuracy"] = loss_sum / m, correct / m
            if on_epoch is not None:
                on_epoch(epoch, out["loss"], out["accuracy"])
            if stop is not None and stop():
                break
        return out

    def _filled(self, rows: torch.Tensor, pool: torch.Tensor, batch_size: int) -> torch.Tensor:
        """`rows`, then rows of `pool` up to `batch_size` in bfloat16: a batch of a size not seen
        before makes oneDNN build kernels for it, which costs more than the pass, so a partial
        minibatch is filled up with rows whose outputs are dropped."""
        if self.learn_dtype == torch.float32 or len(rows) >= batch_size:
            return rows
        fill = torch.arange(batch_size - len(rows), device=self.device) % len(pool)
        return torch.cat([rows, pool[fill]])

    @torch.no_grad()
    def _chances(self, x, mask, best, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Whether the actor's greedy move is `best` and the probability it gives `best`, for
        every row, before learning anything (the statistics too), read in minibatches of
        `batch_size` rows (the last one filled up, as the fit's are)."""
        n, picked, chance = len(best), [], []
        every = torch.arange(n, device=self.device)
        for start in range(0, n, batch_size):
            rows = every[start:start + batch_size]
            idx = self._filled(rows, every, batch_size)
            with torch.no_grad(), autocast(self.device, self.learn_dtype):
                logits = self.net.logits(self.obs_norm(x[idx]), mask[idx])[:len(rows)].float()
            b = best[rows, None]
            picked.append(logits.argmax(-1) == b[:, 0])
            # softmax over a handful of actions costs several times these elementwise steps
            chance.append(1.0 / torch.exp(logits - logits.gather(1, b)).sum(-1))
        return torch.cat(picked), torch.cat(chance)

    def _empty_twin(self) -> PPOAgent:
        return PPOAgent(self.state_dim, self.action_dim, self.config, self.device)

    def play_state(self) -> dict[str, Any]:
        return {"net": self.net.state_dict(), "obs_norm": self.obs_norm.state_dict(),
                "updates": self.updates,
                "config": self.config.to_dict(), "view_constants": dict(self.view_constants)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._check_architecture(state)
        self._load_view_constants(state)
        self._cast = None
        self.net.load_state_dict(state["net"])
        self.obs_norm.load_state_dict(state["obs_norm"])
        if "optimizer" in state:
            self._load_optimizer_state(state["optimizer"])
        self.updates = int(state.get("updates", 0))


def shown_jumps(state: dict[str, Any]) -> dict[str, Any]:
    """A PPO network's saved state (play_state's entries) widened to read the jumps left that
    observations hold where hyperspace is on, for a network saved before they did: zero weights
    on them, so that it plays as it did until it learns them, and the statistics of a share
    spread evenly over [0, 1], since its long-run statistics barely move for a new input."""
    def widen(t: torch.Tensor, fill: float) -> torch.Tensor:
        new = torch.full((*t.shape[:-1], JUMP_COLUMNS), fill, dtype=t.dtype)
        return torch.cat([t[..., :OBS_MASK], new, t[..., OBS_MASK:]], -1)

    net = dict(state["net"])
    for first in ("actor.0.weight", "critic.0.weight"):
        net[first] = widen(net[first], 0.0)
    norm = dict(state["obs_norm"])
    norm["mean"], norm["var"] = widen(norm["mean"], 0.5), widen(norm["var"], 1.0 / 12.0)
    return {**state, "net": net, "obs_norm": norm}


class PolicyStack:
    """Several PPO actors of one shape played in one batched pass: one `baddbmm` per layer for
    all of them, instead of a forward pass per network. The league's opponents (up to a dozen
    snapshots, a few games each) cost about as much as the learner's own forward pass this way.

    A snapshot of the actors' weights and observation statistics: build a new stack when they
    change. Same masking and Gumbel-max sampling as `PPOAgent.select_action`."""

    def __init__(self, agents: list["PPOAgent"]):
        if not agents:
            raise UserError("PolicyStack needs at least one agent")
        first = agents[0]
        shape = (first.state_dim, first.action_dim, first.architecture, first.view_constants)
        if any(not isinstance(a, PPOAgent)
               or (a.state_dim, a.action_dim, a.architecture, a.view_constants) != shape
               for a in agents):
            raise UserError("PolicyStack needs PPO agents of one shape")
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
