"""Tournaments: paired games, modes, determinism across workers, the report and the CLI."""

import json
from pathlib import Path

import pytest

from spacewar_ai.rating.ratings import standings
from spacewar_ai.rating.tournament import crosstable_markdown, play_round_robin, resolve_entrants
from spacewar_ai.util.workers import Where
from tests.commands import cli
from tests.helpers import ROOT


def test_every_spec_resolves_and_bad_ones_are_named(tmp_path):
    entrants = resolve_entrants(["idle", "random", "heuristic:easy", "heuristic:medium",
                                 "heuristic:hard", "pretrained"])
    assert [e.name for e in entrants][-1] == "pretrained"
    with pytest.raises(ValueError, match="'nonsense'"):
        resolve_entrants(["idle", "nonsense"])
    with pytest.raises(ValueError, match="twice"):
        resolve_entrants(["idle", "idle"])


EXAMPLE_STRATEGY = ROOT / "examples" / "strategies" / "aim_and_fire.py"


@pytest.mark.slow
def test_round_robin_pairs_swap_sides_and_is_identical_with_1_or_2_workers():
    # A sandboxed strategy file takes part too: its child process must not change the results.
    entrants = resolve_entrants(["random", "heuristic:hard", f"strategy:{EXAMPLE_STRATEGY}"])
    one = play_round_robin(entrants, 10, seed=5)
    two = play_round_robin(entrants, 10, seed=5, where=Where("local", 2))
    assert len(one.matches) == 3
    assert {e.name for e in entrants} >= {"strategy:aim_and_fire.py"}
    for (i, j, a), (k, l, b) in zip(one.matches, two.matches):
        assert (i, j) == (k, l)
        assert [g.a_side for g in a.games] == [0] * 5 + [1] * 5
        assert [g.seed for g in a.games[:5]] == [g.seed for g in a.games[5:]]
        assert [(g.winner, g.real_winner, g.frames) for g in a.games] == \
               [(g.winner, g.real_winner, g.frames) for g in b.games]
    rows = standings(one)
    assert rows[-1]["name"] == "random"
    table = crosstable_markdown(one, rows)
    assert table.count("\n") == 4 and rows[0]["name"] in table.splitlines()[2]


