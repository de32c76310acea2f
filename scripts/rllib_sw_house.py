"""Our pilots in the house of MatthewCWeston/rllib_sw: its own environment, its own agent.

    python scripts/rllib_sw_house.py agreement --peer-repo PATH --checkpoint PATH [--states 200]
        [--commit REV]
    python scripts/rllib_sw_house.py match --peer-repo PATH --checkpoint PATH --pilot SPEC
        [--games 200] [--random-orbits 0.75] [--seed 0] [--sampled] [--commit REV]

The peer's code is imported from a checkout the user names (`git clone
https://github.com/MatthewCWeston/rllib_sw`), never copied: its environment needs
`ray[rllib]` (here `pip install "ray[tune]" dm-tree`), and its checkpoint is a module_state.pkl
or a checkpoint folder (`checkpoints_release/pfsp`). `--commit REV` plays in the peer's game as
it was at that commit of the checkout's history (written out to a temporary folder with `git
archive`), since its rules changed after its released agent was trained; every run prints the
commit it played in. The rules are read from the peer's code itself (the facing of its at-rest
start, where its ships come back from hyperspace) and name the preset of ours that matches them:
`rllib_sw` for today's game, `rllib_sw_1f9e818` for the game of the released agent. Each
decision, the peer's state is copied into a one-game GameBatch under that preset, so any of our
pilots reads it as it reads our games (a planner rolls out our engine from there), and its action
is played there as the peer's MultiDiscrete([2, 3, 2, 2]).

- `agreement`: from the same states, our engine and the peer's environment step the same moves
  (the peer's agent flying both ships; jumps from rest left out, since the two draw them from
  other random streams, jumps from an orbit kept); prints how far positions and velocities
  drift after 1, 10 and 50 decisions, how often a game ends the same way, and how far our view
  of the peer's agent (pilots/rllib_sw) is from the peer's own (its logits from RLlib's module,
  where RLlib loads).
- `match`: `--pilot` against the peer's agent in the peer's environment, sides swapped, with
  wins, draws, a 95% interval and how each game ended.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from spacewar_ai.config import GameConfig
from spacewar_ai.game import engine
from spacewar_ai.pilots import file_identity, make_pilot
from spacewar_ai.pilots.rllib_sw import (
    RllibSwPilot,
    copy_peer_state,
    from_peer,
    in_our_units,
    module_file,
    to_peer,
)
from spacewar_ai.rating.match import wilson_interval
from spacewar_ai.util.progress import DecisionCounter, Progress

ENV = {"speed": 5.0, "ep_length": 4096, "aug_obs": True, "stochastic_hspace": True}


PEER_CODE = ("environments", "classes")  # what is imported of the peer's, all its code needs


def peer_modules(repo: Path):
    """The peer's environment class and its objects' module, imported from its checkout (and
    from no checkout imported before: the modules of one are forgotten first)."""
    for name in [n for n in sys.modules if n.split(".")[0] in ("environments", "classes")]:
        del sys.modules[name]
    sys.path.insert(0, str(repo.resolve()))
    from environments import SpaceWar_objects
    from environments.SW_1v1_env import SW_1v1_env

    return SW_1v1_env, SpaceWar_objects


def peer_checkout(repo: Path, commit: str | None, into: Path) -> tuple[Path, str]:
    """The folder to import the peer's code from, and the commit it holds: the code of `commit`
    (PEER_CODE) written out under `into`, or the checkout as it stands."""
    def git(*args, **kw):
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False,
                              **kw)
    if commit is None:
        head = git("rev-parse", "HEAD", text=True)
        if head.returncode:
            return repo, "an unversioned checkout"
        dirty = git("status", "--porcelain", "--untracked-files=no", text=True).stdout.strip()
        return repo, head.stdout.strip() + (" with local changes" if dirty else "")
    sha = git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", text=True)
    if sha.returncode:
        sys.exit(f"--commit {commit}: no such commit in {repo}; git -C {repo} log --oneline "
                 "lists them")
    sha = sha.stdout.strip()
    archive = git("archive", "--format=tar", sha, "--", *PEER_CODE)
    if archive.returncode:
        sys.exit(f"--commit {commit}: git archive failed ({archive.stderr.decode().strip()})")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into, sha


def peer_rules(env_cls, objects) -> str:
    """Which preset of ours the peer's code plays, read from the code itself: the heading of
    its at-rest start, where a ship comes back from hyperspace at random, and where a ship of
    its random-orbit start (which never jumps at random) comes back (config.RULES_PRESETS)."""
    env = env_cls({**ENV, "random_orbit_prob": 0.0})
    env.reset(seed=0)
    facing = [float(ship.ang) % 360 for ship in env.playerShips]
    speed = ENV["speed"]

    def back(stochastic: bool, charges: int, draw: int = 0) -> np.ndarray:
        ship = objects.Ship(np.array([0.5, 0.25]) * objects.WRAP_BOUND, 0.0,
                            stochastic_hspace=stochastic)
        ship.h_charges = charges
        ship.h_reload = objects.HYPERSPACE_RECHARGE - objects.HYPERSPACE_REENTRY + speed
        ship.update([0, 0, 0, 0], [], speed, rng=np.random.default_rng(draw))
        return np.array(ship.pos, dtype=float) / objects.WRAP_BOUND

    # A full charge never fails.
    places = np.array([back(True, objects.HYPERSPACE_CHARGES, draw) for draw in range(32)])
    quadrant = bool((places >= 0).all())
    mirror = back(False, objects.HYPERSPACE_CHARGES // 2)
    orbit = {(-0.5, -0.25): "mirror", (-0.25, -0.125): "mirror_nearer"}.get(
        tuple(mirror.round(9)), f"to {mirror.round(3).tolist()} from (0.5, 0.25)")
    seen = {"rest_heading": (-facing[0]) % 360, "hyperspace_reentry":
            "quadrant" if quadrant else "screen", "orbit_hyperspace": orbit}
    for name in ("rllib_sw", "rllib_sw_1f9e818"):
        if all(getattr(GameConfig.preset(name), k) == v for k, v in seen.items()):
            return name
    sys.exit(f"the peer's code at this commit plays {seen}: no preset of ours plays that game "
             "(config.RULES_PRESETS has rllib_sw and rllib_sw_1f9e818)")


def peer_game(args, into: Path):
    """The peer's environment class and our config of its game, having said which commit."""
    folder, commit = peer_checkout(args.peer_repo, args.commit, into)
    env_cls, objects = peer_modules(folder)
    rules = peer_rules(env_cls, objects)
    print(f"the peer's game at {commit} (our rules preset {rules!r})")
    return env_cls, GameConfig.from_dict({"rules": rules, "controls": args.controls})


