"""The text view: what the language model reads of an observation."""

import numpy as np

from spacewar_ai.config import OBS_MASK
from spacewar_ai.lm.view import VIEWS, aim, prompt, situation, situations, valid_actions


def _obs(heading_deg=0.0, enemy=(0.0, 0.0), star=(0.0, 0.0), torpedo=(0.0, 0.0),
         mask=(1, 1, 1, 1, 1, 1), closing=0.0):
    o = np.zeros(36, dtype=np.float32)
    o[4], o[5] = np.sin(np.radians(heading_deg)), np.cos(np.radians(heading_deg))
    o[6], o[7] = 0.5, 0.25
    o[9:11] = enemy
    o[11:13] = -closing * np.asarray(enemy)
    o[15:17] = star
    o[18:20] = torpedo
    o[OBS_MASK:] = mask
    return o


def test_the_text_view_names_bearings_distances_and_only_valid_actions():
    """Heading along +x: +y (down the screen) is clockwise, the way action 2 turns: right."""
    text = situation(_obs(enemy=(0.0, 0.5), star=(-0.3, 0.0), torpedo=(0.1, 0.0),
                          mask=(1, 1, 1, 1, 0, 0), closing=1.0))
    assert text.startswith("Enemy 90 right 5 away, closing. Star behind 3 away. "
                           "Torpedo ahead 1 away.")
    assert text.endswith("Fuel 50, torpedoes 8. Valid: 0,1,2,3.\nAction:\n")
    turned = situation(_obs(heading_deg=90.0, enemy=(0.0, 0.5)))  # now facing down the screen
    assert turned.startswith("Enemy ahead 5 away.")
    assert situation(_obs(enemy=(0.4, -0.4))).startswith("Enemy 45 left 6 away.")
    hidden = situation(_obs(mask=(1, 0, 0, 0, 0, 0)))
    assert hidden.startswith("Enemy hidden.") and "Star" not in hidden and "Torpedo" not in hidden
    assert "Valid: 0." in hidden
    assert prompt(_obs()).startswith("Spacewar! You fly a ship. Actions: 0 drift, 1 turn left")
    assert "6 hyperspace" in prompt(np.concatenate([_obs(), [1.0]]))
    assert valid_actions(_obs(mask=(1, 0, 1, 0, 1, 0))) == [0, 2, 4]


def test_view_2_says_the_aim_as_the_tactical_view_computes_it():
    from spacewar_ai.config import GameConfig
    from spacewar_ai.game.features import tactical_columns, view_constants
    from tests.helpers import game_observations

    obs = game_observations()[:300]
    two, one = situations(obs, 2), situations(obs, 1)
    assert one == [situation(o) for o in obs] and two == [situation(o, 2) for o in obs]
    columns = tactical_columns(obs, view_constants(GameConfig()))
    for o, text, words, c in zip(obs, two, one, columns):
        enemy = words.split(". ")[0] + "."
        assert text.startswith(enemy) and text.replace(aim(c) + " ", "") == words
    said = [t for t in two if "Lead " in t]
    assert said and all(", shot misses by " in t for t in said)
    # The enemy ahead and a torpedo fired now dead on: lead ahead, a miss of 0 radii.
    assert aim(np.array([1.0, 0.0, 1.0, 0.0, 0.25])) == "Lead ahead in 2, shot misses by 0."
    assert aim(np.array([0.0, 1.0, np.exp(-3 / 2), np.exp(-1 / 2), 0.5])) == (
        "Lead 90 right in 5, shot misses by 3. Threat passes 1 off.")
    assert aim(np.zeros(5)) == ""  # no intercept, no threat: nothing said
    assert set(VIEWS) == {1, 2}


def test_an_unknown_view_is_refused():
    import pytest

    with pytest.raises(ValueError, match="prompt view 3: the views are 1, 2"):
        situation(_obs(), 3)
