"""Matches: games between two pilots, played as one engine batch with sides swapped.

`play_match(a, b, games, seed)` plays `games` games from seeded starts: the first half with `a` as
ship 0, the second half from the same starts with the sides swapped, all in one engine batch (an
odd count plays its last start once, `a` as ship 0).
Results are aggregated per pilot (wins by torpedo, other wins, losses, draws, death causes, shots,
hits, game length), never as per-step dicts. `report` is the text a person reads, with a 95%
interval (`wilson_interval`); `play_specs` plays a match of two specs wherever util.workers
says (in parts on Ray). The evaluation mode
built on them is evaluation.py.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..config import GameConfig, RewardConfig
from ..game import engine
from ..game.engine import DeathCause, GameBatch
from ..game.replays import state_hash
from ..pilots.build import SpecTravel, make_pilot
from ..pilots.spec import Spec, parse_spec
from ..util.errors import UserError
from ..util.workers import Where, map_jobs


@dataclass
class GameResult:
    """One finished game, as pilots A and B played it: who won and how, and each side's figures.

    - `winner`, `real_winner`: "a", "b" or None; a real winner won as the game scores (the
      win that counts everywhere): by torpedo, or under `scoring = "survivor"` by outliving the
      other ship; `how`: how the game ended (the loser's death cause, TORPEDO, STAR,
      COLLISION or HYPERSPACE; FORFEIT; or TIMEOUT or NO_AMMO for a game nobody lost).
    - per side (`_a`, `_b`): the death cause (DeathCause name, NONE for a survivor), `shots`
      fired, `hits` (enemy ships hit: 0 or 1), `kills` (1 when this side's torpedo destroyed the
      other ship), `fuel` used (frames of thrust), torpedoes `dodged` (enemy torpedoes that came
      within engine.DODGE_RADII hit radii and missed), and through methods `accuracy` and
      `score`.
    - `score(who, reward)`: what the side earned under a reward table (RewardConfig: the
      standard one, or a personality), the sum of the rewards the environment paid it in this
      game, split by `score_parts` into steps, kill, death, end of game, efficiency, shots and
      thrust. Not defined for a forfeited game (it ended outside the rules).
    """

    seed: int
    a_side: int  # which ship A flew
    winner: str | None
    real_winner: str | None
    cause_a: str
    cause_b: str
    frames: int
    shots_a: int
    shots_b: int
    hits_a: int
    hits_b: int
    decisions: int = 0  # engine steps the game ran (frames / frame_skip, rounded up)
    end: str = "RUNNING"  # engine end reason: DEATH, NO_AMMO or TRUNCATED
    kills_a: int = 0
    kills_b: int = 0
    fuel_a: float = 0.0
    fuel_b: float = 0.0
    dodged_a: int = 0
    dodged_b: int = 0
    ammo_a: int = 0  # torpedoes left at the end
    ammo_b: int = 0
    # "a: reason" or "b: reason" when a player forfeited the game; both lines (joined by a
    # newline) when both forfeited at the same decision, which is a draw.
    forfeit: str | None = None
    actions: np.ndarray | None = None  # (steps, 2) by ship, kept for replays (keep_actions)
    final_state: str | None = None  # replays.state_hash of the game's end, with `actions`

    def forfeit_of(self, who: str) -> str | None:
        """Why player `who` ("a" or "b") forfeited this game, or None."""
        for line in (self.forfeit or "").splitlines():
            if line.startswith(who + ": "):
                return line[len(who) + 2:]
        return None

    @property
    def how(self) -> str:
        if self.forfeit:
            return "FORFEIT"
        dead = [c for c in (self.cause_a, self.cause_b) if c not in ("NONE", "TIMEOUT")]
        if dead:
            return "COLLISION" if "COLLISION" in dead else dead[0]
        return "NO_AMMO" if self.end == "NO_AMMO" else "TIMEOUT"

    def side(self, who: str, name: str):
        return getattr(self, f"{name}_{who}")

    def accuracy(self, who: str) -> float:
        shots = self.side(who, "shots")
        return self.side(who, "hits") / shots if shots else 0.0

    def score_parts(self, who: str, reward: RewardConfig | None = None,
                    config: GameConfig | None = None) -> dict[str, float]:
        """The side's rewards in this game under `reward`, by what earned them."""
        r = reward if reward is not None else RewardConfig()
        cfg = config if config is not None else GameConfig()
        other = "b" if who == "a" else "a"
        mine = self.side(who, "cause")
        death = {"TORPEDO": r.death_penalty, "STAR": r.star_penalty,
                 "COLLISION": r.collision_penalty, "HYPERSPACE": r.hyperspace_penalty}
        parts = {"steps": self.decisions * r.step_penalty,
                 "kill": self.side(who, "kills") * r.kill_reward,
                 "death": death.get(mine, 0.0), "end": 0.0, "efficiency": 0.0,
                 "shots": self.side(who, "shots") * r.shot_reward,
                 "thrust": self.side(who, "fuel") * r.thrust_reward}
        alive = {s: self.side(s, "cause") in ("NONE", "TIMEOUT") for s in (who, other)}
        if alive[who] and alive[other]:
            parts["end"] = r.draw_penalty  # a timeout, or both out of torpedoes
        elif not alive[who] and not alive[other]:
            mutual = mine == "TORPEDO" and self.side(other, "kills")
            if mine == "COLLISION" or mutual:
                parts["end"] = r.draw_penalty
        elif self.real_winner == who:
            parts["end"] = r.win_bonus
            parts["efficiency"] = (r.fuel_efficiency_bonus * (cfg.max_fuel - self.side(who, "fuel"))
                                   / max(cfg.max_fuel, 1)
                                   + r.ammo_efficiency_bonus * self.side(who, "ammo")
                                   / max(cfg.max_ammo, 1))
        elif self.real_winner == other:
            parts["end"] = r.lose_penalty
        return parts

    def score(self, who: str, reward: RewardConfig | None = None,
              config: GameConfig | None = None) -> float:
        return float(sum(self.score_parts(who, reward, config).values()))

    def to_dict(self) -> dict:
        """A JSON line's worth: every figure, both sides, and the scores under `reward`."""
        out = {k: v for k, v in dataclasses.asdict(self).items()
               if k not in ("actions", "final_state")}
        out["how"] = self.how
        return out


