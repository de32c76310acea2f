"""Training: every learning algorithm's run, and what runs share. `train(cfg)` (run.py) runs any of
them; ARCHITECTURE.md maps the modules and the flow of one run."""

from .run import ALGORITHMS, RunRequest, train

__all__ = ["ALGORITHMS", "RunRequest", "Trainer", "train"]


def __getattr__(name: str):
    # The Trainer loads torch: imported when asked for, so `train`'s table stays light.
    if name == "Trainer":
        from .online.trainer import Trainer

        return Trainer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
