"""Scripted pilots: specs, masks, reaction delay, and the strength ordering."""

import numpy as np
import pytest

from spacewar_ai import SpacewarVectorEnv
from spacewar_ai.pilots.build import make_pilot
from spacewar_ai.pilots.scripted import DelayedPilot, HeuristicPilot
from spacewar_ai.rating.match import play_match


def test_pilot_strength_ordering_hard_medium_easy_random():
    """200 games per pairing, sides swapped: each level beats the one below on torpedo wins."""
    pairs = [("heuristic:hard", "heuristic:medium"), ("heuristic:medium", "heuristic:easy"),
             ("heuristic:easy", "random")]
    report = []
    for strong, weak in pairs:
        r = play_match(strong, weak, games=200, seed=2024)
        report.append(f"{strong} {r.win_rate_a():.0%} vs {weak} {r.wins_b / r.n:.0%} "
                      f"(draws {r.draws / r.n:.0%})")
        assert r.wins_a > r.wins_b, report[-1]
        assert r.wins_a == sum(g.real_winner == "a" for g in r.games)
        # Sides were swapped: A flew each ship in half the games.
        assert sum(g.a_side for g in r.games) == 100
    print("\n".join(report))


@pytest.mark.parametrize("spec", ["random", "heuristic:easy", "heuristic:medium",
                                  "heuristic:hard"])
def test_pilots_choose_only_valid_actions(spec):
    env = SpacewarVectorEnv(64, opponent="random")
    obs, _ = env.reset(seed=1)
    pilot = make_pilot(spec)
    pilot.reset(np.ones(64, bool), env.batch.rng.copy())
    masked_before = env.batch.ship_i[:, 0, 10].sum()
    for _ in range(300):
        a = pilot.act(obs)
        valid = obs[np.arange(64), 30 + a] > 0.5
        if spec != "heuristic:easy":  # easy acts on stale observations, by design
            assert valid.all(), spec
        obs, *_ = env.step(a)
    if spec != "heuristic:easy":
        assert env.batch.ship_i[:, 0, 10].sum() == masked_before


@pytest.mark.parametrize("spec, kernel", [("random", "_random_kernel"),
                                          ("heuristic:hard", "_heuristic_kernel")])
def test_a_pilot_reads_observations_of_any_layout_or_float_type_alike(spec, kernel):
    """One side's rows of both ships' observations (strided) or float64 rows choose what the
    float32 rows choose, and compile no kernel of their own (seconds the first time)."""
    from spacewar_ai.pilots import scripted

    env = SpacewarVectorEnv(16, opponent="random")
    obs, _ = env.reset(seed=2)
    both = np.stack([obs, obs], axis=1)
    pilots = [make_pilot(spec) for _ in range(3)]
    for pilot in pilots:
        pilot.reset(np.ones(16, bool), env.batch.rng.copy())
    chosen = [pilots[0].act(obs)]
    known = len(getattr(scripted, kernel).signatures)
    chosen += [pilots[1].act(obs.astype(np.float64)), pilots[2].act(both[:, 1])]
    assert len(getattr(scripted, kernel).signatures) == known
    assert np.array_equal(chosen[1], chosen[0]) and np.array_equal(chosen[2], chosen[0])


def test_each_game_of_a_batch_gets_the_hard_pilots_move_it_gets_alone():
    # The hard pilot predicts every game's orbits together before it decides any; a game whose
    # lead is found early must not stop, or be stopped by, the others' predictions.
    env = SpacewarVectorEnv(64, opponent="heuristic:hard")
    obs, _ = env.reset(seed=5)
    pilot = HeuristicPilot("hard")
    rows = []
    for _ in range(40):
        rows.append(obs.copy())
        obs, *_ = env.step(pilot.act(obs))
    rows = np.concatenate(rows)
    together = pilot.act(rows)
    alone = np.array([pilot.act(row[None])[0] for row in rows])
    assert np.array_equal(together, alone)
    assert len(set(together.tolist())) >= 4  # turning, thrusting and firing all happen


def _watched(pilot, games: int, opponent: str, move: int, decisions: int):
    """What `pilot` saw and did as ship 0 of `games` games (ship 1 `opponent`, ship 0's moves
    `move`), decision by decision, up to the first game's end."""
    env = SpacewarVectorEnv(games, opponent=opponent)
    obs, _ = env.reset(seed=3)
    history, acted = [], []
    for _ in range(decisions):
        history.append(obs.copy())
        acted.append(pilot.act(obs))
        obs, _, term, trunc, _ = env.step(np.full(games, move, dtype=np.int64))
        if (term | trunc).any():
            break
    return history, acted


def test_easy_pilot_reacts_three_decisions_late():
    pilot = make_pilot("heuristic:easy")
    assert isinstance(pilot, DelayedPilot) and pilot.delay == 3
    inner = HeuristicPilot("easy")
    history, acted = _watched(pilot, 16, "random", 0, 40)
    for t in range(3, len(acted)):
        assert np.array_equal(acted[t], inner.act(history[t - 3]))


def test_a_fractional_reaction_alternates_the_whole_delays_around_it():
    """@react=1.25: two decisions late one decision in four, one decision late otherwise, the
    same in every game."""
    pilot = make_pilot("heuristic:hard@react=1.25")
    assert pilot.name == "heuristic:hard@react=1.25"
    inner = HeuristicPilot("hard")
    history, acted = _watched(pilot, 64, "heuristic:medium", 4, 30)
    late = [1, 1, 1, 2] * 8
    for t in range(2, len(acted)):
        assert np.array_equal(acted[t], inner.act(history[t - late[t]])), t
    # Not the pilot one decision late: the late decisions differ somewhere.
    assert any(not np.array_equal(acted[t], inner.act(history[t - 1]))
               for t in range(3, len(acted), 4))


def test_aim_and_reaction_are_settings_a_player_feels_as_strength():
    """`@aim` and `@react` change a heuristic pilot's play where a player sees it: the medium
    pilot aiming at where the target is now loses to itself leading its shots, and the easy
    pilot reacting at once beats itself reacting 240 ms late."""
    pilot = make_pilot("heuristic:medium@aim=0.5@react=2")
    assert pilot.name == "heuristic:medium@aim=0.5@react=2" and pilot.delay == 2
    assert pilot.pilot.aim == 0.5
    assert make_pilot("heuristic:easy@react=3").name == "heuristic:easy"  # its own reaction
    aimless = play_match("heuristic:medium@aim=0", "heuristic:medium", games=200, seed=7)
    assert aimless.score_a() < 0.4, aimless.score_a()
    quick = play_match("heuristic:easy@react=0", "heuristic:easy", games=200, seed=7)
    assert quick.score_a() > 0.75, quick.score_a()


def test_unknown_spec_and_level():
    with pytest.raises(ValueError, match="heuristic:easy, heuristic:medium and heuristic:hard"):
        make_pilot("heuristic:expert")
    with pytest.raises(ValueError, match="idle, random"):
        make_pilot("grandmaster")
    with pytest.raises(ValueError, match="level"):
        HeuristicPilot("expert")


def test_idle_pilot_never_acts():
    obs = np.zeros((5, 36), dtype=np.float32)
    assert make_pilot("idle").act(obs).tolist() == [0] * 5
