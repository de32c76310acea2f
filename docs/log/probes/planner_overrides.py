"""Are a planner's overrides of a network learnable? Asked twice, and fitted by a classifier.

    python docs/log/probes/planner_overrides.py --student pretrained \
        --teacher "search:pretrained+heuristic:hard@margin=0.25" --games 256 --epochs 300

The student (a PPO network, greedy) plays `--games` games against heuristic:hard and
heuristic:medium (half each); at every decision two copies of `--teacher` are asked what they
would do, the second with another seed and one more sample (`@samples=K+1`), so their
rollouts differ. Printed: the share of the student's moves the teacher overrides; where it does,
how often the second asking overrides too and names the same action (an override that is
chance is not repeated). Then a classifier (two layers of 512, ReLU) reads the observation as
the student does (its scaling) and learns the teacher's labels on 80% of the states for
`--epochs` passes; its agreement on the overrides and on the other moves, on the states it
trained on and on the 20% it did not: what a reader of the present can learn of the teacher.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def second_asking(teacher: str) -> str:
    """The teacher with one more sample than it has: the same planner, other rollouts."""
    from spacewar_ai.pilots.spec import parse_spec

    spec = parse_spec(teacher)
    if spec.kind != "search":
        raise ValueError(f"--teacher {teacher!r} is not a planner (search:...): only a planner's "
                         "rollouts differ when it is asked twice")
    settings = {**dict(spec.settings), "samples": dict(spec.settings).get("samples", 8) + 1}
    return dataclasses.replace(spec, settings=tuple(settings.items())).with_parts(spec.parts).text


def label_twice(student_spec: str, teacher: str, games: int, seed: int):
    """(observations, the student's moves, the teacher's labels, the second asking's) at every
    decision of the student's games, running games only."""
    from spacewar_ai.agents.saved import load_agent
    from spacewar_ai.config import GameConfig
    from spacewar_ai.pilots.build import AgentPilot, make_pilot, spec_path
    from spacewar_ai.pilots.wrappers import Labelled
    from spacewar_ai.rating.match import play_match

    config = GameConfig()
    agent, _ = load_agent(spec_path(student_spec), "cpu", "ppo", config.obs_dim)
    rows = []
    for j, opponent in enumerate(("heuristic:hard", "heuristic:medium")):
        start = seed + 1_000 * j
        inner = Labelled(AgentPilot(agent, "student", deterministic=True),
                         make_pilot(second_asking(teacher), config, start + 500))
        outer = Labelled(inner, make_pilot(teacher, config, start))

        def record(obs, actions, batch, running, outer=outer, inner=inner):
            g = np.flatnonzero(running)
            rows.append((obs[g, 0].copy(), actions[g, 0].copy(), outer.labels[-1][g].copy(),
                         inner.labels[-1][g].copy()))

        play_match(outer, opponent, games // 2, start, config, swap_sides=False,
                   on_step=record)
    return agent, [np.concatenate(part) for part in zip(*rows)]


def fit_classifier(x, mask, y, train, over, epochs: int, seed: int) -> dict:
    """Agreement of a 2 x 512 classifier with the labels, on overrides and other moves, on the
    states it trained on and on the rest."""
    import torch

    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 512), torch.nn.ReLU(),
                              torch.nn.Linear(512, 512), torch.nn.ReLU(),
                              torch.nn.Linear(512, mask.shape[1]))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    rows = torch.as_tensor(np.flatnonzero(train))
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for idx in rows[torch.randperm(len(rows), generator=generator)].split(256):
            logits = net(x[idx]).masked_fill(~mask[idx], -1e9)
            loss = torch.nn.functional.cross_entropy(logits, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        hit = (net(x).masked_fill(~mask, -1e9).argmax(-1) == y).numpy()
    share = lambda keep: float(hit[keep].mean()) if keep.any() else 0.0  # noqa: E731
    return {f"{part} {kind}": share(where & (over if kind == "overrides" else ~over))
            for part, where in (("trained", train), ("held out", ~train))
            for kind in ("overrides", "other moves")}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--student", default="pretrained", help="a PPO network's spec")
    p.add_argument("--teacher", default="search:pretrained+heuristic:hard@margin=0.25")
    p.add_argument("--games", type=int, default=256, help="the student's games (even)")
    p.add_argument("--epochs", type=int, default=300)
    p.add_argument("--seed", type=int, default=7003)
    p.add_argument("--json", default="")
    a = p.parse_args(argv)
    if a.games < 2 or a.games % 2 or a.epochs < 1:
        p.error("--games must be even and >= 2, --epochs >= 1")
    try:
        second_asking(a.teacher)
    except ValueError as err:
        p.exit(2, f"planner_overrides.py: {err}\n")
    import torch

    from spacewar_ai.util.threads import use_torch_threads

    use_torch_threads(1)
    agent, (obs, moves, labels, again) = label_twice(a.student, a.teacher, a.games, a.seed)
    over = moves != labels
    x, mask, _ = agent._batch(obs)  # the student's own reading of the observation
    with torch.no_grad():
        x = agent.obs_norm(x)
    train = np.random.default_rng(a.seed).random(len(obs)) < 0.8
    out = {"states": int(len(obs)), "overrides": float(over.mean()),
           "asked again, overrides too": float((again[over] != moves[over]).mean()),
           "asked again, the same action": float((again[over] == labels[over]).mean()),
           **fit_classifier(x, mask, torch.as_tensor(labels), train, over, a.epochs, a.seed)}
    for key, value in out.items():
        print(f"{key}: {value:.1%}" if isinstance(value, float) else f"{key}: {value:,}")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
