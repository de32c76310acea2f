"""Configuration dataclasses: pure data, JSON-serializable, validated at construction.

Every constant of the game lives here with its unit. Defaults follow the Spacewar! 3.1 listing
(1962) converted to a 1024 x 1024 unit screen; see shared/reference/spacewar-1962.md.
One engine step is one frame of the 1962 main loop.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .util.errors import UserError

# total_timesteps of a run with no step budget (--episodes alone): no run reaches it.
UNLIMITED_STEPS = 10**12

# "eccentric_or_rest": mostly random eccentric orbits with random resources, otherwise both
# ships at rest (the starts of the "rllib_sw" rules, RULES_PRESETS).
START_POSITIONS = ("classic", "orbit", "eccentric_or_rest", "varied")
# How a pilot's action is read: "six" is the design's six actions (seven with hyperspace);
# "switches" the 1962 control box, four switches in any combination (engine.py's docstring).
CONTROLS = ("six", "switches")
HIT_SHAPES = ("octagon", "round")
MOVE_ORDERS = ("1962", "thrust_first")
# Mechanic values saved under an earlier name, read from configs, replays and checkpoints.
OLD_NAMES = {"start_positions": {"rllib_sw": "eccentric_or_rest"},
             "move_order": {"rllib_sw": "thrust_first"}}
# Where a ship comes back from hyperspace: anywhere on the "screen", or in the "quadrant" whose
# x and y are both past the star's (the peer's game before it changed this).
REENTRIES = ("screen", "quadrant")
# How hyperspace works for a ship that starts on an orbit (ships at rest always jump at random):
# "random" as every other ship (it may fail, and reappears where hyperspace_reentry says);
# "mirror", it never fails and comes back at the point opposite through the star with its
# velocity and heading reversed; "mirror_nearer", the same point drawn towards the star by the
# share of jumps left, so that the last jump lands on the star. The peer's random-orbit starts
# jump to the "mirror" at its agent's commit and to the "mirror_nearer" today.
ORBIT_HYPERSPACES = ("random", "mirror", "mirror_nearer")
SCORINGS = ("torpedo", "survivor")
PRECISIONS = ("auto", "float32", "bfloat16")
# Values of an observation before its action mask in a game without hyperspace (engine.py names
# the parts of the layout); with it, the ship's and the opponent's jumps left come next, then the
# mask (GameConfig.mask_start).
OBS_MASK = 30
JUMP_COLUMNS = 2
# Where the mask starts, by an observation's width: each game's layout has a width of its own
# (the six actions or the sixteen switches, without and with hyperspace and its seventh action).
# 37 is hyperspace's seven actions as networks saved before the jumps left were observed read it.
MASK_STARTS = {OBS_MASK + 6: OBS_MASK, OBS_MASK + 7: OBS_MASK, OBS_MASK + 16: OBS_MASK,
               OBS_MASK + JUMP_COLUMNS + 7: OBS_MASK + JUMP_COLUMNS,
               OBS_MASK + JUMP_COLUMNS + 16: OBS_MASK + JUMP_COLUMNS}


def mask_start(width: int) -> int:
    """Where the action mask starts in observations `width` values wide, for pilots handed bare
    observations with no game; a width no game gives is a caller's bug, named as one."""
    try:
        return MASK_STARTS[width]
    except KeyError:
        raise ValueError(f"observations {width} values wide come from no game: each game gives "
                         f"one of {sorted(MASK_STARTS)} (GameConfig.obs_dim)") from None


def without_jumps(width: int) -> int | None:
    """The width of observations `width` values wide less the jumps left, which a network saved
    before observations held them reads (its agent drops them); None where they hold none."""
    return width - JUMP_COLUMNS if MASK_STARTS.get(width, OBS_MASK) > OBS_MASK else None


def nearest(name: str, choices) -> str:
    """ "did you mean 'x'?" for the closest of choices, or "" when none is close."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def _fields_from_dict(cls, data: dict[str, Any]):
    """Build a dataclass from a dict, naming any unknown key instead of silently dropping it."""
    if not isinstance(data, dict):
        raise UserError(f"{cls.__name__}: expected a table of fields, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        hint = nearest(unknown[0], known) or f"valid fields are {sorted(known)}"
        raise UserError(f"{cls.__name__}: unknown field {unknown[0]!r}; {hint}")
    for name, v in data.items():
        # Checked here, where the field is known: numpy and torch would only say "overflow".
        _require(not _is_int(v) or abs(v) <= MAX_INTEGER, cls.__name__, name, v,
                 "integers here are at most 2**53 in size")
    return cls(**data)


MAX_INTEGER = 2**53  # the largest integer a float (and so JSON anywhere) holds exactly


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


SHOWN = 80  # characters of a refused value a refusal quotes


def _require(cond: bool, cls_name: str, name: str, value: Any, rule: str) -> None:
    if not cond:
        shown = repr(value)
        if len(shown) > SHOWN:  # a line, however long the value
            shown = f"{shown[:SHOWN]}... ({len(shown):,} characters)"
        raise UserError(f"{cls_name}.{name}={shown} is invalid: {rule}")


@dataclass(frozen=True)
class Rule:
    """What a field's value must be: a test, and the words a refusal says after "is invalid:"."""

    test: Callable[[Any], bool]
    says: str


def setting(default: Any, rule: Rule | None = None, flag: str | None = None,
            read_by: tuple[str, ...] | None = None) -> Any:
    """A config field declared with its rule, the command-line flag that sets it (if any) and
    the algorithms that read it (None: every algorithm that reads its section). `_Config`
    checks every rule at construction; `flag_fields` and `unread_flags` map the flags (the CLI's
    `run_config` and its refusals), so none of it is written anywhere else."""
    return field(default=default, metadata={"rule": rule, "flag": flag, "read_by": read_by})


def one_of(choices, says: str | None = None) -> Rule:
    return Rule(lambda v: v in tuple(choices), says or f"must be one of {choices}")


def a_name(says: str) -> Rule:
    """A text that is not blank (a model, a pilot spec)."""
    return Rule(lambda v: isinstance(v, str) and bool(v.strip()), says)


POSITIVE = Rule(lambda v: _finite(v) and v > 0, "must be a finite number > 0")
NON_NEGATIVE = Rule(lambda v: _finite(v) and v >= 0, "must be a finite number >= 0")
FINITE = Rule(lambda v: _finite(v), "must be a finite number")
COUNT = Rule(lambda v: _is_int(v) and v > 0, "must be an integer > 0")
AT_LEAST_ONE = Rule(lambda v: _is_int(v) and v >= 1, "must be an integer >= 1")
NATURAL = Rule(lambda v: _is_int(v) and v >= 0, "must be an integer >= 0")
SHARE = Rule(lambda v: _finite(v) and 0 <= v <= 1, "must be in [0, 1]")
PART = Rule(lambda v: _finite(v) and 0 < v <= 1, "must be a number above 0 and at most 1")
SWITCH = Rule(lambda v: isinstance(v, bool), "must be true or false")
LAYERS = Rule(lambda v: isinstance(v, tuple) and len(v) > 0 and all(_is_int(h) and h > 0
                                                                      for h in v),
              "must be a non-empty tuple of positive layer sizes")
