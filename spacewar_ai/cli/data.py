"""Datasets: recording games as a Minari dataset, and a dataset's card."""

from __future__ import annotations

from . import common
from .common import CONFIG, EPISODES, PLAYERS, QUIET, RAY, REWARD, SEED
from .parser import flag, mode

DATASET_ID = flag("--dataset-id", "training", metavar="NAME",
                  help="--datagen: the dataset's name (Minari's namespace/name-vN form; "
                       "spacewar/ and -v0 added if left out)")


@mode("datagen", reads=(PLAYERS, EPISODES, DATASET_ID, SEED, REWARD, CONFIG, QUIET, *RAY),
      flag_help="record --episodes games between --players A,B as a Minari dataset "
                "(--dataset-id NAME)")
def datagen(parser, args) -> int:
    from ..training.datasets import dataset_folder, dataset_id, generate
    from ..util.preflight import check_games, writable

    specs = common.split_specs(args.players)
    if len(specs) != 2 or not all(specs):
        parser.error("--datagen needs --players A,B (the two pilots whose games are recorded)")
    if not args.dataset_id:
        parser.error("--datagen needs --dataset-id NAME (what the dataset will be called)")
    cfg = common.run_config(args)
    check_games("--episodes", args.episodes or 200)
    writable(dataset_folder(dataset_id(args.dataset_id)), "the dataset's folder", folder=True,
             chosen_for_the_user=True)
    report = generate([tuple(specs)], args.episodes or 200, args.dataset_id, args.seed or 0,
                      cfg.reward, cfg.game, args.quiet,
                      where=common.where(args))
    print(report.summary())
    return 0


@mode("dataset_info", reads=(), metavar="NAME",
      flag_help="print a dataset's card: pilots, size, win rates, scores")
def dataset_info(parser, args) -> int:
    from ..training.datasets import info

    print(info(args.dataset_info))
    return 0