@pytest.mark.slow
def test_cli_tournament_writes_crosstable_standings_and_ratings(tmp_path):
    ratings = tmp_path / "ratings.json"
    out = cli("--tournament", "--players", "random,heuristic:easy,heuristic:hard",
              "--matches-per-pairing", "6", "--ratings-file", ratings, "--workers", "1",
              "--save-replays", "2", cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "18 games" in out.stdout and "| 1 | heuristic:hard |" in out.stdout
    assert list((tmp_path / "runs" / "tournaments").glob("*/crosstable.md"))
    import pygame

    png = next((tmp_path / "runs" / "tournaments").glob("*/ratings.png"))
    assert pygame.image.load(str(png)).get_height() == 60 + 34 * 3
    data = json.loads(ratings.read_text())
    assert len(data["players"]) == 3 and len(data["history"]) == 1
    # Two replays per pairing (one per side), each replaying to its recorded final state.
    from spacewar_ai.game.replays import load_replay, replay_game

    replays = sorted((tmp_path / "runs" / "tournaments").glob("*/replays/*.json"))
    assert len(replays) == 6
    for path in replays:
        replay_game(load_replay(path))
    bad = cli("--tournament", "idle,ppo:/no/such.pt", cwd=tmp_path, timeout=120)
    assert bad.returncode == 2 and "ppo:/no/such.pt" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_swiss_pairs_by_score_without_repeats():
    from spacewar_ai.rating.tournament import play_swiss

    entrants = resolve_entrants(["idle", "random", "heuristic:easy", "heuristic:medium",
                                 "heuristic:hard"])
    result = play_swiss(entrants, 4, seed=3)
    pairs = [(i, j) for i, j, _ in result.matches]
    assert len(pairs) == len(set(pairs)), "no pair meets twice"
    assert len(pairs) == 2 * 4  # 4 rounds (ceil(log2 5) + 1), 2 games each, one player sits out
    assert standings(result)[0]["name"] in ("heuristic:hard", "heuristic:medium")


def test_elimination_follows_the_seeded_bracket():
    from spacewar_ai.rating.tournament import play_elimination

    specs = ["idle", "random", "heuristic:easy", "heuristic:hard", "heuristic:medium"]
    entrants = resolve_entrants(specs)
    seeding = [1000, 1100, 1300, 1700, 1500]  # hard first, then medium, easy, random, idle
    result = play_elimination(entrants, 4, seed=0, seeding=seeding)
    first = {(entrants[i].name, entrants[j].name) for i, j, _ in result.matches[:1]}
    # 5 players in a bracket of 8: seeds 1-3 get byes, seed 4 (random) meets seed 5 (idle).
    assert first == {("idle", "random")}
    assert len(result.matches) == 4  # n - 1 matches decide a single-elimination event
    final = result.matches[-1]
    assert {entrants[final[0]].name, entrants[final[1]].name} == {"heuristic:hard",
                                                                    "heuristic:medium"}


@pytest.mark.slow
def test_cli_evaluation_adds_to_the_ratings_file(tmp_path):
    ratings = tmp_path / "ratings.json"
    out = cli("--evaluate", "--checkpoint", "pretrained", "--opponent", "heuristic:easy",
              "--eval-episodes", "10", "--ratings-file", ratings, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    data = json.loads(ratings.read_text())
    assert {p["name"] for p in data["players"].values()} == {"pretrained", "heuristic:easy"}
    assert data["history"][0]["label"] == "evaluation"


def test_players_never_share_a_name(tmp_path):
    """Every run's best.pt is called best.pt: names carry as much of the path as tells them
    apart, in the crosstable, the deaths table and the ratings file alike."""
    import shutil

    from spacewar_ai.pilots.build import PRETRAINED_PATH

    paths = []
    for parent in ("x/run", "y/run", "z/other"):
        path = tmp_path / parent / "best.pt"
        path.parent.mkdir(parents=True)
        shutil.copy(PRETRAINED_PATH, path)
        with open(path, "ab") as f:  # a different file, so a different identity
            f.write(parent.encode())
        paths.append(path)
    with pytest.raises(ValueError, match="appears twice"):
        resolve_entrants([str(paths[0]), str(paths[0])])
    names = [e.name for e in resolve_entrants([str(p) for p in paths] + ["pretrained"])]
    assert len(set(names)) == 4, names
    assert names[2] == "ppo:other/best.pt" and names[0].endswith("x/run/best.pt")


def _session_members(sid: int) -> list[int]:
    """Processes of a session (a run started in a session of its own, and all it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("when", ["importing", "playing"])
def test_a_killed_tournament_leaves_no_process_behind(tmp_path, when):
    """SIGKILL, which no Python code can catch, of a tournament with two workers and a sandboxed
    strategy busy in C code (a factorial at every decision, within its budget), either as soon
    as its processes exist (the workers' fork server still importing torch) or once the strategy
    plays: its workers, their sandbox children, the fork server and multiprocessing's other
    helpers all end at once (util/processes.py)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    busy = tmp_path / "busy.py"
    busy.write_text("import math\ndef strategy(obs):\n    return math.factorial(20000) % 2\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "spacewar_ai", "--tournament", "--players",
         f"heuristic:easy,random,idle,strategy:{busy}", "--matches-per-pairing", "4",
         "--workers", "2", "--ratings-file", str(tmp_path / "r.json")],
        cwd=tmp_path, start_new_session=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    def sandboxed():
        return [p for p in _session_members(proc.pid)
                if b"sandbox_child" in Path(f"/proc/{p}/cmdline").read_bytes()]

    deadline = time.time() + 60
    if when == "importing":
        while len(_session_members(proc.pid)) < 3 and time.time() < deadline:
            time.sleep(0.02)
        assert not sandboxed()  # no worker has got as far as playing
    else:
        while not sandboxed() and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)  # the child now spends its time inside factorial()
        assert sandboxed() and len(_session_members(proc.pid)) >= 4
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 2
    while _session_members(proc.pid) and time.time() < deadline:
        time.sleep(0.1)
    survivors = _session_members(proc.pid)
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert survivors == []


def test_the_default_field_is_said_and_leaves_out_toy_runs(tmp_path, monkeypatch, capsys):
    from spacewar_ai.agents.ppo import PPOAgent
    from spacewar_ai.config import PPOConfig
    from spacewar_ai.main import main

    monkeypatch.chdir(tmp_path)
    PPOAgent(36, 6, PPOConfig(hidden_sizes=(8,))).save(
        tmp_path / "checkpoints" / "toy" / "best.pt",
        {"counters": {"best_eval": 0.9, "global_step": 16_384, "best_eval_games": 100}})
    assert main(["--tournament", "--matches-per-pairing", "2", "--workers", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    field = next(line for line in out.splitlines() if line.startswith("players (no --players"))
    specs = field.split(": ")[-1].split(",")
    assert specs[0] == "pretrained" and "heuristic:hard" in specs and "idle" in specs
    assert not any("toy" in s for s in specs)
    assert "ppo_spacewar.pt" not in out  # the shipped model goes by its spec's name


def test_an_arenas_players_play_a_tournament(tmp_path, monkeypatch, capsys):
    from spacewar_ai.main import main
    from spacewar_ai.rating.arena import HOUSE, Arena

    monkeypatch.chdir(tmp_path)
    arena = Arena(tmp_path / "runs" / "arena")
    arena.submit("spinner", "spin.py", b"def strategy(obs):\n    return 1\n", "1.2.3.4", 5)
    assert main(["--tournament", "--players", "arena:runs/arena/arena.db,idle",
                 "--matches-per-pairing", "2", "--workers", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert all(h in out for h in HOUSE) and "strategy:" in out and "idle" in out
    with pytest.raises(SystemExit):
        main(["--tournament", "--players", "arena:nowhere/arena.db"])
    assert "no arena database there" in capsys.readouterr().err