PILOT = a_name("must name a pilot, e.g. heuristic:hard")


KIND_RULES = {bool: SWITCH, int: Rule(_is_int, "must be an integer"), float: FINITE,
              str: Rule(lambda v: isinstance(v, str), "must be a text")}


def up_to(rule: Rule, most: float) -> Rule:
    """`rule`, and at most `most`: the bounds that keep any one game's memory and time finite
    (a replay a visitor uploads is checked by them too)."""
    return Rule(lambda v: rule.test(v) and v <= most, f"{rule.says} and at most {most:,.0f}")


class _Config:
    """What every config section shares: each field's rule (`setting`) checked at construction,
    in the order the fields are declared, then the rules that tie fields together (`_check`);
    to_dict/from_dict (tuples become lists in JSON and back)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            # A field with no rule of its own still takes only its default's kind of value.
            rule = f.metadata.get("rule") or KIND_RULES.get(type(f.default))
            if rule is not None:
                value = getattr(self, f.name)
                _require(rule.test(value), type(self).__name__, f.name, value, rule.says)
        self._check()

    def _check(self) -> None:
        """Rules between fields (each field's own rule has passed)."""

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
            elif isinstance(data.get(f.name), str) and isinstance(f.default, tuple) \
                    and f.metadata.get("flag"):
                # A list a flag sets is one comma list there (--opponent a,b).
                data[f.name] = tuple(spec.strip() for spec in data[f.name].split(","))
        return _fields_from_dict(cls, data)

    def changed(self, **fields):
        """A copy with `fields` changed, read as a file's values are (comma lists too)."""
        return type(self).from_dict({**self.to_dict(), **fields})


# The peer project's screen is sqrt(2) of its units wide; ours is 1024 units.
_RLLIB_SW_UNIT = 1024.0 / math.sqrt(2.0)

# Rules presets: each changes only what it names. "1962" is the listing as this project reads
# it (the defaults); "rllib_sw" is the game of MatthewCWeston/rllib_sw (docs/game.md says which
# rule is whose), converted to our units: slower torpedoes, a round hit test of one ship size,
# torpedoes lost in the star, no torpedo-torpedo or ship-ship collisions, its order of a frame,
# longer games with decisions held five frames, hyperspace on and the opponent seen in it.
RULES_PRESETS: dict[str, dict[str, Any]] = {
    "1962": {},
    "rllib_sw": {
        "torpedo_speed": _RLLIB_SW_UNIT / 256.0,
        # A torpedo lives 96 moves there, the first in the frame it is fired: the spawn offset
        # below makes that move, so 95 are left here.
        "torpedo_lifetime": 95,
        "fire_cooldown": 17,
        "hit_radius": 0.02 * _RLLIB_SW_UNIT,
        "hit_shape": "round",
        "star_radius": 0.02 * _RLLIB_SW_UNIT,
        "torpedo_star_radius": 0.01 * _RLLIB_SW_UNIT,
        "torpedo_collisions": False,
        "ship_collisions": False,
        "move_order": "thrust_first",
        "gravity_constant": 9.5e-7 * 1024.0**3 / 2.0,
        "max_fuel": 1024,
        "max_episode_steps": 4096,
        "frame_skip": 5,
        "hyperspace": True,
        "hyperspace_jumps": 8,
        "hyperspace_vanish_frames": 96,
        # Recharging counts from the reappearance: 224 frames from the jump there.
        "hyperspace_recharge_frames": 32,
        "hyperspace_visible": True,
        "hyperspace_failure": "return",
        "scoring": "survivor",
        "torpedo_spawn_offset": 0.02 * _RLLIB_SW_UNIT + _RLLIB_SW_UNIT / 256.0,
        "start_positions": "eccentric_or_rest",
        "orbit_hyperspace": "mirror_nearer",
    },
}
# The peer's game as its released agent (checkpoints_release/pfsp, commit 1f9e818) was trained in:
# two later commits changed it, c9ae257 the facing of the at-rest start (90 and 270 of its
# degrees, ours turned the other way) and ad98222 the re-entry from hyperspace (one quadrant
# from rest, the opposite point at the full distance from an orbit).
RULES_PRESETS["rllib_sw_1f9e818"] = {**RULES_PRESETS["rllib_sw"], "rest_heading": 270.0,
                                     "hyperspace_reentry": "quadrant",
                                     "orbit_hyperspace": "mirror"}


def rules_label(base: str, values: dict[str, Any]) -> str:
    """The label of game `values` built on rules preset `base`: its name, then "+" and the name
    of each field the preset sets that `values` holds otherwise."""
    preset = RULES_PRESETS[base]
    return "+".join([base, *sorted(k for k, v in preset.items() if values.get(k, v) != v)])


class _Presets(_Config):
    """A section one of whose fields (PRESET_FIELD) names a preset of the others: the module's
    table named PRESETS (read when asked, so it may be written below the class). `preset(name)`
    builds one, ValueError naming the nearest for a typo; from_dict starts from the preset a
    dict names and changes the fields it gives."""

    PRESET_FIELD = PRESETS = PRESET_SAYS = ""

    @classmethod
    def preset(cls, name: str):
        presets = globals()[cls.PRESETS]
        if not isinstance(name, str):
            _require(False, cls.__name__, cls.PRESET_FIELD, name,
                     f"must be the name of a preset: one of {', '.join(presets)}")
        if name not in presets:
            hint = nearest(name, presets) or f"use one of {', '.join(presets)}"
            raise UserError(f"{cls.PRESET_SAYS} {name!r} is unknown; {hint}")
        return cls(**presets[name], **{cls.PRESET_FIELD: name})

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        if isinstance(data, dict) and cls.PRESET_FIELD in data:
            data = {**cls.preset(data[cls.PRESET_FIELD]).to_dict(), **data}
        return super().from_dict(data)


@dataclass
class GameConfig(_Presets):
    """The rules and constants of one Spacewar! game."""

    # screen units; the playfield wraps (torus)
    width: float = setting(1024.0, up_to(POSITIVE, 1e6))
    height: float = setting(1024.0, up_to(POSITIVE, 1e6))  # screen units
    max_ammo: int = setting(32, up_to(NATURAL, 10_000))  # torpedoes per ship
    # frames; range about 384 units
    torpedo_lifetime: int = setting(96, up_to(AT_LEAST_ONE, 100_000))
    fire_cooldown: int = setting(16, up_to(AT_LEAST_ONE, 100_000))  # frames between shots
    # units/frame, added to the ship's velocity along its heading
    torpedo_speed: float = setting(4.0, POSITIVE)
    rotation_speed: float = setting(1.0 / 16.0, POSITIVE)  # rad/frame
    thrust_power: float = setting(2.0 / 256.0, NON_NEGATIVE)  # units/frame^2
    # frames of thrust (1962: 8192 units at 1-16 a frame)
    max_fuel: int = setting(1000, up_to(NATURAL, 10**9))
    # GM in units^3/frame^2: gravity equals thrust at 256 units
    gravity_constant: float = setting(512.0, NON_NEGATIVE)
    star_radius: float = 16.0  # units; capture zone of the star (its rule needs the screen)
    # units; octagon |dx|<r, |dy|<r, |dx|+|dy|<1.5 r
    hit_radius: float = setting(12.0, NON_NEGATIVE)
    # units/frame; observation normaliser (escape speed at the star's edge)
    max_speed: float = setting(8.0, POSITIVE)
    # frames (60 s at 50 fps) before the game is truncated
    max_episode_steps: int = setting(3000, up_to(AT_LEAST_ONE, 10**7))
    # frames per second when a person watches or plays
    fps: int = setting(50, up_to(AT_LEAST_ONE, 1000))
    # Decisions every k frames. 4 gives 12.5 decisions/s: a full turn still takes 25 decisions and
    # one reload (16 frames) is exactly 4 decisions, while episodes are 4x shorter for learning.
    frame_skip: int = setting(4, up_to(AT_LEAST_ONE, 1000))
    # "orbit" (seeded random opposing orbits), "classic" (1962), "eccentric_or_rest" (the
    # peer's) or "varied" (training's mix: orbits, eccentric orbits, ships at rest, varied
    # resources)
    start_positions: str = setting("orbit", one_of(START_POSITIONS))
    # degrees: ship 0's heading when the "eccentric_or_rest" start puts both ships at rest (ship 1
    # faces the other way); 0 faces along +x, and headings grow as the engine's angles do
    rest_heading: float = setting(0.0, Rule(lambda v: _finite(v) and 0 <= v < 360,
                                            "must be a number of degrees in [0, 360)"))
    # 1962 sense switches, as booleans.
    # switch 1: rotate buttons apply angular acceleration
    angular_momentum: bool = setting(False, SWITCH)
    light_star: bool = setting(False, SWITCH)  # switch 2: gravity / 4
    no_star: bool = setting(False, SWITCH)  # switch 6: no star, no gravity
    # switch 5 off in 1962 terms: star moves the ship to the corner
    star_teleports: bool = setting(False, SWITCH)
    torpedo_gravity: bool = setting(False, SWITCH)  # 1962 torpedoes ignore gravity
    # a 7th action: vanish, reappear at random, may explode
    hyperspace: bool = setting(False, SWITCH)
    # jumps per ship; the k-th destroys the ship with probability k/8
    hyperspace_jumps: int = setting(8, up_to(NATURAL, 10**9))
    # frames invisible and untouchable
    hyperspace_vanish_frames: int = setting(32, up_to(AT_LEAST_ONE, 100_000))
    # frames after reappearing before the next jump
    hyperspace_recharge_frames: int = setting(128, up_to(AT_LEAST_ONE, 100_000))
    hyperspace_reentry: str = setting("screen", one_of(REENTRIES))  # where a ship reappears
    # how a ship that starts on an orbit jumps (ORBIT_HYPERSPACES)
    orbit_hyperspace: str = setting("random", one_of(ORBIT_HYPERSPACES))
    # The action set (CONTROLS): it sizes the action space and the observation's mask.
    controls: str = setting("six", one_of(CONTROLS))
    # The rules below differ between this game and other projects' (RULES_PRESETS); the defaults
    # are the 1962 listing's.
    hit_shape: str = setting("octagon", one_of(HIT_SHAPES))  # the 1962 octagon or a circle
    # units; torpedoes that come this close to the star are gone (0: they fly over it)
    torpedo_star_radius: float = setting(0.0, NON_NEGATIVE)
    torpedo_collisions: bool = setting(True, SWITCH)  # two torpedoes that meet both explode
    ship_collisions: bool = setting(True, SWITCH)  # two ships that meet both explode
    # The order of a ship's frame (MOVE_ORDERS): "1962" turns, then adds gravity and thrust to
    # the velocity and moves; "thrust_first" thrusts along the heading before the turn, turns,
    # fires, moves, and adds gravity after the move.
    move_order: str = setting("1962", one_of(MOVE_ORDERS))
    hyperspace_visible: bool = setting(False, SWITCH)  # a ship in hyperspace is still observed
    # When a failed jump destroys the ship: at the "jump", or on its "return" from hyperspace
    # (where it fought on invisible meanwhile, its torpedoes still flying).
    hyperspace_failure: str = setting("jump", one_of(("jump", "return")))
    # What wins a game (SCORINGS): "torpedo", only a torpedo kill; "survivor", outliving the other
    # ship however it died (the star, a failed jump).
    scoring: str = setting("torpedo", one_of(SCORINGS))
    # units ahead of the ship's centre where a torpedo appears
    torpedo_spawn_offset: float = setting(16.0, up_to(NON_NEGATIVE, 1e6))
    # The preset these values came from (RULES_PRESETS), then "+" and each field of the
    # preset's that differs from it: the label is what the values are (rules_label).
    rules: str = setting("1962", Rule(lambda v: isinstance(v, str) and v.split("+")[0] in
                                      RULES_PRESETS, f"must name a preset: one of "
                                      f"{', '.join(RULES_PRESETS)}"))

    PRESET_FIELD, PRESETS, PRESET_SAYS = "rules", "RULES_PRESETS", "rules"

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        if isinstance(data, dict):
            data = {k: OLD_NAMES.get(k, {}).get(v, v) if isinstance(v, str) else v
                    for k, v in data.items()}
            if isinstance(data.get("rules"), str):
                # Built on the preset the label starts with; the label then says what differs.
                base = data["rules"].split("+")[0]
                data = {**cls.preset(base).to_dict(), **data}
                data["rules"] = rules_label(base, data)
        return super(_Presets, cls).from_dict(data)  # the preset is in already

    def _check(self) -> None:
        n = type(self).__name__
        base = self.rules.split("+")[0]
        honest = rules_label(base, vars(self))
        changed = honest.split("+")[1:]
        _require(self.rules == honest, n, "rules", self.rules,
                 f"these values are {honest!r}" if len(changed) < 4 else
                 f"these values differ from {base!r} in {len(changed)} fields "
                 f"({', '.join(changed[:3])}, ...)"
                 "; build a preset with GameConfig.preset(name) and change it with .changed(...) "
                 "or a [game] table, which keep the label true")
        half = min(self.width, self.height) / 2
        _require(_finite(self.star_radius) and 0 <= self.star_radius < half, n, "star_radius",
                 self.star_radius, f"must be >= 0 and smaller than half the screen ({half:g})")
        _require(self.hit_radius < half, n, "hit_radius", self.hit_radius,
                 f"must be smaller than half the screen ({half:g})")

    @property
    def num_actions(self) -> int:
        if self.controls == "switches":
            return 16  # every combination of left, right, thrust and fire
        return 7 if self.hyperspace else 6

    @property
    def mask_start(self) -> int:
        """Where the action mask starts in an observation: after the jumps left, if any."""
        return OBS_MASK + (JUMP_COLUMNS if self.hyperspace else 0)

    @property
    def obs_dim(self) -> int:
        return self.mask_start + self.num_actions

    @property
    def torpedo_slots(self) -> int:
        """Live torpedoes one ship can have at once: one per reload over a torpedo's life."""
        return self.torpedo_lifetime // self.fire_cooldown + 1

    @property
    def effective_gravity(self) -> float:
        if self.no_star:
            return 0.0
        return self.gravity_constant / 4.0 if self.light_star else self.gravity_constant



@dataclass
class RewardConfig(_Presets):
    """Rewards per ship. Defaults reproduce the original design's table; `personality` names the
    preset a table came from (`RewardConfig.preset`, REWARD_PERSONALITIES)."""

    step_penalty: float = setting(-0.01, FINITE)  # every decision
    kill_reward: float = setting(100.0, FINITE)  # to the shooter of a torpedo kill
    death_penalty: float = setting(-100.0, FINITE)  # to a ship destroyed by a torpedo
    star_penalty: float = setting(-50.0, FINITE)  # flying into the star (suicide)
    collision_penalty: float = setting(-30.0, FINITE)  # to each ship in a ship-ship collision
    hyperspace_penalty: float = setting(-50.0, FINITE)  # destroyed by a hyperspace jump (suicide)
    win_bonus: float = setting(50.0, FINITE)  # end of game, torpedo kills only
    lose_penalty: float = setting(-50.0, FINITE)  # end of game, to the victim of a torpedo kill
    # end of game by timeout, collision or a mutual kill, each ship
    draw_penalty: float = setting(-10.0, FINITE)
    # x fuel left / max_fuel, torpedo winners only
    fuel_efficiency_bonus: float = setting(20.0, FINITE)
    # x torpedoes left / max_ammo, torpedo winners only
    ammo_efficiency_bonus: float = setting(15.0, FINITE)
    shot_reward: float = setting(0.0, FINITE)  # per torpedo fired (negative: each shot costs)
    thrust_reward: float = setting(0.0, FINITE)  # per frame of thrust (negative: fuel costs)
    # the preset these values came from, for reports
    personality: str = setting("standard", a_name("must be a name"))

    PRESET_FIELD, PRESETS, PRESET_SAYS = "personality", "REWARD_PERSONALITIES", \
        "reward personality"


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


ACTIVATIONS = ("tanh", "relu")
# What a network reads (features.py): "tactical" is "egocentric" plus aiming and dodging columns;
# "egocentric" turns the observation into the ship's own frame; "world" is the observation as
# documented.
OBSERVATION_VIEWS = ("tactical", "egocentric", "world")
# What a language model's prompt says (lm/view.py): view 1 where things are; view 2 that and the
# aim. An adapter records the one it was trained on.
PROMPT_VIEWS = {1: "where things are", 2: "where things are, and the aim (lead, shot, threat)"}
DEFAULT_PROMPT_VIEW = 2  # the view new adapters are trained with


VIEW = one_of(OBSERVATION_VIEWS)


@dataclass
class PPOConfig(_Config):
    """PPO with separate actor and critic MLPs (CleanRL's recipe, masked logits)."""

    # Higher than CleanRL's 2.5e-4: with a few big minibatches per update, 2.5e-4 barely moved
    # the policy (sweeps in VIBE_HISTORY.md).
    learning_rate: float = setting(3e-3, POSITIVE, flag="--learning-rate")
    # decisions per game per rollout; a rollout is n_steps x num_envs samples
    n_steps: int = setting(64, COUNT)
    gamma: float = setting(0.99, SHARE)
    gae_lambda: float = setting(0.95, SHARE)
    clip_coef: float = setting(0.2, POSITIVE)
    vf_coef: float = setting(0.5, NON_NEGATIVE)
    ent_coef: float = setting(0.01, NON_NEGATIVE)
    max_grad_norm: float = setting(0.5, POSITIVE)
    # Samples are cheap here (a fast engine) and gradient steps are not (a CPU): one epoch of two
    # big minibatches learned as well per minute as more epochs, at a lower cost (VIBE_HISTORY).
    update_epochs: int = setting(1, COUNT)
    num_minibatches: int = setting(2, COUNT)
    hidden_sizes: tuple = setting((256, 256), LAYERS)
    # Hidden-layer nonlinearity, "relu" or "tanh" (CleanRL's). tanh costs as much as the matrix
    # products on a CPU, and relu learned as well.
    activation: str = setting("relu", one_of(ACTIVATIONS))
    # What the network reads (features.py): the tactical view hands it a gunner's arithmetic,
    # which a network otherwise needs many samples to learn (docs/design-log.md).
    observation_view: str = setting("tactical", VIEW)
    anneal_lr: bool = True
    norm_adv: bool = True
    target_kl: float = setting(0.0, NON_NEGATIVE)  # 0 disables early stopping on KL
    # Rewards are multiplied by this before learning: kills are worth 100, so unscaled returns make
    # the critic's loss, and its gradient, dwarf the actor's.
    reward_scale: float = setting(0.01, POSITIVE)


@dataclass
class DQNConfig(_Config):
    """Dueling double DQN with a preallocated replay buffer and masked targets."""

    learning_rate: float = setting(2.5e-4, POSITIVE, flag="--learning-rate")
    buffer_size: int = setting(200_000, COUNT)
    batch_size: int = setting(256, COUNT)
    gamma: float = setting(0.99, SHARE)
    # Rewards summed over this many decisions before bootstrapping (Rainbow's n-step returns). A
    # kill pays up to 24 decisions after the shot, and no target in between can see the torpedo
    # on its way (observations hold enemy torpedoes only), so short returns lose the shot's credit.
    n_step: int = setting(10, COUNT)
    learning_starts: int = setting(5_000, NATURAL)  # transitions before the first update
    train_frequency: int = setting(1, COUNT)  # vector steps between updates
    gradient_steps: int = setting(2, COUNT)  # updates each time
    # updates between target network copies (target_tau 0)
    target_update_interval: int = setting(500, COUNT)
    # > 0: instead of those copies, the target moves this fraction of the way to the network
    # after every update (Polyak averaging): copies made the greedy policy swing.
    target_tau: float = setting(0.005, SHARE)
    start_epsilon: float = setting(1.0, SHARE)
    end_epsilon: float = setting(0.05, SHARE)
    # share of the run over which epsilon decays
    exploration_fraction: float = setting(0.3, SHARE)
    hidden_sizes: tuple = setting((256, 256), LAYERS)
    stream_size: int = setting(128, COUNT)  # value and advantage streams
    # As PPOConfig.observation_view. Not "tactical": its columns did not lift DQN's win rate
    # against medium, with 3-step or 10-step returns (VIBE_HISTORY), so DQN keeps the narrower
    # and cheaper input.
    observation_view: str = setting("egocentric", VIEW)
    max_grad_norm: float = setting(10.0, POSITIVE)
    reward_scale: float = setting(0.01, POSITIVE)  # as PPOConfig.reward_scale
    # Learning rate falling linearly to zero over the run. Off: it did not steady the checkpoints'
    # swings.
    anneal_lr: bool = False
    # Greedy play (evaluations, best.pt's choice, --evaluate, tournaments, human play) acts on the
    # mean Q-values of this many networks: the one it would otherwise use and its snapshots taken
    # every play_ensemble_interval gradient steps (the newest play_ensemble - 1, each with its
    # observation statistics): single snapshots swing a lot between updates, and an average of
    # trained networks does not. Learning and exploration are unchanged. 1: the played network
    # alone.
    play_ensemble: int = setting(8, COUNT)
    # gradient steps: 10 of training's 64-step iterations
    play_ensemble_interval: int = setting(1280, COUNT)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DQNConfig":
        """As every section's; a setting since removed is dropped where it holds the value that
        meant off, as every checkpoint saved without it does (any other value is refused)."""
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if RETIRED_DQN.get(k, ...) != v}
        return super().from_dict(data)


