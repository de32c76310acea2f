"""The files the browser app may read: all in the project, and of the kind a spec says."""

import pytest

from spacewar_ai.web.files import Files
from tests.helpers import ROOT


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / "runs" / "replays").mkdir(parents=True)
    (root / "runs" / "replays" / "a.json").write_text("{}")
    (root / "checkpoints" / "run-1").mkdir(parents=True)
    (root / "checkpoints" / "run-1" / "best.pt").write_bytes(b"")
    (root / "openai.key.txt").write_text("sk-not-a-real-key\n")
    strategy = (ROOT / "examples" / "strategies" / "aim_and_fire.py").read_text()
    (root / "aim.py").write_text(strategy)
    (tmp_path / "outside.py").write_text(strategy)  # beside the project, not in it
    return Files(root)


def test_only_the_projects_own_files_and_of_the_kind_a_spec_says(project):
    assert project.inside("runs/replays/a.json") == project.root / "runs" / "replays" / "a.json"
    with pytest.raises(ValueError, match="outside this project"):
        project.inside("../elsewhere.json")
    with pytest.raises(ValueError, match="outside this project"):
        project.check_spec("strategy:../outside.py")
    with pytest.raises(ValueError, match="passwd: a strategy file ends in .py"):
        project.check_spec("strategy:/etc/passwd")
    with pytest.raises(ValueError, match="openai.key.txt: a strategy file ends in .py"):
        project.check_spec("strategy:openai.key.txt")
    with pytest.raises(ValueError, match="a checkpoint file ends in .pt"):
        project.check_spec("openai.key.txt")
    assert project.check_spec("strategy:aim.py") == f"strategy:{project.root / 'aim.py'}"
    assert project.check_spec("heuristic:hard") == "heuristic:hard"
    assert [r["path"] for r in project.replays()] == ["runs/replays/a.json"]
    assert "checkpoints/run-1/best.pt" in project.pilots()
    assert "search:pretrained" in project.pilots()
    assert "search:heuristic:hard+heuristic:hard" in project.pilots()  # the planner over rules
    assert project.check_spec("search:heuristic:hard+heuristic:hard@samples=4") == \
        "search:heuristic:hard+heuristic:hard@samples=4"
    # A planner's settings do not hide a file from the checks its parts get.
    with pytest.raises(ValueError, match="a checkpoint file ends in .pt"):
        project.check_spec("search:pretrained+openai.key.txt@samples=2")
    (project.root.parent / "elsewhere.pt").write_bytes(b"not the project's")
    with pytest.raises(ValueError, match="elsewhere.pt: outside this project"):
        project.check_spec("search:pretrained+../elsewhere.pt@samples=2")


def test_the_pilot_list_offers_the_shipped_lms_in_bfloat16_where_they_can_fly(project):
    import importlib.util

    from spacewar_ai.lm.models import LMError, smollm2_file

    try:
        smollm2_file()
        flies = importlib.util.find_spec("transformers") is not None
    except LMError:
        flies = False
    lms = [p for p in project.pilots() if p.startswith("lm:")]
    assert lms == (["lm:dagger@bf16", "lm:grpo@bf16", "lm:sft@bf16"] if flies else [])
    assert all(project.check_spec(spec).endswith("@bf16") for spec in lms)  # the games take them


def test_an_onnx_spec_is_checked_as_the_arena_checks_an_upload(project):
    pytest.importorskip("onnx")
    from tests import hostile_onnx as hostile

    hostile.custom_op(project.root / "evil.onnx")
    with pytest.raises(ValueError, match="^evil.onnx: it imports the operator domain 'com.evil'"):
        project.check_spec("onnx:evil.onnx")
    hostile.plain(project.root / "plain.onnx")
    assert project.check_spec("onnx:plain.onnx") == f"onnx:{project.root / 'plain.onnx'}"


