"""Rollout workers (training/rollouts.py): PPO's games played away from the learner, in this
process, in child processes, or as Ray actors on a local instance and on a two-node cluster the
tests start, with the league, the opponent model, TensorBoard, resume both ways, a killed
worker, a killed learner, the default that plays ahead on two cores, and refusals."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from spacewar_ai.agents.checkpoints import load_checkpoint
from spacewar_ai.config import GameConfig, LeagueConfig
from spacewar_ai.training.online.trainer import Trainer
from spacewar_ai.util.workers import Where
from tests.commands import cli
from tests.helpers import RAY_GROUP, tiny_run


def test_play_steps_fills_the_buffer_and_returns_what_was_played():
    """One rollout as data: the buffer full, the finished games (one per ended game of the
    buffer), the watched pilot's moves, and the results recorded by the learner's own league
    but not by a worker's copy of it (its learner records them)."""
    import numpy as np

    from spacewar_ai.agents.ppo import PPOAgent
    from spacewar_ai.config import PPOConfig
    from spacewar_ai.game.environment import SpacewarVectorEnv
    from spacewar_ai.training.online.league import League
    from spacewar_ai.training.online.rollouts import play_steps

    game = GameConfig(max_episode_steps=80)  # 20 decisions a game: several end in a rollout
    agent = PPOAgent(36, 6, PPOConfig(n_steps=50, hidden_sizes=(16,)), game=game)
    env = SpacewarVectorEnv(4, game, opponent=None, count_dodges=True)
    league = League(LeagueConfig(curriculum=("heuristic:easy",), scripted_share=1.0), game, 4)
    obs, _ = env.reset_both(seed=1)
    league.assign()
    league.reset_pilots(np.ones(4, bool), env.batch.rng.copy())
    buffer = agent.new_buffer(4)
    obs, played = play_steps(agent, league, env, obs, buffer, 0.0, watch="heuristic:easy")
    assert buffer.full and played.decisions == 200 and obs.shape == (4, 2, 36)
    assert len(played.keys) == len(played.scores) == int(buffer.dones.sum()) >= 8
    assert set(played.keys) == {"heuristic:easy"} and played.watched["rows"].all()
    assert len(league.results["heuristic:easy"]) == len(played.keys)
    league.follow(league.view(), {})  # a worker's replica: it draws, its learner records
    buffer.arrays()
    _, again = play_steps(agent, league, env, obs, buffer, 0.0)
    assert len(again.keys) >= 8 and again.watched is None
    assert len(league.results["heuristic:easy"]) == len(played.keys)


def _weights(path) -> dict[str, torch.Tensor]:
    return load_checkpoint(path)["agent"]["net"]


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _run(tmp_path, name, backend="inline", **train):
    cfg = tiny_run(tmp_path, run_name=name, **train)
    return Trainer(cfg, quiet=True, where=Where(backend)).run(), cfg


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_a_worker_plays_the_policy_as_its_learner_plays_it(tmp_path, precision):
    """A rollout worker given the learner's weights decides as the learner itself would in
    step, at the run's precision: one policy plays, wherever its games run."""
    from spacewar_ai.training.online.rollouts import RolloutWorker

    cfg = tiny_run(tmp_path, precision=precision)
    learner = Trainer(cfg, quiet=True, where=Where("inline")).agent
    worker = RolloutWorker(cfg, 0, 4, 0)
    worker.agent.load_state_dict(learner.play_state())
    obs = worker.obs[:, 0]
    assert torch.equal(worker.agent.decide(obs).logp_all, learner.decide(obs).logp_all)
    assert learner.learn_dtype == getattr(torch, precision)


