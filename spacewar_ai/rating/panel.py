"""The generalization panel: pilots no training run meets, to measure skill that transfers.

`spacewar-ai --evaluate --checkpoint SPEC --panel` plays SPEC against every panel pilot
(`--eval-episodes` games each, sides swapped) and prints the win rate against each with its 95%
interval, and their mean. The panel (spacewar_ai/pretrained/panel/, its README says who is who) is six
strategy files of different styles, run in the sandbox, and three networks trained with other
reward personalities; it is in no curriculum, league or evaluation opponent, so a run's score on
it measures play against opponents it has never seen or modelled.
"""

from __future__ import annotations

from pathlib import Path

from ..config import GameConfig
from ..util.files import SHIPPED_DIR
from ..util.workers import Where
from .match import wilson_interval

PANEL_DIR = SHIPPED_DIR / "panel"


def panel_specs() -> list[str]:
    """The panel's pilot specs: the strategy files, then the networks, each by name."""
    strategies = [f"strategy:{p}" for p in sorted(PANEL_DIR.glob("*.py"))]
    networks = [f"ppo:{p}" for p in sorted(PANEL_DIR.glob("*.pt"))]
    return strategies + networks


def match_seed(seed: int, k: int) -> int:
    """Where panel pilot k's games start. The strength table (scripts/strength.py) gives its
    first two seeds to the hard and medium pilots, so that `--panel` plays the very games of its
    panel cells."""
    return seed + 1000 * (k + 2)


def label(spec: str) -> str:
    """A panel pilot's short name: its file's stem."""
    return Path(spec.split(":", 1)[1]).stem


def evaluate_panel(spec: str, games: int = 200, seed: int = 0, config: GameConfig | None = None,
                   quiet: bool = False, where: Where = Where()) -> dict:
    """SPEC against every panel pilot, `games` games each (sides swapped, torpedo wins only);
    prints a line per pilot and the mean, and returns them."""
    from ..pilots.build import make_pilot
    from ..util.progress import Progress
    from .match import play_specs

    config = config if config is not None else GameConfig()
    games += games % 2
    # A bad spec is refused before any game; each match builds its own pilots, so an adapting
    # planner starts each from its prior.
    name = _closed(make_pilot(spec, config, seed)).name
    rows = []
    specs = panel_specs()
    with Progress(games * len(specs), "panel", "game", quiet) as progress:
        for k, opponent in enumerate(specs):
            r = play_specs(spec, opponent, games, match_seed(seed, k), config, where,
                           progress=progress, seed_a=seed)
            rows.append({"opponent": label(opponent), "spec": opponent, "wins": r.wins_a,
                         "losses": r.wins_b, "draws": r.draws, "games": r.n,
                         "win_rate": r.wins_a / r.n, "ci": wilson_interval(r.wins_a, r.n)})
    mean = sum(r["win_rate"] for r in rows) / len(rows)
    lines = [f"{name} against the panel ({len(rows)} pilots no training run meets), "
             f"{games} games each:"] + [_row(r) for r in rows]
    lines.append(f"  {'panel mean':<16} {mean:6.1%}")
    print("\n".join(lines), flush=True)
    return {"rows": rows, "mean": mean}


def _closed(pilot):
    """The pilot, its sandboxed child (if any) stopped."""
    pilot.close()
    return pilot


def _row(r: dict) -> str:
    low, high = r["ci"]
    return (f"  {r['opponent']:<16} {r['win_rate']:6.1%}  (95% CI {low:.1%}-{high:.1%}; "
            f"{r['wins']} won, {r['losses']} lost, {r['draws']} drawn of {r['games']})")