@dataclass
class MatchResult:
    """Aggregated outcome of a match between pilot A and pilot B."""

    name_a: str
    name_b: str
    games: list[GameResult] = field(default_factory=list)
    # Who played (Pilot.identity, what ratings key on), for a match whose pilots were built
    # elsewhere (Ray workers).
    identity_a: str = ""
    identity_b: str = ""

    @property
    def n(self) -> int:
        return len(self.games)

    def count(self, who: str, torpedo_only: bool = True) -> int:
        key = "real_winner" if torpedo_only else "winner"
        return sum(1 for g in self.games if getattr(g, key) == who)

    @property
    def wins_a(self) -> int:
        """Games A won by a torpedo kill (the win rate used everywhere)."""
        return self.count("a")

    @property
    def wins_b(self) -> int:
        return self.count("b")

    @property
    def draws(self) -> int:
        return self.n - self.wins_a - self.wins_b

    def win_rate_a(self) -> float:
        return self.wins_a / max(self.n, 1)

    def score_a(self) -> float:
        """Torpedo wins plus half of every other game, in [0, 1]."""
        return (self.wins_a + 0.5 * self.draws) / max(self.n, 1)

    def causes(self, who: str) -> dict[str, int]:
        """Deaths by cause (names as DeathCause prints them), of pilot `who` ("a" or "b")."""
        out = {c.name: 0 for c in DeathCause if c != DeathCause.NONE}
        for g in self.games:
            c = g.cause_a if who == "a" else g.cause_b
            if c != "NONE":
                out[c] += 1
        return out

    def mean_frames(self) -> float:
        return float(np.mean([g.frames for g in self.games])) if self.games else 0.0

    def accuracy(self, who: str) -> float:
        shots = sum(g.shots_a if who == "a" else g.shots_b for g in self.games)
        hits = sum(g.hits_a if who == "a" else g.hits_b for g in self.games)
        return hits / shots if shots else 0.0

    def mean(self, who: str, name: str) -> float:
        """A side's mean per game of a GameResult figure (shots, fuel, dodged, ...)."""
        return float(np.mean([g.side(who, name) for g in self.games])) if self.games else 0.0

    def mean_score(self, who: str, reward: RewardConfig | None = None,
                   config: GameConfig | None = None) -> float:
        played = [g for g in self.games if not g.forfeit]
        return float(np.mean([g.score(who, reward, config) for g in played])) if played else 0.0

    def write_jsonl(self, path, reward: RewardConfig | None = None) -> None:
        """Every game's GameResult as a JSON line, with both sides' scores under `reward`."""
        import json

        with open(path, "a") as f:
            for g in self.games:
                row = {"a": self.name_a, "b": self.name_b, **g.to_dict()}
                if not g.forfeit:
                    row["score_a"], row["score_b"] = g.score("a", reward), g.score("b", reward)
                f.write(json.dumps(row) + "\n")


