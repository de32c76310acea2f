"""The weights a seed gives, as hashes: the check that a refactor changed no behaviour.

    python scripts/weight_hashes.py [--only ppo-step,ppo-ahead,dqn,bc,cql,sft] [--keep DIR]
        [--precision auto|float32|bfloat16]

Runs each of the listed tiny runs from seed 3 in a temporary folder (PPO with the learner
playing its own games, PPO playing ahead on one rollout worker in a child process, DQN, BC and
CQL on a small recorded dataset, SFT of a tiny Llama model built offline) and prints the
SHA-256 of what each saved: the networks and observation statistics of latest.pt (PPO, DQN),
of best.pt (BC, CQL), and the adapter's weights file (SFT). Run it before and after a change
that should not change what a seed learns; the two lists must be equal line for line. The PPO
and DQN learners run at `--precision` (the runs' own setting, default auto: bfloat16 where the
processor has it natively), which it prints: `--precision float32` gives the hashes of versions
that had no such setting.

The hashes hold for one machine and one set of libraries: torch's math library picks its
kernels by the processor it finds, and a kernel that adds in another order rounds otherwise.
The script prints both, so compare lists made under the same line.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import sys
import tempfile
from pathlib import Path

import torch

RUNS = ("ppo-step", "ppo-ahead", "dqn", "bc", "cql", "sft")


def tensors_hash(state) -> str:
    """SHA-256 over a nested state dict's tensors and numbers, in key order."""
    digest = hashlib.sha256()

    def walk(prefix, value):
        if isinstance(value, dict):
            for key in sorted(value):
                walk(f"{prefix}/{key}", value[key])
        elif isinstance(value, torch.Tensor):
            digest.update(prefix.encode())
            digest.update(value.detach().cpu().contiguous().numpy().tobytes())
        elif isinstance(value, (int, float)):
            digest.update(f"{prefix}={value!r}".encode())

    walk("", state)
    return digest.hexdigest()


def machine() -> str:
    """What the hashes depend on besides the code: the processor and the libraries' versions."""
    import numba
    import numpy

    try:  # Linux names the model and its instructions there; elsewhere platform says less
        with open("/proc/cpuinfo") as f:
            first = f.read().split("\n\n")[0]  # the first processor's block
    except OSError:
        first = ""
    info = {key.strip(): value.strip() for key, _, value in
            (line.partition(":") for line in first.splitlines())}
    name = info.get("model name") or platform.processor() or platform.machine()
    flags = set(info.get("flags", "").split())
    shown = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f in flags]
    extensions = (" ".join(shown) or "none of avx2, avx512f, amx") if first else \
        "its extensions not read"
    return (f"{name} ({extensions}), "
            f"{os.cpu_count()} cores; torch {torch.__version__}, numpy {numpy.__version__}, "
            f"numba {numba.__version__}")


def agent_hash(path: Path) -> str:
    state = torch.load(path, weights_only=True)["agent"]
    kept = {k: state[k] for k in ("net", "q", "q_target", "obs_norm") if k in state}
    return tensors_hash(kept)


def online(root: Path, name: str, precision: str):
    from spacewar_ai.config import (
        DQNConfig,
        GameConfig,
        LeagueConfig,
        PPOConfig,
        RunConfig,
        TrainConfig,
    )
    from spacewar_ai.training import train

    algorithm = "dqn" if name == "dqn" else "ppo"
    ahead = name == "ppo-ahead"
    cfg = RunConfig(
        train=TrainConfig(algorithm=algorithm, num_envs=16, total_timesteps=16 * 16 * 12, seed=3,
                          checkpoint_dir=str(root / "ck"), log_dir=str(root / "runs"),
                          run_name=name, eval_interval=2, save_interval=1, eval_episodes=4,
                          rollout_workers=1 if ahead else 0, async_rollouts=ahead,
                          precision=precision),
        # Short games, so that games end, time out and draw new opponents within the run.
        game=GameConfig(max_episode_steps=400),
        ppo=PPOConfig(n_steps=16, hidden_sizes=(32, 32)),
        dqn=DQNConfig(hidden_sizes=(32, 32), stream_size=16, buffer_size=5000,
                      learning_starts=64, batch_size=32),
        league=LeagueConfig(snapshot_interval=1, pool_size=2))
    train(cfg, quiet=True)
    return agent_hash(root / "ck" / name / "latest.pt")


