"""Gymnasium and PettingZoo environments over the batch engine (engine.py).

`SpacewarEnv` is a batch of one, `SpacewarVectorEnv` a batch of N; both drive `engine.GameBatch`,
the game's only implementation, so a single env and game 0 of a vector env seeded alike play the
same game bit for bit. The PettingZoo environments are `parallel_env()` and the AEC `env()` /
`raw_env()`.

They follow the libraries' own conventions, so their tools work unchanged: every info key has one
type whether a game is running or over, action masks are int8 (what `Discrete.sample(mask=...)`
and PettingZoo expect), `action_masks()` serves sb3-contrib's MaskablePPO, and the vector env
offers Gymnasium's same-step and next-step autoreset.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..config import GameConfig, RewardConfig
from ..util.errors import UserError
from . import engine
from .engine import OBS_JUMPS, OBS_OWN, OBS_STAR, DeathCause, GameBatch
from .features import EGOCENTRIC_DOC, TACTICAL_DOC
from .pilot import Pilot

OBSERVATION_DOC = """
    ## Observation: 30 float32 (32 with hyperspace) and the action mask, from the observer's side

    36 values with the six actions, 39 with hyperspace (seven actions and the jumps left), 46 with
    `controls = "switches"` (the 16 combinations of the switches), 48 with both.

    | index | meaning | scaling / range |
    |---|---|---|
    | 0-1 | own position x, y | / width, / height, in [0, 1) |
    | 2-3 | own velocity | / max_speed, clipped to [-1, 1] |
    | 4-5 | sin, cos of own heading | heading 0 points along +x; forward = (cos, sin) in screen coordinates (y grows downward) |
    | 6 | fuel | / max_fuel, [0, 1] |
    | 7 | torpedoes left | / max_ammo, [0, 1] |
    | 8 | reload frames left | / fire_cooldown, [0, 1] (0 = ready) |
    | 9-10 | opponent position minus own, shortest way round the torus | / (width/2), / (height/2), [-1, 1]; zeros while the opponent is in hyperspace |
    | 11-12 | opponent velocity minus own | / (2 max_speed), clipped to [-1, 1] |
    | 13-14 | sin, cos of opponent heading | [-1, 1] |
    | 15-16 | star position minus own, shortest way round | / (width/2), / (height/2); zeros with no star |
    | 17 | star proximity | star_radius / max(distance, star_radius), (0, 1] |
    | 18-29 | the 3 nearest live enemy torpedoes, nearest first: relative position (2), relative velocity (2) | as 9-12; all zeros where fewer |
    | 30-31 | with hyperspace only: own jumps left, the opponent's (they decide where a jump from an orbit lands and how likely a jump fails) | / hyperspace_jumps, [0, 1] |
    | 30-, 32- with hyperspace | action mask, one value an action: 30-35, 32-38 with hyperspace, 30-45 with the switches, 32-47 with both | 1.0 valid, 0.0 invalid |
"""

_CAUSES = tuple(DeathCause)  # by code: a lookup, where DeathCause(code) costs a call each step
MASK_DTYPE = np.int8  # action masks in infos: Gymnasium's and PettingZoo's samplers expect int8

ACTION_DOC = """
    ## Actions: Discrete(6), Discrete(7) with hyperspace, Discrete(16) with the switches

    `GameConfig(controls="six")` (the default): one thing at a time.

    | action | meaning |
    |---|---|
    | 0 | none (drift) |
    | 1 | rotate left (heading decreases: counter-clockwise on screen) |
    | 2 | rotate right (heading increases: clockwise on screen) |
    | 3 | thrust |
    | 4 | fire |
    | 5 | thrust + fire |
    | 6 | hyperspace (only with `GameConfig(hyperspace=True)`) |

    `GameConfig(controls="switches")`, the 1962 control box: an action is the sum of the switches
    pressed, left 1, right 2, thrust 4, fire 8, so all 16 combinations are actions 0-15; both
    rotate switches at once (3, 7, 11, 15) jump where hyperspace is on and cancel elsewhere.
    `spacewar_ai.game.controls` turns switches into either set's action numbers and back
    (`encode`, `decode`).

    Masking: no fuel masks 3 and 5; no torpedoes or reloading masks 4 and 5; a dead ship, or one in
    hyperspace, may only take 0 (with the switches: an action is allowed when each of its switches
    can act in the decision's frames, fire once the reload ends within them, since a held switch
    fires on the frame it does; a combination outside the mask plays the switches that can act).
    A masked action of the six is played as 0 (drift); either is counted in
    `info["masked_actions"]`; `info["action_mask"]` carries the same mask as the observation's
    tail, as int8, and `action_masks()` returns it as booleans (sb3-contrib's MaskablePPO reads
    it there).
