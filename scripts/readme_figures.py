"""README's Results table, measured again: each figure a short, deterministic command gives.

    python scripts/readme_figures.py            # every figure below, about 15 minutes on 2 cores
    python scripts/readme_figures.py --quick    # the three that take seconds (the suite runs this)

Each entry of FIGURES names a command exactly as README's Results table prints it, and which of
the row's figures (split at ';') it gives. The script finds that row, runs the command, reads
the win rate from its report and compares it with the table, to the printed decimal: the games
are the same on every host, so any difference is a change of behaviour, and the commit that
makes it updates the table. It exits 1 when a figure differs or a command is no longer in the
table. Figures that need a training run, a benchmark (the host moves them) or a file that is
not shipped (the peer project's checkout and checkpoint) are not among them.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


class Figure(NamedTuple):
    command: str  # as README prints it
    part: int = 0  # which of the row's ';'-separated figures
    quick: bool = False  # seconds, not minutes: the suite's short form


FIGURES = (
    Figure("spacewar-ai --evaluate --checkpoint pretrained --opponent heuristic:hard "
           "--eval-episodes 200", quick=True),
    Figure("spacewar-ai --evaluate --checkpoint pretrained --panel --eval-episodes 200",
           quick=True),
    Figure("spacewar-ai --evaluate --checkpoint pretrained --opponent heuristic:hard --config "
           "examples/classic_start.toml --eval-episodes 40", quick=True),
    Figure("spacewar-ai --evaluate --checkpoint search:pretrained --opponent heuristic:hard "
           "--eval-episodes 200"),
    Figure("spacewar-ai --evaluate --checkpoint search:heuristic:hard+heuristic:hard --opponent "
           "heuristic:hard --eval-episodes 200 --seed 4242"),
)


def table_rows(text: str) -> list[tuple[str, str, str]]:
    """(what, figure, command) of each row of README's Results table."""
    section = text.split("## Results", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and not set(cells[1]) <= set("-") and cells[0] != "what":
            rows.append((cells[0], cells[1], cells[2]))
    return rows


def printed(figure: Figure, rows) -> str | None:
    """The figure README prints for `figure`'s command, as printed ("60.5%"); None when no
    row shows the command."""
    for _, figures, commands in rows:
        if f"`{figure.command}`" in commands:
            part = figures.split(";")[figure.part]
            found = re.search(r"\d+(?:\.\d+)?%", part)
            return found.group(0) if found else None
    return None


def measured(figure: Figure, ratings: Path) -> str:
    """Run the command as a user would (from the repository's root) and read its win rate as
    README prints it."""
    args = shlex.split(figure.command)[1:]
    if "--panel" not in args:  # a figure's games stay out of the user's ratings file
        args += ["--ratings-file", str(ratings)]
    out = subprocess.run([sys.executable, str(ROOT / "main.py"), *args, "--quiet"], cwd=ROOT,
                         capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{figure.command}: exit {out.returncode}: "
                           f"{out.stderr.strip()[-300:]}")
    pattern = r"panel mean\s+(\d+\.\d)%" if "--panel" in args else r"wins \d+ \((\d+\.\d)%"
    found = re.search(pattern, out.stdout)
    if not found:
        raise RuntimeError(f"{figure.command}: no win rate in its report")
    return f"{found.group(1)}%"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="only the figures that take seconds (the suite's short form)")
    args = ap.parse_args(argv)
    rows = table_rows(README.read_text())
    wrong = 0
    with tempfile.TemporaryDirectory() as tmp:
        for figure in FIGURES:
            if args.quick and not figure.quick:
                continue
            shown = printed(figure, rows)
            if shown is None:
                print(f"MISSING  {figure.command}: no row of README's Results table prints it")
                wrong += 1
                continue
            got = measured(figure, Path(tmp) / "ratings.json")
            same = got == shown
            wrong += not same
            print(f"{'same' if same else 'DIFFERS':8s} {shown:>6s} in README, {got:>6s} now: "
                  f"{figure.command}", flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