# [dqn] settings of earlier versions (prioritized replay, a weight-averaged player) and their
# values that left them off.
RETIRED_DQN = {"priority_alpha": 0.0, "priority_beta": 0.4, "priority_eps": 1e-3,
               "play_average_tau": 0.0}


@dataclass
class LeagueConfig(_Config):
    """Who the learner plays: a curriculum of scripted pilots, then a league of its own
    snapshots."""

    # Scripted stages in order; the learner moves on when its torpedo-win rate against the current
    # stage over the last `curriculum_window` games reaches `curriculum_threshold`.
    curriculum: tuple = setting(
        ("idle", "heuristic:easy", "heuristic:medium", "heuristic:hard"),
        Rule(lambda v: isinstance(v, tuple) and len(v) > 0 and all(isinstance(c, str) for c in v),
             "must be a non-empty tuple of pilot specs"))
    curriculum_threshold: float = setting(0.6, SHARE)
    curriculum_window: int = setting(100, COUNT)
    # Share of games against the current curriculum stage. Self-play against a weak self teaches
    # little, so the scripted stages get most games.
    scripted_share: float = setting(0.75, SHARE)
    # of the self-play games: past snapshots (the rest: current self)
    past_share: float = setting(0.7, SHARE)
    pfsp: bool = True  # weight past snapshots by how often they beat the learner
    snapshot_interval: int = setting(10, COUNT)  # updates between snapshots
    pool_size: int = setting(10, COUNT)  # snapshots kept


