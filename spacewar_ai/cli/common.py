"""Flags several modes read, and the helpers those modes share (the run's config, the ratings
file, the Ray address, the LLM client)."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

from ..config import PRECISIONS
from ..pilots.build import shipped_lm_specs
from ..util.errors import UserError
from .parser import (
    count,
    flag,
    nonnegative_float,
    outputs,
    positive_float,
    seed,
    timesteps,
)

# --- the run: training, population-based training and the LLM loop's RL --------------------------
ALGORITHM = flag("--algorithm", "training",
                 choices=("ppo", "dqn", "bc", "cql", "sft", "grpo", "dagger"),
                 help="learning algorithm (default ppo); bc (behaviour cloning), cql "
                      "(conservative Q-learning) and sft (a language model's LoRA adapter, "
                      "played as lm:RUN) learn from a recorded --dataset; grpo trains an "
                      "LM adapter further by playing (--init-from ADAPTER, --opponent); dagger "
                      "trains one on the states it reaches itself, labelled by --teacher")
DATASET = flag("--dataset", "training", metavar="NAME",
               help="bc, cql, sft: the dataset to learn from (record one with --datagen); "
                    "dagger: the teacher's own decisions, mixed into every batch")
DATASET_PILOT = flag("--dataset-pilot", "training", metavar="NAME",
                     help="bc, cql, sft, dagger: learn only from the episodes this pilot flew")
REWARD = flag("--reward", "training", metavar="PERSONALITY",
              help="the reward table: standard (default), aggressive, survival, efficient "
                   "or sniper")
EPISODES = flag("--episodes", "training", type=count(1),
                help="training: stop after this many games; --iterative: games between "
                     "rounds; demo: games to play")


TIMESTEPS = flag("--timesteps", "training", type=timesteps,
                 help="training: stop after this many learner decisions (0 with --warm-start: "
                      "save the imitation alone)")
MINUTES = flag("--minutes", "training", type=positive_float,
               help="training: also stop after this many minutes, whichever of --timesteps, "
                    "--episodes and --minutes comes first")
NUM_ENVS = flag("--num-envs", "training", type=count(1), help="games played at once (default 256)")
LEARNING_RATE = flag("--learning-rate", "training", type=positive_float)
DEVICE = flag("--device", "training", choices=("cpu", "cuda", "auto"),
              help="where the learner's network trains: cpu (default), cuda (a GPU; needs a CUDA "
                   "build of torch, README 'On a GPU') or auto (cuda where torch finds one); the "
                   "games and rollout workers stay on the CPU")
PRECISION = flag("--precision", "training", choices=PRECISIONS,
                 help="what the learner's forward and backward passes run in: auto (default: "
                      "bfloat16 where the processor has it natively, else float32), float32 or "
                      "bfloat16; PPO's rollouts play in it too; its weights, optimizer and "
                      "losses stay float32, and so do evaluation and the league")
TORCH_THREADS = flag("--torch-threads", "training", type=count(0),
                     help="torch threads (default 1, or SPACEWAR_TORCH_THREADS; the count "
                          "changes the arithmetic, so a seed's weights are those of its count)")
CONFIG = flag("--config", "training", metavar="FILE",
              help="TOML or JSON file with [train] [ppo] [dqn] [sft] [grpo] [dagger] [offline] "
                   "[league] [game] [reward] sections; flags override it")
CHECKPOINT_DIR = flag("--checkpoint-dir", "training", writes="folder", metavar="DIR",
                      help="where runs are saved (default checkpoints/)")
LOG_DIR = flag("--log-dir", "training", metavar="DIR",
               help="where TensorBoard logs go, one folder per run (default runs/)")
RUN_NAME = flag("--run-name", "training", help="name of the run folder")
RESUME = flag("--resume", "training", metavar="PATH",
              help="continue a run from its checkpoint (latest.pt)")
QUIET = flag("--quiet", "training", action="store_true", help="no progress bar")
WARM_START = flag("--warm-start", "training", metavar="SPEC",
                  help="learn from this pilot first, e.g. heuristic:hard (PPO: behaviour "
                       "cloning; DQN: its games as demonstrations, DQfD), then by RL")
ROLLOUT_WORKERS = flag("--rollout-workers", "training", type=count(0), metavar="N",
                       help="ppo: play the games on N rollout workers, child processes of "
                            "this machine (--backend ray or --ray-address: Ray actors), the "
                            "learner only updating; 0: the learner plays them, in step "
                            "(default: one worker playing ahead on two or more cores, else 0)")
ASYNC_ROLLOUTS = flag("--async-rollouts", "training", action="store_true", default=None,
                      help="ppo with --rollout-workers N: the workers play the next rollout "
                           "while the learner updates on the last (a policy lag of one "
                           "update, charts/policy_lag; the default's one worker does)")
INIT_FROM = flag("--init-from", "training", metavar="CHECKPOINT",
                 help="training: start from this model (the same algorithm's weights; a "
                      "model of another algorithm is imitated first); grpo, dagger: the LM "
                      "adapter to start from (a run of --algorithm sft or dagger)")

# --- players ---------------------------------------------------------------------------------
CHECKPOINT = flag("--checkpoint", "players", metavar="SPEC",
                  help="the model: a checkpoint file or any player spec, e.g. pretrained or "
                       "search:pretrained (training: start from it; champion training: the "
                       "model to train further)")
OPPONENT = flag("--opponent", "players", metavar="SPEC",
                help="player spec: idle, random, heuristic:easy|medium|hard, pretrained, "
                     "ppo:PATH, dqn:PATH, strategy:PATH.py, search:SPEC[+MODEL], "
                     f"lm:MODEL[+ADAPTER] ({shipped_lm_specs()}: the shipped "
                     "language-model pilots) or a checkpoint path (evaluate: default "
                     "heuristic:hard; human play: instead of --difficulty; grpo: its "
                     "opponents, comma separated, sharing the games; dagger: its "
                     "opponents, comma separated, self for the LM itself; an lm: spec's "
                     "@bf16 is the fast path, @cuda/@cpu its device)")
EVAL_EPISODES = flag("--eval-episodes", "players", type=count(1),
                     help="games per evaluation (default 200; during training 100)")
PLAYERS = flag("--players", "players", metavar="SPECS",
               help="player specs, comma separated (demo: two, default heuristic:hard,"
                    "heuristic:medium; tournament: default the best models we know and "
                    "the scripted pilots)")
RESULTS = flag("--results", "players", writes="file", metavar="FILE.jsonl",
               help="evaluate, demo: add every game's GameResult to FILE as JSON lines "
                    "(tournaments write games.jsonl beside their report)")
MATCHES_PER_PAIRING = flag("--matches-per-pairing", "tournaments", type=count(2),
                           help="games per pair of players, an even number (default 100; LLM "
                                "arena 20)")
RATINGS_FILE = flag("--ratings-file", "tournaments", writes="file", metavar="PATH",
                    help="ratings accumulated across tournaments and evaluations (default "
                         "<checkpoint-dir>/ratings.json)")
SAVE_REPLAYS = flag("--save-replays", "play", type=count(0), metavar="N",
                    help="evaluate: save N games as replays (under runs/replays/); tournament: "
                         "N games per pairing (in the tournament's folder)")
RECORD = flag("--record", "play", writes="file", metavar="PATH",
              help="record human play, --demo, --evaluate or --replay games to a .mp4 or "
                   ".gif (drawn off-screen for demo and evaluate)")
SCALE = flag("--scale", "play", type=positive_float,
             help="window scale, 0.25 to 4 (default 1.0 = 640 x 640 pixels)")
PHOSPHOR = flag("--phosphor", "play", action="store_true",
                help="phosphor trails: frames fade out instead of being cleared")

# --- Ray -------------------------------------------------------------------------------------
BACKEND = flag("--backend", "ray", choices=("local", "ray"),
               help="evaluate, tournament, datagen: local (default: this process or a process "
                    "pool) or ray (Ray tasks; the same results); training's rollout workers: "
                    "local (default: child processes) or ray (Ray actors; the same weights)")
RAY_ADDRESS = flag("--ray-address", "ray", metavar="ADDRESS",
                   help="join this Ray cluster (as printed by `ray start --head`; default the "
                        "RAY_ADDRESS variable, else a Ray instance on this machine); implies "
                        "--backend ray")

# --- LLM access: the strategy loop, the LLM arena, and training's --use-llm --------------------
LLM_SAMPLES = flag("--llm-samples", "llm", type=count(1),
                   help="strategies asked for per round (--iterative) or per provider "
                        "(--llm-arena) (default 1)")
USE_LLM = flag("--use-llm", "llm", nargs="?", const="generate", metavar="STRATEGY",
               help="training: about 10%% of exploration actions come from an LLM strategy "
                    "(a strategy file, or one generated now)")
LLM_ACCESS = (
    flag("--llm-provider", "llm",
         help="anthropic (claude), openai, google (gemini), xai (grok), groq, together, "
              "mistral, deepseek, openrouter; default: every provider with a key, in that "
              "order, until one answers"),
    flag("--llm-model", "llm", help="model name for the first provider"),
    flag("--llm-base-url", "llm", metavar="URL",
         help="any OpenAI-compatible server (llama.cpp, vLLM, Ollama), e.g. "
              "http://127.0.0.1:8080/v1; a key is optional"),
    flag("--llm-timeout", "llm", type=positive_float, metavar="SECONDS",
         help="total deadline of one LLM request, retries included (default 120)"),
    flag("--keys-dir", "llm", metavar="DIR",
         help="folder with *.key.txt files and .env (default .)"),
    flag("--llm-local", "llm", action="store_true",
         help="use a local GGUF model first (llama-cpp-python), then the cloud"),
    flag("--llm-local-model", "llm", metavar="PATH",
         help="the local GGUF file (default: the catalog's pick, in models/)"),
    flag("--local-llm-only", "llm", action="store_true", help="only the local model"),
    flag("--include-local-llm", "llm", action="store_true",
         help="try the local model after the cloud providers"),
    flag("--gpu-vram", "llm", type=nonnegative_float, metavar="GB",
         help="GPU memory to plan the local model for, 0 for the CPU (overrides detection)"),
)

# --- common ----------------------------------------------------------------------------------
RENDER = flag("--render", "common", action="store_true", help="show a game in a window")
SEED = flag("--seed", "common", type=seed, help="random seed, 0..2**32-1 (default 0)")

RAY = (BACKEND, RAY_ADDRESS)
# What a training run reads, and what the modes that run one (--iterative) read too.
RUN = (ALGORITHM, EPISODES, TIMESTEPS, MINUTES, NUM_ENVS, LEARNING_RATE, DEVICE, PRECISION,
       TORCH_THREADS, CONFIG, CHECKPOINT_DIR, LOG_DIR, RUN_NAME, RESUME, QUIET, SEED, EVAL_EPISODES, REWARD,
       DATASET, DATASET_PILOT)
TRAINING = (*RUN, *LLM_ACCESS, WARM_START, RENDER, CHECKPOINT, INIT_FROM, USE_LLM)


def split_specs(text: str | None) -> list[str]:
    return [s.strip() for s in (text or "").split(",")]


def run_config(args):
    """The resolved run config: defaults (or the resumed run's own), then --config, then flags.
    Which field a flag sets is declared on the field (config.setting, config.flag_fields)."""
    from ..config import UNLIMITED_STEPS, RewardConfig, RunConfig, flag_fields, load_run_config

    base = RunConfig()
    if getattr(args, "resume", None):
        args.resume = run_file(args.resume)
        from ..agents.checkpoints import saved_run_config

        base = saved_run_config(args.resume)
    cfg = load_run_config(args.config, base) if args.config else base
    if getattr(args, "timesteps", None) == 0 and not (getattr(args, "warm_start", None)
                                                      or cfg.train.warm_start):
        raise UserError("--timesteps 0 trains nothing: give a number >= 1, or add --warm-start "
                        "SPEC to save the imitation alone")
    algorithm = getattr(args, "algorithm", None) or cfg.train.algorithm
    changes: dict[str, dict] = {}
    for given, targets in flag_fields(algorithm).items():
        value = getattr(args, given[2:].replace("-", "_"), None)
        if value is None:
            continue
        for section, name in targets:
            changes.setdefault(section, {})[name] = value
    if getattr(args, "episodes", None) is not None and getattr(args, "timesteps", None) is None:
        changes.setdefault("train", {})["total_timesteps"] = UNLIMITED_STEPS  # --episodes alone
    for section, fields in changes.items():
        setattr(cfg, section, getattr(cfg, section).changed(**fields))
    if getattr(args, "reward", None):
        cfg.reward = RewardConfig.preset(args.reward)
    return cfg


def published_best(args, mode: str) -> str:
    """The best of all PPO runs of the mode's game (`<checkpoint-dir>/ppo_best.pt` for the
    default game, agents.checkpoints.best_name) for a mode given no --checkpoint, said in one
    line; ValueError naming the flag where there is none."""
    from ..agents.checkpoints import best_name

    name = best_name("ppo", game_config(args))
    path = Path(getattr(args, "checkpoint_dir", None) or "checkpoints") / name
    if not path.is_file():
        raise UserError(f"{mode} needs --checkpoint SPEC (e.g. pretrained or a checkpoint "
                        f"path); {path}, the best of your PPO runs of this game, is not there "
                        "yet")
    print(f"{mode}: no --checkpoint given, so {path} (the best of your PPO runs of this game)")
    return str(path)


def run_file(path: str) -> str:
    """A run's folder given where a checkpoint file is asked for means its latest.pt."""
    folder = Path(path)
    return str(folder / "latest.pt") if (folder / "latest.pt").is_file() else path


