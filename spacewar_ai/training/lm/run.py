"""What every language-model run sets up the same way, written once: SFT (sft.py), DAgger and
expert iteration (dagger.py) and GRPO (grpo.py) each start with `lm_start` (the transformers
extra, torch's threads, the device), load their model (`load_base`, or `continued` for an
adapter trained further), open an `LMRun` (a run_frame.RunFrame with the adapter's folder, a
progress bar and `save`) and keep only their own loop. The imitation pieces SFT and DAgger
share (`split`, `playable`, `imitation_step`, `agreement`, `linear_decay`) are here too, so
that no trainer imports from another.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...config import RunConfig, mask_start
from ...lm.models import ADAPTERS_DIR, load_trainable, require_transformers, save_adapter
from ...lm.pilot import PromptCoder, answer_logits, autocast, prompt_logits
from ...util.progress import DecisionCounter, Progress
from ...util.threads import use_torch_threads
from ..run_frame import RunFrame


def lm_start(cfg: RunConfig) -> str:
    """The start of every LM run: the extra checked, torch's threads set; the device it trains
    on (--device, auto choosing CUDA when there is one)."""
    require_transformers()
    import torch

    use_torch_threads(cfg.train.torch_threads)  # the model loads before the run's frame
    if cfg.train.device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return cfg.train.device


@dataclass
class Start:
    """The adapter a run trains further (`--init-from`), loaded trainable: the model, its
    tokenizer, its folder, the base it names, the view it learned to read and its prompt coder."""

    model: Any
    tokenizer: Any
    folder: Path
    base: str
    view: int
    coder: PromptCoder


def continued(init_from: str, cfg: RunConfig, device: str) -> Start:
    """The adapter `init_from` loaded to train on, torch seeded by the run's seed first."""
    import torch

    torch.manual_seed(cfg.train.seed)
    model, tokenizer, folder, meta = load_trainable(init_from, device)
    view = int(meta.get("view", 1))  # the view the starting adapter learned to read
    return Start(model, tokenizer, folder, meta["base_model"], view,
                 PromptCoder(tokenizer, cfg.game.num_actions, view))

def agreement(model, coder: PromptCoder, obs: np.ndarray, actions: np.ndarray) -> float:
    """The share of decisions where the model's masked argmax (float32, as the pilot plays by
    default) is the teacher's action."""
    hits = answer_logits(model, coder, obs).argmax(-1).cpu().numpy() == actions
    return float(hits.mean()) if len(obs) else 0.0


def playable(obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Which decisions can be learned: an action its own mask calls invalid cannot be the
    pilot's answer (it is at -inf there)."""
    return obs[np.arange(len(obs)), mask_start(obs.shape[1]) + actions] > 0.5


def split(obs: np.ndarray, actions: np.ndarray, examples_wanted: int, held_out: int, seed: int):
    """(train obs, train actions, held-out obs, held-out actions), drawn without replacement."""
    order = np.random.default_rng(seed).permutation(len(obs))
    held = order[:held_out]
    rest = order[held_out:]
    if examples_wanted:
        rest = rest[:examples_wanted]
    return obs[rest], actions[rest], obs[held], actions[held]


def linear_decay(optimizer, steps: int):
    """The learning rate falling linearly from its value to zero over `steps` steps."""
    import torch

    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: max(0.0, 1.0 - k / steps))


def imitation_step(model, optimizer, coder: PromptCoder, obs: np.ndarray, targets, device,
                   bf16: bool) -> float:
    """One gradient step on the cross-entropy of the teacher's actions `targets` (a long tensor,
    or (N, A) probabilities: a planner's improved policy) under the pilot's masked answer at
    `obs`; returns the loss."""
    import torch

    from ...agents.base import soft_cross_entropy

    with autocast(device, bf16):
        logits = prompt_logits(model, coder, obs)
    loss = soft_cross_entropy(logits, targets) if targets.is_floating_point() else \
        torch.nn.functional.cross_entropy(logits.float(), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()



class LMRun(RunFrame):
    """One language-model run (run_frame.RunFrame: name, writer, clock, locks) with its adapter
    folder (`models/adapters/<name>/`, which `lm:<name>` plays), one progress bar and `save`.
    Use it as a context manager: the bar and the writer close however the run ends."""

    def __init__(self, algorithm: str, cfg: RunConfig, quiet: bool = False):
        super().__init__(cfg, cfg.train.named(algorithm), quiet=quiet)
        self.algorithm = algorithm
        self.adapter_dir = ADAPTERS_DIR / self.name
        self.progress: Progress | None = None

    def bar(self, total: int, unit: str) -> Progress:
        """The run's one progress bar, started now; `counter` counts decisions on it."""
        self.progress = Progress(total, self.algorithm, unit, self.quiet)
        self.counter = DecisionCounter(self.progress.bar)
        return self.progress

    def scalars(self, values: dict, step: int, prefix: str | None = None) -> None:
        """Each figure as a TensorBoard scalar `PREFIX/KEY` (prefix: the algorithm), flushed."""
        for key, value in values.items():
            self.writer.add_scalar(f"{prefix or self.algorithm}/{key}", value, step)
        self.writer.flush()

    def save(self, model, base_spec: str, base_model, record: dict) -> None:
        """The adapter so far, with the run's record: its algorithm, `record`, its seconds."""
        save_adapter(model, self.adapter_dir, base_spec, base_model,
                     {"algorithm": self.algorithm, **record,
                      "seconds": round(self.seconds, 1)})

    def __enter__(self) -> LMRun:
        # The adapter's folder is replaced whole at each save: its lock lies beside it.
        self.hold(("adapter",), adapter=self.adapter_dir, logs=self.log_dir)
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if self.progress is not None:
            self.progress.close(kind is not None and not issubclass(kind, KeyboardInterrupt))
        self.close()
