"""Human play on a real pygame surface (SDL dummy driver): keys drive ships, pause freezes,
difficulties pick their model and delay, frames show the game, replays and videos are exact."""

import json

import numpy as np
import pygame
import pytest

from spacewar_ai.config import GameConfig
from spacewar_ai.game import engine
from spacewar_ai.game.recording import VideoRecorder
from spacewar_ai.game.rendering import SHIP_COLORS, STAR
from spacewar_ai.game.replays import load_replay, replay_game, state_hash
from spacewar_ai.human.play import (
    CONTROLS_ALONE,
    HumanGame,
    Opponent,
    difficulty_opponent,
    keys_to_action,
)
from spacewar_ai.rating.difficulty import PlayerBook, ladder
from tests.commands import cli
from tests.helpers import read_video_info


def _game(tmp_path, opponent="idle", **kwargs) -> HumanGame:
    from spacewar_ai.human.play import spec_opponent

    cfg = kwargs.pop("config", GameConfig())
    opp = None if kwargs.get("two_player") else spec_opponent(opponent, cfg)
    return HumanGame(cfg, opp, replay_dir=tmp_path / "replays", **kwargs)


def _key(game, key, down=True):
    pygame.event.post(pygame.event.Event(pygame.KEYDOWN if down else pygame.KEYUP, key=key))
    game.process(pygame.event.get())


def _velocity(game, ship=0):
    return game.batch.ship_f[0, ship, [engine.SVX, engine.SVY]].copy()


def test_thrust_key_changes_ship_0_velocity(tmp_path):
    pushed, drifting = _game(tmp_path, seed=3), _game(tmp_path, seed=3)
    try:
        _key(pushed, pygame.K_UP)
        for _ in range(20):
            pushed.tick()
            drifting.tick()
        dv = np.linalg.norm(_velocity(pushed) - _velocity(drifting))
        assert dv > 0.05, dv
        assert pushed.batch.ship_f[0, 0, engine.SFUEL] < drifting.batch.ship_f[0, 0, engine.SFUEL]
        # Ship 1 (the idle pilot) is unaffected by ship 0's keys.
        assert np.allclose(_velocity(pushed, 1), _velocity(drifting, 1), atol=1e-3)
    finally:
        pushed.close()
        drifting.close()


def test_fire_key_spawns_a_torpedo_and_release_stops_firing(tmp_path):
    game = _game(tmp_path)
    try:
        assert game.batch.ship_i[0, 0, engine.SHOTS] == 0
        _key(game, pygame.K_SPACE)
        game.tick()
        assert game.batch.ship_i[0, 0, engine.SHOTS] == 1
        assert (game.batch.torp_t[0, 0] > 0).sum() == 1
        _key(game, pygame.K_SPACE, down=False)
        for _ in range(60):
            game.tick()
        assert game.batch.ship_i[0, 0, engine.SHOTS] == 1
    finally:
        game.close()


def test_pause_freezes_the_state_and_resumes(tmp_path):
    game = _game(tmp_path, opponent="heuristic:hard")
    try:
        for _ in range(5):
            game.tick()
        _key(game, pygame.K_p)
        before = game.batch.state_dict()
        for _ in range(30):
            game.tick()
        after = game.batch.state_dict()
        assert all(np.array_equal(before[k], after[k]) for k in before)
        _key(game, pygame.K_p)
        game.tick()
        assert game.batch.game_i[0, engine.FRAME] == before["game_i"][0, engine.FRAME] + 1
    finally:
        game.close()


def test_two_player_keys_drive_ship_1(tmp_path):
    game = _game(tmp_path, two_player=True)
    try:
        _key(game, pygame.K_f)  # unbound: nothing happens
        _key(game, pygame.K_LSHIFT)
        game.tick()
        assert game.batch.ship_i[0, 1, engine.SHOTS] == 1
        assert game.batch.ship_i[0, 0, engine.SHOTS] == 0
    finally:
        game.close()