def game_config(args):
    """The game a mode plays: --config's [game] section (a preset with `rules`), else the
    default game."""
    from ..config import GameConfig

    return run_config(args).game if getattr(args, "config", None) else GameConfig()


def ratings_file(args, game=None):
    """The ratings file the run adds to: --ratings-file, else <checkpoint-dir>/ratings.json;
    None for a game other than the default, whose results would mix with the default game's
    under the same names."""
    from ..config import GameConfig
    from ..rating.ratings import RatingsFile
    from ..util.preflight import writable

    if game is not None and game != GameConfig():
        changed = [f.name for f in dataclasses.fields(game)
                   if getattr(game, f.name) != getattr(GameConfig(), f.name)]
        print(f"ratings: not added to the ratings file, which rates the default game (this "
              f"one changes {', '.join(changed[:4])}{' and more' if len(changed) > 4 else ''})")
        return None
    if args.ratings_file:  # checked with the other outputs (check_outputs)
        return RatingsFile(args.ratings_file)
    path = Path(args.checkpoint_dir or "checkpoints") / "ratings.json"
    writable(path, "the ratings file (--ratings-file)")
    return RatingsFile(path)


def where(args, processes: int = 1):
    """Where this mode's work runs, chosen once from --backend, --ray-address and --workers
    (util.workers.Where): Ray, or processes of this machine (`processes` unless --workers)."""
    from ..util.workers import Where

    return Where.from_flags(args.backend, args.ray_address, getattr(args, "workers", None),
                            processes)


