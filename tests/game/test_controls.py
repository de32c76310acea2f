"""The controls codec (game/controls.py): every scheme's action numbers, both ways, and the one
place in the package that maps switches to them."""

import ast
import re
from pathlib import Path

import numpy as np

from spacewar_ai.game.controls import SIX_AS_SWITCHES, Action, decode, encode

PACKAGE = Path(__file__).resolve().parents[2] / "spacewar_ai"


def test_every_action_of_each_scheme_decodes_to_switches_that_encode_back():
    for controls, n in (("six", 7), ("switches", 16)):
        actions = np.arange(n)
        assert list(encode(*decode(actions, controls), controls)) == list(actions)
    assert [int(a) for a in SIX_AS_SWITCHES] == [0, 1, 2, 4, 8, 12, 3]
    assert [bool(x) for x in decode(99, "switches")] == [False] * 5  # no action presses nothing


def test_a_wish_of_several_is_read_in_order_against_the_mask():
    wish = dict(left=1, right=0, thrust=1, fire=1, jump=1)
    every = np.ones(7)
    assert encode(**wish, controls="six", mask=every) == Action.HYPERSPACE
    no_jump = every.copy()
    no_jump[Action.HYPERSPACE] = 0
    assert encode(**wish, controls="six", mask=no_jump) == Action.THRUST_FIRE
    reloading = no_jump.copy()
    reloading[[Action.FIRE, Action.THRUST_FIRE]] = 0
    assert encode(**wish, controls="six", mask=reloading) == Action.THRUST
    assert encode(**wish, controls="six", mask=np.ones(6)) == Action.THRUST_FIRE  # no 7th action
    assert encode(**wish, controls="switches") == 1 | 2 | 4 | 8
    assert encode(**{**wish, "jump": 0}, controls="switches") == 1 | 4 | 8
    masked = np.ones(16)
    masked[3] = 0
    assert encode(**wish, controls="switches", mask=masked) == 1 | 4 | 8


def test_no_module_outside_game_maps_switches_to_action_numbers():
    """The switches' bits and their table are named only in game/: every other module asks
    game.controls."""
    named = re.compile(r"\bSW_(LEFT|RIGHT|THRUST|FIRE|HYPERSPACE)\b")
    outside = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
               if p.parent.name != "game" and named.search(p.read_text())]
    assert outside == []


def test_no_module_outside_game_names_a_scheme_to_the_codec():
    """Outside game/, `encode` and `decode` are told the game's own scheme (`config.controls`),
    never a scheme written out: the adapting planner once read every game's moves as "six"."""
    from spacewar_ai.config import CONTROLS

    fixed = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "game":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            name = getattr(node, "func", None)
            name = getattr(name, "id", None) or getattr(name, "attr", None)
            if name in ("encode", "decode") and any(
                    isinstance(arg, ast.Constant) and arg.value in CONTROLS
                    for arg in [*node.args, *(k.value for k in node.keywords)]):
                fixed.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert fixed == []
