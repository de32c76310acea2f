"""What a live game is made of, without a server: the files the app may read, the HumanGame a
page's start message asks for, the state a page draws, and the one line a page is told."""

import numpy as np
import pytest

from spacewar_ai.config import GameConfig
from spacewar_ai.game.engine import GameBatch
from spacewar_ai.web.files import Files
from spacewar_ai.web.live import client_config, frame_state, public_message, start_game
from tests.helpers import ROOT


@pytest.fixture
def project(tmp_path):
    """A project folder holding one strategy file (the files a page may name: test_files.py)."""
    (tmp_path / "aim.py").write_text((ROOT / "examples" / "strategies" / "aim_and_fire.py")
                                     .read_text())
    return Files(tmp_path)


def test_a_start_message_makes_the_game_it_asks_for(project):
    game, help_lines = start_game({"mode": "watch", "a": "heuristic:hard",
                                   "b": "strategy:aim.py"}, project, seed=1)
    try:
        assert game.names == ["heuristic:hard", "strategy:aim.py"] and help_lines == []
    finally:
        game.close()
    game, help_lines = start_game({"mode": "play", "two_player": True}, project, seed=1)
    try:
        assert help_lines and game.opponent is None and game.players == ()
    finally:
        game.close()
    # Two named people are rated together; one name alone rates nobody in a two-player game.
    game, _ = start_game({"mode": "play", "two_player": True, "player": "ada",
                          "player2": " bob "}, project, seed=1)
    try:
        assert game.players == ("ada", "bob") and game.book is not None
    finally:
        game.close()
    with pytest.raises(ValueError, match="1 to 40 printable characters"):
        start_game({"mode": "play", "player": "x" * 41}, project, seed=1)
    with pytest.raises(ValueError, match="unknown mode 'dance': play or watch"):
        start_game({"mode": "dance"}, project, seed=1)
    with pytest.raises(ValueError, match="difficulty 'godlike' is unknown"):
        start_game({"mode": "play", "difficulty": "godlike"}, project, seed=1)


def test_the_page_draws_what_the_engine_holds():
    config = GameConfig()
    batch = GameBatch(1, config)
    batch.reset(seeds=np.array([5]))
    batch.step(np.array([[4, 0]]))  # ship 0 fires
    state = frame_state(batch)
    assert state["f"] == config.frame_skip and len(state["s"]) == 2 and len(state["t"]) == 1
    x, y, heading, alive, thrusting, hidden, fuel, torpedoes = state["s"][0]
    assert (alive, hidden, fuel, torpedoes) == (1, 0, 1.0, config.max_ammo - 1)
    assert set(client_config(config)) >= {"width", "height", "fps", "frame_skip", "star_radius"}


def test_a_page_is_told_one_line_and_no_more():
    class Refused(ValueError):
        public = "strategy.py: line 3: import is not allowed"

    assert public_message(Refused("/srv/project/strategy.py: the whole source...")) == \
        Refused.public
    assert public_message(ValueError("two\nlines")) == "two lines"
    assert len(public_message(ValueError("x" * 5000))) == 400
