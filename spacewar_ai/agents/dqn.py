"""DQN: the dueling Q-network, `DQNAgent` (double DQN, n-step returns, replay, an ensemble for
greedy play) and `cql_loss`, conservative Q-learning's regulariser for learning from datasets."""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import DQNConfig, GameConfig
from ..util.errors import UserError
from .base import OffPolicyAgent, autocast
from .replay_buffer import ReplayBuffer


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


class DQNAgent(OffPolicyAgent):
    """Dueling double DQN: target network, preallocated replay, epsilon schedule, masked argmax
    and masked targets, bootstrapping through truncation (only true terminations stop it)."""

    algorithm = "dqn"
    config_class = DQNConfig
    _not_in_play_copies = ("play_members",)  # shared by play_copy, not copied

    def __init__(self, state_dim: int = 36, action_dim: int = 6, config: DQNConfig | None = None,
                 device: str | torch.device = "cpu", seed: int = 0,
                 game: GameConfig | None = None):
        super().__init__(state_dim, action_dim, config, device, game)
        c = self.config
        args = (self.input_dim, action_dim, tuple(c.hidden_sizes), c.stream_size)
        self.q = DuelingQNetwork(*args).to(self.device)
        self.q_target = DuelingQNetwork(*args).to(self.device)
        self.q_target.load_state_dict(self.q.state_dict())
        # Frozen (observation statistics, network) pairs, oldest first: with play_ensemble > 1,
        # greedy play averages their Q-values with the learning network's own.
        self.play_members: list[nn.Sequential] = []
        self.epsilon = c.start_epsilon
        self.updates = 0
        self.rng = np.random.default_rng(seed)
        self.replay = ReplayBuffer(c.buffer_size, self.input_dim, c.n_step, c.gamma)

    def _make_optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.q.parameters(), lr=self.config.learning_rate, foreach=True)

    def set_progress(self, progress: float) -> None:
        """Linear epsilon decay over the first exploration_fraction of the run; with anneal_lr,
        the learning rate falls linearly to zero at the end of the run."""
        c = self.config
        frac = min(1.0, progress / max(c.exploration_fraction, 1e-9))
        self.epsilon = c.start_epsilon + frac * (c.end_epsilon - c.start_epsilon)
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
        """The Q-values greedy play acts on, for network inputs (N, input_dim): the learning
        network's, averaged with the ensemble's snapshots when there are any."""
        q = self.q(self.obs_norm(obs))
        for member in self.play_members:
            q = q + member(obs)
        return q / (1 + len(self.play_members))

    def _frozen_player(self) -> nn.Sequential:
        """A frozen copy of the learning network with its observation statistics: an ensemble
        member. Copied, not rebuilt: building draws from torch's generator, which the learner's
        sampling also draws from."""
        pair = nn.Sequential(self.obs_norm, self.q)
        return copy.deepcopy(pair).requires_grad_(False)

    def _snapshot_for_play(self) -> None:
        """Keep a frozen copy of the learning network and its observation statistics, dropping the
        oldest beyond play_ensemble - 1."""
        members = self.play_members + [self._frozen_player()]
        self.play_members = members[-(self.config.play_ensemble - 1):]

    def join_ensemble(self, other: DQNAgent, name: str = "the other model") -> None:
        """Add another DQN's greedy player (its learning network and its snapshots, each with its
        own observation statistics) to this one's ensemble for greedy play. Runs from other seeds
        err in other places, so two merged default runs beat the mean of the two on all five
        pairs of seeds measured (docs/performance.md). Learning is untouched; this is for play."""
        if not isinstance(other, DQNAgent):
            raise UserError(f"{name} holds a {other.algorithm.upper()} model; only DQN models "
                            "average Q-values, so join DQN checkpoints")
        # Greedy play computes the view once for every member, and a load rebuilds members in
        # this model's shape: both must match.
        mine, theirs = self.shape, other.shape
        if mine != theirs:
            raise UserError(f"{name} has another shape or view ({theirs[0]}, {theirs[2]} "
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

    def ready(self, steps: int) -> bool:
        c = self.config
        return len(self) >= max(c.learning_starts, c.batch_size) and steps % c.train_frequency == 0

    def update(self, margin: float = 0.0, cql_alpha: float = 0.0) -> dict[str, float]:
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
            obs, nxt, actions, rewards, term, discount = (
                torch.from_numpy(a).to(self.device) for a in replay.arrays(idx))
            next_mask = nxt[:, -self.action_dim:] > 0.5
            next_mask[~next_mask.any(1), 0] = True
            with torch.no_grad(), autocast(self.device, self.learn_dtype):
                xn = self.obs_norm(nxt)
                best = self.q(xn).float().masked_fill(~next_mask, -math.inf).argmax(
                    -1, keepdim=True)
                target_q = self.q_target(xn).float().gather(1, best).squeeze(1)
            target = rewards + discount * (1.0 - term) * target_q
            with autocast(self.device, self.learn_dtype):
                q_all = self.q(self.obs_norm(obs))
            q_all = q_all.float()
            q = q_all.gather(1, actions[:, None]).squeeze(1)
            loss = F.smooth_l1_loss(q, target)
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
            if c.target_tau > 0:
                # Polyak averaging: the target trails the network smoothly instead of jumping to
                # it every target_update_interval updates.
                _move_toward(self.q_target, self.q, c.target_tau)
            elif self.updates % c.target_update_interval == 0:
                self.q_target.load_state_dict(self.q.state_dict())
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

    def play_state(self) -> dict[str, Any]:
        state = {"q": self.q.state_dict(), "q_target": self.q_target.state_dict(),
                 "obs_norm": self.obs_norm.state_dict(),
                 "updates": self.updates, "epsilon": float(self.epsilon),
                 "config": self.config.to_dict(), "view_constants": dict(self.view_constants)}
        if self.play_members:
            state["play_members"] = [m.state_dict() for m in self.play_members]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._check_architecture(state)
        self._load_view_constants(state)
        self.q.load_state_dict(state["q"])
        self.q_target.load_state_dict(state.get("q_target", state["q"]))
        self.obs_norm.load_state_dict(state["obs_norm"])
        self.play_members = []
        if self.config.play_ensemble > 1:
            for member_state in state.get("play_members", [])[-(self.config.play_ensemble - 1):]:
                self._snapshot_for_play()  # a frozen pair of the right shape, then its weights
                self.play_members[-1].load_state_dict(member_state)
        if "optimizer" in state:
            self._load_optimizer_state(state["optimizer"])
        self.updates = int(state.get("updates", 0))
        self.epsilon = float(state.get("epsilon", self.epsilon))
