"""The browser app, in a real headless Chromium driven by Playwright, against a real uvicorn server
on 127.0.0.1 over a project folder where a real tournament was played."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.commands import cli

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]
PLAYERS = ["heuristic:hard", "heuristic:easy", "random"]

pytestmark = pytest.mark.slow


def _cli(*args, cwd, timeout=300):
    return cli(*args, cwd=cwd, timeout=timeout, env={**os.environ, "SDL_VIDEODRIVER": "dummy"})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project folder with one tournament played in it, its games saved."""
    root = tmp_path_factory.mktemp("project")
    out = _cli("--tournament", "--players", ",".join(PLAYERS), "--matches-per-pairing", "2",
               "--save-replays", "1", "--workers", "1", "--quiet", cwd=root)
    assert out.returncode == 0, out.stderr
    return root


@pytest.fixture(scope="module")
def server(project):
    from spacewar_ai.web.app import BackgroundServer

    srv = BackgroundServer(project)
    yield srv.url
    srv.stop()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no browser at {CHROMIUM}: apt-get install chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 900, "height": 900})
    pg = context.new_page()
    pg.console_errors = []
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))
    pg.on("pageerror", lambda exc: pg.console_errors.append(str(exc)))
    yield pg
    context.close()


def _lit_pixels(pg, selector="canvas") -> int:
    """Pixels of the canvas brighter than the dim starfield: ships, star, torpedoes, text."""
    return pg.eval_on_selector(selector, """c => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (Math.max(d[i], d[i + 1], d[i + 2]) > 200) n++;
        return n; }""")


def _drawn(pg, more_than: int) -> int:
    # A safety net sized for a loaded host, where a game's worker may take many seconds to start.
    pg.wait_for_function(f"window.SW_STATS.drawn > {more_than}", timeout=60_000)
    return pg.evaluate("window.SW_STATS.drawn")


def _get(url: str, as_json: bool = True):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            status, body = r.status, r.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    return status, json.loads(body) if as_json else body


def _replays(project: Path) -> list[Path]:
    return sorted(project.glob("runs/tournaments/*/replays/*.json"))


def test_every_page_loads_and_draws_without_console_errors(page, server, project):
    page.goto(f"{server}/play")
    page.wait_for_selector("body[data-ready='1']")
    page.select_option("#difficulty", "1")
    page.click("#start")
    _drawn(page, 10)
    assert _lit_pixels(page) > 200

    page.goto(f"{server}/watch")
    page.wait_for_selector("body[data-ready='1']")
    page.fill("#a", "heuristic:hard")
    page.fill("#b", "pretrained")
    page.select_option("#speed", "4")
    page.click("#start")
    _drawn(page, 10)
    assert "heuristic:hard vs" in page.text_content("#names")
    assert _lit_pixels(page) > 200

    page.goto(f"{server}/replays")
    page.wait_for_selector("body[data-ready='1']")
    first = str(_replays(project)[0].relative_to(project))
    page.select_option("#replay-list", first)
    page.wait_for_selector("#player canvas")
    assert _lit_pixels(page, "#player canvas") > 200

    page.goto(f"{server}/tournaments")
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_selector("table.standings")
    assert page.console_errors == []


def _submit(page, name: str, file_name: str, source: bytes) -> None:
    """Enter a strategy in the arena page's form, as a visitor does."""
    page.fill("#entry-name", name)
    page.set_input_files("#entry-file", files=[{"name": file_name, "mimeType": "text/x-python",
                                                "buffer": source}])
    page.click("#submit")


def test_the_arena_page_takes_a_submission_and_lists_it(page, server, project):
    page.goto(f"{server}/arena")
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_selector("table.ratings")
    _submit(page, "spinner", "spin.py", b"def strategy(obs):\n    return 1\n")
    page.wait_for_function("document.querySelector('#board').textContent.includes('spinner')")
    assert "queued" in page.text_content("#submitted")
    assert page.console_errors == []
    # A refused file is one line on the page (its 400 is the browser's only complaint).
    _submit(page, "importer", "os.py", b"import os\ndef strategy(obs):\n    return 1\n")
    page.wait_for_selector("#error:not([hidden])")
    assert "an import other than `import math`" in page.text_content("#error")
    assert all("400 (Bad Request)" in e for e in page.console_errors), page.console_errors


