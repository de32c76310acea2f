"""A run's evaluations and the choice of its best.pt.

Every `eval_interval` updates the learner's greedy player plays `eval_episodes` games against
`eval_opponent` on starts of its own (`evaluation_seeds`): eval/win_rate, the learning curve. A
figure above best.pt's makes it a challenger: it and best.pt replay the same fresh games, and
the challenger must win more of them to take best.pt's place; otherwise best.pt's figure
pools the replay it survived, so the figure settles on what best.pt is worth instead of
keeping the luckiest of many noisy evaluations (docs/design-log.md, design decisions). While
videos have cost less than `eval_video` of the run's time, an evaluation's first game also
goes to TensorBoard as eval/video.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import torch

from ..agents.checkpoints import (
    best_name,
    game_of,
    load_checkpoint,
    publish_best,
    rewrite_metadata,
)
from ..agents.saved import load_agent
from ..config import RunConfig
from ..game.replays import game_gif
from ..pilots.build import AgentPilot
from ..rating.match import play_match


def evaluation_seeds(updates: int, games: int) -> tuple[int, int]:
    """First seeds of the evaluation after `updates` updates and of its confirmation (each plays
    games / 2 starts, sides swapped). Every evaluation and every confirmation has starts of its
    own: shared starts would make successive evaluations' noise agree."""
    return 10_000 + 2 * updates * games, 10_000 + (2 * updates + 1) * games


