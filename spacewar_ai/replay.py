"""Prioritized sampling for DQN's replay buffer (Schaul et al. 2016, proportional variant).

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
