"""The spec language: `make_pilot(spec)` builds any pilot from the text that names it.

| spec | pilot |
|---|---|
| `idle`, `random`, `heuristic:easy|medium|hard` (`@aim=A@react=R`) | scripted (scripted.py) |
| `pretrained` | the network shipped in the package |
| `ppo:PATH`, `dqn:PATH`, a checkpoint path | a trained network (algorithm read from the file) |
| `strategy:PATH.py` | a strategy file, validated, then run in the sandbox (sandbox.py) |
| `search:SPEC[+MODEL]`, `adapt:SPEC[+MODEL]` | SPEC with a lookahead at play time (search.py) |
| `onnx:PATH`, `sb3:PATH.zip` | a model trained elsewhere (outside.py) |
| `rllib_sw:PATH` | MatthewCWeston/rllib_sw's released agent, reading the game itself (rllib_sw.py) |
| `lm:MODEL[+ADAPTER][@OPTIONS]` | a language model reading the text view (lm/pilot.py) |

A `Pilot` passes through unchanged, an object with `act(obs)` becomes a `ForeignPilot` and a
function `obs -> action` a `CallablePilot`. Learned pilots play greedily unless
`deterministic=False`. Under `[game] controls = "switches"` a pilot that speaks the six actions
(scripted, strategy files, outside models, language models, networks trained on six) flies
through `OnSwitches`, which shows it the six actions' mask and presses their switches. `spec_files` and `map_spec_files` are the files a spec names: what Ray
ships to other machines and what the browser confines to the project."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

import numpy as np

from ..config import MASK_STARTS, OBS_MASK, GameConfig, without_jumps
from ..game.pilot import Pilot, as_pilot
from ..util.errors import UserError
from ..util.workers import Travel
from .scripted import scripted_pilot
from .search import HORIZON, JITTER, SAMPLES, SearchPilot
from .spec import (
    ADAPT_PREFIX,
    NAMED_SPECS,
    PRETRAINED_PATH,
    SEARCH_PREFIX,
    SPEC_HELP,
    STAND_IN_PILOT,
    Spec,
    check_spec,
    checkpoint_file,
    map_files,
    outside_file,
    parse_spec,
    planner_models,
    shipped_lm_specs,
    spec_files,
    stand_in_model,
    strategy_source,
)
from .wrappers import OnSwitches

# Kinds whose pilots answer in the six actions whatever the game's controls.
SIX_ACTION_KINDS = ("scripted", "strategy", "onnx", "sb3", "lm")

__all__ = ["NAMED_SPECS", "PRETRAINED_PATH", "SPEC_HELP", "AgentPilot", "CallablePilot", "Spec",
           "absolute_spec", "check_spec", "file_identity", "is_scripted", "make_pilot",
           "map_spec_files", "parse_spec", "path_label", "search_pilot", "shipped_lm_specs",
           "spec_files", "spec_path"]


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
        actions = self.agent.select_action(obs, deterministic=self.deterministic)
        return np.asarray(actions, dtype=np.int64).reshape(-1)


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


def is_scripted(spec) -> bool:
    """Whether a spec names a scripted pilot (idle, random, heuristic...)."""
    try:
        return parse_spec(spec).kind == "scripted"
    except ValueError:
        return False


def spec_path(spec) -> Path | None:
    """The file a spec names (pretrained, ppo:PATH, dqn:PATH, strategy:PATH, a path), else None
    (scripted pilots and planners, which are a policy and a model, not one file)."""
    return parse_spec(spec).path


def map_spec_files(spec, fn: Callable[[Path], Path]) -> str:
    """The same spec's text with each file it names replaced by fn(file) (spec.map_files)."""
    return map_files(spec, fn).text


def absolute_spec(spec: str) -> str:
    """The same spec with any file it names made absolute, for a process started elsewhere (a
    Ray worker, whose working folder is not this one)."""
    return map_spec_files(spec, lambda path: path if path.is_absolute() else path.resolve())


