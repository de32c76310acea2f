"""Configuration dataclasses: pure data, JSON-serializable, validated at construction.

Every constant of the game lives here with its unit. Defaults follow the Spacewar! 3.1 listing
(1962) converted to a 1024 x 1024 unit screen; see shared/reference/spacewar-1962.md.
One engine step is one frame of the 1962 main loop.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

START_POSITIONS = ("classic", "orbit")
# Values of an observation before its action mask (engine.py names the parts of the layout).
OBS_MASK = 30


def nearest(name: str, choices) -> str:
    """ "did you mean 'x'?" for the closest of choices, or "" when none is close."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def _fields_from_dict(cls, data: dict[str, Any]):
    """Build a dataclass from a dict, naming any unknown key instead of silently dropping it."""
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__}: expected a table of fields, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        hint = nearest(unknown[0], known) or f"valid fields are {sorted(known)}"
        raise ValueError(f"{cls.__name__}: unknown field {unknown[0]!r}; {hint}")
    for name, v in data.items():
        # Checked here, where the field is known: numpy and torch would only say "overflow".
        _require(not _is_int(v) or abs(v) <= MAX_INTEGER, cls.__name__, name, v,
                 "integers here are at most 2**53 in size")
    return cls(**data)


MAX_INTEGER = 2**53  # the largest integer a float (and so JSON anywhere) holds exactly


def _require(cond: bool, cls_name: str, name: str, value: Any, rule: str) -> None:
    if not cond:
        raise ValueError(f"{cls_name}.{name}={value!r} is invalid: {rule}")


@dataclass
class GameConfig:
    """The rules and constants of one Spacewar! game."""

    width: float = 1024.0  # screen units; the playfield wraps (torus)
    height: float = 1024.0  # screen units
    max_ammo: int = 32  # torpedoes per ship
    torpedo_lifetime: int = 96  # frames; range about 384 units
    fire_cooldown: int = 16  # frames between shots
    torpedo_speed: float = 4.0  # units/frame, added to the ship's velocity along its heading
    rotation_speed: float = 1.0 / 16.0  # rad/frame
    thrust_power: float = 2.0 / 256.0  # units/frame^2
    max_fuel: int = 1000  # frames of thrust (1962: 8192 units at 1-16 a frame)
    gravity_constant: float = 512.0  # GM in units^3/frame^2: gravity equals thrust at 256 units
    star_radius: float = 16.0  # units; capture zone of the star
    hit_radius: float = 12.0  # units; octagon |dx|<r, |dy|<r, |dx|+|dy|<1.5 r
    max_speed: float = 8.0  # units/frame; observation normaliser (escape speed at the star's edge)
    max_episode_steps: int = 3000  # frames (60 s at 50 fps) before the game is truncated
    fps: int = 50  # frames per second when a person watches or plays
    # Decisions every k frames. 4 gives 12.5 decisions/s: a full turn still takes 25 decisions and
    # one reload (16 frames) is exactly 4 decisions, while episodes are 4x shorter for learning.
    frame_skip: int = 4
    start_positions: str = "orbit"  # "orbit" (seeded random opposing orbits) or "classic" (1962)
    # 1962 sense switches, as booleans.
    angular_momentum: bool = False  # switch 1: rotate buttons apply angular acceleration
    light_star: bool = False  # switch 2: gravity / 4
    no_star: bool = False  # switch 6: no star, no gravity
    star_teleports: bool = False  # switch 5 off in 1962 terms: star moves the ship to the corner
    torpedo_gravity: bool = False  # 1962 torpedoes ignore gravity
    hyperspace: bool = False  # a 7th action: vanish, reappear at random, may explode
    hyperspace_jumps: int = 8  # jumps per ship; the k-th destroys the ship with probability k/8
    hyperspace_vanish_frames: int = 32  # frames invisible and untouchable
    hyperspace_recharge_frames: int = 128  # frames after reappearing before the next jump

    def __post_init__(self) -> None:
        n = type(self).__name__
        for name in ("width", "height", "torpedo_speed", "rotation_speed", "max_speed"):
            v = getattr(self, name)
            _require(_finite(v) and v > 0, n, name, v, "must be a finite number > 0")
        for name in ("thrust_power", "gravity_constant", "hit_radius"):
            v = getattr(self, name)
            _require(_finite(v) and v >= 0, n, name, v, "must be a finite number >= 0")
        for name in ("max_ammo", "max_fuel", "hyperspace_jumps"):
            v = getattr(self, name)
            _require(_is_int(v) and v >= 0, n, name, v, "must be an integer >= 0")
        for name in ("torpedo_lifetime", "fire_cooldown", "max_episode_steps", "fps",
                     "frame_skip", "hyperspace_vanish_frames", "hyperspace_recharge_frames"):
            v = getattr(self, name)
            _require(_is_int(v) and v >= 1, n, name, v, "must be an integer >= 1")
        half = min(self.width, self.height) / 2
        _require(_finite(self.star_radius) and 0 <= self.star_radius < half, n, "star_radius",
                 self.star_radius, f"must be >= 0 and smaller than half the screen ({half:g})")
        _require(self.hit_radius < half, n, "hit_radius", self.hit_radius,
                 f"must be smaller than half the screen ({half:g})")
        _require(self.start_positions in START_POSITIONS, n, "start_positions",
                 self.start_positions, f"must be one of {START_POSITIONS}")
        for name in ("angular_momentum", "light_star", "no_star", "star_teleports",
                     "torpedo_gravity", "hyperspace"):
            v = getattr(self, name)
            _require(isinstance(v, bool), n, name, v, "must be true or false")

    @property
    def num_actions(self) -> int:
        return 7 if self.hyperspace else 6

    @property
    def obs_dim(self) -> int:
        return OBS_MASK + self.num_actions

    @property
    def torpedo_slots(self) -> int:
        """Live torpedoes one ship can have at once: one per reload over a torpedo's life."""
        return self.torpedo_lifetime // self.fire_cooldown + 1

    @property
    def effective_gravity(self) -> float:
        if self.no_star:
            return 0.0
        return self.gravity_constant / 4.0 if self.light_star else self.gravity_constant

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GameConfig":
        return _fields_from_dict(cls, data)


