"""Matches, tournaments, ratings and the arena (ARCHITECTURE.md's rating layer)."""

# What the fork server of this layer's worker processes imports before it forks them (preload.py).
WORKER_PRELOAD = ["spacewar_ai.rating.preload"]
