"""The command line's machinery: flags declared once each, modes that name the flags they read,
and the parser and checks built from both.

A flag is declared with `flag(...)` beside the mode that reads it (or in common.py when several
do); a mode is a function registered with `@mode(...)`, which lists the flags it reads. Which
flags a mode reads is therefore written in one place, the mode's own declaration, and every
other flag given with it is refused by name with the modes that do read it.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
from typing import Any, Callable

PROG = "spacewar-ai"
SEED_LIMIT = 2**32  # seeds are 0 .. 2**32 - 1: games take seed + i, stored as 64-bit integers
TRAIN = "train"  # the mode chosen when no mode flag is given

# Help groups, in the order --help shows them.
GROUPS = {
    "modes": "modes (default: training)",
    "training": "training",
    "players": "evaluation and players",
    "tournaments": "tournaments",
    "ray": "Ray (pip install -e \".[cluster]\")",
    "play": "human play, videos and replays",
    "web": "the browser app (pip install -e \".[web]\")",
    "export": "export",
    "llm": "LLM strategies (keys in <keys-dir>/*.key.txt, .env or the environment)",
    "common": "common",
}


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block) that suggest the flag meant, and no
    abbreviations: a prefix of a flag is refused, so a new flag can never change what an old
    command line means."""

    def __init__(self, **kwargs):
        super().__init__(allow_abbrev=False, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{PROG}: error: {message}\n")

    def parse_args(self, args=None, namespace=None):
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            flag = next((x for x in extras if x.startswith("-")), extras[0])
            known = [o for a in self._actions for o in a.option_strings]
            close = difflib.get_close_matches(flag.split("=")[0], known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else f"; {PROG} --help lists every flag"
            what = "flag" if flag.startswith("-") else "argument"
            self.error(f"unrecognized {what} {flag!r}{hint}")
        return parsed


# --- values --------------------------------------------------------------------------------------
def _value(text: str, convert, expected: str, ok, rule: str):
    """`convert(text)` if it parses and `ok` holds of it; else one line: what was expected."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"must be {rule}, got {text}")
    return value


def count(minimum: int):
    """An argparse type: an integer >= minimum, refused in words otherwise."""
    def parse(text: str) -> int:
        return _value(text, int, f"an integer >= {minimum}", lambda v: v >= minimum,
                      f">= {minimum}")
    parse.__name__ = f"integer >= {minimum}"
    return parse


def timesteps(text: str) -> int:
    """--timesteps: >= 1, or 0 (the imitation alone, which training allows with --warm-start)."""
    return _value(text, int, "an integer >= 1", lambda v: v >= 0,
                  ">= 1 (or 0 with --warm-start: the imitation alone)")


def positive_float(text: str) -> float:
    return _value(text, float, "a number > 0", lambda v: 0 < v < float("inf"),
                  "a finite number > 0")


def nonnegative_float(text: str) -> float:
    return _value(text, float, "a number >= 0", lambda v: 0 <= v < float("inf"),
                  "a finite number >= 0")


def seed(text: str) -> int:
    return _value(text, int, f"an integer 0..{SEED_LIMIT - 1}", lambda v: 0 <= v < SEED_LIMIT,
                  f"0..{SEED_LIMIT - 1}")


# --- declarations ----------------------------------------------------------------------------------
@dataclasses.dataclass
class Flag:
    name: str  # "--eval-episodes"
    group: str  # a key of GROUPS
    options: dict[str, Any]  # argparse's keyword arguments
    writes: str = ""  # "file" or "folder": an output, checked writable before any work

    @property
    def dest(self) -> str:
        return self.name[2:].replace("-", "_")


@dataclasses.dataclass
class Mode:
    name: str  # "evaluate"; TRAIN for training, chosen without a mode flag
    run: Callable  # run(parser, args) -> exit code
    reads: frozenset[str]  # the dests of the flags this mode reads
    flag: Flag | None  # the flag that chooses it (None for training)


FLAGS: dict[str, Flag] = {}
MODES: dict[str, Mode] = {}


def flag(name: str, group: str, writes: str = "", **options) -> str:
    """Declare a flag once (its dest is returned, for a mode's `reads`); `writes` ("file" or
    "folder") marks an output, which every mode checks can be written before it starts."""
    if group not in GROUPS:
        raise KeyError(f"{name}: unknown help group {group!r}")
    declared = Flag(name, group, options, writes)
    if FLAGS.setdefault(declared.dest, declared) is not declared:
        raise KeyError(f"{name} is declared twice")
    return declared.dest


def mode(name: str, reads, flag_help: str | None = None, writes: str = "", **flag_options):
    """Register a mode function: chosen by `--NAME` (flag_options shape that flag: a value such
    as DST, or a switch by default; TRAIN has no flag), reading the flags `reads` names. One
    function may be registered under several names, each with its own `reads`."""
    def register(run: Callable) -> Callable:
        chooser = None
        if name != TRAIN:
            options = flag_options or {"action": "store_true"}
            chooser = Flag("--" + name.replace("_", "-"), "modes", {**options, "help": flag_help},
                           writes)
        if MODES.setdefault(name, Mode(name, run, frozenset(reads), chooser)).run is not run:
            raise KeyError(f"mode {name} is registered twice")
        return run
    return register


def outputs() -> list[Flag]:
    """The flags declared as outputs (`writes`), modes' own included."""
    return [f for f in (*FLAGS.values(), *(m.flag for m in MODES.values() if m.flag))
            if f.writes]


def flag_name(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _version() -> str:
    """The installed distribution's version (the package itself is a door, above cli)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("spacewar-ai")
    except PackageNotFoundError:
        return "(not installed)"


def build_parser() -> Parser:
    """Every flag of every mode, grouped as GROUPS orders them."""
    p = Parser(prog=PROG, description="Train, rate and play against Spacewar! (1962) pilots. "
                                      "Without a mode flag: train (--algorithm ppo).")
    groups = {key: p.add_argument_group(title) for key, title in GROUPS.items()}
    p.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    for m in MODES.values():
        if m.flag is not None:
            groups["modes"].add_argument(m.flag.name, **m.flag.options)
    for f in FLAGS.values():
        groups[f.group].add_argument(f.name, **f.options)
    return p


PATH_METAVARS = ("PATH", "DST", "FILE", "DIR", "FILE.jsonl", "OUT.html")


def _takes_path(dest: str) -> bool:
    """Whether a flag (or a mode's flag) is declared to take a path: its metavar says so."""
    declared = FLAGS.get(dest) or (MODES[dest].flag if dest in MODES else None)
    return declared is not None and declared.options.get("metavar") in PATH_METAVARS


def choose_mode(parser: Parser, args) -> Mode:
    """The one mode the flags choose; refuses two modes, empty values and flags the mode does
    not read (naming the modes that read them)."""
    given = {k for k, v in vars(args).items() if v is not None and v is not False}
    for k in sorted(given):
        if isinstance(getattr(args, k), str) and not getattr(args, k).strip():
            parser.error(f"{flag_name(k)} was given an empty value; give it a "
                         f"{'path' if _takes_path(k) else 'value'} or leave the flag out")
    for k in ("checkpoint_dir", "log_dir", "keys_dir"):
        value = getattr(args, k)
        if value and os.path.exists(value) and not os.path.isdir(value):
            parser.error(f"{flag_name(k)} {value}: is a file; give a folder")
    chosen = [m for m in MODES.values() if m.flag is not None and m.name in given]
    if len(chosen) > 1:
        parser.error("choose one mode: " + ", ".join(m.flag.name for m in chosen))
    picked = chosen[0] if chosen else MODES[TRAIN]
    stray = sorted(given - picked.reads - set(MODES))
    if stray:
        # Every mode that reads it, training (the mode without a flag) first.
        where = [m.flag.name if m.flag else "training" for m in
                 sorted(MODES.values(), key=lambda m: (m.flag is not None, m.flag and m.flag.name))
                 if stray[0] in m.reads]
        uses = f"it applies to {', '.join(where)}"
        parser.error(f"{flag_name(stray[0])} does not apply to "
                     f"{picked.flag.name if picked.flag else 'training'}; {uses}")
    return picked
