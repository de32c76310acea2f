"""The browser app measured and photographed: key-to-canvas latency, frames drawn per second, and
a screenshot of each page, in a real headless Chromium.

    python scripts/web_tour.py                      # in a project folder with runs/ and checkpoints/
    python scripts/web_tour.py --screenshots docs   # also writes docs/web-<page>.png

Latency: the time from the browser's keydown event (rotate left) to the first frame drawn on the
canvas in which ship 0's heading has changed, over --trials presses (the server runs the game,
so this is a round trip: key to server, one engine frame, state back, drawn). Frames per second:
canvas draws per second of wall clock while a game plays, for --seconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]


def measure(page, url: str, trials: int, seconds: float) -> dict:
    page.goto(f"{url}/play")
    page.wait_for_selector("body[data-ready='1']")
    page.fill("#opponent", "idle")
    page.click("#start")
    page.wait_for_function("window.SW_STATS.drawn > 10")
    page.evaluate("window.addEventListener('keydown', () => { window.SW_KEY_T = "
                  "performance.now(); }, true)")
    latencies = []
    for _ in range(trials):
        before = page.evaluate("window.SW_STATS.heading0")
        page.keyboard.down("ArrowLeft")
        page.wait_for_function(f"window.SW_STATS.heading0 !== {before!r}", timeout=10_000)
        latencies.append(page.evaluate("window.SW_STATS.t - window.SW_KEY_T"))
        page.keyboard.up("ArrowLeft")
        time.sleep(0.1)
    d0, t0 = page.evaluate("[window.SW_STATS.drawn, performance.now()]")
    time.sleep(seconds)
    d1, t1 = page.evaluate("[window.SW_STATS.drawn, performance.now()]")
    return {"latency_ms": latencies, "fps": 1000 * (d1 - d0) / (t1 - t0)}


def screenshots(page, url: str, out: Path, root: Path) -> list[Path]:
    written = []

    def shot(name):
        path = out / f"web-{name}.png"
        page.screenshot(path=str(path))
        written.append(path)

    page.goto(f"{url}/play")
    page.wait_for_selector("body[data-ready='1']")
    page.fill("#opponent", "heuristic:hard")
    page.click("#start")
    page.wait_for_function("window.SW_STATS.drawn > 60")
    page.keyboard.down("ArrowRight")
    page.keyboard.down("Space")
    time.sleep(0.5)
    page.keyboard.up("Space")
    page.keyboard.up("ArrowRight")
    shot("play")
    page.goto(f"{url}/watch")
    page.wait_for_selector("body[data-ready='1']")
    page.click("#start")
    page.wait_for_function("window.SW_STATS.drawn > 150")
    shot("watch")
    replays = sorted(root.glob("runs/tournaments/*/replays/*.json")) or \
        sorted(root.glob("runs/replays/*.json"))
    if replays:
        page.goto(f"{url}/replays?path={replays[-1].relative_to(root)}")
        page.wait_for_selector(".replay-status[data-frames]")
        frames = int(page.get_attribute(".replay-status", "data-frames"))
        page.eval_on_selector(".scrub", f"(s) => {{ s.value = {frames // 2}; "
                                        "s.dispatchEvent(new Event('input')); }")
        shot("replays")
    page.goto(f"{url}/tournaments")
    page.wait_for_selector("body[data-ready='1']")
    shot("tournaments")
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=".", help="the project folder the app serves")
    p.add_argument("--trials", type=int, default=30)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--screenshots", metavar="FOLDER", help="write web-<page>.png here")
    args = p.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"no browser at {CHROMIUM}: apt-get install chromium", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    from spacewar_ai.web.app import BackgroundServer

    root = Path(args.root).resolve()
    server = BackgroundServer(root)
    url = server.url
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page(viewport={"width": 900, "height": 980})
            m = measure(page, url, args.trials, args.seconds)
            lat = sorted(m["latency_ms"])
            print(f"key press to canvas, {len(lat)} presses: median "
                  f"{statistics.median(lat):.1f} ms, fastest {lat[0]:.1f} ms, slowest "
                  f"{lat[-1]:.1f} ms")
            print(f"frames drawn per second while a game plays: {m['fps']:.1f} "
                  "(the game runs at 50)")
            if args.screenshots:
                out = Path(args.screenshots)
                out.mkdir(parents=True, exist_ok=True)
                for path in screenshots(page, url, out, root):
                    print(f"wrote {path}")
            browser.close()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