class SpecTravel(Travel):
    """The pilot specs at `fields` of a job, for Ray's nodes (util.workers.Travel): each made
    absolute and the files it names shipped, so checkpoints need not be on every machine and a
    tournament on Ray gives the same crosstable, byte for byte, as on this machine."""

    def __init__(self, fields: tuple[int, ...]):
        self.fields = fields

    def prepare(self, job: tuple) -> tuple:
        return tuple(absolute_spec(x) if k in self.fields else x for k, x in enumerate(job))

    def paths(self, job: tuple) -> list[Path]:
        return [path for k in self.fields for path in spec_files(job[k])]

    def localize(self, job: tuple, local: Callable[[Path], Path]) -> tuple:
        return tuple(map_spec_files(x, local) if k in self.fields else x
                     for k, x in enumerate(job))


def file_identity(path: Path) -> str:
    """A name for a file's contents: its stem and the start of its SHA-256 (ratings key on it)."""
    with open(path, "rb") as f:  # in pieces: a model's file need not fit in memory twice
        digest = hashlib.file_digest(f, "sha256").hexdigest()[:12]
    return f"{Path(path).stem}@{digest}"


def path_label(path: Path, parts: int = 2) -> str:
    """The last `parts` parts of a path ("run/best.pt"): short, and tells runs apart."""
    return "/".join(Path(path).parts[-parts:])


def make_pilot(spec, config: GameConfig | None = None, seed: int = 0,
               deterministic: bool = True, device: str = "cpu"):
    """Turn a spec (module docstring; text or a parsed `Spec`), a pilot object or a function
    obs -> action into a pilot. A bad spec raises ValueError naming it and what to use instead."""
    if isinstance(spec, Pilot) or (hasattr(spec, "act") and hasattr(spec, "reset")):
        return as_pilot(spec)
    if callable(spec):
        return CallablePilot(spec)
    spec = parse_spec(spec)
    config = config if config is not None else GameConfig()
    if config.controls == "switches" and spec.kind in SIX_ACTION_KINDS and not (
            spec.kind == "onnx" and _reads_switches(outside_file(spec), config)):
        return OnSwitches(make_pilot(spec, config.changed(controls="six"), seed, deterministic,
                                     device), 7 if config.hyperspace else 6)
    if spec.kind == "rllib_sw":
        from .rllib_sw import RllibSwPilot

        path = outside_file(spec)
        return RllibSwPilot(path, file_identity(path), config, seed, deterministic)
    if spec.kind == "scripted":
        return scripted_pilot(spec.target, config, seed, **dict(spec.settings))
    if spec.is_planner:
        return search_pilot(spec, config, seed, device)
    if spec.kind == "strategy":
        from .sandbox import StrategyPilot

        source = strategy_source(spec)
        return StrategyPilot(spec.path, identity=file_identity(spec.path), source=source,
                             n_actions=config.num_actions)
    if spec.kind in ("onnx", "sb3"):
        from .outside import outside_pilot

        return outside_pilot(spec, file_identity(outside_file(spec)), config)
    if spec.kind == "lm":
        from ..lm.pilot import lm_pilot

        return lm_pilot(spec.target, spec.lm, config.num_actions, device, seed)
    return _learned_pilot(spec, config, deterministic, device)


def _reads_switches(path: Path, config: GameConfig) -> bool:
    """Whether the ONNX model at `path` reads the switches' observation (a network exported from
    a run under them), so that it flies them itself rather than through OnSwitches."""
    from .onnx_check import input_width

    try:
        return input_width(path.read_bytes()) == config.obs_dim
    except ImportError:  # without the onnx package: taken for a six-action model
        return False


