"""Modes that play games to watch or measure: evaluation, demos, human play and replays."""

from __future__ import annotations

from . import common
from .common import (
    CHECKPOINT,
    CHECKPOINT_DIR,
    CONFIG,
    EPISODES,
    EVAL_EPISODES,
    OPPONENT,
    PHOSPHOR,
    PLAYERS,
    QUIET,
    RATINGS_FILE,
    RAY,
    RECORD,
    RENDER,
    RESULTS,
    SAVE_REPLAYS,
    SCALE,
    SEED,
)
from .parser import count, flag, flag_name, mode

STOCHASTIC = flag("--stochastic", "players", action="store_true",
                  help="evaluate the sampling policy instead of the greedy one")
PANEL = flag("--panel", "players", action="store_true",
             help="evaluate against every pilot of the generalization panel (pilots no training "
                  "meets), --eval-episodes games each, instead of --opponent")
DIFFICULTY = flag("--difficulty", "play", metavar="LEVEL",
                  help="a level of the difficulty ladder, 1 (a beginner's opponent) to the "
                       "strongest planner (docs/human-play.md), or easy, medium, hard, insane "
                       "(levels of it); auto (the default): the level nearest even against your "
                       "rating, chosen again after every round")
PLAYER = flag("--player", "play", metavar="NAME[,NAME]",
              help="your name in the player book (runs/players.db), where your rated rounds "
                   "and rating are kept (default: your login name); two names with "
                   "--two-player rate both people")
TWO_PLAYER = flag("--two-player", "play", action="store_true",
                  help="two people at one keyboard, as in 1962")
SCORE_LIMIT = flag("--score-limit", "play", type=count(1),
                   help="points that win the match (default 5)")
HTML = flag("--html", "play", writes="file", metavar="OUT.html",
            help="with --replay: write one self-contained page that plays the replay in any "
                 "browser, no server needed")


@mode("evaluate", reads=(CHECKPOINT, OPPONENT, EVAL_EPISODES, STOCHASTIC, SEED, RENDER, RECORD,
                         SAVE_REPLAYS, RATINGS_FILE, CHECKPOINT_DIR, QUIET, RESULTS, PANEL, CONFIG,
                         *RAY),
      flag_help="play --eval-episodes games of --checkpoint against --opponent")
def evaluate(parser, args) -> int:
    from ..game.recording import open_recorder
    from ..pilots.spec import check_spec
    from ..rating.evaluation import evaluate as run
    from ..util.preflight import check_games

    if not args.checkpoint:
        args.checkpoint = common.published_best(args, "--evaluate")
    if args.render:
        common.check_display(parser, "--render", "games")
    drawn = args.render or args.record
    game = common.game_config(args)
    if args.panel:
        from ..rating.panel import evaluate_panel

        given = [k for k in ("opponent", "render", "record", "save_replays", "results",
                             "ratings_file", "stochastic") if getattr(args, k)]
        if given:
            parser.error(f"{flag_name(given[0])} does not apply to --panel, which plays every "
                         "panel pilot and reports each win rate; drop one of them")
        if args.eval_episodes and args.eval_episodes % 2:
            parser.error(_pairs("--eval-episodes", args.eval_episodes))
        evaluate_panel(args.checkpoint, args.eval_episodes or 200, args.seed or 0, game,
                       quiet=args.quiet, where=common.where(args))
        return 0
    for kept in ("save_replays", "results"):
        if drawn and getattr(args, kept):
            parser.error(f"{flag_name(kept)} keeps games of a match, and --render/--record play "
                         "games one by one to draw them: use one or the other")
    where = common.where(args)
    if drawn:
        where.only_here("--render/--record draw games one by one here")
    games = args.eval_episodes or (1 if drawn else 200)
    check_games("--eval-episodes", games)
    # Both pilots' files, then a bad ratings file, are refused before any file is opened or
    # any game played.
    pilots = [check_spec(text) for text in (args.checkpoint, args.opponent or "heuristic:hard")]
    ratings = None if drawn else common.ratings_file(args, game)
    recorder = open_recorder(args.record, per_decision=True)
    if not args.quiet:
        _say_published_run(args.checkpoint)
    run(*pilots, games, args.seed or 0, game,
        deterministic=not args.stochastic, render=args.render, recorder=recorder,
        keep_actions=args.save_replays or 0, quiet=args.quiet, ratings=ratings,
        results=args.results, where=where)
    return 0


@mode("demo", reads=(PLAYERS, CHECKPOINT, OPPONENT, EPISODES, SEED, RENDER, RECORD, QUIET,
                     RESULTS, CONFIG),
      flag_help="two pilots play (--players A,B); --render shows the window")
