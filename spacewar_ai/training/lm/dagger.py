"""DAgger of the LM pilot: `--algorithm dagger --init-from ADAPTER` (docs/lm.md, "DAgger").

    spacewar-ai --algorithm dagger --init-from sft --teacher heuristic:hard \
        --dataset lm-hard-medium --dataset-pilot heuristic:hard

Behaviour cloning learns the teacher's moves at the teacher's states; DAgger (Ross, Gordon and
Bagnell 2011) trains on the student's own. Each round:

1. the LM plays `[dagger] games` games against `[dagger] opponents` while `[dagger] teacher` is
   asked at each of its decisions what it would do (labels, never played);
2. the round is written as the Minari dataset `<run>-round<k>`, the LM's episodes carrying
   `infos["teacher_action"]`;
3. the adapter takes `[dagger] steps` steps of SFT's loss on the aggregate of all rounds' labelled
   states, `own_share` of each batch, the rest from --dataset when one is given.

The adapter is saved to `models/adapters/<run>/` after every round; TensorBoard's tags are under
`dagger/` (agreement on its own states before training on them, win rates, loss, labels)."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from ...config import SELF, RunConfig
from ...lm.models import add_lora, load_base, shown_model
from ...lm.pilot import LMPilot
from ...util.errors import UserError
from ...util.progress import DecisionCounter
from ..budget import whole_rounds
from ..datasets import labelled_decisions, labelled_round
from .run import (
    LMRun,
    Start,
    agreement,
    continued,
    imitation_step,
    linear_decay,
    lm_start,
    playable,
    split,
)


def train_dagger(cfg: RunConfig, init_from: str, quiet: bool = False) -> dict:
    """--algorithm dagger --init-from ADAPTER (module docstring)."""
    from ...pilots.spec import check_spec
    from ..datasets import arrays, dataset_id, local_datasets

    device = lm_start(cfg)

    t, s, d = cfg.train, cfg.sft, cfg.dagger
    pair = 2 * len(d.opponents)  # a round's games: pairs (sides swapped) for each opponent
    if d.games % pair:
        raise UserError(f"[dagger] games = {d.games} cannot be shared among "
                        f"{len(d.opponents)} opponents in pairs of games (sides swapped): make "
                        f"it a multiple of {pair}")
    rounds = d.rounds
    if t.episodes:  # --episodes N: N games in all, in whole rounds
        rounds, per_round = whole_rounds(t.episodes, d.games, pair, "round", "[dagger] games")
        cfg = dataclasses.replace(cfg, dagger=dataclasses.replace(d, games=per_round))
        d = cfg.dagger
    run = LMRun("dagger", cfg, quiet)
    name = run.name
    round_names = [dataset_id(f"{name}-round{k}") for k in range(1, rounds + 1)]
    # Everything a round needs is checked before the first model is loaded.
    teacher = check_spec(d.teacher)
    opponents = tuple(o if o == SELF else check_spec(o) for o in d.opponents)
    teacher_obs = teacher_actions = held_obs = held_actions = np.zeros(0)
    if t.dataset:
        obs, actions = arrays(t.dataset, t.dataset_pilot or None, cfg.game)
        keep = playable(obs, actions)
        teacher_obs, teacher_actions, held_obs, held_actions = split(
            obs[keep], actions[keep], s.examples, min(s.held_out, int(keep.sum()) // 2), t.seed)
    taken = sorted(set(round_names) & local_datasets())
    if taken:
        raise UserError(f"dataset {taken[0]} exists already (a DAgger run of that name); "
                        "choose another --run-name")

    start = continued(init_from, cfg, device)
    with run:
        return _rounds(run, cfg, rounds, round_names, start, teacher, opponents, teacher_obs,
                       teacher_actions, held_obs, held_actions, device)


def _rounds(run: LMRun, cfg: RunConfig, rounds: int, round_names: list[str], start: Start,
            teacher, opponents: tuple, teacher_obs, teacher_actions, held_obs, held_actions,
            device) -> dict:
    """DAgger's rounds: the student plays, the teacher labels, the student learns."""
    import torch

    from ..datasets import write_games

    t, s, d = cfg.train, cfg.sft, cfg.dagger
    model, tokenizer, coder, base, view, start_folder = (
        start.model, start.tokenizer, start.coder, start.base, start.view, start.folder)
    rng = np.random.default_rng(t.seed)
    run.start_clock()
    own_obs = np.zeros((0, cfg.game.obs_dim), dtype=np.float32)
    own_labels = np.zeros(0, dtype=np.int64)
    own_policies = np.zeros((0, cfg.game.num_actions), dtype=np.float32)
    soft = d.target_temperature > 0
    history: list[dict] = []

    def trainable():
        """The model a round trains: the adapter so far, or with `afresh` a new one."""
        if not d.afresh:
            return model
        fresh, _ = load_base(base, device)
        return add_lora(fresh, s.lora_rank, s.lora_layers)

    def save(done: int) -> None:
        run.save(model, base, model, {
            "view": view, "init_from": start_folder.name,
            "teacher": d.teacher, "opponents": list(d.opponents), "rounds": done,
            "target_temperature": d.target_temperature,
            "datasets": round_names[:done], "dataset": t.dataset,
            "agreement_own": [row["agreement_own"] for row in history],
            "agreement_teacher": history[-1].get("agreement_teacher") if history else None})

    def teacher_agreement() -> float | None:
        if not len(held_obs):
            return None
        model.eval()
        with torch.no_grad():
            return agreement(model, coder, held_obs, held_actions)

    first = teacher_agreement()
    if first is not None:
        run.scalars({"agreement_teacher": first}, 0)
    if not run.quiet:
        print(f"DAgger of lm:{base}+{start_folder.name} taught by {d.teacher}: {rounds} rounds "
              f"of {d.games} games against {', '.join(d.opponents)}, {d.steps} steps each"
              + (f"; agreement on {len(held_obs)} held-out decisions of {t.dataset} "
                 f"{first:.1%}" if first is not None else ""))
    label = f"{shown_model(base)}+{run.name}"
    # One bar for the run: a round's games, then its gradient steps.
    progress = run.bar(rounds * (d.games + d.steps), "game or step")
    bar = progress.bar
    for k in range(1, rounds + 1):
        if run.out_of_time():
            break
        tick = time.time()
        # 1. The LM plays; the teacher labels its states.
        model.eval()
        bar.set_description(f"dagger round {k}/{rounds}: games")
        counter = DecisionCounter(bar)
        with torch.no_grad():
            played = labelled_round(
                lambda seed: LMPilot(model, tokenizer, label, cfg.game.num_actions, seed=seed,
                                     view=view, bf16=s.bf16),
                opponents, teacher, d.games, t.seed + 100_000 * k, cfg.game, cfg.reward,
                bar, counter, d.target_temperature)
        timeouts = sum(g.end == "TRUNCATED" for _, r, _ in played for g in r.games)
        if timeouts * 2 > d.games:
            progress.say(f"  round {k}: {timeouts} of {d.games} games ran to the time limit "
                         f"({cfg.game.max_episode_steps} frames): the student ends few games, "
                         "so its rounds take long; [game] max_episode_steps in --config "
                         "shortens them")
        obs, acts, labels, policies = labelled_decisions(played)
        keep = playable(obs, labels)
        obs, acts, labels = obs[keep], acts[keep], labels[keep]
        if policies is not None:
            own_policies = np.concatenate([own_policies, policies[keep]])
        row = {"round": k, "agreement_own": float((acts == labels).mean()),
               "win_rate": float(np.mean([r.win_rate_a() for _, r, _ in played])),
               "play_seconds": time.time() - tick}
        row.update({f"win_rate/{spec}": r.win_rate_a() for spec, r, _ in played})
        # 2. The round's games become a dataset; 3. its labels join the aggregate.
        write_games(round_names[k - 1], [(r, eps) for _, r, eps in played], cfg.reward, cfg.game,
                    "spacewar-ai --algorithm dagger",
                    f"DAgger round {k} of lm:{label}, labelled by {d.teacher}",
                    {"pairs": [[f"lm:{label}", spec] for spec in d.opponents],
                     "games_per_pair": d.games // len(d.opponents), "seed": t.seed + 100_000 * k,
                     "teacher": d.teacher, "round": k})
        own_obs = np.concatenate([own_obs, obs])
        own_labels = np.concatenate([own_labels, labels])
        row["labels"] = len(own_obs)
        model = trainable()
        model.train()
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                      lr=d.learning_rate)
        schedule = linear_decay(optimizer, d.steps)
        share = d.own_share if len(teacher_obs) else 1.0
        from_own = int(round(share * s.batch_size))
        losses = []
        bar.set_description(f"dagger round {k}/{rounds}: training")
        for _ in range(d.steps):
            rows_own = rng.integers(0, len(own_obs), from_own)
            batch_obs, batch_labels = own_obs[rows_own], own_labels[rows_own]
            targets = own_policies[rows_own] if soft else batch_labels
            if from_own < s.batch_size:
                rows = rng.integers(0, len(teacher_obs), s.batch_size - from_own)
                batch_obs = np.concatenate([batch_obs, teacher_obs[rows]])
                answers = teacher_actions[rows]
                # The dataset's decisions are answers: one-hot beside the policies.
                targets = np.concatenate([targets, np.eye(cfg.game.num_actions, dtype=np.float32)[
                    answers] if soft else answers])
            losses.append(imitation_step(model, optimizer, coder, batch_obs,
                                         torch.as_tensor(targets, device=device),
                                         device, s.bf16))
            schedule.step()
            bar.update(1)
        row["loss"] = float(np.mean(losses))
        found = teacher_agreement()
        if found is not None:
            row["agreement_teacher"] = found
        row["seconds"] = time.time() - tick
        row["train_seconds"] = row["seconds"] - row["play_seconds"]
        history.append(row)
        run.scalars({key: value for key, value in row.items()
                 if key not in ("round", "play_seconds", "train_seconds", "seconds")}, k)
        save(k)
        # The round's figures beside its decision count: on a log only the last state is kept.
        bar.set_postfix_str(f"own={row['agreement_own']:.2f}, win={row['win_rate']:.2f}, "
                            f"{counter.count:,} decisions", refresh=False)
        progress.say(f"  round {k}: agreement on its own states {row['agreement_own']:.1%}, "
                     f"won {row['win_rate']:.0%} ("
                     + ", ".join(f"{spec} {r.win_rate_a():.0%}" for spec, r, _ in played)
                     + f"); {len(own_obs):,} labelled states; loss {row['loss']:.3f}"
                     + (f"; agreement on the teacher's {found:.1%}" if found is not None
                        else "")
                     # Where a round's time goes: play (and the teacher's labels) or training.
                     + f"; played and labelled in {row['play_seconds']:.0f} s, trained in "
                     f"{row['train_seconds']:.0f} s on {device}")
    progress.close()
    seconds = run.seconds
    print(f"done: DAgger, {len(history)} rounds in {seconds / 60:.1f} minutes; play it as "
          f"lm:{run.name} -> {run.adapter_dir}")
    return {"adapter_dir": str(run.adapter_dir), "log_dir": str(run.log_dir), "history": history,
            "datasets": round_names[:len(history)], "seconds": seconds}