def _learned_pilot(spec: Spec, config: GameConfig, deterministic: bool, device: str):
    path = checkpoint_file(spec)  # before torch is imported: a misspelled spec is told at once
    from ..agents.checkpoints import CheckpointError
    from ..agents.saved import load_agent

    expect = spec.kind if spec.kind in ("ppo", "dqn") else None
    switches = config.controls == "switches"
    try:
        agent, _ = load_agent(path, device, expect, None if switches else config.obs_dim)
        # Under the switches, a network trained on the six actions (or seven, with hyperspace)
        # flies through OnSwitches; one of another width is refused in load_agent's words.
        own = agent.state_dim in (config.obs_dim, without_jumps(config.obs_dim))
        six = agent.state_dim - MASK_STARTS.get(agent.state_dim, OBS_MASK)
        if not own and six not in (6, 7):
            load_agent(path, device, expect, config.obs_dim)
    except CheckpointError as exc:
        raise UserError(f"player {spec.text!r}: {exc}") from None
    name = spec.text.lower() if spec.kind == "pretrained" else \
        f"{agent.algorithm}:{path_label(path)}"
    pilot = AgentPilot(agent, name, deterministic, file_identity(path))
    return pilot if own else OnSwitches(pilot, six)


def search_pilot(spec, config: GameConfig | None = None, seed: int = 0,
                 device: str = "cpu", opponent_model: str | Path | None = None,
                 horizon: int = HORIZON, samples: int = SAMPLES,
                 adaptive: bool = False) -> SearchPilot:
    """The pilot a planner's Spec names, or the text after `search:` (`adapt:` with adaptive);
    ValueError names the spec and what is wrong with it.

    The spec is `search:POLICY[+MODEL...][@name=value...]` (search.py's docstring): POLICY any
    pilot a planner can fly, each MODEL likewise; without MODEL, the model POLICY's training run
    learned, else `opponent_model` (spec.planner_models; by default spec.stand_in_model, which
    suits the game). `horizon` and `samples` are the defaults the spec's own settings
    override."""
    if not isinstance(spec, Spec):
        spec = parse_spec((ADAPT_PREFIX if adaptive else SEARCH_PREFIX) + str(spec).strip())
    config = config if config is not None else GameConfig()
    policy = make_pilot(spec.policy, config, seed, deterministic=True, device=device)
    learned = isinstance(policy, AgentPilot) and hasattr(policy.agent, "action_logits")
    opponents = []
    stand_in = opponent_model if opponent_model is not None else stand_in_model(config)
    models = planner_models(spec, stand_in)
    if spec.adaptive and not spec.models and models[0].text == STAND_IN_PILOT:
        raise UserError(f"player {spec.text!r}: an adapting planner learns from a PPO model of "
                        "the game, and the shipped one cannot read this game's "
                        f"observations; name one trained in it: {spec.prefix}"
                        f"{spec.policy.text}+PATH")
    for i, model in enumerate(models):
        try:
            opponents.append(make_pilot(model, config, seed + 1 + i, deterministic=True,
                                        device=device))
        except ValueError as exc:
            raise UserError(f"player {spec.text!r}, its opponent model: {exc}") from None
    defaults = {"samples": SAMPLES, "horizon": HORIZON, "jitter": 0.0 if learned else JITTER,
                "margin": 0.0, "choose": 0}
    given = {"samples": samples, "horizon": horizon, **dict(spec.settings)}
    settings = {key: given.get(key, value) for key, value in defaults.items()}
    # Settings other than the defaults are part of who the planner is: ratings key on them.
    shown = "".join(f"@{key}={value:g}" for key, value in settings.items()
                    if value != defaults[key])
    prefix = spec.prefix
    identity = f"{prefix}{policy.identity}+{'+'.join(o.identity for o in opponents)}{shown}"
    name = f"{prefix}{policy.name}" + "".join(f"+{o.name}" for o in opponents if spec.models) \
        + shown
    try:
        return SearchPilot(policy, opponents, config, int(settings["horizon"]),
                           int(settings["samples"]), seed, name=name, identity=identity,
                           adaptive=spec.adaptive, jitter=float(settings["jitter"]),
                           margin=float(settings["margin"]),
                           choose=bool(settings["choose"]))
    except ValueError as exc:
        raise UserError(f"player {spec.text!r}: {exc}") from None