"""


def _obs_space(cfg: GameConfig) -> spaces.Box:
    low = np.full(cfg.obs_dim, -1.0, dtype=np.float32)
    high = np.ones(cfg.obs_dim, dtype=np.float32)
    # Position, fuel, torpedoes, reload and the star's proximity are never negative.
    low[[OBS_OWN, OBS_OWN + 1, OBS_OWN + 6, OBS_OWN + 7, OBS_OWN + 8, OBS_STAR + 2]] = 0.0
    low[OBS_JUMPS:] = 0.0  # the jumps left, where hyperspace is on, and the mask
    return spaces.Box(low, high, dtype=np.float32)


_INT_TYPES = (int, np.int64, np.int32)


def check_action(action: Any, num_actions: int) -> int:
    """Validate one action; return it as an int or raise ValueError naming it and the range."""
    if type(action) in _INT_TYPES and 0 <= action < num_actions:
        return int(action)  # the common case, checked first: this runs every step
    if isinstance(action, np.ndarray) and action.ndim == 0:
        action = action[()]
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        raise UserError(
            f"action {action!r} (type {type(action).__name__}) is invalid: expected an integer "
            f"in [0, {num_actions - 1}]")
    a = int(action)
    if not 0 <= a < num_actions:
        raise UserError(f"action {a} is out of range: expected an integer in [0, {num_actions - 1}]")
    return a


def check_actions(actions: Any, shape: tuple[int, ...], num_actions: int) -> np.ndarray:
    """Validate a batch of actions; return them as int64 or raise ValueError."""
    arr = np.asarray(actions)
    if arr.shape != shape:
        raise UserError(f"actions have shape {arr.shape}: expected {shape}")
    if arr.dtype.kind not in "iu":
        bad = arr.reshape(-1)[0] if arr.size else arr
        raise UserError(
            f"actions have dtype {arr.dtype} (e.g. {bad!r}): expected integers in "
            f"[0, {num_actions - 1}]")
    if arr.size and (arr.min() < 0 or arr.max() >= num_actions):
        bad = arr[(arr < 0) | (arr >= num_actions)].reshape(-1)[0]
        raise UserError(f"action {int(bad)} is out of range: expected integers in "
                        f"[0, {num_actions - 1}]")
    return arr.astype(np.int64, copy=False)




def _check_configs(config, reward_config):
    config = GameConfig() if config is None else config
    reward_config = RewardConfig() if reward_config is None else reward_config
    if isinstance(config, dict):
        config = GameConfig.from_dict(config)
    if isinstance(reward_config, dict):
        reward_config = RewardConfig.from_dict(reward_config)
    return config, reward_config


def _opponent(spec, config: GameConfig, batch: GameBatch):
    """The pilot flying ship 1 (None: the caller flies both): a pilot as it is, a spec built
    here. A planner reads the games themselves, so it is told which batch it plays in
    (search.py)."""
    if spec is None:
        return None
    if isinstance(spec, Pilot):
        pilot = spec
    else:
        from ..pilots.build import make_pilot  # loads networks (torch) only for a spec's sake

        pilot = make_pilot(spec, config)
    pilot.attach(batch, 1)
    return pilot


class SpacewarEnv(gym.Env):
    """Spacewar! (1962): two ships, a star, torpedoes, on a wrapping 1024 x 1024 screen.

    `step(action)` flies ship 0 against `opponent` (a pilot spec such as "heuristic:hard", a pilot
    object, or a function obs -> action); `step_both(a0, a1)` flies both ships.
    """

    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 50}

    def __init__(self, config: GameConfig | dict | None = None,
                 reward_config: RewardConfig | dict | None = None,
                 opponent: Any = "heuristic:medium", render_mode: str | None = None,
                 render_size: int = 640):
        config, reward_config = _check_configs(config, reward_config)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise UserError(f"render_mode={render_mode!r} is invalid: use one of "
                            f"{self.metadata['render_modes']} or None")
        self.config = config
        self.reward_config = reward_config
        self.render_mode = render_mode
        self.render_size = int(render_size)
        self.metadata = dict(self.metadata, render_fps=config.fps)
        self.batch = GameBatch(1, config, reward_config, count_dodges=False)
        self.observation_space = _obs_space(config)
        self.action_space = spaces.Discrete(config.num_actions)
        self.opponent = _opponent(opponent, config, self.batch)
        self._actions = np.zeros((1, 2), dtype=np.int64)
        self._needs_reset = True
        self._episode_return = np.zeros(2)
        self._renderer = None

    @property
    def spec(self):
        return self.__dict__.get("_spec")

    @spec.setter
    def spec(self, value) -> None:
        # gym.make gives the env a spec without a step limit (the registration has none, so no
        # TimeLimit wrapper doubles the game's own); the limit the game truncates at is filled
        # in, in decisions, so tools that read spec.max_episode_steps see it.
        if value is not None and value.max_episode_steps is None:
            import dataclasses

            value = dataclasses.replace(value, max_episode_steps=self.max_decisions)
        self.__dict__["_spec"] = value

    @property
    def max_decisions(self) -> int:
        """Decisions in a game that runs to its time limit (`max_episode_steps` frames)."""
        return -(-self.config.max_episode_steps // self.config.frame_skip)

    # The docstring is the documentation (Gymnasium style): tables appended here.
    __doc__ += OBSERVATION_DOC + EGOCENTRIC_DOC + TACTICAL_DOC + ACTION_DOC + """
    ## Rewards (RewardConfig, per ship)
    -0.01 per step; torpedo kill +100 to the shooter and -100 to the victim; flying into the star
    -50; ship-ship collision -30 each; hyperspace death -50. At the end: +50 win and -50 loss only
    for torpedo kills; draws (timeout, both out of torpedoes, collision, mutual kill) -10 each; the
    survivor of an opponent's suicide gets nothing extra. Torpedo winners also get
    20 x fuel left / max_fuel + 15 x torpedoes left / max_ammo.

    ## Episode end
    Terminated when a ship is destroyed (torpedo, star, collision, hyperspace) or both ships are
    out of torpedoes with none in flight; truncated after `max_episode_steps` frames (the env's
    `spec.max_episode_steps`, made by gym.make, gives the same limit in steps). info carries
    `ship_0_death_cause`, `ship_1_death_cause` (a DeathCause, printed by name; NONE for a ship
    alive), `winner` (the surviving ship when exactly one survived, else -1) and `real_winner`
    (the ship that killed the other with a torpedo, else -1). Each key has one type at every step,
    so Gymnasium's vector envs and wrappers batch them.
    """

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        b = self.batch
        if seed is not None:
            b.reset(seeds=np.array([seed], dtype=np.int64))
        else:
            b.reset()
        if self.opponent is not None:
            self.opponent.reset(np.ones(1, dtype=bool), b.rng.copy())
        self._needs_reset = False
        self._episode_return[:] = 0.0
        obs = b.observe()
        if self.render_mode == "human":
            self.render()
        return obs[0, 0].copy(), self._info()

    def _info(self, masks: np.ndarray | None = None) -> dict:
        """The info of a step; masks: both ships' action masks when the caller has them."""
        b = self.batch
        si = b.ship_i[0].tolist()
        gi = b.game_i[0].tolist()
        return {
            "action_mask": (b.obs[0, 0, b.mask_columns].astype(MASK_DTYPE) if masks is None
                            else masks[0]),
            "ship_0_death_cause": _CAUSES[si[0][engine.CAUSE]],
            "ship_1_death_cause": _CAUSES[si[1][engine.CAUSE]],
            "winner": gi[engine.WINNER],
            "real_winner": gi[engine.REAL_WINNER],
            "masked_actions": si[0][engine.MASKED],
            "frame": gi[engine.FRAME],
        }

    def action_masks(self) -> np.ndarray:
        """The valid actions of ship 0 now, as booleans (sb3-contrib's MaskablePPO calls it)."""
        return self.batch.obs[0, 0, self.batch.mask_columns] > 0.5

    def _advance(self, a0: int, a1: int):
        if self._needs_reset:
            raise RuntimeError("the episode has ended (or never started): call reset() before step()")
        b = self.batch
        self._actions[0, 0] = a0
        self._actions[0, 1] = a1
        ended = b.step(self._actions)
        obs = b.observe()
        terminated = truncated = False
        if ended:
            terminated = bool(b.terminated[0])
            truncated = bool(b.truncated[0])
            self._needs_reset = True
        self._episode_return += b.reward[0]
        if self.render_mode == "human":
            self.render()
        return obs, terminated, truncated

    def step(self, action):
        a0 = check_action(action, self.config.num_actions)
        if self._needs_reset:
            raise RuntimeError("the episode has ended (or never started): call reset() before step()")
        if self.opponent is None:
            raise RuntimeError("this SpacewarEnv has no opponent: use step_both(a0, a1)")
        a1 = int(self.opponent.act(self.batch.obs[:, 1])[0])
        obs, terminated, truncated = self._advance(a0, a1)
        return obs[0, 0].copy(), float(self.batch.reward[0, 0]), terminated, truncated, self._info()

    def step_both(self, action_0, action_1):
        """Fly both ships. Returns obs (2, D), rewards (2,), terminated, truncated, info."""
        n = self.config.num_actions
        a0 = check_action(action_0, n)
        a1 = check_action(action_1, n)
        obs, terminated, truncated = self._advance(a0, a1)
        masks = obs[0, :, self.batch.mask_columns].astype(MASK_DTYPE)
        info = self._info(masks)
        info["action_masks"] = masks
        info["masked_actions_both"] = self.batch.ship_i[0, :, engine.MASKED].copy()
        return obs[0].copy(), self.batch.reward[0].copy(), terminated, truncated, info

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='human' or "
                            "'rgb_array' to SpacewarEnv")
            return None
        if self._renderer is None:
            from .rendering import Renderer
            self._renderer = Renderer(self.config, self.render_size, self.render_mode)
        return self._renderer.draw(self.batch, 0)

    def close(self):
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


