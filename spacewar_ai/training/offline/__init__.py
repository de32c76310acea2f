"""Learning from recorded games without playing: behaviour cloning and conservative Q-learning
(`--algorithm bc`, `cql`: learners.py).

`spacewar_ai.training.offline` was one module; its public names are here still."""

from .learners import behaviour_clone, train_bc, train_cql

__all__ = ["behaviour_clone", "train_bc", "train_cql"]
