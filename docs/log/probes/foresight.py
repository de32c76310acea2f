"""How much of an opponent's moves can be learned from its games, and does what the learner
reads limit it? The ceiling of a forecast like `adapt:`'s, with our view and with the peer's.

    python docs/log/probes/foresight.py --opponent rllib_sw:rllib_sw/checkpoints_release/pfsp \
        --config examples/rllib_sw_1f9e818.toml --games 4000 --learn 100,800,3200

`--policy` plays `--games` games against `--opponent` in our engine (sides swapped). Every move
the opponent made out of hyperspace is kept with two readings of the state it made it in: our
networks' view of its observation (what the opponent model of a planner learns from, held fire
offered) and the view of MatthewCWeston/rllib_sw's agent (pilots/rllib_sw.peer_observations: its
own ship, the other, and every torpedo of both sides with its engineered features, torpedoes
nearest first). For each count of games in `--learn`, a fresh network of the opponent model's
shape (two tanh layers of 256) learns that many games' moves from each reading (`--steps`
minibatches of 256, Adam) and is judged on 200 games it never saw, chosen at random from both
sides: the share of moves it foresaw exactly, of the shots (moves that fire) and of the fire
switch alone. Where the peer's own agent is the opponent, its reading is all its moves depend
on, so what that column misses is the learner's, not the view's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HELD_OUT = 200  # games judged, never learned from
READINGS = ("ours", "peer")


def record(policy: str, opponent: str, games: int, seed: int, game):
    """Plays the match; returns the arrays "ours" and "peer" (the two readings), "move",
    "game" (its row in the match) and "mask" (the actions it could make), a row for every move
    the opponent made alive and out of hyperspace, and the match's result."""
    from spacewar_ai.game import engine
    from spacewar_ai.game.pilot import Pilot
    from spacewar_ai.pilots.build import make_pilot
    from spacewar_ai.pilots.rllib_sw import peer_observations
    from spacewar_ai.rating.match import play_match
    from spacewar_ai.util.errors import UserError

    viewer = getattr(make_pilot(policy, game), "agent", None)  # our view, as a model reads it
    if viewer is None:
        raise UserError(f"--policy {policy!r} is not a network: name a PPO network "
                        "(pretrained:rllib_sw, ppo:PATH), whose view is the one judged")
    watched = make_pilot(opponent, game, seed=seed + 1)
    viewer.offer_held_fire()
    kept: dict[str, list] = {k: [] for k in ("ours", "peer", "move", "game", "mask")}

    class Watched(Pilot):
        name = watched.name

        def attach(self, batch, sides):
            self.batch = batch
            self.sides = np.broadcast_to(np.asarray(sides, dtype=np.int64), (batch.n,)).copy()
            watched.attach(batch, sides)

        def reset(self, mask=None, seeds=None):
            watched.reset(mask, seeds)

        def act(self, obs, active=None):
            moves = watched.act(obs, active)
            b, g = self.batch, np.arange(self.batch.n)
            out = (b.ship_i[g, self.sides, engine.HYPER_HIDDEN] == 0) & \
                (b.ship_i[g, self.sides, engine.ALIVE] == 1)
            rows = np.flatnonzero(out if active is None else out & active)
            own, other, (mine, mine_on), (theirs, theirs_on) = peer_observations(
                b, self.sides, rows)
            view = viewer.features(obs[rows])
            kept["ours"].append(view)
            kept["peer"].append(np.concatenate(
                [own, other, nearest_first(mine, mine_on), nearest_first(theirs, theirs_on)], 1))
            kept["mask"].append(view[:, -viewer.action_dim:] > 0.5)
            kept["move"].append(np.asarray(moves)[rows])
            kept["game"].append(rows)
            return moves

    result = play_match(policy, Watched(), games, seed, config=game)
    watched.close()
    return {k: np.concatenate(v) for k, v in kept.items()}, result


def nearest_first(torpedoes: np.ndarray, present: np.ndarray) -> np.ndarray:
    """(N, S, 9) torpedo rows and their (N, S) presence as (N, S * 10) values, the nearest
    first, absent slots zero (their presence a column of its own)."""
    distance = np.where(present, torpedoes[..., 7], np.inf)
    order = np.argsort(distance, 1, kind="stable")
    rows = np.take_along_axis(torpedoes * present[..., None], order[..., None], 1)
    flags = np.take_along_axis(present, order, 1)[..., None].astype(np.float32)
    return np.concatenate([rows, flags], -1).reshape(len(torpedoes), -1)


