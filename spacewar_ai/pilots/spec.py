"""A pilot spec as a value: the text is parsed once, where a command or a page takes it, and the
`Spec` travels below.

`parse_spec(text)` reads no file and builds nothing: it splits the text into a kind, a target,
a planner's parts and settings and an lm: pilot's options, and refuses in one line what no spec
can mean (an unknown level, a bad setting, a planner over a planner or over a pilot that answers
a few games at a time). `check_spec(text)` also checks, without building a pilot, that the files
the spec names exist, in the words `make_pilot` (build.py) would use. No module outside pilots/
reads spec text itself (tests/test_layers.py holds that): it asks a `Spec`."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..config import GameConfig
from ..util.errors import UserError
from ..util.files import SHIPPED_DIR
from ..util.preflight import check_model_size
from .scripted import SCRIPTED_SPECS

PRETRAINED_PATH = SHIPPED_DIR / "ppo_spacewar.pt"
# The shipped networks for other rules (`pretrained:RULES`), each in a folder with the opponent
# model its run learned, which a planner over it forecasts with.
SHIPPED_FOR_RULES = ("rllib_sw",)
OPPONENT_MODEL_PATH = SHIPPED_DIR / "hard_model.pt"
# The pilot that model clones, forecast with itself where the model cannot read the game.
STAND_IN_PILOT = "heuristic:hard"
SEARCH_PREFIX = "search:"
ADAPT_PREFIX = "adapt:"
PLANNERS = ("search", "adapt")
# Kinds whose target is one file, and how each is written.
FILE_KINDS = ("ppo", "dqn", "strategy", "onnx", "sb3", "rllib_sw")
PLANNER_SETTINGS = ("samples", "horizon", "jitter", "margin", "choose")
# A heuristic pilot's settings: the share of the lead it aims with, its reaction in decisions.
SCRIPTED_SETTINGS = ("aim", "react")
# Real-valued settings: their ranges, and what they are.
REAL_SETTINGS = {"jitter": ((0.0, 1.0), "from 0 up to (not including) 1, the share of random "
                                        "moves"),
                 "margin": ((0.0, 2.0), "from 0 to 2, how much better than the policy's own "
                                        "move another must be, in mean endings (-1 to 1)"),
                 "aim": ((0.0, 1.0), "from 0 to 1, the share of the lead it takes (1 aims "
                                     "where the target will be, 0 where it is)"),
                 "react": ((0.0, 25.0), "from 0 to 25, the decisions between what it sees and "
                                        "what it does (a fraction alternates the whole delays "
                                        "on either side)")}
# Whole-number settings: the least and the most each may be (None: no most), and what it counts.
WHOLE_SETTINGS = {"samples": (1, None, "rollouts per action"),
                  "horizon": (1, None, "decisions per rollout"),
                  "choose": (0, 1, "1 forecasts each game with the mix's member that has "
                                   "foreseen the opponent best in it, 0 shares the samples")}


def shipped_lm_specs() -> str:
    """The shipped language-model pilots as every message and --help names them."""
    from ..lm.models import shipped_adapters

    return ", ".join(f"lm:{name}" for name in shipped_adapters())


SPEC_HELP = (f"{', '.join(SCRIPTED_SPECS)}, pretrained, ppo:PATH, dqn:PATH, strategy:PATH.py, "
             "search:SPEC, adapt:SPEC, onnx:PATH, sb3:PATH.zip, rllib_sw:PATH, "
             "lm:MODEL[+ADAPTER] "
             f"({shipped_lm_specs()}: the shipped adapters on SmolLM2) or a checkpoint path")
# Whole specs a mistyped one is compared with, for "did you mean".
NAMED_SPECS = (*SCRIPTED_SPECS, "pretrained", "search:pretrained", "adapt:pretrained",
               *(f"pretrained:{rules}" for rules in SHIPPED_FOR_RULES))


@dataclass(frozen=True)
class Spec:
    """A parsed pilot spec (the module docstring's table). `text` is the spec as written, which
    every message quotes; `str(spec)` gives it back."""

    kind: str
    target: str = ""
    parts: tuple[Spec, ...] = ()
    settings: tuple[tuple[str, float], ...] = ()
    options: str = ""  # an lm: spec's "@OPTIONS" as written
    lm: Any = None  # an lm: spec's options, parsed (lm.pilot.LMOptions)
    text: str = ""

    def __str__(self) -> str:
        return self.text

    @property
    def is_planner(self) -> bool:
        return self.kind in PLANNERS

    @property
    def adaptive(self) -> bool:
        return self.kind == "adapt"

    @property
    def prefix(self) -> str:
        return f"{self.kind}:"

    @property
    def policy(self) -> Spec:
        """A planner's rollout pilot."""
        return self.parts[0]

    @property
    def models(self) -> tuple[Spec, ...]:
        """A planner's opponent models as written (empty: the default model)."""
        return self.parts[1:]

    def settings_text(self) -> str:
        return "".join(f"@{key}={value:g}" for key, value in self.settings)

    @property
    def path(self) -> Path | None:
        """The one file the spec names (the shipped file for `pretrained`), else None: scripted
        pilots, planners (a policy and models) and language models (a model and an adapter)."""
        if self.kind == "pretrained":
            return SHIPPED_DIR / self.target / "best.pt" if self.target else PRETRAINED_PATH
        if self.kind in FILE_KINDS or self.kind == "checkpoint":
            return Path(self.target)
        return None

    @property
    def learned(self) -> bool:
        """A network trained here: pretrained, ppo:, dqn: or a checkpoint path."""
        return self.kind in ("pretrained", "ppo", "dqn", "checkpoint")

    def with_target(self, target: str) -> Spec:
        """The same spec naming another file (a folder prefixed, a path made absolute)."""
        prefix = "" if self.kind == "checkpoint" else self.prefix
        return Spec(self.kind, target, options=self.options, lm=self.lm,
                    text=prefix + target + self.options)

    def with_parts(self, parts: tuple[Spec, ...]) -> Spec:
        """A planner with other parts, its settings kept."""
        text = self.prefix + "+".join(p.text for p in parts) + self.settings_text()
        return Spec(self.kind, parts=parts, settings=self.settings, text=text)


def parse_spec(spec) -> Spec:
    """The Spec a text names; a Spec passes through. ValueError names the spec and the fix."""
    if isinstance(spec, Spec):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise UserError(f"pilot spec {spec!r} is invalid: use one of {SPEC_HELP}, a pilot "
                        "object with act()/reset(), or a function obs -> action")
    s = spec.strip()
    low = s.lower()
    if low in SCRIPTED_SPECS or low == "heuristic":
        return Spec("scripted", low, text=s)
    base, at, given = low.partition("@")
    if at and (base in SCRIPTED_SPECS or base == "heuristic") and base.startswith("heuristic"):
        settings = _parse_settings(s, "@" + given, SCRIPTED_SETTINGS,
                                   "heuristic:medium@aim=0.5@react=1")
        return Spec("scripted", base, settings=settings, text=s)
    if low.startswith("heuristic"):
        close = difflib.get_close_matches(low, SCRIPTED_SPECS, n=1, cutoff=0.75)
        raise UserError(f"unknown pilot spec {spec!r}"
                        + (f" (did you mean {close[0]}?)" if close else "")
                        + ": the heuristic levels are heuristic:easy, heuristic:medium and "
                        "heuristic:hard")
    kind, colon, rest = s.partition(":")
    kind = kind.lower()
    if colon and kind in PLANNERS:
        return _parse_planner(s, kind, rest)
    if low == "pretrained":
        return Spec("pretrained", text=s)
    if colon and kind == "pretrained":
        rules = rest.strip().lower()
        if rules not in SHIPPED_FOR_RULES:
            raise UserError(f"player {s!r}: no network is shipped for rules {rest!r}; use "
                            "pretrained (the 1962 rules) or "
                            + ", ".join(f"pretrained:{r}" for r in SHIPPED_FOR_RULES))
        return Spec("pretrained", rules, text=s)
    if colon and kind in FILE_KINDS:
        return Spec(kind, rest, text=s)
    if colon and kind == "lm":
        from ..lm.pilot import parse_options

        body, at, options = rest.partition("@")
        return Spec("lm", body.strip(), options=at + options, lm=parse_options(body, options, s),
                    text=s)
    return Spec("checkpoint", s, text=s)


def _planner_split(rest: str) -> tuple[list[str], str]:
    """A planner's text after its prefix as (the parts between '+', the settings' text
    "@name=value..."). `@` parts that are not name=value stay with the part they follow."""
    parts = rest.split("@")
    settings = ""
    while len(parts) > 1 and "=" in parts[-1]:
        settings = "@" + parts.pop() + settings
    return "@".join(parts).split("+"), settings


def _parse_planner(text: str, kind: str, rest: str) -> Spec:
    """`search:POLICY[+MODEL...][@name=value...]` (or `adapt:`) as a Spec; an empty POLICY is
    `pretrained` (search.py's docstring says what the parts and settings do)."""
    prefix = kind
    parts, given = _planner_split(rest)
    settings = _parse_settings(text, given, PLANNER_SETTINGS,
                               f"{prefix}:heuristic:hard+heuristic:hard@samples=8@horizon=60")
    policy, *models = parts
    models = [m.strip() for m in models]
    if any(not m for m in models):
        raise UserError(f"player {text!r}: nothing after '+'; name the opponent model (any "
                        "pilot a planner can fly: heuristic:hard, pretrained, a checkpoint "
                        "path, ...) or drop the '+' to plan with the policy's own run's model "
                        "(else the shipped model of the hard pilot)")
    specs = []
    for k, part in enumerate([policy.strip() or "pretrained", *models]):
        try:
            spec = parse_spec(part)
        except ValueError as exc:
            if k == 0:
                raise
            raise UserError(f"player {text!r}, its opponent model: {exc}") from None
        if spec.is_planner:
            raise UserError(f"player {text!r}: a planner cannot plan over another planner")
        if spec.kind in ("strategy", "lm"):
            what = "a strategy file" if spec.kind == "strategy" else "a language model"
            raise UserError(f"player {text!r}: {part!r} is {what}, which answers a few "
                            "games at a time; a planner flies thousands of copies a "
                            "decision: plan over a scripted pilot or a network, or clone it "
                            f"into one with --algorithm ppo --warm-start {part} --timesteps 0")
        specs.append(spec)
    if dict(settings).get("choose") and any(spec.kind == "rllib_sw" for spec in specs[1:]):
        raise UserError(f"player {text!r}: choose=1 judges each member by the moves it would "
                        "have made, which an rllib_sw: model, reading the game itself, cannot "
                        "tell after the game has moved on; drop @choose=1")
    if kind == "adapt" and len(models) > 1:
        raise UserError(f"player {text!r}: adapt: learns one model of the opponent; name one "
                        "after '+' (a mix is for search:)")
    return Spec(kind, parts=tuple(specs), settings=settings, text=text)


def _parse_settings(text: str, given: str, names: tuple[str, ...],
                    example: str) -> tuple[tuple[str, float], ...]:
    """`@name=value...` as (name, value) pairs in the order of `names`; ValueError naming the
    spec, the setting and its range."""
    settings: dict[str, float] = {}
    for item in reversed(given.split("@")[1:]):
        name, _, value = item.partition("=")
        name = name.strip().lower()
        if name not in names:
            raise UserError(f"player {text!r}: unknown setting {name!r} after @; the settings "
                            f"are {', '.join(names[:-1])} and {names[-1]}, e.g. {example}")
        if name in settings:
            raise UserError(f"player {text!r}: {name} is set twice; give it once")
        try:
            number = float(value) if name in REAL_SETTINGS else int(value)
        except ValueError:
            number = None
        if name in REAL_SETTINGS:
            (low, high), what = REAL_SETTINGS[name]
            if number is None or not low <= number <= high or (name == "jitter"
                                                                and number == high):
                raise UserError(f"player {text!r}: {name}={value!r} is invalid: must be a "
                                f"number {what}")
        else:
            least, most, what = WHOLE_SETTINGS[name]
            if number is None or number < least or (most is not None and number > most):
                within = f">= {least}" if most is None else f"from {least} to {most}"
                raise UserError(f"player {text!r}: {name}={value!r} is invalid: must be an "
                                f"integer {within} ({what})")
        settings[name] = number
    return tuple((key, settings[key]) for key in names if key in settings)


def check_spec(spec) -> Spec:
    """The parsed spec, once the files it names are known to be there (and a strategy file
    valid), without building its pilot; ValueError in make_pilot's words otherwise."""
    spec = parse_spec(spec)
    if spec.learned:
        checkpoint_file(spec)
    elif spec.kind == "strategy":
        strategy_source(spec)
    elif spec.kind in ("onnx", "sb3", "rllib_sw"):
        outside_file(spec)
    elif spec.kind == "lm":
        from ..lm.models import resolve_lm

        resolve_lm(spec.target)
    elif spec.is_planner:
        check_spec(spec.policy)
        for model in planner_models(spec):
            try:
                check_spec(model)
            except ValueError as exc:
                raise UserError(f"player {spec.text!r}, its opponent model: {exc}") from None
    return spec


def planner_models(spec: Spec, default: str | Path = OPPONENT_MODEL_PATH) -> tuple[Spec, ...]:
    """The opponent models a planner forecasts with: those it names, else the model its policy's
    training run learned (`opponent_model.pt` beside the checkpoint), else `default` (the
    shipped clone of the hard pilot). ValueError when a model's file is not there."""
    from ..agents.opponent_model import run_model_path

    models = spec.models
    if not models:
        path = spec.policy.path
        own = run_model_path(path) if path is not None else None
        models = (parse_spec(str(own or default)),)
    for model in models:
        # Other files (onnx:, sb3:, an rllib_sw: folder) are checked where the model is built.
        if model.learned and model.kind != "pretrained" and not model.path.is_file():
            fix = ("name a checkpoint file, a scripted pilot or pretrained" if spec.models else
                   "reinstall spacewar-ai or make one (docs/search.md)")
            raise UserError(f"player {spec.text!r}: its opponent model {model.path} does not "
                            f"exist; {fix}")
    return models


def stand_in_model(config: GameConfig) -> str | Path:
    """What a planner forecasts with when neither it nor its policy's run names a model, in game
    `config`: the shipped clone of the hard pilot where it reads the game (the default game's
    observations, or the switches, which it flies through the six actions), else the hard pilot
    itself, since the clone reads no other observation."""
    reads = config.controls == "switches" or config.obs_dim == GameConfig().obs_dim
    return OPPONENT_MODEL_PATH if reads else STAND_IN_PILOT


def check_pretrained(spec: Spec | None = None) -> Path:
    path = PRETRAINED_PATH if spec is None else spec.path
    if not path.is_file():
        raise UserError(f"player {spec.text if spec else 'pretrained'!r}: the shipped model "
                        f"{path} is missing; reinstall spacewar-ai or train one (spacewar-ai "
                        "--algorithm ppo)")
    return path


def checkpoint_file(spec: Spec) -> Path:
    """The checkpoint file a learned spec names; ValueError naming a folder, a missing file (with
    the runs beside it, or a spec it was close to) and the fix."""
    if spec.kind == "pretrained":
        return check_pretrained(spec)
    path = spec.path
    if path.is_dir():
        found = [p for p in (path / "best.pt", path / "ppo_best.pt", path / "latest.pt")
                 if p.is_file()] or sorted(path.glob("*/best.pt"))[:3]
        such = f"such as {', '.join(map(str, found))}" if found else \
            "(a run's checkpoints/<run>/best.pt; this folder holds none)"
        raise UserError(f"player {spec.text!r}: is a folder; give a checkpoint file {such}")
    if not path.is_file():
        runs = sorted(str(p) for p in path.parent.glob("*/best.pt"))[:4] \
            if path.suffix == ".pt" and path.parent.is_dir() else []
        if runs:
            raise UserError(f"player {spec.text!r}: no such checkpoint file; the runs in "
                            f"{path.parent} keep theirs as {', '.join(runs)}")
        close = difflib.get_close_matches(spec.target.lower(), NAMED_SPECS, n=1, cutoff=0.75)
        hint = f"did you mean {close[0]}? Or " if close else ""
        raise UserError(f"player {spec.text!r}: not a pilot spec and no such checkpoint file; "
                        f"{hint}use one of {SPEC_HELP}")
    check_model_size(path, f"player {spec.text!r}:")
    return path


def strategy_source(spec: Spec) -> str:
    """A strategy file's source, validated (sandbox.py); StrategyError names the player."""
    from .sandbox import StrategyError, load_strategy_file

    try:
        return load_strategy_file(spec.path)
    except StrategyError as exc:
        raise StrategyError(f"player {spec.text!r}: {exc}",
                            f"player {spec.path.name}: {exc.public}") from None


def outside_file(spec: Spec) -> Path:
    """The file an onnx:, sb3: or rllib_sw: spec names; ValueError when there is none."""
    if spec.kind == "rllib_sw":
        from .rllib_sw import module_file

        try:
            path = module_file(spec.path)
        except ValueError as exc:
            raise UserError(f"player {spec.text!r}: {exc}") from None
    else:
        path = spec.path
        if not path.is_file():
            what = "ONNX" if spec.kind == "onnx" else "model"
            raise UserError(f"player {spec.text!r}: no such {what} file {path}")
    check_model_size(path, f"player {spec.text!r}:")
    return path


def map_files(spec, fn: Callable[[Path], Path]) -> Spec:
    """The same spec with each file it names replaced by fn(file); a planner's parts each. The
    shipped network (`pretrained`) is left alone: it is installed wherever the package is."""
    spec = parse_spec(spec)
    if spec.is_planner:
        return spec.with_parts(tuple(map_files(part, fn) for part in spec.parts))
    if spec.kind == "lm":
        return parse_spec("lm:" + _map_lm_files(spec, fn))
    if spec.path is None or spec.kind == "pretrained":
        return spec
    return spec.with_target(str(fn(spec.path)))


def _map_lm_files(spec: Spec, fn: Callable[[Path], Path]) -> str:
    """map_files of `MODEL[+ADAPTER][@OPTIONS]`: a local model file or folder and an adapter that
    is not shipped become fn(path); an adapter named by its run becomes its folder, so the spec
    means the same thing from another working folder."""
    from ..lm.models import SHIPPED_DIR as LM_SHIPPED
    from ..lm.models import LMError, resolve_lm

    try:
        model_spec, folder = resolve_lm(spec.target)
    except LMError:
        # make_pilot will name what is wrong; the paths it names are mapped all the same, so
        # the browser refuses one outside the project before anything reads it.
        return "+".join(str(fn(Path(part))) if part and Path(part).expanduser().exists()
                        else part for part in spec.target.split("+")) + spec.options
    parts = [str(fn(Path(model_spec))) if Path(model_spec).expanduser().exists() else model_spec]
    if folder is not None and folder.parent != LM_SHIPPED:
        parts.append(str(fn(folder)))
    elif folder is not None:
        parts.append(folder.name)
    return "+".join(parts) + spec.options


def spec_files(spec) -> list[Path]:
    """The files a spec names (not the shipped network)."""
    found: list[Path] = []
    map_files(spec, lambda path: found.append(path) or path)
    return found
