"""The spec language: `make_pilot(spec)` builds any pilot from the text that names it.

A pilot is a `Pilot` (spacewar_ai/game/pilot.py: `act(obs, active)`, `reset(mask, seeds)`,
`name`, and the optional parts every caller may use). Every mode builds its pilots here:

| spec | pilot |
|---|---|
| `idle`, `random`, `heuristic:easy`, `heuristic:medium`, `heuristic:hard` | scripted (scripted.py) |
| `pretrained` | the network shipped in the package |
| `ppo:PATH`, `dqn:PATH`, a checkpoint path | a trained network (algorithm read from the file) |
| `strategy:PATH.py` | a strategy file, validated, then run in the sandbox (sandbox.py) |
| `search:SPEC[+MODEL]` | SPEC with a lookahead at play time (search.py) |
| `adapt:SPEC[+MODEL]` | the same, its model of the opponent learning the opponent it meets |
| `onnx:PATH`, `sb3:PATH.zip` | a model trained elsewhere: ONNX, Stable-Baselines3 (outside.py) |
| `lm:MODEL[+ADAPTER][@OPTIONS]` | a language model reading the text view (spacewar_ai/lm/pilot.py) |

A `Pilot` passes through unchanged, an object of one's own with `act(obs)` and `reset(...)`
becomes a `ForeignPilot`, and a plain function `obs -> action` a `CallablePilot`, so the
environments and matches take any of them. Learned pilots play greedily unless
`deterministic=False`. The files a spec names (`spec_files`, `map_spec_files`) are what Ray
ships to other machines and what the browser confines to the project.
"""

from __future__ import annotations

import difflib
import hashlib
from pathlib import Path
from typing import Callable

import numpy as np

from ..config import GameConfig
from ..game.pilot import Pilot, as_pilot
from ..util.files import SHIPPED_DIR
from .scripted import SCRIPTED_SPECS, scripted_pilot
from .search import (
    ADAPT_PREFIX,
    HORIZON,
    JITTER,
    OPPONENT_MODEL_PATH,
    SAMPLES,
    SEARCH_PREFIX,
    SearchPilot,
    is_planner_spec,
    parse_planner,
    planner_parts,
)

PRETRAINED_PATH = SHIPPED_DIR / "ppo_spacewar.pt"


def shipped_lm_specs() -> str:
    """The shipped language-model pilots as every message and --help names them."""
    from ..lm.models import shipped_adapters

    return ", ".join(f"lm:{name}" for name in shipped_adapters())


SPEC_HELP = (f"{', '.join(SCRIPTED_SPECS)}, pretrained, ppo:PATH, dqn:PATH, strategy:PATH.py, "
             "search:SPEC, adapt:SPEC, onnx:PATH, sb3:PATH.zip, lm:MODEL[+ADAPTER] "
             f"({shipped_lm_specs()}: the shipped adapters on SmolLM2) or a checkpoint path")
# Whole specs a mistyped one is compared with, for "did you mean".
NAMED_SPECS = (*SCRIPTED_SPECS, "pretrained", "search:pretrained", "adapt:pretrained")


class AgentPilot(Pilot):
    """A learned agent flying as a pilot. Greedy by default, sampling with deterministic=False."""

    def __init__(self, agent, name: str, deterministic: bool = True, identity: str = ""):
        self.agent = agent
        self.name = name
        self.deterministic = deterministic
        self.identity = identity or name

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        if obs.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        # `act` (PPO) skips the critic and the rollout bookkeeping that select_action keeps.
        play = getattr(self.agent, "act", self.agent.select_action)
        return np.asarray(play(obs, deterministic=self.deterministic), dtype=np.int64).reshape(-1)


class CallablePilot(Pilot):
    """Adapts a function obs -> action (one observation at a time) to the batch interface."""

    def __init__(self, fn: Callable, name: str | None = None):
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "callable")

    def reset(self, mask=None, seeds=None) -> None:
        reset = getattr(self.fn, "reset", None)
        if callable(reset):
            reset()

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        return np.array([int(self.fn(row)) for row in obs], dtype=np.int64)


def is_scripted(spec: str) -> bool:
    low = spec.strip().lower()
    return low in SCRIPTED_SPECS or low == "heuristic"


def spec_path(spec: str) -> Path | None:
    """The file a spec names (pretrained, ppo:PATH, dqn:PATH, strategy:PATH, a path), else None
    (scripted pilots and planners, which are a policy and a model, not one file)."""
    s = spec.strip()
    low = s.lower()
    if low == "pretrained":
        return PRETRAINED_PATH
    if low.startswith(("ppo:", "dqn:")):
        return Path(s[4:])
    for prefix in ("strategy:", "onnx:", "sb3:"):
        if low.startswith(prefix):
            return Path(s[len(prefix):])
    if is_scripted(low) or low.startswith(("heuristic", "search:", "adapt:", "lm:")):
        return None
    return Path(s)