# Online RL; behaviour cloning and CQL from a dataset; the LM pilot's supervised fine-tuning
# and its GRPO.
ALGORITHMS = ("ppo", "dqn", "bc", "cql", "sft", "grpo", "dagger")
DATASET_ALGORITHMS = ("bc", "cql", "sft")
# Who reads the [train] fields of a run that plays: the learners that play as they learn
# (PLAYING), and those that play games at all (GAMES: their --episodes); every algorithm stops
# at --minutes.
PLAYING = ("ppo", "dqn")
GAMES = ("ppo", "dqn", "grpo", "dagger")
DATA = (*DATASET_ALGORITHMS, "dagger")  # those that read a recorded dataset
# The sections each algorithm reads besides [train] (and [game], [reward]), its own first: a
# flag declared on several sections (--learning-rate) sets the first of these that has it.
ALGORITHM_SECTIONS = {"ppo": ("ppo", "league"), "dqn": ("dqn", "league"),
                      "bc": ("offline", "ppo"), "cql": ("offline", "dqn"), "sft": ("sft",),
                      "grpo": ("grpo",), "dagger": ("dagger", "sft")}


@dataclass
class OfflineConfig(_Config):
    """Learning from a recorded dataset without playing (training/offline/learners.py):
    behaviour cloning (`--algorithm bc`, PPO's actor) and conservative Q-learning (`--algorithm
    cql`, DQN's network). Their learning rates are [ppo]'s and [dqn]'s."""

    bc_epochs: int = setting(6, COUNT)  # behaviour cloning: passes over the data
    # conservative Q-learning: gradient steps (--timesteps for cql)
    cql_steps: int = setting(20_000, COUNT, flag="--timesteps", read_by=("cql",))
    cql_alpha: float = setting(1.0, NON_NEGATIVE)  # the weight of CQL's regulariser