class House:
    """Peer games mirrored in a batch of ours, one row a game, where our pilots read them."""

    def __init__(self, env_cls, random_orbits: float, config: GameConfig, games: int = 1):
        self.envs = [env_cls({**ENV, "random_orbit_prob": random_orbits}) for _ in range(games)]
        self.env = self.envs[0]
        self.config = config
        self.batch = engine.GameBatch(games, config)

    def observe(self, active=None) -> np.ndarray:
        """Our observations of the games still running (`active`, None: all) copied in."""
        for g, env in enumerate(self.envs):
            if active is None or active[g]:
                copy_peer_state(env, self.batch, g)
        return self.batch.observe()


def end_of(env, rewards) -> str:
    """How a peer game ended, for the table of causes."""
    if not env.terminated:
        return "TIMEOUT"
    loser = [s for s in (0, 1) if rewards[s] < 0]
    if not loser:
        return "DRAW"
    ship = env.playerShips[loser[0]]
    pos = np.asarray(ship.pos, dtype=float)
    # A failed jump stops the ship on the star's centre exactly; a last jump from an orbit in
    # today's game lands it there moving (a fall into the star).
    if not pos.any() and not np.asarray(ship.vel, dtype=float).any():
        return "HYPERSPACE"
    return "STAR" if np.linalg.norm(pos) < ship.size else "TORPEDO"


