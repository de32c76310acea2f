"""Two versions of the engine timed side by side in one process: which steps games faster.

    git show d2fecad:spacewar_ai/engine.py > /tmp/engine_before.py
    python scripts/engine_ab.py /tmp/engine_before.py spacewar_ai/engine.py

Both step the same batch of games from the same saved state with the same actions, in
alternating order, many times; the figure is the median of the paired ratios B/A, which a
shared host's drifting load moves far less than it moves either time (docs/performance.md).
Each file is compiled afresh (a private numba cache), since numba's cache is keyed by file and
both files define the same functions.
"""

from __future__ import annotations

import argparse
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


def load(path: str, k: int):
    """The engine file `path` as a module of the package (its relative imports resolve)."""
    spec = importlib.util.spec_from_file_location(f"spacewar_ai._engine_ab{k}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a", help="engine file A (for example the old one)")
    p.add_argument("b", help="engine file B")
    p.add_argument("--games", type=int, default=1024)
    p.add_argument("--pairs", type=int, default=300)
    p.add_argument("--steps", type=int, default=20, help="steps per timing")
    args = p.parse_args(argv)
    for path in (args.a, args.b):
        if not Path(path).is_file():
            raise SystemExit(f"{path}: no such engine file")
    batches = []
    for k, path in enumerate((args.a, args.b)):
        engine = load(path, k)
        # Both without statistics where the engine can leave them out: the environments' default.
        quiet = "count_dodges" in inspect.signature(engine.GameBatch).parameters
        batch = engine.GameBatch(args.games, **({"count_dodges": False} if quiet else {}))
        batch.reset(seeds=np.arange(args.games))
        batches.append(batch)
    actions = np.random.default_rng(0).integers(0, 6, size=(32, args.games, 2))
    for i in range(40):  # into the game: torpedoes in flight
        for batch in batches:
            batch.step(actions[i % 32])
            batch.reset(batch.game_i[:, 1] != 0)
    start = {k: getattr(batches[0], k).copy() for k in STATE}
    if not all(np.array_equal(getattr(batches[1], k), v) for k, v in start.items()):
        raise SystemExit("the two engines played the same actions into different states")

    def timed(batch) -> float:
        for k, v in start.items():
            getattr(batch, k)[...] = v
        t = time.perf_counter()
        for i in range(args.steps):
            batch.step(actions[i % 32])
        return (time.perf_counter() - t) / args.steps * 1e6

    a_us, b_us = [], []
    for pair in range(args.pairs):
        if pair % 2:
            a_us.append(timed(batches[0]))
            b_us.append(timed(batches[1]))
        else:
            b_us.append(timed(batches[1]))
            a_us.append(timed(batches[0]))
    ratios = np.array(b_us) / np.array(a_us)
    print(f"{args.games} games, {args.pairs} pairs: A {np.median(a_us):,.0f} us a step, "
          f"B {np.median(b_us):,.0f} us; B/A median {np.median(ratios):.3f} "
          f"(quartiles {np.percentile(ratios, 25):.3f}-{np.percentile(ratios, 75):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
