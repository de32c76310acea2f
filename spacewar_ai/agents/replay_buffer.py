"""DQN's replay buffer: experience as preallocated arrays, with n-step returns.

`ReplayBuffer` holds what the Q-network reads (network inputs, not raw observations) and
assembles n-step returns from windows of open transitions."""

from __future__ import annotations

import numpy as np


class ReplayBuffer:
    """`capacity` transitions of network inputs `width` wide; the oldest are overwritten first.

    `add_step` takes one decision of every game of a batch; a transition enters the arrays once
    its `n_step` rewards are known or its game ended, holding their discounted sum and the
    discount to apply to the bootstrap (gamma ** decisions summed)."""

    def __init__(self, capacity: int, width: int, n_step: int, gamma: float) -> None:
        self.capacity = int(capacity)
        self.n_step = int(n_step)
        self.gamma = float(gamma)
        self.obs = np.zeros((capacity, width), dtype=np.float32)
        self.next = np.zeros((capacity, width), dtype=np.float32)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=np.float32)
        self.discount = np.zeros(capacity, dtype=np.float32)
        self.pos = 0
        self.full = False
        self._pending: dict[str, np.ndarray] | None = None  # n-step windows, built on first add
        self._window_step = 0

    def __len__(self) -> int:
        return self.capacity if self.full else self.pos

    def add_step(self, obs: np.ndarray, action, reward: np.ndarray, next_obs: np.ndarray,
                 terminated: np.ndarray, ended: np.ndarray) -> None:
        """One decision of k games: network inputs (k, width) before and after, actions, rewards
        (already scaled), `terminated` (real ends) and `ended` (any end, truncations included).
        The windows are (n, k) arrays, one slot per start step, so the bookkeeping is a few
        array operations per call."""
        k = obs.shape[0]
        n = self.n_step
        w = self._pending
        if w is None or w["obs"].shape[1] != k:
            w = self._pending = {
                "obs": np.zeros((n, k, obs.shape[1]), np.float32),
                "action": np.zeros((n, k), np.int64), "ret": np.zeros((n, k), np.float32),
                "open": np.zeros((n, k), bool), "age": np.zeros(n, np.int64)}
            self._window_step = 0
        slot = self._window_step % n
        w["obs"][slot] = obs
        w["action"][slot] = np.asarray(action).reshape(-1)
        w["ret"][slot] = 0.0
        w["open"][slot] = True
        w["age"][slot] = 0
        for s in range(n):
            if not w["open"][s].any():
                continue
            age = int(w["age"][s])
            opened = w["open"][s]
            w["ret"][s] += np.where(opened, (self.gamma ** age) * reward, 0.0)
            emit = opened & (ended | (age == n - 1))
            if emit.any():
                self._add(w["obs"][s][emit], w["action"][s][emit], w["ret"][s][emit],
                          next_obs[emit], terminated[emit], self.gamma ** (age + 1))
                w["open"][s] &= ~emit
            w["age"][s] = age + 1
        self._window_step += 1

    def _add(self, obs, action, ret, next_obs, terminated, discount: float) -> None:
        k = obs.shape[0]
        idx = (self.pos + np.arange(k)) % self.capacity
        self.obs[idx] = obs
        self.next[idx] = next_obs
        self.actions[idx] = action
        self.rewards[idx] = ret
        self.terminated[idx] = terminated
        self.discount[idx] = discount
        if self.pos + k >= self.capacity:
            self.full = True
        self.pos = int((self.pos + k) % self.capacity)

    def sample(self, batch_size: int, rng: np.random.Generator) -> np.ndarray:
        """Slots to learn from, uniformly."""
        return rng.integers(0, len(self), batch_size)

    def arrays(self, idx: np.ndarray) -> tuple[np.ndarray, ...]:
        """obs, next, actions, rewards, terminated, discount of the slots idx."""
        return tuple(a[idx] for a in (self.obs, self.next, self.actions, self.rewards,
                                      self.terminated, self.discount))