def match(args) -> None:
    """Every game at once, one peer environment each: our pilot flies ship 0 in the first half
    and ship 1 in the second, the two halves starting from the same seeds."""
    env_cls, config = args.game
    n = args.games
    house = House(env_cls, args.random_orbits, config, n)
    ours = make_pilot(args.pilot, config, args.seed)
    peer = RllibSwPilot(module_file(args.checkpoint), file_identity(module_file(args.checkpoint)),
                        config, args.seed + 1, deterministic=not args.sampled)
    half = (n + 1) // 2
    side = (np.arange(n) >= half).astype(np.int64)
    rows = np.arange(n)
    ours.attach(house.batch, side)
    peer.attach(house.batch, 1 - side)
    for g, env in enumerate(house.envs):
        env.reset(seed=args.seed + g % half)
    ours.reset(np.ones(n, bool), np.arange(n, dtype=np.uint64) + np.uint64(args.seed))
    peer.reset(np.ones(n, bool), None)
    active = np.ones(n, bool)
    rewards = [{0: 0, 1: 0} for _ in range(n)]
    # A planner's match takes an hour and its games end together: the bar counts decisions
    # too, and a log gets its state every few minutes.
    with Progress(n, "peer's environment", unit="game") as bar:
        counted = DecisionCounter(bar.bar)
        while active.any():
            counted(int(active.sum()))
            obs = house.observe(active)
            mine = ours.act(obs[rows, side], active)
            theirs = peer.act(obs[rows, 1 - side], active)
            for g in np.flatnonzero(active):
                moves = {int(side[g]): to_peer(int(mine[g]), config.controls).tolist(),
                         int(1 - side[g]): to_peer(int(theirs[g]), config.controls).tolist()}
                _, rewards[g], term, trunc, _ = house.envs[g].step(moves)
                if term["__all__"] or trunc["__all__"]:
                    active[g] = False
                    house.batch.game_i[g, engine.OVER] = 1  # a planner reads no move for it
                    bar.update()
    tally, causes = Counter(), Counter()
    for g, env in enumerate(house.envs):
        me = int(side[g])
        won, lost = rewards[g][me] > 0, rewards[g][me] < 0
        tally["win" if won else "loss" if lost else "draw"] += 1
        causes[("ours " if lost else "peer's " if won else "") + end_of(env, rewards[g])] += 1
    low, high = wilson_interval(tally["win"], n)
    print(f"{args.pilot} against rllib_sw:{args.checkpoint}"
          f"{' (sampling)' if args.sampled else ''} in the peer's environment (random orbits "
          f"{args.random_orbits:g}, {n} games, sides swapped): "
          f"{tally['win']}-{tally['loss']}-{tally['draw']} (wins {tally['win'] / n:.1%}, "
          f"95% {low:.1%}-{high:.1%})")
    print("ends: " + ", ".join(f"{k} {v}" for k, v in causes.most_common()))


