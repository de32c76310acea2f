"""The game's rules as presets (`[game] rules`) and the 1962 switches (`[game] controls`): each
rule the rllib_sw preset changes, played out on hand-placed scenarios, and every kind of pilot
flying with the switches."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from spacewar_ai.config import RULES_PRESETS, GameConfig, load_run_config
from spacewar_ai.game import engine
from spacewar_ai.game.controls import SW_FIRE, SW_HYPERSPACE, SW_LEFT, SW_RIGHT, SW_THRUST, Action
from spacewar_ai.pilots.build import make_pilot
from spacewar_ai.rating.match import play_match
from tests.helpers import cause, random_positions, run

PEER = GameConfig.preset("rllib_sw")


def one_game(config: GameConfig, seed: int = 0) -> engine.GameBatch:
    b = engine.GameBatch(1, config)
    b.reset(seeds=np.array([seed]))
    return b


def test_presets_and_a_config_file_that_names_one(tmp_path):
    assert GameConfig.preset("1962") == GameConfig()
    assert PEER.frame_skip == 5 and PEER.max_episode_steps == 4096 and PEER.hyperspace
    assert PEER.torpedo_speed == pytest.approx(1024 / math.sqrt(2) / 256)
    changed = GameConfig.from_dict({"rules": "rllib_sw", "frame_skip": 4})
    assert changed.frame_skip == 4 and changed.hit_shape == "round"
    with pytest.raises(ValueError, match="did you mean 'rllib_sw'"):
        GameConfig.from_dict({"rules": "rlib_sw"})
    path = tmp_path / "game.toml"
    path.write_text('[game]\nrules = "rllib_sw"\ncontrols = "switches"\n'
                    '[reward]\npersonality = "sniper"\nkill_reward = 90.0\n')
    loaded = load_run_config(path)
    game = loaded.game
    assert loaded.reward.shot_reward == -4.0 and loaded.reward.kill_reward == 90.0
    assert game == GameConfig.from_dict({**RULES_PRESETS["rllib_sw"], "rules": "rllib_sw",
                                         "controls": "switches"})
    assert game.num_actions == 16 and game.obs_dim == 48  # hyperspace: each ship's jumps left


def test_the_peer_rules_round_hits_no_torpedo_or_ship_collisions():
    b = one_game(PEER)
    # Two ships on top of each other do not collide; a torpedo 10 units off on both axes (14.1
    # away: inside the peer's circle of 14.5, outside the 1962 octagon's |dx| + |dy| < 18) hits.
    b.place_ship(0, 0, 300.0, 300.0)
    b.place_ship(0, 1, 305.0, 300.0)
    run(b, steps=1)
    assert b.ship_i[0, :, engine.ALIVE].tolist() == [1, 1]
    b = one_game(PEER)
    b.place_ship(0, 0, 200.0, 800.0)
    b.place_ship(0, 1, 800.0, 200.0)
    b.torp_t[0, 1, 0] = 50
    b.torp_f[0, 1, 0] = [200.0 + 10.0, 800.0 + 10.0, 0.0, 0.0]  # 14.1 away: inside the circle
    b.torp_t[0, 1, 1] = 50
    b.torp_f[0, 1, 1] = [800.0 + 2.0, 200.0, 0.0, 0.0]  # its own ship's torpedo, no pass-over
    run(b, steps=1)
    assert cause(b, 0) == engine.DeathCause.TORPEDO
    octagon = one_game(GameConfig())
    octagon.place_ship(0, 0, 200.0, 800.0)
    octagon.torp_t[0, 1, 0] = 50
    octagon.torp_f[0, 1, 0] = [200.0 + 10.0, 800.0 + 10.0, 0.0, 0.0]
    octagon.step(np.zeros((1, 2), np.int64))
    assert octagon.ship_i[0, 0, engine.ALIVE] == 1  # 10 + 10 >= 18: the octagon misses
    # Torpedoes pass through each other under the peer's rules, and are lost in the star.
    b = one_game(PEER)
    b.place_ship(0, 0, 100.0, 100.0)
    b.place_ship(0, 1, 900.0, 100.0)
    b.torp_t[0, 0, 0] = b.torp_t[0, 1, 0] = 50
    b.torp_f[0, 0, 0] = [700.0, 700.0, 0.0, 0.0]
    b.torp_f[0, 1, 0] = [703.0, 700.0, 0.0, 0.0]
    b.torp_t[0, 1, 1] = 50
    b.torp_f[0, 1, 1] = [512.0 + 9.0, 512.0, -3.0, 0.0]
    run(b, steps=1)
    assert b.torp_t[0, 0, 0] > 0 and b.torp_t[0, 1, 0] > 0
    assert b.torp_t[0, 1, 1] == 0
    default = one_game(GameConfig())
    default.torp_t[0, 0, 0] = default.torp_t[0, 1, 0] = 50
    default.torp_f[0, 0, 0] = [700.0, 700.0, 0.0, 0.0]
    default.torp_f[0, 1, 0] = [703.0, 700.0, 0.0, 0.0]
    default.step(np.zeros((1, 2), np.int64))
    assert default.torp_t[0, 0, 0] == 0 == default.torp_t[0, 1, 0]


def test_the_peer_start_scoring_and_hyperspace_failure():
    at_rest = orbits = 0
    for seed in range(80):
        b = one_game(PEER, seed)
        speeds = np.hypot(b.ship_f[0, :, engine.SVX], b.ship_f[0, :, engine.SVY])
        if (speeds == 0).all():
            at_rest += 1
            assert b.ship_f[0, 0, [engine.SX, engine.SY]].tolist() == [256.0, 256.0]
            assert b.ship_i[0, :, engine.AMMO].tolist() == [32, 32]
        else:
            orbits += 1
            r = np.hypot(b.ship_f[0, :, engine.SX] - 512, b.ship_f[0, :, engine.SY] - 512)
            assert r == pytest.approx([r[0], r[0]]) and 0.63 * 512 - 1 < r[0] <= 512
            assert 1 <= b.ship_i[0, 0, engine.AMMO] <= 32
            assert 256 <= b.ship_f[0, 0, engine.SFUEL] <= 1024
    assert 10 < at_rest < 35 and orbits == 80 - at_rest  # a quarter of the starts, at rest
    # A star death is the other ship's win under survivor scoring, a draw's kind of end before.
    for config, winner in ((PEER, 1), (GameConfig(), -1)):
        b = one_game(config)
        b.place_ship(0, 0, 512.0 + 3.0, 512.0)
        b.place_ship(0, 1, 100.0, 100.0)
        run(b, steps=1)
        assert cause(b, 0) == engine.DeathCause.STAR
        assert b.game_i[0, engine.REAL_WINNER] == winner
    # A failed jump ends the ship on its return, after fighting on unseen meanwhile.
    b = one_game(PEER.changed(hyperspace_jumps=1, start_positions="classic"))
    b.step(np.array([[Action.HYPERSPACE, 0]]))
    assert b.ship_i[0, 0, engine.ALIVE] == 1 and b.ship_i[0, 0, engine.HYPER_HIDDEN] > 0
    run(b, steps=96 // 5 + 1)
    assert cause(b, 0) == engine.DeathCause.HYPERSPACE
    now = one_game(GameConfig(hyperspace=True, hyperspace_jumps=1))
    now.step(np.array([[Action.HYPERSPACE, 0]]))
    assert cause(now, 0) == engine.DeathCause.HYPERSPACE


def test_the_peer_game_its_agent_was_trained_in_faces_other_ways_and_reenters_in_a_quadrant():
    """`rules = "rllib_sw_1f9e818"` is today's peer game but for the two rules that changed after
    its agent was trained: the at-rest start faces up and down, and a ship comes back from
    hyperspace in the quadrant past the star on both axes (from rest; from an orbit at the
    opposite point at the full distance, the next test)."""
    old = GameConfig.preset("rllib_sw_1f9e818")
    assert {k for k, v in old.to_dict().items() if v != PEER.to_dict()[k]} == {
        "rules", "rest_heading", "hyperspace_reentry", "orbit_hyperspace"}
    headings = {}
    for config in (PEER, old):
        for seed in range(40):
            b = one_game(config, seed)
            if not np.hypot(b.ship_f[0, :, engine.SVX], b.ship_f[0, :, engine.SVY]).any():
                headings[config.rules] = np.degrees(b.ship_f[0, :, engine.SANG]).round(6)
                break
    assert headings["rllib_sw"].tolist() == [0.0, 180.0]
    assert headings["rllib_sw_1f9e818"].tolist() == [270.0, 90.0]
    for config, quadrant in ((PEER, False), (old, True)):
        places = []
        for seed in range(24):
            b = one_game(config.changed(hyperspace_jumps=1000, start_positions="classic",
                                        frame_skip=1), seed)
            b.step(np.array([[Action.HYPERSPACE, 0]]))
            while b.ship_i[0, 0, engine.HYPER_HIDDEN] > 0:
                run(b, steps=1)
            if b.ship_i[0, 0, engine.ALIVE]:  # not a failed jump
                places.append(b.ship_f[0, 0, [engine.SX, engine.SY]])
        places = np.array(places)
        assert len(places) > 16
        # Re-entries anywhere all land in one quadrant with odds of 4**-16 at most.
        assert (places >= 512.0).all() == quadrant and (places < 1024.0).all()


def test_in_the_peer_games_a_ship_that_starts_on_an_orbit_jumps_to_the_opposite_point():
    """The peer's random-orbit starts jump without failing, to the point opposite through the
    star with velocity and heading reversed; in today's game that point is drawn towards the
    star by the share of jumps left, so a last jump lands on it. Ships at rest still jump at
    random (the test above)."""
    for config, nearer in ((GameConfig.preset("rllib_sw_1f9e818"), False), (PEER, True)):
        config = config.changed(frame_skip=1)
        landed = 0
        for seed in range(60):
            b = one_game(config, seed)
            if not np.hypot(b.ship_f[0, :, engine.SVX], b.ship_f[0, :, engine.SVY]).all():
                continue  # at rest
            used = int(b.ship_i[0, 0, engine.JUMPS])  # the start draws the jumps left
            b.step(np.array([[Action.HYPERSPACE, 0]]))
            assert b.ship_i[0, 0, engine.HYPER_HIDDEN] > 0
            x, y, vx, vy, ang = b.ship_f[0, 0, [engine.SX, engine.SY, engine.SVX, engine.SVY,
                                              engine.SANG]]
            while b.ship_i[0, 0, engine.HYPER_HIDDEN] > 0 and b.ship_i[0, 1, engine.ALIVE]:
                run(b, steps=1)
            if not b.ship_i[0, 1, engine.ALIVE]:
                continue  # the other ship fell meanwhile
            k = (config.hyperspace_jumps - used - 1) / config.hyperspace_jumps if nearer else 1
            if k == 0:
                run(b, steps=1)
                assert cause(b, 0) == engine.DeathCause.STAR  # back on the star
                continue
            assert b.ship_i[0, 0, engine.ALIVE] == 1  # however many jumps it had used
            landed += 1
            assert b.ship_f[0, 0, [engine.SX, engine.SY]] == pytest.approx(
                [512 - (x - 512) * k, 512 - (y - 512) * k])
            assert b.ship_f[0, 0, [engine.SVX, engine.SVY]].tolist() == [-vx, -vy]
            assert math.cos(b.ship_f[0, 0, engine.SANG] - ang) == pytest.approx(-1.0)
        assert landed > 20
    # The 1962 game's orbit starts jump at random, as ever.
    b = one_game(GameConfig(hyperspace=True, frame_skip=1))
    assert b.ship_i[0, :, engine.JUMP_KIND].tolist() == [engine.JUMP_RANDOM] * 2


def test_the_switches_mask_and_what_a_press_does():
    config = GameConfig(controls="switches", start_positions="classic")
    b = one_game(config)
    mask = b.observe()[0, 0, engine.OBS_MASK:]
    assert mask.tolist() == [1.0 if a & SW_HYPERSPACE != SW_HYPERSPACE else 0.0
                             for a in range(16)]  # both rotate switches: only with hyperspace
    heading = b.ship_f[0, 0, engine.SANG]
    b.step(np.array([[SW_LEFT | SW_THRUST | SW_FIRE, 0]]))  # turn while burning and firing
    assert b.ship_f[0, 0, engine.SANG] == pytest.approx(heading - 4 * config.rotation_speed)
    assert b.ship_f[0, 0, engine.SFUEL] == config.max_fuel - 4
    assert b.ship_i[0, 0, engine.SHOTS] == 1
    mask = b.observe()[0, 0, engine.OBS_MASK:]
    assert mask[SW_FIRE] == 0 and mask[SW_RIGHT | SW_THRUST] == 1  # reloading
    # Fire while reloading still turns: only the part that cannot act is left out.
    before = b.ship_f[0, 0, engine.SANG]
    b.step(np.array([[SW_RIGHT | SW_FIRE, 0]]))
    assert b.ship_f[0, 0, engine.SANG] == pytest.approx(before + 4 * config.rotation_speed)
    assert b.ship_i[0, 0, engine.SHOTS] == 1 and b.ship_i[0, 0, engine.MASKED] == 1
    jumper = one_game(config.changed(hyperspace=True))
    assert jumper.observe()[0, 0, jumper.config.mask_start + SW_HYPERSPACE] == 1
    jumper.step(np.array([[SW_HYPERSPACE | SW_FIRE, 0]]))
    assert jumper.ship_i[0, 0, engine.JUMPS] == 1 and jumper.ship_i[0, 0, engine.SHOTS] == 1


def test_a_held_fire_switch_fires_as_the_reload_ends_within_the_decision():
    """A switch is held through a decision's frames: the mask offers fire once the reload ends
    within them, and the torpedo leaves on the frame it ends, as the peer's agent fires it."""
    config = GameConfig.preset("rllib_sw").changed(controls="switches", hyperspace=True)
    six = one_game(config.changed(controls="six"))
    b = one_game(config)
    skip = config.frame_skip
    b.step(np.array([[SW_FIRE, 0]]))
    six.step(np.array([[Action.FIRE, 0]]))
    shots, waited = 1, 0
    while b.ship_i[0, 0, engine.COOLDOWN] >= skip:  # the reload ends past this decision
        assert b.observe()[0, 0, config.mask_start + SW_FIRE] == 0
        b.step(np.array([[SW_FIRE, 0]]))
        six.step(np.array([[Action.FIRE, 0]]))
        assert b.ship_i[0, 0, engine.SHOTS] == shots
        waited += 1
    ends = int(b.ship_i[0, 0, engine.COOLDOWN])
    assert waited > 0 and 0 < ends < skip
    assert b.observe()[0, 0, config.mask_start + SW_FIRE] == 1
    assert b.observe()[0, 0, config.mask_start + (SW_FIRE | SW_THRUST)] == 1
    assert b.observe()[0, 0, config.mask_start + (SW_FIRE | SW_HYPERSPACE)] == 0  # gone at once
    # The six actions are played whole or not at all: fire waits for the next decision there.
    assert six.observe()[0, 0, config.mask_start + Action.FIRE] == 0
    refused = int(b.ship_i[0, 0, engine.MASKED])  # the presses while it could not act
    b.step(np.array([[SW_FIRE, 0]]))
    assert b.ship_i[0, 0, engine.SHOTS] == shots + 1
    assert b.ship_i[0, 0, engine.MASKED] == refused
    # Launched `ends` frames into the decision: its reload has run the frames since.
    assert b.ship_i[0, 0, engine.COOLDOWN] == config.fire_cooldown - (skip - ends)