class SpacewarVectorEnv(VectorEnv):
    """N Spacewar! games in one engine batch, ship 0 of each controlled by the caller.

    Autoreset, as Gymnasium defines it (`autoreset_mode`):
    - same-step (the default, and the fastest): when a game ends, `step` returns the first
      observation of its next game; the last one is in `info["final_obs"]` and the game's
      statistics in `info["final_info"]` (rows where `info["_final_obs"]` is true);
    - next-step: `step` returns the last observation with the game's statistics in `info`
      (rows where `info["_winner"]` is true), and the following `step` starts the next game
      (its actions for those rows are ignored). Gymnasium's vector NormalizeObservation and
      FlattenObservation ask for this mode.
    The statistics of a finished game: `episode_return`, `episode_length`, `winner`,
    `real_winner` (-1 for none), and by ship (N, 2): `death_cause` (DeathCause codes), `shots`,
    `hits`, `fuel_used`, `masked_actions`, and with `count_dodges=True` `dodged` (enemy
    torpedoes that came within 3 hit radii and missed: tracked every frame, it costs about a
    tenth of the env's speed, so it is off unless asked for). `info["action_mask"]` (int8) is the
    mask of every game's current position.

    The two-ship API (`reset_both`, `step_both`) returns observations (N, 2, D) and rewards (N, 2)
    and takes actions (N, 2): self-play training uses it.

    Seeding: `reset(seed=s)` seeds game i with s + i, so game i is the same game as
    `SpacewarEnv().reset(seed=s + i)` whatever the number of games. `render()` returns one frame
    per game (`render_mode="rgb_array"`), as Gymnasium's vector RecordVideo expects.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50,
                "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int = 1, config: GameConfig | dict | None = None,
                 reward_config: RewardConfig | dict | None = None,
                 opponent: Any = "heuristic:medium", render_mode: str | None = None,
                 render_size: int = 640,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
                 count_dodges: bool = False):
        config, reward_config = _check_configs(config, reward_config)
        mode = AutoresetMode(autoreset_mode)
        if mode not in (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP):
            raise UserError(f"autoreset_mode={mode.value!r} is not offered: use "
                            "'SameStep' (the default) or 'NextStep'")
        self.metadata = dict(self.metadata, render_fps=config.fps, autoreset_mode=mode)
        self._next_step = mode == AutoresetMode.NEXT_STEP  # read every step: a bool, not an enum
        self.config = config
        self.reward_config = reward_config
        self.num_envs = int(num_envs)
        self.batch = GameBatch(self.num_envs, config, reward_config, count_dodges)
        self.single_observation_space = _obs_space(config)
        self.single_action_space = spaces.Discrete(config.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.opponent = _opponent(opponent, config, self.batch)
        self.render_mode = render_mode
        self.render_size = int(render_size)
        self._renderer = None
        n = self.num_envs
        self._actions = np.zeros((n, 2), dtype=np.int64)
        self._ep_return = np.zeros((n, 2))
        self._ep_len = np.zeros(n, dtype=np.int64)
        self._pending = np.zeros(n, dtype=bool)  # next-step: games to start at the next step
        self._started = False

    @property
    def autoreset_mode(self) -> AutoresetMode:
        return AutoresetMode.NEXT_STEP if self._next_step else AutoresetMode.SAME_STEP

    def _reset_impl(self, seed, mask=None):
        b = self.batch
        n = self.num_envs
        if seed is None:
            b.reset(mask)
        else:
            if isinstance(seed, (int, np.integer)):
                seeds = int(seed) + np.arange(n, dtype=np.int64)
            else:
                seeds = np.asarray(seed, dtype=np.int64)
                if seeds.shape != (n,):
                    raise UserError(f"seed has shape {seeds.shape}: give one int, or one per game "
                                    f"({n})")
            b.reset(mask, seeds)
        m = np.ones(n, dtype=bool) if mask is None else mask
        if self.opponent is not None:
            self.opponent.reset(m, b.rng.copy())
        self._ep_return[m] = 0.0
        self._ep_len[m] = 0
        self._pending[m] = False
        # The other games' observations were written by the step that left them as they are;
        # rewriting only the reset ones saves a second pass over every game when a few end.
        obs = b.observe(mask if self._started else None)
        self._started = True
        return obs

    def _reset_rows(self, seed, options):
        mask = None
        if options and "reset_mask" in options:  # Gymnasium's partial reset
            mask = np.asarray(options["reset_mask"], dtype=bool)
            if mask.shape != (self.num_envs,):
                raise UserError(f"options['reset_mask'] has shape {mask.shape}: expected "
                                f"({self.num_envs},)")
        return self._reset_impl(seed, mask)

    def reset(self, *, seed=None, options=None):
        obs = self._reset_rows(seed, options)
        masks = obs[:, 0, self.batch.mask_columns].astype(MASK_DTYPE)
        return obs[:, 0].copy(), {"action_mask": masks}

    def reset_both(self, *, seed=None, options=None):
        obs = self._reset_rows(seed, options)
        return obs.copy(), {"action_mask": obs[:, :, self.batch.mask_columns].astype(MASK_DTYPE)}

    def _step_impl(self, actions01: np.ndarray):
        if not self._started:
            raise RuntimeError("call reset() before step()")
        b = self.batch
        # Next-step autoreset: these games were over last step; they start now.
        starting = self._pending if self._next_step else None
        ended = b.step(actions01)  # games already over are left alone (reward 0, no flags)
        obs = b.observe()
        rewards = b.reward.copy()
        self._ep_return += rewards
        self._ep_len += 1
        terminated = b.terminated.copy()
        truncated = b.truncated.copy()
        done = terminated | truncated
        info: dict[str, Any] = {}
        if ended:
            results = {"episode_return": self._ep_return.copy(),
                       "episode_length": self._ep_len.copy(),
                       "winner": b.game_i[:, engine.WINNER].copy(),
                       "real_winner": b.game_i[:, engine.REAL_WINNER].copy(),
                       "death_cause": b.ship_i[:, :, engine.CAUSE].copy(),
                       "shots": b.ship_i[:, :, engine.SHOTS].copy(),
                       "hits": b.ship_i[:, :, engine.HITS].copy(),
                       "fuel_used": self.config.max_fuel - b.ship_f[:, :, engine.SFUEL],
                       "masked_actions": b.ship_i[:, :, engine.MASKED].copy()}
            if b.count_dodges:
                results["dodged"] = b.stats[:, :, engine.DODGED].copy()
            results.update({f"_{k}": done for k in list(results)})
            if not self._next_step:
                info.update(final_obs=obs.copy(), _final_obs=done, final_info=results,
                            _final_info=done)
                obs = self._reset_impl(None, done)
            else:
                info.update(results)
        if starting is not None:
            if starting.any():
                obs = self._reset_impl(None, starting)
            self._pending = done.copy()  # not done itself: the infos returned hold done
        return obs, rewards, terminated, truncated, info

    def step(self, actions):
        a0 = check_actions(actions, (self.num_envs,), self.config.num_actions)
        if self.opponent is None:
            raise RuntimeError("this SpacewarVectorEnv has no opponent: use step_both(actions)")
        if not self._started:
            raise RuntimeError("call reset() before step()")
        self._actions[:, 0] = a0
        self._actions[:, 1] = self.opponent.act(self.batch.obs[:, 1])
        obs, rewards, terminated, truncated, info = self._step_impl(self._actions)
        if "final_obs" in info:
            info["final_obs"] = info["final_obs"][:, 0]
        stats = info.get("final_info", info)
        if "episode_return" in stats:
            stats["episode_return"] = stats["episode_return"][:, 0]
        info["action_mask"] = obs[:, 0, self.batch.mask_columns].astype(MASK_DTYPE)
        return obs[:, 0].copy(), rewards[:, 0].copy(), terminated, truncated, info

    def step_both(self, actions):
        """actions (N, 2) -> obs (N, 2, D), rewards (N, 2), terminated (N,), truncated (N,), info."""
        a = check_actions(actions, (self.num_envs, 2), self.config.num_actions)
        obs, rewards, terminated, truncated, info = self._step_impl(a)
        info["action_mask"] = obs[:, :, self.batch.mask_columns].astype(MASK_DTYPE)
        return obs.copy(), rewards, terminated, truncated, info

    def render(self):
        """One frame per game (rgb_array), as Gymnasium's vector RecordVideo expects."""
        if self.render_mode is None:
            return None
        if self._renderer is None:
            from .rendering import Renderer
            self._renderer = Renderer(self.config, self.render_size, "rgb_array")
        return [self._renderer.draw(self.batch, g) for g in range(self.num_envs)]

    def close_extras(self, **kwargs):
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


