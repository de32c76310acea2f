"""GameConfig and RewardConfig: defaults from 1962, validation, JSON round trip."""

import json

import pytest

from spacewar_ai.config import GameConfig, RewardConfig


def test_defaults_follow_the_1962_listing():
    c = GameConfig()
    assert (c.width, c.height, c.max_ammo, c.torpedo_lifetime, c.fire_cooldown) == (
        1024, 1024, 32, 96, 16)
    assert c.torpedo_speed == 4.0 and c.rotation_speed == 1 / 16 and c.thrust_power == 2 / 256
    assert c.max_fuel == 1000 and c.gravity_constant == 512 and c.star_radius == 16
    assert c.hit_radius == 12 and c.max_speed == 8
    # Gravity equals full thrust at a quarter screen.
    assert c.gravity_constant / 256 ** 2 == pytest.approx(c.thrust_power)


@pytest.mark.parametrize("field,value", [
    ("width", 0), ("height", -5), ("max_fuel", -1), ("star_radius", 512),
    ("hit_radius", -1), ("frame_skip", 0), ("max_ammo", 2.5), ("start_positions", "corner"),
    ("torpedo_speed", float("nan")), ("no_star", "yes"), ("max_episode_steps", 0),
])
def test_impossible_values_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        GameConfig(**{field: value})


def test_json_round_trip_and_unknown_fields():
    c = GameConfig(hyperspace=True, frame_skip=2)
    assert GameConfig.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    r = RewardConfig(kill_reward=5.0)
    assert RewardConfig.from_dict(json.loads(json.dumps(r.to_dict()))) == r
    with pytest.raises(ValueError, match="gravity"):
        GameConfig.from_dict({"gravity": 1.0})


def test_reward_values_must_be_finite():
    with pytest.raises(ValueError, match="kill_reward"):
        RewardConfig(kill_reward=float("inf"))
