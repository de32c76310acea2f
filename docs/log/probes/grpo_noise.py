"""How much of a GRPO group's spread is signal: the best action at a state, scored twice.

    python docs/log/probes/grpo_noise.py --games 32 --states 1024 --json docs/grpo_noise.json

GRPO (training/grpo.py) scores every valid action at a state by playing the game on; the
game and the scripted pilots are deterministic, so each score is one trajectory. This script
records states of `--pilot` against `--opponent`, keeps those whose scores spread (the groups
GRPO learns from), and scores them again with every pilot's move replaced by a random valid one
with probability `--jitter`, twice, with two seeds: if the two scorings rank the actions alike,
the group says something about the action; if not, a hair decided it. Each `--continuations`
value K averages K such games per action. Prints one row per K: the mean correlation of the
two scorings over a state's valid actions, how often they agree on the best action (states
where each has one), and how often the deterministic scoring's best action is the best of the
jittered mean. With `--adapters`, each language-model pilot's probability of the best action
and expected value at those states, the actions valued by the last K's mean: what GRPO's
update should raise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from spacewar_ai.config import GameConfig, RewardConfig  # noqa: E402
from spacewar_ai.pilots.build import make_pilot  # noqa: E402
from spacewar_ai.pilots.wrappers import StateRecorder  # noqa: E402
from spacewar_ai.rating.match import play_match  # noqa: E402
from spacewar_ai.training.lm.grpo import group_advantages  # noqa: E402
from spacewar_ai.training.lm.scoring import action_scores  # noqa: E402


def unique_best(scores: np.ndarray) -> np.ndarray:
    """Whether each state's best score is held by one action alone (ties would agree by index)."""
    top = np.nanmax(scores, axis=1, keepdims=True)
    return (np.isclose(scores, top) & ~np.isnan(scores)).sum(axis=1) == 1


def best_agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Of the states where both tables have one best action, the share where it is the same."""
    both = unique_best(a) & unique_best(b)
    same = np.nanargmax(a, axis=1) == np.nanargmax(b, axis=1)
    return float(same[both].mean()) if both.any() else float("nan")


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    """The mean over states of the correlation of two scorings of the valid actions: 1 when
    the advantages GRPO would compute are the same, 0 when one says nothing of the other."""
    out = []
    for x, y in zip(a, b):
        ok = ~np.isnan(x)
        if x[ok].std() > 0 and y[ok].std() > 0:
            out.append(np.corrcoef(x[ok], y[ok])[0, 1])
    return float(np.mean(out)) if out else float("nan")


def adapter_value(spec: str, cfg: GameConfig, obs: np.ndarray, value: np.ndarray,
                  seed: int) -> dict:
    """How pilot `spec` (an lm: pilot, whose answer is a distribution over the valid actions)
    plays the states `obs` whose actions are worth `value` (NaN where invalid)."""
    import torch

    pilot = make_pilot(spec, cfg, seed)
    probs = torch.softmax(pilot.logits(obs).float(), dim=-1).cpu().numpy()
    worth = np.where(np.isnan(value), 0.0, value)
    return {"pilot": spec, "p_best": float(probs[np.arange(len(obs)),
                                                 np.nanargmax(value, axis=1)].mean()),
            "expected": float((probs * worth).sum(axis=1).mean()),
            "uniform": float(np.nanmean(value, axis=1).mean()),
            "best": float(np.nanmax(value, axis=1).mean())}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pilot", default="heuristic:medium", help="whose states are scored")
    p.add_argument("--opponent", default="heuristic:hard")
    p.add_argument("--rollout-pilot", default="heuristic:hard")
    p.add_argument("--games", type=int, default=32)
    p.add_argument("--states", type=int, default=1024, help="decisions drawn and scored")
    p.add_argument("--horizon", type=int, default=60)
    p.add_argument("--jitter", type=float, default=0.05)
    p.add_argument("--continuations", default="1,4,16",
                   help="comma-separated K: games averaged per action")
    p.add_argument("--adapters", default="",
                   help="comma-separated lm: pilots: each one's expected score at the decisive "
                        "states, valued by the last K's mean (what GRPO should have raised)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default="")
    args = p.parse_args(argv)
    cfg, rew = GameConfig(), RewardConfig()
    began = time.time()

    recorder = StateRecorder(make_pilot(args.pilot, cfg, args.seed))
    play_match(recorder, args.opponent, args.games, args.seed, cfg, rew)
    states, obs, sides = recorder.draw(args.states, np.random.default_rng(args.seed))

    def scores(k: int, jitter: float, seed: int) -> np.ndarray:
        return action_scores(states, obs, sides, make_pilot(args.rollout_pilot, cfg, seed),
                             make_pilot(args.opponent, cfg, seed + 1), cfg, rew, args.horizon,
                             k, jitter, seed)

    plain = scores(1, 0.0, args.seed + 1)
    _, useful = group_advantages(plain)
    print(f"{len(obs)} decisions of {args.pilot} against {args.opponent}; {useful.sum()} "
          f"({useful.mean():.0%}) spread by a point of reward or more, the groups GRPO learns "
          f"from; scored again with every move jittered at {args.jitter:g}:")
    print("| games averaged per action | correlation of two scorings | they agree on the best "
          "action | the deterministic best is the jittered mean's best |")
    print("|---|---|---|---|")
    rows = []
    for k in (int(x) for x in args.continuations.split(",")):
        a = scores(k, args.jitter, args.seed + 1000)[useful]
        b = scores(k, args.jitter, args.seed + 2000)[useful]
        row = {"continuations": k, "correlation": correlation(a, b),
               "agree": best_agreement(a, b),
               "plain_agrees": best_agreement(plain[useful], (a + b) / 2)}
        rows.append(row)
        print(f"| {k} | {row['correlation']:.2f} | {row['agree']:.1%} | "
              f"{row['plain_agrees']:.1%} |", flush=True)
    adapters = [adapter_value(spec, cfg, obs[useful], (a + b) / 2, args.seed)
                for spec in filter(None, args.adapters.split(","))]
    if adapters:
        print(f"\nAt the {useful.sum()} decisive states, each action valued by the mean of "
              f"{2 * rows[-1]['continuations']} jittered games:")
        print("| pilot | probability of the best action | expected value | "
              "(every valid action alike | the best) |")
        print("|---|---|---|---|")
        for row in adapters:
            print(f"| {row['pilot']} | {row['p_best']:.3f} | {row['expected']:.2f} | "
                  f"{row['uniform']:.2f} / {row['best']:.2f} |")
    seconds = time.time() - began
    print(f"({seconds:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "pilot": args.pilot, "opponent": args.opponent, "rollout_pilot": args.rollout_pilot,
            "horizon": args.horizon, "jitter": args.jitter, "states": int(len(obs)),
            "decisive": int(useful.sum()), "rows": rows, "adapters": adapters,
            "seconds": round(seconds, 1)},
            indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
