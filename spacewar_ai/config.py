"""Configuration dataclasses: pure data, JSON-serializable, validated at construction.

Every constant of the game lives here with its unit. Defaults follow the Spacewar! 3.1 listing
(1962) converted to a 1024 x 1024 unit screen; see shared/reference/spacewar-1962.md.
One engine step is one frame of the 1962 main loop.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

START_POSITIONS = ("classic", "orbit")


def _fields_from_dict(cls, data: dict[str, Any]):
    """Build a dataclass from a dict, naming any unknown key instead of silently dropping it."""
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__}: expected a dict of fields, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(
            f"{cls.__name__}: unknown field(s) {unknown}; valid fields are {sorted(known)}"
        )
    return cls(**data)


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
        return 30 + self.num_actions

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
    """Rewards per ship. Defaults reproduce the original design's table."""

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

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            _require(_finite(v), type(self).__name__, f.name, v, "must be a finite number")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RewardConfig":
        return _fields_from_dict(cls, data)


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


__all__ = ["GameConfig", "RewardConfig", "START_POSITIONS"]