def test_workers_in_this_process_train_with_the_league_and_repeat_bit_for_bit(tmp_path):
    """Three workers (16 games split 6, 5, 5) train a run to its end with snapshots joining and
    leaving the pool every update; the same seed gives the same weights, and TensorBoard holds
    each worker's throughput and a policy lag of 0 (every rollout from the current weights)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out, cfg = _run(tmp_path, "w3", rollout_workers=3)
    again, _ = _run(tmp_path, "w3-again", rollout_workers=3)
    assert out["global_step"] == cfg.train.total_timesteps and out["updates"] == 3
    first = _weights(Path(out["run_dir"]) / "latest.pt")
    assert _same(first, _weights(Path(again["run_dir"]) / "latest.pt"))
    ea = EventAccumulator(out["log_dir"])
    ea.Reload()
    tags = set(ea.Tags()["scalars"])
    for k in range(3):
        assert [e.value > 0 for e in ea.Scalars(f"workers/decisions_per_second/{k}")] == \
            [True] * 3
    assert [e.value for e in ea.Scalars("workers/policy_lag")] == [0, 0, 0]
    assert {"workers/gather_seconds", "workers/update_seconds", "charts/SPS",
            "losses/policy_loss", "eval/win_rate"} <= tags
    # The pool filled and turned over (pool_size 2, a snapshot every update) as it does here.
    assert [e.value for e in ea.Scalars("league/pool_size")] == [1, 2, 2]
    # A different worker count splits the games (and their seeds) differently: other weights.
    other, _ = _run(tmp_path, "w2", rollout_workers=2)
    assert not _same(first, _weights(Path(other["run_dir"]) / "latest.pt"))


def test_workers_follow_the_curriculum_and_feed_the_opponent_model(tmp_path):
    """The learner records the workers' games and moves the curriculum on (idle, then the
    judged pilot, after 4 games); the workers draw the new stage for their next games, and the
    judged pilot's moves, watched on the workers, train the opponent model."""
    cfg = tiny_run(tmp_path, rollout_workers=2, eval_opponent="heuristic:medium",
                   total_timesteps=16 * 16 * 8)
    cfg.game = GameConfig(max_episode_steps=160)  # games of 40 decisions: many end in the run
    cfg.league = LeagueConfig(curriculum=("idle", "heuristic:medium"), scripted_share=1.0,
                              curriculum_window=4, curriculum_threshold=0.0)
    trainer = Trainer(cfg, quiet=True, where=Where("inline"))
    out = trainer.run()
    assert trainer.league.stage == 1
    assert len(trainer.league.results["idle"]) >= 4
    assert len(trainer.league.results["heuristic:medium"]) > 0
    model = out["opponent_model"]
    assert model["of"] == "heuristic:medium" and Path(model["path"]).is_file()
    assert 0 < model["accuracy"] <= 1


@pytest.mark.parametrize("first, then", [(2, 0), (0, 2)])
def test_a_run_resumes_across_worker_counts(tmp_path, first, then):
    """A run of workers resumes in one process and the other way round: its counters, league
    and weights carry on."""
    out, cfg = _run(tmp_path, "r", rollout_workers=first)
    latest = Path(out["run_dir"]) / "latest.pt"
    cfg.train = dataclasses.replace(cfg.train, total_timesteps=2 * cfg.train.total_timesteps,
                                    rollout_workers=then, run_name="")
    resumed = Trainer(cfg, resume=latest, quiet=True, where=Where("inline")).run()
    assert resumed["run_dir"] == out["run_dir"]
    assert resumed["updates"] == 2 * out["updates"]
    assert resumed["global_step"] == 2 * out["global_step"]
    assert resumed["episodes"] > out["episodes"]


