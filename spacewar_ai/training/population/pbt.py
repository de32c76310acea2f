"""Population-based training on Ray Tune, around this package's own trainer.

`spacewar-ai --pbt --population N --timesteps T --pbt-rounds R` trains N PPO members, each a
Trainer run in rounds as a Tune trainable. After each round every member is measured against a
fixed YARDSTICK, and Tune's PopulationBasedTraining lets the weaker take a better member's
checkpoint and perturbed hyperparameters (learning rate, entropy, clip, GAE lambda, the reward
personality). Deterministic on a local instance: members are seeded by index, rounds counted in
steps, the scheduler synchronous and its choices drawn from a generator seeded here. Under
checkpoints/<run>/: `best.pt`, `lineage.md` and `lineage.png`; TensorBoard: runs/<run>/<member>/."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import shlex
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...config import REWARD_PERSONALITIES, RewardConfig, RunConfig
from ...util.errors import UserError

YARDSTICK = ("heuristic:easy", "heuristic:medium", "heuristic:hard", "pretrained")
METRIC = "yardstick_win_rate"
STATE = "member.json"  # in each checkpoint: whose it is and how far it got
# What each member starts with (as factors of the config's value, or a personality) and how
# PBT may move it.
MUTATED = ("learning_rate", "ent_coef", "clip_coef", "gae_lambda", "personality")
LR_RANGE, ENT_RANGE, CLIP_RANGE, LAMBDA_RANGE = (0.3, 3.0), (0.1, 3.0), (0.1, 0.3), (0.9, 0.99)


@dataclass
class PBTReport:
    run_dir: Path
    best: dict
    lineage: list[dict]

    def summary(self) -> str:
        b = self.best
        return (f"population-based training: best member {b['member']} at "
                f"{b[METRIC]:.1%} against the yardstick ({', '.join(YARDSTICK)})\n"
                f"  model: {self.run_dir / 'best.pt'}\n  lineage: {self.run_dir / 'lineage.md'}")


def initial(index: int, base: RunConfig, seed: int) -> dict:
    """Member `index`'s starting hyperparameters, drawn from a generator of the seed and index."""
    rng = np.random.default_rng([seed, index])
    lr = base.ppo.learning_rate * float(np.exp(rng.uniform(*np.log(LR_RANGE))))
    ent = base.ppo.ent_coef * float(np.exp(rng.uniform(*np.log(ENT_RANGE))))
    return {"member": index, "learning_rate": lr, "ent_coef": ent,
            "clip_coef": float(rng.uniform(*CLIP_RANGE)),
            "gae_lambda": float(rng.uniform(*LAMBDA_RANGE)),
            "personality": list(REWARD_PERSONALITIES)[index % len(REWARD_PERSONALITIES)]}


def _within_ranges(config: dict, base: RunConfig) -> dict:
    """PBT's perturbations multiply by 0.8 or 1.2, which walks out of any range in a few rounds
    (a GAE lambda above 1): each value is held to the range its member started in."""
    for key, (low, high), scale in (
            ("learning_rate", LR_RANGE, base.ppo.learning_rate),
            ("ent_coef", ENT_RANGE, base.ppo.ent_coef), ("clip_coef", CLIP_RANGE, 1.0),
            ("gae_lambda", LAMBDA_RANGE, 1.0)):
        config[key] = float(min(max(config[key], low * scale), high * scale))
    return config


def member_config(base: dict, hp: dict, run_dir: str, index: int) -> RunConfig:
    cfg = RunConfig.from_dict(base)
    cfg.ppo = dataclasses.replace(cfg.ppo, learning_rate=hp["learning_rate"],
                                  ent_coef=hp["ent_coef"], clip_coef=hp["clip_coef"],
                                  gae_lambda=hp["gae_lambda"])
    cfg.reward = RewardConfig.preset(hp["personality"])
    cfg.train = dataclasses.replace(cfg.train, seed=cfg.train.seed + index,
                                    run_name=f"member{index}", checkpoint_dir=run_dir,
                                    log_dir=str(Path(cfg.train.log_dir) / Path(run_dir).name))
    return cfg