def agreement(args) -> None:
    env_cls, config = args.game
    house = House(env_cls, 0.75, config)
    peer = RllibSwPilot(module_file(args.checkpoint), "peer", config)
    peer_module = _rllib_module(args.checkpoint)
    drift = {1: [], 10: [], 50: []}
    same_end, ended, logit_gap = 0, 0, []
    for state in range(args.states):
        env = house.env
        env.reset(seed=state)
        obs_peer, _ = env.reset(seed=state)
        for _ in range(state % 40):  # states from a little way into a game, as well as starts
            obs_peer, _, term, trunc, _ = env.step(_peer_moves(peer, house))
            if term["__all__"] or trunc["__all__"]:
                obs_peer, _ = env.reset(seed=state)
                break
        if peer_module is not None:
            logit_gap.append(_logit_gap(peer, house, peer_module, obs_peer))
        copy_peer_state(env, house.batch)
        batch = house.batch
        for step in range(1, 51):
            peer.attach(batch, np.array([0]))
            moves = _peer_moves(peer, house, copy=False)
            _, rewards, term, trunc, _ = env.step(moves)
            batch.step(np.array([[int(from_peer(*moves[k], config.controls)) for k in (0, 1)]]))
            if step in drift:
                ours = batch.ship_f[0, :, [engine.SX, engine.SY]].T
                theirs = np.array([in_our_units(s.pos, config) for s in env.playerShips])
                d = (ours - theirs + 512.0) % 1024.0 - 512.0
                drift[step].append(float(np.abs(d).max()))
            peer_over, ours_over = term["__all__"] or trunc["__all__"], \
                bool(batch.game_i[0, engine.OVER])
            if peer_over or ours_over:
                ended += 1
                same_end += peer_over == ours_over and (
                    (rewards[0] > 0) == (batch.game_i[0, engine.WINNER] == 0))
                break
    print(f"{args.states} states of the peer's environment, the same moves in both engines:")
    for step, values in drift.items():
        if values:
            print(f"  after {step:>2} decisions: largest position gap, median "
                  f"{np.median(values):.3f}, 90th percentile {np.percentile(values, 90):.3f} "
                  f"units ({len(values)} games still running)")
    print(f"  games that ended within 50 decisions: {ended}, the same way in both: {same_end}")
    if logit_gap:
        print(f"  our rebuild of its actor against RLlib's module: largest logit gap "
              f"{max(logit_gap):.2e} over {len(logit_gap)} states")


def _peer_moves(peer, house, copy: bool = True) -> dict[int, list[int]]:
    """The peer's agent's moves for both ships, read from the mirrored state, but for jumps the two
    engines would draw differently."""
    if copy:
        copy_peer_state(house.env, house.batch)
    peer.attach(house.batch, np.array([0]))
    first = peer.choices()[0]
    peer.attach(house.batch, np.array([1]))
    second = peer.choices()[0]
    moves = {0: list(first), 1: list(second)}
    for s, m in moves.items():  # a random jump draws from another stream in each engine
        if house.env.playerShips[s].stochastic_hspace:
            m[3] = 0
    if house.config.controls == "six":  # the six actions hold one of rotate, thrust, fire
        for m in moves.values():
            if m[0] or m[2]:
                m[1] = 0
    return moves


def _rllib_module(checkpoint: Path):
    try:
        from classes.inference_helpers import load_checkpoint  # the peer's checkout
        return load_checkpoint(os.path.abspath(checkpoint), "my_policy")
    except Exception as exc:  # RLlib missing or of another version: the gap is not measured
        print(f"(RLlib's module did not load: {type(exc).__name__}; the logit gap is skipped)")
        return None


def _logit_gap(peer, house, module, obs_peer) -> float:
    import torch
    from classes.inference_helpers import obs_to_tensor  # the peer's checkout

    copy_peer_state(house.env, house.batch)
    gap = 0.0
    for side in (0, 1):
        peer.attach(house.batch, np.array([side]))
        ours = peer.logits()[0]
        with torch.no_grad():
            theirs = module.forward_inference({"obs": obs_to_tensor(obs_peer[side])})
        gap = max(gap, float(np.abs(ours - theirs["action_dist_inputs"][0].numpy()).max()))
    return gap


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("agreement", "match"))
    parser.add_argument("--peer-repo", type=Path, required=True)
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--pilot", default="heuristic:hard")
    parser.add_argument("--controls", default="switches", choices=("six", "switches"))
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--states", type=int, default=200)
    parser.add_argument("--random-orbits", type=float, default=0.75)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sampled", action="store_true")
    parser.add_argument("--commit", help="play in the peer's game at this commit of --peer-repo "
                        "(default: the checkout as it stands); its agent was trained at 1f9e818")
    args = parser.parse_args(argv)
    if not (args.peer_repo / "environments" / "SW_1v1_env.py").is_file():
        sys.exit(f"--peer-repo {args.peer_repo}: not a checkout of rllib_sw (no "
                 "environments/SW_1v1_env.py); git clone https://github.com/MatthewCWeston/rllib_sw")
    with tempfile.TemporaryDirectory(prefix="rllib_sw-") as into:
        args.game = peer_game(args, Path(into))
        (agreement if args.what == "agreement" else match)(args)


if __name__ == "__main__":
    main()