def test_asynchronous_workers_play_ahead_with_a_lag_of_one_and_repeat_bit_for_bit(tmp_path):
    """--async-rollouts: the workers play the next rollout while the learner updates, so every
    rollout after the first was played by the weights of one update before (charts/policy_lag
    1), which the run reports; the same seed gives the same weights, other weights than the
    synchronous run's; and the run resumes from its latest.pt."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out, cfg = _run(tmp_path, "a2", rollout_workers=2, async_rollouts=True)
    again, _ = _run(tmp_path, "a2-again", rollout_workers=2, async_rollouts=True)
    in_step, _ = _run(tmp_path, "s2", rollout_workers=2)
    assert out["global_step"] == cfg.train.total_timesteps and out["updates"] == 3
    first = _weights(Path(out["run_dir"]) / "latest.pt")
    assert _same(first, _weights(Path(again["run_dir"]) / "latest.pt"))
    assert not _same(first, _weights(Path(in_step["run_dir"]) / "latest.pt"))
    ea = EventAccumulator(out["log_dir"])
    ea.Reload()
    assert [e.value for e in ea.Scalars("charts/policy_lag")] == [0, 1, 1]
    # Resumed with a larger budget: the counters and the league carry on.
    cfg.train = dataclasses.replace(cfg.train, total_timesteps=2 * cfg.train.total_timesteps,
                                    run_name="")
    resumed = Trainer(cfg, resume=Path(out["run_dir"]) / "latest.pt", quiet=True,
                      where=Where("inline")).run()
    assert resumed["updates"] == 6 and resumed["global_step"] == 2 * out["global_step"]


def test_asynchronous_rollouts_need_rollout_workers():
    from spacewar_ai.config import TrainConfig

    with pytest.raises(ValueError, match="async_rollouts=True is invalid: plays the next "
                                         "rollout on the rollout workers"):
        TrainConfig(async_rollouts=True, rollout_workers=0)


def _children() -> list:
    """This process's rollout workers in child processes (util.workers), alive."""
    import psutil

    alive = []
    for p in psutil.Process().children(recursive=True):
        try:  # a child that exited and waits to be reaped (any test's) has no command line
            if p.status() != psutil.STATUS_ZOMBIE and \
                    "spacewar_ai.util.workers" in " ".join(p.cmdline()):
                alive.append(p)
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            continue
    return alive


def test_workers_in_child_processes_give_the_inline_weights_and_end_with_the_run(tmp_path,
                                                                                  capsys):
    """Two workers in child processes of this machine, playing ahead: the weights of the same
    run with its workers in this process, bit for bit; each says the process it runs in, and
    none is left once the run ends."""
    runs = {}
    for backend in ("local", "inline"):
        cfg = tiny_run(tmp_path, run_name=backend, rollout_workers=2, async_rollouts=True)
        out = Trainer(cfg, where=Where(backend)).run()
        runs[backend] = _weights(Path(out["run_dir"]) / "latest.pt")
    assert _same(runs["local"], runs["inline"])
    said = capsys.readouterr().err.splitlines()
    where = [line.split(" runs on ")[1] for line in said if " runs on " in line]
    assert len(where) == 4 and all("(process " in w for w in where[:2]), said
    assert where[0] != where[1] and where[2:] == ["the learner's process"] * 2
    assert _children() == []


def test_a_failing_child_worker_is_said_in_one_line():
    """A worker that cannot start (here: no config) answers with its error's last line, which
    the learner raises; its process ends when the pipe closes."""
    from spacewar_ai.training.online.rollouts import RolloutWorker
    from spacewar_ai.util.workers import Where, Workers

    pool = Workers(Where("local"), RolloutWorker, what="rollout worker")
    worker = pool.start(None, 0, 4, 0, None, own_process=True)
    try:
        asked = pool.ask(worker, "play", 0, {}, {}, {})
        with pytest.raises(RuntimeError, match=r"^a rollout worker failed: AttributeError: "
                                               r"'NoneType' object has no attribute 'train'$"):
            pool.answer(worker, asked)
    finally:
        pool.stop(worker)
    assert worker.process.returncode == 0


def test_auto_plays_ahead_on_one_worker_where_there_are_two_cores():
    """[train] rollout_workers and async_rollouts "auto" (the defaults) decided per machine:
    one worker playing ahead for PPO on two or more cores (or where playing ahead is asked
    for), the learner's own games in step on one core, for DQN, and where the run shows or
    guides its own games; a worker count given keeps its in-step default."""
    from spacewar_ai.config import TrainConfig

    def decided(cores, own_games=False, **train):
        t = TrainConfig(**train).with_rollouts(cores, own_games)
        return t.rollout_workers, t.async_rollouts

    assert decided(2) == decided(16) == (1, True)
    assert decided(1) == decided(2, own_games=True) == decided(2, algorithm="dqn") == (0, False)
    assert decided(1, async_rollouts=True) == (1, True)
    assert decided(2, async_rollouts=False) == (0, False)
    assert decided(2, rollout_workers=3) == (3, False)
    assert decided(1, rollout_workers=3, async_rollouts=True) == (3, True)
    assert decided(2, rollout_workers=0) == (0, False)


