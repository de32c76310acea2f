"""Small builders shared by the tests."""

import numpy as np

from spacewar_ai.config import GameConfig
from spacewar_ai.game import engine
from spacewar_ai.game.engine import GameBatch


def scenario(**config) -> GameBatch:
    """One game, reset, for hand-placed physics scenarios."""
    b = GameBatch(1, GameConfig(**config))
    b.reset(seeds=np.array([0]))
    return b


def run(b: GameBatch, a0: int = 0, a1: int = 0, steps: int = 1):
    """Step with fixed actions; return summed rewards and the flags of the last step."""
    total = np.zeros(2)
    acts = np.array([[a0, a1]], dtype=np.int64)
    for _ in range(steps):
        b.step(acts)
        total += b.reward[0]
        if b.terminated[0] or b.truncated[0]:
            break
    return total, bool(b.terminated[0]), bool(b.truncated[0])


def cause(b: GameBatch, s: int):
    return engine.DeathCause(b.ship_i[0, s, engine.CAUSE])


def load_script(name: str):
    """A module of scripts/ (measurement scripts, not part of the package) by file name."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
