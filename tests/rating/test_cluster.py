"""Ray, for real: tournaments, evaluation and datasets as Ray tasks on a two-node cluster started
on this machine, population-based training on a local instance, and the one-line refusals."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from spacewar_ai.util.cluster import PATIENT_HEALTH_CHECKS, WORKER_NICENESS, connect
from tests.commands import cli
from tests.helpers import RAY_GROUP, ROOT

pytestmark = RAY_GROUP

ray = pytest.importorskip("ray")

STRATEGY = ROOT / "examples" / "strategies" / "aim_and_fire.py"


# Ray's token authentication, as its docs ask for a cluster: the same mode and token on every
# node and every client. A token of the test's own, so that none on this machine is used.
AUTH = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": uuid.uuid4().hex}


def _cli(*args, env=None, cwd=None, timeout=600):
    return cli(*args, timeout=timeout, cwd=cwd or ROOT,
               env={**os.environ, "SDL_VIDEODRIVER": "dummy", **AUTH, **(env or {})})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Ray's workers at the niceness of the commands that use them, as docs/scaling.md advises for
# a machine shared with other work: at Ray's default (15) a busy host starves them.
SHARED_MACHINE = {"RAY_worker_niceness": "0"}


def _ray_cli(*args, env=None):
    """`ray ARGS`, with Ray's health checks as patient as a command's own instance is; a node
    that a loaded host keeps from starting in Ray's time (GCS not yet answering) is stopped and
    started again, twice at most."""
    ray_bin = Path(sys.executable).with_name("ray")
    for _ in range(3):
        out = subprocess.run([str(ray_bin), *args], capture_output=True, text=True, timeout=300,
                             env={**os.environ, **AUTH, **SHARED_MACHINE,
                                  **PATIENT_HEALTH_CHECKS, **(env or {})})
        if args[0] != "start" or out.returncode == 0 or "Timed out" not in out.stderr:
            return out
        if "--head" in args:
            subprocess.run([str(ray_bin), "stop", "--force"], capture_output=True, timeout=300)
    return out


@pytest.fixture
def cluster(tmp_path_factory):
    """A head node and a second node on this machine, each with its own temp dir and one CPU;
    both stopped afterwards, whatever the test did."""
    port = _free_port()
    short = Path("/tmp") / f"sw{port}"  # Ray's socket paths must stay short
    dirs = [short / "head", short / "node"]
    started = []
    try:
        head = _ray_cli("start", "--head", "--port", str(port), "--num-cpus", "1",
                        "--temp-dir", str(dirs[0]), "--include-dashboard=false",
                        "--disable-usage-stats")
        assert head.returncode == 0, head.stderr[-2000:]
        started.append(dirs[0])
        node = _ray_cli("start", "--address", f"127.0.0.1:{port}", "--num-cpus", "1",
                        "--temp-dir", str(dirs[1]), "--disable-usage-stats")
        assert node.returncode == 0, node.stderr[-2000:]
        started.append(dirs[1])
        yield f"127.0.0.1:{port}", dirs[1]
    finally:
        # `ray stop` stops every Ray process of this user on the machine: the test's own nodes
        # are the only ones a test run starts.
        _ray_cli("stop", "--force")


@pytest.mark.slow
def test_tournament_on_a_two_node_cluster_equals_the_local_one(tmp_path, cluster):
    address, second = cluster
    # A relative path: Ray's workers run in folders of their own, and still find it.
    (tmp_path / "aim.py").write_text(STRATEGY.read_text())
    players = "heuristic:hard,heuristic:easy,random,strategy:aim.py"
    common = ["--tournament", "--players", players, "--matches-per-pairing", "12",
              "--seed", "5", "--quiet"]
    local = _cli(*common, "--checkpoint-dir", str(tmp_path / "a"), "--workers", "1",
                 cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    on_ray = _cli(*common, "--checkpoint-dir", str(tmp_path / "b"), "--ray-address", address,
                  cwd=tmp_path)
    assert on_ray.returncode == 0, on_ray.stderr
    folders = [tmp_path / line.split()[1].rsplit("/crosstable.md", 1)[0] for out in (local, on_ray)
               for line in out.stdout.splitlines() if line.startswith("wrote ")]
    assert len(folders) == 2
    tables = [(f / "crosstable.md").read_text() for f in folders]
    assert tables[0] == tables[1] and "aim" in tables[0]
    games = [(f / "games.jsonl").read_text() for f in folders]
    assert games[0] == games[1] and games[0].count("\n") == 6 * 12
    ratings = [json.loads((tmp_path / d / "ratings.json").read_text()) for d in ("a", "b")]
    assert ratings[0]["players"] == ratings[1]["players"]

    # The second node played some of the pairings: a worker there ran our tasks.
    logs = (second / "session_latest" / "logs").glob("worker-*.out")
    assert any(":task_name:_in_task" in f.read_text() for f in logs)


@pytest.mark.slow
def test_evaluation_and_datasets_on_ray_are_the_local_games(tmp_path, monkeypatch):
    from spacewar_ai.rating import match
    from spacewar_ai.rating.match import play_match, play_specs
    from spacewar_ai.training import datasets
    from spacewar_ai.training.datasets import generate, load
    from spacewar_ai.util.workers import Where

    os.environ["MINARI_DATASETS_PATH"] = str(tmp_path / "minari")
    # Tasks of 2 pairs, chunks of 6 games: the splits, in few games.
    monkeypatch.setattr(match, "PART_STARTS", 2)
    monkeypatch.setattr(datasets, "BATCH", 6)
    # Started as a command starts its own instance: workers at the test's niceness, and a node
    # slow to start on a loaded host tried again.
    monkeypatch.setenv(WORKER_NICENESS, "0")
    connect(num_cpus=2)
    try:
        # 11 games: three Ray tasks (2 and 2 pairs, then a pair and the odd last start),
        # merged back into one match.
        here = play_match("pretrained", "heuristic:easy", 11, 7, keep_actions=3)
        there = play_specs("pretrained", "heuristic:easy", 11, 7, where=Where("ray"),
                           keep_actions=3)
        assert [g.to_dict() for g in here.games] == [g.to_dict() for g in there.games]
        assert sum(g.actions is not None for g in there.games) == 3
        # A pilot that learns across the match's games plays it whole, in one task.
        here = play_match("adapt:pretrained", "heuristic:easy", 6, 2)
        there = play_specs("adapt:pretrained", "heuristic:easy", 6, 2, where=Where("ray"))
        assert [g.to_dict() for g in here.games] == [g.to_dict() for g in there.games]

        generate([("heuristic:hard", "random")], 12, "test/local-v0", seed=3, quiet=True)
        generate([("heuristic:hard", "random")], 12, "test/ray-v0", seed=3, quiet=True,
                 where=Where("ray"))
        (a, _), (b, _) = load("test/local-v0"), load("test/ray-v0")
        assert a.total_steps == b.total_steps > 0
        assert ((a.storage.data_path.parent / "games.jsonl").read_text()
                == (b.storage.data_path.parent / "games.jsonl").read_text())
        for x, y in zip(a.iterate_episodes(), b.iterate_episodes()):
            assert (x.observations == y.observations).all() and (x.actions == y.actions).all()
    finally:
        ray.shutdown()
        os.environ.pop("MINARI_DATASETS_PATH")


@pytest.mark.slow
def test_a_node_without_a_players_file_plays_from_a_copy(tmp_path, monkeypatch):
    """What a node of a real cluster does when the checkpoint or strategy file is only on the
    machine that started the tournament: it plays from a copy out of Ray's object store."""
    import hashlib

    from spacewar_ai.rating.match import play_match
    from spacewar_ai.util.cluster import local_copy

    data = STRATEGY.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    monkeypatch.setenv(WORKER_NICENESS, "0")
    connect(num_cpus=1)
    try:
        ref = ray.put(data)
        assert local_copy(STRATEGY, sha, ref) == STRATEGY  # the node holds it: no copy
        elsewhere = tmp_path / "home" / "strategies" / "aim_and_fire.py"
        copy = local_copy(elsewhere, sha, ref)
        assert not elsewhere.exists() and copy.read_bytes() == data
        assert copy.parts[-2:] == elsewhere.parts[-2:]  # labelled as the original
        elsewhere.parent.mkdir(parents=True)
        elsewhere.write_text("# another file at that path\n")
        assert local_copy(elsewhere, sha, ref) == copy
        assert elsewhere.read_text() == "# another file at that path\n"
    finally:
        ray.shutdown()
    here = play_match(f"strategy:{STRATEGY}", "heuristic:easy", 4, 1)
    there = play_match(f"strategy:{copy}", "heuristic:easy", 4, 1)
    assert [g.to_dict() for g in here.games] == [g.to_dict() for g in there.games]


