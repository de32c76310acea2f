"""The browser: `spacewar-ai --serve` and replays as one HTML file.

The game stays in Python: the server runs the engine and streams each frame's state (ships,
torpedoes, score) over a WebSocket, and the page draws it on a canvas in the 1962 look
(web/spacewar.js, the only renderer the browser has). Pages, one HTML file routed by path:

| page | what |
|---|---|
| `/play` | you fly ship 0 with the window's keys against any pilot spec or difficulty (or two people at one keyboard), one engine frame per 1/50 s; each round saved as a replay |
| `/watch` | two pilot specs play live, at real pace or up to 8 times faster |
| `/replays` | the replays this project saved (and uploaded ones): play, pause, step, scrub; frames from replaying the game bit for bit here |
| `/tournaments` | the ratings file's standings with 95% intervals, every tournament's standings, crosstable and saved games |

`--replay FILE --html out.html` (`export_html`) writes the replay player, its renderer and the
replayed states into one file that plays in any browser with no server and no network.

Safety: the server binds 127.0.0.1 unless told otherwise; files are read only under the folder
it was started in (replays under runs/, checkpoints and strategy files that specs name), and
everything that arrives (specs, uploaded replays, messages) is checked as everywhere else, a
problem being one line on the page. Strategy files play in their sandbox.

Starlette, uvicorn and websockets are the `web` extra, imported only when a page is served.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from spacewar_ai.game import engine
from spacewar_ai.config import GameConfig
from spacewar_ai.web.worker import SPEEDS
from spacewar_ai.game.replays import ReplayError, load_replay, parse_replay, replay_game, state_hash

STATIC = Path(__file__).resolve().parent / "static"
# The endings a file named by a spec must have, by the spec's prefix ("" = a checkpoint path).
SPEC_SUFFIXES = {"strategy:": (".py",), "onnx:": (".onnx",), "sb3:": (".zip",),
                 "ppo:": (".pt",), "dqn:": (".pt",), "": (".pt",)}
PAGES = ("play", "watch", "replays", "tournaments", "arena")
INSTALL = 'the browser app needs the web extra: pip install -e ".[web]"'


# --- what the page draws -----------------------------------------------------------------------
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


def replay_frames(replay: dict, source: str) -> dict[str, Any]:
    """A replay as the page plays it: every step's state, replayed here bit for bit; the last
    carries the SHA-256 of the engine state it ended in (ReplayError if that is not the state
    recorded)."""
    frames: list[dict] = []
    batch = replay_game(replay, lambda b: frames.append(frame_state(b)))
    frames[-1]["hash"] = state_hash(batch)
    return {"source": source, "config": client_config(replay["game_config"]),
            "players": replay.get("players") or ["ship 0", "ship 1"],
            "result": replay.get("result"), "frames": frames}


def export_html(replay_path, out) -> Path:
    """`--replay FILE --html OUT`: one self-contained page that plays the replay."""
    from spacewar_ai.util.files import atomic_write_bytes

    out = Path(out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"--html {out}: give a file name ending in .html")
    data = replay_frames(load_replay(replay_path), Path(replay_path).name)
    page = (STATIC / "replay.html").read_text()
    script = (STATIC / "spacewar.js").read_text()
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    page = page.replace("/*SPACEWAR_JS*/", script).replace("/*REPLAY_JSON*/", payload)
    atomic_write_bytes(out, lambda f: f.write(page.encode()))
    return out


def _lm_files(path: Path) -> bool:
    """Whether `path` is what an lm: spec may name: a GGUF file, or a model's or adapter's
    folder."""
    if path.is_file():
        return path.suffix.lower() == ".gguf"
    return (path / "config.json").is_file() or (path / "adapter_config.json").is_file()


# --- files the app may read --------------------------------------------------------------------
class Files:
    """The folders the app reads, all under `root` (the folder the server started in)."""

    def __init__(self, root: Path, checkpoint_dir: str | Path = "checkpoints",
                 ratings_file: str | Path | None = None):
        self.root = Path(root).resolve()
        self.runs = self.root / "runs"
        self.checkpoints = (self.root / checkpoint_dir).resolve()
        self.ratings = (self.root / ratings_file).resolve() if ratings_file else \
            self.checkpoints / "ratings.json"

    def inside(self, path: str | Path, under: Path | None = None) -> Path:
        """The path resolved, if it lies under `under` (default the root); else ValueError."""
        base = under or self.root
        full = (self.root / path).resolve()
        if not full.is_relative_to(base):
            raise ValueError(f"{path}: outside {base.relative_to(self.root) if base != self.root else 'this project'}"
                             "; only the project's own files can be opened here")
        return full

    def check_spec(self, spec: str) -> str:
        """A pilot spec whose files lie in the project and are of the kind the spec says (a
        strategy file ends in .py, a checkpoint in .pt, ...), so that no other file (a key, a
        config) is ever opened as a pilot and quoted back in an error."""
        from spacewar_ai.pilots.specs import map_spec_files, spec_files

        spec = str(spec).strip()[:500]
        if not spec:
            raise ValueError("no pilot given: choose one from the list or type a spec")
        low = spec.lower()
        planner = next((p for p in ("search:", "adapt:") if low.startswith(p)), "")
        for part in (spec[len(planner):].split("+") if planner else [spec]):
            kind = next((k for k in SPEC_SUFFIXES if part.lower().startswith(k)), "")
            for path in spec_files(part) if part else []:
                full = self.root / path
                if part.lower().startswith("lm:"):
                    if full.exists() and not _lm_files(self.inside(path)):
                        raise ValueError(f"{path.name}: an lm: model is a .gguf file or a "
                                         "folder a model or an adapter was saved into")
                    continue
                # Only an existing file can be quoted back; a mistyped spec gets make_pilot's word.
                if full.exists() and path.suffix.lower() not in SPEC_SUFFIXES[kind]:
                    raise ValueError(f"{path.name}: a {kind.rstrip(':') or 'checkpoint'} file "
                                     f"ends in {' or '.join(SPEC_SUFFIXES[kind])}")
        return map_spec_files(spec, self.inside)

    def replays(self) -> list[dict[str, Any]]:
        found = sorted(self.runs.glob("replays/*.json")) + \
            sorted(self.runs.glob("tournaments/*/replays/*.json"))
        found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        return [{"path": str(p.relative_to(self.root)), "name": p.name} for p in found[:500]]

    def tournaments(self) -> list[dict[str, Any]]:
        out = []
        for folder in sorted(self.runs.glob("tournaments/*/"), reverse=True)[:50]:
            try:
                standings = json.loads((folder / "standings.json").read_text())
            except (OSError, ValueError):
                continue
            table = folder / "crosstable.md"
            out.append({"name": folder.name, "standings": standings,
                        "crosstable": table.read_text() if table.is_file() else "",
                        "replays": [str(p.relative_to(self.root))
                                    for p in sorted(folder.glob("replays/*.json"))]})
        return out

    def ratings_rows(self) -> dict[str, Any]:
        from spacewar_ai.rating.ratings import RatingsFile, rated_games

        rows = []
        data = RatingsFile(self.ratings).data
        for identity, p in data["players"].items():
            games = rated_games(p)
            rows.append({"name": p.get("name", identity), "identity": identity,
                         "rating": p.get("rating"), "ci95": p.get("ci95"), "games": games})
        rows.sort(key=lambda r: -(r["rating"] or 0.0))
        return {"file": str(self.ratings.relative_to(self.root))
                if self.ratings.is_relative_to(self.root) else str(self.ratings), "players": rows}

    def pilots(self) -> list[str]:
        from spacewar_ai.pilots.scripted import SCRIPTED_SPECS

        found = [str(p.relative_to(self.root))
                 for p in sorted(self.checkpoints.glob("*/best.pt"))[:40]]
        return [*SCRIPTED_SPECS, "pretrained", "search:pretrained", *found]


# --- live games (played in worker processes: game_worker.py, web_games.py) ------------------
def start_game(message: dict, files: Files, seed: int):
    """The HumanGame a page's start message asks for (ValueError with one line if it cannot)."""
    from spacewar_ai.human.play import (DIFFICULTIES, HELP_ALONE, HELP_COMMON, HELP_TWO, HumanGame,
                             Opponent, difficulty_opponent, spec_opponent)
    from spacewar_ai.pilots.specs import make_pilot

    config = GameConfig()
    kind = message.get("mode")
    replay_dir = files.runs / "replays"
    if kind == "watch":
        a, b = (files.check_spec(message.get(k, "")) for k in ("a", "b"))
        first = make_pilot(a, config, seed)
        second = make_pilot(b, config, seed + 1)
        game = HumanGame(config, Opponent(second, second.name, 0, "watch"), seed=seed,
                         score_limit=10**6, mode=None, replay_dir=replay_dir,
                         first=Opponent(first, first.name, 0, "watch"))
        return game, []
    if kind != "play":
        raise ValueError(f"unknown mode {kind!r}: play or watch")
    if message.get("two_player"):
        game = HumanGame(config, None, two_player=True, seed=seed, mode=None,
                         replay_dir=replay_dir)
        return game, HELP_TWO + HELP_COMMON
    spec, difficulty = message.get("opponent") or "", message.get("difficulty") or ""
    if spec:
        opponent = spec_opponent(files.check_spec(spec), config, seed)
    else:
        if difficulty not in DIFFICULTIES:
            raise ValueError(f"difficulty {difficulty!r} is unknown: use one of "
                             f"{', '.join(DIFFICULTIES)}")
        opponent = difficulty_opponent(difficulty, config, files.checkpoints, files.ratings,
                                       seed)
    game = HumanGame(config, opponent, seed=seed, mode=None, replay_dir=replay_dir,
                     difficulty="" if spec else difficulty)
    return game, HELP_ALONE + HELP_COMMON