def play_match(pilot_a, pilot_b, games: int = 200, seed: int = 0,
               config: GameConfig | None = None, reward_config: RewardConfig | None = None,
               swap_sides: bool = True, keep_actions: int = 0, progress=None,
               on_step=None, first_start: int = 0) -> MatchResult:
    """Play `games` games (an even number when swapping sides) and return the aggregate.

    keep_actions=k keeps both ships' actions of k games (alternating sides: games 0, n/2, 1,
    n/2 + 1, ...) in their GameResult, so they can be saved as replays. `progress`
    (progress.Progress) hears of every game as it ends. `on_step(obs, actions, batch, running)`
    is called after every step with the observations (N, 2, D) the pilots acted on, the actions
    (N, 2) by ship, the batch (rewards and end flags of the step, the next observations) and the
    games that were running before it (datasets.py records games this way). `first_start`
    skips that many starts: the games of a match can be played in parts (play_specs),
    each game depending on its own seed alone."""
    config = config if config is not None else GameConfig()
    if games < 1:
        raise UserError(f"games={games} is invalid: must be >= 1")
    a = make_pilot(pilot_a, config, seed)
    b = make_pilot(pilot_b, config, seed + 1)
    n = games
    # An odd count plays its last start once, with `a` as ship 0 (as one game to watch asks).
    half = (n + 1) // 2 if swap_sides else n
    starts = seed + first_start + np.arange(half, dtype=np.int64)
    seeds = np.concatenate([starts, starts[:n - half]]) if swap_sides else starts
    a_side = np.zeros(n, dtype=np.int64)
    if swap_sides:
        a_side[half:] = 1
    batch = GameBatch(n, config, reward_config)
    batch.reset(seeds=seeds)
    rows = np.arange(n)
    for pilot, side in ((a, a_side), (b, 1 - a_side)):
        pilot.attach(batch, side)  # a planner reads the games themselves (search.py)
    # Pilots see the games in the order "A's view, B's view" whatever side they fly.
    a.reset(np.ones(n, dtype=bool), batch.rng.copy())
    b.reset(np.ones(n, dtype=bool), batch.rng.copy() ^ np.uint64(0x5A5A5A5A))
    active = np.ones(n, dtype=bool)
    actions = np.zeros((n, 2), dtype=np.int64)
    forfeits: dict[int, str] = {}
    order = np.stack([np.arange(half), np.arange(half) + half], 1).reshape(-1)[:n] \
        if swap_sides else np.arange(n)
    kept = np.sort(order[:max(0, min(keep_actions, n))])
    kept_log: list[np.ndarray] = []
    kept_steps = np.zeros(n, dtype=np.int64)
    obs = batch.observe()
    decisions = np.zeros(n, dtype=np.int64)
    while active.any():
        # Pilots that cost real time a decision (strategies, language models) read `active`.
        act_a = a.act(obs[rows, a_side], active)
        act_b = b.act(obs[rows, 1 - a_side], active)
        # Both players' forfeits of this decision are gathered before any game ends, so two at
        # once make a draw whichever side is listed first.
        now: dict[int, dict[str, str]] = {}
        for who, pilot in (("a", a), ("b", b)):
            for g, reason in pilot.forfeits().items():
                if active[g]:
                    now.setdefault(g, {})[who] = " ".join(str(reason).split())
        for g, by in now.items():
            forfeits[g] = "\n".join(f"{who}: {why}" for who, why in sorted(by.items()))
            _end_by_forfeit(batch, g, [int(a_side[g]) if who == "a" else 1 - int(a_side[g])
                                       for who in by])
            active[g] = False
        actions[rows, a_side] = act_a
        actions[rows, 1 - a_side] = act_b
        if kept.size:
            kept_log.append(actions[kept].copy())
            kept_steps[active] += 1
        decisions[active] += 1
        before = obs.copy() if on_step is not None else obs
        batch.step(actions)
        obs = batch.observe()
        if on_step is not None:
            on_step(before, actions, batch, active.copy())
        running = int(active.sum())
        active &= ~(batch.terminated | batch.truncated)
        active &= batch.game_i[:, engine.OVER] == 0
        if progress is not None:
            progress.update(running - int(active.sum()))
    result = MatchResult(a.name, b.name, identity_a=a.identity, identity_b=b.identity)
    gi, si, sf = batch.game_i, batch.ship_i, batch.ship_f
    ends = {engine.END_DEATH: "DEATH", engine.END_NO_AMMO: "NO_AMMO",
            engine.END_TRUNCATED: "TRUNCATED"}
    for g in range(n):
        sa, sb = a_side[g], 1 - a_side[g]

        def per(field, ship, g=g):
            return int(si[g, ship, field])

        result.games.append(GameResult(
            seed=int(seeds[g]), a_side=int(sa), winner=_who(gi[g, engine.WINNER], sa),
            real_winner=_who(gi[g, engine.REAL_WINNER], sa),
            cause_a=DeathCause(si[g, sa, engine.CAUSE]).name,
            cause_b=DeathCause(si[g, sb, engine.CAUSE]).name, frames=int(gi[g, engine.FRAME]),
            shots_a=per(engine.SHOTS, sa), shots_b=per(engine.SHOTS, sb),
            hits_a=per(engine.HITS, sa), hits_b=per(engine.HITS, sb),
            decisions=int(decisions[g]), end=ends.get(int(gi[g, engine.END_REASON]), "RUNNING"),
            kills_a=_killed(si[g], sb, by=sa), kills_b=_killed(si[g], sa, by=sb),
            fuel_a=float(config.max_fuel - sf[g, sa, engine.SFUEL]),
            fuel_b=float(config.max_fuel - sf[g, sb, engine.SFUEL]),
            dodged_a=int(batch.stats[g, sa, engine.DODGED]),
            dodged_b=int(batch.stats[g, sb, engine.DODGED]),
            ammo_a=per(engine.AMMO, sa), ammo_b=per(engine.AMMO, sb), forfeit=forfeits.get(g)))
    for k, g in enumerate(kept):
        if g not in forfeits:  # a forfeit ends a game outside the rules: not replayable
            result.games[g].actions = np.array([step[k] for step in kept_log[:kept_steps[g]]],
                                               dtype=np.int64).reshape(-1, 2)
            # Hashed here, from the batch: replaying the file alone must reach the same state,
            # which is the engine's promise that a game does not depend on its batch.
            result.games[g].final_state = state_hash(batch, int(g))
    return result