class Evaluator:
    """Evaluations of one run and its best.pt, for every run that learns a network (the
    Trainer's PPO and DQN, offline/learners.py's BC and CQL). `counters` is the run's own
    (budget.Counters, read for the step, updates and wall time; best_eval and best_eval_games are
    written back)."""

    def __init__(self, cfg: RunConfig, run_dir: Path, opponent, device: str, counters):
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.opponent = opponent
        self.device = device
        self.counters = counters
        self._best: AgentPilot | None = None  # best.pt's player, once loaded or made
        self._video_seconds = 0.0  # spent on eval/video this session
        self.say: Callable[[str], None] = print  # the run's progress line-writer, once it has one
        self._said: tuple = ()  # what the last line about the design's best file said

    def evaluate(self, agent, writer, save_best: Callable[[], Path]) -> float:
        """Evaluate `agent`'s greedy player and let it challenge best.pt (`save_best` writes
        the learner as best.pt when it wins). Returns the evaluation's win rate."""
        t, c = self.cfg.train, self.counters
        pilot = AgentPilot(agent.play_copy(), "learner", deterministic=True)
        games = t.eval_episodes + t.eval_episodes % 2

        def play(player, seed: int, keep_actions: int = 0):
            return play_match(player, self.opponent, games, seed=seed, config=self.cfg.game,
                              reward_config=self.cfg.reward, keep_actions=keep_actions)

        selection, confirmation = evaluation_seeds(c.updates, games)
        video = t.eval_video > 0 and self._video_seconds <= t.eval_video * c.wall_seconds
        r = play(pilot, selection, keep_actions=int(video))
        rate = r.win_rate_a()
        step = c.global_step
        if video:
            self._video(writer, r.games[0], step)
        writer.add_scalar("eval/win_rate", rate, step)
        writer.add_scalar("eval/draw_rate", r.draws / r.n, step)
        writer.add_scalar("eval/wall_minutes", c.wall_seconds / 60, step)
        incumbent = self.incumbent()
        if incumbent is None or rate > c.best_eval:
            challenger = play(pilot, confirmation).wins_a
            writer.add_scalar("eval/confirmed_win_rate", challenger / games, step)
            defended = play(incumbent, confirmation).wins_a if incumbent is not None else -1
            if challenger > defended:
                self._best = pilot
                c.best_eval, c.best_eval_games = challenger / games, games
                save_best()
            else:
                n = c.best_eval_games
                c.best_eval = (c.best_eval * n + defended) / (n + games)
                c.best_eval_games = n + games
                figure = {"best_eval": c.best_eval, "best_eval_games": c.best_eval_games}
                rewrite_metadata(self.run_dir / "best.pt",
                                 lambda meta: {**meta, "counters": {**meta["counters"], **figure}})
            mine = challenger if challenger > defended else defended
            self.publish(lambda player: play(player, confirmation).wins_a, mine, games)
            writer.add_scalar("eval/best_win_rate", c.best_eval, step)
        return rate

    def publish(self, wins: Callable, mine: int, games: int) -> None:
        """Make this run's best.pt the best of all runs of its game (`best_name`: the design's
        `<algorithm>_best.pt` for the default game) if that file is this run's or weaker:
        another run's model there replays the games that best.pt just won `mine` of
        (`wins(player)` plays them) and keeps its place unless it won fewer. A model there of
        another game (written before the files were named for their games) is neither played
        nor replaced. One line says which way it went, the first time and whenever it
        changes."""
        t = self.cfg.train
        name = best_name(t.algorithm, self.cfg.game)
        published = self.run_dir.parent / name
        rival = published_run(published)
        if rival not in (None, self.run_dir.name):
            try:
                payload = load_checkpoint(published)
            except (ValueError, OSError):
                payload = None  # unreadable: this run's model replaces it
            game = self.cfg.game
            if payload is not None and game_of(payload) != (game.obs_dim, game.num_actions,
                                                            game.rules):
                self._say(("other game", rival), f"{published} holds a network of another "
                          f"game (run {rival}'s), so this run's best.pt is not published there; "
                          "move that file aside to publish this game's best")
                return
            agent = None
            if payload is not None:
                try:
                    with torch.random.fork_rng(devices=[]):
                        agent, _ = load_agent(published, self.device)
                except (ValueError, OSError):
                    agent = None  # of another shape: this run's model replaces it
            theirs = wins(AgentPilot(agent, rival, deterministic=True)) if agent else -1
            if theirs >= mine:
                # Said again when a lead becomes a tie: a run that reaches the model there (the
                # same seed's weights, say) should not end on an early evaluation's gap.
                self._say(("stays", rival, theirs == mine), f"{published} stays run {rival}'s "
                          f"model: on this evaluation's {games} games it won {theirs}, this "
                          f"run's best.pt {mine}" + (" (a tie keeps it)" if theirs == mine
                                                     else ""))
                return
            self._say(("replaced", rival), f"{published} is now this run's best.pt: on this "
                      f"evaluation's {games} games it won {mine}, " +
                      (f"run {rival}'s model {theirs}" if theirs >= 0 else
                       "and the model there could not be read"))
        elif rival is None and name != f"{t.algorithm}_best.pt":
            self._say(("named", name), f"{published}: the best of this game's "
                      f"{t.algorithm.upper()} runs (a network plays only the game it learned; "
                      f"{t.algorithm}_best.pt is the default game's)")
        publish_best(self.run_dir / "best.pt", t.algorithm, name)

    def _say(self, key: tuple, text: str) -> None:
        if key != self._said:
            self._said = key
            self.say(text)

    def incumbent(self) -> AgentPilot | None:
        """The player saved as best.pt, read from the file after a resume."""
        if self._best is None and self.counters.best_eval >= 0:
            path = self.run_dir / "best.pt"
            if not path.exists():
                return None
            # Building the network draws initial weights from torch's generator, which the
            # learner samples from: leave its stream as it was.
            with torch.random.fork_rng(devices=[]):
                agent, _ = load_agent(path, self.device)
            self._best = AgentPilot(agent, "best", deterministic=True)
        return self._best

    def _video(self, writer, game, step: int) -> None:
        """eval/video: the evaluation's first game (the learner flies ship 0) as an animated
        GIF, an image summary as SummaryWriter.add_video writes it, without add_video's moviepy
        1.x (Gymnasium's RecordVideo wants 2.x)."""
        from tensorboard.compat.proto.summary_pb2 import Summary

        began = time.time()
        size = 192
        gif = game_gif(self.cfg.game, game.seed, game.actions, size)
        image = Summary.Image(height=size, width=size, colorspace=1, encoded_image_string=gif)
        summary = Summary(value=[Summary.Value(tag="eval/video", image=image)])
        # Through the writer's file_writer (no add_* method takes an encoded GIF); the attribute
        # is guarded by tests/test_ecosystem.py::test_the_dependency_surfaces_we_lean_on_are_there.
        writer.file_writer.add_summary(summary, step)
        self._video_seconds += time.time() - began


def published_run(path: Path) -> str | None:
    """The run a design's `<algorithm>_best.pt` came from (its metadata's run name, else the
    folder its best.pt was in), or None when there is no such file or it cannot be read."""
    from ..agents.checkpoints import CheckpointError

    if not Path(path).is_file():
        return None
    try:
        meta = load_checkpoint(path)["metadata"]
    except (CheckpointError, OSError, KeyError):
        return ""
    return str(meta.get("run_name") or "")