def fit_and_judge(x: np.ndarray, data: dict, learn: np.ndarray, judge: np.ndarray,
                  steps: int, seed: int) -> dict[str, float]:
    """A fresh two-layer network learns the moves of the rows `learn` from inputs `x`; its
    shares foreseen on the rows `judge`."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(seed)
    mean, std = x[learn].mean(0), x[learn].std(0) + 1e-6
    inputs = torch.from_numpy(((x - mean) / std).astype(np.float32))
    moves = torch.from_numpy(data["move"].astype(np.int64))
    mask = torch.from_numpy(data["mask"])
    actions = mask.shape[1]
    net = nn.Sequential(nn.Linear(x.shape[1], 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(),
                        nn.Linear(256, actions))
    optimizer = torch.optim.Adam(net.parameters(), 1e-3)
    rows = torch.from_numpy(learn)
    draw = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        i = rows[torch.randint(len(rows), (256,), generator=draw)]
        loss = F.cross_entropy(net(inputs[i]).masked_fill(~mask[i], -1e9), moves[i])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    j = torch.from_numpy(judge)
    with torch.no_grad():
        guess = net(inputs[j]).masked_fill(~mask[j], -1e9).argmax(1).numpy()
    truth = data["move"][judge]
    fire = fire_switch(truth, actions)
    right = guess == truth
    return {"moves": float(right.mean()), "shots": float(right[fire].mean()) if fire.any()
            else float("nan"), "fire": float((fire_switch(guess, actions) == fire).mean())}


def fire_switch(moves: np.ndarray, actions: int) -> np.ndarray:
    """Whether each move presses fire, in either scheme of controls."""
    from spacewar_ai.game.controls import decode

    return decode(moves, "switches" if actions == 16 else "six")[3].astype(bool)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--opponent", required=True, help="the pilot whose moves are learned")
    p.add_argument("--policy", default="pretrained:rllib_sw", help="the network it plays "
                   "against, whose view is 'ours'")
    p.add_argument("--config", default=str(ROOT / "examples" / "rllib_sw_1f9e818.toml"))
    p.add_argument("--games", type=int, default=4000)
    p.add_argument("--learn", default="100,800,3200", help="games learned from, each a fresh "
                   "network")
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--seed", type=int, default=10_000)
    args = p.parse_args(argv)

    from spacewar_ai.config import load_run_config
    from spacewar_ai.util.errors import UserError
    from spacewar_ai.util.threads import use_torch_threads

    try:
        learn = [int(n) for n in args.learn.split(",")]
        if min(learn) < 1 or max(learn) > args.games - HELD_OUT:
            raise ValueError
    except ValueError:
        p.exit(2, f"foresight: --learn {args.learn!r} must be whole numbers of games from 1 to "
                  f"--games minus {HELD_OUT} ({args.games - HELD_OUT})\n")
    try:
        game = load_run_config(args.config).game
        use_torch_threads()
        data, result = record(args.policy, args.opponent, args.games, args.seed, game)
    except UserError as e:
        p.exit(2, f"foresight: {e}\n")
    # Games learned from and judged are drawn from both sides alike.
    rank = np.random.default_rng(args.seed).permutation(args.games)[data["game"]]
    judge = np.flatnonzero(rank < HELD_OUT)
    fires = fire_switch(data["move"][judge], data["mask"].shape[1])
    print(f"{args.policy} against {args.opponent}, {args.games} games in {game.rules} "
          f"(seed {args.seed}; it won {result.wins_a}): {len(data['move'])} of the opponent's "
          f"moves, {judge.size} of them in the {HELD_OUT} games judged, of which "
          f"{fires.mean():.1%} fire (a guess of never firing gets the switch right in "
          f"{1 - fires.mean():.1%})", flush=True)
    for n in learn:
        learn_rows = np.flatnonzero((rank >= HELD_OUT) & (rank < HELD_OUT + n))
        for reading in READINGS:
            share = fit_and_judge(data[reading], data, learn_rows, judge, args.steps, args.seed)
            print(f"  learned from {n} games ({learn_rows.size} moves), reading {reading}: "
                  f"foreseen {share['moves']:.1%} of moves, {share['shots']:.1%} of shots, "
                  f"the fire switch {share['fire']:.1%}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
