"""How far above a policy's own level can play against the hard pilot go? A rollout planner says.

    python scripts/headroom.py [--games N] [--horizon H] [--rollout SPEC] [--seed S]

At every decision the planner copies each game once per action, plays that action, then lets
ROLLOUT (a player spec: `pretrained`, a checkpoint, `heuristic:hard`, ...) fly its ship and the
hard pilot the other for H decisions, and keeps the action whose copy ended best (a torpedo win,
then a draw or an open game, then a loss; ties go to ROLLOUT's own choice). This is one step of
policy improvement with an exact model of the game and of the opponent, so its win rate is a
floor on what the game allows against `heuristic:hard`, and the share of decisions it changes says
how much of ROLLOUT's play that takes.

It prints, on the same N games (ship 0 in games seeded seed..seed+N-1), ROLLOUT's own record
against hard and the planner's, and the share of ROLLOUT's decisions the planner overrode.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from spacewar_ai.bots import HeuristicPilot
from spacewar_ai.config import GameConfig
from spacewar_ai.engine import OVER, REAL_WINNER, GameBatch
from spacewar_ai.players import resolve_player

# What a copy's ending is worth to the planner: a torpedo win, a loss; anything else (a draw, a
# game still open at the horizon) in between, a draw a little below an open game.
WIN, LOSS, DRAW = 1.0, -1.0, -0.2


def plan_games(games: int, horizon: int, rollout: str, seed: int = 0,
               config: GameConfig | None = None) -> dict[str, float]:
    """Play `games` games of the planner (ship 0) against the hard pilot; returns the win, loss
    and other rates and the share of decisions where the planner overrode ROLLOUT. horizon=0:
    no planning, ROLLOUT plays alone (the baseline)."""
    if games < 1 or horizon < 0:
        raise ValueError(f"games={games} must be >= 1 and horizon={horizon} >= 0")
    cfg = config if config is not None else GameConfig()
    actions = cfg.num_actions
    hard = HeuristicPilot("hard", cfg)
    player = resolve_player(rollout, cfg, seed, deterministic=True)
    live = GameBatch(games, cfg)
    live.reset(seeds=np.arange(seed, seed + games))
    copies = GameBatch(games * actions, cfg)
    first = np.tile(np.arange(actions), games)
    decisions = overridden = 0
    while not live.game_i[:, OVER].all():
        obs = live.observe()
        running = live.game_i[:, OVER] == 0
        if horizon == 0:
            decisions += int(running.sum())
            live.step(np.stack([player.act(obs[:, 0]), hard.act(obs[:, 1])], axis=1))
            continue
        copies.load_state_dict({k: np.repeat(v, actions, axis=0)
                                for k, v in live.state_dict().items()})
        value = np.zeros(games * actions)
        ended = np.zeros(games * actions, dtype=bool)
        for step in range(horizon):
            seen = copies.observe()
            own = first if step == 0 else player.act(seen[:, 0])
            copies.step(np.stack([own, hard.act(seen[:, 1])], axis=1))
            new = (copies.game_i[:, OVER] != 0) & ~ended
            winner = copies.game_i[new, REAL_WINNER]
            value[new] = np.where(winner == 0, WIN, np.where(winner == 1, LOSS, DRAW))
            ended |= new
        value = value.reshape(games, actions)
        own_choice = player.act(obs[:, 0])
        value[np.arange(games), own_choice] += 1e-3  # ties: keep the rollout policy's action
        value[obs[:, 0, 30:30 + actions] < 0.5] = -np.inf  # masked actions
        chosen = value.argmax(axis=1)
        decisions += int(running.sum())
        overridden += int((running & (chosen != own_choice)).sum())
        live.step(np.stack([chosen, hard.act(obs[:, 1])], axis=1))
    winner = live.game_i[:, REAL_WINNER]
    return {"games": games, "wins": float(np.mean(winner == 0)),
            "losses": float(np.mean(winner == 1)),
            "other": float(np.mean((winner != 0) & (winner != 1))),
            "decisions": decisions, "overridden": overridden / max(decisions, 1)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--horizon", type=int, default=60, help="decisions per rollout")
    parser.add_argument("--rollout", default="pretrained",
                        help="player spec that flies the planner's ship in the rollouts")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        start = time.time()
        base = plan_games(args.games, 0, args.rollout, args.seed)
        r = plan_games(args.games, args.horizon, args.rollout, args.seed)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"{args.rollout} alone vs heuristic:hard, the same games: wins {base['wins']:.1%}, "
          f"losses {base['losses']:.1%}, other {base['other']:.1%}")
    print(f"planner (rollouts: {args.rollout}, {args.horizon} decisions) vs heuristic:hard, "
          f"{r['games']} games: wins {r['wins']:.1%}, losses {r['losses']:.1%}, other "
          f"{r['other']:.1%}; it overrode {r['overridden']:.2%} of {r['decisions']} decisions "
          f"({time.time() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
