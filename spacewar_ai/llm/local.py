"""Local LLMs through llama-cpp-python: hardware detection, a model catalog, downloads into
`models/`, and grammar-constrained generation of strategy files.

llama-cpp-python is an optional extra (`pip install -e ".[local-llm]"`; it compiles llama.cpp for
5-15 minutes; for CUDA set `CMAKE_ARGS="-DGGML_CUDA=on"`, for Metal `CMAKE_ARGS="-DGGML_METAL=on"`
before installing). Everything else works without it.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..util.errors import UserError
from .clients import LLMError

MODELS_DIR = Path("models")


@dataclass(frozen=True)
class CatalogEntry:
    min_vram_gb: float  # the smallest GPU memory this entry is picked for (0 = CPU)
    repo_id: str
    filename: str
    size_gb: float  # download size, for the messages


# Largest first: the first entry whose min_vram_gb fits is chosen. Edit freely.
MODEL_CATALOG: list[CatalogEntry] = [
    CatalogEntry(75, "Qwen/Qwen2.5-72B-Instruct-GGUF", "qwen2.5-72b-instruct-q5_k_m.gguf", 54.4),
    CatalogEntry(36, "Qwen/Qwen2.5-Coder-32B-Instruct-GGUF",
                 "qwen2.5-coder-32b-instruct-q8_0.gguf", 34.8),
    CatalogEntry(24, "Qwen/Qwen2.5-Coder-32B-Instruct-GGUF",
                 "qwen2.5-coder-32b-instruct-q4_k_m.gguf", 19.9),
    CatalogEntry(8, "Qwen/Qwen2.5-Coder-7B-Instruct-GGUF",
                 "qwen2.5-coder-7b-instruct-q8_0.gguf", 8.1),
    CatalogEntry(0, "Qwen/Qwen2.5-Coder-3B-Instruct-GGUF",
                 "qwen2.5-coder-3b-instruct-q4_k_m.gguf", 2.1),
]


@dataclass
class Hardware:
    accelerator: str  # "cuda", "rocm", "metal" or "cpu"
    vram_gb: float
    source: str  # how the figure was found


def detect_hardware(gpu_vram: float | None = None) -> Hardware:
    """The accelerator and its memory: `gpu_vram` (--gpu-vram) overrides the measurement."""
    if gpu_vram is not None and gpu_vram < 0:
        raise UserError(f"--gpu-vram {gpu_vram} is invalid: give GB, 0 for CPU only")
    accelerator, vram, source = "cpu", 0.0, "no GPU found"
    # A missing torch, pynvml or driver only means that probe finds nothing.
    with contextlib.suppress(Exception):
        import torch

        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            accelerator = "rocm" if getattr(torch.version, "hip", None) else "cuda"
            vram, source = props.total_memory / 1024**3, f"torch ({props.name})"
        elif getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            # Apple silicon shares memory; llama.cpp may use about two thirds of it for Metal.
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
            accelerator, vram, source = "metal", total * 2 / 3, "two thirds of unified memory"
    if accelerator == "cpu":
        with contextlib.suppress(Exception):
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            vram = pynvml.nvmlDeviceGetMemoryInfo(handle).total / 1024**3
            accelerator, source = "cuda", "NVML"
    if gpu_vram is not None:
        found = accelerator if accelerator != "cpu" else "cuda"
        return Hardware("cpu" if gpu_vram == 0 else found, float(gpu_vram), "--gpu-vram")
    return Hardware(accelerator, vram, source)


def pick_model(hardware: Hardware, catalog: list[CatalogEntry] | None = None) -> CatalogEntry:
    catalog = MODEL_CATALOG if catalog is None else catalog
    usable = hardware.vram_gb if hardware.accelerator != "cpu" else 0.0
    for entry in sorted(catalog, key=lambda e: -e.min_vram_gb):
        if usable >= entry.min_vram_gb:
            return entry
    raise UserError("the model catalog has no entry for this machine (add one with "
                    "min_vram_gb 0)")


def ensure_model(entry: CatalogEntry, models_dir=MODELS_DIR, offline: bool | None = None) -> Path:
    """The model file under models_dir, downloading it (with a progress bar) when missing.
    Offline with no file: one ValueError saying what to download and where to put it."""
    models_dir = Path(models_dir)
    path = models_dir / entry.filename
    if path.is_file():
        return path
    offline = offline if offline is not None else os.environ.get("HF_HUB_OFFLINE") == "1"
    hint = (f"download {entry.filename} ({entry.size_gb:.1f} GB) from "
            f"https://huggingface.co/{entry.repo_id} and put it at {path}, or pass "
            "--llm-local-model PATH")
    if offline:
        raise UserError(f"no local model file and downloads are off (HF_HUB_OFFLINE=1): {hint}")
    try:
        from huggingface_hub import hf_hub_download

        models_dir.mkdir(parents=True, exist_ok=True)
        print(f"downloading {entry.repo_id}/{entry.filename} ({entry.size_gb:.1f} GB) into "
              f"{models_dir}/")
        # hf_hub_download shows a tqdm progress bar and resumes partial downloads.
        got = hf_hub_download(repo_id=entry.repo_id, filename=entry.filename,
                              local_dir=str(models_dir))
    except Exception as exc:  # network errors come in many types across hub versions
        raise UserError(f"could not download the local model ({type(exc).__name__}: "
                        f"{_first_line(exc)}): {hint}") from None
    return Path(got)


def _first_line(exc: Exception, limit: int = 300) -> str:
    """An error's first line, shortened at a word boundary if it must be (never mid-word)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " ..."


