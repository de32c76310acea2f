"""Tournaments: many matches, ratings fitted from them."""

from __future__ import annotations

import os
from pathlib import Path

from ..util.errors import UserError
from . import common
from .common import (
    CHECKPOINT_DIR,
    CONFIG,
    MATCHES_PER_PAIRING,
    PLAYERS,
    QUIET,
    RATINGS_FILE,
    RAY,
    SAVE_REPLAYS,
    SEED,
)
from .parser import count, flag, mode

TOURNAMENT_MODE = flag("--tournament-mode", "tournaments",
                       choices=("round_robin", "swiss", "elimination"),
                       help="round_robin (default): every pair; swiss: pairs by score, no "
                            "repeats; elimination: single elimination seeded by rating")
WORKERS = flag("--workers", "tournaments", type=count(0),
               help="processes playing pairings (0 = one per core, the default); results do "
                    "not depend on it")
DEFAULT_FIELD_MODELS = 4  # learned models in a tournament given no --players


@mode("tournament", reads=(PLAYERS, TOURNAMENT_MODE, MATCHES_PER_PAIRING, WORKERS, RATINGS_FILE,
                           CHECKPOINT_DIR, SEED, SAVE_REPLAYS, QUIET, CONFIG, *RAY),
      flag_help="--players play each other; ratings with 95%% intervals, crosstable, ratings "
                "file")
def tournament(parser, args) -> int:
    from ..pilots.scripted import SCRIPTED_SPECS
    from ..rating.ratings import best_models, model_spec
    from ..rating.tournament import REPORT_DIR, run_tournament
    from ..util.preflight import check_games, writable

    game = common.game_config(args)
    if args.players:
        specs = common.split_specs(args.players)
        if not all(specs):
            parser.error(f"--players has an empty entry ({args.players!r}); separate specs with "
                         "single commas")
        specs = [x for s in specs for x in arena_players(s)]
    else:
        # The default field: the best few models of this game by best_models' rule, and the
        # scripted pilots.
        models = best_models(args.checkpoint_dir or "checkpoints", args.ratings_file, game=game)
        specs = [model_spec(path) for path, _ in models[:DEFAULT_FIELD_MODELS]] + \
            list(SCRIPTED_SPECS)
        print(f"players (no --players given: the {DEFAULT_FIELD_MODELS} best models with enough "
              f"games or training behind them, and the scripted pilots): {','.join(specs)}")
    where = common.where(args, os.cpu_count() or 1)
    check_games("--matches-per-pairing", args.matches_per_pairing or 100)
    writable(REPORT_DIR, "the tournament's report folder", folder=True)
    report = run_tournament(specs, args.tournament_mode or "round_robin",
                            args.matches_per_pairing or 100, args.seed or 0,
                            where, common.ratings_file(args, game), args.save_replays or 0,
                            args.quiet, config=game)
    print(report.summary())
    return 0


def arena_players(spec: str) -> list[str]:
    """`arena:PATH/arena.db` stands for the arena's players (rating/arena.py); any other spec
    for itself."""
    if not spec.lower().startswith("arena:"):
        return [spec]
    from ..rating.arena import Arena

    db = Path(spec[len("arena:"):])
    if not db.is_file() or db.name != "arena.db":
        raise UserError(f"player {spec!r}: no arena database there; give the arena.db a server "
                        "keeps, such as arena:runs/arena/arena.db")
    return Arena(db.parent).player_specs()
