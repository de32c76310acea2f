"""SpacewarText-v0: the game as the LM pilot's prompts, answers read from text."""

import gymnasium as gym
import numpy as np

import spacewar_ai  # noqa: F401  (registers the environments)
from spacewar_ai.config import OBS_MASK
from spacewar_ai.game.environment import SpacewarEnv
from spacewar_ai.lm.view import prompt


def test_text_answers_play_the_same_game_as_action_indices():
    """A whole game answered in text ("Action 4", " 2\\n") is the game the same indices play in
    SpacewarEnv: the same rewards, the same end; each prompt is the LM pilot's prompt."""
    text = gym.make("SpacewarText-v0", opponent="heuristic:medium")
    plain = SpacewarEnv(opponent="heuristic:medium")
    p, info = text.reset(seed=3)
    obs, _ = plain.reset(seed=3)
    rng = np.random.default_rng(0)
    steps = 0
    while True:
        assert p == prompt(obs) and p.endswith("Action:\n")
        assert np.array_equal(info["obs"], obs)
        assert info["valid_actions"] == [int(a) for a in np.flatnonzero(obs[OBS_MASK:])]
        a = int(rng.choice(info["valid_actions"]))
        answer = [f"{a}", f" {a}\n", f"Action {a} because"][steps % 3]
        p, r_text, term, trunc, info = text.step(answer)
        obs, r_plain, term2, trunc2, _ = plain.step(a)
        assert (r_text, term, trunc) == (r_plain, term2, trunc2) and not info["invalid_answer"]
        steps += 1
        if term or trunc:
            break
    assert steps > 5


def test_an_answer_that_is_not_a_valid_index_plays_drift_and_costs_the_penalty():
    env = gym.make("SpacewarText-v0", opponent="heuristic:easy", invalid_penalty=-2.5,
                   preamble=False)
    plain = SpacewarEnv(opponent="heuristic:easy")
    p, info = env.reset(seed=1)
    plain.reset(seed=1)
    assert not p.startswith("Spacewar!") and env.unwrapped.preamble.startswith("Spacewar!")
    # Fire once, so the next answer "4" is masked (reloading).
    env.step("4")
    plain.step(4)
    for answer in ("4", "fire!", "9", "-1", None):
        _, reward, term, trunc, info = env.step(answer)
        _, plain_reward, *_ = plain.step(0)  # what was played: drift
        assert info["invalid_answer"] and reward == plain_reward - 2.5, answer
        if term or trunc:
            break


def test_the_text_env_speaks_view_1_unless_asked_for_view_2():
    import gymnasium as gym
    import pytest

    one, _ = gym.make("SpacewarText-v0").reset(seed=0)
    two, _ = gym.make("SpacewarText-v0", view=2).reset(seed=0)
    assert "Lead " not in one and "Lead 10 left in 8, shot misses by 5." in two
    assert two.replace("Lead 10 left in 8, shot misses by 5. ", "") == one
    with pytest.raises(ValueError, match="view=5: the text views are 1, 2"):
        gym.make("SpacewarText-v0", view=5)