WHOLE = Rule(lambda v: _is_int(v) and v >= 0, "must be a whole number >= 0 (0: all)")


@dataclass
class SFTConfig(_Config):
    """The LM pilot's supervised fine-tuning (training/lm/sft.py): a LoRA adapter on
    `base_model` trained on a dataset's decisions."""

    # smollm2, a .gguf file, a model folder or a hub id
    base_model: str = setting("smollm2", a_name("must name a model: smollm2, a .gguf file, a "
                                                "model folder or a hub id"), flag="--base-model",
                         read_by=("sft",))  # DAgger trains on the base its adapter names
    examples: int = setting(20_000, WHOLE)  # decisions drawn from the dataset to train on (0: all)
    # decisions drawn first, never trained on: agreement is measured there
    held_out: int = setting(500, COUNT)
    epochs: int = setting(1, COUNT)
    batch_size: int = setting(16, COUNT)
    learning_rate: float = setting(2e-4, POSITIVE, flag="--learning-rate")
    lora_rank: int = setting(16, COUNT)  # alpha is twice the rank
    # LoRA on the top this many decoder layers (0: all of them)
    lora_layers: int = setting(8, WHOLE)
    # compute in bfloat16 (float32 weights); false: float32 throughout
    bf16: bool = setting(True, SWITCH)
    # the prompt's text view (PROMPT_VIEWS), kept in the adapter
    view: int = setting(DEFAULT_PROMPT_VIEW, Rule(
        lambda v: _is_int(v) and v in PROMPT_VIEWS,
        "must be 1 (where things are) or 2 (and the aim); lm/view.py says what each reads"))


SELF = "self"  # in [dagger] opponents: the LM being trained flies the other ship too
# A list of pilot specs ([dagger] and [grpo] opponents): a TOML list, or a comma list on the
# command line (--opponent a,b).
OPPONENTS = "must be a non-empty list of pilot specs"


def specs_rule(says: str) -> Rule:
    return Rule(lambda v: isinstance(v, tuple) and len(v) > 0
                and all(isinstance(c, str) and c.strip() for c in v), says)