def test_held_rotation_and_thrust_alternate_and_fire_goes_first():
    mask = np.ones(6)
    held = {"left", "up"}
    assert [keys_to_action(held, f, mask, CONTROLS_ALONE, "six") for f in range(4)] == \
        [1, 3, 1, 3]
    assert keys_to_action({"space", "up"}, 0, mask, CONTROLS_ALONE, "six") == 5
    reloading = mask.copy()
    reloading[[4, 5]] = 0
    assert keys_to_action({"space", "d"}, 0, reloading, CONTROLS_ALONE, "six") == 2
    # Fire held while reloading: turning and thrust still take turns.
    assert [keys_to_action({"space", "a", "w"}, f, reloading, CONTROLS_ALONE, "six")
            for f in range(2)] == [1, 3]
    # With hyperspace enabled (a 7th mask entry), Down or S jumps; without it, nothing happens.
    assert keys_to_action({"down"}, 0, np.ones(7), CONTROLS_ALONE, "six") == 6
    assert keys_to_action({"s"}, 0, np.ones(6), CONTROLS_ALONE, "six") == 0


def test_with_the_switches_the_keys_held_are_the_switches_pressed(tmp_path):
    """The 1962 box: turning while burning and firing at once, against a six-action pilot that
    flies through the switches; both rotate keys, or Down, jump where hyperspace is on."""
    config = GameConfig.from_dict({"rules": "rllib_sw", "controls": "switches",
                                   "start_positions": "classic"})
    game = _game(tmp_path, "heuristic:hard", config=config, seed=2)
    try:
        heading = game.batch.ship_f[0, 0, engine.SANG]
        for key in (pygame.K_LEFT, pygame.K_UP, pygame.K_SPACE):
            _key(game, key)
        for _ in range(config.frame_skip):
            game.tick()
        assert game.batch.ship_i[0, 0, engine.SHOTS] == 1
        assert game.batch.ship_f[0, 0, engine.SFUEL] < config.max_fuel
        assert game.batch.ship_f[0, 0, engine.SANG] != heading
    finally:
        game.close()
    mask = np.ones(16)
    # An action is the sum of the switches pressed: left 1, right 2, thrust 4, fire 8; both
    # rotate switches are the jump, which Down presses with whatever else is held.
    assert [keys_to_action(held, 0, mask, CONTROLS_ALONE, "switches") for held in (
        {"left", "right"}, {"down", "up"}, {"right", "space"}, {"down"})] == [3, 7, 10, 3]
    mask[3] = 0  # no jump now: Down presses nothing
    assert keys_to_action({"down", "up"}, 0, mask, CONTROLS_ALONE, "switches") == 4


def test_each_difficulty_is_a_level_of_the_ladder_with_its_rating():
    cfg = GameConfig()
    levels = ladder()
    for name, number in (("easy", 1), ("medium", 4), ("hard", 6.5),
                         ("insane", levels[-1].number), ("2", 2), ("3.5", 3.5)):
        opp = difficulty_opponent(name, cfg)
        level = next(level for level in levels if level.number == number)
        assert opp.spec == level.spec and opp.rating == level.rating
        assert f"level {number:g} (" in opp.reason
        # Said where the player reads the opponent: "medium" is a rung, not heuristic:medium.
        assert ("--opponent heuristic:medium" in opp.reason) == (name == "medium")
    with pytest.raises(ValueError, match="use a level from 1 to 8 .or a half level such as "
                                         "1.5., auto, or one of easy"):
        difficulty_opponent("grandmaster", cfg)


def _play_rounds(game, rounds: int, limit: int = 40_000) -> None:
    """Tick a game with nobody at the keys until `rounds` rounds are over."""
    for _ in range(limit):
        if len(game.results) >= rounds:
            return
        game.tick()
    raise AssertionError(f"only {len(game.results)} rounds in {limit} frames")


