"""Training: every learning algorithm's run, and what runs share.

| module | what it holds |
|---|---|
| run.py | `train(cfg)`: the table of algorithms and the one call that runs any of them |
| trainer.py | `Trainer`: a PPO or DQN run against the league (the loop, saving, TensorBoard) |
| evaluation.py | a run's evaluations and the choice of its best.pt |
| league.py | `League`: curriculum, snapshots, PFSP, champions: who flies ship 1 |
| rollouts.py | the PPO rollout loop; rollout workers (child processes, Ray actors) that play it |
| rollout_child.py | a rollout worker's child process (`python -m`), spoken to through pipes |
| warm_start.py | learning from a pilot before RL (behaviour cloning; DQfD demonstrations) |
| datasets.py | recorded games as Minari datasets (--datagen, --dataset-info) |
| offline.py | behaviour cloning and conservative Q-learning from a dataset |
| sft.py, grpo.py | the language model's LoRA adapter: supervised, then GRPO on game outcomes |
| dagger.py | the language model trained on its own games' states, labelled by a teacher |
| pbt.py | population-based training on Ray Tune |
"""

from .run import ALGORITHMS, train

__all__ = ["ALGORITHMS", "Trainer", "train"]


def __getattr__(name: str):
    # The Trainer loads torch: imported when asked for, so `train`'s table stays light.
    if name == "Trainer":
        from .trainer import Trainer

        return Trainer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
