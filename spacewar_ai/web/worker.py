"""One live game of the browser app, in a process of its own (`python -m spacewar_ai.web.worker
PARENT_PID`), so a slow or hung pilot costs only its own game.

JSON messages, each in a frame (util.processes). In: the start request {"message", "root",
"checkpoint_dir", "ratings_file", "seed", "game" (the GameConfig's fields), "replays_kept",
"replays_bytes" (the retention of live games' saved rounds)},
then the page's messages ({"type": "key", ...}, {"type": "speed", ...}). Out: {"type": "start"}
or {"type": "error"}, then {"type": "frame", ...} at the game's pace and {"type": "replay", ...}
as rounds are saved. It ends when stdin closes or the game quits; stdout carries the protocol
only (after READY, once torch and the pilots are imported). games.Workers keeps one spare
started, so a game does not wait for torch to import."""

from __future__ import annotations

import json
import sys
import time

from ..util.errors import UserError
from ..util.processes import FrameReader, protocol_streams, say_ready, write_frame


def serve_one(reader: FrameReader, out) -> None:
    from ..config import GameConfig
    from ..game.replays import prune_replays
    from .files import Files
    from .live import SPEEDS, client_config, frame_state, public_message, start_game

    def send(message: dict) -> None:
        write_frame(out, json.dumps(message, separators=(",", ":")).encode())

    first = reader.frames(None)
    if not first:
        return
    request = json.loads(first[0])
    files = Files(request["root"], request["checkpoint_dir"], request["ratings_file"])
    message = request["message"]
    try:
        speed = int(message.get("speed", 1))
        if speed not in SPEEDS:
            raise UserError(f"speed {speed}: use one of {', '.join(map(str, SPEEDS))}")
        game, help_lines = start_game(message, files, int(request["seed"]),
                                      GameConfig.from_dict(request["game"]))
    except Exception as exc:  # every problem with what the page asked for: one line back
        send({"type": "error", "message": public_message(exc)})
        return
    send({"type": "start", "names": game.names, "config": client_config(game.config),
          "help": help_lines})
    dt = 1.0 / game.config.fps
    due = time.monotonic()
    saved = 0
    try:
        while not game.quit:
            for _ in range(speed):
                game.tick()
            send({"type": "frame", "state": frame_state(game.batch), "score": game.score,
                  "round": game.round, "banner": game.overlay(), "hud": game.hud(),
                  "standing": game.standing(), "held": sorted(game.held)})
            while saved < len(game.replays):
                send({"type": "replay", "path": str(game.replays[saved].relative_to(files.root)),
                      "result": game.results[saved]})
                saved += 1
                # Here, in the game's own process, so the server's loop never lists the folder.
                prune_replays(files.live_replays, request["replays_kept"],
                              request["replays_bytes"])
            due += dt
            # The page's keys are read while waiting for the next frame's time.
            while True:
                wait = due - time.monotonic()
                for data in reader.frames(max(0.0, wait)):
                    msg = json.loads(data)
                    if msg.get("type") == "key":
                        (game.key_down if msg.get("down") else game.key_up)(str(msg["key"])[:20])
                    elif msg.get("type") == "speed" and msg.get("speed") in SPEEDS:
                        speed = msg["speed"]
                if reader.closed:
                    return  # the server closed the game
                if due - time.monotonic() <= 0:
                    break
            if time.monotonic() - due > 0.25:
                due = time.monotonic()  # after a stall, go on from now rather than race
    finally:
        game.close()


def main(argv: list[str]) -> int:
    from ..util.processes import die_with_parent
    from ..util.threads import use_torch_threads

    die_with_parent(int(argv[0]) if argv else None)
    _, out = protocol_streams()  # stdin is read by its descriptor (FrameReader)
    use_torch_threads(1)
    # Loaded before the start request arrives: a spare worker is ready to play at once.
    import torch  # noqa: F401

    import spacewar_ai.human.play  # noqa: F401
    import spacewar_ai.pilots.build  # noqa: F401
    import spacewar_ai.web.app  # noqa: F401

    try:
        say_ready(out)
        serve_one(FrameReader(sys.stdin.fileno()), out)
    except (BrokenPipeError, KeyboardInterrupt):
        return 0  # the server went away or stopped: the game ends with it
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
