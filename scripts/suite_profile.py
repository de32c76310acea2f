"""Where the test suite's CPU goes: every process it starts, by kind.

    python scripts/suite_profile.py                      # the whole suite, as README runs it
    python scripts/suite_profile.py -- -m "not slow"     # pytest's arguments after --

Runs `python -m pytest -q` with the arguments given and, while it runs, reads every process's
CPU time from /proc twice a second. The processes that started after the suite did are sorted
into kinds by their command line (pytest and its workers, where tests run in-process; the CLI
commands and scripts the tests start, among them tests/commands.py's servers, whose children run
most of them; rollout children; multiprocessing's fork servers and the workers they fork, which
are arena pairings and tournament workers; the server's game and check workers; Ray; the
browser) and printed with their count and CPU-seconds, beside the suite's wall time and the CPU
the machine spent meanwhile (/proc/stat). Run it on an otherwise quiet machine: a process
started beside the suite is counted as the suite's. Processes that live under half a second are
missed, so the kinds' sum falls a little short of the machine's figure.
docs/performance.md holds the figures; `--json` writes every process's row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")
# (kind, words any one of which in a command line puts a process in it), first match wins.
KINDS = (
    ("pytest and its workers (tests in-process)", ("exec(eval(sys.stdin", "-m pytest")),
    ("rollout children", ("spacewar_ai.util.workers",)),
    ("fork servers and their workers (arena pairings, tournament workers)",
     ("multiprocessing.forkserver", "multiprocessing.spawn")),
    ("Ray", ("ray/", "raylet", "gcs_server", "default_worker", "setup_worker")),
    ("server game and check workers", ("web.worker", "web.checks")),
    ("browser", ("chrom", "playwright", "node ")),
    ("sandboxed strategies", ("sandbox_child",)),
    ("scripts", ("scripts/",)),
    ("CLI commands and other package processes",
     ("spacewar_ai", "spacewar-ai", "main.py", "tests.commands")),
)


def kind(command: str) -> str:
    return next((name for name, words in KINDS if any(w in command for w in words)), "other")


def machine_busy() -> float:
    """CPU-seconds the machine has spent busy since boot (user, nice, system, irq, softirq)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    return sum(int(fields[i]) for i in (0, 1, 2, 5, 6)) / TICK


def stat_fields(pid) -> list[str]:
    """/proc/PID/stat's fields from the state on (the name before it may hold spaces): [11]
    and [12] are the user and system CPU time, [19] the start, in clock ticks."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2:].split()


def sample(seen: dict, since: int) -> None:
    """Each process started at tick `since` or later: its latest CPU time, keyed by (pid,
    start)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            rest = stat_fields(pid)
            start = int(rest[19])
            if start < since:
                continue
            cpu = (int(rest[11]) + int(rest[12])) / TICK
            key = (int(pid), start)
            if key not in seen:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                seen[key] = {"pid": int(pid), "command": command.decode(errors="replace")[:300]}
            seen[key]["cpu"] = cpu
        except (OSError, IndexError, ValueError):  # gone between listing and reading
            continue


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", type=Path, help="write every process's row here")
    p.add_argument("pytest_args", nargs="*", help="pytest's arguments (after --)")
    args = p.parse_args(argv)
    if args.json is not None and not args.json.parent.is_dir():
        print(f"--json {args.json}: its folder does not exist; create it or name another",
              file=sys.stderr)
        return 2
    seen, t0, busy = {}, time.time(), machine_busy()
    suite = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              *args.pytest_args], cwd=ROOT)
    since = int(stat_fields(suite.pid)[19])  # the suite's start, on the clock of /proc
    try:
        while suite.poll() is None:
            sample(seen, since)
            time.sleep(0.5)
    except KeyboardInterrupt:  # Ctrl-C stops pytest too: report what ran until then
        suite.wait()
    wall, busy = time.time() - t0, machine_busy() - busy
    rows = list(seen.values())
    cpu, count = Counter(), Counter()
    for row in rows:
        row["kind"] = kind(row["command"])
        cpu[row["kind"]] += row["cpu"]
        count[row["kind"]] += 1
    print(f"\nsuite: exit {suite.returncode}, {wall:,.0f} s wall; the machine spent "
          f"{busy:,.0f} CPU-s meanwhile; {len(rows)} processes started, {sum(cpu.values()):,.0f} "
          "CPU-s of them seen")
    print(f"{'CPU-s':>8} {'share':>6} {'processes':>9}  kind")
    for name, seconds in cpu.most_common():
        print(f"{seconds:8,.0f} {seconds / max(busy, 1e-9):6.0%} {count[name]:9d}  {name}")
    if args.json is not None:
        args.json.write_text(json.dumps(sorted(rows, key=lambda r: -r["cpu"]), indent=1))
    return suite.returncode


if __name__ == "__main__":
    sys.exit(main())
