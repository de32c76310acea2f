"""Replay files: a game is its config, seed and actions; replayed bit for bit (the engine state's
hash checked), refused in one line when the file is not a replay, and drawn as a GIF."""

import io
import json

import pytest

from spacewar_ai.config import GameConfig
from spacewar_ai.game import engine
from spacewar_ai.game.replays import (
    ReplayError,
    game_gif,
    load_replay,
    parse_replay,
    replay_game,
    save_match_replays,
    state_hash,
)
from spacewar_ai.rating.match import play_match


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Two games of a match, kept and saved as replay files."""
    folder = tmp_path_factory.mktemp("replays")
    match = play_match("heuristic:hard", "heuristic:medium", 4, seed=7, keep_actions=2)
    return match, save_match_replays(match, GameConfig(), "hard-v-medium", folder)


def test_a_saved_game_replays_to_the_same_engine_state(saved):
    match, paths = saved
    assert len(paths) == 2 and all(p.suffix == ".json" for p in paths)
    for path in paths:
        replay = load_replay(path)
        game = next(g for g in match.games if g.seed == replay["seed"] and g.actions is not None
                    and g.final_state == replay["final_state"])
        steps = []
        batch = replay_game(replay, lambda b, steps=steps: steps.append(int(b.game_i[0, 0])))
        assert state_hash(batch) == game.final_state
        assert len(steps) == len(game.actions) + 1  # the reset, then every decision


def test_a_replay_whose_end_differs_is_caught(saved):
    replay = load_replay(saved[1][0])
    a0, a1 = replay["actions"]
    changed = dict(replay, actions=(a0[:-1] + ("4" if a0[-1] != "4" else "0"), a1))
    with pytest.raises(ReplayError):
        replay_game(changed)


@pytest.mark.parametrize("edit, says", [
    (lambda d: d.update(actions=["01", "0"]), "differ in length"),
    (lambda d: d.update(actions=["09", "00"]), "outside 0..5"),
    (lambda d: d.update(actions=["0g", "00"]), "hexadecimal digit"),
    (lambda d: d.update(version=99), "version 99"),
    (lambda d: d.update(seed=2**70), "seed"),
    (lambda d: d.update(players=["only one"]), "players"),
])
def test_what_is_not_a_replay_is_one_line_naming_the_file(saved, edit, says):
    data = json.loads(saved[1][0].read_text())
    edit(data)
    with pytest.raises(ReplayError) as exc:
        parse_replay(json.dumps(data), "mine.json")
    message = str(exc.value)
    assert message.startswith("replay mine.json: not a valid replay file") and says in message
    assert "\n" not in message


def test_a_game_of_the_switches_replays_with_actions_past_nine(tmp_path):
    """Under the 1962 switches an action is 0-15 (thrust and fire together is 12): one
    hexadecimal digit a step, so the file keeps one character per decision and replays."""
    game = GameConfig.from_dict({"rules": "rllib_sw", "controls": "switches"})
    match = play_match("pretrained:rllib_sw", "heuristic:hard", 2, seed=3, keep_actions=2,
                       config=game)
    paths = save_match_replays(match, game, "switches", tmp_path)
    steps = 0
    for path in paths:
        replay = load_replay(path)
        played = next(g for g in match.games if g.final_state == replay["final_state"])
        assert len(replay["actions"][0]) == len(played.actions)
        steps += sum(int(c, 16) > 9 for c in replay["actions"][0] + replay["actions"][1])
        assert state_hash(replay_game(replay)) == played.final_state
    assert steps > 0  # some decision pressed more than the digits 0-9 say
    # The hash holds how each ship jumps (a field added after the first replays were saved,
    # which hashes as before while unset): a game whose jumps would go otherwise differs.
    batch = replay_game(load_replay(paths[0]))
    before = state_hash(batch)
    kind = batch.ship_i[0, 0, engine.JUMP_KIND]
    batch.ship_i[0, 0, engine.JUMP_KIND] = engine.JUMP_RANDOM if kind else engine.JUMP_MIRROR
    assert state_hash(batch) != before


def test_a_missing_or_special_file_is_refused(tmp_path):
    with pytest.raises(ReplayError, match="no such file"):
        load_replay(tmp_path / "gone.json")
    with pytest.raises(ReplayError, match="not a regular file"):
        load_replay("/dev/zero")


def test_a_replayed_game_becomes_a_gif_of_its_last_decisions(saved):
    from PIL import Image

    game = next(g for g in saved[0].games if g.actions is not None)
    image = Image.open(io.BytesIO(game_gif(GameConfig(), game.seed, game.actions, size=64,
                                           last=10)))
    # The position before the last ten decisions, then one frame after each of them.
    assert image.size == (64, 64) and image.n_frames == min(10, len(game.actions)) + 1


def test_a_retention_removes_the_oldest_replays_first(tmp_path):
    import os

    from spacewar_ai.game.replays import prune_replays

    for k in range(10):
        path = tmp_path / f"r{k}.json"
        path.write_bytes(b"x" * 100)
        os.utime(path, ns=(k * 10**9, k * 10**9))
    (tmp_path / "notes.txt").write_text("not a replay: never removed")
    assert prune_replays(tmp_path, keep=6, max_bytes=10**6) == 4
    assert sorted(p.name for p in tmp_path.glob("*.json")) == [f"r{k}.json" for k in range(4, 10)]
    assert prune_replays(tmp_path, keep=6, max_bytes=250) == 4  # the size binds too
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["r8.json", "r9.json"]
    assert (tmp_path / "notes.txt").exists() and prune_replays(tmp_path / "none", 1, 1) == 0
