"""scripts/rllib_sw_house.py's choice of the peer's game: the code of the commit the user names
(or the checkout as it stands), the preset of ours its rules match, and the commit it says it
played in. The peer's checkout here is a git repository of two commits holding a small model of
its environment's interface, written for this test, with the rules of its two versions."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import load_script

OBJECTS = '''
import numpy as np

WRAP_BOUND = 1.5
HYPERSPACE_CHARGES = 8
HYPERSPACE_RECHARGE = 224
HYPERSPACE_REENTRY = 96


class Ship:
    def __init__(self, pos, ang, stochastic_hspace=False):
        self.pos, self.ang = np.array(pos, dtype=float), ang
        self.stochastic_hspace = stochastic_hspace
        self.h_charges, self.h_reload = HYPERSPACE_CHARGES, 0

    def update(self, action, missiles, speed, rng=None):
        before = self.h_reload
        self.h_reload = max(self.h_reload - speed, 0)
        edge = HYPERSPACE_RECHARGE - HYPERSPACE_REENTRY
        if self.h_reload <= edge < before:
            if self.stochastic_hspace:
                self.pos = rng.uniform({low} * WRAP_BOUND, WRAP_BOUND, size=(2,))
            else:
                self.pos = -self.pos * {nearer}
'''

ENV = '''
from environments.SpaceWar_objects import WRAP_BOUND, Ship


class SW_1v1_env:
    def __init__(self, env_config):
        self.config = env_config

    def reset(self, seed=None, options=None):
        self.playerShips = [Ship([-0.5 * WRAP_BOUND] * 2, {facing[0]}),
                            Ship([0.5 * WRAP_BOUND] * 2, {facing[1]})]
        return {{}}, {{}}
'''

# The agent's game, then today's (config.RULES_PRESETS, docs/game.md).
VERSIONS = [{"low": 0, "nearer": "1.0", "facing": (90.0, 270.0)},
            {"low": -1, "nearer": "self.h_charges / HYPERSPACE_CHARGES", "facing": (0.0, 180.0)}]


def _commit(repo: Path, version: dict, message: str) -> str:
    (repo / "environments" / "SpaceWar_objects.py").write_text(OBJECTS.format(**version))
    (repo / "environments" / "SW_1v1_env.py").write_text(ENV.format(**version))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", message], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture()
def peer_repo(tmp_path):
    repo = tmp_path / "rllib_sw"
    for folder in ("environments", "classes"):
        (repo / folder).mkdir(parents=True)
        (repo / folder / "__init__.py").write_text("")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo, [_commit(repo, v, m) for v, m in zip(VERSIONS, ("trained", "changed"))]


def test_the_house_plays_the_commit_it_is_asked_for_and_says_which(peer_repo, tmp_path, capsys):
    house = load_script("rllib_sw_house")
    repo, (trained, today) = peer_repo
    for commit, rules, says in ((trained[:7], "rllib_sw_1f9e818", trained),
                                (None, "rllib_sw", today)):
        into = tmp_path / f"at-{commit}"
        into.mkdir()
        _, config = house.peer_game(SimpleNamespace(peer_repo=repo, commit=commit,
                                                    controls="switches"), into)
        assert config.rules == rules and config.controls == "switches"
        assert capsys.readouterr().out.strip() == \
            f"the peer's game at {says} (our rules preset {rules!r})"
    (repo / "environments" / "SW_1v1_env.py").write_text(
        ENV.format(**{**VERSIONS[1], "facing": (45.0, 225.0)}))
    with pytest.raises(SystemExit, match=r"rest_heading.*315.*no preset of ours plays that"):
        house.peer_game(SimpleNamespace(peer_repo=repo, commit=None, controls="six"), tmp_path)
    with pytest.raises(SystemExit, match="--commit beef: no such commit in"):
        house.peer_game(SimpleNamespace(peer_repo=repo, commit="beef", controls="six"), tmp_path)
