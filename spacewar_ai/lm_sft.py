"""Supervised fine-tuning of the LM pilot with LoRA: `--algorithm sft --dataset NAME
--base-model MODEL`.

The teacher's decisions in a recorded dataset (`--datagen`; one pilot's side with
`--dataset-pilot`) become examples: the prompt the pilot reads (lm_pilot.PromptCoder, the same
token ids) and the index the teacher played. A LoRA adapter (peft; rank `[train] lm_lora_rank`,
alpha twice the rank, on the attention's q and v projections) is trained with trl's SFTTrainer,
the loss on the answer token only. `lm_held_out` decisions, drawn before training and never
trained on, measure agreement with the teacher (the masked argmax the pilot plays) before
training and after each epoch.

The adapter is saved in `models/adapters/<run>/` with `spacewar_lm.json` naming its base, so
`lm:<run>` (or `lm:MODEL+<run>`) plays it. TensorBoard (`runs/<run>/`): trl's `train/loss`,
`train/learning_rate`, and `lm/agreement` on the held-out decisions.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .config import OBS_MASK, RunConfig
from .lm_models import ADAPTERS_DIR, load_base, require_transformers, save_adapter
from .lm_pilot import PromptCoder, masked_answer_logits
from .threads import use_torch_threads


def agreement(model, coder: PromptCoder, obs: np.ndarray, actions: np.ndarray,
              batch: int = 32) -> float:
    """The share of decisions where the model's masked argmax is the teacher's action."""
    import torch

    was_training = model.training
    model.eval()
    hits = 0
    with torch.no_grad():
        for i in range(0, len(obs), batch):
            o = obs[i:i + batch]
            logits = masked_answer_logits(model, coder, coder.full(o), o[:, OBS_MASK:] > 0.5)
            hits += int((logits.argmax(-1).cpu().numpy() == actions[i:i + batch]).sum())
    model.train(was_training)
    return hits / max(1, len(obs))


def examples(coder: PromptCoder, obs: np.ndarray, actions: np.ndarray) -> dict[str, list]:
    """Pre-tokenized examples for SFTTrainer: the prompt and the answer token, the loss on the
    answer alone."""
    ids, masks = [], []
    for prompt, a in zip(coder.full(obs), actions):
        ids.append(prompt + [coder.answer_ids[int(a)]])
        masks.append([0] * len(prompt) + [1])
    return {"input_ids": ids, "completion_mask": masks}


def split(obs: np.ndarray, actions: np.ndarray, examples_wanted: int, held_out: int, seed: int):
    """(train obs, train actions, held-out obs, held-out actions), drawn without replacement."""
    order = np.random.default_rng(seed).permutation(len(obs))
    held = order[:held_out]
    rest = order[held_out:]
    if examples_wanted:
        rest = rest[:examples_wanted]
    return obs[rest], actions[rest], obs[held], actions[held]


def train_sft(cfg: RunConfig, quiet: bool = False) -> dict:
    """--algorithm sft: a LoRA adapter on --base-model trained on the dataset's decisions."""
    require_transformers("trl")
    import tempfile

    import torch
    from datasets import Dataset
    from peft import LoraConfig, get_peft_model
    from torch.utils.tensorboard import SummaryWriter
    from transformers import TrainerCallback
    from transformers.integrations import TensorBoardCallback
    from trl import SFTConfig, SFTTrainer

    from .datasets import arrays

    t = cfg.train
    use_torch_threads(t.torch_threads)
    obs, actions = arrays(t.dataset, t.dataset_pilot or None, cfg.game)
    if len(obs) <= t.lm_held_out:
        raise ValueError(f"dataset {t.dataset} has {len(obs)} decisions, no more than the "
                         f"{t.lm_held_out} held out ([train] lm_held_out): record more games or "
                         "lower lm_held_out")
    train_obs, train_actions, held_obs, held_actions = split(obs, actions, t.lm_examples,
                                                             t.lm_held_out, t.seed)
    name = t.run_name or f"sft-s{t.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    adapter_dir = ADAPTERS_DIR / name
    log_dir = Path(t.log_dir) / name
    torch.manual_seed(t.seed)
    model, tokenizer = load_base(t.base_model)
    coder = PromptCoder(tokenizer, cfg.game.num_actions)
    peft_model = get_peft_model(model, LoraConfig(
        r=t.lm_lora_rank, lora_alpha=2 * t.lm_lora_rank, lora_dropout=0.0,
        target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    writer = SummaryWriter(str(log_dir))
    before = agreement(peft_model, coder, held_obs, held_actions)
    writer.add_scalar("lm/agreement", before, 0)
    if not quiet:
        print(f"SFT of {t.base_model} on {len(train_obs):,} decisions of {t.dataset}: agreement "
              f"with the teacher on {len(held_obs)} held-out decisions before training "
              f"{before:.1%}")
    scores = {"before": before}

    class Agreement(TrainerCallback):
        def on_epoch_end(self, args, state, control, **kwargs):
            score = agreement(peft_model, coder, held_obs, held_actions)
            scores["after"] = score
            writer.add_scalar("lm/agreement", score, state.global_step)
            writer.flush()
            if not quiet:
                print(f"  epoch {round(state.epoch or 0)}: agreement {score:.1%}, "
                      f"{state.global_step} steps")

    began = time.time()
    with tempfile.TemporaryDirectory(prefix="sft-") as scratch:
        args = SFTConfig(
            output_dir=scratch, num_train_epochs=t.lm_epochs,
            per_device_train_batch_size=t.lm_batch_size, learning_rate=t.lm_learning_rate,
            lr_scheduler_type="linear", warmup_steps=0, logging_steps=10, save_strategy="no",
            report_to="none", completion_only_loss=True,
            seed=t.seed, data_seed=t.seed, use_cpu=not torch.cuda.is_available(),
            disable_tqdm=quiet, dataloader_num_workers=0)
        trainer = SFTTrainer(model=peft_model, args=args, processing_class=tokenizer,
                             train_dataset=Dataset.from_dict(examples(coder, train_obs,
                                                                      train_actions)),
                             callbacks=[TensorBoardCallback(writer), Agreement()])
        result = trainer.train()
    seconds = time.time() - began
    after = scores.get("after", before)
    save_adapter(peft_model, adapter_dir, t.base_model, model,
                 {"algorithm": "sft", "dataset": t.dataset, "dataset_pilot": t.dataset_pilot,
                  "examples": len(train_obs), "agreement": after, "seconds": round(seconds, 1)})
    writer.close()
    print(f"done: SFT on {len(train_obs):,} decisions in {seconds / 60:.1f} minutes, agreement "
          f"{before:.1%} -> {after:.1%}; play it as lm:{name} -> {adapter_dir}")
    return {"adapter_dir": str(adapter_dir), "log_dir": str(log_dir), "agreement_before": before,
            "agreement": after, "loss": result.training_loss, "seconds": seconds}
