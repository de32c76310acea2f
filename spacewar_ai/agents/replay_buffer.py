"""DQN's replay buffer: experience as preallocated arrays, n-step returns, optional priorities.

`ReplayBuffer` holds what the Q-network reads (network inputs, not raw observations), assembles
n-step returns from windows of open transitions, and, for prioritized replay (Schaul et al. 2016,
proportional variant), keeps one priority per slot in a `SumTree`.

`SumTree` holds one priority per buffer slot in a binary tree whose inner nodes are the sums of
their children, so drawing a slot with probability proportional to its priority, and changing a
priority, each cost one walk from root to leaf. Both work on whole batches of slots: every level
of the walk is a few numpy operations over the batch, not a Python loop over slots.
"""

from __future__ import annotations

import numpy as np


class SumTree:
    """Priorities of `capacity` slots; slots never written have priority 0 and are never drawn."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"SumTree capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.leaves = 1 << max(0, (capacity - 1).bit_length())  # a power of two >= capacity
        self.depth = self.leaves.bit_length() - 1
        # Parents are always recomputed from their children, never adjusted by differences, so
        # rounding does not pile up over millions of updates; float64 keeps each sum near exact.
        self.tree = np.zeros(2 * self.leaves, dtype=np.float64)  # node k's children: 2k, 2k+1

    @property
    def total(self) -> float:
        return float(self.tree[1])

    def get(self, slots: np.ndarray) -> np.ndarray:
        return self.tree[self.leaves + np.asarray(slots, dtype=np.int64)]

    def set(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        """Set the slots' priorities (>= 0). A slot named twice keeps its last priority."""
        slots = np.asarray(slots, dtype=np.int64).reshape(-1)
        p = np.asarray(priorities, dtype=np.float64).reshape(-1)
        if slots.size == 0:
            return
        if slots.min() < 0 or slots.max() >= self.capacity:
            raise IndexError(f"slots must lie in [0, {self.capacity}), got {slots.min()}..."
                             f"{slots.max()}")
        if not np.all(np.isfinite(p)) or p.min() < 0:
            raise ValueError("priorities must be finite and >= 0")
        node = self.leaves + slots
        self.tree[node] = p
        for _ in range(self.depth):
            # Each parent is recomputed from both children, so a parent named twice gets the same
            # sum twice: no need to deduplicate.
            node = node >> 1
            self.tree[node] = self.tree[2 * node] + self.tree[2 * node + 1]

    def find(self, mass: np.ndarray) -> np.ndarray:
        """For each value u in [0, total), the slot whose cumulative priority range holds it."""
        u = np.asarray(mass, dtype=np.float64).copy()
        node = np.ones(u.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = 2 * node
            left_sum = self.tree[left]
            right = u >= left_sum
            # Rounding can leave u just past a subtree's sum; never step into an empty subtree.
            right &= self.tree[left + 1] > 0
            u = np.where(right, u - left_sum, u)
            node = left + right
        return node - self.leaves

    def sample(self, batch_size: int, rng: np.random.Generator) -> np.ndarray:
        """`batch_size` slots drawn in proportion to priority, one from each of `batch_size` equal
        slices of the total mass (stratified, as in the paper: less variance than i.i.d. draws)."""
        total = self.total
        if total <= 0:
            raise RuntimeError("cannot sample from a SumTree whose priorities are all 0")
        edges = np.arange(batch_size, dtype=np.float64)
        return self.find((edges + rng.random(batch_size)) * (total / batch_size))


class ReplayBuffer:
    """`capacity` transitions of network inputs `width` wide; the oldest are overwritten first.

    `add_step` takes one decision of every game of a batch; a transition enters the arrays once
    its `n_step` rewards are known or its game ended, holding their discounted sum and the
    discount to apply to the bootstrap (gamma ** decisions summed). With `priority_alpha > 0`,
    `priorities` draws slots in proportion to their last TD error."""

    def __init__(self, capacity: int, width: int, n_step: int, gamma: float,
                 priority_alpha: float = 0.0) -> None:
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
        # The largest priority seen: new transitions get it, so that each is drawn at least about
        # once before its error is known.
        self.priorities = SumTree(capacity) if priority_alpha > 0 else None
        self.max_priority = 1.0
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
        if self.priorities is not None:
            self.priorities.set(idx, np.full(k, self.max_priority))
        if self.pos + k >= self.capacity:
            self.full = True
        self.pos = int((self.pos + k) % self.capacity)

    def sample(self, batch_size: int, rng: np.random.Generator) -> np.ndarray:
        """Slots to learn from: uniform, or in proportion to priority."""
        if self.priorities is None:
            return rng.integers(0, len(self), batch_size)
        return self.priorities.sample(batch_size, rng)

    def arrays(self, idx: np.ndarray) -> tuple[np.ndarray, ...]:
        """obs, next, actions, rewards, terminated, discount of the slots idx."""
        return tuple(a[idx] for a in (self.obs, self.next, self.actions, self.rewards,
                                      self.terminated, self.discount))

    def importance_weights(self, idx: np.ndarray, beta: float) -> np.ndarray:
        """Loss weights (N * P(i)) ** -beta of prioritized draws: they undo the bias of drawing by
        priority, fully at beta = 1. Divided by the batch's largest, so steps only ever shrink."""
        w = (len(self) * self.priorities.get(idx) / self.priorities.total) ** -beta
        return (w / w.max()).astype(np.float32)

    def set_priorities(self, idx: np.ndarray, priorities: np.ndarray) -> None:
        self.priorities.set(idx, priorities)
        self.max_priority = max(self.max_priority, float(priorities.max()))
