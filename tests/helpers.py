"""Small builders shared by the tests."""

from pathlib import Path

import numpy as np
import pytest

from spacewar_ai.config import GameConfig
from spacewar_ai.game import engine
from spacewar_ai.game.engine import GameBatch

ROOT = Path(__file__).resolve().parents[1]  # the project's folder
# Tests that start Ray share one pytest-xdist worker, one after another: `ray stop`, which the
# cluster tests end with, stops every Ray instance on the machine, another test's included.
RAY_GROUP = pytest.mark.xdist_group("ray")


def require_lm() -> None:
    """Skip the calling test module unless the LM pilot's packages are installed, by the
    package's own check, which finds them without importing them: pytest.importorskip imports,
    and peft alone takes seconds, in every worker's collection."""
    from spacewar_ai.lm.models import LMError, require_transformers

    try:
        require_transformers()
    except LMError as exc:
        pytest.skip(str(exc), allow_module_level=True)


def scenario(**config) -> GameBatch:
    """One game, reset, for hand-placed physics scenarios."""
    b = GameBatch(1, GameConfig(**config))
    b.reset(seeds=np.array([0]))
    return b


def run(b: GameBatch, a0: int = 0, a1: int = 0, steps: int = 1):
    """Step with fixed actions; return summed rewards and the flags of the last step."""
    total = np.zeros(2)
    acts = np.array([[a0, a1]], dtype=np.int64)
    for _ in range(steps):
        b.step(acts)
        total += b.reward[0]
        if b.terminated[0] or b.truncated[0]:
            break
    return total, bool(b.terminated[0]), bool(b.truncated[0])


def cause(b: GameBatch, s: int):
    return engine.DeathCause(b.ship_i[0, s, engine.CAUSE])


PROBES = ROOT / "docs" / "log" / "probes"  # research probes, beside the log that keeps them


def script_path(name: str) -> Path:
    """A script by name: one of scripts/ (what reproduces a published figure) or a probe."""
    path = ROOT / "scripts" / f"{name}.py"
    return path if path.is_file() else PROBES / f"{name}.py"


def load_script(name: str):
    """A module of scripts/ or of the probes (not part of the package) by file name."""
    import importlib.util
    import sys

    path = script_path(name)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass of the script looks its module up there
    spec.loader.exec_module(module)
    return module


def game_observations(n=64, steps=40, seed=0):
    """Observations from real games: random play, so fuel, torpedoes and reloads vary."""
    from spacewar_ai.game.environment import SpacewarVectorEnv

    env = SpacewarVectorEnv(n, opponent="heuristic:medium")
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    seen = []
    for _ in range(steps):
        obs, *_ = env.step(rng.integers(0, 6, n))
        seen.append(obs.copy())
    return np.concatenate(seen)


