"""A live game of the browser app: the HumanGame a page's start message asks for, the state the
page draws each frame (and a replay's frames, `replay_frames`), the speeds a page may choose,
and the one-line text a page is told of a failure. The server (app.py, games.py), each game's
worker process (worker.py) and the checker processes (checks.py) share these."""

from __future__ import annotations

import json
from typing import Any

from ..config import GameConfig
from ..game import engine
from ..game.replays import replay_game, state_hash
from ..util.errors import UserError
from ..util.files import hide_paths
from .files import Files

SPEEDS = (1, 2, 4, 8)


def public_message(exc: BaseException) -> str:
    """What a page may be told of a failure: one line, without a word of any file's contents
    (sandbox.StrategyError.public where the error has one) and no path of the server (a file
    by its name alone)."""
    text = hide_paths(getattr(exc, "public", None) or str(exc))
    return " ".join(text.split())[:400] or type(exc).__name__


def client_config(config: GameConfig) -> dict[str, Any]:
    """The constants the renderer needs."""
    return {"width": config.width, "height": config.height, "no_star": config.no_star,
            "star_radius": config.star_radius, "fps": config.fps, "frame_skip": config.frame_skip,
            "max_fuel": config.max_fuel, "max_ammo": config.max_ammo}


def frame_state(batch, g: int = 0) -> dict[str, Any]:
    """Game g's frame as the page draws it: frame number, per ship [x, y, heading, alive,
    thrusting, in hyperspace, fuel left (0-1), torpedoes], torpedoes in flight [x, y]."""
    sf, si = batch.ship_f[g], batch.ship_i[g]
    fuel = max(float(batch.config.max_fuel), 1.0)
    ships = [[round(float(sf[s, engine.SX]), 2), round(float(sf[s, engine.SY]), 2),
              round(float(sf[s, engine.SANG]), 5), int(si[s, engine.ALIVE]),
              int(si[s, engine.THRUSTING]), int(si[s, engine.HYPER_HIDDEN] > 0),
              round(float(sf[s, engine.SFUEL]) / fuel, 4), int(si[s, engine.AMMO])]
             for s in range(2)]
    live = batch.torp_t[g] > 0
    torps = [[round(float(x), 1), round(float(y), 1)]
             for x, y in batch.torp_f[g][live][:, :2]]
    return {"f": int(batch.game_i[g, engine.FRAME]), "s": ships, "t": torps}


def start_game(message: dict, files: Files, seed: int, config: GameConfig | None = None):
    """The HumanGame a page's start message asks for (ValueError with one line if it cannot)."""
    from ..human.play import (
        HELP_ALONE,
        HELP_COMMON,
        HELP_TWO,
        HumanGame,
        Opponent,
        choose_opponent,
    )
    from ..pilots.build import make_pilot
    from ..rating.difficulty import PlayerBook, player_name

    config = config if config is not None else GameConfig()
    kind = message.get("mode")
    replay_dir = files.live_replays
    if kind == "watch":
        a, b = (files.check_spec(message.get(k, "")) for k in ("a", "b"))
        first = make_pilot(a, config, seed)
        second = make_pilot(b, config, seed + 1)
        game = HumanGame(config, Opponent(second, second.name, "watch"), seed=seed,
                         score_limit=10**6, mode=None, replay_dir=replay_dir,
                         first=Opponent(first, first.name, "watch"))
        return game, []
    if kind != "play":
        raise UserError(f"unknown mode {kind!r}: play or watch")
    spec = message.get("opponent") or ""
    difficulty = str(message.get("difficulty") or "auto").strip().lower()[:20]
    book = PlayerBook(files.runs / "players.db")
    two = bool(message.get("two_player"))
    players = tuple(player_name(message[key]) for key in ("player", "player2")[:1 + two]
                    if message.get(key))
    opponent, follow = choose_opponent(files.check_spec(spec) if spec else "", difficulty, two,
                                       config, seed, book, players[0] if players else "")
    game = HumanGame(config, opponent, two_player=two, seed=seed, mode=None,
                     replay_dir=replay_dir, players=players, book=book, follow=follow)
    return game, (HELP_TWO if two else HELP_ALONE) + HELP_COMMON


def replay_frames(replay: dict, source: str, max_bytes: int | None = None) -> bytes:
    """A replay as the page plays it, as JSON: every step's state, replayed here bit for bit;
    the last carries the SHA-256 of the engine state it ended in (ReplayError if that is not
    the state recorded). Each frame is encoded as it is played, so an answer past `max_bytes`
    (a frame's size is the torpedoes in flight, which a replay's settings choose) is refused
    before the rest of the game is played."""
    parts: list[str] = []
    size = 0
    last: dict[str, Any] = {}

    def keep(batch) -> None:
        nonlocal size, last
        last = frame_state(batch)
        parts.append(json.dumps(last, separators=(",", ":")))
        size += len(parts[-1]) + 1
        if max_bytes is not None and size > max_bytes:
            raise UserError(f"replay {source}: its frames come to over {max_bytes / 2**20:g} "
                            "MB, more than this server sends (--limits answer_mb)")

    batch = replay_game(replay, keep)
    parts[-1] = json.dumps({**last, "hash": state_hash(batch)}, separators=(",", ":"))
    head = json.dumps({"source": source, "config": client_config(replay["game_config"]),
                       "players": replay.get("players") or ["ship 0", "ship 1"],
                       "result": replay.get("result")}, separators=(",", ":"))
    return (head[:-1] + ',"frames":[' + ",".join(parts) + "]}").encode()