def map_spec_files(spec: str, fn: Callable[[Path], Path]) -> str:
    """The same spec with each file it names replaced by fn(file); planners' parts each. The
    shipped network (`pretrained`) is left alone: it is installed wherever the package is."""
    s = spec.strip()
    if is_planner_spec(s):
        prefix, parts, settings = planner_parts(s)
        return prefix + ":" + "+".join(map_spec_files(part, fn) if part else part
                                       for part in parts) + settings
    if s.lower().startswith("lm:"):
        return "lm:" + _map_lm_files(s[3:], fn)
    path = spec_path(s)
    if path is None or s.lower() == "pretrained":
        return s
    prefix = s[:len(s) - len(str(path))] if s.endswith(str(path)) else ""
    return prefix + str(fn(path))


def _map_lm_files(spec: str, fn: Callable[[Path], Path]) -> str:
    """map_spec_files of `MODEL[+ADAPTER][@OPTIONS]`: a local model file or folder and an
    adapter that is not shipped become fn(path); an adapter named by its run becomes its folder,
    so the spec means the same thing from another working folder."""
    from ..lm.models import SHIPPED_DIR, LMError, resolve_lm

    body, at, options = spec.partition("@")
    try:
        model_spec, folder = resolve_lm(body)
    except LMError:
        # make_pilot will name what is wrong; the paths it names are mapped all the same, so
        # the browser refuses one outside the project before anything reads it.
        return "+".join(str(fn(Path(part))) if part and Path(part).expanduser().exists()
                        else part for part in body.split("+")) + at + options
    parts = [str(fn(Path(model_spec))) if Path(model_spec).expanduser().exists() else model_spec]
    if folder is not None and folder.parent != SHIPPED_DIR:
        parts.append(str(fn(folder)))
    elif folder is not None:
        parts.append(folder.name)
    return "+".join(parts) + at + options


def spec_files(spec: str) -> list[Path]:
    """The files a spec names (not the shipped network)."""
    found: list[Path] = []
    map_spec_files(spec, lambda path: found.append(path) or path)
    return found


def absolute_spec(spec: str) -> str:
    """The same spec with any file it names made absolute, for a process started elsewhere (a
    Ray worker, whose working folder is not this one)."""
    return map_spec_files(spec, lambda path: path if path.is_absolute() else path.resolve())


def file_identity(path: Path) -> str:
    """A name for a file's contents: its stem and the start of its SHA-256 (ratings key on it)."""
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    return f"{Path(path).stem}@{digest}"


def path_label(path: Path, parts: int = 2) -> str:
    """The last `parts` parts of a path ("run/best.pt"): short, and tells runs apart."""
    return "/".join(Path(path).parts[-parts:])


def make_pilot(spec, config: GameConfig | None = None, seed: int = 0,
               deterministic: bool = True, device: str = "cpu"):
    """Turn a spec (module docstring), a pilot object or a function obs -> action into a pilot.
    A bad spec raises ValueError naming it and what to use instead."""
    if isinstance(spec, Pilot) or (hasattr(spec, "act") and hasattr(spec, "reset")):
        return as_pilot(spec)
    if callable(spec):
        return CallablePilot(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"pilot spec {spec!r} is invalid: use one of {SPEC_HELP}, a pilot "
                         "object with act()/reset(), or a function obs -> action")
    config = config if config is not None else GameConfig()
    s = spec.strip()
    low = s.lower()
    if is_scripted(low):
        return scripted_pilot(low, config, seed)
    if low.startswith("heuristic"):
        close = difflib.get_close_matches(low, SCRIPTED_SPECS, n=1, cutoff=0.75)
        raise ValueError(f"unknown pilot spec {spec!r}"
                         + (f" (did you mean {close[0]}?)" if close else "")
                         + ": the heuristic levels are heuristic:easy, heuristic:medium and "
                         "heuristic:hard")
    if low.startswith(("search:", "adapt:")):
        prefix, rest = s.split(":", 1)
        return search_pilot(rest, config, seed, device, adaptive=prefix.lower() == "adapt")
    if low.startswith("strategy:"):
        return _strategy_pilot(spec, Path(s[len("strategy:"):]), config)
    if low.startswith(("onnx:", "sb3:")):
        from .outside import outside_pilot

        path = spec_path(s)
        return outside_pilot(s, file_identity(path) if path.is_file() else s)
    if low.startswith("lm:"):
        from ..lm.pilot import lm_pilot

        return lm_pilot(s[3:], config.num_actions, device, seed)
    return _learned_pilot(spec, config, deterministic, device)


def _strategy_pilot(spec: str, path: Path, config: GameConfig):
    from .sandbox import StrategyError, StrategyPilot, load_strategy_file

    try:
        source = load_strategy_file(path)
    except StrategyError as exc:
        raise StrategyError(f"player {spec!r}: {exc}", f"player {path.name}: {exc.public}") \
            from None
    return StrategyPilot(path, identity=file_identity(path), source=source,
                         n_actions=config.num_actions)