@dataclass
class DaggerConfig(_Config):
    """DAgger of the LM pilot (training/lm/dagger.py): each round the LM plays `games` games against
    `opponents`, `teacher` labels every state the LM met, and the adapter trains `steps` steps
    on those labels (mixed with the teacher's own decisions of --dataset)."""

    rounds: int = setting(4, COUNT)
    # Per round, shared evenly among the opponents: a multiple of twice their number.
    games: int = setting(64, COUNT)
    # Opponents of the LM's games: any pilot specs, and "self" for the LM itself.
    opponents: tuple = setting(("heuristic:medium", "heuristic:hard", "random", SELF),
                               specs_rule(f"{OPPONENTS} (\"{SELF}\": the LM itself)"),
                               flag="--opponent")
    # labels every state the LM meets (any pilot spec)
    teacher: str = setting("heuristic:hard", PILOT, flag="--teacher")
    steps: int = setting(400, COUNT)  # gradient steps per round, [sft] batch_size decisions each
    # Share of each batch drawn from the LM's own labelled states (all rounds so far); the rest
    # come from --dataset's teacher decisions (all of it own states when there is no dataset).
    own_share: float = setting(0.5, SHARE)
    # each round trains a new adapter from the base instead of continuing
    afresh: bool = setting(False, SWITCH)
    # falls linearly to zero over each round's steps
    learning_rate: float = setting(1e-4, POSITIVE, flag="--learning-rate")
    # 0: learn the teacher's answers; above 0 (a planner teacher, search:...), its improved
    # policy, a softmax of its action values at this temperature (expert iteration).
    target_temperature: float = setting(0.0, Rule(
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
        and 0 <= v < float("inf"), "must be a number >= 0 (0: the teacher's answers as labels)"))


GRPO_OBJECTIVES = ("clip", "improved")


@dataclass
class GRPOConfig(_Config):
    """GRPO of the LM pilot (training/lm/grpo.py). Each iteration plays `games` games against
    `opponents`, scores every valid action at `states` of the LM's decisions by playing on
    `horizon` decisions (`rollout_pilot` flying the LM's ship), then updates on those groups."""

    iterations: int = setting(30, COUNT)
    games: int = setting(16, COUNT)
    # groups an update learns from: those whose action matters most
    states: int = setting(64, COUNT)
    # decisions whose actions are scored to find them (at least `states`)
    scored: int = setting(256, COUNT)
    horizon: int = setting(60, COUNT)
    # Games played on from each action (their mean is its score), each pilot's move replaced by
    # a random valid one with probability `jitter`: one deterministic continuation can make an
    # action best by a hair.
    continuations: int = setting(1, COUNT)
    jitter: float = setting(0.0, Rule(lambda v: _finite(v) and 0 <= v < 1,
                                      "must be a probability in [0, 1)"))
    # Pilot specs sharing each iteration's games and scored states (`opponent`, a comma list,
    # in files of earlier versions).
    opponents: tuple = setting(("heuristic:medium",), specs_rule(OPPONENTS), flag="--opponent")
    rollout_pilot: str = setting("heuristic:hard", PILOT)
    epochs: int = setting(2, COUNT)  # passes over an iteration's states
    batch_size: int = setting(16, COUNT)  # states per gradient step
    learning_rate: float = setting(3e-5, POSITIVE, flag="--learning-rate")
    clip: float = setting(0.2, POSITIVE)  # the ratio's clip range, as PPO's
    # the weight of the KL divergence to the adapter GRPO started from
    kl: float = setting(0.05, NON_NEGATIVE)
    temperature: float = setting(1.0, POSITIVE)  # sampling in the iteration's games
    # What an update minimises: "clip", GRPO's clipped surrogate of the group's z-scores; or
    # "improved", the cross-entropy toward the group's improved policy (a softmax of its
    # z-scores at target_temperature: expert iteration's soft target), with the same KL term.
    # docs/lm.md measures both on the same groups; the clip is the default for what it kept.
    objective: str = setting("clip", one_of(GRPO_OBJECTIVES,
                                            "must be \"clip\" or \"improved\""))
    target_temperature: float = setting(0.5, POSITIVE)  # of "improved", in z-score units
    # compute in bfloat16 (float32 weights); false: float32 throughout
    bf16: bool = setting(True, SWITCH)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GRPOConfig":
        """As every section's; `opponent`, the comma list of earlier versions (and of
        --opponent), is `opponents`, refused in the words it always had."""
        if isinstance(data, dict):
            data = dict(data)
            text = data.pop("opponent", None)
            if isinstance(data.get("opponents"), str):
                text = data.pop("opponents")
            if isinstance(text, str):
                _require(bool(text.strip()), "GRPOConfig", "opponent", text, PILOT.says)
                specs = tuple(spec.strip() for spec in text.split(","))
                _require(all(specs), "GRPOConfig", "opponent", text,
                         "has an empty name in its comma list")
                data.setdefault("opponents", specs)
            elif text is not None:
                _require(False, "GRPOConfig", "opponent", text, PILOT.says)
        return super().from_dict(data)

    def _check(self) -> None:
        _require(self.continuations == 1 or self.jitter > 0, "GRPOConfig", "continuations",
                 self.continuations, "needs jitter > 0 to differ: the game and the scripted "
                 "pilots are deterministic, so every continuation would be the same game")
        _require(self.games % 2 == 0, "GRPOConfig", "games", self.games,
                 "must be even (games are played in pairs from one start, sides swapped)")
        n = len(self.opponents)
        _require(self.games % (2 * n) == 0, "GRPOConfig", "games", self.games,
                 f"must be a multiple of {2 * n} to share its pairs of games evenly among the "
                 f"{n} opponents")

    @property
    def opponent(self) -> str:
        """The opponents as one text, as reports and records name them."""
        return ",".join(self.opponents)


MAX_RUN_NAME = 100  # characters: a folder name, with room for what runs add to it
RUN_NAME = Rule(lambda v: isinstance(v, str) and (not v or (
    v not in (".", "..") and not set(v) & set("/\\\0") and v.strip() == v
    and len(v) <= MAX_RUN_NAME)),
    f"must be a plain folder name of at most {MAX_RUN_NAME} characters (--run-name NAME, "
    "without '/', '\\' or '..'): the run's files go in checkpoint_dir/NAME and log_dir/NAME")