def test_auto_rates_each_round_and_moves_the_level_with_the_player(tmp_path):
    """Nobody at the keys loses every round: each is recorded against the level's rating, the
    rating falls, and auto brings a weaker level in for the next round; the HUD and the banner
    say so."""
    from spacewar_ai.human.play import choose_opponent

    cfg = GameConfig()
    book = PlayerBook(tmp_path / "players.db")
    opponent, follow = choose_opponent("", "auto", False, cfg, 5, book, "ada")
    assert follow.level.number == 3 and "where a new player starts" in follow.reason
    game = HumanGame(cfg, opponent, seed=5, score_limit=9, mode=None,
                     replay_dir=tmp_path / "replays", players=("ada",), book=book,
                     follow=follow)
    try:
        played, banners = [], []
        for rounds in (1, 2, 3):
            played.append(game.opponent.spec)
            _play_rounds(game, rounds)
            banners.append(game.banner)
            while game.round == rounds:  # the banner's pause, then the next round's opponent
                game.tick()
        assert [r["real_winner"] for r in game.results][:2] == [1, 1]
        assert 0 not in [r["real_winner"] for r in game.results]
        rated = book.rating("ada")
        start = next(level for level in ladder() if level.number == 3)
        assert rated.games == 3 and rated.rating < start.rating
        assert "ada: rating" in banners[-1][2] and banners[-1][3].startswith("next: level")
        number = {level.spec: level.number for level in ladder()}
        numbers = [number[spec] for spec in played]
        assert numbers[0] == 3 and numbers == sorted(numbers, reverse=True) and numbers[-1] < 3
        assert "ada: rating" in game.standing() and "level" in game.standing()
    finally:
        game.close()
    # The next session starts where the book says, not at the start level.
    _, again = choose_opponent("", "auto", False, cfg, 5, book, "ada")
    assert again.level.number < 3 and "your rating" in again.reason


def test_two_named_people_are_both_rated_and_unrated_pilots_are_not(tmp_path):
    cfg = GameConfig()
    book = PlayerBook(tmp_path / "players.db")
    game = HumanGame(cfg, None, two_player=True, seed=1, mode=None, score_limit=9,
                     replay_dir=tmp_path / "replays", players=("ada", "bob"), book=book)
    try:
        _play_rounds(game, 1)
    finally:
        game.close()
    ratings = book.ratings("bob")
    assert {name: r.games for name, r in ratings.items()} == {"ada": 1, "bob": 1}
    assert any(line.startswith("ada: rating") for line in game.banner)
    assert any(line.startswith("bob: rating") for line in game.banner)
    assert "ada: rating" in game.standing() and "(1 game)" in game.standing()
    # A pilot off the ladder plays, but its rounds are not recorded.
    game = _game(tmp_path, opponent="random", players=("cy",), book=book, score_limit=1)
    try:
        assert game.opponent.rating is None
        _play_rounds(game, 1)
        assert "not on the ladder" in " ".join(game.banner)
    finally:
        game.close()
    assert book.rating("cy").games == 0
    # A rung of the ladder in another game than the default: its rating does not hold there.
    game = _game(tmp_path, opponent="heuristic:hard", players=("dee",), book=book, score_limit=1,
                 config=GameConfig(hyperspace=True))
    try:
        _play_rounds(game, 1)
        assert "(unrated: ratings are of the default game)" in game.banner
    finally:
        game.close()
    assert book.rating("dee").games == 0


def test_the_pilot_decides_every_frame_skip_frames_on_the_frame_it_sees(tmp_path):
    seen = []

    class Recorder:
        name = "recorder"

        def act(self, obs):
            seen.append(obs[0].copy())
            return np.zeros(1, dtype=np.int64)

        def reset(self, mask=None, seeds=None):
            return None

    cfg = GameConfig()
    game = HumanGame(cfg, Opponent(Recorder(), "recorder", "test"), replay_dir=tmp_path / "r")
    try:
        views = []
        for _ in range(13):
            views.append(game.batch.obs[0, 1].copy())
            game.tick()
        # Decisions at frames 0, 4, 8, 12 (frame_skip 4), each on that frame's view.
        assert len(seen) == 4
        for k, frame in enumerate((0, 4, 8, 12)):
            assert np.array_equal(seen[k], views[frame])
    finally:
        game.close()


def test_a_frame_shows_the_star_both_ships_and_the_hud(tmp_path):
    game = _game(tmp_path, opponent="idle")
    try:
        game.draw()
        frame = game.frame_rgb()
        assert frame.shape == (640, 640, 3)
        centre = frame[300:340, 300:340].reshape(-1, 3)
        assert (centre == STAR).all(axis=1).sum() > 20
        for color in SHIP_COLORS:
            assert (frame.reshape(-1, 3) == color).all(axis=1).sum() > 10
        # HUD text in the top-left corner, in ship 0's colour (fuel and torpedoes).
        corner = frame[:20, :200].reshape(-1, 3)
        assert (corner == SHIP_COLORS[0]).all(axis=1).sum() > 20
        # The pause overlay changes the picture.
        _key(game, pygame.K_p)
        game.draw()
        assert not np.array_equal(game.frame_rgb(), frame)
    finally:
        game.close()