def test_the_rotate_key_turns_ship_0_on_the_server(page, server):
    page.goto(f"{server}/play")
    page.wait_for_selector("body[data-ready='1']")
    page.fill("#opponent", "idle")
    page.click("#start")
    _drawn(page, 5)
    game = page.get_attribute("#screen", "data-game")
    _, before = _get(f"{server}/api/live/{game}")
    time.sleep(0.3)
    _, still = _get(f"{server}/api/live/{game}")
    assert still["state"]["f"] > before["state"]["f"]  # the game runs on its own pace
    assert still["state"]["s"][0][2] == before["state"]["s"][0][2]  # no key, no turn
    page.keyboard.down("ArrowLeft")
    time.sleep(0.4)
    _, turning = _get(f"{server}/api/live/{game}")
    page.keyboard.up("ArrowLeft")
    assert turning["held"] == ["left"]
    assert turning["state"]["s"][0][2] != still["state"]["s"][0][2]
    assert page.console_errors == []


def _final_state(path: Path) -> str:
    from spacewar_ai.game.replays import load_replay, replay_game, state_hash

    return state_hash(replay_game(load_replay(path)))


def _play_to_the_end(pg) -> str:
    pg.select_option(".speed", "4")
    pg.click("[data-act='play']")
    frames = int(pg.get_attribute(".replay-status", "data-frames"))
    pg.wait_for_function(
        f"document.querySelector('.replay-status').dataset.frame == '{frames - 1}'",
        timeout=60_000)
    assert pg.evaluate("window.SW_STATS.drawn") >= frames  # it played, not jumped
    return pg.get_attribute(".replay-status", "data-final-state")


def test_a_served_replay_and_its_html_export_end_in_the_recorded_state(page, server, project,
                                                                      tmp_path):
    path = max(_replays(project), key=lambda p: len(json.loads(p.read_text())["actions"][0]))
    expected = _final_state(path)
    page.goto(f"{server}/replays?path={path.relative_to(project)}")
    page.wait_for_selector(".replay-status[data-frames]")
    assert _play_to_the_end(page) == expected
    assert expected in page.text_content(".replay-status")

    out = _cli("--replay", str(path), "--html", str(tmp_path / "game.html"), cwd=project)
    assert out.returncode == 0, out.stderr
    page.goto((tmp_path / "game.html").as_uri())  # no server: a file
    page.wait_for_selector("body[data-ready='1']")
    assert _play_to_the_end(page) == expected
    assert page.console_errors == []


def test_an_uploaded_replay_plays_to_its_recorded_state(page, server, project):
    path = _replays(project)[0]
    page.goto(f"{server}/replays")
    page.wait_for_selector("body[data-ready='1']")
    page.set_input_files("#upload", files=[{"name": "mine.json", "mimeType": "application/json",
                                            "buffer": path.read_bytes()}])
    page.wait_for_selector(".replay-status[data-frames]")
    page.click("[data-act='end']")
    assert page.get_attribute(".replay-status", "data-final-state") == _final_state(path)


