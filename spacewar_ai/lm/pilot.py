"""The LM pilot: a causal language model that reads the text view and answers an action index.

`lm:MODEL[+ADAPTER][@OPTIONS]` (lm/models.py says what MODEL and ADAPTER may be). A decision is
one forward pass for the whole batch: the preamble's keys and values are computed once, each
game's situation runs after them, and the answer is read from the index tokens' logits at the
last position with invalid actions at -inf, the highest played or one sampled at `temperature`.
`PromptCoder` is the one place prompts become token ids, so training sees what the pilot reads."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ..config import mask_start
from ..game.pilot import Pilot
from .models import LMError, lm_identity, lm_view, load_lm
from .view import ANSWER, DEFAULT_VIEW, preamble, situations


class PromptCoder:
    """Token ids of prompts and answers for one tokenizer. The preamble is encoded on its own
    (with the tokenizer's start token, if it adds one) and each situation after it without, so
    the preamble's cache fits every prompt."""

    def __init__(self, tokenizer, num_actions: int, view: int = DEFAULT_VIEW):
        self.tokenizer = tokenizer
        self.num_actions = num_actions
        self.view = int(view)  # which text view (lm/view.py VIEWS) prompts are written in
        self.prefix = tokenizer(preamble(num_actions)).input_ids
        # Each index must be one token where it is read, after the prompt's last line (a
        # tokenizer may spell a digit differently at the start of a text).
        context = tokenizer(ANSWER, add_special_tokens=False).input_ids
        answers = [tokenizer(ANSWER + str(a), add_special_tokens=False).input_ids
                   for a in range(num_actions)]
        if any(len(ids) != len(context) + 1 or ids[:-1] != context for ids in answers) or \
                len({ids[-1] for ids in answers}) != len(answers):
            raise LMError("this tokenizer does not give each action index (0-9) a token of its "
                          "own after the prompt, where the LM pilot reads its answer; use "
                          "another model")
        self.answer_ids = [ids[-1] for ids in answers]

    def situations(self, obs: np.ndarray) -> list[list[int]]:
        """Token ids of each observation's situation (what follows the preamble)."""
        texts = situations(obs, self.view)  # one tokenizer call for the batch
        return self.tokenizer(texts, add_special_tokens=False).input_ids if texts else []

    def full(self, obs: np.ndarray) -> list[list[int]]:
        """Whole prompts: preamble + situation, as training reads them."""
        return [self.prefix + ids for ids in self.situations(obs)]


def masked_answer_logits(model, coder: PromptCoder, ids: list[list[int]], masks, cache=None):
    """Logits of the index tokens after each prompt (N, num_actions), invalid ones -inf.
    `ids` are whole prompts, or situations when `cache` holds the preamble's keys and values
    (repeated for the batch). Right-padded: each row is read at its own last token."""
    import torch

    device = next(model.parameters()).device
    n = len(ids)
    length = max(len(row) for row in ids)
    pad = coder.tokenizer.pad_token_id
    input_ids = torch.full((n, length), pad, dtype=torch.long)
    attention = torch.zeros((n, length), dtype=torch.long)
    for i, row in enumerate(ids):
        input_ids[i, :len(row)] = torch.tensor(row)
        attention[i, :len(row)] = 1
    last = torch.tensor([len(row) - 1 for row in ids])
    if cache is not None:
        attention = torch.cat([torch.ones((n, len(coder.prefix)), dtype=torch.long), attention], 1)
    # Only the last position's logits of the index tokens are needed: the decoder's hidden state
    # there times those rows of the output layer, not the whole vocabulary at every position.
    out = model.get_decoder()(input_ids=input_ids.to(device), attention_mask=attention.to(device),
                              cache=cache, use_cache=cache is not None)
    hidden = out.last_hidden_state[torch.arange(n, device=device), last.to(device)]
    head = model.get_output_embeddings()
    logits = hidden @ head.weight[coder.answer_ids].T
    if getattr(head, "bias", None) is not None:
        logits = logits + head.bias[coder.answer_ids]
    valid = torch.as_tensor(np.asarray(masks, dtype=bool), device=device)
    return logits.masked_fill(~valid, float("-inf"))


def preamble_cache(model, coder: PromptCoder):
    """The decoder's keys and values of the preamble alone (batch of one)."""
    import torch

    device = next(model.parameters()).device
    return model.get_decoder()(input_ids=torch.tensor([coder.prefix], device=device),
                               use_cache=True).cache


def prompt_logits(model, coder: PromptCoder, obs: np.ndarray, cache=None):
    """masked_answer_logits of a batch of observations: the preamble's keys and values (`cache`,
    else computed now under the current weights, with gradients, as SFT and GRPO need) repeated
    for every row, then the situations."""
    cache = preamble_cache(model, coder) if cache is None else cache
    cache.batch_repeat_interleave(len(obs))
    masks = obs[:, mask_start(obs.shape[1]):] > 0.5
    return masked_answer_logits(model, coder, coder.situations(obs), masks,
                                cache=cache)


def answer_logits(model, coder: PromptCoder, obs: np.ndarray, bf16: bool = False,
                  batch: int = 64):
    """prompt_logits without gradients, in batches, the model in eval mode (its mode restored)."""
    import torch

    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    with torch.no_grad(), autocast(device, bf16):
        out = [prompt_logits(model, coder, obs[i:i + batch]) for i in range(0, len(obs), batch)]
    model.train(was_training)
    return torch.cat(out)


def autocast(device, bf16: bool):
    """The context training and play in bfloat16 run under (float32 weights kept)."""
    import torch

    kind = device.type if hasattr(device, "type") else str(device).split(":")[0]
    return torch.autocast(kind, dtype=torch.bfloat16, enabled=bool(bf16))


class LMPilot(Pilot):
    """A language model flying ships: act(obs (N, D)) -> actions (N,)."""

    def __init__(self, model, tokenizer, name: str, num_actions: int = 6,
                 temperature: float = 0.0, seed: int = 0, view: int = DEFAULT_VIEW,
                 bf16: bool = False):
        import torch

        self.model = model
        # bfloat16 autocast over the model's own weights (training's games), applied to this
        # pilot's passes alone: the other pilots of a game keep their own precision.
        self.bf16 = bool(bf16)
        self._device = next(model.parameters()).device
        self.coder = PromptCoder(tokenizer, num_actions, view)
        self.name = f"lm:{name}"
        self.identity = self.name  # lm_pilot() names the adapter's contents too
        self.temperature = float(temperature)
        self._generator = torch.Generator().manual_seed(seed)
        self._prefix_cache = None

    def logits(self, obs: np.ndarray):
        """The masked index logits of a batch of observations (N, num_actions); the preamble's
        cache is computed once and copied for each batch."""
        import torch

        obs = np.asarray(obs, dtype=np.float32)
        with torch.no_grad(), autocast(self._device, self.bf16):
            if self._prefix_cache is None:
                self._prefix_cache = preamble_cache(self.model, self.coder)
            return prompt_logits(self.model, self.coder, obs, copy.deepcopy(self._prefix_cache))

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        """Actions for every row; with `active`, only those games are read (the others, already
        over, get 0), so a batch costs what its running games cost."""
        import torch

        obs = np.asarray(obs, dtype=np.float32)
        out = np.zeros(obs.shape[0], dtype=np.int64)
        rows = np.arange(obs.shape[0]) if active is None else np.flatnonzero(active)
        if rows.size == 0:
            return out
        logits = self.logits(obs[rows]).float().cpu()
        if self.temperature > 0:
            probs = torch.softmax(logits / self.temperature, dim=-1)
            actions = torch.multinomial(probs, 1, generator=self._generator).view(-1)
        else:
            actions = logits.argmax(-1)
        out[rows] = actions.numpy()
        return out


DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp32": "float32", "float32": "float32"}
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class LMOptions:
    """What follows @ in `lm:MODEL[+ADAPTER][@OPTION,...]`, parsed where the spec is
    (pilots.parse_spec): a number >= 0, the sampling temperature (0, the default, plays the most
    likely action); `bf16` to run in bfloat16 (faster on CPUs with bfloat16 instructions and on
    GPUs; float32, the default, gives the same games on every machine); `cuda` or `cpu`, the
    device (None, the default: CUDA where torch reports it, else the CPU). `shown` is the
    options as written without the device, which a pilot's name keeps: the device is where a
    pilot runs, not who it is."""

    temperature: float = 0.0
    dtype: str = "float32"
    device: str | None = None
    shown: str = ""


def parse_options(model: str, options: str, spec: str) -> LMOptions:
    """The options (the text after @) of the lm: spec `spec`, whose model part is `model`;
    LMError naming the spec and the fix for an option no spec can mean, or no model."""
    temperature, dtype, device = 0.0, "float32", None
    for opt in filter(None, (o.strip().lower() for o in options.split(","))):
        if opt in DTYPES:
            dtype = DTYPES[opt]
            continue
        if opt in DEVICES:
            device = opt
            continue
        try:
            temperature = float(opt)
        except ValueError:
            temperature = -1.0
        if not 0 <= temperature < float("inf"):
            raise LMError(f"{spec}: {opt!r} after @ is neither a temperature (a number >= 0), "
                          "bf16, cuda nor cpu; e.g. lm:smollm2@0.7 or lm:smollm2@bf16")
    if not model.strip():
        raise LMError("lm: needs a model: lm:smollm2, lm:PATH.gguf, lm:FOLDER, lm:MODEL+ADAPTER "
                      "or a shipped adapter such as lm:sft")
    shown = ",".join(o for o in options.split(",") if o.strip().lower() not in DEVICES)
    return LMOptions(temperature, dtype, device, shown)


def pilot_device(chosen: str | None, asked: str = "cpu", spec: str = "") -> str:
    """Where an lm: pilot runs: the spec's `@cuda`/`@cpu`, else a device its caller asked for
    other than the CPU (`--device cuda`), else CUDA where torch reports it, else the CPU."""
    import torch

    if chosen is not None:
        if chosen == "cuda" and not torch.cuda.is_available():
            raise LMError(f"lm:{spec}@cuda: no CUDA device is available here; drop cuda after @ "
                          "(the pilot then runs on the CPU) or write cpu")
        return chosen
    if asked and not str(asked).startswith("cpu"):
        return str(asked)
    return "cuda" if torch.cuda.is_available() else "cpu"


def lm_pilot(model_spec: str, options: LMOptions, num_actions: int = 6, device: str = "cpu",
             seed: int = 0) -> LMPilot:
    """Build the pilot of `lm:MODEL[+ADAPTER]` (`model_spec`) with its parsed `options`."""
    import torch

    model, tokenizer, label = load_lm(model_spec, pilot_device(options.device, device,
                                                               model_spec))
    model.to(getattr(torch, options.dtype))
    suffix = f"@{options.shown}" if options.shown else ""
    pilot = LMPilot(model, tokenizer, label + suffix, num_actions, options.temperature, seed,
                    lm_view(model_spec))
    pilot.identity = f"lm:{lm_identity(model_spec)}" + suffix
    return pilot