@dataclass
class TrainConfig(_Config):
    """A training run: the algorithm, its budget, where outputs go, evaluation, and what every
    online run (PPO, DQN) can add: a warm start, an opponent model, reward shaping. Each
    algorithm's own settings are its section's ([ppo], [dqn], [offline], [sft], [grpo])."""

    algorithm: str = setting("ppo", one_of(ALGORITHMS, f"must be one of {', '.join(ALGORITHMS)}"),
                             flag="--algorithm")
    num_envs: int = setting(256, COUNT, flag="--num-envs", read_by=PLAYING)  # games at once
    # Learner decisions; the run stops at this or `episodes`. 0 with warm_start: imitation alone
    # (its rule, in _check, needs warm_start); UNLIMITED_STEPS: no step budget (--episodes alone).
    total_timesteps: int = setting(3_000_000, flag="--timesteps", read_by=PLAYING)
    # stop after this many finished games (0: use total_timesteps only)
    episodes: int = setting(0, NATURAL, flag="--episodes", read_by=GAMES)
    # Stop once the run has trained this long, in minutes of wall clock (evaluations and saves
    # included, summed over resumes); 0: no limit. Only a stop: schedules (epsilon, learning-rate
    # annealing) follow steps or games, never the clock, so a run's weights at a given update do
    # not depend on the host's speed.
    max_minutes: float = setting(0.0, Rule(lambda v: _finite(v) and v >= 0,
                                           "must be a number of minutes >= 0 (0: no limit)"),
                                 flag="--minutes", read_by=ALGORITHMS)
    seed: int = setting(0, Rule(_is_int, "must be an integer"), flag="--seed")
    device: str = setting("cpu", one_of(("cpu", "cuda", "auto"),
                                        "must be 'cpu', 'cuda' or 'auto'"), flag="--device")
    # The learner's forward and backward passes (PRECISIONS): "auto" is bfloat16 where the device
    # computes in it natively (agents/base.py: native_bfloat16), float32 elsewhere; weights, the
    # optimizer, losses and advantages stay float32 whatever it is; PPO's rollouts play in it,
    # evaluation and the league in float32.
    precision: str = setting("auto", one_of(PRECISIONS), flag="--precision", read_by=PLAYING)
    # Torch threads; 0 = the default (threads.py: SPACEWAR_TORCH_THREADS or OMP_NUM_THREADS, else
    # one). The count changes the arithmetic, so it is part of what a seed reproduces.
    torch_threads: int = setting(0, Rule(lambda v: _is_int(v) and v >= 0,
                                         "must be an integer >= 0 (0 = all cores)"),
                                 flag="--torch-threads")
    checkpoint_dir: str = setting("checkpoints", flag="--checkpoint-dir")
    log_dir: str = setting("runs", flag="--log-dir")
    # default: <algorithm>-s<seed>-<time>, champion-... against champions
    run_name: str = setting("", RUN_NAME, flag="--run-name")
    # updates between periodic checkpoints ("latest" at every eval)
    save_interval: int = setting(20, COUNT)
    # latest.pt is also written after the first update and once this many seconds have passed
    # since the last save, so a kill costs at most about this much of the run.
    save_seconds: float = setting(60.0, POSITIVE)
    eval_interval: int = setting(20, COUNT)  # updates between evaluations
    # games per evaluation (sides swapped)
    eval_episodes: int = setting(100, COUNT, flag="--eval-episodes")
    eval_opponent: str = "heuristic:hard"  # evaluation opponent, also defines "best"
    # TensorBoard's eval/video (images tab): a GIF of an evaluation game's last 100 decisions,
    # made at an evaluation only while all videos so far took under this share of the run's
    # wall time (0: none). One per evaluation would cost more than that.
    eval_video: float = setting(0.02, SHARE)
    # Warm start from a pilot spec ("" = none) on `warm_start_decisions` of its decisions:
    # PPO's actor imitates it for `warm_start_epochs` passes (behaviour cloning); DQN stores its
    # games as demonstrations and pre-trains on them (DQfD), then explores at end_epsilon only.
    warm_start: str = setting("", flag="--warm-start", read_by=PLAYING)
    warm_start_decisions: int = setting(500_000, COUNT)
    warm_start_epochs: int = setting(6, COUNT)
    # Learn a model of eval_opponent from its moves in the learner's own games (opponent_model.py):
    # saved as opponent_model.pt beside the checkpoints, it is the forecast `search:` plans with.
    # Fitted once per update on that update's decisions, in minibatches of opponent_model_batch.
    opponent_model: bool = setting(True, SWITCH)
    opponent_model_batch: int = setting(2048, COUNT)
    opponent_model_lr: float = setting(1e-3, POSITIVE)
    # The share of the opponent's decisions the model learns from (every k-th, evenly): its
    # fit is most of its cost, and consecutive decisions of a game say much the same thing.
    opponent_model_share: float = setting(1.0, PART)
    # A fit first reads every decision and learns only from those whose move the model gave a
    # probability below this (1: all): a move it foresees surely teaches it little.
    opponent_model_sure: float = setting(0.99, PART)
    # Potential-based shaping (shaping.py): r + gamma * Phi(s') - Phi(s), Phi scaled by this;
    # 0 leaves the rewards as the reward table pays them.
    shaping: float = setting(0.0, NON_NEGATIVE)
    # The recorded dataset bc, cql and sft learn from (--dataset), and whose episodes.
    dataset: str = setting("", flag="--dataset", read_by=DATA)  # its name
    # learn only from the episodes this pilot flew ("": all)
    dataset_pilot: str = setting("", flag="--dataset-pilot", read_by=DATA)
    # PPO's games played by this many rollout workers (training/online/rollouts.py): child processes
    # of this machine by default, Ray actors with --backend ray; the learner only updates. 0:
    # the learner plays its games itself. "auto": one worker playing ahead (async_rollouts) for
    # PPO on a machine of two or more cores, where it trains faster and learns as well;
    # else 0 (`with_rollouts` says which, once the machine is known).
    rollout_workers: int | str = setting("auto", Rule(
        lambda v: v == "auto" or (_is_int(v) and v >= 0),
        "must be an integer >= 0 (0: the learner plays its games itself) or 'auto'"),
        flag="--rollout-workers")
    # With rollout workers: they play the next rollout while the learner updates on the last
    # (a policy lag of one update, PPO's ratio taken against the policy that played); false:
    # each rollout is played with the weights of the update before it. "auto": on when
    # rollout_workers is "auto" too.
    async_rollouts: bool | str = setting("auto", Rule(
        lambda v: isinstance(v, bool) or v == "auto", "must be true, false or 'auto'"),
        flag="--async-rollouts")

    def named(self, kind: str, seed: int | None = None) -> str:
        """The run's name: run_name, else KIND-sSEED-YYYYmmdd-HHMMSS (every training run's)."""
        import time

        seed = self.seed if seed is None else seed
        return self.run_name or f"{kind}-s{seed}-{time.strftime('%Y%m%d-%H%M%S')}"

    def _check(self) -> None:
        _require(self.algorithm not in DATASET_ALGORITHMS or bool(self.dataset), "TrainConfig",
                 "dataset", self.dataset, f"{self.algorithm} learns from a dataset: name one "
                 "(--dataset NAME; record one with --datagen)")
        # 0 steps: the warm start alone, a network that imitates a pilot (an opponent model for
        # search.py); without a warm start that would be an untrained network.
        _require(_is_int(self.total_timesteps) and (self.total_timesteps > 0 or (
            self.total_timesteps == 0 and bool(self.warm_start))), "TrainConfig",
            "total_timesteps", self.total_timesteps,
            "must be an integer > 0 (0 only with a warm start: imitation alone)")
        workers = self.rollout_workers
        _require(workers == "auto" or workers <= self.num_envs, "TrainConfig",
                 "rollout_workers", workers, f"must be at most num_envs ({self.num_envs}): "
                 "each worker plays at least one game (--num-envs)")
        _require(self.async_rollouts is not True or workers != 0, "TrainConfig",
                 "async_rollouts", self.async_rollouts, "plays the next rollout on the rollout "
                 "workers while the learner updates: add --rollout-workers N (N >= 1)")
        _require(workers in (0, "auto") or self.algorithm == "ppo", "TrainConfig",
                 "rollout_workers", workers, f"rollout workers play PPO's "
                 f"rollouts; --algorithm {self.algorithm} trains in one process (drop "
                 "--rollout-workers)")
        _require(self.async_rollouts is not True or self.algorithm == "ppo", "TrainConfig",
                 "async_rollouts", self.async_rollouts, f"rollout workers play PPO's "
                 f"rollouts; --algorithm {self.algorithm} trains in one process (drop "
                 "--async-rollouts)")

    def with_rollouts(self, cores: int, own_games: bool = False) -> "TrainConfig":
        """This config with "auto" rollouts decided for a machine of `cores` cores: PPO plays
        ahead on one rollout worker where there are two or more (one core plays while the
        other learns) or where async_rollouts asks for it; else the learner plays its own games
        in step. `own_games`: the run shows or guides the learner's own games (--render,
        --use-llm), which only it can play."""
        workers, ahead = self.rollout_workers, self.async_rollouts
        if workers == "auto":
            workers = int(self.algorithm == "ppo" and (
                ahead is True or (cores >= 2 and not own_games and ahead == "auto")))
        if ahead == "auto":
            ahead = self.rollout_workers == "auto" and workers > 0
        return dataclasses.replace(self, rollout_workers=workers, async_rollouts=ahead)


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
            raise UserError(f"config section [{unknown[0]}] is unknown; {hint}")
        out = {}
        for k, section in parts.items():
            try:
                out[k] = section.from_dict(data.get(k, {}))
            except ValueError as exc:
                raise UserError(f"[{k}] {exc}") from None
        return cls(**out)