def demo(parser, args) -> int:
    from ..game.recording import open_recorder
    from ..pilots.spec import check_spec
    from ..rating.evaluation import evaluate as run
    from ..util.preflight import check_games

    if args.players and (args.checkpoint or args.opponent):
        parser.error("--players names both demo pilots: drop --checkpoint/--opponent, or "
                     "--players")
    if args.players:
        specs = common.split_specs(args.players)
    else:
        specs = [args.checkpoint or "heuristic:hard", args.opponent or "heuristic:medium"]
    if len(specs) != 2 or not all(specs):
        parser.error(f"--players needs exactly two specs for a demo, A,B (got {args.players!r})")
    if args.render:
        common.check_display(parser, "--render", "games")
    drawn = args.render or args.record
    games = args.episodes or (1 if drawn else 200)
    check_games("--episodes", games)
    pilots = [check_spec(text) for text in specs]  # both refused before a file is opened
    run(*pilots, games, args.seed or 0, common.game_config(args), render=args.render,
        recorder=open_recorder(args.record, per_decision=True), quiet=args.quiet,
        results=args.results, label="demo")
    return 0


@mode("human_play", reads=(DIFFICULTY, PLAYER, OPPONENT, CHECKPOINT, TWO_PLAYER, SCORE_LIMIT,
                           SCALE, PHOSPHOR, RECORD, SEED, CONFIG),
      flag_help="fly against the AI (--difficulty, or --opponent SPEC), or --two-player; F1 "
                "shows the keys")
def human_play(parser, args) -> int:
    from ..human.play import play
    from ..rating.difficulty import level_named

    if args.checkpoint and args.opponent:
        parser.error("--checkpoint and --opponent both name the computer opponent: give one")
    opponent = args.opponent or args.checkpoint
    if args.two_player and opponent:
        parser.error("--two-player and --opponent exclude each other: two people need no "
                     "computer opponent")
    if args.difficulty and (opponent or args.two_player):
        parser.error("--difficulty chooses the computer opponent: drop it, or drop "
                     f"{'--opponent' if opponent else '--two-player'}")
    if args.difficulty and args.difficulty.strip().lower() != "auto":
        try:
            level_named(args.difficulty)
        except ValueError as exc:
            parser.error(f"--{exc}")
    players = _players(parser, args.player, args.two_player)
    common.check_display(parser, "--human-play", "human-play")
    play(common.game_config(args), opponent,
         (args.difficulty or "auto").strip().lower(), args.two_player, args.score_limit or 5,
         args.seed or 0, args.scale or 1.0, args.phosphor, args.record, players)
    return 0


def _players(parser, given: str | None, two_player: bool) -> tuple[str, ...]:
    """The people's names --player gives (one; two with --two-player, else none are rated), or
    the login name of one player."""
    import getpass

    from ..rating.difficulty import player_name

    if not given:
        if two_player:
            return ()
        try:
            return (player_name(getpass.getuser()),)
        except (OSError, KeyError, ValueError):
            return ("player",)
    names = [part for part in given.split(",")]
    if len(names) != (2 if two_player else 1):
        parser.error(f"--player {given!r}: give {'two names, A,B' if two_player else 'one name'}"
                     f"{' (the needle first)' if two_player else ' (no comma)'}")
    try:
        return tuple(player_name(name) for name in names)
    except ValueError as exc:
        parser.error(f"--player: {exc}")


@mode("replay", reads=(RECORD, SCALE, PHOSPHOR, HTML), metavar="PATH",
      flag_help="play back a saved replay (runs/replays/*.json) in a window, to a video with "
                "--record, or into one HTML page with --html")
def replay(parser, args) -> int:
    from ..game.replays import play_replay

    if args.html:
        from ..web.app import export_html

        if args.record or args.scale or args.phosphor:
            parser.error("--html writes a page that plays the replay by itself: drop "
                         "--record, --scale and --phosphor")
        print(f"wrote {export_html(args.replay, args.html)}: open it in any browser")
        return 0
    if not args.record:
        common.check_display(parser, "--replay", "replay")
    print(play_replay(args.replay, args.record, args.scale or 1.0, args.phosphor))
    return 0


def _say_published_run(spec: str) -> None:
    """The design's `<algorithm>_best.pt` (and its `_best_model.pt` link) is a copy of some
    run's best.pt: say which, since its name does not."""
    from ..pilots.build import spec_path
    from ..training.evaluation import published_run

    path = spec_path(spec)
    if path is None or "_best" not in path.stem:  # best_name's files and the design's link
        return
    run = published_run(path)
    if run:
        print(f"{spec}: the best model measured so far, run {run}'s best.pt "
              f"({path.parent / run / 'best.pt'})")


def _pairs(flag: str, games: int) -> str:
    near = f"{games - 1} or {games + 1}" if games > 1 else "2"
    return (f"{flag} {games}: a match plays its games in pairs from one start with the sides "
            f"swapped; give an even number, such as {near} (drawn games, with --render or "
            "--record, may be any number)")
