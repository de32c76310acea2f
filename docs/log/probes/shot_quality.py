"""Does the tactical view's shot quality (column 32) tell a killing shot from a miss?

    python docs/log/probes/shot_quality.py [--games N] [--decisions D] [--every K]

Positions come from real games (medium against medium, around the star). At every K-th decision
each game is copied with no torpedo in flight; in the copy ship 0 fires once and both ships coast
for longer than a torpedo lives. For the shots that could be fired, it prints how well the
column ranks kills above misses (AUC: the chance that a kill is rated above a miss) and how
often shots rated above 0.6 and below 0.2 killed, for the view as it is (ships' paths bent by the
star) and with straight lines (what models saved without a `gravity` constant read).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from spacewar_ai.config import GameConfig
from spacewar_ai.game import engine
from spacewar_ai.game.engine import GameBatch
from spacewar_ai.game.features import tactical_view, view_constants
from spacewar_ai.pilots.build import make_pilot


def forked_shots(games: int = 64, decisions: int = 150, every: int = 10):
    """Ship 0's observations at the moments it could fire, and whether a torpedo fired then and
    left alone (both ships coasting, no other torpedo in flight) killed ship 1."""
    cfg = GameConfig()
    live, fork = GameBatch(games, cfg), GameBatch(games, cfg)
    live.reset(seeds=np.arange(games))
    pilots = [make_pilot("heuristic:medium", cfg), make_pilot("heuristic:medium", cfg)]
    shots, kills = [], []
    for step in range(decisions):
        over = live.game_i[:, engine.OVER] != 0
        if over.any():  # a finished game starts again from a new seed
            live.reset(over, seeds=np.arange(games) + games * (step + 1))
        obs = live.observe()
        live.step(np.stack([pilots[0].act(obs[:, 0]), pilots[1].act(obs[:, 1])], axis=1))
        if step % every:
            continue
        state = live.state_dict()
        state["torp_t"][:] = 0  # no torpedo in flight but the one fired in the copy
        fork.load_state_dict(state)
        before = fork.observe()[:, 0].copy()
        fire = np.zeros((games, 2), np.int64)
        fire[:, 0] = 4
        killed = np.zeros(games, bool)
        for _ in range(cfg.torpedo_lifetime // cfg.frame_skip + 6):
            fork.step(fire)
            fire[:, 0] = 0
            killed |= fork.ship_i[:, 1, engine.CAUSE] == engine.DeathCause.TORPEDO
        # The fire action was allowed, in a game still on.
        ready = (before[:, 34] > 0.5) & (state["game_i"][:, engine.OVER] == 0)
        shots.append(before[ready])
        kills.append(killed[ready])
    return np.concatenate(shots), np.concatenate(kills)


def rank_quality(obs: np.ndarray, killed: np.ndarray, constants: dict) -> dict[str, float]:
    """AUC of column 32 for kills against misses, and the kill rates above 0.6 and below 0.2."""
    quality = tactical_view(obs, constants)[:, 32]
    auc = float((quality[killed][:, None] > quality[~killed][None, :]).mean())
    good, bad = quality > 0.6, quality < 0.2
    return {"auc": auc, "good": int(good.sum()), "good_kills": float(killed[good].mean()),
            "bad": int(bad.sum()), "bad_kills": float(killed[bad].mean())}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=256)
    parser.add_argument("--decisions", type=int, default=300)
    parser.add_argument("--every", type=int, default=5)
    args = parser.parse_args(argv)
    if min(args.games, args.decisions, args.every) < 1:
        parser.error("--games, --decisions and --every must be >= 1")
    obs, killed = forked_shots(args.games, args.decisions, args.every)
    print(f"{len(killed)} shots, {int(killed.sum())} kills")
    bent = view_constants(GameConfig())
    for name, k in (("bent paths (the view)", bent), ("straight lines", dict(bent, gravity=0.0))):
        r = rank_quality(obs, killed, k)
        print(f"{name}: AUC {r['auc']:.3f}; rated > 0.6: {r['good']} shots, {r['good_kills']:.1%} "
              f"killed; rated < 0.2: {r['bad']} shots, {r['bad_kills']:.1%} killed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