def _declared(section: str) -> list[dataclasses.Field]:
    kind = {f.name: f.default_factory for f in dataclasses.fields(RunConfig)}[section]
    return [f for f in dataclasses.fields(kind) if f.metadata.get("flag")]


def _reads(algorithm: str, section: str, f: dataclasses.Field) -> bool:
    read_by = f.metadata.get("read_by")
    if read_by is not None:
        return algorithm in read_by
    return section == "train" or section in ALGORITHM_SECTIONS[algorithm]


def flag_fields(algorithm: str) -> dict[str, list[tuple[str, str]]]:
    """Each flag declared on a config field -> the (section, field) pairs it sets in a run of
    `algorithm`: the [train] field that declares it, and the first of the algorithm's own
    sections (ALGORITHM_SECTIONS) that declares it."""
    out: dict[str, list[tuple[str, str]]] = {}
    for section in ("train", *ALGORITHM_SECTIONS[algorithm]):
        for f in _declared(section):
            taken = out.setdefault(f.metadata["flag"], [])
            if section == "train" or not any(s != "train" for s, _ in taken):
                taken.append((section, f.name))
    return out


def unread_flags(algorithm: str) -> list[str]:
    """The config flags no field `algorithm` reads declares (in the order fields are declared):
    given to its run, they would change nothing."""
    flags: dict[str, bool] = {}
    for section in RunConfig.SECTIONS:
        for f in _declared(section):
            flag = f.metadata["flag"]
            flags[flag] = flags.get(flag, False) or _reads(algorithm, section, f)
    return [flag for flag, read in flags.items() if not read]


def flag_readers(flag: str) -> list[str]:
    """The algorithms whose runs read `flag`, a flag declared on config fields."""
    return [a for a in ALGORITHMS if flag not in unread_flags(a)]


def load_run_config(path: str | Path, base: RunConfig | None = None) -> RunConfig:
    """Read a TOML or JSON file with any of RunConfig.SECTIONS. Its fields override `base`
    (default: the defaults); a resumed run's base is its saved config. Any problem is one
    ValueError naming the file and the field; [train] keys of earlier versions are read from
    their old place with one line on stderr saying where they moved."""
    p = Path(path)
    if p.is_dir():
        raise UserError(f"config file {p}: is a folder; give the path of a .toml or .json file")
    if not p.exists():
        raise UserError(f"config file {p}: no such file")
    import tomllib

    from .util.json_input import loads_strict, toml_shape_problem
    from .util.preflight import read_bounded

    raw = read_bounded(p, "config file", 1024 * 1024)
    sections = " ".join(f"[{s}]" for s in RunConfig.SECTIONS)
    toml = p.suffix.lower() == ".toml"
    try:
        text = raw.decode("utf-8")
        # tomllib recurses and slows with the square of a dotted key's parts, json recurses:
        # a shape too deep is refused before either parses it.
        problem = toml_shape_problem(text) if toml else ""
        if problem:
            raise UserError(problem)
        data = tomllib.loads(text) if toml else loads_strict(text, "its JSON")
    except ValueError as exc:  # tomllib's, json's and the decoder's errors are ValueErrors
        raise UserError(f"config file {p}: cannot be parsed ({exc}); write TOML (.toml) or "
                        f"JSON with {sections} sections") from None
    if not isinstance(data, dict):
        raise UserError(f"config file {p}: expected sections such as [train], got "
                        f"{type(data).__name__}")
    if not any(data.values()):
        raise UserError(f"config file {p}: sets nothing; add sections such as [train] with "
                        "the settings to change, or leave out --config")
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    moved = move_old_keys(data)
    if moved:
        import sys

        print(f"note: config file {p}: [train] keys that moved were read from their new "
              f"places: {', '.join(moved)}", file=sys.stderr)
    base = base or RunConfig()
    merged = base.to_dict()
    for section, fields in data.items():
        # A section that names a preset (GameConfig's rules, RewardConfig's personality) starts
        # from it, not from the base's values of the fields the preset sets.
        preset = getattr(type(getattr(base, section, None)), "PRESET_FIELD", None)
        if isinstance(fields, dict) and preset in fields:
            merged[section] = fields  # a preset names the whole section; the rest changes it
        elif isinstance(fields, dict) and isinstance(merged.get(section), dict):
            merged[section].update(fields)
        else:
            merged[section] = fields  # an unknown section or a bad value: from_dict names it
    try:
        return RunConfig.from_dict(merged)
    except (TypeError, ValueError) as exc:
        raise UserError(f"config file {p}: {exc}") from None


__all__ = ["DQNConfig", "DaggerConfig", "GRPOConfig", "GameConfig", "LeagueConfig",
           "OfflineConfig", "PPOConfig", "RewardConfig", "RunConfig", "SFTConfig",
           "START_POSITIONS", "TrainConfig", "load_run_config", "CONTROLS", "RULES_PRESETS"]
