"""A tiny random-weight causal LM (transformers' Llama architecture) and a word-level tokenizer
built offline from the text view's own words, saved as a transformers folder, so the LM pilot,
SFT and GRPO run on a real model in the tests without a download."""

from __future__ import annotations

from pathlib import Path

WORDS = ["Spacewar", "You", "fly", "a", "ship", "Actions", "drift", "turn", "left", "right", "thrust", "fire", "and", "hyperspace", "Answer", "with", "one", "valid", "action", "Enemy", "hidden", "closing", "opening", "ahead", "behind", "away", "Star", "Torpedo", "Fuel", "torpedoes", "Valid", "Action"]
SPECIAL = ["<pad>", "<unk>", "<s>", "</s>"]


def make_tiny_lm(folder, hidden: int = 32, layers: int = 2, heads: int = 4, seed: int = 0) -> Path:
    """Save a tiny Llama model and its tokenizer in `folder` (from_pretrained loads it)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIAL + [str(d) for d in range(10)]
                                        + list("!.,:%+-") + WORDS)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.Whitespace()])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>",
                                        unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=heads, max_position_embeddings=256,
                         pad_token_id=0, bos_token_id=2, eos_token_id=3)
    model = LlamaForCausalLM(config)
    folder = Path(folder)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def trained_adapter(base_folder, out, seed=1):
    """A LoRA adapter on `base_folder` with nonzero weights (as if trained), saved as
    --algorithm sft saves one."""
    import torch
    from peft import LoraConfig, get_peft_model

    from spacewar_ai.lm.models import load_base, save_adapter

    model, _ = load_base(str(base_folder))
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8,
                                                  target_modules=["q_proj", "v_proj"]))
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    return save_adapter(peft_model, out, str(base_folder), model), peft_model


def make_chat_lm(folder, texts, chat_template: str, hidden: int = 32, layers: int = 2,
                 seed: int = 0) -> Path:
    """Save a tiny Llama model with a byte-level BPE tokenizer trained on `texts` (so any text
    round-trips exactly, tool calls' JSON included) and `chat_template`, whose turns end with
    the special token <|im_end|> (Qwen's form)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=600, special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<|endoftext|>",
                                        eos_token="<|im_end|>")
    tokenizer.chat_template = chat_template
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=core.get_vocab_size(), hidden_size=hidden,
                         intermediate_size=2 * hidden, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=4,
                         max_position_embeddings=2048,
                         pad_token_id=core.token_to_id("<|endoftext|>"),
                         eos_token_id=core.token_to_id("<|im_end|>"))
    folder = Path(folder)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