def offline(root: Path, name: str, precision: str):
    from spacewar_ai.config import (
        DQNConfig,
        LeagueConfig,
        OfflineConfig,
        PPOConfig,
        RunConfig,
        TrainConfig,
    )
    from spacewar_ai.training import train

    cfg = RunConfig(
        train=TrainConfig(algorithm=name, dataset="teach", dataset_pilot="heuristic:hard",
                          checkpoint_dir=str(root / "ck"), log_dir=str(root / "runs"),
                          run_name=name, eval_episodes=4, eval_interval=1, num_envs=16,
                          total_timesteps=16 * 16 * 2, seed=3),
        offline=OfflineConfig(bc_epochs=2, cql_steps=200),
        ppo=PPOConfig(hidden_sizes=(64, 64), n_steps=16),
        dqn=DQNConfig(hidden_sizes=(64, 64), stream_size=32, batch_size=64, play_ensemble=1),
        league=LeagueConfig(snapshot_interval=1, pool_size=2))
    train(cfg, quiet=True)
    return agent_hash(root / "ck" / name / "best.pt")


def sft(root: Path, name: str, precision: str):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from spacewar_ai.config import RunConfig, SFTConfig, TrainConfig
    from spacewar_ai.training import train
    from tests.tiny_lm import make_tiny_lm

    tiny = make_tiny_lm(root / "tiny")
    cfg = RunConfig(train=TrainConfig(
        algorithm="sft", dataset="teach", dataset_pilot="heuristic:hard", run_name=name,
        log_dir=str(root / "runs"), seed=3, device="cpu"),
        sft=SFTConfig(base_model=str(tiny), examples=200, held_out=50, epochs=1, batch_size=32))
    train(cfg, quiet=True)
    found = sorted((root / "models" / "adapters" / name).glob("*.safetensors"))
    return hashlib.sha256(b"".join(p.read_bytes() for p in found)).hexdigest()


BUILDERS = {"ppo-step": online, "ppo-ahead": online, "dqn": online, "bc": offline,
            "cql": offline, "sft": sft}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(RUNS),
                        help=f"comma-separated runs among {', '.join(RUNS)}")
    parser.add_argument("--keep", help="run in this folder and keep it")
    parser.add_argument("--precision", default="auto", choices=("auto", "float32", "bfloat16"),
                        help="the PPO and DQN learners' precision (default auto)")
    args = parser.parse_args()
    from spacewar_ai.agents.base import learner_dtype

    wanted = [r.strip() for r in args.only.split(",") if r.strip()]
    unknown = [r for r in wanted if r not in BUILDERS]
    if unknown:
        print(f"--only {unknown[0]}: choose among {', '.join(RUNS)}", file=sys.stderr)
        return 2
    print(f"machine: {machine()} (compare hashes made on the same)")
    print(f"precision {args.precision}: the learners' passes in "
          f"{str(learner_dtype(args.precision, 'cpu')).removeprefix('torch.')}")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(args.keep or scratch).resolve()
        root.mkdir(parents=True, exist_ok=True)
        os.chdir(root)  # SFT writes models/adapters/ under the working folder
        os.environ["MINARI_DATASETS_PATH"] = str(root / "minari")
        if any(r in ("bc", "cql", "sft") for r in wanted):
            from spacewar_ai.training.datasets import generate

            if not (root / "minari" / "teach").exists():
                generate([("heuristic:hard", "heuristic:easy")], 16, "teach", seed=1,
                         quiet=True)
        for name in wanted:
            print(f"{name:10s} {BUILDERS[name](root, name, args.precision)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
