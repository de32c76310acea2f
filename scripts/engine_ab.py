"""Two versions of the engine, or of the whole vector env, timed side by side in one process.

    git show d2fecad:spacewar_ai/engine.py > /tmp/engine_before.py
    python scripts/engine_ab.py /tmp/engine_before.py spacewar_ai/game/engine.py
    git worktree add /tmp/before d2fecad
    python scripts/engine_ab.py /tmp/before/spacewar_ai spacewar_ai --games 64

Given two engine files, it times `GameBatch.step` (with `--observe`, each step followed by both
ships' observations); given two package folders, `SpacewarVectorEnv.step_both` as a user calls
it, autoresets and infos included (with `--single`, the single env's `step_both`). Both sides
play the same games from the same saved state with the same actions, in alternating order, many
times; the figure is the median of the paired ratios B/A, which a shared host's drifting load
moves far less than it moves either time (docs/performance.md). Each version is compiled afresh
(a private numba cache), since numba's cache is keyed by file and both define the same
functions.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="engine-ab-")

import numpy as np  # noqa: E402

import spacewar_ai  # noqa: E402,F401  (the package the engine files import from)

STATE = ("ship_f", "ship_i", "torp_f", "torp_t", "game_i", "rng")
ENV_STATE = ("_ep_return", "_ep_len")  # the vector env's own, beside its batch's


def load(path: Path, k: int):
    """The engine file, or the package folder, at `path` under a name of its own."""
    # An engine file imports the package relatively: from the package itself in the flat
    # layout (`from .config`), from inside spacewar_ai.game since (`from ..config`).
    inside = "spacewar_ai.game" if path.is_file() and "from ..config" in path.read_text() \
        else "spacewar_ai"
    name = f"{inside}._engine_ab{k}" if path.is_file() else f"_spacewar_ab{k}"
    where = path if path.is_file() else path / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        name, where, submodule_search_locations=None if path.is_file() else [str(path)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module if path.is_file() else importlib.import_module(f"{name}.environment")


class Side:
    """One version: its batch of games, how it steps, and what to restore before each timing."""

    def __init__(self, path: Path, k: int, games: int, observe: bool, single: bool):
        module = load(path, k)
        self.single = single
        if path.is_file():
            engine = module
            # Without statistics where the engine can leave them out: the environments' default.
            quiet = "count_dodges" in inspect.signature(engine.GameBatch).parameters
            self.batch = engine.GameBatch(games, **({"count_dodges": False} if quiet else {}))
            self.batch.reset(seeds=np.arange(games))
            self.env = None
        elif single:
            self.env = module.SpacewarEnv(opponent=None)
            self.env.reset(seed=0)
            self.batch = self.env.batch
        else:
            self.env = module.SpacewarVectorEnv(games, opponent=None)
            self.env.reset_both(seed=0)
            self.batch = self.env.batch
        self.observe = observe

    def step(self, actions: np.ndarray) -> None:
        if self.single:
            *_, terminated, truncated, _ = self.env.step_both(*actions[0])
            if terminated or truncated:
                self.env.reset()
            return
        if self.env is not None:
            self.env.step_both(actions)
            return
        self.batch.step(actions)
        if self.observe:
            self.batch.observe()

    def state(self) -> dict:
        held = {k: getattr(self.batch, k) for k in STATE + ("obs",)}
        if self.env is not None and not self.single:
            held.update({k: getattr(self.env, k) for k in ENV_STATE if hasattr(self.env, k)})
        return held


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a", help="engine file or package folder A (for example the old one)")
    p.add_argument("b", help="engine file or package folder B")
    p.add_argument("--games", type=int, default=1024)
    p.add_argument("--pairs", type=int, default=300)
    p.add_argument("--steps", type=int, default=20, help="steps per timing")
    p.add_argument("--observe", action="store_true",
                   help="engine files: time each step with its observations written, as the "
                        "environments do")
    p.add_argument("--single", action="store_true",
                   help="package folders: time the single env's step_both (one game) instead")
    args = p.parse_args(argv)
    paths = [Path(args.a), Path(args.b)]
    for path in paths:
        if not (path.is_file() or (path / "environment.py").is_file()):
            raise SystemExit(f"{path}: neither an engine file nor a spacewar_ai package folder")
    if paths[0].is_file() != paths[1].is_file():
        raise SystemExit("give two engine files or two package folders, not one of each")
    if args.single:
        if paths[0].is_file():
            raise SystemExit("--single times the single env: give two package folders")
        args.games = 1
    sides = [Side(path, k, args.games, args.observe, args.single) for k, path in enumerate(paths)]
    actions = np.random.default_rng(0).integers(0, 6, size=(32, args.games, 2))
    for i in range(40):  # into the game: torpedoes in flight
        for side in sides:
            side.step(actions[i % 32])
            if side.env is None:  # a vector env starts its ended games again itself
                side.batch.reset(side.batch.game_i[:, 1] != 0)
    start = {k: v.copy() for k, v in sides[0].state().items()}
    if not all(np.array_equal(sides[1].state()[k], v) for k, v in start.items()):
        raise SystemExit("the two versions played the same actions into different states")

    def timed(side: Side) -> float:
        held = side.state()
        for k, v in start.items():
            held[k][...] = v
        t = time.perf_counter()
        for i in range(args.steps):
            side.step(actions[i % 32])
        return (time.perf_counter() - t) / args.steps * 1e6

    a_us, b_us = [], []
    for pair in range(args.pairs):
        if pair % 2:
            a_us.append(timed(sides[0]))
            b_us.append(timed(sides[1]))
        else:
            b_us.append(timed(sides[1]))
            a_us.append(timed(sides[0]))
    ratios = np.array(b_us) / np.array(a_us)
    what = (" of the single env" if args.single
            else " of the vector env" if sides[0].env is not None
            else " with observations" if args.observe else "")
    games = f"{args.games} game{'s' * (args.games != 1)}"
    print(f"{games}{what}, {args.pairs} pairs: A {np.median(a_us):,.0f} us a step, "
          f"B {np.median(b_us):,.0f} us; B/A median {np.median(ratios):.3f} "
          f"(quartiles {np.percentile(ratios, 25):.3f}-{np.percentile(ratios, 75):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
