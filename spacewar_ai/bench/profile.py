"""Where a PPO run's time goes, per part: a default run (every game against heuristic:medium,
judged against it, so the opponent model watches every game) is timed for a while with a clock
around each of its parts, at one torch thread and at two, the learner in float32 and (where the
processor has it natively) in bfloat16, and each part's share is printed in microseconds per
learner decision. `--benchmark-training` prints this table first.

The clocks wrap the run's own objects (the engine's step, the agent's calls, the league, the
opponent model, the log, the saves), so what is timed is what a run does, in the mix a run has;
what no clock covers is the loop itself (Python between the calls), printed as "the rest". The
opponent model learns in a thread of its own beside all that: its row is what the learner waits
for it, and a last row (`BESIDE`, not in the sum) the time its fit takes in that thread.
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict

# (part, how it is reached from the trainer, its method): in the order a decision meets them.
FORWARD = "the policy's forward pass and sampling"
FEATURES = "the observation's features (the view)"
PARTS = (
    (FORWARD, "agent", "decide"),
    (FEATURES, "agent", "features"),
    ("the league's opponents", "league", "act"),
    ("the engine's step (and both ships' observations)", "env", "step_both"),
    ("reward shaping", "rollouts", "learner_rewards"),
    ("bootstrapping timeouts (the critic)", "agent", "value_of"),
    ("storing the step", "RolloutBuffer", "add"),
    ("showing the opponent model its pilot's moves", "opponent_model", "observe"),
    ("finished games: league bookkeeping", "Played", "end_games"),
    ("the PPO update", "agent", "update"),
    ("waiting for the opponent model's fit", "trainer", "fit_opponent_model"),
    ("TensorBoard", "log", "update"),
    ("checkpoints", "files", "save"),
)


def _clock(owner, method: str, spent: dict, name: str):
    """Replace owner.method by the same call with its time added to spent[name] (returned: the
    original, to put back where the owner is a module or a class); a call inside
    another clocked call is counted by the outer clock only (the features inside the critic's
    bootstrapping belong to it), except the features inside the forward pass, which are their
    own row, taken out of the forward pass's."""
    inner = getattr(owner, method)

    def timed(*args, **kwargs):
        outer = _running[-1] if _running else None
        if outer is not None and not (name == FEATURES and outer == FORWARD):
            return inner(*args, **kwargs)
        _running.append(name)
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            took = time.perf_counter() - start
            _running.pop()
            spent[name] += took
            if outer is not None:
                spent[outer] -= took

    setattr(owner, method, timed)
    return inner


_running: list[str] = []  # the learner's clocked calls under way, outermost first
BESIDE = "the opponent model's fit, in its own thread"


def _clock_beside(owner, method: str, spent: dict) -> None:
    """Time owner.method, which runs in a thread of its own, into spent[BESIDE]."""
    inner = getattr(owner, method)

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[BESIDE] += time.perf_counter() - start

    setattr(owner, method, timed)


def profile_run(seconds: float, seed: int, threads: int, opponent: str = "heuristic:medium",
                **train) -> tuple[dict[str, float], int, float]:
    """(seconds spent in each part, decisions, the run's seconds) of a default PPO run of
    `seconds` at `threads` torch threads; `train` changes [train] settings
    (`opponent_model_share=0.25`, say)."""
    from ..agents.ppo import RolloutBuffer
    from ..config import LeagueConfig, RunConfig, TrainConfig
    from ..training.online import rollouts
    from ..training.online.trainer import Trainer
    from ..util.threads import use_torch_threads

    use_torch_threads(threads)
    spent: dict[str, float] = defaultdict(float)
    with tempfile.TemporaryDirectory() as tmp:
        # No evaluation but the run's last, of two games: evaluations are not a decision's cost.
        cfg = RunConfig(train=TrainConfig(checkpoint_dir=tmp, log_dir=tmp, run_name="profile",
                                          eval_interval=10**6, eval_episodes=2,
                                          total_timesteps=10**10,
                                          max_minutes=seconds / 60, seed=seed,
                                          eval_opponent=opponent, torch_threads=threads,
                                          rollout_workers=0, **train),
                        league=LeagueConfig(curriculum=(opponent,), scripted_share=1.0))
        trainer = Trainer(cfg, quiet=True)
        owners = {"agent": trainer.agent, "league": trainer.league, "env": trainer.env,
                  "trainer": trainer, "log": trainer.log, "files": trainer.files,
                  "opponent_model": trainer.opponent_model, "rollouts": rollouts,
                  "RolloutBuffer": RolloutBuffer, "Played": rollouts.Played}
        shared = [(owners[owner], method, _clock(owners[owner], method, spent, name))
                  for name, owner, method in PARTS]
        if trainer.opponent_model is not None:
            _clock_beside(trainer.opponent_model, "_learn", spent)
        start = time.perf_counter()
        try:
            trainer.run()
        finally:
            for owner, method, inner in shared:
                if isinstance(owner, type) or owner is rollouts:
                    setattr(owner, method, inner)  # not left clocked for the next run
        wall = time.perf_counter() - start
        decisions = trainer.counters.global_step
    return dict(spent), decisions, wall


def run_profile(seconds: float = 20.0, seed: int = 0, quick: bool = False) -> dict[str, float]:
    """Print the table (module docstring); returns microseconds per decision by part, threads
    and the learner's precision ("<part> @<threads> <precision>")."""
    import os

    import torch

    from ..agents.base import native_bfloat16
    from ..util.threads import use_torch_threads

    if quick:  # a check that it runs: every run still ends at an update
        seconds = 2.0
    counts = sorted({1, min(2, os.cpu_count() or 1)})
    precisions = ("float32", "bfloat16") if native_bfloat16(torch.device("cpu")) else (
        "float32",)
    columns = [f"{t} {p}" for t in counts for p in precisions]
    runs = {f"{t} {p}": profile_run(seconds, seed, t, precision=p)
            for t in counts for p in precisions}
    use_torch_threads()
    print(f"Where a default PPO run's time goes (every game against heuristic:medium, the "
          f"opponent model watching them all), microseconds per learner decision, each column "
          f"a {seconds:.0f} s run at that many torch threads, the learner in that precision"
          + ("" if len(precisions) > 1 else " (this processor has no native bfloat16)") + ":")
    header = "".join(f"{c.replace(' ', ' th ').replace('float', 'f'):>14}" for c in columns)
    print(f"  {'part':<52}{header}")
    figures: dict[str, float] = {}
    rest, total = "", ""
    for c in columns:
        spent, decisions, wall = runs[c]
        learner = sum(v for k, v in spent.items() if k != BESIDE)
        figures[f"rest @{c}"] = 1e6 * (wall - learner) / max(decisions, 1)
        figures[f"total @{c}"] = 1e6 * wall / max(decisions, 1)
        rest += f"{figures[f'rest @{c}']:>14.2f}"
        total += f"{figures[f'total @{c}']:>14.2f}"
    for name in [*(part for part, _, _ in PARTS), BESIDE]:
        if name == BESIDE:
            print(f"  {'the rest (the loop itself, the progress bar)':<52}{rest}")
            print(f"  {'in all (1e6 / decisions per second)':<52}{total}")
        row = ""
        for c in columns:
            spent, decisions, _ = runs[c]
            figures[f"{name} @{c}"] = us = 1e6 * spent.get(name, 0.0) / max(decisions, 1)
            row += f"{us:>14.2f}"
        print(f"  {name:<52}{row}")
    return figures