# --- the app -----------------------------------------------------------------------------------
def create_app(root: str | Path = ".", checkpoint_dir: str | Path = "checkpoints",
               ratings_file: str | Path | None = None, names=None, origins=(),
               limits=None):
    """The Starlette app over the project folder `root`, answering to the host `names`
    (default the loopback names) and pages of those names or of `origins` (web_guard.py),
    within `limits` (web_guard.Limits)."""
    try:
        from starlette.applications import Starlette
        from starlette.middleware import Middleware
        from starlette.responses import FileResponse, JSONResponse, RedirectResponse
        from starlette.routing import Mount, Route, WebSocketRoute
        from starlette.staticfiles import StaticFiles
        from starlette.websockets import WebSocketDisconnect
    except ImportError:
        raise ValueError(INSTALL) from None
    from spacewar_ai.web.worker import public_message
    from spacewar_ai.web.arena import arena_routes
    from spacewar_ai.web.games import Workers, run_live
    from spacewar_ai.web.guard import LOOPBACK_NAMES, Guard, Limits, TooLarge, read_body

    files = Files(Path(root), checkpoint_dir, ratings_file)
    limits = limits if limits is not None else Limits()
    workers = Workers(limits)
    arena_api, arena_runner = arena_routes(files, limits)

    def problem(exc: BaseException, status: int = 400):
        return JSONResponse({"error": public_message(exc)}, status_code=status)

    async def page(request):
        return FileResponse(STATIC / "index.html")

    async def home(request):
        return RedirectResponse("/play")

    async def api_pilots(request):
        from spacewar_ai.human.play import DIFFICULTIES

        return JSONResponse({"pilots": files.pilots(), "difficulties": list(DIFFICULTIES),
                             "speeds": list(SPEEDS)})

    async def api_replays(request):
        return JSONResponse({"replays": files.replays()})

    async def api_replay(request):
        try:
            if request.method == "POST":
                body = await read_body(request, limits.upload_bytes, "the replay",
                                       "upload_bytes")
                name = request.query_params.get("name", "the uploaded file")[:200]
                try:
                    text = body.decode("utf-8")
                except UnicodeDecodeError:
                    raise ReplayError(f"replay {name}: not UTF-8 text") from None
                data = replay_frames(parse_replay(text, name), name)
            else:
                rel = request.query_params.get("path", "")
                path = files.inside(rel, files.runs)
                data = replay_frames(load_replay(path), rel)
        except TooLarge as exc:
            return problem(exc, 413)
        except (ValueError, OSError) as exc:  # ReplayError is a ValueError
            return problem(exc)
        return JSONResponse(data)

    async def api_tournaments(request):
        try:
            ratings = files.ratings_rows()
        except ValueError as exc:
            ratings = {"file": str(files.ratings), "players": [], "error": public_message(exc)}
        return JSONResponse({"ratings": ratings, "tournaments": files.tournaments()})

    async def api_live(request):
        game = workers.live.get(request.path_params["gid"])
        state = game.state() if game is not None else None
        if state is None:
            return problem(ValueError("no such game (it has ended, or not begun?)"), 404)
        return JSONResponse(state)

    async def ws_live(websocket):
        await websocket.accept()
        try:
            await run_live(websocket, files, workers, time.time_ns() % 10**9)
        except (WebSocketDisconnect, RuntimeError):
            return  # the page closed

    @contextlib.asynccontextmanager
    async def lifespan(app):
        workers.prepare()
        arena_runner.start()
        yield
        await arena_runner.close()
        await workers.close()

    routes = [Route("/", home), *[Route(f"/{p}", page) for p in PAGES],
              Route("/api/pilots", api_pilots), Route("/api/replays", api_replays),
              Route("/api/replay", api_replay, methods=["GET", "POST"]),
              Route("/api/tournaments", api_tournaments), Route("/api/live/{gid}", api_live),
              WebSocketRoute("/ws/live", ws_live), *arena_api,
              Mount("/static", StaticFiles(directory=STATIC), name="static")]
    guard = Middleware(Guard, names=tuple(names or LOOPBACK_NAMES), origins=tuple(origins))
    app = Starlette(routes=routes, middleware=[guard], lifespan=lifespan)
    app.state.workers = workers
    app.state.limits = limits
    return app


