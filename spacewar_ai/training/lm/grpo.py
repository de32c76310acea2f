"""Reinforcement learning of the LM pilot with GRPO: `--algorithm grpo --init-from ADAPTER`.

    spacewar-ai --algorithm grpo --init-from my-sft-run --opponent heuristic:medium --episodes 480

A group is every valid action at one game state, each scored by playing the game on from a copy
of that state (docs/lm.md, "Reinforcement learning with GRPO", is the manual). An iteration:

1. plays `[grpo] games` games against `[grpo] opponents`, the LM sampling at `temperature`, and
   copies the state at `scored` of its decisions that had a choice;
2. scores each valid action there (`action_scores`): a copy plays it, then `rollout_pilot`
   flies on for `horizon` decisions (the mean of `continuations` jittered games); the score is
   the reward the LM's ship collects;
3. an action's advantage is its score's z-score in its group; flat groups (within
   SCORE_NOISE) are dropped, and the `states` that spread widest are kept;
4. `epochs` passes minimise PPO's clipped surrogate on the masked answer
   (lm.pilot.prompt_logits) plus `kl` times the exact KL to the starting adapter over the
   valid actions; `objective = "improved"` uses the cross-entropy toward the group's improved
   policy (pilots.search.improved_policy) instead.

The adapter is saved to `models/adapters/<run>/` every ten iterations and at the end (it plays
as `lm:<run>`); TensorBoard's tags are under `grpo/`."""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ...config import RunConfig, mask_start
from ...lm.models import load_lm, shown_model
from ...lm.pilot import LMPilot, PromptCoder, answer_logits, autocast, prompt_logits
from ...pilots.wrappers import StateRecorder
from ..budget import whole_rounds
from .run import LMRun, Start, continued, lm_start
from .scoring import action_scores

SAVE_EVERY = 10  # iterations between saves of the adapter
# Scores closer than this (reward points) are the same outcome: a game ending a few decisions
# sooner or later moves the step penalties by hundredths, and z-scores would make that a signal.
SCORE_NOISE = 1.0


