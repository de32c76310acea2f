"""Lookahead at play time: a rollout planner over the engine, with a model of the opponent.

`search:SPEC[+MODEL...][@name=value...]` (docs/search.md is its manual) flies like this at every
decision: copy the game once per action and sample, play that action in each copy, then let SPEC
fly this ship and the opponent model the other for `horizon` decisions, and keep the action whose
copies ended best on average (`ending_value`; ties go to SPEC's own greedy action). Samples
differ because a PPO SPEC samples its policy, or by `jitter`, a share of random valid moves.

The opponent model is the one SPEC's training run learned (`opponent_model.pt` beside it), else
the shipped clone of the hard pilot (the pilot itself in a game the clone cannot read); `+MODEL`
names any other pilot (one that reads the game itself, as `rllib_sw:PATH` does, is attached to
the copies), `+A+B` a mix whose members share each action's samples, and `@choose=1` forecasts
each game with the member that has foreseen most of its opponent's moves (`MoveWatcher`).
`adapt:` is the same planner whose model learns the opponent it meets, across a match's games
(`OpponentLearner`).

The planner reads the whole game, so whoever runs the games `attach`es it to its batch. Each
game's samples come from a generator keyed by the pilot's seed and the game's own state, never
by its row; float rounding in a batched matrix product may still (rarely) tip a near-tie."""

from __future__ import annotations

import numpy as np

from ..config import GameConfig
from ..game import engine
from ..game.controls import decode, encode
from ..game.engine import FRAME, OVER, REAL_WINNER, WINNER, GameBatch
from ..game.pilot import Pilot, as_pilot
from ..util.errors import UserError
from .spec import REAL_SETTINGS

# What a copy's ending is worth. Only torpedo wins count (as in every table), so an ending that
# is neither that nor a loss sits a little below a game still open, which may yet be won.
WIN, LOSS, DRAW = 1.0, -1.0, -0.2
HORIZON = 60  # decisions per rollout: 240 frames, 4.8 s of game
SAMPLES = 8  # rollouts per action
# A deterministic rollout pilot's samples are all one game unless something perturbs them; this
# share of random moves is enough to make them differ and little enough to keep its play.
JITTER = 0.05
TIE = 1e-3  # the policy's own move wins when another's mean ending is within this of it


def ending_value(killer: np.ndarray, survivor: np.ndarray, side: np.ndarray) -> np.ndarray:
    """What finished games are worth to ship `side`: WIN for its torpedo kill, LOSS when it died
    and the other ship lives (whatever killed it), else DRAW. `killer` and `survivor` are the
    engine's REAL_WINNER and WINNER (-1: none)."""
    return np.where(killer == side, WIN, np.where(survivor == 1 - side, LOSS, DRAW))