def _learned_pilot(spec: str, config: GameConfig, deterministic: bool, device: str):
    from ..agents.checkpoints import CheckpointError
    from ..agents.saved import load_agent

    s = spec.strip()
    low = s.lower()
    expect = None
    if low == "pretrained":
        path = PRETRAINED_PATH
        if not path.is_file():
            raise ValueError(f"player 'pretrained': the shipped model {path} is missing; "
                             "reinstall spacewar-ai or train one (spacewar-ai --algorithm ppo)")
    else:
        if low.startswith(("ppo:", "dqn:")):
            expect, s = low[:3], s[4:]
        path = Path(s)
        if path.is_dir():
            raise ValueError(f"player {spec!r}: is a folder; give the checkpoint file in it, "
                             f"such as {path / 'best.pt'}")
        if not path.is_file():
            runs = sorted(str(p) for p in path.parent.glob("*/best.pt"))[:4] \
                if path.suffix == ".pt" and path.parent.is_dir() else []
            if runs:
                raise ValueError(f"player {spec!r}: no such checkpoint file; the runs in "
                                 f"{path.parent} keep theirs as {', '.join(runs)}")
            close = difflib.get_close_matches(s.lower(), NAMED_SPECS, n=1, cutoff=0.75)
            hint = f"did you mean {close[0]}? Or " if close else ""
            raise ValueError(f"player {spec!r}: not a pilot spec and no such checkpoint file; "
                             f"{hint}use one of {SPEC_HELP}")
    try:
        agent, _ = load_agent(path, device, expect, config.obs_dim)
    except CheckpointError as exc:
        raise ValueError(f"player {spec!r}: {exc}") from None
    name = "pretrained" if low == "pretrained" else f"{agent.algorithm}:{path_label(path)}"
    return AgentPilot(agent, name, deterministic, file_identity(path))


def search_pilot(policy_spec: str, config: GameConfig | None = None, seed: int = 0,
                 device: str = "cpu", opponent_model: str | Path = OPPONENT_MODEL_PATH,
                 horizon: int = HORIZON, samples: int = SAMPLES,
                 adaptive: bool = False) -> SearchPilot:
    """The pilot `search:POLICY_SPEC` names; ValueError names the spec and what is wrong with it.

    POLICY_SPEC is `POLICY[+MODEL...][@name=value...]` (search.py's docstring): POLICY any pilot
    a planner can fly (empty: `pretrained`), each MODEL likewise. Without MODEL: the opponent
    model POLICY's training run learned (`opponent_model.pt` beside its checkpoint), else the
    file `opponent_model`, the shipped clone of the hard pilot. `horizon` and `samples` are the
    defaults the spec's own settings override."""
    from ..agents.opponent_model import run_model_path

    config = config if config is not None else GameConfig()
    prefix = ADAPT_PREFIX if adaptive else SEARCH_PREFIX
    full = f"{prefix}{policy_spec.strip()}"
    plan = parse_planner(full)
    policy = make_pilot(plan.policy, config, seed, deterministic=True, device=device)
    learned = isinstance(policy, AgentPilot) and hasattr(policy.agent, "action_logits")
    models = list(plan.models)
    if not models:
        # A training run's own model of the opponent it was judged against, when the policy
        # comes from one (opponent_model.py); else the shipped clone of the hard pilot.
        policy_path = spec_path(plan.policy)
        own = run_model_path(policy_path) if policy_path is not None else None
        models = [str(own or opponent_model)]
    opponents = []
    for i, model_spec in enumerate(models):
        path = spec_path(model_spec)
        if path is not None and model_spec.lower() != "pretrained" and not path.is_file():
            fix = ("name a checkpoint file, a scripted pilot or pretrained" if plan.models else
                   "reinstall spacewar-ai or make one (docs/search.md)")
            raise ValueError(f"player {full!r}: its opponent model {path} does not exist; {fix}")
        try:
            opponents.append(make_pilot(model_spec, config, seed + 1 + i, deterministic=True,
                                        device=device))
        except ValueError as exc:
            raise ValueError(f"player {full!r}, its opponent model: {exc}") from None
    defaults = {"samples": SAMPLES, "horizon": HORIZON, "jitter": 0.0 if learned else JITTER,
                "margin": 0.0}
    given = {"samples": plan.samples if plan.samples is not None else samples,
             "horizon": plan.horizon if plan.horizon is not None else horizon,
             "jitter": plan.jitter, "margin": plan.margin}
    settings = {key: defaults[key] if value is None else value for key, value in given.items()}
    # Settings other than the defaults are part of who the planner is: ratings key on them.
    shown = "".join(f"@{key}={value:g}" for key, value in settings.items()
                    if value != defaults[key])
    identity = f"{prefix}{policy.identity}+{'+'.join(o.identity for o in opponents)}{shown}"
    name = f"{prefix}{policy.name}" + "".join(f"+{o.name}" for o in opponents if plan.models) \
        + shown
    try:
        return SearchPilot(policy, opponents, config, int(settings["horizon"]),
                           int(settings["samples"]), seed, name=name, identity=identity,
                           adaptive=adaptive, jitter=float(settings["jitter"]),
                           margin=float(settings["margin"]))
    except ValueError as exc:
        raise ValueError(f"player {full!r}: {exc}") from None
