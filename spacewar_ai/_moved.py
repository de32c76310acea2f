"""Where the modules of the flat layout (0.1, before subpackages) and of training/'s flat room
went, and the finder that keeps their old import paths working.

`import spacewar_ai.match` (or `from spacewar_ai.match import play_match`) imports
spacewar_ai.rating.match and registers it under the old name too: one module object, so a
monkeypatch through either name patches both. Each old name warns once (FutureWarning, so a
user's script shows it) with the new path. CHANGELOG.md has the same table for readers.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

# old module (under spacewar_ai.) -> new module (under spacewar_ai.). A name that was split
# points at the module holding most of it; the others are named in CHANGELOG.md. The old
# pilots.py and training.py are packages now, which export their old public names themselves.
MOVED = {
    "threads": "util.threads", "processes": "util.processes", "progress": "util.progress",
    "preflight": "util.preflight", "json_input": "util.json_input", "charts": "util.charts",
    "engine": "game.engine", "ballistics": "game.ballistics", "features": "game.features",
    "shaping": "game.shaping", "rendering": "game.rendering", "recording": "game.recording",
    "replays": "game.replays",
    "checkpoints": "agents.checkpoints", "replay_buffer": "agents.replay_buffer",
    "opponent_model": "agents.opponent_model",
    "lm_view": "lm.view", "lm_models": "lm.models", "lm_pilot": "lm.pilot",
    "text_env": "lm.text_env",
    "scripted": "pilots.scripted", "search": "pilots.search", "pilots.specs": "pilots.build",
    "outside_pilots": "pilots.outside", "onnx_export": "pilots.onnx_export",
    "sandbox": "pilots.sandbox", "sandbox_child": "pilots.sandbox_child",
    "match": "rating.match", "ratings": "rating.ratings", "arena": "rating.arena",
    "cluster": "util.cluster", "rating.cluster": "util.cluster", "panel": "rating.panel",
    "human_play": "human.play",
    "league": "training.online.league",
    "warm_start": "training.online.warm_start", "offline": "training.offline.learners",
    "datasets": "training.datasets", "pbt": "training.population.pbt",
    "lm_sft": "training.lm.sft", "lm_grpo": "training.lm.grpo",
    "llm_clients": "llm.clients", "local_llm": "llm.local", "llm_strategies": "llm.strategies",
    "web_guard": "web.guard", "web_games": "web.games", "game_worker": "web.worker",
    "web_arena": "web.arena",
    "benchmark": "bench.throughput", "thread_benchmark": "bench.threads",
    # training/ in wings (0.2): the flat room's modules. training.offline is the offline wing's
    # package now, which exports the old module's public names.
    "training.trainer": "training.online.trainer", "training.loops": "training.online.loops",
    "training.rollouts": "training.online.rollouts",
    "training.rollout_child": "util.workers",
    "training.league": "training.online.league", "training.run_files": "training.online.run_files",
    "training.warm_start": "training.online.warm_start",
    "training.lm_run": "training.lm.run", "training.sft": "training.lm.sft",
    "training.dagger": "training.lm.dagger", "training.grpo": "training.lm.grpo",
    "training.scoring": "training.lm.scoring", "training.trl_adapter": "training.lm.trl_adapter",
    "training.pbt": "training.population.pbt",
}
PREFIX = "spacewar_ai."


class MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `spacewar_ai.<old>` for every old name in MOVED and loads it as the new module."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(PREFIX) and fullname[len(PREFIX):] in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        new = PREFIX + MOVED[spec.name[len(PREFIX):]]
        warnings.warn(f"{spec.name} moved to {new}: import it from there (CHANGELOG.md)",
                      FutureWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module) -> None:
        """The module was run when it was imported under its new name."""


def install() -> None:
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())