def sample_streams(streams: np.ndarray, actions: int, samples: int) -> np.ndarray:
    """The random streams of the rollouts of games whose own streams are `streams`: one per
    sample, shared by the actions, unrelated to the game's own."""
    sample = np.arange(1, samples + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    mixed = engine.mix64(streams.astype(np.uint64)[:, None] ^ engine.mix64(sample)[None, :])
    return np.tile(mixed[:, None, :], (1, actions, 1)).reshape(-1)


class MoveWatcher:
    """What the opponents of the attached games did between two decisions: `see(batch, sides)`,
    called at each decision, reads it from the change in each opponent's ship since the last
    call (`infer_moves`)."""

    def __init__(self):
        self._last: dict | None = None

    def see(self, batch: GameBatch, sides: np.ndarray):
        """None, or (the opponents' observations at the last decision (N, D), the rows of the
        games that went on from it with the opponent alive throughout and out of hyperspace at
        it, the opponents' moves in those rows, numbered as the game's controls number them)."""
        g = np.arange(batch.n)
        other = 1 - sides
        now = {"obs": batch.obs[g, other].copy(), "frame": batch.game_i[:, FRAME].copy(),
               "over": batch.game_i[:, OVER].copy(),
               "heading": batch.ship_f[g, other, engine.SANG].copy(),
               "fuel": batch.ship_f[g, other, engine.SFUEL].copy(),
               "shots": batch.ship_i[g, other, engine.SHOTS].copy(),
               "jumps": batch.ship_i[g, other, engine.JUMPS].copy(),
               "alive": batch.ship_i[g, other, engine.ALIVE].copy(),
               "hidden": batch.ship_i[g, other, engine.HYPER_HIDDEN].copy()}
        last, self._last = self._last, now
        if last is None or len(last["frame"]) != batch.n:
            return None
        # The same game, one decision on, the opponent alive throughout and out of hyperspace
        # when it chose: in hyperspace its controls do nothing, and its return turns it at random.
        rows = np.flatnonzero((now["frame"] > last["frame"]) & (last["over"] == 0)
                              & (last["alive"] == 1) & (now["alive"] == 1)
                              & (last["hidden"] == 0))
        if rows.size == 0:
            return None
        return last["obs"], rows, infer_moves(last, now, rows, batch.config.controls)

    def restarted(self, batch: GameBatch) -> np.ndarray:
        """Rows whose game is newer than at the last call (all, at the first)."""
        if self._last is None or len(self._last["frame"]) != batch.n:
            return np.ones(batch.n, dtype=bool)
        return batch.game_i[:, FRAME] < self._last["frame"]


class OpponentLearner:
    """Fits a PPO opponent model to the moves the real opponent makes (the module docstring).

    `see(batch, sides)` is called at each decision of the attached games, before planning: for
    each game still running since the last call it infers the opponent's move from the change in
    its ship's state and keeps (what the opponent saw then, that move), the latest `window` of
    them. Each move it keeps buys `study` examples of training, drawn at random from the window
    in minibatches of `batch_size` as soon as a whole one is owed. Learning thus goes at the pace
    the moves arrive, a minibatch or so per decision: in human play no single frame pays for a
    whole pass. The model's input scaling stays the prior's. `foreseen` and `moves` count how
    many of the moves the model predicted before it learned from them."""

    def __init__(self, model, seed: int = 0, window: int = 4096, batch_size: int = 256,
                 study: int = 192, learning_rate: float = 1e-3):
        import torch

        self.model = model
        self.agent = getattr(model, "agent", None)
        if self.agent is None or not hasattr(self.agent, "imitate"):
            raise UserError("an adapting planner's opponent model must be a PPO model "
                            "(pretrained, ppo:PATH or a PPO checkpoint)")
        self.window, self.batch_size, self.study = window, batch_size, study
        self.agent.offer_held_fire()  # it learns the moves as the game offers them
        self.optimizer = torch.optim.Adam(self.agent.net.parameters(), lr=learning_rate)
        self.rng = np.random.default_rng([seed, 0xADA])
        self._obs: np.ndarray | None = None  # the latest `window` moves' observations
        self._moves = np.zeros(0, dtype=np.int64)
        self._owed = 0.0  # training examples bought by moves and not yet studied
        self._watcher = MoveWatcher()
        self.moves = 0
        self.foreseen = 0

    def see(self, batch: GameBatch, sides: np.ndarray) -> None:
        seen = self._watcher.see(batch, sides)
        if seen is None:
            return
        before, rows, moves = seen
        seen = before[rows]
        self.foreseen += int((np.asarray(self.model.act(seen)) == moves).sum())
        self.moves += rows.size
        self._obs = (seen if self._obs is None else
                     np.concatenate([self._obs, seen]))[-self.window:]
        self._moves = np.concatenate([self._moves, moves])[-self.window:]
        if len(self._moves) < self.batch_size:
            return  # too few to learn from yet, and they buy nothing: no debt to pay at once
        self._owed += rows.size * self.study
        steps = int(self._owed // self.batch_size)
        if steps == 0:
            return
        self._owed -= steps * self.batch_size
        pick = self.rng.integers(len(self._moves), size=steps * self.batch_size)
        self.agent.imitate(self._obs[pick], self._moves[pick], self.optimizer, self.batch_size,
                           fit_scaling=False)

    @property
    def accuracy(self) -> float:
        """The share of the opponent's moves the model predicted before learning from them."""
        return self.foreseen / max(self.moves, 1)


def improved_policy(values: np.ndarray, valid: np.ndarray, temperature: float,
                    own: np.ndarray | None = None, margin: float = 0.0) -> np.ndarray:
    """(S, A) probabilities of the policy a planner's action values make (expert iteration's
    targets): at temperature 0 all on the best valid action; above it, a softmax of value /
    temperature over the valid actions, so that actions the rollouts value alike share the
    weight (values are mean endings, from -1 to 1). With `own` (S,), the moves of the policy
    the planner improves on, each of those is valued up by `margin` (and a hair, so that it
    wins ties) as the planner decides, so the targets lean to the move the planner keeps;
    without it, the first of equals wins at temperature 0."""
    values = np.where(valid, np.nan_to_num(np.asarray(values, dtype=np.float64), nan=-1.0),
                      -np.inf)
    if own is not None:
        values[np.arange(len(values)), own] += margin + TIE
    out = np.zeros(values.shape)
    if temperature <= 0:
        out[np.arange(len(values)), values.argmax(axis=1)] = 1.0
        return out
    z = np.exp(np.where(valid, (values - values.max(axis=1, keepdims=True)) / temperature,
                        -np.inf))
    return z / z.sum(axis=1, keepdims=True)


def infer_moves(last: dict, now: dict, rows: np.ndarray, controls: str) -> np.ndarray:
    """The actions of scheme `controls` that turn the opponents' ships of `last` into those of
    `now`, for `rows`: the switches a jump, a shot, a burn of fuel and the heading's change say
    were pressed. An action the game refused (a shot while reloading) reads as none, which is
    what it did."""
    turn = (now["heading"][rows] - last["heading"][rows] + np.pi) % (2 * np.pi) - np.pi
    fired = now["shots"][rows] > last["shots"][rows]
    thrust = now["fuel"][rows] < last["fuel"][rows]
    return encode(turn < -1e-9, turn > 1e-9, thrust, fired,
                  now["jumps"][rows] > last["jumps"][rows], controls)


class SearchPilot(Pilot):
    """One step of policy improvement at play time (see the module docstring).

    `policy` and `opponent_model` are pilots (`act(obs) -> actions`) that play greedily: learned
    ones (pilots.AgentPilot, greedy), scripted ones, any pilot that answers many games at once;
    `opponent_model` may be a list, a mix whose members share each action's samples in turn.
    Sampled rollouts (samples > 1) draw from the policy's logits when it is a PPO model
    (`policy.agent` has `action_logits`), and need `jitter` > 0 otherwise. `config` is the
    decision-level game (frame_skip frames per decision) the copies are played in.
    """

    def __init__(self, policy, opponent_model, config: GameConfig | None = None,
                 horizon: int = HORIZON, samples: int = SAMPLES, seed: int = 0,
                 name: str = "search", identity: str = "", adaptive: bool = False,
                 jitter: float = 0.0, margin: float = 0.0, choose: bool = False):
        if not isinstance(horizon, (int, np.integer)) or horizon < 1:
            raise UserError(f"horizon={horizon!r} is invalid: must be an integer >= 1 "
                            "(decisions per rollout)")
        if not isinstance(samples, (int, np.integer)) or samples < 1:
            raise UserError(f"samples={samples!r} is invalid: must be an integer >= 1 "
                            "(rollouts per action)")
        for setting, value in (("jitter", jitter), ("margin", margin)):
            (low, high), what = REAL_SETTINGS[setting]
            if not low <= value <= high or (setting == "jitter" and value == high):
                raise UserError(f"{setting}={value!r} is invalid: must be {what}")
        self._logits = getattr(getattr(policy, "agent", None), "action_logits", None)
        if samples > 1 and self._logits is None and jitter == 0:
            raise UserError(f"{name}: the samples of a pilot that is not a PPO model are all "
                            "one game; give it jitter (e.g. @jitter=0.05) or samples=1")
        given = opponent_model if isinstance(opponent_model, (list, tuple)) else [opponent_model]
        # Objects of one's own with act() and reset() fly as pilots (attached, asked as one).
        policy = as_pilot(policy)
        models = [as_pilot(m) for m in given]
        if adaptive and len(models) != 1:
            raise UserError(f"{name}: an adapting planner learns one opponent model, not a mix")
        if choose and len(models) < 2:
            raise UserError(f"{name}: choose=1 picks among a mix's members; name two or more "
                            "after '+' (e.g. search:pretrained+heuristic:hard+pretrained)")
        self.policy = policy
        self.models = models
        self.opponent_model = models[0]
        self.learner = OpponentLearner(self.opponent_model, seed) if adaptive else None
        # With choose, each game's forecaster is the member that has foreseen most of that game's
        # opponent moves so far (the first on a tie): a mix hedges, a choice follows.
        self.choose = bool(choose)
        self._watcher = MoveWatcher()
        self.forecast_hits = np.zeros((0, len(models)))  # (games, members): moves each foresaw
        # The member that is the policy's own network (the same file, never fine-tuned), if any.
        self._twin = next((j for j, model in enumerate(models)
                           if self._logits is not None and not adaptive
                           and hasattr(model, "agent") and model.identity == policy.identity),
                          None)
        self.config = config if config is not None else GameConfig()
        self.horizon = int(horizon)
        self.samples = int(samples)
        self.jitter = float(jitter)
        # The policy's own move stands unless another's mean ending beats it by more than this:
        # with few samples most differences are chance, and a teacher should not teach them.
        self.margin = float(margin)
        self.seed = int(seed)
        self.name = name
        self.identity = identity or name
        self.actions = self.config.num_actions
        # The actions that jump to hyperspace (both rotate switches, or the seventh action).
        self._jumps = decode(np.arange(self.actions), self.config.controls)[4]
        self._batch: GameBatch | None = None
        self._sides = np.zeros(0, dtype=np.int64)
        self._copies: GameBatch | None = None
        # (running games, A): each action's mean rollout ending at the last decision, and the
        # batch rows of those games.
        self.last_values = np.zeros((0, self.actions))
        self.last_rows = np.zeros(0, dtype=np.int64)
        self.last_own = np.zeros(0, dtype=np.int64)  # the policy's moves in those games

    def attach(self, batch: GameBatch, sides) -> None:
        """Play in `batch`, flying ship `sides` (one int, or one per game)."""
        self._batch = batch
        self._sides = np.broadcast_to(np.asarray(sides, dtype=np.int64), (batch.n,)).copy()
        self._watcher = MoveWatcher()

    def act(self, obs: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        batch = self._batch
        if batch is None:
            raise RuntimeError(f"{self.name} plans on the game itself and was not told which "
                               "game it plays in: it plays in --evaluate, tournaments, demos "
                               "and human play, not as a training opponent")
        if obs.shape[0] != batch.n:
            raise RuntimeError(f"{self.name} got {obs.shape[0]} observations for a batch of "
                               f"{batch.n} games: it must be asked about every game at once")
        if self.learner is not None:
            self.learner.see(batch, self._sides)
        if self.choose:
            self._foresee(batch)
        self.policy.attach(batch, self._sides)  # its rollouts attached it to their copies
        own = np.asarray(self.policy.act(obs), dtype=np.int64).reshape(-1)
        rows = np.flatnonzero(batch.game_i[:, OVER] == 0)
        self.last_rows = rows  # read with last_values (dagger.Labelled): never a stale pair
        self.last_own = own[rows]
        if rows.size == 0:
            self.last_values = np.zeros((0, self.actions))
            return own
        self.last_values = self.action_values(rows)  # read by Labelled for soft targets
        # The best valid action, the policy's kept on ties and within the margin: the rule
        # expert iteration's soft targets share, so their most likely action is this one.
        start = self.config.mask_start
        valid = obs[rows, start:start + self.actions] > 0.5
        # A jump is the policy's to make: a planner choosing jumps itself, its rollouts weighing
        # their odds, jumped more and won less (docs/search.md).
        mine = own[rows][:, None] == np.arange(self.actions)[None, :]
        valid[:, self._jumps] &= mine[:, self._jumps]
        chosen = own.copy()
        chosen[rows] = improved_policy(self.last_values, valid, 0.0, own[rows],
                                       self.margin).argmax(axis=1)
        return chosen

    def action_values(self, rows: np.ndarray) -> np.ndarray:
        """(len(rows), A): each action's mean rollout ending for the attached batch's games
        `rows`, from this pilot's side."""
        batch = self._batch
        a, k = self.actions, self.samples
        per = a * k
        m = rows.size * per
        copies = self._copies_of(m)
        copies.load_state_dict({key: np.repeat(v[rows], per, axis=0)
                                for key, v in batch.state_dict().items()})
        # Each sample draws its own chances (a jump that fails, where a ship comes back), the
        # same for every action: the game's own stream would show all of them one future, which
        # the real game need not draw.
        copies.rng[:] = sample_streams(batch.rng[rows], a, k)
        side = np.repeat(self._sides[rows], per)
        other = 1 - side
        idx = np.arange(m)
        first = np.tile(np.repeat(np.arange(a), k), rows.size)
        # Each sample's opponent model: a mix's members take the samples in turn, or each game
        # has the one chosen for it.
        if self.choose:
            member = np.repeat(self.forecast_hits[rows].argmax(axis=1), per)
        else:
            member = np.tile(np.arange(k) % len(self.models), rows.size * a)
        sampled = k > 1 and self._logits is not None
        noise = self._noise(batch, rows) if sampled or self.jitter > 0 else None
        for pilot in (self.policy, *self.models):
            pilot.reset()  # new games: a pilot that keeps something per game starts afresh
        # A pilot that reads the game itself (rllib_sw:) reads the copies.
        self.policy.attach(copies, side)
        for model in self.models:
            model.attach(copies, other)
        value = np.zeros(m)
        ended = copies.game_i[:, OVER] != 0
        moves = np.zeros((m, 2), dtype=np.int64)
        for step in range(self.horizon):
            seen = copies.observe()
            live = np.flatnonzero(~ended)  # ended copies stand still: no one needs their moves
            mine, theirs = seen[idx, side], seen[idx, other]
            asked = [live if len(self.models) == 1 else live[member[live] == j]
                     for j in range(len(self.models))]
            if step == 0:
                moves[idx, side] = first
            elif sampled:
                # A forecaster that is the policy's own network is read in the same call.
                twin = idx[:0]
                if self._twin is not None:
                    twin, asked[self._twin] = asked[self._twin], idx[:0]
                logits = self._logits(np.concatenate([mine[live], theirs[twin]]))
                moves[live, side[live]] = (logits[:live.size]
                                           + noise["gumbel"][step][live]).argmax(axis=1)
                moves[twin, other[twin]] = logits[live.size:].argmax(axis=1)
            else:
                moves[live, side[live]] = self._ask(self.policy, mine, live)
            for j, model in enumerate(self.models):
                if asked[j].size:
                    moves[asked[j], other[asked[j]]] = self._ask(model, theirs, asked[j])
            if self.jitter > 0:
                self._jitter(moves, seen, side, other, noise, step)
            copies.step(moves)
            new = (copies.game_i[:, OVER] != 0) & ~ended
            if new.any():
                value[new] = ending_value(copies.game_i[new, REAL_WINNER],
                                          copies.game_i[new, WINNER], side[new])
                ended |= new
                if ended.all():
                    break
        return value.reshape(rows.size, a, k).mean(axis=2)

    def _foresee(self, batch: GameBatch) -> None:
        """Count the opponent's last move in each game against each member's forecast of it
        (a new game starts from nothing)."""
        if len(self.forecast_hits) != batch.n:
            self.forecast_hits = np.zeros((batch.n, len(self.models)))
        self.forecast_hits[self._watcher.restarted(batch)] = 0
        seen = self._watcher.see(batch, self._sides)
        if seen is None:
            return
        before, rows, moves = seen
        for j, model in enumerate(self.models):
            model.reset()
            self.forecast_hits[rows, j] += self._ask(model, before, rows) == moves

    @staticmethod
    def _ask(pilot, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """`pilot`'s moves at `rows`. A learned pilot is asked about those rows alone; any other
        about every copy, as one batch throughout the rollout, since a scripted pilot may keep
        something per game row (a reaction delay); those rows are its active ones."""
        if hasattr(pilot, "agent"):
            return pilot.act(obs[rows])
        active = np.zeros(len(obs), dtype=bool)
        active[rows] = True
        return np.asarray(pilot.act(obs, active), dtype=np.int64)[rows]

    def _jitter(self, moves, seen, side, other, noise, step) -> None:
        """Replace each ship's move with a random valid one with probability `jitter` (not this
        ship's first move, which is the action being valued)."""
        a = self.actions
        for s, ship in enumerate((side, other)):
            if s == 0 and step == 0:
                continue
            pick = noise["pick"][step, :, s]
            rows = np.flatnonzero(noise["coin"][step, :, s] < self.jitter)
            if rows.size == 0:
                continue
            start = self.config.mask_start
            valid = seen[rows, ship[rows], start:start + a] > 0.5
            count = valid.sum(axis=1)
            nth = np.minimum((pick[rows] * count).astype(np.int64), count - 1)
            choice = (np.cumsum(valid, axis=1) > nth[:, None]).argmax(axis=1)
            moves[rows, ship[rows]] = np.where(count > 0, choice, moves[rows, ship[rows]])

    def _copies_of(self, m: int) -> GameBatch:
        if self._copies is None or self._copies.n != m:
            self._copies = GameBatch(m, self.config, count_dodges=False)  # plans need no stats
        return self._copies

    def _noise(self, batch: GameBatch, rows: np.ndarray) -> dict[str, np.ndarray]:
        """The rollouts' randomness, each game's from a generator keyed by this pilot's seed and
        the game's random stream and frame count: "gumbel" (horizon, copies, A), noise on a PPO
        policy's logits; "coin" and "pick" (horizon, copies, 2), each ship's jitter draws."""
        a, k, h = self.actions, self.samples, self.horizon
        gumbel = np.empty((h, rows.size, a * k, a)) if k > 1 and self._logits is not None \
            else None
        draws = np.empty((h, rows.size, a * k, 2, 2)) if self.jitter > 0 else None
        for j, g in enumerate(rows):
            rng = np.random.default_rng([self.seed, int(batch.rng[g]),
                                         int(batch.game_i[g, FRAME])])
            if gumbel is not None:
                gumbel[:, j] = rng.gumbel(size=(h, a * k, a))
            if draws is not None:
                draws[:, j] = rng.random(size=(h, a * k, 2, 2))
        out = {}
        if gumbel is not None:
            out["gumbel"] = gumbel.reshape(h, rows.size * a * k, a)
        if draws is not None:
            draws = draws.reshape(h, rows.size * a * k, 2, 2)
            out["coin"], out["pick"] = draws[..., 0], draws[..., 1]
        return out
