"""How far above a policy's own level can play against the hard pilot go? A rollout planner says.

    python docs/log/probes/headroom.py [--games N] [--horizon H] [--rollout SPEC] [--samples K]
                               [--opponent-noise P] [--seed S]

The planner is `search:`'s (spacewar_ai/search.py) with the hard pilot itself, not a network's
imitation of it, as its model of the opponent. At every decision it copies each game once per
action, plays that action, then lets ROLLOUT (a player spec: `pretrained`, a checkpoint,
`heuristic:hard`, ...) fly its ship and the hard pilot the other for H decisions, and keeps the
action whose copy ended best (a torpedo win, then an open game, then any other ending, then a
loss; ties go to ROLLOUT's own choice). This is one step of policy improvement with an exact
model of the game and of the opponent, so its win rate is a floor on what the game allows against
`heuristic:hard`, and the share of decisions it changes says how much of ROLLOUT's play that
takes. With K > 1 each action's copy is played K times with ROLLOUT (a PPO model) sampling its
actions (from generators keyed by S and each game's state) and judged by the mean ending, so a
change must pay over many futures, not one exact one. With P > 0 the planner's model of the opponent
is wrong on purpose: in the rollouts (never in the real game) the hard pilot's action is replaced
by a random valid one with probability P each decision, so a change must pay against a pilot
that does not act exactly as foreseen.

It prints, on the same N games (ship 0 in games seeded seed..seed+N-1), ROLLOUT's own record
against hard and the planner's, the share of ROLLOUT's decisions the planner overrode, and where
those fall (the decision's index in its game, the distance between the ships) and which action
replaced which.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

import numpy as np

from spacewar_ai.bench.throughput import random_valid_actions
from spacewar_ai.config import GameConfig
from spacewar_ai.game.engine import FRAME, OVER, REAL_WINNER, Action, GameBatch
from spacewar_ai.pilots.build import make_pilot
from spacewar_ai.pilots.scripted import HeuristicPilot
from spacewar_ai.pilots.search import SearchPilot


class NoisyPilot:
    """A pilot whose every action is replaced by a random valid one with probability p, from a
    seeded generator: a deliberately wrong model of that pilot."""

    def __init__(self, pilot, p: float, seed: int):
        self.pilot, self.p = pilot, p
        self.rng = np.random.default_rng(seed)
        self.name = f"{pilot.name}, noise {p}"

    def act(self, obs: np.ndarray) -> np.ndarray:
        out = self.pilot.act(obs)
        swap = self.rng.random(len(obs)) < self.p
        return np.where(swap, random_valid_actions(obs, self.rng), out)

    def reset(self, mask=None, seeds=None) -> None:
        return None


def plan_games(games: int, horizon: int, rollout: str, seed: int = 0,
               config: GameConfig | None = None, samples: int = 1,
               opponent_noise: float = 0.0) -> dict[str, float]:
    """Play `games` games of the planner (ship 0; spacewar_ai.search.SearchPilot over ROLLOUT,
    with the hard pilot itself as its model of the opponent) against the hard pilot; returns the
    win, loss and other rates and the share of decisions where the planner overrode ROLLOUT.
    horizon=0: no planning, ROLLOUT plays alone (the baseline). samples > 1: each action is
    judged by the mean of that many rollouts in which ROLLOUT (a PPO model) samples its actions
    instead of taking the greedy one, so an action is kept only if it is good for more than one
    exact future. opponent_noise: the probability that the hard pilot's action in a rollout is
    replaced by a random valid one (the live game's pilot is never changed)."""
    if games < 1 or horizon < 0 or samples < 1:
        raise ValueError(f"games={games} and samples={samples} must be >= 1 and "
                         f"horizon={horizon} >= 0")
    if not 0.0 <= opponent_noise <= 1.0:
        raise ValueError(f"opponent_noise={opponent_noise} must be in [0, 1]")
    cfg = config if config is not None else GameConfig()
    hard = HeuristicPilot("hard", cfg)
    player = make_pilot(rollout, cfg, seed, deterministic=True)
    live = GameBatch(games, cfg)
    live.reset(seeds=np.arange(seed, seed + games))
    planner = None
    if horizon:
        model = NoisyPilot(hard, opponent_noise, seed + 1) if opponent_noise else hard
        planner = SearchPilot(player, model, cfg, horizon, samples, seed, name="planner")
        planner.attach(live, 0)
    decisions = overridden = 0
    # Where the overrides fall, beside all decisions: the decision's index in its game and the
    # distance between the ships (units); and which action replaced which.
    at = {"overridden": np.zeros(2), "all": np.zeros(2)}
    changes: collections.Counter = collections.Counter()
    half = np.array([cfg.width / 2, cfg.height / 2])
    while not live.game_i[:, OVER].all():
        obs = live.observe()
        rows = np.flatnonzero(live.game_i[:, OVER] == 0)
        own_choice = player.act(obs[:, 0])
        chosen = own_choice if planner is None else planner.act(obs[:, 0])
        decisions += rows.size
        changed = rows[chosen[rows] != own_choice[rows]]
        overridden += changed.size
        index = live.game_i[:, FRAME] // cfg.frame_skip
        distance = np.hypot(*(obs[:, 0, 9:11] * half).T)
        at["all"] += index[rows].sum(), distance[rows].sum()
        at["overridden"] += index[changed].sum(), distance[changed].sum()
        changes.update(zip(own_choice[changed].tolist(), chosen[changed].tolist()))
        live.step(np.stack([chosen, hard.act(obs[:, 1])], axis=1))
    winner = live.game_i[:, REAL_WINNER]
    return {"games": games, "wins": float(np.mean(winner == 0)),
            "losses": float(np.mean(winner == 1)),
            "other": float(np.mean((winner != 0) & (winner != 1))),
            "decisions": decisions, "overridden": overridden / max(decisions, 1),
            "when": at["overridden"][0] / max(overridden, 1),
            "when_all": at["all"][0] / max(decisions, 1),
            "distance": at["overridden"][1] / max(overridden, 1),
            "distance_all": at["all"][1] / max(decisions, 1), "changes": changes}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--horizon", type=int, default=60, help="decisions per rollout")
    parser.add_argument("--rollout", default="pretrained",
                        help="player spec that flies the planner's ship in the rollouts")
    parser.add_argument("--samples", type=int, default=1,
                        help="rollouts per action, ROLLOUT sampling its actions (1: one greedy "
                             "rollout, an exact future)")
    parser.add_argument("--opponent-noise", type=float, default=0.0,
                        help="probability that the hard pilot's action in a rollout is replaced "
                             "by a random valid one (the planner's model of it is then wrong)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        start = time.time()
        # The baseline plays no rollouts; given the noise only so a bad value fails at once.
        base = plan_games(args.games, 0, args.rollout, args.seed,
                          opponent_noise=args.opponent_noise)
        r = plan_games(args.games, args.horizon, args.rollout, args.seed, samples=args.samples,
                       opponent_noise=args.opponent_noise)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"{args.rollout} alone vs heuristic:hard, the same games: wins {base['wins']:.1%}, "
          f"losses {base['losses']:.1%}, other {base['other']:.1%}")
    how = "greedy" if args.samples == 1 else f"{args.samples} sampled"
    model = (f"; in them the hard pilot's actions random {args.opponent_noise:.0%} of the time"
             if args.opponent_noise else "")
    print(f"planner ({how} rollouts: {args.rollout}, {args.horizon} decisions{model}) vs "
          "heuristic:hard, "
          f"{r['games']} games: wins {r['wins']:.1%}, losses {r['losses']:.1%}, other "
          f"{r['other']:.1%}; it overrode {r['overridden']:.2%} of {r['decisions']} decisions "
          f"({time.time() - start:.0f} s)")
    if r["overridden"]:
        top = ", ".join(f"{Action(a).name.lower()} -> {Action(b).name.lower()} {n}"
                        for (a, b), n in r["changes"].most_common(6))
        print(f"overridden decisions: at decision {r['when']:.1f} of their game on average (all "
              f"decisions: {r['when_all']:.1f}), the ships {r['distance']:.0f} units apart (all: "
              f"{r['distance_all']:.0f}); most common: {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
