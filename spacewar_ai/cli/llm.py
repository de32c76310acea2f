"""Language models that write strategy files: the iterative loop and the LLM arena."""

from __future__ import annotations

import dataclasses

from . import common
from .common import LLM_ACCESS, LLM_SAMPLES, MATCHES_PER_PAIRING, SEED, TRAINING
from .parser import count, flag, mode

ITERATIONS = flag("--iterations", "llm", type=count(1), help="--iterative: rounds (default 5)")
EPISODES_PER_ITERATION = flag("--episodes-per-iteration", "llm", type=count(2),
                              help="--iterative: games per opponent to score each strategy "
                                   "(default 20)")


@mode("iterative", reads=(*TRAINING, ITERATIONS, EPISODES_PER_ITERATION, LLM_SAMPLES),
      flag_help="LLM strategy training: generate -> evaluate -> feedback -> refine for "
                "--iterations rounds; the RL agent trains against the best strategy between "
                "rounds (--timesteps or --episodes per round)")
def iterative(parser, args) -> int:
    from ..llm.strategies import run_iterative

    cfg = common.run_config(args)
    if args.timesteps is None and args.episodes is None:
        cfg.train = dataclasses.replace(cfg.train, total_timesteps=100_000)
    client = common.llm_client(args)
    guide = common.exploration_guide(args, cfg) if args.use_llm else None
    run_iterative(client, cfg, args.iterations or 5, args.episodes_per_iteration or 20,
                  args.llm_samples or 1, args.episodes or 0, resume=args.resume,
                  start_from=args.checkpoint, render=args.render, quiet=args.quiet,
                  guide=guide, seed=args.seed or 0)
    return 0


@mode("llm_arena", reads=(*LLM_ACCESS, LLM_SAMPLES, MATCHES_PER_PAIRING, SEED),
      flag_help="LLM-written strategies (--llm-samples per provider) play a tournament against "
                "each other and the scripted pilots")
def llm_arena(parser, args) -> int:
    from ..llm.strategies import run_arena

    run_arena(common.llm_client(args), args.llm_samples or 1, args.matches_per_pairing or 20,
              args.seed or 0)
    return 0