@pytest.mark.parametrize("pilots, game", [(("heuristic:hard", "heuristic:medium"), GameConfig()),
                                          (("pretrained", "heuristic:easy"), GameConfig()),
                                          (("heuristic:hard", "heuristic:medium"), PEER)],
                         ids=["scripted", "network", "scripted-peer"])
def test_a_pilot_of_the_six_actions_flies_the_same_games_with_the_switches(pilots, game):
    """The switches hold every one of the six actions: a pilot that speaks them plays the
    same games, move for move, in either control box (in the peer's game too, where a reload
    ends inside a decision and the switches' mask offers fire held through it)."""
    six = play_match(*pilots, 12, seed=4, config=game)
    switches = play_match(*pilots, 12, seed=4, config=game.changed(controls="switches"))
    assert [(g.winner, g.frames, g.shots_a, g.shots_b) for g in six.games] == \
        [(g.winner, g.frames, g.shots_a, g.shots_b) for g in switches.games]


def test_a_network_trained_without_hyperspace_flies_a_game_that_has_it():
    """With the switches, the shipped network (six actions, no hyperspace) plays the peer's
    game, hyperspace on, and never jumps; with the six actions its width is refused."""
    switches = GameConfig.from_dict({"rules": "rllib_sw", "controls": "switches"})
    r = play_match("pretrained", "heuristic:hard", 6, seed=1, config=switches, keep_actions=6)
    assert r.n == 6 and all(g.cause_a != "HYPERSPACE" for g in r.games)
    moves = np.concatenate([np.asarray(g.actions)[:, 0 if g.a_side == 0 else 1]
                            for g in r.games])
    assert not np.isin(moves, [SW_HYPERSPACE, SW_HYPERSPACE | SW_THRUST]).any()
    with pytest.raises(ValueError, match="trained on 36-float observations but this game gives "
                                         "39"):
        play_match("pretrained", "heuristic:hard", 2, seed=1, config=PEER)


