"""A run's counters, and its budget: [train] total_timesteps, episodes and max_minutes,
whichever ends it first.

`fraction(counters)` is how far the run is through it (0 to 1), in one function for both of
its readers: the schedules (epsilon's decay, learning-rate annealing), which follow steps and
games and never the clock, so a run's weights at a given update do not depend on the host's
speed (`clock=False`); and the progress bar, which shows the nearest end, the clock's too.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass

from ..config import UNLIMITED_STEPS, TrainConfig
from ..util.errors import UserError


@dataclass
class Counters:
    """How far a run is, saved in its checkpoints and carried across resumes. Steps and games
    advance in `played` alone; updates and the clock where an update ends (Trainer.after_update);
    the best evaluation where best.pt is written (evaluation.Evaluator)."""

    global_step: int = 0
    episodes: int = 0
    updates: int = 0
    best_eval: float = -1.0  # best.pt's win rate in evaluations, pooled over best_eval_games
    best_eval_games: int = 0
    wall_seconds: float = 0.0
    warm_start_accuracy: float | None = None

    def played(self, decisions: int, games: int) -> None:
        self.global_step += decisions
        self.episodes += games

    def saved(self) -> dict:
        """As a checkpoint's metadata holds them."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_saved(cls, saved: dict) -> Counters:
        """A checkpoint's counters (names this version does not know are left out)."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in saved.items() if k in known})


@dataclass
class Budget:
    """The ends of one run; `until` pauses it earlier (population-based training's rounds),
    the schedules still following the whole budget."""

    train: TrainConfig
    until: int

    def fraction(self, counters: Counters, clock: bool = True) -> float:
        """How far through the budget, 0 to 1: the furthest of steps, games and (with clock)
        minutes. `--episodes` alone leaves a step budget no run reaches, so measured by steps
        alone DQN would explore at epsilon 1.0 to the end."""
        t = self.train
        used = counters.global_step / t.total_timesteps if t.total_timesteps else 1.0
        if t.episodes:
            used = max(used, counters.episodes / t.episodes)
        if clock and t.max_minutes:
            used = max(used, counters.wall_seconds / (60 * t.max_minutes))
        return min(1.0, used)

    def done(self, counters: Counters) -> bool:
        t = self.train
        if counters.global_step >= min(t.total_timesteps, self.until):
            return True
        if t.max_minutes and counters.wall_seconds >= 60 * t.max_minutes:
            return True
        return bool(t.episodes) and counters.episodes >= t.episodes

    def steps_text(self, counters: Counters, chunk: int, how: str) -> str:
        """The step budget as the run will meet it: steps are counted a whole update at a time
        (`chunk` steps, `how` says what they are), so a budget between two updates' counts is
        trained up to the next."""
        goal = min(self.train.total_timesteps, self.until)
        step = counters.global_step
        real = step + -(-max(goal - step, 0) // chunk) * chunk
        if real == goal:
            return f"{goal:,} steps"
        return f"{real:,} steps ({goal:,} asked, rounded up to whole {how})"

    def left(self, counters: Counters) -> str:
        """What is left of each end the run has: "N steps or M games or K minutes"."""
        t, c = self.train, counters
        ends = [f"{max(0, min(t.total_timesteps, self.until) - c.global_step):,} steps"
                if t.total_timesteps < UNLIMITED_STEPS else "",
                f"{max(0, t.episodes - c.episodes):,} games" if t.episodes else "",
                f"{max(0.0, t.max_minutes - c.wall_seconds / 60):.1f} minutes"
                if t.max_minutes else ""]
        return " or ".join(end for end in ends if end)

    def describe(self, counters: Counters, chunk: int, how: str) -> str:
        """"N steps or M games or K minutes": the ends the run has."""
        t = self.train
        limited = t.total_timesteps < UNLIMITED_STEPS
        ends = [self.steps_text(counters, chunk, how) if limited else "",
                f"{t.episodes:,} games" if t.episodes else "",
                f"{t.max_minutes:g} minutes" if t.max_minutes else ""]
        return " or ".join(end for end in ends if end)

    def finished_line(self, name: str, counters: Counters, resumed_from) -> str:
        """What a resume of a run that already met its budget says instead of training."""
        t, c = self.train, counters
        if c.global_step >= t.total_timesteps:
            met, flag = f"{c.global_step:,} steps of its {t.total_timesteps:,}", \
                f"--timesteps {max(2 * c.global_step, 1):,}".replace(",", "")
        elif t.episodes and c.episodes >= t.episodes:
            met, flag = f"{c.episodes:,} games of its {t.episodes:,}", \
                f"--episodes {2 * c.episodes}"
        else:
            met, flag = f"{c.wall_seconds / 60:.1f} minutes of its {t.max_minutes:g}", \
                f"--minutes {2 * t.max_minutes:g}"
        return (f"{name} is finished: it trained {met}; to train on, resume it with a larger "
                f"budget: spacewar-ai --resume {shlex.quote(str(resumed_from))} {flag}")


def whole_rounds(episodes: int, games: int, pair: int, round_name: str,
                 setting: str) -> tuple[int, int]:
    """`--episodes N` for a run that plays its games in rounds (DAgger's rounds, GRPO's
    iterations) of `games` games, each round in pairs of games for each opponent (`pair`
    games): (rounds, games a round) that play exactly N games, fewer than `games` a round
    where N is smaller. ValueError (one line, before any work) where no whole rounds make N."""
    per_round = min(games, episodes)
    if episodes % per_round or per_round % pair:
        raise UserError(f"--episodes {episodes}: the run plays whole {round_name}s of {games} "
                        f"games ({setting}), in pairs for each opponent: give a multiple of "
                        f"{games}, or fewer games in a multiple of {pair}")
    return episodes // per_round, per_round