def _uvicorn_config(app, host: str, port: int):
    import uvicorn

    # A WebSocket message is at most the limit's size; uvicorn refuses larger ones itself.
    return uvicorn.Config(app, host=host, port=port, log_level="warning",
                          ws="websockets-sansio", ws_max_size=app.state.limits.message_bytes)


class BackgroundServer:
    """The app on a free port of 127.0.0.1, served from a thread of this process (the browser
    tests and scripts/web_tour.py); `stop()` ends it. Keyword arguments go to create_app."""

    def __init__(self, root: str | Path = ".", timeout: float = 30.0, **app_options):
        import socket
        import threading

        import uvicorn

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.app = create_app(root, **app_options)
        self._server = uvicorn.Server(_uvicorn_config(self.app, "127.0.0.1", port))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.time() + timeout
        while not self._server.started:
            if time.time() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the web app did not start on {self.url}")
            time.sleep(0.05)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)


def serve(host: str = "127.0.0.1", port: int = 8000, root: str | Path = ".",
          checkpoint_dir: str | Path = "checkpoints", ratings_file=None, names=None,
          origins=(), limits=None) -> None:
    """The --serve mode: the app on host:port until Ctrl-C."""
    from spacewar_ai.web.guard import LOOPBACK_NAMES

    if not 0 < int(port) < 65536:
        raise ValueError(f"--port {port}: give a port from 1 to 65535")
    loopback = host in LOOPBACK_NAMES
    if not loopback and not names:
        raise ValueError(f"--host {host} lets other machines reach this app: say the names "
                         "they reach it by with --server-name NAME[,NAME] (requests for other "
                         "names are refused, which stops DNS rebinding)")
    app = create_app(root, checkpoint_dir, ratings_file, names, origins, limits)
    try:
        import uvicorn
    except ImportError:
        raise ValueError(INSTALL) from None
    if not loopback:
        print(f"warning: --host {host} lets other machines on the network reach this app (it "
              "plays the pilot specs it is given from this project's files and lists your "
              "replays and ratings); docs/browser.md says how to host it behind a proxy")
    shown = host if loopback else names[0]  # beyond loopback, names were required above
    print(f"Spacewar! AI in the browser: http://{shown}:{port}/play  (Ctrl-C stops it)",
          flush=True)
    uvicorn.Server(_uvicorn_config(app, host, int(port))).run()
