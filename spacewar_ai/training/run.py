"""`train(cfg)`: one training run of whichever algorithm the config names, from the table below.

| algorithm | learns from | starts from | module |
|---|---|---|---|
| ppo, dqn | games against the league | nothing, a checkpoint (`--init-from`), a resumed run, or champions | online/trainer.py |
| bc, cql | a recorded dataset | nothing | offline/learners.py |
| sft | a recorded dataset | a base language model | lm/sft.py |
| grpo | games against `[grpo] opponents` | an SFT adapter (`--init-from`, required) | lm/grpo.py |
| dagger | its own games, labelled by `[dagger] teacher` (and a dataset) | an SFT adapter (`--init-from`, required) | lm/dagger.py |

Each algorithm's settings are its own config section ([ppo], [dqn], [offline], [sft], [grpo],
[dagger]; DAgger trains with [sft]'s batch size, held-out decisions and compute);
what every run shares is [train]. The table also says what each algorithm cannot take (a resume,
a starting model, champions), and `train` refuses those in one line before any work.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from typing import Any, Callable

from ..config import RunConfig
from ..util.errors import UserError
from ..util.workers import Where


@dataclass(frozen=True)
class RunRequest:
    """What a command asks of one run beyond its config: what it starts from (`start_from`, a
    model; `resume`, a run's latest.pt; `champion`, the best models we know as opponents), how
    it reports (`quiet`, `render`, an LLM `guide` of its exploration) and where its rollout
    workers run (`where`, util.workers.Where: a child process each by default, Ray actors, or
    "inline" objects in this process). The CLI builds one; `train` and each algorithm read it."""

    start_from: str | None = None
    resume: str | None = None
    champion: bool = False
    ratings_file: str | None = None
    render: bool = False
    quiet: bool = False
    guide: Any = None
    where: Where = Where("local")


@dataclass(frozen=True)
class Algorithm:
    run: Callable[[RunConfig, RunRequest], dict[str, Any]]  # the run -> its summary
    what: str  # how it learns, for the one-line refusals
    starts_from: str  # "optional" (a checkpoint), "required" (an adapter) or "" (nothing)
    resumes: bool  # --resume continues a run of it
    champions: bool  # --champion-train trains it further against the best models
    # What it reads instead of the flags it does not read (config.unread_flags, and `ignores`),
    # for the CLI's one-line refusal.
    instead: str = ""
    ignores: tuple[str, ...] = ()  # flags that set no config field, by their dest


def _online(cfg: RunConfig, request: RunRequest):
    """PPO or DQN (online/trainer.py): a new run, from a model, resumed, or against champions; PPO's
    games on rollout workers with [train] rollout_workers (online/rollouts.py)."""
    from ..agents.checkpoints import load_checkpoint
    from ..pilots.build import spec_path
    from ..rating.ratings import best_models
    from .online.trainer import Trainer, human_play_command, planner_command

    start_from, champion, guide = request.start_from, request.champion, request.guide
    init = None
    if start_from:
        init = spec_path(start_from)
        if init is None:
            raise UserError(f"--init-from {start_from!r}: training starts from a checkpoint "
                            "file (or pretrained), not a scripted pilot or a planner; an LM's "
                            "adapter trains with --algorithm grpo --init-from ADAPTER")
        if init.is_dir():
            raise UserError(f"--init-from {start_from}: is a folder; give the checkpoint file "
                            f"in it, such as {init / 'best.pt'}")
        if not init.is_file():
            raise UserError(f"--init-from {start_from}: no such file; give a checkpoint file "
                            "(checkpoints/<run>/best.pt) or pretrained")
        algorithm = load_checkpoint(init)["algorithm"]
        if algorithm != cfg.train.algorithm and champion:
            raise UserError(f"--champion-train continues a {cfg.train.algorithm} model; "
                            f"{start_from} holds a {algorithm} model: train it with "
                            f"--algorithm {algorithm}")
        if algorithm != cfg.train.algorithm:
            # A model of another algorithm (CQL's Q-network for PPO, say) is imitated first.
            cfg.train = dataclasses.replace(cfg.train, warm_start=f"{algorithm}:{init}")
            init = None
    champions = None
    if champion:
        found = best_models(cfg.train.checkpoint_dir, request.ratings_file, exclude=init,
                            game=cfg.game)
        # No other models yet: the model trains against itself first.
        champions = [str(path) for path, _ in found[:3]] or [str(init)]
        print("champions: " + ", ".join(champions))
        cfg.league = dataclasses.replace(cfg.league, curriculum=("heuristic:hard",),
                                         scripted_share=0.3, past_share=0.8)
    trainer = Trainer(cfg, resume=request.resume, init_weights=init, champions=champions,
                      render=request.render, quiet=request.quiet, guide=guide,
                      where=request.where)
    refused = False
    try:
        summary = trainer.run()
        print(f"checkpoints: {summary['run_dir']}  tensorboard --logdir "
              f"{shlex.quote(str(summary['log_dir']))}")
        return summary
    except UserError:
        # A refusal (another live run on this name, say) is its one line: nothing to report.
        refused = True
        raise
    finally:
        if guide is not None and not refused:
            print(f"LLM-guided exploration actions: {guide.used:,}")
        if guide is not None:
            guide.close()
        model = trainer.opponent_model
        if not refused:
            print(planner_command(trainer.run_dir, cfg.train.eval_opponent,
                                  None if model is None else model.accuracy))
            fly = human_play_command(trainer.run_dir)
            if fly:
                print(fly)


def _offline(cfg: RunConfig, request: RunRequest):
    from .offline.learners import train_bc, train_cql

    return (train_bc if cfg.train.algorithm == "bc" else train_cql)(cfg, request.quiet)


def _sft(cfg: RunConfig, request: RunRequest):
    from .lm.sft import train_sft

    return train_sft(cfg, request.quiet)


def _grpo(cfg: RunConfig, request: RunRequest):
    from .lm.grpo import train_grpo

    return train_grpo(cfg, request.start_from, request.quiet)


def _dagger(cfg: RunConfig, request: RunRequest):
    from .lm.dagger import train_dagger

    return train_dagger(cfg, request.start_from, request.quiet)


# The flags of a learner's own games that learning from data (or an LM's games) reads not.
LEARNER_GAMES = ("render", "use_llm")
DATASET_ALONE = "which learns from --dataset alone"
PLAYS = "which learns by playing the league ([league], [train] eval_opponent)"
ON_ITS_BASE = "trains on the base its --init-from adapter names"
ALGORITHMS = {
    "ppo": Algorithm(_online, "learns by playing", "optional", True, True, PLAYS),
    "dqn": Algorithm(_online, "learns by playing", "optional", True, True, PLAYS),
    "bc": Algorithm(_offline, "learns from a dataset alone", "", False, False, DATASET_ALONE,
                    LEARNER_GAMES),
    "cql": Algorithm(_offline, "learns from a dataset alone", "", False, False,
                     f"{DATASET_ALONE}; --timesteps sets conservative Q-learning's gradient "
                     "steps", LEARNER_GAMES),
    "sft": Algorithm(_sft, "trains a new adapter from a dataset", "", False, False,
                     DATASET_ALONE, LEARNER_GAMES),
    "grpo": Algorithm(_grpo, "trains an LM adapter further by playing", "required", False,
                      False, f"which {ON_ITS_BASE} and plays --episodes games (or [grpo] "
                      "iterations x games)", (*LEARNER_GAMES, "checkpoint")),
    "dagger": Algorithm(_dagger, "trains an LM adapter on its own games' states, labelled by a "
                        "teacher", "required", False, False,
                        f"which {ON_ITS_BASE} and plays --episodes games in all (or [dagger] "
                        "rounds x games)", (*LEARNER_GAMES, "checkpoint")),
}


def train(cfg: RunConfig, request: RunRequest | None = None, **asked) -> dict[str, Any]:
    """One training run of `cfg.train.algorithm`, as `request` (or the RunRequest fields given
    as keywords) asks: new (from scratch, or from the model `start_from` names), resumed, or,
    with `champion`, `start_from` trained further against the best models we know
    (ratings.best_models) and the hard pilot. Returns the run's summary; PPO and DQN runs end by
    printing how to play the result with a lookahead."""
    if request is not None and asked:
        raise TypeError("give train a RunRequest or its fields as keywords, not both")
    request = request or RunRequest(**asked)
    name = cfg.train.algorithm
    algorithm = ALGORITHMS[name]
    refused = [flag for flag, given, allowed in (
        ("--resume", request.resume, algorithm.resumes),
        ("--init-from", request.start_from, bool(algorithm.starts_from)),
        ("--champion-train", request.champion, algorithm.champions)) if given and not allowed]
    if refused:
        raise UserError(f"--algorithm {name} {algorithm.what}: {' and '.join(refused)} "
                        f"{'does' if len(refused) == 1 else 'do'} not apply")
    if algorithm.starts_from == "required" and not request.start_from:
        raise UserError(f"--algorithm {name} {algorithm.what}: name the adapter it starts from "
                        "with --init-from ADAPTER (a run of --algorithm sft)")
    return algorithm.run(cfg, request)
