"""Human play: fly against a level of the difficulty ladder, any pilot, or a second person at one
keyboard (docs/human-play.md).

One engine frame per tick at `GameConfig.fps`; people act every frame, the pilot every
`frame_skip` frames as in training. The opponent is a level (rating/difficulty.py), `auto`, or
any pilot spec; rated rounds go into the player book and the rating is shown after each. There
is one action per decision, so keys held together are shared out: fire first whenever a torpedo
is ready, rotation and thrust alternating frame by frame."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import GameConfig
from ..game import engine
from ..game.controls import Action, encode
from ..game.pilot import Pilot, as_pilot
from ..game.replays import REPLAY_DIR, make_replay, new_replay_path, save_replay, state_hash
from ..rating.difficulty import (
    DIFFICULTY_NAMES,
    REFERENCE_POOL,
    Follow,
    Level,
    PlayerBook,
    Rated,
    level_named,
    rated_spec,
)
from ..rating.ratings import expected_score, score_of
from ..util.errors import UserError

PLAYER_BOOK = REPLAY_DIR.parent / "players.db"


@dataclass
class Opponent:
    """The computer pilot, and how it was chosen (shown in the title bar and the terminal);
    `rating` is its rating on the ladder's scale where it has one (its rounds are rated)."""

    pilot: Pilot
    name: str
    reason: str
    spec: str = ""
    rating: float | None = None

    def __post_init__(self):
        self.pilot = as_pilot(self.pilot)


def level_opponent(level: Level, config: GameConfig, seed: int = 0, why: str = "") -> Opponent:
    """A level of the ladder as the opponent."""
    from ..pilots.build import make_pilot

    pilot = make_pilot(level.spec, config, seed)
    return Opponent(pilot, pilot.name, why or f"{level.label}, rated {level.rating:.0f}",
                    level.spec, level.rating)


def difficulty_opponent(difficulty: str, config: GameConfig, seed: int = 0) -> Opponent:
    """The level a --difficulty value names (a number or an old name; not auto)."""
    level = level_named(difficulty)
    name = difficulty.strip().lower()
    # An old name is a rung of the ladder, which need not be the scripted pilot of that name.
    other = (f"; the scripted pilot heuristic:{name} is --opponent heuristic:{name}"
             if name in DIFFICULTY_NAMES and f"heuristic:{name}" in REFERENCE_POOL
             and level.spec != f"heuristic:{name}" else "")
    return level_opponent(level, config, seed, f"difficulty {difficulty}: {level.label}, "
                                               f"rated {level.rating:.0f}{other}")


def spec_opponent(spec, config: GameConfig, seed: int = 0) -> Opponent:
    from ..pilots.build import make_pilot

    pilot = make_pilot(spec, config, seed)
    return Opponent(pilot, pilot.name, f"--opponent {spec}", str(spec), rated_spec(str(spec)))


# Key names (pygame.key.key_code names) per control, per player.
CONTROLS_ALONE = {"left": ("left", "a"), "right": ("right", "d"), "thrust": ("up", "w"),
                  "fire": ("space",), "hyperspace": ("down", "s")}
CONTROLS_TWO = (
    {"left": ("left",), "right": ("right",), "thrust": ("up",),
     "fire": ("right ctrl", "return"), "hyperspace": ("down",)},
    {"left": ("a",), "right": ("d",), "thrust": ("w",), "fire": ("left shift", "space"),
     "hyperspace": ("s",)},
)
HELP_ALONE = ["you fly the needle (left ship colour)",
              "rotate: LEFT / RIGHT (or A / D)", "thrust: UP (or W)", "fire: SPACE",
              "hyperspace (when enabled): DOWN (or S)"]
HELP_TWO = ["player 1 (needle): LEFT / RIGHT rotate, UP thrust, RIGHT CTRL or ENTER fire, "
            "DOWN hyperspace",
            "player 2 (wedge): A / D rotate, W thrust, LEFT SHIFT or SPACE fire, S hyperspace"]
HELP_COMMON = ["P pause   R restart round   F1 or H this help   ESC quit"]