@pytest.mark.slow
def test_the_default_run_plays_ahead_on_two_cores_and_in_step_on_one(tmp_path):
    """The command a user types, with no placement flag, pinned to one core and to two
    (taskset): on one the learner plays its games; on two one rollout worker in a child
    process plays the next rollout while the learner updates (charts/policy_lag 0, then 1)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cores = sorted(os.sched_getaffinity(0))
    common = ["--timesteps", "384", *_tiny(tmp_path), "--checkpoint-dir", "ck",
              "--log-dir", "runs"]
    one = subprocess.run(["taskset", "-c", str(cores[0]), sys.executable, "-m", "spacewar_ai",
                          *common, "--run-name", "one"], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert one.returncode == 0, one.stderr[-3000:]
    assert "rollout worker" not in one.stderr
    if len(cores) < 2:
        pytest.skip("this machine lends this process one core")
    two = subprocess.run(["taskset", "-c", f"{cores[0]},{cores[1]}", sys.executable, "-m",
                          "spacewar_ai", *common, "--run-name", "two"], capture_output=True,
                         text=True, timeout=600, cwd=tmp_path)
    assert two.returncode == 0, two.stderr[-3000:]
    assert ("1 rollout worker plays the games in child processes of this machine, the next "
            "rollout while the learner updates (the default on two or more cores") in two.stderr
    logs = EventAccumulator(str(tmp_path / "runs" / "two"))
    logs.Reload()
    assert [e.value for e in logs.Scalars("charts/policy_lag")] == [0, 1, 1]
    assert load_checkpoint(tmp_path / "ck" / "two" / "latest.pt")["metadata"]["counters"][
        "global_step"] == 384


@pytest.mark.slow
def test_a_killed_child_worker_is_replaced_and_a_killed_learner_takes_its_workers(tmp_path):
    """A worker process killed (SIGKILL) mid-run: a new one plays its games again, the run says
    so in one line and ends well. Then a learner killed with SIGKILL: its workers die with it
    (the parent-death signal), at once."""

    import psutil

    common = ["--rollout-workers", "2", "--backend", "local", *_tiny(tmp_path),
              "--checkpoint-dir", "ck", "--log-dir", "runs"]
    run = subprocess.Popen([sys.executable, "-m", "spacewar_ai", *common, "--timesteps", "12800",
                            "--run-name", "killed"], cwd=tmp_path, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    seen = []
    for line in run.stderr:
        seen.append(line)
        if sum(" runs on " in x for x in seen) == 2:
            break
    victim = int(seen[-1].rsplit("(process ", 1)[1].rstrip(")\n"))
    os.kill(victim, signal.SIGKILL)
    _, rest = run.communicate(timeout=600)
    stderr = "".join(seen) + rest
    assert run.returncode == 0, stderr[-3000:]
    lost = [line for line in stderr.splitlines() if "was lost" in line]
    assert len(lost) == 1 and "a new one plays its games again" in lost[0], stderr[-3000:]
    assert sum(" runs on " in line for line in stderr.splitlines()) == 3

    learner = subprocess.Popen([sys.executable, "-m", "spacewar_ai", *common, "--timesteps",
                                "100000000", "--run-name", "learner"], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in learner.stderr:
            seen.append(line)
            if sum(" runs on " in x for x in seen) == 2:
                break
        workers = psutil.Process(learner.pid).children()
        assert len(workers) == 2, seen
    finally:
        learner.kill()
        learner.wait()
    gone, alive = psutil.wait_procs(workers, timeout=5)
    assert alive == []


@pytest.mark.slow
def test_workers_that_cannot_be_kept_running_stop_the_run_saved_in_one_line(tmp_path):
    """Every rollout worker killed as soon as it starts, after the run's first evaluation: the
    run tries new ones a few times, then stops with one line (exit 1), latest.pt saved at its
    last update and the command that resumes it said."""
    import time

    import psutil

    run = subprocess.Popen([sys.executable, "-m", "spacewar_ai", "--rollout-workers", "1",
                            "--backend", "local", *_tiny(tmp_path), "--checkpoint-dir", "ck",
                            "--log-dir", "runs", "--timesteps", "100000000", "--run-name",
                            "doomed"], cwd=tmp_path, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    seen = []
    for line in run.stderr:
        seen.append(line)
        if line.startswith("update 2,"):  # its first evaluation: an update to resume from
            break
    deadline = time.monotonic() + 300  # a safety net for a loaded host
    while run.poll() is None and time.monotonic() < deadline:
        for child in psutil.Process(run.pid).children():
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        time.sleep(0.02)
    _, rest = run.communicate(timeout=60)
    stderr = "".join(seen) + rest
    assert run.returncode == 1, stderr[-3000:]
    assert stderr.strip().splitlines()[-1].startswith(
        "spacewar-ai: error: rollout worker 0 was lost 4 times in a row"), stderr[-3000:]
    assert "Traceback" not in stderr
    saved = [line for line in stderr.splitlines() if line.startswith("stopped: saved ")]
    assert len(saved) == 1 and "continue with: spacewar-ai --resume" in saved[0]
    assert (tmp_path / "ck" / "doomed" / "latest.pt").is_file()


def _cli(*args, cwd, timeout=600, env=None):
    return cli(*args, cwd=cwd, timeout=timeout, env={**os.environ, **(env or {})})


# --- Ray ------------------------------------------------------------------------------------------
TINY = ["--num-envs", "8", "--eval-episodes", "4", "--seed", "5", "--config"]
TINY_CONFIG = """
[ppo]
n_steps = 16
hidden_sizes = [32, 32]
[train]
eval_interval = 2
save_interval = 1
[league]
snapshot_interval = 1
pool_size = 2
"""


def _tiny(tmp_path) -> list[str]:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_CONFIG)
    return [*TINY, str(path)]


@pytest.mark.slow
@RAY_GROUP
def test_ray_workers_playing_ahead_give_the_weights_of_workers_in_this_process(tmp_path):
    """--async-rollouts on Ray actors (of a Ray instance the run starts), which play the next
    rollout while the learner updates, gives the weights the same run gets here, bit for bit."""
    pytest.importorskip("ray")
    runs = {}
    for backend in ("ray", "local"):
        out = _cli("--rollout-workers", "1", "--async-rollouts", "--backend", backend,
                   "--timesteps", "512", *_tiny(tmp_path), "--checkpoint-dir", "ck",
                   "--log-dir", "runs", "--run-name", backend, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-3000:]
        assert "the next rollout while the learner updates" in out.stderr
        runs[backend] = _weights(tmp_path / "ck" / backend / "latest.pt")
    assert _same(runs["ray"], runs["local"])


@pytest.mark.slow
@RAY_GROUP
def test_a_two_node_cluster_trains_resumes_and_survives_a_killed_worker(tmp_path):
    """A head and a second node started here (one CPU each, so the two workers land one on
    each): a run trains to its end and matches the same run's workers in child processes bit
    for bit; it resumes on the cluster; a run whose worker is killed (SIGKILL) goes on with a
    new worker and says so in one line. Each run says where each part runs (--device auto: the
    learner on a GPU when there is one, the CPU here; workers always on the CPU)."""
    pytest.importorskip("ray")
    from tests.rating.test_cluster import AUTH, _free_port, _ray_cli

    port = _free_port()
    short = Path("/tmp") / f"sw{port}"
    env = {**AUTH, "SDL_VIDEODRIVER": "dummy"}
    try:
        head = _ray_cli("start", "--head", "--port", str(port), "--num-cpus", "1",
                        "--temp-dir", str(short / "head"), "--include-dashboard=false",
                        "--disable-usage-stats")
        assert head.returncode == 0, head.stderr[-2000:]
        node = _ray_cli("start", "--address", f"127.0.0.1:{port}", "--num-cpus", "1",
                        "--temp-dir", str(short / "node"), "--disable-usage-stats")
        assert node.returncode == 0, node.stderr[-2000:]
        address = ["--rollout-workers", "2", "--ray-address", f"127.0.0.1:{port}"]
        common = [*_tiny(tmp_path), "--checkpoint-dir", "ck", "--log-dir", "runs"]
        out = _cli(*address, "--timesteps", "512", "--device", "auto", *common, "--run-name",
                   "cluster", cwd=tmp_path, env=env)
        assert out.returncode == 0, out.stderr[-3000:]
        from spacewar_ai.agents.base import learner_dtype

        device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = str(learner_dtype("auto", device)).removeprefix("torch.")
        learner = f"the learner updates on {device} in {dtype}"
        assert f"{learner}; 2 rollout workers play the games as Ray actors" in out.stderr
        nodes = {line.split(" runs on ")[1] for line in out.stderr.splitlines()
                 if " runs on " in line}
        assert len(nodes) == 2, out.stderr[-3000:]  # one worker on each node
        here = _cli("--rollout-workers", "2", "--backend", "local", "--timesteps", "512",
                    *common, "--run-name", "here", cwd=tmp_path, env=env)
        assert here.returncode == 0, here.stderr[-3000:]
        assert "2 rollout workers play the games in child processes" in here.stderr
        latest = tmp_path / "ck" / "cluster" / "latest.pt"
        assert _same(_weights(latest), _weights(tmp_path / "ck" / "here" / "latest.pt"))
        resumed = _cli(*address, "--resume", str(latest), "--timesteps", "1024",
                       *common[:-4], cwd=tmp_path, env=env)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert load_checkpoint(latest)["metadata"]["counters"]["global_step"] == 1024

        # A run of 15 updates; one of its workers is killed once both have played a rollout.
        run = subprocess.Popen(
            [sys.executable, "-m", "spacewar_ai", *address, "--timesteps", "1920", *common,
             "--run-name", "killed"], cwd=tmp_path,
            env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = []
        for line in run.stderr:
            seen.append(line)
            if sum(" runs on " in x for x in seen) == 2:
                break
        os.kill(_worker_process(), signal.SIGKILL)
        stdout, rest = run.communicate(timeout=600)
        stderr = "".join(seen) + rest
        assert run.returncode == 0, stderr[-3000:]
        lost = [line for line in stderr.splitlines() if "was lost" in line]
        assert len(lost) == 1 and "a new one plays its games again" in lost[0], stderr[-3000:]
        assert "(raylet)" not in stdout + stderr  # Ray's own report is folded into that line
        assert sum(" runs on " in line for line in stderr.splitlines()) == 3  # the new one too
        assert (tmp_path / "ck" / "killed" / "best.pt").is_file()
    finally:
        _ray_cli("stop", "--force")


def _worker_process() -> int:
    """The process id of a Ray actor of RolloutWorker (Ray titles it ray::RolloutWorker)."""
    import psutil

    for proc in psutil.process_iter(["pid", "cmdline"]):
        if "ray::RolloutWorker" in " ".join(proc.info["cmdline"] or []):
            return proc.info["pid"]
    raise AssertionError("no rollout worker process")


@pytest.mark.slow
@RAY_GROUP
def test_no_ray_process_outlives_a_learner_killed_with_sigkill(tmp_path):
    """The Ray instance a learner starts for its rollout workers: its agents and workers are
    gone within two seconds of the learner's SIGKILL (util/reaper.py), not a minute later."""
    import time

    from spacewar_ai.util.reaper import alive, descendants

    (tmp_path / "tiny.toml").write_text(TINY_CONFIG.replace("eval_interval = 2",
                                                            "eval_interval = 1000"))
    proc = subprocess.Popen([sys.executable, "-m", "spacewar_ai", "--config", "tiny.toml",
                             "--num-envs", "16", "--timesteps", "100000000", "--run-name", "k",
                             "--rollout-workers", "2", "--backend", "ray"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        for line in proc.stdout:
            if "rollout workers play the games" in line:
                break
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            everything = descendants(proc.pid)
            names = " ".join(_cmdline(p) for p in everything)
            if "ray::RuntimeEnvAgent" in names and "ray::RolloutWorker" in names:
                break
            time.sleep(0.5)
        assert "ray::RuntimeEnvAgent" in names and "ray::RolloutWorker" in names, names
    finally:
        proc.kill()
        proc.wait()
    time.sleep(2)
    left = [_cmdline(p) for p, s in everything.items() if alive(p, s)]
    assert left == [], left


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read().replace("\0", " ")
    except OSError:
        return ""
