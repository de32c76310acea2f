"""PPO: the actor-critic, `PPOAgent` (clipped surrogate, GAE(lambda), masked logits) and
`PolicyStack`, many PPO networks acting as one batched pass (the league's opponents)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import GameConfig, PPOConfig
from .base import NEG_INF, OnPolicyAgent, _mlp, sample_actions, soft_cross_entropy

# The rollout buffers, as a worker hands them over (take_rollout) and a learner takes them in.
ROLLOUT_FIELDS = ("obs", "raw", "mask", "actions", "logprobs", "rewards", "dones", "values")


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


class PPOAgent(OnPolicyAgent):
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

    @property
    def rollout_steps(self) -> int:
        return self.config.n_steps

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

    def take_rollout(self) -> dict[str, np.ndarray]:
        """The full rollout just stored, as arrays (T, N, ...) named by ROLLOUT_FIELDS, and the
        buffer emptied: what a rollout worker (training/rollouts.py) sends its learner."""
        if self.step < self.config.n_steps:
            raise RuntimeError(f"take_rollout() needs a full rollout: {self.step}/"
                               f"{self.config.n_steps} steps stored")
        self.step = 0
        # Copies: on the CPU .numpy() shares the buffers, which the next rollout overwrites
        # while a learner playing ahead still holds this one.
        return {f: getattr(self, f"buf_{f}").cpu().numpy().copy() for f in ROLLOUT_FIELDS}

    def load_rollout(self, parts: list[dict[str, np.ndarray]]) -> None:
        """Rollouts played elsewhere (`take_rollout` of each worker, a slice of the games
        each), side by side in worker order as one rollout of all the games: `update()` then
        learns from them as from a rollout of its own."""
        n = sum(part["actions"].shape[1] for part in parts)
        if n != self.num_envs or self.step:
            self._alloc(n)
        for f in ROLLOUT_FIELDS:
            joined = np.concatenate([part[f] for part in parts], axis=1)
            getattr(self, f"buf_{f}").copy_(torch.from_numpy(joined))
        self.step = self.config.n_steps

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
        # (N,) actions, or (N, A) probabilities (the improved policy of expert iteration).
        soft = np.ndim(actions) == 2
        y = torch.from_numpy(np.asarray(actions, dtype=np.float32 if soft else np.int64)
                             ).to(self.device)
        best = y.argmax(-1) if soft else y
        n = len(y)
        out: dict[str, float] = {}
        if judge:
            with torch.no_grad():
                before = self.net.logits(self.obs_norm(x), mask).argmax(-1)
                out["foreseen"] = float((before == best).float().mean())
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
                loss = soft_cross_entropy(logits, y[idx]) if soft else \
                    F.cross_entropy(logits, y[idx])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                loss_sum += loss.item() * len(idx)
                correct += (logits.argmax(-1) == best[idx]).sum().item()
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

    def update(self, next_obs=None, progress: float | None = None) -> dict[str, float]:
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