def test_an_upload_that_meets_a_busy_server_is_asked_again_and_plays(page, project, tmp_path):
    """The server refuses as busy (503, Retry-After) while another visitor's long replay holds
    its one place for checks; the page says so, waits as told, asks again and plays."""
    from spacewar_ai.web.app import BackgroundServer
    from spacewar_ai.web.guard import Limits
    from tests.helpers import hold_a_replay_check

    path = _replays(project)[0]
    srv = BackgroundServer(tmp_path, proxies=["127.0.0.1"], limits=Limits(
        checks_queued=1, check_seconds=3.0, replay_frames=10**8))
    try:
        holder, _ = hold_a_replay_check(srv, {"X-Forwarded-For": "203.0.113.9"})
        page.goto(f"{srv.url}/replays")
        page.wait_for_selector("body[data-ready='1']")
        page.set_input_files("#upload", files=[{"name": "mine.json",
                                                "mimeType": "application/json",
                                                "buffer": path.read_bytes()}])
        page.wait_for_function(
            "document.querySelector('#error').textContent.includes('the server is busy')")
        # A safety net sized for a loaded host: the long check is stopped at its deadline and
        # its checker replaced before the page's next try is served.
        page.wait_for_selector(".replay-status[data-frames]", timeout=90_000)
        page.click("[data-act='end']")
        assert page.get_attribute(".replay-status", "data-final-state") == _final_state(path)
        assert page.is_hidden("#error")
        holder.join(120)
    finally:
        srv.stop()


def test_two_players_share_the_keyboard_and_a_finished_round_is_saved(page, server, project):
    from spacewar_ai.game.replays import load_replay, replay_game

    page.goto(f"{server}/play")
    page.wait_for_selector("body[data-ready='1']")
    assert not page.is_visible("#player2")
    page.check("#two")
    assert page.is_visible("#player2")  # the wedge's pilot may give a name to be rated too
    page.click("#start")
    _drawn(page, 5)
    game = page.get_attribute("#screen", "data-game")
    _, before = _get(f"{server}/api/live/{game}")
    page.keyboard.down("KeyA")  # player 2 (the wedge) turns left
    time.sleep(0.4)
    _, after = _get(f"{server}/api/live/{game}")
    page.keyboard.up("KeyA")
    assert after["names"] == ["player 1", "player 2"]
    assert after["state"]["s"][1][2] != before["state"]["s"][1][2]
    assert after["state"]["s"][0][2] == before["state"]["s"][0][2]

    # Against the hard pilot a ship that only drifts is shot down soon: the round is saved, and
    # rated, since the hard pilot is rated on the ladder's scale.
    page.goto(f"{server}/play")
    page.wait_for_selector("body[data-ready='1']")
    page.fill("#player", "bob")
    page.fill("#opponent", "heuristic:hard")
    page.click("#start")
    page.wait_for_selector("#saved a", timeout=60_000)
    saved = page.text_content("#saved a").split("saved: ")[1]
    replay_game(load_replay(project / saved))  # replays to the state it recorded
    page.wait_for_function(
        "document.querySelector('#standing').textContent.includes('bob: rating')")
    assert "(1 game)" in page.text_content("#standing")
    assert page.console_errors == []


def test_the_play_page_follows_the_players_rating_and_shows_it(page, server, project):
    """A player the server's book knows is met by auto at the level nearest even against
    their rating, and the page says which level plays and the rating with its interval."""
    from spacewar_ai.rating.difficulty import Follow, PlayerBook, ladder

    book = PlayerBook(project / "runs" / "players.db")
    second = ladder()[1]
    for score in (1.0, 1.0, 1.0, 0.0):
        book.record("ada", second.spec, score, second.rating)
    expected = Follow(book.rating("ada")).level
    page.goto(f"{server}/play")
    page.wait_for_selector("body[data-ready='1']")
    assert page.input_value("#difficulty") == "auto"
    assert page.input_value("#player").startswith("guest-")  # a new visitor's name
    page.fill("#player", "ada")
    page.click("#start")
    page.wait_for_function(
        "document.querySelector('#standing').textContent.includes('ada: rating')")
    standing = page.text_content("#standing")
    assert f"auto: level {expected.number:g}, rated {expected.rating:.0f}" in standing, standing
    assert "(4 games)" in standing, standing
    assert page.console_errors == []


def test_the_tournaments_page_shows_the_players_of_the_tournament(page, server, project):
    page.goto(f"{server}/tournaments")
    page.wait_for_selector("table.ratings")
    ratings = page.text_content("table.ratings")
    standings = page.text_content("table.standings")
    for name in PLAYERS:
        assert name in ratings and name in standings
    links = page.eval_on_selector_all("details a", "els => els.map(a => a.href)")
    assert len(links) == len(_replays(project)) and all("/replays?path=" in a for a in links)
    page.click("details a")
    page.wait_for_selector(".replay-status[data-frames]")