# The strategy language as a GBNF grammar, narrowed so that everything it accepts also passes
# the sandbox's allow-list and cannot raise: three working variables assigned first (from the
# observation only), then up to eight guarded returns, then a default return. Expressions use
# observation entries, numbers, the variables, + - *, abs/min/max and math.sin/cos/atan2.
STRATEGY_GBNF = r"""
root    ::= "import math\n\n\ndef strategy(obs):\n" assigns rules "    return " action "\n"
assigns ::= "    a = " oexpr "\n" "    b = " oexpr "\n" "    c = " oexpr "\n"
rules   ::= rule rule? rule? rule? rule? rule? rule? rule?
rule    ::= "    if " cond ":\n        return " action "\n"
cond    ::= cmp (" and " cmp)?
cmp     ::= expr " " op " " expr
op      ::= "<" | ">" | "<=" | ">="
expr    ::= term (" " arith " " term)?
oexpr   ::= oterm (" " arith " " oterm)?
arith   ::= "+" | "-" | "*"
term    ::= oterm | var
oterm   ::= num | obsref | "abs(" obsref ")" | "math.atan2(" obsref ", " obsref ")" | "math.sin(" obsref ")" | "math.cos(" obsref ")" | "max(" obsref ", " obsref ")" | "min(" obsref ", " obsref ")"
var     ::= "a" | "b" | "c"
obsref  ::= "obs[" idx "]"
idx     ::= [0-9] | [1-2] [0-9] | "3" [0-5]
num     ::= "-"? [0-9] "." [0-9] [0-9]?
action  ::= [0-5]
"""


def _llama_cpp(model: str = ""):
    """llama_cpp, or one line saying how to install it (and `model`, what it would then run)."""
    try:
        import llama_cpp
    except ImportError:
        then = f"; with it this run would use {model}" if model else ""
        raise UserError("local models need llama-cpp-python: pip install -e \".[local-llm]\" "
                        "(it compiles llama.cpp for several minutes; see docs/strategies.md for "
                        f"CUDA/Metal CMAKE_ARGS){then}") from None
    return llama_cpp


class LocalLLMClient:
    """A GGUF model through llama-cpp-python, behind the same generate() as the cloud clients.
    With grammar=True (the default) replies follow STRATEGY_GBNF, so they always parse and
    pass validation."""

    provider = "local"

    def __init__(self, model_path, n_ctx: int = 4096, n_gpu_layers: int = -1,
                 grammar: bool = True, seed: int = 0, verbose: bool = False):
        llama_cpp = _llama_cpp()
        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise UserError(f"local model {self.model_path}: no such file")
        self.model = self.model_path.name
        self._llama = llama_cpp.Llama(model_path=str(self.model_path), n_ctx=n_ctx,
                                      n_gpu_layers=n_gpu_layers, seed=seed, verbose=verbose)
        self._grammar = llama_cpp.LlamaGrammar.from_string(STRATEGY_GBNF, verbose=False) \
            if grammar else None

    @classmethod
    def from_flags(cls, model_path=None, gpu_vram: float | None = None,
                   models_dir=MODELS_DIR) -> "LocalLLMClient":
        """--llm-local-model PATH, else the catalog's pick for this machine (downloaded once)."""
        if model_path:
            _llama_cpp(f"the model file {model_path}")
            return cls(model_path)
        hardware = detect_hardware(gpu_vram)
        entry = pick_model(hardware)
        # Before any download: a model file without llama.cpp is of no use.
        _llama_cpp(f"{entry.filename} from {Path(models_dir) / entry.filename} (downloaded "
                   f"there once if missing; --llm-local-model PATH for another), the catalog's "
                   f"pick for {hardware.accelerator} with {hardware.vram_gb:.0f} GB")
        print(f"local LLM: {entry.filename} for {hardware.accelerator} with "
              f"{hardware.vram_gb:.0f} GB ({hardware.source})")
        return cls(ensure_model(entry, models_dir),
                   n_gpu_layers=-1 if hardware.accelerator != "cpu" else 0)

    def generate(self, messages: list[dict], max_tokens: int = 1024,
                 temperature: float = 0.7) -> str:
        try:
            out = self._llama.create_chat_completion(messages=messages, max_tokens=max_tokens,
                                                     temperature=temperature,
                                                     grammar=self._grammar)
        except Exception as exc:
            raise LLMError(f"local ({self.model}): {type(exc).__name__}: "
                           f"{str(exc).splitlines()[0][:200] if str(exc) else ''}") from None
        text = out["choices"][0]["message"]["content"] or ""
        # Grammar-constrained replies are bare code: fence them like a chat model would.
        return f"```python\n{text}```" if self._grammar is not None else text

    def __repr__(self) -> str:
        return f"LocalLLMClient(model={self.model!r})"