def keys_to_action(held: set[str], frame: int, mask: np.ndarray, keys: dict,
                   controls: str) -> int:
    """One action of scheme `controls` from the keys held this frame, pressing what the mask
    allows (game.controls). With the six actions a turn and thrust held together take turns
    frame by frame, since no one action does both."""
    left, right, thrust, fire, jump = (any(k in held for k in keys[what]) for what in
                                       ("left", "right", "thrust", "fire", "hyperspace"))
    if controls == "six" and left != right and thrust and frame % 2 == 0 and \
            not (fire and mask[Action.FIRE]):
        thrust = False
    return int(encode(left, right, thrust, fire, jump, controls, mask))


class HumanGame:
    """A match of rounds to `score_limit` points in one window (off-screen with
    mode="rgb_array"; with no drawing at all, mode=None, when a browser draws it: web.py). Drive
    it with `run()` (real time) or with `key_down`/`key_up` (or pygame events, `process`) and
    `tick()`, one frame each. `first`, when given, is a pilot that flies ship 0 instead of the
    keyboard: two pilots to watch."""

    BANNER_SECONDS = 2.0

    def __init__(self, config: GameConfig | None = None, opponent: Opponent | None = None,
                 two_player: bool = False, score_limit: int = 5, seed: int = 0,
                 scale: float = 1.0, phosphor: bool = False, mode: str = "human",
                 recorder=None, replay_dir=REPLAY_DIR, save_replays: bool = True,
                 first: Opponent | None = None, players: tuple[str, ...] = (),
                 book: PlayerBook | None = None, follow: Follow | None = None):
        base = config if config is not None else GameConfig()
        if opponent is None and not two_player:
            raise UserError("HumanGame needs an opponent, or two_player=True")
        if score_limit < 1:
            raise UserError(f"score_limit={score_limit} is invalid: must be >= 1")
        if not 0.25 <= scale <= 4:
            raise UserError(f"--scale {scale} is invalid: use 0.25 to 4")
        self.decision_frames = base.frame_skip
        self.base_config = base  # what pilots are built with (they decide every frame_skip)
        # People act every frame; the engine therefore steps one frame at a time.
        self.config = base.changed(frame_skip=1)
        self.opponent = None if two_player else opponent
        self.first = first
        self.two_player = two_player
        self.score_limit = int(score_limit)
        self.seed = int(seed)
        # The people's names in the player book; their rounds are rated where `book` is given.
        self.players = tuple(players)
        self.book = book
        self.follow = follow
        self.rated: Rated | None = book.rating(self.players[0]) if book and self.players \
            else None
        self._next_level: Level | None = None
        self.names = (["player 1", "player 2"] if two_player else
                      [first.name if first else "you", opponent.name])
        title = ("Spacewar! AI - two players" if two_player else
                 f"Spacewar! AI - {self.names[0]} vs {opponent.name} - {opponent.reason}")
        self.renderer = None
        if mode is not None:
            from ..game.rendering import Renderer

            self.renderer = Renderer(self.config, int(round(640 * scale)), mode, title,
                                     phosphor=phosphor, own_events=False)
        self.mode = mode
        self.recorder = recorder
        self.replay_dir = Path(replay_dir)
        self.save_replays = save_replays
        self.batch = engine.GameBatch(1, self.config)
        for side, who in ((0, self.first), (1, self.opponent)):
            if who is not None:
                # A planner (search:...) reads the game itself; it plays its copies at its own
                # decision pace, `frame_skip` frames a step.
                who.pilot.attach(self.batch, side)
        self.score = [0, 0]
        self.round = 0
        self.held: set[str] = set()
        self.paused = False
        self.show_help = False
        self.quit = False
        self.over = False  # the match is decided
        self.banner: list[str] = []
        self.banner_frames = 0
        self.replays: list[Path] = []
        self.results: list[dict] = []
        self._actions = np.zeros((1, 2), dtype=np.int64)
        self._ai_action = [0, 0]
        self._start_round()

    # --- rounds ------------------------------------------------------------------------------
    def _start_round(self) -> None:
        if self._next_level is not None:  # auto moved: the next level flies from this round
            self.opponent.pilot.close()
            self.opponent = level_opponent(self._next_level, self.base_config, self.seed,
                                           self.follow.reason)
            self.opponent.pilot.attach(self.batch, 1)
            self.names[1] = self.opponent.name
            self._next_level = None
        self.round += 1
        self.round_seed = self.seed + self.round - 1
        self.batch.reset(seeds=np.array([self.round_seed], dtype=np.int64))
        self.batch.observe()
        self.frame = 0
        self.log: list[tuple[int, int]] = []
        self.round_over = False
        self.banner = []
        for who in (self.first, self.opponent):
            if who is not None:
                who.pilot.reset(np.ones(1, dtype=bool), self.batch.rng.copy())

    def restart_round(self) -> None:
        """R: the same round again from a new start; the score stays."""
        self.round -= 1
        self.seed += 1000  # a new start position, still reproducible from the replay file
        self._start_round()

    def _finish_round(self) -> None:
        gi, si = self.batch.game_i[0], self.batch.ship_i[0]
        winner = int(gi[engine.WINNER])
        cause = [engine.DeathCause(int(si[s, engine.CAUSE])).name for s in range(2)]
        if winner >= 0:
            self.score[winner] += 1
            how = {"TORPEDO": "by torpedo", "STAR": "- the other ship fell into the star",
                   "COLLISION": "- collision", "HYPERSPACE": "- lost in hyperspace"}
            text = f"{self.names[winner]} win{'s' if self.names[winner] != 'you' else ''} " \
                   f"{how.get(cause[1 - winner], cause[1 - winner])}"
        else:
            text = "draw (" + ("timeout" if cause[0] == "TIMEOUT" else
                               f"{cause[0]} / {cause[1]}") + ")"
        result = {"round": self.round, "winner": winner if winner >= 0 else None,
                  "real_winner": int(gi[engine.REAL_WINNER]) if gi[engine.REAL_WINNER] >= 0
                  else None, "causes": cause, "frames": int(gi[engine.FRAME]),
                  "score": list(self.score)}
        self.results.append(result)
        if self.save_replays:
            replay = make_replay(self.config, self.round_seed, self.log, self.names, result,
                                 state_hash(self.batch))
            label = f"human-r{self.round}-{self.names[1]}"
            self.replays.append(save_replay(new_replay_path(label, self.replay_dir), replay))
        self.round_over = True
        self.over = max(self.score) >= self.score_limit
        self.banner = [text, f"score {self.score[0]} : {self.score[1]}", *self._rate(result)]
        if self.over:
            champ = self.names[int(np.argmax(self.score))]
            self.banner.append(f"{champ} win{'s' if champ != 'you' else ''} the match - "
                               "R rematch, ESC quit")
        self.banner_frames = int(self.BANNER_SECONDS * self.config.fps)

    def _rate(self, result: dict) -> list[str]:
        """Record a rated round in the player book and refit the player's rating; with `auto`,
        choose the level of the next round. Returns the lines that say so."""
        if self.book is None or self.first is not None or not self.players:
            return []
        if self.base_config != GameConfig():
            # The ladder's ratings, and so a player's, are of the default game.
            return ["(unrated: ratings are of the default game)"]
        score = score_of(result["real_winner"], 0)
        if self.two_player:
            if len(self.players) < 2:
                return []
            self.book.record(self.players[0], self.players[1], score)
            fitted = self.book.ratings(self.players[0])
            self.rated = fitted[self.players[0]]
            return [f"{name}: {fitted[name].text()}" for name in self.players[:2]]
        if self.opponent.rating is None:
            return ["(unrated: this pilot is not on the ladder)"]
        self.book.record(self.players[0], self.opponent.spec, score, self.opponent.rating)
        self.rated = self.book.rating(self.players[0])
        lines = [f"{self.players[0]}: {self.rated.text()}"]
        if self.follow is not None:
            level = self.follow.update(self.rated)
            if level.spec != self.opponent.spec:
                self._next_level = level
            chance = expected_score(self.rated.rating, level.rating)
            lines.append(f"next: level {level.number:g}, rated {level.rating:.0f}: "
                         f"{100 * chance:.0f}% for you, the nearest to even")
        return lines

    def standing(self) -> str:
        """The player's rating and what plays them, in one line (the HUD, the page)."""
        if self.rated is None:
            return ""
        level = self.follow.level if self.follow is not None else None
        level = f"auto: level {level.number:g}, rated {level.rating:.0f}" if level else ""
        return "   ".join(part for part in (level, f"{self.players[0]}: {self.rated.text()}")
                          if part)

    # --- input -------------------------------------------------------------------------------
    def process(self, events) -> None:
        """pygame events: the window's keys and its close button."""
        pg = self.renderer.pg
        for event in events:
            if event.type == pg.QUIT:
                self.quit = True
            elif event.type == pg.KEYDOWN:
                self.key_down(pg.key.name(event.key))
            elif event.type == pg.KEYUP:
                self.key_up(pg.key.name(event.key))

    def key_down(self, name: str) -> None:
        """A key pressed, by its pygame name ("left", "space", "right ctrl", ...)."""
        if name == "escape":
            self.quit = True
        elif name == "p":
            self.paused = not self.paused
        elif name in ("f1", "h") and not (self.two_player and name == "h"):
            self.show_help = not self.show_help
        elif name == "r":
            if self.over:
                self.score = [0, 0]
                self.over = False
                self.round = 0
                self._start_round()
            else:
                self.restart_round()
        else:
            self.held.add(name)

    def key_up(self, name: str) -> None:
        self.held.discard(name)

    # --- one frame ---------------------------------------------------------------------------
    def tick(self) -> None:
        """Advance one frame (or the between-rounds pause); nothing moves while paused."""
        if self.paused or self.show_help or self.quit:
            return
        if self.round_over:
            if self.over:
                return
            self.banner_frames -= 1
            if self.banner_frames <= 0:
                self._start_round()
            return
        obs, mask = self.batch.obs[0], self.batch.mask_columns
        if self.two_player:
            a0 = keys_to_action(self.held, self.frame, obs[0, mask], CONTROLS_TWO[0],
                                self.config.controls)
            a1 = keys_to_action(self.held, self.frame, obs[1, mask], CONTROLS_TWO[1],
                                self.config.controls)
        else:
            a0 = (self._pilot_action(0, self.first) if self.first is not None else
                  keys_to_action(self.held, self.frame, obs[0, mask], CONTROLS_ALONE,
                                 self.config.controls))
            a1 = self._pilot_action(1, self.opponent)
        self._actions[0] = (a0, a1)
        self.batch.step(self._actions)
        self.batch.observe()
        self.log.append((a0, a1))
        self.frame += 1
        if self.batch.game_i[0, engine.OVER]:
            self._finish_round()

    def _pilot_action(self, side: int, who: Opponent) -> int:
        """The pilot decides every `frame_skip` frames, as in training, and holds its action in
        between."""
        if self.frame % self.decision_frames == 0:
            self._ai_action[side] = int(who.pilot.act(self.batch.obs[0, side][None])[0])
        return self._ai_action[side]

    def advance(self) -> None:
        """One game frame: tick, and when recording, add the frame as drawn (pauses and the
        help screen are not recorded)."""
        frozen = self.paused or self.show_help
        self.tick()
        if self.recorder is not None and not frozen:
            self.draw()
            self.recorder.add(self.frame_rgb())

    def hud(self) -> list[str]:
        if self.first is not None:  # two pilots, watched: rounds go on
            return [f"score {self.names[0]} {self.score[0]} : {self.score[1]} {self.names[1]}   "
                    f"round {self.round}"]
        lines = [f"score {self.names[0]} {self.score[0]} : {self.score[1]} {self.names[1]}   "
                 f"(first to {self.score_limit})   round {self.round}"]
        if self.opponent is not None:
            lines.append(f"opponent {self.opponent.name}")
        if self.standing():
            lines.append(self.standing())
        return lines

    def overlay(self) -> list[str]:
        if self.show_help:
            return (HELP_TWO if self.two_player else HELP_ALONE) + HELP_COMMON
        if self.paused:
            return ["paused - P to go on"]
        return list(self.banner)

    def draw(self):
        """Draw the current frame; returns the RGB array off-screen (mode rgb_array)."""
        return self.renderer.draw(self.batch, 0, tuple(self.hud()), wait=False,
                                  overlay=tuple(self.overlay()))

    def frame_rgb(self) -> np.ndarray:
        return self.renderer.frame_rgb()

    # --- real time ---------------------------------------------------------------------------
    def run(self, max_seconds: float | None = None) -> list[dict]:
        """Play until Esc, the window closes, or max_seconds pass. Returns the rounds' results."""
        import signal
        import threading

        pg = self.renderer.pg
        dt = 1.0 / self.config.fps
        acc = 0.0
        last = start = time.perf_counter()
        previous = None
        if threading.current_thread() is threading.main_thread():
            # Ctrl-C in the terminal ends the match like Esc, at the end of the frame: a flag
            # the loop reads, where a KeyboardInterrupt could land inside a library call.
            previous = signal.signal(signal.SIGINT, lambda signum, frame: self._stop())
        try:
            while not self.quit:
                self.process(pg.event.get())
                now = time.perf_counter()
                acc += min(now - last, 0.25)  # after a stall, skip rather than race to catch up
                last = now
                while acc >= dt and not self.quit:
                    self.advance()
                    acc -= dt
                self.draw()
                if max_seconds is not None and now - start > max_seconds:
                    break
                time.sleep(max(0.0, dt - (time.perf_counter() - now)) * 0.5)
        except KeyboardInterrupt:
            self.quit = True  # Ctrl-C in the terminal ends the match like Esc: results are kept
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            self.close()
        return self.results

    def _stop(self) -> None:
        self.quit = True

    def close(self) -> None:
        if self.renderer is not None:
            self.renderer.close()
        for who in (self.first, self.opponent):
            if who is not None:
                who.pilot.close()