def test_bad_address_is_one_line(tmp_path):
    out = _cli("--tournament", "--players", "random,idle", "--matches-per-pairing", "2",
               "--ray-address", f"127.0.0.1:{_free_port()}", "--checkpoint-dir", str(tmp_path),
               cwd=tmp_path, timeout=300)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "--ray-address 127.0.0.1:" in out.stderr
    assert "ray start --head" in out.stderr


def test_missing_ray_is_one_line_naming_the_extra(tmp_path):
    shadow = tmp_path / "shadow" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    for mode in (["--tournament", "--players", "random,idle", "--backend", "ray"],
                 ["--pbt", "--population", "2"]):
        # A process of its own: the shadowing folder goes on sys.path as Python starts.
        out = subprocess.run([sys.executable, "-m", "spacewar_ai", *mode, "--checkpoint-dir",
                              str(tmp_path)], capture_output=True, text=True, timeout=300,
                             cwd=tmp_path, env={**os.environ, **AUTH,
                                                "PYTHONPATH": str(tmp_path / "shadow")})
        assert out.returncode == 2, out.stderr
        assert out.stderr.count("\n") == 1 and '".[cluster]"' in out.stderr


@pytest.mark.slow
def test_a_node_without_the_package_or_the_token_is_one_line(tmp_path):
    """A cluster whose node cannot import spacewar_ai (here: a head started with a stand-in
    that fails to import, and the driver in a folder without the package, which Ray would
    otherwise lend its workers) is named, with what to install there."""
    shadow = tmp_path / "shadow" / "spacewar_ai"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named spacewar_ai')\n")
    port = _free_port()
    try:
        head = _ray_cli("start", "--head", "--port", str(port), "--num-cpus", "1",
                        "--temp-dir", f"/tmp/sw{port}", "--include-dashboard=false",
                        "--disable-usage-stats", env={"PYTHONPATH": str(tmp_path / "shadow")})
        assert head.returncode == 0, head.stderr[-2000:]
        command = ["--tournament", "--players", "random,idle", "--matches-per-pairing", "2",
                   "--ray-address", f"127.0.0.1:{port}", "--checkpoint-dir", str(tmp_path)]
        stranger = _cli(*command, cwd=tmp_path, env={"RAY_AUTH_TOKEN": uuid.uuid4().hex})
        out = _cli(*command, cwd=tmp_path)
    finally:
        _ray_cli("stop", "--force")
    # A machine without the cluster's token is told what to set, and nothing of the token.
    assert stranger.returncode == 2 and stranger.stderr.count("\n") == 1, stranger.stderr
    assert "RAY_AUTH_TOKEN" in stranger.stderr and AUTH["RAY_AUTH_TOKEN"] not in stranger.stderr
    assert out.returncode == 2, out.stderr[-3000:]
    assert out.stderr.count("\n") == 1 and "cannot import spacewar_ai" in out.stderr
    assert '".[cluster]"' in out.stderr


