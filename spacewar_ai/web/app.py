"""The browser: `spacewar-ai --serve` and replays as one HTML file (docs/browser.md).

The game stays in Python: the server runs the engine and streams each frame's state over a
WebSocket; the page draws it on a canvas (web/static/spacewar.js, the only renderer). Pages:
`/play` (you against any pilot or level, or two people), `/watch` (two pilots live),
`/replays` and `/tournaments`; `--replay FILE --html out.html` (`export_html`) writes a replay
player that needs no server.

The server binds 127.0.0.1 unless told otherwise, reads files only under its folder, and checks
everything that arrives as everywhere else (web.guard, web.checks). Starlette, uvicorn and
websockets are the `web` extra, imported only when a page is served."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from ..game.replays import load_replay
from ..util.errors import UserError
from ..util.workers import Where
from .files import Files
from .live import replay_frames

STATIC = Path(__file__).resolve().parent / "static"
PAGES = ("play", "watch", "replays", "tournaments", "arena")
INSTALL = 'the browser app needs the web extra: pip install -e ".[web]"'


def export_html(replay_path, out) -> Path:
    """`--replay FILE --html OUT`: one self-contained page that plays the replay."""
    from ..util.files import atomic_write_bytes

    out = Path(out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise UserError(f"--html {out}: give a file name ending in .html")
    data = replay_frames(load_replay(replay_path), Path(replay_path).name)
    page = (STATIC / "replay.html").read_text()
    script = (STATIC / "spacewar.js").read_text()
    payload = data.decode().replace("</", "<\\/")
    page = page.replace("/*SPACEWAR_JS*/", script).replace("/*REPLAY_JSON*/", payload)
    atomic_write_bytes(out, lambda f: f.write(page.encode()))
    return out


# --- the app -----------------------------------------------------------------------------------
def create_app(root: str | Path = ".", checkpoint_dir: str | Path = "checkpoints",
               ratings_file: str | Path | None = None, names=None, origins=(),
               limits=None, where: Where = Where(), game=None):
    """The Starlette app over the project folder `root`, answering to the host `names`
    (default the loopback names) and pages of those names or of `origins` (guard.py), within
    `limits` (guard.Limits); the arena's pairings played where `where` (util.workers.Where)
    says, on this machine by default (web/arena.py). Each group of routes is
    built by its own module: the pages (pages.py), replays (replays.py), live games (games.py)
    and the arena (arena.py)."""
    try:
        from starlette.applications import Starlette
        from starlette.middleware import Middleware
        from starlette.routing import Mount
        from starlette.staticfiles import StaticFiles
    except ImportError:
        raise UserError(INSTALL) from None
    from .arena import arena_routes
    from .checks import Checks
    from .connections import quiet_accept_errors
    from .games import Workers, live_routes
    from .guard import LOOPBACK_NAMES, Guard, Limits
    from .pages import page_routes
    from .replays import replay_routes

    files = Files(Path(root), checkpoint_dir, ratings_file)
    limits = limits if limits is not None else Limits()
    workers = Workers(limits, game)
    checks = Checks(limits)
    arena_api, arena_runner = arena_routes(files, limits, checks, where)
    replays_api, answers = replay_routes(files, limits, checks)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(quiet_accept_errors(loop))
        workers.pool.start()
        checks.start()
        arena_runner.start()
        yield
        await arena_runner.close()
        await checks.close()
        await workers.close()

    routes = [*page_routes(files, STATIC, PAGES), *replays_api,
              *live_routes(files, workers, checks, limits), *arena_api,
              Mount("/static", StaticFiles(directory=STATIC), name="static")]
    guard = Middleware(Guard, names=tuple(names or LOOPBACK_NAMES), origins=tuple(origins))
    app = Starlette(routes=routes, middleware=[guard], lifespan=lifespan)
    app.state.workers = workers
    app.state.checks = checks
    app.state.answers = answers
    app.state.limits = limits
    return app


def _uvicorn_config(app, host: str, port: int, proxies=()):
    """uvicorn's settings, from the app's budgets where uvicorn has its own (keep-alive,
    concurrency, header size, WebSocket pings and message size) and with the connection budget's
    protocol (web.connections). A client's X-Forwarded-For is believed only when it connects
    from one of `proxies` (uvicorn's ProxyHeadersMiddleware), and from no one when there are
    none: any visitor can write the header, and the per-address limits key on the address it
    names."""
    import uvicorn

    from .connections import (
        ConnectionBudget,
        budgeted_protocol,
        descriptor_budget,
        fold_uvicorn_refusals,
    )

    lim = app.state.limits
    workers = lim.games_in_all + lim.sandboxes_in_all + lim.arena_runners + lim.checkers + 1
    in_all = descriptor_budget(lim.connections_in_all, workers, lim.backlog)
    budget = ConnectionBudget(lim, in_all, proxies)
    app.state.connections = budget
    fold_uvicorn_refusals()
    return uvicorn.Config(app, host=host, port=port, log_level="warning",
                          http=budgeted_protocol(budget), ws="websockets-sansio",
                          ws_max_size=lim.message_bytes, ws_ping_interval=lim.ping_seconds,
                          ws_ping_timeout=lim.ping_seconds, limit_concurrency=in_all,
                          timeout_keep_alive=lim.keep_alive_seconds, backlog=lim.backlog,
                          timeout_graceful_shutdown=lim.shutdown_seconds,
                          h11_max_incomplete_event_size=lim.head_bytes,
                          proxy_headers=bool(proxies),
                          forwarded_allow_ips=list(proxies) if proxies else None)


class BackgroundServer:
    """The app on a free port of 127.0.0.1, served from a thread of this process (the browser
    tests and scripts/web_tour.py); `stop()` ends it. Keyword arguments go to create_app."""

    def __init__(self, root: str | Path = ".", timeout: float = 30.0, proxies=(),
                 **app_options):
        import socket
        import threading

        import uvicorn

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.app = create_app(root, **app_options)
        self._server = uvicorn.Server(_uvicorn_config(self.app, "127.0.0.1", port, proxies))
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
          origins=(), limits=None, proxies=(), where: Where = Where(),
          game=None) -> None:
    """The --serve mode: the app on host:port until Ctrl-C; `proxies`, the addresses of the
    reverse proxies whose X-Forwarded-For names the visitor (_uvicorn_config); `where`, where
    the arena's pairings play (create_app); `game`, the GameConfig of its live games."""
    from .guard import LOOPBACK_NAMES

    if not 0 < int(port) < 65536:
        raise UserError(f"--port {port}: give a port from 1 to 65535")
    loopback = host in LOOPBACK_NAMES
    if not loopback and not names:
        raise UserError(f"--host {host} lets other machines reach this app: say the names "
                        "they reach it by with --server-name NAME[,NAME] (requests for other "
                        "names are refused, which stops DNS rebinding)")
    app = create_app(root, checkpoint_dir, ratings_file, names, origins, limits, where, game)
    try:
        import uvicorn
    except ImportError:
        raise UserError(INSTALL) from None
    if not loopback:
        print(f"warning: --host {host} lets other machines on the network reach this app (it "
              "plays the pilot specs it is given from this project's files and lists your "
              "replays and ratings); docs/browser.md says how to host it behind a proxy")
    shown = host if loopback else names[0]  # beyond loopback, names were required above
    print(f"Spacewar! AI in the browser: http://{shown}:{port}/play  (Ctrl-C stops it)",
          flush=True)
    uvicorn.Server(_uvicorn_config(app, host, int(port), proxies)).run()