def test_a_saved_replay_reproduces_the_final_state_exactly(tmp_path):
    cfg = GameConfig(max_episode_steps=300)
    game = _game(tmp_path, opponent="heuristic:hard", config=cfg, seed=11)
    try:
        _key(game, pygame.K_LEFT)
        _key(game, pygame.K_SPACE)
        while not game.results:
            game.tick()
        final = game.batch.state_dict()
    finally:
        game.close()
    assert len(game.replays) == 1
    replay = load_replay(game.replays[0])
    assert replay["players"] == ["you", "heuristic:hard"]
    batch = replay_game(replay)
    assert all(np.array_equal(final[k][0], batch.state_dict()[k][0]) for k in final)
    assert state_hash(batch) == replay["final_state"]
    # A tampered replay is caught.
    tampered = dict(replay, actions=["0" * len(replay["actions"][0]), replay["actions"][1]])
    with pytest.raises(ValueError, match="different state"):
        replay_game(tampered)


@pytest.mark.parametrize("suffix", [".gif", ".mp4"])
def test_recording_human_play_writes_every_frame_at_the_window_size(tmp_path, suffix):
    recorder = VideoRecorder(tmp_path / f"play{suffix}", 50)
    game = _game(tmp_path, scale=0.5, recorder=recorder)
    try:
        for _ in range(30):
            game.advance()
        _key(game, pygame.K_p)
        for _ in range(10):
            game.advance()  # paused: not recorded
    finally:
        game.close()
    path = recorder.close()
    assert read_video_info(path) == (30, (320, 320))


def _cli(*args, cwd, env_extra=None):
    import os

    env = dict(os.environ, SDL_VIDEODRIVER="dummy", **(env_extra or {}))
    return cli(*args, cwd=cwd, env=env, timeout=300)


@pytest.mark.slow
def test_cli_replay_to_video_and_clear_errors(tmp_path):
    out = _cli("--evaluate", "--checkpoint", "pretrained", "--opponent", "heuristic:easy",
               "--eval-episodes", "2", "--save-replays", "1", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    replays = sorted((tmp_path / "runs" / "replays").glob("*.json"))
    assert len(replays) == 1
    steps = len(json.loads(replays[0].read_text())["actions"][0])
    out = _cli("--replay", str(replays[0]), "--record", "r.mp4", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "identical to the recording" in out.stdout
    assert read_video_info(tmp_path / "r.mp4") == (steps + 1, (640, 640))
    # Missing ffmpeg, a missing model, a broken replay: one line each, exit code 2.
    out = _cli("--demo", "--record", "x.mp4", cwd=tmp_path,
               env_extra={"IMAGEIO_FFMPEG_EXE": str(tmp_path / "no-ffmpeg")})
    assert out.returncode == 2 and "needs ffmpeg" in out.stderr and "Traceback" not in out.stderr
    out = _cli("--human-play", "--opponent", "ppo:missing.pt", cwd=tmp_path)
    assert out.returncode == 2 and "missing.pt" in out.stderr and "Traceback" not in out.stderr
    (tmp_path / "bad.json").write_text("{}")
    out = _cli("--replay", "bad.json", cwd=tmp_path)
    assert out.returncode == 2 and "not a valid replay" in out.stderr


def test_closing_the_window_mid_round_ends_the_match_cleanly(tmp_path):
    game = _game(tmp_path, opponent="heuristic:hard")
    for _ in range(3):
        game.tick()
    pygame.event.post(pygame.event.Event(pygame.QUIT))
    results = game.run(max_seconds=5)
    assert results == [] and game.quit and game.renderer.closed


def test_ctrl_c_as_the_window_opens_ends_the_match_like_ctrl_c_in_it(tmp_path, monkeypatch,
                                                                     capsys):
    """A Ctrl-C that lands before the game's loop has begun (the keys' line is printed, the
    window not yet polled) ends the match as one in the loop does: no "interrupted" message
    about checkpoints, the rounds so far returned."""
    from spacewar_ai.human import play as human

    def interrupted_early(self, max_seconds=None):
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(human.HumanGame, "run", interrupted_early)
    assert human.play(opponent="idle") == []
    assert "keys: F1 or H for help" in capsys.readouterr().out