def _end_by_forfeit(batch: GameBatch, g: int, losers: list[int]) -> None:
    """End game g now: a ship that forfeited loses, and the other's win counts as a torpedo win
    so a forfeit scores exactly like a loss in every table and rating; when both ships
    forfeited, nobody wins (a draw)."""
    gi, si = batch.game_i, batch.ship_i
    gi[g, engine.OVER] = 1
    winner = 1 - losers[0] if len(losers) == 1 else -1
    gi[g, engine.WINNER] = winner
    gi[g, engine.REAL_WINNER] = winner
    for ship in losers:
        si[g, ship, engine.ALIVE] = 0
        si[g, ship, engine.CAUSE] = int(DeathCause.FORFEIT)


def _killed(ships: np.ndarray, ship: int, by: int) -> int:
    """1 when `ship` died of a torpedo of ship `by`."""
    return int(ships[ship, engine.CAUSE] == DeathCause.TORPEDO and ships[ship, engine.KILLER] == by)


def _who(ship: int, a_side: int) -> str | None:
    """A ship index (or -1 for none) as "a", "b" or None from pilot A's side."""
    return None if ship < 0 else ("a" if ship == a_side else "b")


def wilson_interval(wins: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% confidence interval of a proportion (Wilson score)."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, centre - half), min(1.0, centre + half)


def report(r: MatchResult) -> str:
    """What a person reads of a match: wins with a 95% interval, losses, draws, each side's
    deaths by cause and accuracy, game length, and forfeits with their reasons."""
    lo, hi = wilson_interval(r.wins_a, r.n)
    lines = [f"{r.name_a} vs {r.name_b}: {r.n} games, sides swapped",
             f"  wins {r.wins_a} ({r.win_rate_a():.1%}, 95% CI {lo:.1%}-{hi:.1%}), "
             f"losses {r.wins_b}, draws {r.draws}"]
    for who, name in (("a", r.name_a), ("b", r.name_b)):
        causes = ", ".join(f"{k} {v}" for k, v in r.causes(who).items())
        lines.append(f"  deaths of {name}: {causes}; accuracy {r.accuracy(who):.1%}")
        lines.append(f"    per game: {r.mean(who, 'shots'):.1f} shots, {r.mean(who, 'fuel'):.0f} "
                     f"fuel used, {r.mean(who, 'dodged'):.1f} torpedoes dodged, score "
                     f"{r.mean_score(who):.1f}")
    lines.append(f"  mean game length {r.mean_frames():.0f} frames")
    for who, name in (("a", r.name_a), ("b", r.name_b)):
        for reason in sorted({g.forfeit_of(who) for g in r.games} - {None})[:5]:
            lines.append(f"  forfeit by {name}: {reason}")
    return "\n".join(lines)


PART_STARTS = 50  # starts (pairs of games) per job where a match is spread: enough to pay for one


def play_specs(spec_a, spec_b, games: int, seed: int = 0, config: GameConfig | None = None,
               where: Where = Where(), deterministic: bool = True, keep_actions: int = 0,
               progress=None, seed_a: int | None = None) -> MatchResult:
    """play_match of two pilot specs wherever `where` says (util.workers): in this process, or
    in parts of PART_STARTS starts each, their games put back in play_match's order, so the
    same MatchResult game for game. A pilot that learns across a match's games (`adapt:`)
    plays it in one part. Pilot A is built with `seed_a` (default: `seed`), B with seed + 1."""
    config = config if config is not None else GameConfig()
    # Parsed once here; a pilot object (which only this process can fly) passes as it is.
    specs = [parse_spec(x) if isinstance(x, str) else x for x in (spec_a, spec_b)]
    adaptive = any(isinstance(x, Spec) and x.adaptive for x in specs)
    # Kept games come from the first starts, so the first part holds them all.
    size = max(PART_STARTS, (keep_actions + 1) // 2)
    starts = (games + 1) // 2
    parts = [(0, starts)] if adaptive else where.parts(starts, size)
    jobs = [(*specs, min(games - 2 * first, 2 * n), seed, first, config.to_dict(), deterministic,
             keep_actions if first == 0 else 0, seed if seed_a is None else seed_a)
            for first, n in parts]
    played = map_jobs(_play_part, jobs, where, progress, [job[2] for job in jobs],
                      SpecTravel((0, 1)))
    result = MatchResult(played[0].name_a, played[0].name_b, identity_a=played[0].identity_a,
                         identity_b=played[0].identity_b)
    for side in (0, 1):
        for part in played:
            first_side = (part.n + 1) // 2  # an odd part (the last) plays its last start once
            result.games += part.games[:first_side] if side == 0 else part.games[first_side:]
    return result


def _play_part(job) -> MatchResult:
    spec_a, spec_b, games, seed, start, config, deterministic, keep, seed_a = job
    config = GameConfig.from_dict(config)
    a = make_pilot(spec_a, config, seed_a, deterministic)
    b = make_pilot(spec_b, config, seed + 1)
    try:
        return play_match(a, b, games, seed, config, keep_actions=keep, first_start=start)
    finally:
        for pilot in (a, b):
            pilot.close()