def check_outputs(args) -> None:
    """Every output path a flag names can be written, checked before any work (preflight.py)."""
    from ..util.preflight import writable

    for declared in outputs():
        if getattr(args, declared.dest, None):
            writable(getattr(args, declared.dest), declared.name,
                     folder=declared.writes == "folder")


def llm_client(args):
    from ..llm.failover import client_from_flags

    return client_from_flags(args.keys_dir or ".", args.llm_provider, args.llm_model,
                             args.llm_base_url, args.llm_local, args.llm_local_model,
                             args.local_llm_only, args.include_local_llm, args.gpu_vram,
                             args.llm_timeout)


def exploration_guide(args, cfg):
    """--use-llm: the LLM strategy that takes a share of training's exploration actions."""
    from ..llm.strategies import exploration_guide as guide

    client = llm_client(args) if args.use_llm == "generate" else None
    return guide(args.use_llm, client, cfg)


# What works instead of a window: only what the mode that asked for one can do.
BROWSER = "spacewar-ai --serve, then open it in a browser"
WINDOWLESS = {
    "human-play": f"play in the browser instead ({BROWSER}: /play)",
    "replay": "write it as a video with --record FILE.mp4 or as a page with --html FILE.html, "
              f"or watch it in the browser ({BROWSER}: /replays)",
    "games": "film the games with --record FILE.mp4 instead of --render, or watch them in the "
             f"browser ({BROWSER}: /watch)",
    "training": "leave out --render and follow the run in TensorBoard (tensorboard --logdir "
                "runs)",
}


def check_display(parser, what: str, instead: str) -> None:
    """Refuse a window where none can open, before any game: on Linux with no display named
    (DISPLAY, WAYLAND_DISPLAY) and no video driver chosen (SDL_VIDEODRIVER, such as dummy), SDL
    would play on invisibly, and a person would wait for a window that never comes. `instead`:
    the key of WINDOWLESS that says what works without one."""
    env = os.environ
    if (not sys.platform.startswith("linux") or env.get("SDL_VIDEODRIVER")
            or env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return
    parser.error(f"{what} opens a window, and no display is here (DISPLAY is unset): "
                 f"{WINDOWLESS[instead]}")
