"""Where work runs (util/workers.py): chosen once from the flags, the same games wherever they
are played, and no other module deciding it again."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import threading

import pytest

from spacewar_ai.rating import match
from spacewar_ai.rating.match import play_match, play_specs
from spacewar_ai.util.errors import UserError
from spacewar_ai.util.workers import Where, submit
from tests.helpers import ROOT

PACKAGE = ROOT / "spacewar_ai"
TOOLKIT = {"util/workers.py", "util/cluster.py"}
# Ray is the work itself here, not a place to run it: Ray Tune's population, and the benchmark
# that measures Ray's own round trips.
RAY_ITSELF = {"training/population/pbt.py", "bench/throughput.py"}
BACKEND_NAMES = {"backend", "rollout_backend", "ray_address"}
BACKEND_VALUES = {"ray", "inline", "local"}


def _backend_read(x: ast.AST) -> str | None:
    """The backend's name an expression reads, unless it is a flag read at the door (args.X)."""
    if isinstance(x, ast.Name) and x.id in BACKEND_NAMES:
        return x.id
    if isinstance(x, ast.Attribute) and x.attr in BACKEND_NAMES and not (
            isinstance(x.value, ast.Name) and x.value.id == "args"):
        return x.attr
    return None


def _choices_of_where(path) -> list[tuple[int, str]]:
    """The lines of a module that decide where work runs: a comparison with a backend's value,
    a comparison or test of a backend's name, or Ray (or util.cluster) imported."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        operands = []
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, (ast.If, ast.IfExp, ast.While)):
            test = node.test.operand if isinstance(node.test, ast.UnaryOp) else node.test
            operands = test.values if isinstance(test, ast.BoolOp) else [test]
        for x in operands:
            if isinstance(x, ast.Constant) and x.value in BACKEND_VALUES:
                found.append((node.lineno, f"compares with {x.value!r}"))
            elif _backend_read(x):
                found.append((node.lineno, f"tests {_backend_read(x)}"))
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if any(m.split(".")[0] == "ray" or m.endswith("util.cluster") for m in modules):
            found.append((node.lineno, "reaches Ray"))
    return sorted(found)


def test_no_module_outside_the_workers_toolkit_decides_where_work_runs():
    """Rollouts, tournaments, matches, the arena, datasets and the benchmarks hand a `Where` to
    util.workers; none of them branches on the backend or reaches Ray itself."""
    decided = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(PACKAGE))
        if name in TOOLKIT or "pretrained" in path.parts:
            continue
        found = [x for x in _choices_of_where(path)
                 if not (name in RAY_ITSELF and x[1] == "reaches Ray")]
        if found:
            decided[name] = found
    assert decided == {}


def test_the_check_finds_a_branch_on_the_backend(tmp_path):
    """What the test above forbids, written as a room would write it, is found."""
    room = tmp_path / "room.py"
    room.write_text("def run(where, ray_address):\n"
                    "    if where.backend == 'ray':\n        pass\n"
                    "    if ray_address is not None:\n        pass\n"
                    "    from ..util.cluster import connect\n")
    assert _choices_of_where(room) == [(2, "compares with 'ray'"), (2, "tests backend"),
                                       (4, "tests ray_address"), (6, "reaches Ray")]


def test_the_flags_become_one_value_and_their_conflicts_one_line():
    assert Where.from_flags(None, None) == Where("local", 1)
    assert Where.from_flags(None, None, None, 4) == Where("local", 4)
    assert Where.from_flags("local", None, 2, 4) == Where("local", 2)
    assert Where.from_flags("ray", None) == Where("ray")
    assert Where.from_flags(None, "10.0.0.1:6379") == Where("ray", address="10.0.0.1:6379")
    with pytest.raises(UserError, match="^--ray-address joins a Ray cluster and --backend "
                                        "local plays here: drop one$"):
        Where.from_flags("local", "10.0.0.1:6379")
    with pytest.raises(UserError, match="drop --workers$"):
        Where.from_flags("ray", None, 2)
    with pytest.raises(UserError, match="^--render draws here: drop --backend ray and "
                                        "--ray-address$"):
        Where("ray").only_here("--render draws here")
    Where("local", 3).only_here("--render draws here")  # here anyway: nothing to refuse
    with pytest.raises(UserError, match="^backend 'mars': choose one of local, inline, ray$"):
        Where("mars")


def test_a_count_is_split_into_parts_only_where_jobs_leave_this_process():
    assert Where().parts(7, 3) == Where("local", 1).parts(7, 3) == [(0, 7)]
    assert Where("local", 2).parts(7, 3) == Where("ray").parts(7, 3) == [(0, 3), (3, 3),
                                                                          (6, 1)]


def test_a_match_spread_over_processes_is_the_match_played_here(monkeypatch):
    """An odd count in parts of two starts, over two processes: play_match's games, in its
    order, the kept games among them."""
    monkeypatch.setattr(match, "PART_STARTS", 2)
    here = play_match("heuristic:hard", "heuristic:medium", 9, 4, keep_actions=3)
    spread = play_specs("heuristic:hard", "heuristic:medium", 9, 4, where=Where("local", 2),
                        keep_actions=3)
    assert [g.to_dict() for g in spread.games] == [g.to_dict() for g in here.games]
    assert sum(g.actions is not None for g in spread.games) == 3


def test_a_submitted_job_runs_off_the_callers_thread_and_its_error_comes_back():
    callers = []

    def job(x):
        callers.append(threading.current_thread())
        if x < 0:
            raise ValueError("negative")
        return 2 * x

    assert submit(job, 21, Where("local")).result(timeout=60) == 42
    assert callers[0] is not threading.current_thread()
    with pytest.raises(ValueError, match="negative"):
        submit(job, -1, Where()).result(timeout=60)


def test_a_process_a_submitted_job_starts_outlives_the_job(tmp_path):
    """A job begun by `submit` that starts a confined process (an arena pairing) starts the
    fork server on its first run; the server outlives the job and serves the jobs after it,
    although the kernel ties it to the thread that started it. In a fresh interpreter, where no
    fork server runs yet: every job's process comes from the same server."""
    program = (
        "import os, sys, time\n"
        "from spacewar_ai.util.processes import worker_context\n"
        "from spacewar_ai.util.workers import Where, submit\n"
        "def write_parent(path):\n"
        "    open(path, 'w').write(str(os.getppid()))\n"
        "def job(path):\n"
        "    p = worker_context([]).Process(target=write_parent, args=(path,))\n"
        "    p.start()\n"
        "    p.join()\n"
        "    return open(path).read()\n"
        "if __name__ == '__main__':\n"
        "    servers = []\n"
        "    for k in range(3):\n"
        "        path = os.path.join(sys.argv[1], str(k))\n"
        "        servers.append(submit(job, path, Where('local')).result(timeout=300))\n"
        "        time.sleep(1)  # time for a server tied to an ended thread to be killed\n"
        "    print(len(set(servers)))\n")
    script = tmp_path / "submitted_jobs.py"
    script.write_text(program)
    out = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                         text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
