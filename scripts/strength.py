"""The strength table of docs/strength.md: agents against the hard and medium pilots and
against every pilot of the generalization panel (spacewar_ai/pretrained/panel/), with and without search.

    python scripts/strength.py --games 200 --search-games 50

Each cell is torpedo wins over its games (sides swapped) with a 95% interval; "panel mean" is
the mean of the panel cells, which are `evaluate_panel`'s. The same figures, one agent at a time:
`spacewar-ai --evaluate --checkpoint SPEC --panel --eval-episodes N` and
`spacewar-ai --evaluate --checkpoint SPEC --opponent heuristic:hard --eval-episodes N`.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from spacewar_ai.pilots.build import make_pilot, spec_files
from spacewar_ai.rating.match import play_match, wilson_interval
from spacewar_ai.rating.panel import evaluate_panel, label, panel_specs

AGENTS = [
    ("shipped network", "pretrained"),
    ("fresh default run (`spacewar-ai --algorithm ppo`, 2 min)",
     "checkpoints/ppo-s0-20261123-213155/best.pt"),
    ("12-minute run (the ladder's PPO from scratch)", "checkpoints/ladder-scratch-s0/best.pt"),
]
SEARCH = [("shipped network with search, fixed model of the hard pilot", "search:pretrained"),
          ("shipped network with adaptive search, starting from that model", "adapt:pretrained"),
          ("fresh default run with search, its own model of the hard pilot",
           "search:checkpoints/ppo-s0-20261123-213155/best.pt"),
          ("fresh default run with adaptive search, starting from that model",
           "adapt:checkpoints/ppo-s0-20261123-213155/best.pt"),
          ("12-minute run with search, its own model of the hard pilot",
           "search:checkpoints/ladder-scratch-s0/best.pt"),
          ("12-minute run with adaptive search, starting from that model",
           "adapt:checkpoints/ladder-scratch-s0/best.pt")]


def cell(spec: str, opponent: str, games: int, seed: int) -> dict:
    a, b = make_pilot(spec), make_pilot(opponent, seed=seed + 1)
    try:
        r = play_match(a, b, games, seed)
    finally:
        for p in (a, b):
            p.close()
    return {"wins": r.wins_a, "games": r.n, "rate": r.wins_a / r.n,
            "ci": wilson_interval(r.wins_a, r.n)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=200)
    p.add_argument("--search-games", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="docs/strength.json", help="the figures, as JSON")
    p.add_argument("--agents", help="name=spec;name=spec instead of the default rows")
    p.add_argument("--only", help="play only these rows (specs, comma-separated) and replace "
                   "them in --out's table, keeping its other rows")
    args = p.parse_args(argv)
    agents = [(n, s, args.games) for n, s in AGENTS] + \
        [(n, s, args.search_games) for n, s in SEARCH]
    if args.agents:
        agents = [(*item.split("=", 1), args.games) for item in args.agents.split(";")]
    order = [spec for _, spec, _ in agents]
    if args.only:
        only = [s.strip() for s in args.only.split(",")]
        unknown = [s for s in only if s not in order]
        if unknown:
            raise SystemExit(f"--only {unknown[0]!r} is not a row; name one of: "
                             f"{', '.join(order)}")
        agents = [a for a in agents if a[1] in only]
    opponents = ["heuristic:hard", "heuristic:medium", *panel_specs()]
    rows = []
    for name, spec, games in agents:
        missing = [str(f) for f in spec_files(spec) if not f.exists()]
        if missing:
            print(f"skipped {name}: {missing[0]} is not on this machine", flush=True)
            continue
        began = time.time()
        cells = {o: cell(spec, o, games, args.seed + 1000 * k)
                 for k, o in enumerate(opponents[:2])}
        for r in evaluate_panel(spec, games, args.seed, quiet=True)["rows"]:
            cells[r["spec"]] = {"wins": r["wins"], "games": r["games"], "rate": r["win_rate"],
                                "ci": r["ci"]}
        panel = [cells[o]["rate"] for o in opponents[2:]]
        rows.append({"name": name, "spec": spec, "games": games, "cells": cells,
                     "panel_mean": sum(panel) / len(panel), "seconds": time.time() - began})
        print(name, json.dumps({label(o) if ":" in o and "/" in o else o: round(c["rate"], 3)
                                for o, c in cells.items()}), flush=True)
    out = Path(args.out)
    if args.only and out.exists():  # read now, not at the start: rows written meanwhile stay
        played = {r["spec"] for r in rows}
        rows += [r for r in json.loads(out.read_text()) if r["spec"] not in played]
    rows = sorted(rows, key=lambda r: order.index(r["spec"]) if r["spec"] in order
                  else len(order))
    heads = ["hard", "medium", *[label(o) for o in opponents[2:]], "panel mean"]
    lines = [f"| agent (games per cell) | {' | '.join(heads)} |",
             "|---|" + "---|" * len(heads)]
    for r in rows:
        cells = [f"{c['rate']:.0%} ({c['ci'][0]:.0%}-{c['ci'][1]:.0%})"
                 for c in r["cells"].values()]
        lines.append(f"| {r['name']}: `{r['spec']}` ({r['games']}) | {' | '.join(cells)} | "
                     f"**{r['panel_mean']:.1%}** |")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    partial.write_text(json.dumps(rows, indent=1))
    os.replace(partial, out)
    print("\n".join(lines))  # the table of docs/strength.md
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