def http_request(server, method: str, path: str, body: bytes = b"", headers=None,
                 timeout: float = 60):
    """(status, body) of one request to a BackgroundServer on 127.0.0.1."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def key_pieces(secret: str, n: int = 8) -> set[str]:
    """Every run of n characters of a secret: none may appear in anything shown."""
    return {secret[i:i + n] for i in range(len(secret) - n + 1)}


def house_as_if_played(project: Path) -> None:
    """The arena's first pairings, the house pilots' own, recorded in `project`'s arena without
    playing them: a ladder (HOUSE's order, the later the stronger, 18 of 20 games each). Tests
    of what happens to entrants need them only as the scale."""
    from spacewar_ai.rating.arena import Arena

    arena = Arena(project / "runs" / "arena")
    while (pair := arena.next_pairing()) is not None:
        assert all(p["kind"] == "house" for p in pair)
        arena.record(*pair, {"games": 20, "wins_a": 2, "wins_b": 18, "draws": 0, "replays": []})


def tiny_run(tmp_path, algorithm="ppo", **train):
    """A training run small enough for a test: 16 games, small networks, evaluations of 4
    games every 2 updates, everything under tmp_path, the learner playing its own games (not
    a rollout worker's process, as "auto" gives on two cores) unless `train` says otherwise."""
    from spacewar_ai.config import DQNConfig, LeagueConfig, PPOConfig, RunConfig, TrainConfig

    t = dict(algorithm=algorithm, num_envs=16, total_timesteps=16 * 16 * 3, seed=3,
             checkpoint_dir=str(tmp_path / "ck"), log_dir=str(tmp_path / "runs"),
             run_name="tiny", eval_interval=2, save_interval=1, eval_episodes=4,
             rollout_workers=0)
    t.update(train)
    return RunConfig(train=TrainConfig(**t), ppo=PPOConfig(n_steps=16, hidden_sizes=(32, 32)),
                     dqn=DQNConfig(hidden_sizes=(32, 32), stream_size=16, buffer_size=5000,
                                   learning_starts=64, batch_size=32),
                     league=LeagueConfig(snapshot_interval=1, pool_size=2))


def read_video_info(path) -> tuple[int, tuple[int, int]]:
    """(frame count, (width, height)) of a video the package wrote (GIF or MP4)."""
    path = Path(path)
    if path.suffix.lower() == ".gif":
        import imageio.v2 as imageio

        frames = imageio.mimread(str(path), memtest=False)
        return len(frames), (frames[0].shape[1], frames[0].shape[0])
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    count = sum(1 for _ in reader)
    return count, tuple(meta["size"])


def random_positions(config, games: int = 64, steps: int = 40, seed: int = 3) -> np.ndarray:
    """Ship 0's observations over `steps` decisions of `games` games in which both ships press
    random valid actions: every state a mask can be in, reloads and jumps included."""
    from spacewar_ai.game.environment import SpacewarVectorEnv

    env = SpacewarVectorEnv(games, opponent=None, config=config)
    obs, _ = env.reset_both(seed=seed)
    rng, rows = np.random.default_rng(seed), []
    for _ in range(steps):
        moves = [[rng.choice(np.flatnonzero(o[config.mask_start:] > 0.5)) for o in obs[:, s]]
                 for s in (0, 1)]
        obs, *_ = env.step_both(np.array(moves).T)
        rows.append(obs[:, 0].copy())
    return np.concatenate(rows)


def idle_replay(steps: int = 1300, action: str = "0", **config) -> bytes:
    """A replay file of idle ships (or both pressing `action` every decision) under the default
    settings with `config` changed (checked or not: the server is what checks them), `steps`
    decisions long or as long as its settings let it be."""
    import json

    settings = {**GameConfig().to_dict(), **config}
    steps = min(steps, -(-settings["max_episode_steps"] // settings["frame_skip"]))
    return json.dumps({"version": 1, "config": settings, "seed": 1, "players": ["a", "b"],
                       "actions": [action * steps, action * steps], "result": {}}).encode()


def long_replay() -> bytes:
    """A replay of ten million frames in which both ships fire every frame, torpedoes that
    never hit and never expire: minutes of a checker's time on any host (idle ships would
    replay within a check's deadline in the tests)."""
    return idle_replay(10_000, action="4", max_episode_steps=10**7, frame_skip=1000,
                       hit_radius=0.0, torpedo_lifetime=100_000, max_ammo=10_000,
                       fire_cooldown=1)


def hold_a_replay_check(server, headers=None):
    """Send a BackgroundServer the long replay to check, from a thread, and
    return once the server holds it among its checks: (the thread, a dict that gets its
    "answer", (status, body), when it ends)."""
    import threading
    import time

    result = {}
    thread = threading.Thread(target=lambda: result.update(answer=http_request(
        server, "POST", "/api/replay?name=long.json", long_replay(), headers, timeout=120)))
    thread.start()
    checks = server.app.state.checks
    deadline = time.monotonic() + 60  # a safety net sized for a loaded host
    while not checks.queued and time.monotonic() < deadline:
        time.sleep(0.01)
    assert checks.queued == 1
    return thread, result
