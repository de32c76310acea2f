"""The evaluation and demo modes: a match between two pilot specs with a 95% interval, its games
saved, written out or added to the ratings file; or, to draw them, games played one at a time
in an environment (`watch_games`)."""

from __future__ import annotations

import numpy as np

from ..config import GameConfig
from ..pilots.build import make_pilot
from ..pilots.spec import parse_spec
from ..util.workers import Where
from .match import play_specs, report, wilson_interval
from .ratings import Entrant, Results, standings


def evaluate(spec: str, opponent: str = "heuristic:hard", episodes: int = 200, seed: int = 0,
             config: GameConfig | None = None, deterministic: bool = True,
             render: bool = False, recorder=None, keep_actions: int = 0,
             quiet: bool = False, ratings=None, results=None,
             where: Where = Where(), label: str = "evaluation") -> dict:
    """The evaluation (and demo) mode: `episodes` games (sides swapped) of a pilot spec against
    another, under a progress bar named `label`, printed with a 95% interval, and added to
    `ratings` (ratings.RatingsFile) when given. With render (or a video recorder) the games
    are played one by one here and drawn instead. keep_actions=k saves k games as replays;
    `results` names a file that every game's GameResult is added to, as JSON lines. `where`
    (util.workers) is where the games are played: the same games wherever. Returns the
    figures, the match and both players as (spec, name, identity)."""
    from ..util.progress import Progress

    config = config if config is not None else GameConfig()
    # The door: text becomes a Spec here, once; a pilot object passes as it is.
    spec, opponent = (parse_spec(x) if isinstance(x, str) else x for x in (spec, opponent))
    if render or recorder is not None:
        player = make_pilot(spec, config, seed, deterministic)
        opp = make_pilot(opponent, config, seed + 1)
        try:
            for k, info in enumerate(watch_games(player, opp, episodes, seed, config,
                                                 recorder=recorder)):
                print(describe_game(k, info, (player.name, opp.name)))
        finally:
            for pilot in (player, opp):
                pilot.close()
        written = recorder.close() if recorder is not None else None
        if written is not None:
            print(f"recorded {recorder.frames} frames to {written}")
        return {}
    where.start()  # a cluster that does not answer is refused before the progress bar
    with Progress(episodes, label, "game", quiet) as progress:
        r = play_specs(spec, opponent, episodes, seed, config, where, deterministic,
                       keep_actions, progress)
    # The games' pilots were built where they played; their names came back with the games.
    players = [(spec, r.name_a, r.identity_a), (opponent, r.name_b, r.identity_b)]
    print(report(r))
    if results:
        r.write_jsonl(results)
        print(f"  games added to {results}")
    if keep_actions:
        from ..game.replays import save_match_replays

        saved = save_match_replays(r, config, "evaluate")
        print(f"  saved {len(saved)} replays under {saved[0].parent if saved else 'runs/replays'}")
    if ratings is not None:
        result = Results([Entrant(str(s), name, identity) for s, name, identity in players],
                         [(0, 1, r)])
        ratings.add(result, standings(result), "evaluation")
        print(f"  added to ratings: {ratings.path}")
    return {"wins": r.wins_a, "losses": r.wins_b, "draws": r.draws, "games": r.n,
            "win_rate": r.win_rate_a(), "ci": wilson_interval(r.wins_a, r.n),
            "causes_a": r.causes("a"), "causes_b": r.causes("b"),
            "mean_frames": r.mean_frames(), "match": r, "players": players}


def watch_games(pilot_a, pilot_b, games: int = 1, seed: int = 0,
                config: GameConfig | None = None, render_mode: str | None = "human",
                frames: list | None = None, recorder=None) -> list[dict]:
    """Play games one at a time in a SpacewarEnv (pilot A flies ship 0, pilot B ship 1: both
    built already), drawing them as they go.

    With render_mode "rgb_array", each drawn frame (the start of each game, then one per step) is
    appended to `frames`. A `recorder` (recording.VideoRecorder) gets the same frames drawn
    off-screen. Returns the final info of each game.
    """
    from ..game.environment import SpacewarEnv

    config = config if config is not None else GameConfig()
    if recorder is not None:
        render_mode = "rgb_array"
    a = pilot_a
    env = SpacewarEnv(config, opponent=pilot_b, render_mode=render_mode)
    a.attach(env.batch, 0)  # a planner reads the game itself (search.py)
    results = []

    def keep(frame):
        if frames is not None:
            frames.append(frame)
        if recorder is not None:
            recorder.add(frame)

    try:
        for k in range(games):
            obs, info = env.reset(seed=seed + k)
            a.reset(np.ones(1, dtype=bool), env.batch.rng.copy())
            if render_mode == "rgb_array":
                keep(env.render())
            done = False
            while not done:
                action = int(a.act(obs[None])[0])
                obs, _, term, trunc, info = env.step(action)
                done = term or trunc
                if render_mode == "rgb_array":
                    keep(env.render())
            results.append(info)
    finally:
        env.close()
    return results


def describe_game(k: int, info: dict, names: tuple[str, str]) -> str:
    """One watched game's end, as a line: who won and how each ship's game ended."""
    winner = info["winner"]
    who = "none (draw)" if winner < 0 else f"ship {winner} ({names[winner]})"
    causes = [str(info[f"ship_{s}_death_cause"]) for s in (0, 1)]
    return f"game {k + 1}: winner {who}, deaths: ship 0 {causes[0]}, ship 1 {causes[1]}"