try:  # PettingZoo is an optional (dev) dependency.
    from pettingzoo import ParallelEnv as _ParallelBase
except ImportError:  # pragma: no cover - exercised only without pettingzoo
    _ParallelBase = object

AGENTS = ("ship_0", "ship_1")


class SpacewarParallelEnv(_ParallelBase):
    """PettingZoo ParallelEnv: agents "ship_0" and "ship_1", each with its own 36-float view;
    `infos[agent]["action_mask"]` (int8) is the agent's action mask (also the observation's
    tail). `state()` is both views side by side (`state_space`). `max_cycles`, when given,
    truncates a game after that many decisions (PettingZoo's convention); otherwise the game's
    own length holds."""

    metadata = {"render_modes": ["human", "rgb_array"], "name": "spacewar_v0", "render_fps": 50,
                "is_parallelizable": True}

    def __init__(self, config: GameConfig | dict | None = None,
                 reward_config: RewardConfig | dict | None = None, render_mode: str | None = None,
                 max_cycles: int | None = None):
        if max_cycles is not None and (not isinstance(max_cycles, int) or max_cycles < 1):
            raise UserError(f"max_cycles={max_cycles!r} is invalid: an integer >= 1, or None")
        self._env = SpacewarEnv(config, reward_config, opponent=None, render_mode=render_mode)
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self.render_mode = render_mode
        self.max_cycles = max_cycles
        self._cycles = 0
        self._obs_space = self._env.observation_space
        self._act_space = self._env.action_space
        low = np.concatenate([self._obs_space.low, self._obs_space.low])
        high = np.concatenate([self._obs_space.high, self._obs_space.high])
        self.state_space = spaces.Box(low, high, dtype=np.float32)

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def state(self) -> np.ndarray:
        """Both ships' views, ship 0's first."""
        return self._env.batch.obs[0].reshape(-1).copy()

    def reset(self, seed=None, options=None):
        self._env.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        self._cycles = 0
        obs = self._env.batch.obs[0]
        return self._split(obs), self._infos(obs, {})

    def _split(self, obs):
        return {a: obs[i].copy() for i, a in enumerate(self.possible_agents)}

    def _infos(self, obs, shared):
        columns = self._env.batch.mask_columns
        return {a: dict(shared, action_mask=obs[i, columns].astype(MASK_DTYPE))
                for i, a in enumerate(self.possible_agents)}

    def step(self, actions):
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise UserError(f"actions are missing for agent(s) {missing}")
        obs, rew, term, trunc, info = self._env.step_both(actions["ship_0"], actions["ship_1"])
        self._cycles += 1
        if self.max_cycles is not None and self._cycles >= self.max_cycles and not term:
            trunc = True
        shared = {k: info[k] for k in ("ship_0_death_cause", "ship_1_death_cause", "winner",
                                       "real_winner")}
        agents = self.possible_agents
        out = (self._split(obs), {a: float(rew[i]) for i, a in enumerate(agents)},
               {a: term for a in agents}, {a: trunc for a in agents}, self._infos(obs, shared))
        if term or trunc:
            self.agents = []
        return out

    def render(self):
        return self._env.render()

    def close(self):
        self._env.close()


def parallel_env(**kwargs) -> SpacewarParallelEnv:
    """The PettingZoo parallel environment (needs `pip install pettingzoo`, in the dev extra)."""
    if _ParallelBase is object:
        raise ImportError("parallel_env() needs PettingZoo: pip install pettingzoo "
                          "(or pip install -e '.[dev]')")
    return SpacewarParallelEnv(**kwargs)


def raw_env(**kwargs):
    """The PettingZoo AEC environment: the two ships take turns to choose, and the game steps
    once both have (PettingZoo's parallel_to_aec over `parallel_env`)."""
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(parallel_env(**kwargs))


env = raw_env  # PettingZoo's usual names: env() and raw_env()