def group_advantages(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(advantages (S, A) with 0 at invalid actions, the states that teach something): each
    valid action's score as a z-score within its state's group. A group whose scores spread by
    less than SCORE_NOISE teaches nothing: z-scores would blow its game-length noise up to the
    size of a kill."""
    valid = ~np.isnan(scores)
    mean = np.nanmean(scores, axis=1, keepdims=True)
    std = np.nanstd(scores, axis=1, keepdims=True)
    useful = std[:, 0] >= SCORE_NOISE
    adv = np.where(valid & useful[:, None], (scores - mean) / np.maximum(std, SCORE_NOISE), 0.0)
    return adv, useful


def decisive(scores: np.ndarray, useful: np.ndarray, count: int) -> np.ndarray:
    """The rows of at most `count` groups that teach something, those whose action matters most
    first (the widest spread of scores): where the game's outcome turns on the action."""
    spread = np.nanstd(scores, axis=1) if len(scores) else np.zeros(0)
    rows = np.flatnonzero(useful)
    return np.sort(rows[np.argsort(-spread[rows], kind="stable")][:count])


def log_probs(logits):
    """Masked log-probabilities with 0 (not -inf) at invalid actions, so sums over the group
    stay finite; the caller weights those places by zero."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    return torch.where(torch.isfinite(logp), logp, torch.zeros_like(logp))


def grpo_loss(logits, old_logp, ref_logp, advantages, valid, clip: float, kl_coef: float):
    """(loss, KL, clip fraction) of a minibatch: the clipped surrogate averaged over each
    state's valid actions, plus kl_coef times the exact KL to the reference, over states."""
    import torch

    logp = log_probs(logits)
    ratio = torch.exp(logp - old_logp)
    surrogate = torch.min(ratio * advantages,
                          torch.clamp(ratio, 1 - clip, 1 + clip) * advantages)
    weight = valid.float()
    per_state = (surrogate * weight).sum(1) / weight.sum(1)
    kl = (logp.exp() * weight * (logp - ref_logp)).sum(1)
    clipped = ((ratio - 1).abs() > clip).float() * weight
    loss = (-per_state + kl_coef * kl).mean()
    return loss, kl.mean(), clipped.sum() / weight.sum()


def improved_loss(logits, ref_logp, targets, valid, kl_coef: float):
    """(loss, KL) of a minibatch: the cross-entropy toward each state's improved policy
    `targets` (rows summing to 1 over the valid actions), plus kl_coef times the exact KL to the
    reference, over states."""
    logp = log_probs(logits)
    cross = -(targets * logp).sum(1)
    kl = (logp.exp() * valid.float() * (logp - ref_logp)).sum(1)
    return (cross + kl_coef * kl).mean(), kl.mean()


def grpo_update(model, optimizer, coder: PromptCoder, obs: np.ndarray, advantages: np.ndarray,
                old_logp, ref_logp, epochs: int, batch_size: int, clip: float, kl_coef: float,
                rng: np.random.Generator, bf16: bool = False, objective: str = "clip",
                target_temperature: float = 0.5) -> list[dict]:
    """`epochs` passes over the states in random minibatches; one dict of means per pass
    (loss, kl and, for the clipped surrogate, clip_fraction). `objective` "improved" learns
    the softmax of the advantages at `target_temperature` instead (module docstring)."""
    import torch

    from ...pilots.search import improved_policy

    device = next(model.parameters()).device
    start = mask_start(obs.shape[1])
    mask = obs[:, start:start + advantages.shape[1]] > 0.5
    adv = torch.as_tensor(advantages, dtype=torch.float32, device=device)
    valid = torch.as_tensor(mask, device=device)
    targets = None
    if objective == "improved":
        targets = torch.as_tensor(improved_policy(advantages, mask, target_temperature),
                                  dtype=torch.float32, device=device)
    names = ("loss", "kl") if targets is not None else ("loss", "kl", "clip_fraction")
    model.train()
    passes = []
    for _ in range(epochs):
        sums, steps = np.zeros(len(names)), 0
        order = rng.permutation(len(obs))
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            idx = torch.as_tensor(rows, device=device)
            with autocast(device, bf16):
                logits = prompt_logits(model, coder, obs[rows])
            if targets is not None:
                terms = improved_loss(logits, ref_logp[idx], targets[idx], valid[idx], kl_coef)
            else:
                terms = grpo_loss(logits, old_logp[idx], ref_logp[idx], adv[idx], valid[idx],
                                  clip, kl_coef)
            optimizer.zero_grad()
            terms[0].backward()
            optimizer.step()
            sums += [term.item() for term in terms]
            steps += 1
        passes.append(dict(zip(names, sums / max(steps, 1))))
    return passes


def answer_log_probs(model, coder: PromptCoder, obs: np.ndarray, bf16: bool):
    """log_probs of a model's answers at `obs`, without gradients."""
    return log_probs(answer_logits(model, coder, obs, bf16))


def train_grpo(cfg: RunConfig, init_from: str, quiet: bool = False) -> dict:
    """--algorithm grpo --init-from ADAPTER (module docstring)."""
    from ...pilots.spec import check_spec

    device = lm_start(cfg)
    t, g = cfg.train, cfg.grpo
    iterations = g.iterations
    if t.episodes:  # --episodes N: N games in all, in whole iterations
        iterations, per = whole_rounds(t.episodes, g.games, 2 * len(g.opponents), "iteration",
                                       "[grpo] games")
        cfg = dataclasses.replace(cfg, grpo=dataclasses.replace(g, games=per))
        g = cfg.grpo
    # Pilots first: a bad spec is refused before any model is loaded. Each iteration's games and
    # scores get pilots of their own (action_scores says why).
    opponents = [check_spec(spec) for spec in g.opponents]
    rollout_pilot = check_spec(g.rollout_pilot)
    start = continued(init_from, cfg, device)
    reference = load_lm(f"{start.base}+{start.folder}", device)[0]
    with LMRun("grpo", cfg, quiet) as run:
        return _iterate(run, cfg, start, reference, iterations, opponents, rollout_pilot, device)


def _iterate(run: LMRun, cfg: RunConfig, start: Start, reference, iterations: int,
             opponents: list, rollout_pilot, device) -> dict:
    """GRPO's iterations: games, scored states, an update (module docstring)."""
    import torch

    from ...pilots.build import make_pilot
    from ...rating.match import play_match

    t, g = cfg.train, cfg.grpo
    model, tokenizer, coder, base, view, start_folder = (
        start.model, start.tokenizer, start.coder, start.base, start.view, start.folder)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=g.learning_rate)
    rng = np.random.default_rng(t.seed)
    run.start_clock()
    history = []
    label = f"{shown_model(base)}+{run.name}"

    def save(done: int) -> None:
        run.save(model, base, model, {
            "view": view, "init_from": start_folder.name, "iterations": done,
            "games": done * g.games, "opponent": g.opponent,
            "rollout_pilot": g.rollout_pilot, "reward": cfg.reward.personality,
            "continuations": g.continuations, "jitter": g.jitter, "objective": g.objective,
            **({"target_temperature": g.target_temperature}
               if g.objective == "improved" else {})})

    if not run.quiet:
        print(f"GRPO of lm:{base}+{start_folder.name} against {g.opponent}: {iterations} "
              f"iterations of {g.games} games, {max(g.scored, g.states)} states scored and "
              f"up to {g.states} kept each "
              f"({g.rollout_pilot} plays on {g.horizon} decisions"
              + (f", the mean of {g.continuations} games jittered at {g.jitter:g}"
                 if g.continuations > 1 else "")
              + f", {cfg.reward.personality} rewards)"
              + (f"; learning the groups' improved policy at temperature "
                 f"{g.target_temperature:g}" if g.objective == "improved" else ""))
    bar = run.bar(iterations, "iteration")
    counter = run.counter
    done = 0
    for it in range(iterations):
        if run.out_of_time():
            break
        tick = time.time()
        model.eval()
        lm = LMPilot(model, tokenizer, label, cfg.game.num_actions, g.temperature,
                     seed=t.seed * 100_003 + it, view=view, bf16=g.bf16)
        each = g.games // len(opponents)
        played, all_obs, all_scores = [], [], []
        for j, spec in enumerate(opponents):
            recorder = StateRecorder(lm)
            with torch.no_grad():
                games = play_match(recorder, spec, each, t.seed + it * g.games + j * each,
                                   cfg.game, cfg.reward, on_step=lambda obs, actions, batch,
                                   running: counter(int(np.count_nonzero(running))))
            played.append((spec, games))
            # Scoring is the engine and two scripted pilots, cheap beside the LM's passes: many
            # states are scored and the update learns from the groups where the action matters.
            states, obs, sides = recorder.draw(
                math.ceil(max(g.scored, g.states) / len(opponents)), rng)
            if len(obs):
                all_obs.append(obs)
                all_scores.append(action_scores(
                    states, obs, sides,
                    make_pilot(rollout_pilot, cfg.game, t.seed + 2 * it + 100_000 * j),
                    make_pilot(spec, cfg.game, t.seed + 2 * it + 1 + 100_000 * j),
                    cfg.game, cfg.reward, g.horizon, g.continuations, g.jitter,
                    seed=t.seed + 2 * it + 100_000 * j + 50_000))
        obs = np.concatenate(all_obs) if all_obs else np.zeros((0, 0), dtype=np.float32)
        scores = np.concatenate(all_scores) if all_scores else np.zeros((0, 1))
        adv, useful = group_advantages(scores)
        kept = decisive(scores, useful, g.states)
        wins = sum(r.wins_a for _, r in played)
        row = {"iteration": it + 1, "win_rate": wins / max(sum(r.n for _, r in played), 1),
               "states": len(kept),
               "signal_share": float(useful.mean()) if len(useful) else 0.0}
        if len(opponents) > 1:
            row.update({f"win_rate/{spec}": r.win_rate_a() for spec, r in played})
        obs, adv, scores = obs[kept], adv[kept], scores[kept]
        if len(obs):
            old = answer_log_probs(model, coder, obs, g.bf16)
            ref = answer_log_probs(reference, coder, obs, g.bf16)
            best = np.nanargmax(scores, axis=1)
            row["best_action_probability"] = float(
                old.exp()[torch.arange(len(obs)), torch.as_tensor(best)].mean())
            passes = grpo_update(model, optimizer, coder, obs, adv, old, ref, g.epochs,
                                 g.batch_size, g.clip, g.kl, rng, g.bf16, g.objective,
                                 g.target_temperature)
            row.update(passes[-1])
        row["states_per_second"] = len(obs) / max(time.time() - tick, 1e-9)
        row["score"] = float(np.mean([game.score("a", cfg.reward, cfg.game)
                                      for _, r in played for game in r.games]))
        history.append(row)
        run.scalars({key: row[key] for key in (
            "win_rate", "score", "loss", "kl", "clip_fraction", "best_action_probability",
            "states_per_second", "signal_share",
            *(f"win_rate/{spec}" for spec in opponents if len(opponents) > 1)) if key in row},
            it + 1)
        done = it + 1
        bar.update(1)
        bar.note(win=f"{row['win_rate']:.2f}",
                 best=f"{row.get('best_action_probability', 0):.2f}")
        if done % SAVE_EVERY == 0:
            save(done)
    bar.close()
    save(done)
    seconds = run.seconds
    print(f"done: GRPO, {done} iterations ({done * g.games} games) in {seconds / 60:.1f} "
          f"minutes; play it as lm:{run.name} -> {run.adapter_dir}")
    return {"adapter_dir": str(run.adapter_dir), "log_dir": str(run.log_dir), "iterations": done,
            "history": history, "seconds": seconds}