def test_bad_input_is_one_line_on_the_page(page, server, project):
    page.goto(f"{server}/replays")
    page.wait_for_selector("body[data-ready='1']")
    page.set_input_files("#upload", files=[{"name": "broken.json", "mimeType": "application/json",
                                            "buffer": b'{"version": 1, "seed": 3}'}])
    page.wait_for_selector("#error:not([hidden])")
    text = page.text_content("#error")
    assert text.startswith("replay broken.json: not a valid replay file") and "\n" not in text

    page.goto(f"{server}/watch")
    page.wait_for_selector("body[data-ready='1']")
    for spec, says in (("ppo:/etc/model.pt", "outside this project"),
                       ("ppo:/etc/passwd", "passwd: a ppo file ends in .pt"),
                       ("heuristic:hardest", "heuristic:hardest")):
        page.fill("#a", spec)
        page.click("#start")
        page.wait_for_function(
            f"document.querySelector('#error').textContent.includes({json.dumps(says)})")
        assert "Traceback" not in page.text_content("#error")


def test_only_replay_files_are_served(server, project):
    """Nothing but the replays under runs/ (not the arena's database or uploads, not a file
    outside the project); errors name the path as asked, never the server's, nor a byte."""
    arena = project / "runs" / "arena" / "submissions"
    arena.mkdir(parents=True, exist_ok=True)
    (arena / "1-abc.onnx").write_bytes(b"\x08\x07model bytes")
    (project / "runs" / "replays").mkdir(exist_ok=True)
    (project / "runs" / "replays" / "torn.json").write_bytes(b'{"version": \xff\xfe}')
    for path, says in (("../../../../etc/passwd", "not a replay of this server"),
                       ("checkpoints/ratings.json", "not a replay of this server"),
                       ("runs/arena/arena.db", "not a replay of this server"),
                       ("runs/arena/submissions/1-abc.onnx", "not a replay of this server"),
                       ("runs/replays/none.json", "no such replay"),
                       ("runs/replays/torn.json", "not a valid replay")):
        status, body = _get(f"{server}/api/replay?path={path}")
        assert status == 400 and body["error"] == f"{path}: {says}" + (
            " (the Replays page lists them)" if "valid" not in says else ""), body
        assert str(project) not in body["error"]
    (project / "runs" / "replays" / "torn.json").unlink()  # the module's other tests list them
    status, _ = _get(f"{server}/static/..%2fweb.py", as_json=False)
    assert status == 404


def test_serving_beyond_this_machine_needs_its_names_and_warns(tmp_path):
    out = _cli("--serve", "--host", "0.0.0.0", cwd=tmp_path)
    assert out.returncode == 2 and "--server-name" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "spacewar_ai", "--serve", "--host", "0.0.0.0",
                             "--server-name", "spacewar.example", "--port", str(port)],
                            cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("warning: --host 0.0.0.0 lets other machines")
    finally:
        proc.kill()
        proc.wait(10)


def test_the_web_app_costs_nothing_to_those_who_never_serve():
    code = ("import sys, spacewar_ai, spacewar_ai.main, spacewar_ai.replays; "
            "print(sorted(m for m in ('starlette', 'uvicorn', 'websockets', 'playwright') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_play_page_fits_a_narrow_window(browser, server):
    """The levels' labels name their pilots and run long: the opponent list (and the rest of
    the page) stays within a window 420 pixels wide, with nothing to scroll sideways."""
    context = browser.new_context(viewport={"width": 420, "height": 800})
    try:
        page = context.new_page()
        page.goto(f"{server}/play")
        page.wait_for_function("document.querySelector('#difficulty').options.length > 1")
        wide, window, select = page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth, "
            "document.querySelector('#difficulty').getBoundingClientRect().right]")
    finally:
        context.close()
    assert wide <= window and select <= window