def choose_opponent(spec, difficulty: str, two_player: bool, config: GameConfig, seed: int,
                    book: PlayerBook | None, player: str) -> tuple[Opponent | None, Follow | None]:
    """Who flies ship 1: nobody's pilot for two people, the pilot `spec` names, a level of the
    ladder, or with difficulty "auto" (the default) the level `Follow` picks for `player`'s
    rating in `book`; with `auto`, the Follow that moves it after each round."""
    if two_player:
        return None, None
    if spec:
        return spec_opponent(spec, config, seed), None
    if (difficulty or "auto") != "auto":
        return difficulty_opponent(difficulty, config, seed), None
    rated = book.rating(player) if book is not None else None
    follow = Follow(rated or Rated(0.0, float("inf"), 0))
    return level_opponent(follow.level, config, seed, follow.reason), follow


def play(config: GameConfig | None = None, opponent: str | None = None,
         difficulty: str | None = None, two_player: bool = False, score_limit: int = 5,
         seed: int = 0, scale: float = 1.0, phosphor: bool = False, record=None,
         players: tuple[str, ...] = ("you",), book_path=PLAYER_BOOK) -> list[dict]:
    """The human-play mode: a match in a window against `opponent` (a pilot spec), the level
    `difficulty` names (default auto), or a second person; the rated rounds go into the player
    book at `book_path` under `players`' names. Prints each round, the player's rating and
    where each replay went. Returns the rounds' results."""
    from ..game.recording import open_recorder

    config = config if config is not None else GameConfig()
    book = PlayerBook(book_path)
    chosen, follow = choose_opponent(opponent, difficulty, two_player, config, seed,
                                     book, players[0])
    recorder = open_recorder(record, per_decision=False, config=config)
    game = HumanGame(config, chosen, two_player=two_player, score_limit=score_limit, seed=seed,
                     scale=scale, phosphor=phosphor, recorder=recorder, players=players,
                     book=book, follow=follow)
    if chosen is not None:
        print(f"opponent: {chosen.name} - {chosen.reason}")
    try:
        print("keys: F1 or H for help, P pause, R restart round, Esc quit")
        results = game.run()
    except KeyboardInterrupt:  # Ctrl-C before the game's loop began ends the match as in it
        game.close()
        results = game.results
    if recorder is not None and recorder.close() is not None:
        print(f"recorded {recorder.frames} frames to {recorder.path}")
    for r in results:
        winner = r["winner"] if r["winner"] is not None else "none"
        print(f"round {r['round']}: winner {winner}, deaths {r['causes'][0]} / {r['causes'][1]}, "
              f"score {r['score'][0]}:{r['score'][1]}")
    for name in players[:1 if chosen is not None else 2]:
        print(f"{name}: {book.rating(name).text()} (kept in {book.path})")
    if game.replays:
        print(f"replays: {len(game.replays)} saved under {game.replays[0].parent}/ (play one "
              f"with --replay {game.replays[-1]})")
    return results
