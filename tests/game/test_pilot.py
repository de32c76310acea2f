"""The Pilot interface: what a pilot does not override has a default that does nothing, an
object of one's own with act and reset flies as a ForeignPilot (its attach and close used when
it has them), and anything else is refused by name."""

import numpy as np
import pytest

from spacewar_ai.game.pilot import ForeignPilot, Pilot, as_pilot
from spacewar_ai.pilots import make_pilot
from spacewar_ai.rating.match import play_match


class Fire(Pilot):
    name = "fire"

    def act(self, obs, active=None):
        return np.full(len(obs), 4, dtype=np.int64)


def test_a_pilot_writes_act_and_inherits_the_rest():
    pilot = Fire()
    assert pilot.forfeits() == {} and pilot.identity == "fire"
    pilot.reset(np.ones(2, dtype=bool), np.arange(2))
    pilot.attach(None, 0)
    pilot.close()
    pilot.identity = "fire@1234"  # a file's pilot keys its ratings on the contents
    assert pilot.identity == "fire@1234" and pilot.name == "fire"
    with pytest.raises(TypeError):
        type("NoAct", (Pilot,), {})()  # act is the one method a pilot must write
    assert make_pilot(pilot) is pilot


def test_an_object_of_ones_own_flies_and_is_told_what_it_asks_for():
    seen = {"attached": [], "closed": 0, "rows": []}

    class Mine:
        def act(self, obs):
            seen["rows"].append(len(obs))
            return np.zeros(len(obs), dtype=np.int64)

        def reset(self, mask=None, seeds=None):
            return None

        def attach(self, batch, sides):
            seen["attached"].append(batch.n)

        def close(self):
            seen["closed"] += 1

    pilot = make_pilot(Mine())
    assert isinstance(pilot, ForeignPilot) and pilot.name == "Mine"
    result = play_match(pilot, "idle", games=4, seed=0)
    assert result.n == 4 and seen["attached"] == [4]
    assert set(seen["rows"]) == {4}  # every row, running or not, as act(obs) always saw them
    pilot.close()  # whoever built the pilot closes it
    assert seen["closed"] == 1

    class Bare:  # neither attach nor close: nothing is called
        name = "bare"

        def act(self, obs):
            return np.zeros(len(obs), dtype=np.int64)

        def reset(self, mask=None, seeds=None):
            return None

    assert play_match(Bare(), "idle", games=2).name_a == "bare"


def test_what_is_not_a_pilot_is_refused_by_name():
    with pytest.raises(TypeError, match="is not a pilot: give a Pilot, or an object with "
                                        r"act\(obs\) and reset"):
        as_pilot(object())