def test_the_replays_listed_are_the_newest_of_many_and_a_scan_serves_a_while(tmp_path):
    """Thousands of saved games: the list holds the newest REPLAYS_LISTED of every folder,
    newest first, without links; requests close together share one scan, made in a thread."""
    import asyncio
    import os

    from spacewar_ai.web.files import REPLAYS_LISTED, Listing

    root = tmp_path / "p"
    folders = [root / "runs" / "live" / "replays", root / "runs" / "replays",
               root / "runs" / "tournaments" / "t1" / "replays"]
    for folder in folders:
        folder.mkdir(parents=True)
    for k in range(3 * REPLAYS_LISTED):
        path = folders[k % 3] / f"{k:05d}.json"
        path.write_text("{}")
        os.utime(path, ns=(k * 10**6, k * 10**6))
    (folders[1] / "link.json").symlink_to(tmp_path / "elsewhere.json")
    files = Files(root)
    listed = files.replays()
    newest = 3 * REPLAYS_LISTED - 1
    assert [r["name"] for r in listed] == [f"{k:05d}.json" for k in
                                           range(newest, newest - REPLAYS_LISTED, -1)]
    assert listed[0]["path"] == str((folders[newest % 3] / f"{newest:05d}.json").relative_to(root))

    scans = []
    original = files.replays
    files.replays = lambda: scans.append(1) or original()

    async def three():
        shared = Listing(files.replays)
        return await asyncio.gather(*(shared.get() for _ in range(3)))

    first, second, third = asyncio.run(three())
    assert first == second == third == listed and scans == [1]

    async def stale():
        """A stale list is served at once while the next scan runs behind it."""
        shared = Listing(files.replays)
        old = await shared.get()
        (folders[0] / "99999.json").write_text("{}")
        shared.at -= 60  # as if the scan were a minute old
        served = await shared.get()
        await shared.scan
        return old, served, await shared.get()

    old, served, fresh = asyncio.run(stale())
    assert served == old and fresh[0]["name"] == "99999.json"


def test_a_tournament_of_100000_saved_games_lists_in_bounded_bytes(tmp_path):
    """A tournament folder of 100,000 saved games beside 60 others: the Tournaments page lists
    the newest TOURNAMENTS_LISTED, each with how many games it saved and only the first
    TOURNAMENT_REPLAYS of them, so the answer's size does not grow with the files; an
    oversized standings file is passed over, not read whole."""
    import json

    from spacewar_ai.web.files import TOURNAMENT_REPLAYS, TOURNAMENTS_LISTED

    root = tmp_path / "p"
    folder = root / "runs" / "tournaments"
    for k in range(TOURNAMENTS_LISTED + 10):
        (folder / f"2026120{k // 10}-{k:06d}").mkdir(parents=True)
        (folder / f"2026120{k // 10}-{k:06d}" / "standings.json").write_text(
            json.dumps([{"name": f"p{k}", "rating": 1000}]))
    big = folder / "20261209-999999"
    (big / "replays").mkdir(parents=True)
    (big / "standings.json").write_text("[]")
    for k in range(100_000):
        (big / "replays" / f"{k:06d}.json").touch()
    (folder / "20261209-999998").mkdir()
    (folder / "20261209-999998" / "standings.json").write_text(" " * (2**20 + 1))
    page = Files(root).tournaments()
    names = [t["name"] for t in page]
    assert names[0] == "20261209-999999" and "20261209-999998" not in names
    assert len(names) == TOURNAMENTS_LISTED - 1  # the newest, less the unreadable one
    first = page[0]
    assert first["saved"] == 100_000 and first["replays"] == [
        f"runs/tournaments/20261209-999999/replays/{k:06d}.json"
        for k in range(TOURNAMENT_REPLAYS)]
    assert len(json.dumps(page)) < 100_000


@pytest.mark.slow
def test_the_pilot_and_replay_lists_stay_bounded_over_100000_files(tmp_path):
    """A checkpoint folder of 100,000 runs and a replay folder of 100,000 games: the pages'
    lists offer the first RUNS_LISTED runs by name and the newest REPLAYS_LISTED games, so an
    answer's size does not grow with what is on disk (both scans run off the event loop,
    Listing)."""
    from spacewar_ai.web.files import REPLAYS_LISTED, RUNS_LISTED

    root = tmp_path / "p"
    runs = root / "checkpoints"
    for k in range(100_000):
        (runs / f"run-{k:06d}").mkdir(parents=True)
    for k in (5, 99_999, *range(200, 300)):
        (runs / f"run-{k:06d}" / "best.pt").touch()
    replays = root / "runs" / "replays"
    replays.mkdir(parents=True)
    for k in range(100_000):  # the last written is the newest
        (replays / f"{k:06d}.json").touch()
    files = Files(root)
    offered = [p for p in files.pilots() if p.startswith("checkpoints/")]
    assert offered == [f"checkpoints/run-{k:06d}/best.pt" for k in (5, *range(200, 200 +
                                                                                RUNS_LISTED - 1))]
    listed = files.replays()
    assert len(listed) == REPLAYS_LISTED and listed[0]["name"] == "099999.json"