@dataclass
class RewardConfig:
    """Rewards per ship. Defaults reproduce the original design's table; `personality` names the
    preset a table came from (`RewardConfig.preset`, REWARD_PERSONALITIES)."""

    step_penalty: float = -0.01  # every decision
    kill_reward: float = 100.0  # to the shooter of a torpedo kill
    death_penalty: float = -100.0  # to a ship destroyed by a torpedo
    star_penalty: float = -50.0  # flying into the star (suicide)
    collision_penalty: float = -30.0  # to each ship in a ship-ship collision
    hyperspace_penalty: float = -50.0  # destroyed by a hyperspace jump (suicide)
    win_bonus: float = 50.0  # end of game, torpedo kills only
    lose_penalty: float = -50.0  # end of game, to the victim of a torpedo kill
    draw_penalty: float = -10.0  # end of game by timeout, collision or a mutual kill, each ship
    fuel_efficiency_bonus: float = 20.0  # x fuel left / max_fuel, torpedo winners only
    ammo_efficiency_bonus: float = 15.0  # x torpedoes left / max_ammo, torpedo winners only
    shot_reward: float = 0.0  # per torpedo fired (negative: each shot costs)
    thrust_reward: float = 0.0  # per frame of thrust (negative: fuel costs)
    personality: str = "standard"  # the preset these values came from, for reports

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name != "personality":
                v = getattr(self, f.name)
                _require(_finite(v), type(self).__name__, f.name, v, "must be a finite number")
        _require(isinstance(self.personality, str) and bool(self.personality.strip()),
                 type(self).__name__, "personality", self.personality, "must be a name")

    @classmethod
    def preset(cls, name: str) -> "RewardConfig":
        """The reward table of a personality (REWARD_PERSONALITIES); ValueError names the nearest
        one for a typo."""
        if name not in REWARD_PERSONALITIES:
            hint = nearest(name, REWARD_PERSONALITIES) or \
                f"use one of {', '.join(REWARD_PERSONALITIES)}"
            raise ValueError(f"reward personality {name!r} is unknown; {hint}")
        return cls(**REWARD_PERSONALITIES[name], personality=name)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RewardConfig":
        """Fields, or a preset (`personality`) with some of its fields changed."""
        if isinstance(data, dict) and "personality" in data:
            data = {**cls.preset(data["personality"]).to_dict(), **data}
        return _fields_from_dict(cls, data)


# Reward personalities: tables that pay for different play. Each changes only what it names.
# aggressive: kills pay more, time and draws cost more, saving torpedoes pays nothing, so games
#   end sooner; survival: every way to die costs more and a game survived to its end pays;
# efficient: fuel and torpedoes left pay more, and each shot and frame of thrust costs;
# sniper: each shot costs, so accuracy pays (a hit is a kill, worth far more than a shot).
# A table pays for measured events, and a learner may find a way to collect them without
# winning (a survival learner that hides, a sniper that never fires): training reports the
# styles' GameResult statistics so such a personality shows as exploited.
REWARD_PERSONALITIES: dict[str, dict[str, float]] = {
    "standard": {},
    "aggressive": {"kill_reward": 150.0, "win_bonus": 75.0, "step_penalty": -0.05,
                   "draw_penalty": -40.0, "death_penalty": -60.0, "ammo_efficiency_bonus": 0.0},
    "survival": {"death_penalty": -200.0, "star_penalty": -150.0, "collision_penalty": -100.0,
                 "hyperspace_penalty": -150.0, "draw_penalty": 20.0, "step_penalty": 0.0},
    "efficient": {"fuel_efficiency_bonus": 60.0, "ammo_efficiency_bonus": 45.0,
                  "shot_reward": -1.0, "thrust_reward": -0.05},
    "sniper": {"shot_reward": -4.0, "ammo_efficiency_bonus": 40.0},
}


