"""Population-based training (pbt.py): members of the Trainer's run on Ray Tune, measured
against a fixed yardstick after each round, the weaker taking a better member's checkpoint and
perturbed settings."""
