"""What the rating layer's worker processes (tournament workers, arena pairings) find loaded.

The fork server that starts them (`util.processes.worker_context`) imports this module once, and
nothing else does: it imports torch, the pilots and the match, and plays one step of a game so
that numba has loaded the engine's compiled code. Every worker forked from the server then starts
with all of that in memory instead of loading it again. Nothing here touches torch's thread pool,
which a forked child must not inherit.
"""

from ..agents import ppo  # noqa: F401  the network pilots' model, and torch with it
from ..game.engine import GameBatch
from ..pilots import build  # noqa: F401  make_pilot and the scripted pilots' compiled code
from . import match  # noqa: F401  what every worker plays

GameBatch(1)  # the first batch of a process runs every registered warm-up (engine.jit_warm_up)