class _Serializable:
    """to_dict/from_dict for the learning configs (nested tuples become lists in JSON)."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        if not isinstance(data, dict):
            return _fields_from_dict(cls, data)  # names the type it got
        data = dict(data)
        for f in dataclasses.fields(cls):
            if f.name in data and isinstance(data[f.name], list):
                data[f.name] = tuple(data[f.name])
        return _fields_from_dict(cls, data)


def _check_positive(obj, names: tuple[str, ...], integer: bool = False) -> None:
    for name in names:
        v = getattr(obj, name)
        ok = _is_int(v) if integer else _finite(v)
        _require(ok and v > 0, type(obj).__name__, name, v,
                 "must be an integer > 0" if integer else "must be a finite number > 0")


def _check_unit(obj, names: tuple[str, ...]) -> None:
    for name in names:
        v = getattr(obj, name)
        _require(_finite(v) and 0 <= v <= 1, type(obj).__name__, name, v, "must be in [0, 1]")


ACTIVATIONS = ("tanh", "relu")
# What a network reads (features.py): "tactical" is "egocentric" plus aiming and dodging columns;
# "egocentric" turns the observation into the ship's own frame; "world" is the observation as
# documented.
OBSERVATION_VIEWS = ("tactical", "egocentric", "world")
# What a language model's prompt says (lm/view.py): view 1 where things are; view 2 that and the
# aim. An adapter records the one it was trained on.
PROMPT_VIEWS = {1: "where things are", 2: "where things are, and the aim (lead, shot, threat)"}
DEFAULT_PROMPT_VIEW = 2  # the view new adapters are trained with


def _check_hidden(obj, name: str) -> None:
    v = getattr(obj, name)
    _require(isinstance(v, tuple) and len(v) > 0 and all(_is_int(h) and h > 0 for h in v),
             type(obj).__name__, name, v, "must be a non-empty tuple of positive layer sizes")


def _check_view(obj) -> None:
    _require(obj.observation_view in OBSERVATION_VIEWS, type(obj).__name__, "observation_view",
             obj.observation_view, f"must be one of {OBSERVATION_VIEWS}")


@dataclass
class PPOConfig(_Serializable):
    """PPO with separate actor and critic MLPs (CleanRL's recipe, masked logits)."""

    # Higher than CleanRL's 2.5e-4: with a few big minibatches per update, 2.5e-4 barely moved
    # the policy (sweeps in VIBE_HISTORY.md).
    learning_rate: float = 3e-3
    n_steps: int = 64  # decisions per game per rollout; a rollout is n_steps x num_envs samples
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_coef: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    max_grad_norm: float = 0.5
    # Samples are cheap here (a fast engine) and gradient steps are not (a CPU): one epoch of two
    # big minibatches learned as well per minute as more epochs, at a lower cost (VIBE_HISTORY).
    update_epochs: int = 1
    num_minibatches: int = 2
    hidden_sizes: tuple = (256, 256)
    # Hidden-layer nonlinearity, "relu" or "tanh" (CleanRL's). tanh costs as much as the matrix
    # products on a CPU, and relu learned as well.
    activation: str = "relu"
    # What the network reads (features.py): the tactical view hands it a gunner's arithmetic,
    # which a network otherwise needs many samples to learn (ARCHITECTURE.md).
    observation_view: str = "tactical"
    anneal_lr: bool = True
    norm_adv: bool = True
    target_kl: float = 0.0  # 0 disables early stopping on KL
    # Rewards are multiplied by this before learning: kills are worth 100, so unscaled returns make
    # the critic's loss, and its gradient, dwarf the actor's.
    reward_scale: float = 0.01

    def __post_init__(self) -> None:
        _check_positive(self, ("learning_rate", "clip_coef", "max_grad_norm"))
        _check_positive(self, ("n_steps", "update_epochs", "num_minibatches"), integer=True)
        _check_unit(self, ("gamma", "gae_lambda"))
        _check_positive(self, ("reward_scale",))
        for name in ("vf_coef", "ent_coef", "target_kl"):
            v = getattr(self, name)
            _require(_finite(v) and v >= 0, "PPOConfig", name, v, "must be a finite number >= 0")
        _check_hidden(self, "hidden_sizes")
        _require(self.activation in ACTIVATIONS, "PPOConfig", "activation", self.activation,
                 f"must be one of {ACTIVATIONS}")
        _check_view(self)


@dataclass
class DQNConfig(_Serializable):
    """Dueling double DQN with a preallocated replay buffer and masked targets."""

    learning_rate: float = 2.5e-4
    buffer_size: int = 200_000
    batch_size: int = 256
    gamma: float = 0.99
    # Rewards summed over this many decisions before bootstrapping (Rainbow's n-step returns). A
    # kill pays up to 24 decisions after the shot, and no target in between can see the torpedo
    # on its way (observations hold enemy torpedoes only), so short returns lose the shot's credit.
    n_step: int = 10
    learning_starts: int = 5_000  # transitions before the first update
    train_frequency: int = 1  # vector steps between updates
    gradient_steps: int = 2  # updates each time
    target_update_interval: int = 500  # updates between target network copies (target_tau 0)
    # > 0: instead of those copies, the target moves this fraction of the way to the network
    # after every update (Polyak averaging): copies made the greedy policy swing.
    target_tau: float = 0.005
    start_epsilon: float = 1.0
    end_epsilon: float = 0.05
    exploration_fraction: float = 0.3  # share of the run over which epsilon decays
    hidden_sizes: tuple = (256, 256)
    stream_size: int = 128  # value and advantage streams
    # As PPOConfig.observation_view. Not "tactical": its columns did not lift DQN's win rate
    # against medium, with 3-step or 10-step returns (VIBE_HISTORY), so DQN keeps the narrower
    # and cheaper input.
    observation_view: str = "egocentric"
    max_grad_norm: float = 10.0
    reward_scale: float = 0.01  # as PPOConfig.reward_scale
    # Learning rate falling linearly to zero over the run. Off: it did not steady the checkpoints'
    # swings.
    anneal_lr: bool = False
    # Prioritized replay (Schaul et al. 2016, proportional): a transition is drawn with probability
    # proportional to (|TD error| + priority_eps) ** priority_alpha, and its loss weighted by the
    # importance-sampling correction (N * P) ** -beta, beta rising linearly from priority_beta to 1
    # over the run. priority_alpha = 0 samples uniformly (no priorities kept). Off: it did not
    # help here (VIBE_HISTORY.md).
    priority_alpha: float = 0.0
    priority_beta: float = 0.4
    priority_eps: float = 1e-3  # in reward_scale units: a kill is worth about 1
    # Greedy play (evaluations, best.pt's choice, --evaluate, tournaments, human play) uses a
    # moving average of the learning network's weights, which moves this fraction of the way to
    # the network after every gradient step (a plain mean of all steps until 1 / tau of them). The
    # learning network itself still acts while training (epsilon-greedy) and is what learns.
    # 0: greedy play uses the learning network. Off: the ensemble below steadies play more.
    play_average_tau: float = 0.0
    # Greedy play (evaluations, best.pt's choice, --evaluate, tournaments, human play) acts on the
    # mean Q-values of this many networks: the one it would otherwise use and its snapshots taken
    # every play_ensemble_interval gradient steps (the newest play_ensemble - 1, each with its
    # observation statistics): single snapshots swing a lot between updates, and an average of
    # trained networks does not. Learning and exploration are unchanged. 1: the played network
    # alone.
    play_ensemble: int = 8
    play_ensemble_interval: int = 1280  # gradient steps: 10 of training's 64-step iterations

    def __post_init__(self) -> None:
        _check_positive(self, ("learning_rate", "max_grad_norm", "reward_scale", "priority_eps"))
        _check_positive(self, ("buffer_size", "batch_size", "train_frequency", "gradient_steps",
                               "target_update_interval", "stream_size", "n_step",
                               "play_ensemble", "play_ensemble_interval"), integer=True)
        _require(_is_int(self.learning_starts) and self.learning_starts >= 0, "DQNConfig",
                 "learning_starts", self.learning_starts, "must be an integer >= 0")
        _check_unit(self, ("gamma", "start_epsilon", "end_epsilon", "exploration_fraction",
                           "target_tau", "priority_alpha", "priority_beta",
                           "play_average_tau"))
        _check_hidden(self, "hidden_sizes")
        _check_view(self)


@dataclass
class LeagueConfig(_Serializable):
    """Who the learner plays: a curriculum of scripted pilots, then a league of its own snapshots."""

    # Scripted stages in order; the learner moves on when its torpedo-win rate against the current
    # stage over the last `curriculum_window` games reaches `curriculum_threshold`.
    curriculum: tuple = ("idle", "heuristic:easy", "heuristic:medium", "heuristic:hard")
    curriculum_threshold: float = 0.6
    curriculum_window: int = 100
    # Share of games against the current curriculum stage. Self-play against a weak self teaches
    # little, so the scripted stages get most games.
    scripted_share: float = 0.75
    past_share: float = 0.7  # of the self-play games: past snapshots (the rest: current self)
    pfsp: bool = True  # weight past snapshots by how often they beat the learner
    snapshot_interval: int = 10  # updates between snapshots
    pool_size: int = 10  # snapshots kept

    def __post_init__(self) -> None:
        _require(isinstance(self.curriculum, tuple) and len(self.curriculum) > 0
                 and all(isinstance(c, str) for c in self.curriculum), "LeagueConfig",
                 "curriculum", self.curriculum, "must be a non-empty tuple of pilot specs")
        _check_unit(self, ("curriculum_threshold", "scripted_share", "past_share"))
        _check_positive(self, ("curriculum_window", "snapshot_interval", "pool_size"),
                        integer=True)


# Online RL; behaviour cloning and CQL from a dataset; the LM pilot's supervised fine-tuning
# and its GRPO.
ALGORITHMS = ("ppo", "dqn", "bc", "cql", "sft", "grpo", "dagger")
DATASET_ALGORITHMS = ("bc", "cql", "sft")


@dataclass
class OfflineConfig(_Serializable):
    """Learning from a recorded dataset without playing (offline.py): behaviour cloning
    (`--algorithm bc`, PPO's actor) and conservative Q-learning (`--algorithm cql`, DQN's network).
    Their learning rates are [ppo]'s and [dqn]'s."""

    bc_epochs: int = 6  # behaviour cloning: passes over the data
    cql_steps: int = 20_000  # conservative Q-learning: gradient steps
    cql_alpha: float = 1.0  # the weight of CQL's regulariser

    def __post_init__(self) -> None:
        _check_positive(self, ("bc_epochs", "cql_steps"), integer=True)
        _require(_finite(self.cql_alpha) and self.cql_alpha >= 0, "OfflineConfig", "cql_alpha",
                 self.cql_alpha, "must be a finite number >= 0")


def _check_lm_compute(obj) -> None:
    _require(isinstance(obj.bf16, bool), type(obj).__name__, "bf16", obj.bf16,
             "must be true or false")


@dataclass
class SFTConfig(_Serializable):
    """The LM pilot's supervised fine-tuning (sft.py): a LoRA adapter on `base_model` trained on
    a dataset's decisions."""

    base_model: str = "smollm2"  # smollm2, a .gguf file, a model folder or a hub id
    examples: int = 20_000  # decisions drawn from the dataset to train on (0: all)
    held_out: int = 500  # decisions drawn first, never trained on: agreement is measured there
    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 2e-4
    lora_rank: int = 16  # alpha is twice the rank
    lora_layers: int = 8  # LoRA on the top this many decoder layers (0: all of them)
    bf16: bool = True  # compute in bfloat16 (float32 weights); false: float32 throughout
    view: int = DEFAULT_PROMPT_VIEW  # the prompt's text view (PROMPT_VIEWS), kept in the adapter

    def __post_init__(self) -> None:
        _require(_is_int(self.view) and self.view in PROMPT_VIEWS, "SFTConfig", "view",
                 self.view, "must be 1 (where things are) or 2 (and the aim); lm/view.py says "
                 "what each reads")
        _check_positive(self, ("held_out", "epochs", "batch_size", "lora_rank"), integer=True)
        _check_positive(self, ("learning_rate",))
        _require(_is_int(self.lora_layers) and self.lora_layers >= 0, "SFTConfig",
                 "lora_layers", self.lora_layers, "must be a whole number >= 0 (0: all)")
        _require(_is_int(self.examples) and self.examples >= 0, "SFTConfig", "examples",
                 self.examples, "must be a whole number >= 0 (0: all)")
        _require(isinstance(self.base_model, str) and bool(self.base_model.strip()),
                 "SFTConfig", "base_model", self.base_model,
                 "must name a model: smollm2, a .gguf file, a model folder or a hub id")
        _check_lm_compute(self)


SELF = "self"  # in [dagger] opponents: the LM being trained flies the other ship too


@dataclass
class DaggerConfig(_Serializable):
    """DAgger of the LM pilot (dagger.py): each round the LM plays `games` games against
    `opponents`, `teacher` labels every state the LM met, and the adapter trains `steps` steps
    on those labels (mixed with the teacher's own decisions of --dataset)."""

    rounds: int = 4
    # Per round, shared evenly among the opponents: a multiple of twice their number.
    games: int = 64
    # Opponents of the LM's games: any pilot specs, and "self" for the LM itself.
    opponents: tuple = ("heuristic:medium", "heuristic:hard", "random", SELF)
    teacher: str = "heuristic:hard"  # labels every state the LM meets (any pilot spec)
    steps: int = 400  # gradient steps per round, [sft] batch_size decisions each
    # Share of each batch drawn from the LM's own labelled states (all rounds so far); the rest
    # come from --dataset's teacher decisions (all of it own states when there is no dataset).
    own_share: float = 0.5
    afresh: bool = False  # each round trains a new adapter from the base instead of continuing
    learning_rate: float = 1e-4  # falls linearly to zero over each round's steps
    # 0: learn the teacher's answers; above 0 (a planner teacher, search:...), its improved
    # policy, a softmax of its action values at this temperature (expert iteration).
    target_temperature: float = 0.0

    def __post_init__(self) -> None:
        _check_positive(self, ("rounds", "games", "steps"), integer=True)
        _check_positive(self, ("learning_rate",))
        _check_unit(self, ("own_share",))
        _require(isinstance(self.target_temperature, (int, float))
                 and not isinstance(self.target_temperature, bool)
                 and 0 <= self.target_temperature < float("inf"), "DaggerConfig",
                 "target_temperature", self.target_temperature,
                 "must be a number >= 0 (0: the teacher's answers as labels)")
        _require(isinstance(self.opponents, tuple) and len(self.opponents) > 0
                 and all(isinstance(c, str) and c.strip() for c in self.opponents),
                 "DaggerConfig", "opponents", self.opponents,
                 f"must be a non-empty list of pilot specs (\"{SELF}\": the LM itself)")
        _require(isinstance(self.teacher, str) and bool(self.teacher.strip()), "DaggerConfig",
                 "teacher", self.teacher, "must name a pilot, e.g. heuristic:hard")
        _require(isinstance(self.afresh, bool), "DaggerConfig", "afresh", self.afresh,
                 "must be true or false")


@dataclass
class GRPOConfig(_Serializable):
    """GRPO of the LM pilot (grpo.py). Each iteration plays `games` games against `opponent`,
    scores every valid action at `states` of the LM's decisions by playing on `horizon` decisions
    (`rollout_pilot` flying the LM's ship), then updates on those groups."""

    iterations: int = 30
    games: int = 16
    states: int = 64  # groups an update learns from: those whose action matters most
    scored: int = 256  # decisions whose actions are scored to find them (at least `states`)
    horizon: int = 60
    # Games played on from each action (their mean is its score), each pilot's move replaced by
    # a random valid one with probability `jitter`: one deterministic continuation can make an
    # action best by a hair.
    continuations: int = 1
    jitter: float = 0.0
    # A pilot spec, or a comma list of them sharing each iteration's games and scored states.
    opponent: str = "heuristic:medium"
    rollout_pilot: str = "heuristic:hard"
    epochs: int = 2  # passes over an iteration's states
    batch_size: int = 16  # states per gradient step
    learning_rate: float = 3e-5
    clip: float = 0.2  # the ratio's clip range, as PPO's
    kl: float = 0.05  # the weight of the KL divergence to the adapter GRPO started from
    temperature: float = 1.0  # sampling in the iteration's games
    bf16: bool = True  # compute in bfloat16 (float32 weights); false: float32 throughout

    def __post_init__(self) -> None:
        _check_positive(self, ("iterations", "games", "states", "scored", "horizon", "epochs",
                               "batch_size", "continuations"), integer=True)
        _require(_finite(self.jitter) and 0 <= self.jitter < 1, "GRPOConfig", "jitter",
                 self.jitter, "must be a probability in [0, 1)")
        _require(self.continuations == 1 or self.jitter > 0, "GRPOConfig", "continuations",
                 self.continuations, "needs jitter > 0 to differ: the game and the scripted "
                 "pilots are deterministic, so every continuation would be the same game")
        _check_positive(self, ("learning_rate", "clip", "temperature"))
        _require(_finite(self.kl) and self.kl >= 0, "GRPOConfig", "kl", self.kl,
                 "must be a finite number >= 0")
        for name in ("opponent", "rollout_pilot"):
            _require(isinstance(getattr(self, name), str) and bool(getattr(self, name).strip()),
                     "GRPOConfig", name, getattr(self, name), "must name a pilot, e.g. "
                     "heuristic:hard")
        _require(self.games % 2 == 0, "GRPOConfig", "games", self.games,
                 "must be even (games are played in pairs from one start, sides swapped)")
        opponents = self.opponents()
        _require(all(opponents), "GRPOConfig", "opponent", self.opponent,
                 "has an empty name in its comma list")
        _require(self.games % (2 * len(opponents)) == 0, "GRPOConfig", "games", self.games,
                 f"must be a multiple of {2 * len(opponents)} to share its pairs of games "
                 f"evenly among the {len(opponents)} opponents")
        _check_lm_compute(self)

    def opponents(self) -> list[str]:
        """The opponents an iteration's games are shared among (`opponent`'s comma list)."""
        return [spec.strip() for spec in self.opponent.split(",")]


@dataclass
class TrainConfig(_Serializable):
    """A training run: the algorithm, its budget, where outputs go, evaluation, and what every
    online run (PPO, DQN) can add: a warm start, an opponent model, reward shaping. Each
    algorithm's own settings are its section's ([ppo], [dqn], [offline], [sft], [grpo])."""

    algorithm: str = "ppo"  # one of ALGORITHMS
    num_envs: int = 256  # games played at once
    # Learner decisions; the run stops at this or `episodes`. 0 with warm_start: imitation alone.
    total_timesteps: int = 3_000_000
    episodes: int = 0  # stop after this many finished games (0: use total_timesteps only)
    # Stop once the run has trained this long, in minutes of wall clock (evaluations and saves
    # included, summed over resumes); 0: no limit. Only a stop: schedules (epsilon, learning-rate
    # annealing) follow steps or games, never the clock, so a run's weights at a given update do
    # not depend on the host's speed.
    max_minutes: float = 0.0
    seed: int = 0
    device: str = "cpu"  # "cpu", "cuda" or "auto"
    # Torch threads; 0 = the default (threads.py: SPACEWAR_TORCH_THREADS or OMP_NUM_THREADS, else
    # one). The count changes the arithmetic, so it is part of what a seed reproduces.
    torch_threads: int = 0
    checkpoint_dir: str = "checkpoints"
    log_dir: str = "runs"
    run_name: str = ""  # default: <algorithm>-s<seed>-<time>, champion-... against champions
    save_interval: int = 20  # updates between periodic checkpoints ("latest" at every eval)
    # latest.pt is also written after the first update and once this many seconds have passed
    # since the last save, so a kill costs at most about this much of the run.
    save_seconds: float = 60.0
    eval_interval: int = 20  # updates between evaluations
    eval_episodes: int = 100  # games per evaluation (sides swapped)
    eval_opponent: str = "heuristic:hard"  # evaluation opponent, also defines "best"
    # TensorBoard's eval/video (images tab): a GIF of an evaluation game's last 100 decisions,
    # made at an evaluation only while all videos so far took under this share of the run's
    # wall time (0: none). One per evaluation would cost more than that.
    eval_video: float = 0.02
    # Warm start from a pilot spec ("" = none) on `warm_start_decisions` of its decisions:
    # PPO's actor imitates it for `warm_start_epochs` passes (behaviour cloning); DQN stores its
    # games as demonstrations and pre-trains on them (DQfD), then explores at end_epsilon only.
    warm_start: str = ""
    warm_start_decisions: int = 500_000
    warm_start_epochs: int = 6
    # Learn a model of eval_opponent from its moves in the learner's own games (opponent_model.py):
    # saved as opponent_model.pt beside the checkpoints, it is the forecast `search:` plans with.
    # Fitted once per update on that update's decisions, in minibatches of opponent_model_batch.
    opponent_model: bool = True
    opponent_model_batch: int = 2048
    opponent_model_lr: float = 1e-3
    # The share of the opponent's decisions the model learns from (every k-th, evenly): its
    # fit is most of its cost, and consecutive decisions of a game say much the same thing.
    opponent_model_share: float = 1.0
    # Potential-based shaping (shaping.py): r + gamma * Phi(s') - Phi(s), Phi scaled by this;
    # 0 leaves the rewards as the reward table pays them.
    shaping: float = 0.0
    # The recorded dataset bc, cql and sft learn from (--dataset), and whose episodes.
    dataset: str = ""  # its name
    dataset_pilot: str = ""  # learn only from the episodes this pilot flew ("": all)
    # PPO's games played by this many rollout workers (training/rollouts.py), Ray actors by
    # default, the learner only updating; 0: the learner plays them itself.
    rollout_workers: int = 0

    def named(self, kind: str, seed: int | None = None) -> str:
        """The run's name: run_name, else KIND-sSEED-YYYYmmdd-HHMMSS (every training run's)."""
        import time

        seed = self.seed if seed is None else seed
        return self.run_name or f"{kind}-s{seed}-{time.strftime('%Y%m%d-%H%M%S')}"

    def __post_init__(self) -> None:
        _require(self.algorithm in ALGORITHMS, "TrainConfig", "algorithm", self.algorithm,
                 f"must be one of {', '.join(ALGORITHMS)}")
        _require(self.algorithm not in DATASET_ALGORITHMS or bool(self.dataset), "TrainConfig",
                 "dataset", self.dataset, f"{self.algorithm} learns from a dataset: name one "
                 "(--dataset NAME; record one with --datagen)")
        _require(_finite(self.shaping) and self.shaping >= 0, "TrainConfig", "shaping",
                 self.shaping, "must be a finite number >= 0")
        _check_positive(self, ("warm_start_decisions", "warm_start_epochs",
                               "opponent_model_batch"), integer=True)
        _check_positive(self, ("opponent_model_lr",))
        _check_unit(self, ("eval_video",))
        _require(isinstance(self.opponent_model, bool), "TrainConfig", "opponent_model",
                 self.opponent_model, "must be true or false")
        _require(isinstance(self.opponent_model_share, (int, float))
                 and not isinstance(self.opponent_model_share, bool)
                 and 0 < self.opponent_model_share <= 1, "TrainConfig", "opponent_model_share",
                 self.opponent_model_share, "must be a number above 0 and at most 1")
        _require(_finite(self.max_minutes) and self.max_minutes >= 0, "TrainConfig",
                 "max_minutes", self.max_minutes, "must be a number of minutes >= 0 (0: no limit)")
        _require(self.device in ("cpu", "cuda", "auto"), "TrainConfig", "device", self.device,
                 "must be 'cpu', 'cuda' or 'auto'")
        _check_positive(self, ("num_envs", "save_interval", "eval_interval", "eval_episodes"),
                        integer=True)
        _check_positive(self, ("save_seconds",))
        name = self.run_name
        _require(isinstance(name, str) and (not name or (
            name not in (".", "..") and not set(name) & set("/\\\0") and name.strip() == name)),
            "TrainConfig", "run_name", name, "must be a plain folder name (--run-name NAME, "
            "without '/', '\\' or '..'): the run's files go in checkpoint_dir/NAME and "
            "log_dir/NAME")
        # 0 steps: the warm start alone, a network that imitates a pilot (an opponent model for
        # search.py); without a warm start that would be an untrained network.
        _require(_is_int(self.total_timesteps) and (self.total_timesteps > 0 or (
            self.total_timesteps == 0 and bool(self.warm_start))), "TrainConfig",
            "total_timesteps", self.total_timesteps,
            "must be an integer > 0 (0 only with a warm start: imitation alone)")
        _require(_is_int(self.torch_threads) and self.torch_threads >= 0, "TrainConfig",
                 "torch_threads", self.torch_threads, "must be an integer >= 0 (0 = all cores)")
        _require(_is_int(self.episodes) and self.episodes >= 0, "TrainConfig", "episodes",
                 self.episodes, "must be an integer >= 0")
        _require(_is_int(self.seed), "TrainConfig", "seed", self.seed, "must be an integer")
        _require(_is_int(self.rollout_workers) and self.rollout_workers >= 0, "TrainConfig",
                 "rollout_workers", self.rollout_workers,
                 "must be an integer >= 0 (0: the learner plays its games itself)")
        _require(self.rollout_workers <= self.num_envs, "TrainConfig", "rollout_workers",
                 self.rollout_workers, f"must be at most num_envs ({self.num_envs}): each "
                 "worker plays at least one game (--num-envs)")
        _require(self.rollout_workers == 0 or self.algorithm == "ppo", "TrainConfig",
                 "rollout_workers", self.rollout_workers, f"rollout workers play PPO's "
                 f"rollouts; --algorithm {self.algorithm} trains in one process (drop "
                 "--rollout-workers)")


# [train] keys of earlier versions and the section and name each now has. Files and saved
# checkpoints that use them still load; a config file that does is told where they went.
MOVED_TRAIN_KEYS = {
    "bc_epochs": [("offline", "bc_epochs")], "offline_steps": [("offline", "cql_steps")],
    "cql_alpha": [("offline", "cql_alpha")], "base_model": [("sft", "base_model")],
    "lm_examples": [("sft", "examples")], "lm_held_out": [("sft", "held_out")],
    "lm_epochs": [("sft", "epochs")], "lm_learning_rate": [("sft", "learning_rate")],
    "lm_lora_rank": [("sft", "lora_rank")], "lm_lora_layers": [("sft", "lora_layers")],
    # One setting served both LM trainers; each has its own now.
    "lm_batch_size": [("sft", "batch_size"), ("grpo", "batch_size")],
    "lm_bf16": [("sft", "bf16"), ("grpo", "bf16")],
    **{f"grpo_{name}": [("grpo", name)] for name in (
        "iterations", "games", "states", "horizon", "opponent", "rollout_pilot", "epochs",
        "learning_rate", "clip", "kl", "temperature")},
}


def move_old_keys(data: dict[str, Any]) -> list[str]:
    """Move [train] keys of earlier versions into their sections, in place (a key given in its
    new place wins); returns "old -> [section] new" for each one moved."""
    train = data.get("train")
    if not isinstance(train, dict):
        return []
    moved = []
    for old in [k for k in train if k in MOVED_TRAIN_KEYS]:
        value = train.pop(old)
        for section, new in MOVED_TRAIN_KEYS[old]:
            if not isinstance(data.setdefault(section, {}), dict):
                continue  # a bad section: from_dict names it
            data[section].setdefault(new, value)
        moved.append(f"{old} -> " + " and ".join(f"[{s}] {n}" for s, n in MOVED_TRAIN_KEYS[old]))
    return moved


@dataclass
class RunConfig:
    """Everything a training run is made of; its dict is the resolved config saved in
    checkpoints, and a TOML or JSON file holds any of its sections (`load_run_config`)."""

    train: TrainConfig = field(default_factory=TrainConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    dqn: DQNConfig = field(default_factory=DQNConfig)
    offline: OfflineConfig = field(default_factory=OfflineConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    dagger: DaggerConfig = field(default_factory=DaggerConfig)
    league: LeagueConfig = field(default_factory=LeagueConfig)
    game: GameConfig = field(default_factory=GameConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)

    SECTIONS = ("train", "ppo", "dqn", "offline", "sft", "grpo", "dagger", "league", "game",
                "reward")

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k).to_dict() for k in self.SECTIONS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunConfig":
        """The config a dict describes (a checkpoint's saved config, a file's sections); [train]
        keys of earlier versions are read from where they used to be."""
        data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
        move_old_keys(data)
        parts = {f.name: f.default_factory for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(parts))
        if unknown:
            hint = nearest(unknown[0], parts) or f"valid sections are {sorted(parts)}"
            raise ValueError(f"config section [{unknown[0]}] is unknown; {hint}")
        out = {}
        for k, section in parts.items():
            try:
                out[k] = section.from_dict(data.get(k, {}))
            except ValueError as exc:
                raise ValueError(f"[{k}] {exc}") from None
        return cls(**out)


def load_run_config(path: str | Path, base: RunConfig | None = None) -> RunConfig:
    """Read a TOML or JSON file with any of RunConfig.SECTIONS. Its fields override `base`
    (default: the defaults); a resumed run's base is its saved config. Any problem is one
    ValueError naming the file and the field; [train] keys of earlier versions are read from
    their old place with one line on stderr saying where they moved."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"config file {p}: is a folder; give the path of a .toml or .json file")
    if not p.exists():
        raise ValueError(f"config file {p}: no such file")
    from .util.preflight import read_bounded

    raw = read_bounded(p, "config file", 1024 * 1024)
    sections = " ".join(f"[{s}]" for s in RunConfig.SECTIONS)
    try:
        text = raw.decode("utf-8")
        if p.suffix.lower() == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # tomllib's and json's errors
        raise ValueError(f"config file {p}: cannot be parsed ({exc}); write TOML (.toml) or "
                         f"JSON with {sections} sections") from None
    if not isinstance(data, dict):
        raise ValueError(f"config file {p}: expected sections such as [train], got "
                         f"{type(data).__name__}")
    if not any(data.values()):
        raise ValueError(f"config file {p}: sets nothing; add sections such as [train] with "
                         "the settings to change, or leave out --config")
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    moved = move_old_keys(data)
    if moved:
        import sys

        print(f"note: config file {p}: [train] keys that moved were read from their new "
              f"places: {', '.join(moved)}", file=sys.stderr)
    merged = (base or RunConfig()).to_dict()
    for section, fields in data.items():
        if isinstance(fields, dict) and isinstance(merged.get(section), dict):
            merged[section].update(fields)
        else:
            merged[section] = fields  # an unknown section or a bad value: from_dict names it
    try:
        return RunConfig.from_dict(merged)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"config file {p}: {exc}") from None


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


__all__ = ["DQNConfig", "GRPOConfig", "GameConfig", "LeagueConfig", "OfflineConfig", "PPOConfig",
           "RewardConfig", "RunConfig", "SFTConfig", "START_POSITIONS", "TrainConfig",
           "load_run_config"]
