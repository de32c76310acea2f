"""One live game's worker process (`python -m spacewar_ai.web.worker PARENT_PID`), spoken to as
the server speaks to it: JSON messages in frames (util.processes), in and out over real pipes."""

import json
import os
import subprocess
import sys

import pytest

from spacewar_ai.util.processes import READY, read_frame, write_frame

pytestmark = pytest.mark.slow  # each worker imports torch and the pilots before it answers


def _worker(root):
    return subprocess.Popen([sys.executable, "-m", "spacewar_ai.web.worker", str(os.getpid())],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=root)


def _send(proc, message: dict) -> None:
    write_frame(proc.stdin, json.dumps(message).encode())


def _receive(proc) -> dict:
    return json.loads(read_frame(proc.stdout))


def _start(proc, message, root, replays_kept=100, game=None):
    from spacewar_ai.config import GameConfig

    assert proc.stdout.read(1) == READY  # once torch and the pilots are imported
    _send(proc, {"message": message, "root": str(root), "checkpoint_dir": "checkpoints",
                 "ratings_file": None, "seed": 3, "game": (game or GameConfig()).to_dict(),
                 "replays_kept": replays_kept, "replays_bytes": 2**20})
    return _receive(proc)


def test_a_worker_plays_a_game_takes_keys_and_ends_with_its_stdin(tmp_path):
    proc = _worker(tmp_path)
    try:
        start = _start(proc, {"mode": "play", "opponent": "heuristic:easy", "speed": 2}, tmp_path)
        assert start["type"] == "start" and start["names"][1] == "heuristic:easy"
        assert start["config"]["fps"] == 50 and start["help"]
        frames = [_receive(proc) for _ in range(5)]
        assert [f["type"] for f in frames] == ["frame"] * 5
        numbers = [f["state"]["f"] for f in frames]
        assert numbers == sorted(numbers) and numbers[1] - numbers[0] == 2  # speed 2: two a frame
        _send(proc, {"type": "key", "key": "up", "down": True})
        held = []
        for _ in range(50):  # the key lands within a few frames
            held = _receive(proc)["held"]
            if held:
                break
        assert held == ["up"]
        proc.stdin.close()  # the server closes the game
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()


def test_a_worker_plays_the_servers_game(tmp_path):
    """`--serve --config FILE` plays its [game] section's rules: here the peer's preset, whose
    smaller star the page is told to draw, and whose saved rounds record the game."""
    from spacewar_ai.config import GameConfig

    game = GameConfig.from_dict({"rules": "rllib_sw", "controls": "switches"})
    proc = _worker(tmp_path)
    try:
        start = _start(proc, {"mode": "watch", "a": "pretrained:rllib_sw", "b": "heuristic:hard",
                              "speed": 8}, tmp_path, game=game)
        assert start["type"] == "start", start
        assert start["config"]["star_radius"] == game.star_radius != GameConfig().star_radius
        while (message := _receive(proc))["type"] != "replay":
            continue
        saved = GameConfig.from_dict(json.loads((tmp_path / message["path"]).read_text())
                                     ["config"])
        assert saved.changed(frame_skip=game.frame_skip) == game  # live games step by frames
    finally:
        proc.kill()


def test_a_worker_keeps_its_saved_rounds_within_the_retention(tmp_path):
    """Every round of a live game is saved; past `replays_kept` the oldest are removed, by the
    game's own process, so the folder stays at the bound however long games run."""
    proc = _worker(tmp_path)
    try:
        start = _start(proc, {"mode": "watch", "a": "heuristic:hard", "b": "idle", "speed": 8},
                       tmp_path, replays_kept=2)
        assert start["type"] == "start", start
        saved = []
        while len(saved) < 4:
            message = _receive(proc)
            if message["type"] == "replay":
                saved.append(message["path"])
        _receive(proc)  # the next frame: the fourth round's pruning came before it
        kept = sorted(p.name for p in (tmp_path / "runs" / "live" / "replays").iterdir())
        assert kept == sorted(path.rsplit("/", 1)[1] for path in saved[-2:])
    finally:
        proc.kill()


def test_a_start_the_worker_cannot_make_is_one_error_line(tmp_path):
    for message, says in (({"mode": "play", "opponent": "grandmaster"}, "grandmaster"),
                          ({"mode": "dance"}, "unknown mode 'dance'"),
                          ({"mode": "play", "difficulty": "hard", "speed": 3}, "speed 3")):
        proc = _worker(tmp_path)
        try:
            reply = _start(proc, message, tmp_path)
            assert reply["type"] == "error" and says in reply["message"], reply
            assert "\n" not in reply["message"]
            assert proc.wait(timeout=60) == 0
        finally:
            proc.kill()
