"""Supervised fine-tuning of the LM pilot with LoRA: `--algorithm sft --dataset NAME
--base-model MODEL` (docs/lm.md, "Supervised fine-tuning with LoRA").

The teacher's decisions in a dataset become examples: the prompt the pilot reads
(lm.pilot.PromptCoder) and the index the teacher played. A LoRA adapter on the top
`[sft] lora_layers` decoder layers is trained on the cross-entropy of that index under the
pilot's own masked answer (lm.pilot.prompt_logits); `[sft] held_out` decisions measure the
agreement. The adapter is saved in `models/adapters/<run>/` and plays as `lm:<run>`;
TensorBoard's tags are under `lm/`."""

from __future__ import annotations

import math
import time

import numpy as np

from ...config import RunConfig
from ...lm.models import add_lora, load_base
from ...lm.pilot import PromptCoder
from ...util.errors import UserError
from .run import LMRun, agreement, imitation_step, linear_decay, lm_start, playable, split


def train_sft(cfg: RunConfig, quiet: bool = False) -> dict:
    """--algorithm sft: a LoRA adapter on --base-model trained on the dataset's decisions."""
    device = lm_start(cfg)
    import torch

    from ..datasets import arrays

    t, s = cfg.train, cfg.sft
    obs, actions = arrays(t.dataset, t.dataset_pilot or None, cfg.game)
    keep = playable(obs, actions)
    obs, actions = obs[keep], actions[keep]
    if len(obs) <= s.held_out:
        raise UserError(f"dataset {t.dataset} has {len(obs)} decisions, no more than the "
                        f"{s.held_out} held out ([sft] held_out): record more games or "
                        "lower held_out")
    train_obs, train_actions, held_obs, held_actions = split(obs, actions, s.examples,
                                                             s.held_out, t.seed)
    torch.manual_seed(t.seed)
    model, tokenizer = load_base(s.base_model, device)
    coder = PromptCoder(tokenizer, cfg.game.num_actions, s.view)
    peft_model = add_lora(model, s.lora_rank, s.lora_layers)
    with LMRun("sft", cfg, quiet) as run:
        return _train(run, cfg, peft_model, model, coder, train_obs, train_actions, held_obs,
                      held_actions, device)


def _train(run, cfg: RunConfig, peft_model, model, coder, train_obs, train_actions, held_obs,
           held_actions, device) -> dict:
    """The SFT loop proper: epochs of shuffled batches, agreement after each."""
    import torch

    t, s = cfg.train, cfg.sft
    before = agreement(peft_model, coder, held_obs, held_actions)
    run.scalars({"agreement": before}, 0, "lm")
    if not run.quiet:
        print(f"SFT of {s.base_model} on {len(train_obs):,} decisions of {t.dataset}: agreement "
              f"with the teacher on {len(held_obs)} held-out decisions before training "
              f"{before:.1%}")
    per_epoch = math.ceil(len(train_obs) / s.batch_size)
    optimizer = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad],
                                  lr=s.learning_rate)
    schedule = linear_decay(optimizer, per_epoch * s.epochs)
    rng = np.random.default_rng(t.seed)
    targets = torch.as_tensor(train_actions, dtype=torch.long, device=device)
    after, losses, step, training = before, [], 0, 0.0
    total_steps, saved_at, seen = per_epoch * s.epochs, time.time(), 0
    run.start_clock()

    def save(complete: bool) -> None:
        run.save(peft_model, s.base_model, model,
                 {"view": s.view, "dataset": t.dataset, "dataset_pilot": t.dataset_pilot,
                  "examples": len(train_obs), "steps": step, "complete": complete,
                  # Agreement is measured at an epoch's end; a save between has none yet.
                  **({"agreement": after} if complete else {}),
                  "examples_per_second": round(seen / max(training, 1e-9), 2)})

    bar = run.bar(total_steps, "step")
    peft_model.train()
    timed_out = False
    for epoch in range(1, s.epochs + 1):
        if timed_out:
            break
        order = rng.permutation(len(train_obs))
        for start in range(0, len(order), s.batch_size):
            rows = order[start:start + s.batch_size]
            tick = time.perf_counter()
            losses.append(imitation_step(peft_model, optimizer, coder, train_obs[rows],
                                         targets[rows], device, s.bf16))
            schedule.step()
            training += time.perf_counter() - tick
            step += 1
            seen += len(rows)
            bar.update(1)
            # A kill costs at most about save_seconds of training: the adapter so far is saved
            # (marked incomplete, with its step) and plays as any other.
            if step < total_steps and time.time() - saved_at >= t.save_seconds > 0:
                save(False)
                saved_at = time.time()
            if step % 10 == 0 or step == total_steps:
                run.scalars({"loss": float(np.mean(losses[-10:])),
                         "learning_rate": schedule.get_last_lr()[0]}, step, "lm")
                bar.note(loss=f"{np.mean(losses[-10:]):.3f}")
            if run.out_of_time():  # --minutes: the adapter as far as it got, measured and saved
                timed_out = True
                break
        after = agreement(peft_model, coder, held_obs, held_actions)
        run.scalars({"agreement": after}, step, "lm")
        bar.say(f"  epoch {epoch}: agreement {after:.1%}, "
                f"loss {np.mean(losses[-per_epoch:]):.3f}")
    bar.close()
    seconds = run.seconds
    rate = seen / max(training, 1e-9)  # agreement's passes left out
    run.scalars({"examples_per_second": rate}, step, "lm")
    save(True)
    print(f"done: SFT on {len(train_obs):,} decisions in {seconds / 60:.1f} minutes, agreement "
          f"{before:.1%} -> {after:.1%}; play it as lm:{run.name} -> {run.adapter_dir}")
    return {"adapter_dir": str(run.adapter_dir), "log_dir": str(run.log_dir),
            "agreement_before": before,
            "agreement": after, "loss": float(np.mean(losses[-per_epoch:])), "seconds": seconds,
            "examples_per_second": rate}