def test_ray_flags_are_checked_before_anything_runs(tmp_path):
    for args, culprit in (
            (["--tournament", "--players", "random,idle", "--backend", "ray", "--workers", "2"],
             "--workers"),
            (["--evaluate", "--checkpoint", "random", "--backend", "local", "--ray-address",
              "127.0.0.1:1"], "--backend local"),
            (["--demo", "--backend", "ray"], "--backend"),
            (["--pbt", "--population", "1"], "--population")):
        out = _cli(*args, "--checkpoint-dir", str(tmp_path), cwd=tmp_path)
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        assert culprit in out.stderr


@pytest.mark.slow
def test_the_ray_instance_a_command_starts_runs_its_workers_as_the_command_runs():
    """Ray's default niceness (15) starves its workers beside any other work on the machine;
    the instance started for a command gives them the command's own."""
    from spacewar_ai.util.cluster import connect

    ray_module = connect(None)
    try:
        niceness = ray_module.get(ray_module.remote(num_cpus=1)(_niceness).remote())
    finally:
        ray_module.shutdown()
    assert niceness == _niceness()


def _niceness() -> int:
    return os.nice(0)


def test_a_local_node_slow_to_start_is_started_again(monkeypatch):
    """Ray gives a new node a fixed 30 s to register, which a loaded host can miss: the command
    starts it again rather than failing, and says in one line when every try timed out."""
    from spacewar_ai.util import cluster

    tries = []

    class SlowRay:
        def init(self, **kwargs):
            tries.append(kwargs["num_cpus"])
            if tries.count(1) < 3:
                raise Exception("The current node timed out during startup. This could happen")

        def shutdown(self):
            tries.append("shutdown")

    cluster._start_local(SlowRay(), 1)
    assert tries == [1, "shutdown", 1, "shutdown", 1]
    tries.clear()
    monkeypatch.setattr(cluster, "LOCAL_STARTS", 2)
    with pytest.raises(ValueError, match="did not start in 2 tries"):
        cluster._start_local(SlowRay(), 1)