def league_rating(league) -> float:
    """The member's Bradley-Terry rating (Elo scale) from its recent games against each opponent
    of its own league: how it stands where it trains, not comparable across members."""
    from ...rating.ratings import bradley_terry

    opponents = [r for r in league.results.values() if len(r)]
    n = len(opponents) + 1
    scores, games = np.zeros((n, n)), np.zeros((n, n))
    for j, results in enumerate(opponents, 1):
        scores[0, j], games[0, j] = sum(results), len(results)
        scores[j, 0], games[j, 0] = len(results) - sum(results), len(results)
    return float(bradley_terry(scores, games)[0][0])


def yardstick_score(agent, games: int, config) -> float:
    from ...pilots.build import AgentPilot
    from ...rating.match import play_match

    pilot = AgentPilot(agent.play_copy(), "member")
    games += games % 2  # pairs of games, sides swapped
    return float(np.mean([play_match(pilot, spec, games, 30_000 + k * games, config).win_rate_a()
                          for k, spec in enumerate(YARDSTICK)]))


def fingerprint(agent) -> str:
    """The start of a hash of the policy's weights: the lineage shows whose weights a member
    carried into a round."""
    import hashlib

    digest = hashlib.sha256()
    for tensor in agent.net.state_dict().values():
        digest.update(tensor.detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:12]


def _member(hp: dict, base: dict, run_dir: str, round_steps: int, yardstick_games: int) -> None:
    """One member, as Ray Tune runs it: resume from the checkpoint Tune hands over (its own, or a
    better member's after an exploit), train a round, measure, report, repeat. Each round is also
    a line of lineage/<member>.jsonl, which the lineage table is made from."""
    from ray import tune

    from ..online.trainer import Trainer

    # The trial's name, not hp["member"]: an exploit copies the whole config of the member it
    # clones, that key included.
    name = tune.get_context().get_trial_name()
    cfg = member_config(base, hp, run_dir, int(name.removeprefix("member")))
    own = Path(run_dir) / name
    lineage = Path(run_dir) / "lineage" / f"{name}.jsonl"
    lineage.parent.mkdir(parents=True, exist_ok=True)
    state = {"member": name, "round": 0}
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        own.mkdir(parents=True, exist_ok=True)
        with checkpoint.as_directory() as d:
            state = json.loads((Path(d) / STATE).read_text())
            for f in ("latest.pt", "opponent_model.pt"):
                if (Path(d) / f).exists():
                    shutil.copy(Path(d) / f, own / f"restored-{f}")
    parent = state["member"] if state["member"] != name else ""
    trainer = Trainer(cfg, resume=own / "restored-latest.pt" if checkpoint else None, quiet=True)
    if checkpoint is not None and (own / "restored-opponent_model.pt").exists() \
            and trainer.opponent_model is not None:
        trainer.opponent_model.load(own / "restored-opponent_model.pt")
    done = state["round"]
    try:  # Tune ends a round's member by raising: its folder is let go however it ends
        while True:
            carried = fingerprint(trainer.agent)
            trainer.run(until_step=trainer.counters.global_step + round_steps)
            done += 1
            league = [trainer.league.win_rate(k) for k in trainer.league.results]
            score = yardstick_score(trainer.agent, yardstick_games, cfg.game)
            row = {"member": name, "round": done, METRIC: score,
                   "league_win_rate": float(np.mean(league)) if league else 0.0,
                   "league_rating": league_rating(trainer.league),
                   "steps": trainer.counters.global_step, "cloned_from": parent,
                   "weights_in": carried, "weights_out": fingerprint(trainer.agent),
                   **{k: hp[k] for k in MUTATED}}
            with lineage.open("a") as f:
                f.write(json.dumps(row) + "\n")
            with tempfile.TemporaryDirectory() as d:
                shutil.copy(own / "latest.pt", Path(d) / "latest.pt")
                if (own / "opponent_model.pt").exists():
                    shutil.copy(own / "opponent_model.pt", Path(d) / "opponent_model.pt")
                (Path(d) / STATE).write_text(json.dumps({"member": name, "round": done}))
                tune.report({k: row[k] for k in (METRIC, "league_win_rate", "league_rating",
                                                 "steps")},
                            checkpoint=tune.Checkpoint.from_directory(d))
            parent = ""
    finally:
        trainer.release()


