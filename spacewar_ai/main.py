"""Command line: parse flags and dispatch to a mode. No game or learning logic lives here.

Reached three ways with the same flags: `spacewar-ai`, `python -m spacewar_ai`,
`python spacewar_ai/main.py`. Without a mode flag it trains (`--algorithm ppo` by default).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

if __package__ in (None, ""):
    # Run as a file (python spacewar_ai/main.py): make the package importable.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="spacewar-ai",
        description="Train, rate and play against Spacewar! (1962) agents. "
                    "Without a mode flag: train (--algorithm ppo).")
    modes = p.add_argument_group("modes (default: training)")
    modes.add_argument("--evaluate", action="store_true",
                       help="play --eval-episodes games of --checkpoint against --opponent")
    modes.add_argument("--champion-train", action="store_true",
                       help="continue training --checkpoint against the strongest past models")
    modes.add_argument("--tournament", action="store_true",
                       help="round robin between --players; ratings with 95%% intervals, "
                            "crosstable, ratings file")
    modes.add_argument("--demo", action="store_true",
                       help="two pilots play (--players A,B); --render shows the window")
    modes.add_argument("--benchmark", action="store_true",
                       help="print engine, vector env and pilot throughput")
    modes.add_argument("--benchmark-training", action="store_true",
                       help="print PPO training throughput, ours and Stable-Baselines3's")
    modes.add_argument("--export", default=None, metavar="DST",
                       help="write a play-only copy of --checkpoint (no optimizer state) to DST")
    p.add_argument("--ensemble-with", nargs="+", default=None, metavar="CHECKPOINT",
                   help="with --export of a DQN checkpoint: other DQN runs' checkpoints whose "
                        "greedy players join its ensemble in the copy")
    modes.add_argument("--human-play", action="store_true",
                       help="fly against the AI (--difficulty, or --opponent SPEC), or "
                            "--two-player; F1 shows the keys")
    modes.add_argument("--iterative", action="store_true",
                       help="LLM strategy training: generate -> evaluate -> feedback -> refine "
                            "for --iterations rounds; the RL agent trains against the best "
                            "strategy between rounds (--timesteps per round)")
    modes.add_argument("--llm-arena", action="store_true",
                       help="LLM-written strategies (--llm-samples per provider) play a "
                            "tournament against each other and the scripted pilots")
    modes.add_argument("--replay", default=None, metavar="PATH",
                       help="play back a saved replay (runs/replays/*.json) in a window, or to "
                            "a video with --record")

    tr = p.add_argument_group("training")
    tr.add_argument("--algorithm", choices=("ppo", "dqn"), default=None,
                    help="learning algorithm (default ppo)")
    tr.add_argument("--episodes", type=int, default=None,
                    help="training: stop after this many games; demo: games to play")
    tr.add_argument("--timesteps", type=int, default=None,
                    help="training: stop after this many learner decisions (0 with --warm-start: "
                         "save the imitation alone)")
    tr.add_argument("--minutes", type=float, default=None,
                    help="training: also stop after this many minutes of wall clock, whichever "
                         "of --timesteps, --episodes and --minutes comes first")
    tr.add_argument("--num-envs", type=int, default=None, help="games played at once")
    tr.add_argument("--learning-rate", type=float, default=None)
    tr.add_argument("--device", choices=("cpu", "cuda", "auto"), default=None)
    tr.add_argument("--torch-threads", type=int, default=None,
                    help="torch threads (0 = one per core)")
    tr.add_argument("--config", default=None,
                    help="TOML or JSON file with [train] [ppo] [dqn] [league] [game] [reward] "
                         "sections; flags override it")
    tr.add_argument("--checkpoint-dir", default=None, help="where runs are saved (checkpoints/)")
    tr.add_argument("--run-name", default=None, help="name of the run folder")
    tr.add_argument("--resume", default=None, metavar="PATH",
                    help="continue a run from its checkpoint (latest.pt)")
    tr.add_argument("--quiet", action="store_true", help="no live progress line")
    tr.add_argument("--warm-start", default=None, metavar="SPEC",
                    help="learn from this pilot first, e.g. heuristic:hard (PPO: behaviour "
                         "cloning; DQN: its games as demonstrations, DQfD), then by RL")

    ev = p.add_argument_group("evaluation and players")
    ev.add_argument("--checkpoint", default=None, metavar="PATH",
                    help="a checkpoint file, or 'pretrained' for the shipped model (evaluate: "
                         "any player spec, e.g. search:pretrained)")
    ev.add_argument("--opponent", default=None,
                    help="player spec: idle, random, heuristic:easy|medium|hard, pretrained, "
                         "ppo:PATH, dqn:PATH, strategy:PATH.py, search:SPEC[+MODEL] (SPEC with a "
                         "lookahead, forecasting the opponent with MODEL, by default the model "
                         "SPEC's training run learned) or a checkpoint path "
                         "(evaluate: default heuristic:hard; human play: instead of --difficulty)")
    ev.add_argument("--eval-episodes", type=int, default=None,
                    help="games per evaluation (default 200; during training 100)")
    ev.add_argument("--stochastic", action="store_true",
                    help="evaluate the sampling policy instead of the greedy one")
    ev.add_argument("--players", default=None,
                    help="player specs, comma separated (demo: two, default heuristic:hard,"
                         "heuristic:medium; tournament: default every run's best.pt under "
                         "--checkpoint-dir, pretrained and the scripted pilots)")
    to = p.add_argument_group("tournaments")
    to.add_argument("--tournament-mode", choices=("round_robin", "swiss", "elimination"),
                    default="round_robin",
                    help="round_robin: every pair; swiss: pairs by score, no repeats; "
                         "elimination: single elimination seeded by rating")
    to.add_argument("--matches-per-pairing", type=int, default=100,
                    help="games per pair of players, an even number (sides swapped)")
    to.add_argument("--workers", type=int, default=0,
                    help="processes playing pairings (0 = one per core); results do not "
                         "depend on it")
    to.add_argument("--ratings-file", default=None,
                    help="ratings accumulated across tournaments (default "
                         "<checkpoint-dir>/ratings.json)")

    hp = p.add_argument_group("human play, videos and replays")
    hp.add_argument("--difficulty", choices=("easy", "medium", "hard", "insane"), default=None,
                    help="easy: heuristic pilot 3 frames late; medium: best model sampling, 2 "
                         "frames late; hard: best model greedy, 1 frame late; insane: no delay "
                         "(default medium)")
    hp.add_argument("--two-player", action="store_true",
                    help="two people at one keyboard, as in 1962")
    hp.add_argument("--score-limit", type=int, default=5, help="points that win the match")
    hp.add_argument("--scale", type=float, default=1.0,
                    help="window scale (1.0 = 640 x 640 pixels)")
    hp.add_argument("--phosphor", action="store_true",
                    help="phosphor trails: frames fade out instead of being cleared")
    hp.add_argument("--record", default=None, metavar="PATH",
                    help="record human play, --demo, --evaluate or --replay games to a .mp4 or "
                         ".gif (drawn off-screen for demo and evaluate)")
    hp.add_argument("--save-replays", type=int, default=0, metavar="N",
                    help="evaluate: save N games as replays; tournament: N games per pairing "
                         "(under runs/replays/)")

    llm = p.add_argument_group("LLM strategies (see README: keys in <keys-dir>/*.key.txt, .env "
                               "or the environment)")
    llm.add_argument("--iterations", type=int, default=5, help="--iterative: refinement rounds")
    llm.add_argument("--episodes-per-iteration", type=int, default=20,
                     help="--iterative: games per opponent to score each strategy")
    llm.add_argument("--llm-samples", type=int, default=1,
                     help="strategies asked for per round (--iterative) or per provider "
                          "(--llm-arena)")
    llm.add_argument("--use-llm", nargs="?", const="generate", default=None, metavar="STRATEGY",
                     help="training: about 10%% of exploration actions come from an LLM "
                          "strategy (a strategy file, or one generated now)")
    llm.add_argument("--llm-provider", default=None,
                     help="anthropic (claude), openai, google (gemini), xai (grok), groq, "
                          "together, mistral, deepseek, openrouter; default: every provider "
                          "with a key, in that order, until one answers")
    llm.add_argument("--llm-model", default=None, help="model name for the first provider")
    llm.add_argument("--llm-base-url", default=None, metavar="URL",
                     help="any OpenAI-compatible server (llama.cpp, vLLM, Ollama), e.g. "
                          "http://127.0.0.1:8080/v1; a key is optional")
    llm.add_argument("--keys-dir", default=".", help="folder with *.key.txt files and .env")
    llm.add_argument("--llm-local", action="store_true",
                     help="use a local GGUF model first (llama-cpp-python), then the cloud")
    llm.add_argument("--llm-local-model", default=None, metavar="PATH",
                     help="the local GGUF file (default: the catalog's pick, in models/)")
    llm.add_argument("--local-llm-only", action="store_true", help="only the local model")
    llm.add_argument("--include-local-llm", action="store_true",
                     help="try the local model after the cloud providers")
    llm.add_argument("--gpu-vram", type=float, default=None, metavar="GB",
                     help="GPU memory to plan the local model for (overrides detection)")

    common = p.add_argument_group("common")
    common.add_argument("--render", action="store_true", help="show a game in a window")
    common.add_argument("--seed", type=int, default=None, help="random seed (default 0)")
    common.add_argument("--quick", action="store_true",
                        help="benchmarks: a tenth of the work, for a smoke test")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    for name in ("episodes", "num_envs", "eval_episodes"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1 (got {value})")
    if args.timesteps is not None and args.timesteps < 0:
        parser.error(f"--timesteps must be >= 1, or 0 with --warm-start for the imitation alone "
                     f"(got {args.timesteps})")
    if args.learning_rate is not None and not args.learning_rate > 0:
        parser.error(f"--learning-rate must be > 0 (got {args.learning_rate})")
    if args.save_replays < 0:
        parser.error(f"--save-replays must be >= 0 (got {args.save_replays})")
    chosen = [m for m in ("evaluate", "champion_train", "demo", "benchmark", "benchmark_training",
                          "export", "tournament", "human_play", "replay", "iterative",
                          "llm_arena") if getattr(args, m)]
    if len(chosen) > 1:
        parser.error("choose one mode: " + ", ".join("--" + m.replace("_", "-") for m in chosen))
    mode = chosen[0] if chosen else "train"
    if args.ensemble_with and mode != "export":
        parser.error("--ensemble-with joins models in a copy: use it with --export DST "
                     "--checkpoint PATH")
    try:
        return {"evaluate": _evaluate, "champion_train": _train, "demo": _demo,
                "benchmark": _benchmark, "benchmark_training": _benchmark_training,
                "export": _export, "tournament": _tournament, "human_play": _human_play,
                "replay": _replay, "iterative": _iterative, "llm_arena": _llm_arena,
                "train": _train}[mode](parser, args)
    except KeyboardInterrupt:
        print("\ninterrupted: the last checkpoint written is intact", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into `head` or similar: stop quietly, like other command-line tools.
        sys.stdout = open(os.devnull, "w")
        return 0


def _benchmark(parser, args) -> int:
    from spacewar_ai.benchmark import run_benchmark

    run_benchmark(seed=args.seed or 0, quick=args.quick)
    return 0


def _benchmark_training(parser, args) -> int:
    from spacewar_ai.benchmark import run_training_benchmark

    run_training_benchmark(seed=args.seed or 0, quick=args.quick)
    return 0


def _run_config(parser, args):
    """The resolved run config: defaults, then --config FILE, then flags."""
    from spacewar_ai.training import RunConfig, load_run_config, saved_run_config

    try:
        # A resumed run keeps its own settings (its saved config); --config and flags given again
        # override them, as they override the defaults for a new run.
        base = saved_run_config(args.resume) if args.resume else RunConfig()
        cfg = load_run_config(args.config, base) if args.config else base
        train = {}
        for flag, field in (("algorithm", "algorithm"), ("num_envs", "num_envs"),
                            ("timesteps", "total_timesteps"), ("episodes", "episodes"),
                            ("seed", "seed"), ("device", "device"),
                            ("torch_threads", "torch_threads"),
                            ("checkpoint_dir", "checkpoint_dir"), ("run_name", "run_name"),
                            ("eval_episodes", "eval_episodes"), ("warm_start", "warm_start"),
                            ("minutes", "max_minutes")):
            if getattr(args, flag) is not None:
                train[field] = getattr(args, flag)
        if args.episodes is not None and args.timesteps is None:
            train["total_timesteps"] = 10**12  # --episodes alone sets the budget
        cfg.train = dataclasses.replace(cfg.train, **train)
        if args.learning_rate is not None:
            if cfg.train.algorithm == "ppo":
                cfg.ppo = dataclasses.replace(cfg.ppo, learning_rate=args.learning_rate)
            else:
                cfg.dqn = dataclasses.replace(cfg.dqn, learning_rate=args.learning_rate)
    except ValueError as exc:
        parser.error(str(exc))
    return cfg


def _train(parser, args) -> int:
    from spacewar_ai.checkpoints import CheckpointError
    from spacewar_ai.players import PRETRAINED_PATH
    from spacewar_ai.training import Trainer, champion_paths

    cfg = _run_config(parser, args)
    init, champions = None, None
    if args.champion_train:
        if not args.checkpoint:
            parser.error("--champion-train needs --checkpoint PATH (the model to train further)")
        init = str(PRETRAINED_PATH) if args.checkpoint == "pretrained" else args.checkpoint
        champions = champion_paths(cfg.train.checkpoint_dir, exclude=init)
        if not champions:
            champions = [init]  # no other models yet: the model trains against itself first
        print("champions: " + ", ".join(champions))
        cfg.league = dataclasses.replace(cfg.league, curriculum=("heuristic:hard",),
                                         scripted_share=0.3, past_share=0.8)
    guide = None
    try:
        if args.use_llm:
            guide = _exploration_guide(parser, args, cfg)
        trainer = Trainer(cfg, resume=args.resume, init_weights=init, champions=champions,
                          render=args.render, quiet=args.quiet, guide=guide)
    except (CheckpointError, ValueError) as exc:
        parser.error(str(exc))
    try:
        summary = trainer.run()
    finally:
        if guide is not None:
            print(f"LLM-guided exploration actions: {guide.used:,}")
            guide.close()
    print(f"checkpoints: {summary['run_dir']}  tensorboard --logdir {summary['log_dir']}")
    model = summary.get("opponent_model")
    if model:
        # search: rolls out a PPO policy; a DQN run's model serves one as +MODEL.
        spec = (os.path.join(summary["run_dir"], "best.pt") if cfg.train.algorithm == "ppo"
                else f"pretrained+{model['path']}")
        print(f"opponent model of {model['of']}: {model['path']} ({model['accuracy']:.1%} of "
              f"its last moves foreseen); plan with it: spacewar-ai --evaluate --checkpoint "
              f"search:{spec} --opponent {model['of']}")
    return 0


def _export(parser, args) -> int:
    from spacewar_ai.checkpoints import CheckpointError, export_for_play

    if not args.checkpoint:
        parser.error("--export needs --checkpoint PATH (the checkpoint to copy)")
    try:
        size = export_for_play(args.checkpoint, args.export, args.ensemble_with or ())
    except CheckpointError as exc:
        parser.error(str(exc))
    print(f"wrote {args.export} ({size / 1e6:.2f} MB)")
    return 0


def _evaluate(parser, args) -> int:
    from spacewar_ai.training import evaluate

    if not args.checkpoint:
        parser.error("--evaluate needs --checkpoint PATH (or --checkpoint pretrained)")
    from pathlib import Path

    from spacewar_ai.tournament import Entrant, RatingsFile, TournamentResult, standings

    ratings_path = Path(args.ratings_file) if args.ratings_file else \
        Path(args.checkpoint_dir or "checkpoints") / "ratings.json"
    try:
        ratings = RatingsFile(ratings_path)
        recorder = _recorder(parser, args, per_step=True)
        drawn = args.render or recorder is not None
        out = evaluate(args.checkpoint, args.opponent or "heuristic:hard",
                       args.eval_episodes or (1 if drawn else 200), args.seed or 0,
                       deterministic=not args.stochastic, render=args.render, recorder=recorder,
                       keep_actions=args.save_replays)
    except ValueError as exc:
        parser.error(str(exc))
    _finish_recording(recorder)
    if args.save_replays and "match" in out:
        from spacewar_ai.config import GameConfig
        from spacewar_ai.replays import save_match_replays

        saved = save_match_replays(out["match"], GameConfig(), "evaluate")
        print(f"  saved {len(saved)} replays under {saved[0].parent if saved else 'runs/replays'}")
    if "match" in out:
        # Evaluations count in the ratings like tournament games.
        entrants = [Entrant(spec, p.name, getattr(p, "identity", p.name))
                    for spec, p in out["players"]]
        result = TournamentResult(entrants, [(0, 1, out["match"])])
        ratings.add(result, standings(result), "evaluation")
        print(f"  added to ratings: {ratings_path}")
    return 0


def _demo(parser, args) -> int:
    from spacewar_ai.arena import format_result, play_match, watch_games
    from spacewar_ai.players import resolve_player

    specs = [s.strip() for s in (args.players or "heuristic:hard,heuristic:medium").split(",")
             if s.strip()]
    if len(specs) != 2:
        parser.error(f"--players needs exactly two specs for a demo (got {args.players!r})")
    seed = args.seed or 0
    try:
        pilots = [resolve_player(s, seed=seed + i) for i, s in enumerate(specs)]
    except ValueError as exc:
        parser.error(str(exc))
    recorder = _recorder(parser, args, per_step=True)
    if args.render or recorder is not None:
        games = args.episodes or 1
        for k, info in enumerate(watch_games(pilots[0], pilots[1], games, seed,
                                             recorder=recorder)):
            print(f"game {k + 1}: winner {_side(info['winner'], specs)}, "
                  f"deaths: ship 0 {_cause(info['ship_0_death_cause'])}, "
                  f"ship 1 {_cause(info['ship_1_death_cause'])}")
        _finish_recording(recorder)
        return 0
    games = args.episodes or 200
    games += games % 2
    print(format_result(play_match(pilots[0], pilots[1], games, seed)))
    return 0


def _tournament(parser, args) -> int:
    import json
    import time
    from pathlib import Path

    from spacewar_ai.players import PRETRAINED_PATH
    from spacewar_ai.tournament import (RatingsFile, crosstable_markdown, deaths_markdown,
                                        play_elimination, play_round_robin, play_swiss,
                                        resolve_entrants, standings)

    ck_dir = Path(args.checkpoint_dir or "checkpoints")
    if args.players:
        specs = [s.strip() for s in args.players.split(",") if s.strip()]
    else:
        specs = sorted(str(p) for p in ck_dir.glob("*/best.pt"))
        if PRETRAINED_PATH.is_file():
            specs.append("pretrained")
        specs += ["idle", "random", "heuristic:easy", "heuristic:medium", "heuristic:hard"]
    if len(specs) < 2:
        parser.error("a tournament needs at least two players (--players A,B,...)")
    if args.workers < 0:
        parser.error(f"--workers must be >= 0 (got {args.workers})")
    ratings_path = Path(args.ratings_file) if args.ratings_file else ck_dir / "ratings.json"
    workers = args.workers or (os.cpu_count() or 1)
    try:
        ratings = RatingsFile(ratings_path)
        entrants = resolve_entrants(specs)
        games, seed = args.matches_per_pairing, args.seed or 0
        if args.tournament_mode == "swiss":
            result = play_swiss(entrants, games, seed, workers=workers,
                                keep_actions=args.save_replays)
        elif args.tournament_mode == "elimination":
            known = ratings.data["players"]
            seeding = [known.get(e.identity, {}).get("rating", 1500.0 - k)
                       for k, e in enumerate(entrants)]
            result = play_elimination(entrants, games, seed, seeding, workers=workers,
                                      keep_actions=args.save_replays)
        else:
            result = play_round_robin(entrants, games, seed, workers=workers,
                                      keep_actions=args.save_replays)
    except ValueError as exc:
        parser.error(str(exc))
    rows = standings(result)
    table = crosstable_markdown(result, rows) + "\n\nDeaths by cause:\n\n" + deaths_markdown(rows)
    print(f"{args.tournament_mode}: {len(entrants)} players, {args.matches_per_pairing} games "
          f"per pairing, "
          f"{sum(r.n for _, _, r in result.matches)} games in {result.seconds:.1f} s\n")
    print(table)
    out_dir = Path("runs") / "tournaments" / time.strftime("%Y%m%d-%H%M%S")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "crosstable.md").write_text(table + "\n")
    (out_dir / "standings.json").write_text(json.dumps(rows, indent=1))
    from spacewar_ai.charts import ratings_chart

    ratings_chart(out_dir / "ratings.png", [r["name"] for r in rows], [r["rating"] for r in rows],
                  [r["ci95"] for r in rows],
                  f"Bradley-Terry ratings, 95% intervals ({args.tournament_mode})")
    ratings.add(result, rows, f"{args.tournament_mode} of {len(entrants)}")
    print(f"\nwrote {out_dir}/crosstable.md, standings.json, ratings.png; ratings: {ratings_path}")
    if args.save_replays:
        from spacewar_ai.config import GameConfig
        from spacewar_ai.replays import save_match_replays

        saved = [p for i, j, r in result.matches
                 for p in save_match_replays(r, GameConfig(), f"{r.name_a}-vs-{r.name_b}")]
        print(f"saved {len(saved)} replays under runs/replays/")
    return 0


def _recorder(parser, args, per_step: bool):
    """A VideoRecorder for --record, or None; per_step: one frame per decision (demo, evaluate,
    decision-level replays) rather than per frame."""
    if not args.record:
        return None
    from spacewar_ai.config import GameConfig
    from spacewar_ai.recording import RecordingError, VideoRecorder

    cfg = GameConfig()
    try:
        return VideoRecorder(args.record, cfg.fps / cfg.frame_skip if per_step else cfg.fps)
    except RecordingError as exc:
        parser.error(str(exc))


def _finish_recording(recorder) -> None:
    if recorder is not None:
        path = recorder.close()
        if path is not None:
            print(f"recorded {recorder.frames} frames to {path}")


def _human_play(parser, args) -> int:
    from spacewar_ai.config import GameConfig
    from spacewar_ai.play import HumanGame, difficulty_opponent, spec_opponent
    from spacewar_ai.recording import RecordingError, VideoRecorder

    game_cfg = _run_config(parser, args).game if args.config else GameConfig()
    if args.two_player and args.opponent:
        parser.error("--two-player and --opponent exclude each other: two people need no "
                     "computer opponent")
    seed = args.seed or 0
    opponent = None
    try:
        if args.opponent:
            opponent = spec_opponent(args.opponent, game_cfg, seed)
        elif not args.two_player:
            opponent = difficulty_opponent(args.difficulty or "medium", game_cfg,
                                           args.checkpoint_dir or "checkpoints",
                                           args.ratings_file, seed)
        recorder = VideoRecorder(args.record, game_cfg.fps) if args.record else None
        if opponent is not None:
            print(f"opponent: {opponent.name} - {opponent.reason}")
        game = HumanGame(game_cfg, opponent, two_player=args.two_player,
                         score_limit=args.score_limit, seed=seed, scale=args.scale,
                         phosphor=args.phosphor, recorder=recorder,
                         difficulty="" if args.opponent or args.two_player
                         else (args.difficulty or "medium"))
    except (ValueError, RecordingError) as exc:
        parser.error(str(exc))
    print("keys: F1 or H for help, P pause, R restart round, Esc quit")
    results = game.run()
    _finish_recording(recorder)
    for r in results:
        print(f"round {r['round']}: winner {r['winner'] if r['winner'] is not None else 'none'}, "
              f"deaths {r['causes'][0]} / {r['causes'][1]}, score {r['score'][0]}:"
              f"{r['score'][1]}")
    if game.replays:
        print(f"replays: {len(game.replays)} saved under {game.replays[0].parent}/ (play one "
              f"with --replay {game.replays[-1]})")
    return 0


def _replay(parser, args) -> int:
    from spacewar_ai.rendering import Renderer
    from spacewar_ai.replays import ReplayError, load_replay, replay_game

    try:
        replay = load_replay(args.replay)
        cfg = replay["game_config"]
        recorder = None
        if args.record:
            from spacewar_ai.recording import RecordingError, VideoRecorder

            try:
                recorder = VideoRecorder(args.record, cfg.fps / cfg.frame_skip)
            except RecordingError as exc:
                parser.error(str(exc))
        renderer = Renderer(cfg, int(round(640 * args.scale)),
                            "rgb_array" if recorder else "human",
                            f"Spacewar! AI - replay {args.replay}", phosphor=args.phosphor)
        names = " vs ".join(replay.get("players", []))
        clock = None if recorder else renderer.pg.time.Clock()

        def show(batch):
            frame = renderer.draw(batch, 0, (f"replay: {names}",), wait=False)
            if recorder is not None:
                recorder.add(frame)
            elif renderer.closed:
                return False  # the window was closed: stop quietly
            else:
                clock.tick(cfg.fps / cfg.frame_skip)
            return True

        batch = replay_game(replay, show)
    except ReplayError as exc:
        parser.error(str(exc))
    renderer.close()
    _finish_recording(recorder)
    steps = len(replay["actions"][0])
    from spacewar_ai.replays import state_hash

    same = state_hash(batch) == replay.get("final_state")
    print(f"replayed {steps} steps ({names}); result {replay.get('result')}; final state "
          f"{'identical to the recording' if same else 'not reached (stopped early)'}")
    return 0


def _llm_client(parser, args):
    from spacewar_ai.llm_integration import APIKeyManager, build_client

    try:
        keys = APIKeyManager(args.keys_dir)
        for warning in keys.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        client = build_client(keys, args.llm_provider, args.llm_model, args.llm_base_url,
                              local=args.llm_local, local_model=args.llm_local_model,
                              local_only=args.local_llm_only,
                              include_local=args.include_local_llm, gpu_vram=args.gpu_vram)
    except ValueError as exc:
        parser.error(str(exc))
    print("LLM providers, in order: " + ", ".join(f"{c.provider} ({c.model})"
                                                  for c in client.clients))
    return keys, client


def _exploration_guide(parser, args, cfg):
    from pathlib import Path

    from spacewar_ai.llm_strategies import LLMExplorationGuide, LLMStrategyGenerator
    from spacewar_ai.sandbox import load_strategy_file

    if args.use_llm != "generate":
        load_strategy_file(args.use_llm)  # a StrategyError (ValueError) names the problem
        path = args.use_llm
    else:
        keys, client = _llm_client(parser, args)
        out = Path(cfg.train.log_dir) / (cfg.train.run_name or "llm-guide") / "llm" / "guide"
        cand = LLMStrategyGenerator(client, out.parent, cfg.game, redact=keys.redact).generate(
            out.name)
        if not cand.ok:
            raise ValueError(f"the LLM did not produce a usable strategy: {cand.error}")
        path = cand.path
    print(f"LLM exploration guide: {path} (about 10% of exploration actions)")
    return LLMExplorationGuide(path, 0.1, cfg.train.seed, cfg.game.num_actions)


def _iterative(parser, args) -> int:
    from spacewar_ai.llm_integration import LLMError
    from spacewar_ai.llm_strategies import IterativeStrategyTrainer
    from spacewar_ai.training import Trainer

    for flag in ("iterations", "episodes_per_iteration", "llm_samples"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be >= 1")
    if args.episodes is not None:
        parser.error("--iterative trains the agent --timesteps decisions between rounds; "
                     "--episodes does not apply here")
    cfg = _run_config(parser, args)
    if args.timesteps is None:
        import dataclasses as dc

        cfg.train = dc.replace(cfg.train, total_timesteps=100_000)
    steps_between = cfg.train.total_timesteps
    keys, client = _llm_client(parser, args)
    try:
        trainer = Trainer(cfg, resume=args.resume, quiet=args.quiet)
    except ValueError as exc:
        parser.error(str(exc))
    # The agent trains only between refinements: the loop raises its budget by --timesteps
    # (default 100,000) after each round.
    loop = IterativeStrategyTrainer(client, trainer.log_dir, cfg.game, args.iterations,
                                    args.episodes_per_iteration, args.llm_samples,
                                    trainer=trainer, train_steps=steps_between,
                                    redact=keys.redact, seed=args.seed or 0)
    try:
        state = loop.run()
    except LLMError as exc:
        parser.exit(1, f"spacewar-ai: error: {exc}\n")
    best = state.get("best")
    print(f"LLM log: {loop.llm_dir}")
    if best:
        print(f"best strategy: {best['path']} (score {best['score']:.0%}, iteration "
              f"{best['iteration'] + 1}); agent checkpoints: {trainer.run_dir}")
    else:
        print("no usable strategy was produced; see the attempts under " + str(loop.llm_dir))
    for line in getattr(client, "failures", []):
        print(f"provider failure: {line}", file=sys.stderr)
    return 0


def _llm_arena(parser, args) -> int:
    import json
    import time
    from pathlib import Path

    from spacewar_ai.llm_integration import FailoverClient, LLMError
    from spacewar_ai.llm_strategies import LLMStrategyGenerator, play_llm_arena
    from spacewar_ai.tournament import crosstable_markdown, standings

    keys, client = _llm_client(parser, args)
    out = Path("runs") / "llm-arena" / time.strftime("%Y%m%d-%H%M%S")
    paths = []
    for c in client.clients:
        gen = LLMStrategyGenerator(FailoverClient([c], keys.redact), out, redact=keys.redact)
        for k in range(args.llm_samples):
            label = f"{c.provider}-{k}"
            try:
                cand = gen.generate(label)
            except LLMError as exc:
                print(f"{label}: {exc}", file=sys.stderr)
                break
            print(f"{label}: " + (f"ok ({cand.attempts} attempt(s))" if cand.ok
                                  else f"rejected: {cand.error}"))
            if cand.ok:
                named = out / f"{label}.py"
                named.write_bytes(Path(cand.path).read_bytes())
                paths.append(str(named))
    if not paths:
        parser.exit(1, "spacewar-ai: error: no LLM produced a usable strategy\n")
    games = args.matches_per_pairing if args.matches_per_pairing != 100 else 20
    result = play_llm_arena(paths, games + games % 2, args.seed or 0)
    rows = standings(result)
    table = crosstable_markdown(result, rows)
    print(table)
    (out / "crosstable.md").write_text(table + "\n")
    (out / "standings.json").write_text(json.dumps(rows, indent=1))
    print(f"wrote {out}/crosstable.md and standings.json")
    return 0


def _side(ship, specs):
    return "none (draw)" if ship is None else f"ship {ship} ({specs[ship]})"


def _cause(cause):
    return "survived" if cause is None else cause.name.lower()


if __name__ == "__main__":
    raise SystemExit(main())