def test_a_network_saved_before_the_jumps_left_were_observed_reads_what_it_learned():
    """The shipped network for the peer's game learned 46 values, without the jumps left: from
    today's 48 it reads those 46 and picks the moves it picks from them."""
    game = GameConfig.from_dict({"rules": "rllib_sw", "controls": "switches"})
    rows = random_positions(game, games=16, steps=20)
    assert rows.shape[1] == 48 and len(np.unique(rows[:, 30:32], axis=0)) > 3  # jumps vary
    pilot = make_pilot("pretrained:rllib_sw", game)
    assert pilot.agent.state_dim == 46
    learned = np.concatenate([rows[:, :30], rows[:, 32:]], 1)
    assert np.array_equal(pilot.act(rows), pilot.agent.select_action(learned, deterministic=True))


def test_the_environments_take_the_switches():
    from spacewar_ai.game.environment import SpacewarParallelEnv

    env = gym.make("Spacewar-v0", config=GameConfig(controls="switches"),
                   opponent="heuristic:hard")
    obs, _ = env.reset(seed=0)
    assert env.action_space.n == 16 and obs.shape == (engine.OBS_MASK + 16,)
    obs, *_ = env.step(SW_LEFT | SW_THRUST)
    with pytest.raises(ValueError, match=r"\[0, 15\]"):
        env.step(16)
    env.close()
    pz = SpacewarParallelEnv(config=GameConfig(controls="switches"))
    obs, _ = pz.reset(seed=1)
    assert pz.action_space(pz.agents[0]).n == 16
    pz.step({agent: SW_RIGHT | SW_FIRE for agent in pz.agents})