def _seeded(scheduler_class, seed: int):
    """Tune's PBT with its random choices for a member at a round (whose weights it takes, how
    its hyperparameters move) drawn from generators seeded by the seed, the member and the round
    alone: Python's and numpy's global generators, which PBT draws from, are also drawn from by
    Ray itself, in an order that varies from run to run."""
    import hashlib

    class SeededPBT(scheduler_class):
        # A private method of Ray Tune (no public hook seeds PBT's choices): the range is pinned
        # in pyproject.toml and tests/test_ecosystem.py fails loudly if the method changes.
        def _checkpoint_or_exploit(self, trial, *args, **kwargs):
            key = f"{seed}/{trial}/{self._trial_state[trial].last_train_time}"
            value = int(hashlib.sha256(key.encode()).hexdigest()[:16], 16)
            saved = random.getstate(), np.random.get_state()
            random.seed(value)
            np.random.seed(value % 2**32)
            try:
                return super()._checkpoint_or_exploit(trial, *args, **kwargs)
            finally:
                random.setstate(saved[0])
                np.random.set_state(saved[1])

    return SeededPBT


def run_pbt(base: RunConfig, population: int = 4, rounds: int = 10, seed: int = 0,
            yardstick_games: int = 20, address: str | None = None, num_cpus: int | None = None,
            quiet: bool = False) -> PBTReport:
    """The --pbt mode (module docstring)."""
    from ...util.cluster import connect

    if population < 2:
        raise UserError(f"--population {population}: population-based training needs 2 or more "
                        "members")
    if rounds < 2:
        raise UserError(f"--pbt-rounds {rounds}: members are compared between rounds; give 2 "
                        "or more")
    if base.train.rollout_workers not in (0, "auto"):
        raise UserError("[train] rollout_workers: population-based training runs each member in "
                        "one Ray task of its own; set it to 0 for --pbt")
    connect(address, num_cpus)
    from ray import tune
    from ray.tune.schedulers import PopulationBasedTraining

    name = base.train.named("pbt", seed)
    run_dir = (Path(base.train.checkpoint_dir) / name).resolve()
    if run_dir.exists() and any(run_dir.iterdir()):
        raise UserError(f"--run-name {name}: {run_dir} is already a run; give another name")
    round_steps = max(1, base.train.total_timesteps // rounds)
    # Members run in folders of Tune's: every path they are given is absolute. Each plays its
    # own games, in step: a member is one Ray task on one CPU.
    base = dataclasses.replace(base, train=dataclasses.replace(
        base.train, log_dir=str(Path(base.train.log_dir).resolve()), rollout_workers=0,
        async_rollouts=False))
    scheduler = _seeded(PopulationBasedTraining, seed)(
        time_attr="training_iteration", metric=METRIC, mode="max", perturbation_interval=1,
        synch=True, quantile_fraction=0.5 if population < 4 else 0.25,
        hyperparam_mutations={
            "learning_rate": tune.loguniform(base.ppo.learning_rate * LR_RANGE[0],
                                             base.ppo.learning_rate * LR_RANGE[1]),
            "ent_coef": tune.loguniform(base.ppo.ent_coef * ENT_RANGE[0],
                                        base.ppo.ent_coef * ENT_RANGE[1]),
            "clip_coef": tune.uniform(*CLIP_RANGE), "gae_lambda": tune.uniform(*LAMBDA_RANGE),
            "personality": list(REWARD_PERSONALITIES)},
        custom_explore_fn=lambda c: _within_ranges(c, base))
    members = [initial(k, base, seed) for k in range(population)]
    if not quiet:
        print(f"population-based training: {population} members, {rounds} rounds of "
              f"{round_steps:,} steps each; watch it with: tensorboard --logdir "
              f"{shlex.quote(str(Path(base.train.log_dir).resolve() / name))}", flush=True)
    trainable = tune.with_resources(
        tune.with_parameters(_member, base=base.to_dict(), run_dir=str(run_dir),
                             round_steps=round_steps, yardstick_games=yardstick_games), {"cpu": 1})
    tuner = tune.Tuner(
        trainable,
        param_space={k: tune.sample_from(lambda spec, k=k: members[spec.config["member"]][k])
                     for k in members[0] if k != "member"} | {
            "member": tune.grid_search(list(range(population)))},
        tune_config=tune.TuneConfig(scheduler=scheduler, reuse_actors=False,
                                    trial_name_creator=lambda t: f"member{t.config['member']}",
                                    trial_dirname_creator=lambda t: f"member{t.config['member']}"),
        run_config=tune.RunConfig(name=name, storage_path=str(run_dir / "tune"),
                                  stop={"training_iteration": rounds}, verbose=0))
    # Tune's own report (a settings box, its own TensorBoard command for a folder the project's
    # logs are not in) would stand beside this run's; its documented switch to the older output,
    # silent at verbose=0, leaves this command's lines alone. Members get fresh processes on
    # purpose (reuse_actors=False): Tune's hint to reuse them is not for this run.
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*reuse_actors", category=UserWarning)
        results = tuner.fit()
    if results.errors:
        first = " ".join(str(results.errors[0]).split())[-300:]
        raise RuntimeError(f"population-based training: {len(results.errors)} member(s) failed; "
                           f"the first: {first}")
    return _report(run_dir)


def _report(run_dir: Path) -> PBTReport:
    from ...util.charts import line_chart

    lineage = [json.loads(line) for f in sorted((run_dir / "lineage").glob("*.jsonl"))
               for line in f.read_text().splitlines()]
    lineage.sort(key=lambda r: (r["round"], r["member"]))
    last = max(r["round"] for r in lineage)
    best = max((r for r in lineage if r["round"] == last), key=lambda r: r[METRIC])
    for f in ("latest.pt", "opponent_model.pt"):
        if (run_dir / best["member"] / f).exists():
            shutil.copy(run_dir / best["member"] / f,
                        run_dir / ("best.pt" if f == "latest.pt" else f))
    lines = ["| round | member | yardstick win rate | league win rate | league rating | "
             "learning rate | entropy | clip | GAE lambda | personality | took the weights of |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    series: dict[str, list] = {}
    for r in lineage:
        lines.append(f"| {r['round']} | {r['member']} | {r[METRIC]:.1%} | "
                     f"{r['league_win_rate']:.1%} | {r['league_rating']:.0f} | "
                     f"{r['learning_rate']:.2e} | "
                     f"{r['ent_coef']:.3g} | {r['clip_coef']:.3f} | {r['gae_lambda']:.3f} | "
                     f"{r['personality']} | {r['cloned_from'] or '-'} |")
        series.setdefault(r["member"], []).append((r["round"], r[METRIC]))
    (run_dir / "lineage.md").write_text("\n".join(lines) + "\n")
    (run_dir / "lineage.json").write_text(json.dumps(lineage, indent=1))
    line_chart(run_dir / "lineage.png", series, "PBT: each member against the yardstick",
               "round", "yardstick win rate")
    return PBTReport(run_dir, best, lineage)
