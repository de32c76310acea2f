"""Views: what learned agents read of an observation (views.py): egocentric and tactical."""

import math

import numpy as np
import pytest
import torch

from spacewar_ai.agents.dqn import DQNAgent
from spacewar_ai.agents.ppo import PolicyStack, PPOAgent
from spacewar_ai.agents.saved import load_agent
from spacewar_ai.config import DQNConfig, GameConfig, PPOConfig
from spacewar_ai.game import engine, features
from spacewar_ai.game.engine import GameBatch
from spacewar_ai.game.features import egocentric_view, tactical_view, view_constants
from spacewar_ai.pilots.build import PRETRAINED_PATH, make_pilot
from tests.helpers import cause, load_script, scenario

shot_quality = load_script("shot_quality")

PAIRS = [(2, 3), (9, 10), (11, 12), (15, 16), (18, 19), (20, 21), (22, 23), (24, 25), (26, 27),
         (28, 29)]


def _bearing(obs_row):
    v = egocentric_view(obs_row[None])[0]
    return math.atan2(v[1], v[0])


@pytest.mark.parametrize("heading", [0.0, 1.0, 2.5, -2.0])
def test_an_opponent_dead_ahead_is_straight_forward_whatever_the_heading(heading):
    b = scenario(no_star=True)
    b.place_ship(0, 0, 500.0, 500.0, heading=heading)
    b.place_ship(0, 1, 500.0 + 200.0 * math.cos(heading), 500.0 + 200.0 * math.sin(heading))
    v = egocentric_view(b.observe()[0, 0][None])[0]
    assert v[0:2] == pytest.approx((1.0, 0.0), abs=1e-5)  # bearing: cos, sin
    assert v[9:11] == pytest.approx((200.0 / 512.0, 0.0), abs=1e-5)  # (forward, right)


def test_rotating_right_turns_the_nose_toward_a_target_on_the_right():
    b = scenario(no_star=True, frame_skip=4)
    b.place_ship(0, 0, 500.0, 500.0, heading=0.3)
    # 1 rad to the right of the nose (heading grows clockwise on screen, y down).
    b.place_ship(0, 1, 500.0 + 200.0 * math.cos(1.3), 500.0 + 200.0 * math.sin(1.3))
    before = _bearing(b.observe()[0, 0])
    assert before == pytest.approx(1.0, abs=1e-4)
    b.step(np.array([[2, 0]]))  # rotate right: 4 frames of 1/16 rad
    after = _bearing(b.observe()[0, 0])
    assert after == pytest.approx(1.0 - 4 / 16, abs=1e-3)


def _real_rows() -> np.ndarray:
    """Ship 0's observations over 60 decisions of 64 games, the hard pilot against a random one:
    3,840 rows with torpedoes in flight and paths bent by the star."""
    cfg = GameConfig()
    b = GameBatch(64, cfg)
    b.reset(seeds=np.arange(64))
    pilots = [make_pilot("heuristic:hard", cfg), make_pilot("random", cfg, seed=3)]
    rows = []
    for _ in range(60):
        obs = b.observe()
        rows.append(obs[:, 0].copy())
        b.step(np.stack([pilots[0].act(obs[:, 0]), pilots[1].act(obs[:, 1])], axis=1))
    world = np.concatenate(rows)
    assert (np.abs(world[:, 18:30]).sum(1) > 0).any(), "no torpedo was ever seen"
    return world


def test_lengths_and_unchanged_entries_survive_the_view_in_real_games():
    world = _real_rows()
    ego = egocentric_view(world)
    for i, j in PAIRS:
        assert np.hypot(ego[:, i], ego[:, j]) == pytest.approx(np.hypot(world[:, i], world[:, j]),
                                                               abs=1e-5)
    keep = [4, 5, 6, 7, 8, 17, *range(30, 36)]
    assert np.array_equal(ego[:, keep], world[:, keep])
    # Relative heading: opponent heading minus own, as sin and cos.
    rel = np.arctan2(world[:, 13], world[:, 14]) - np.arctan2(world[:, 4], world[:, 5])
    seen = np.abs(world[:, 13:15]).sum(1) > 0
    assert ego[seen, 13] == pytest.approx(np.sin(rel[seen]), abs=1e-5)
    assert ego[seen, 14] == pytest.approx(np.cos(rel[seen]), abs=1e-5)


def test_a_large_batch_viewed_in_blocks_gives_every_row_its_own_view(monkeypatch):
    # Blocks of 100, so that the rows span many and end in a partial one; each row's view must
    # be what it is when viewed alone (bent paths, torpedoes).
    monkeypatch.setattr(features, "TACTICAL_BLOCK", 100)
    world = _real_rows()
    k = view_constants(GameConfig())
    alone = np.concatenate([tactical_view(row[None], k) for row in world])
    assert np.array_equal(tactical_view(world, k), alone)


def test_the_tactical_view_is_the_egocentric_one_with_its_columns_before_the_mask():
    # Both views are written row by row into one array; any shape of leading axes reads as rows.
    world = _real_rows()
    k = view_constants(GameConfig())
    ego, view = egocentric_view(world), tactical_view(world, k)
    assert np.array_equal(view[:, :30], ego[:, :30])
    assert np.array_equal(view[:, 30:35], features.tactical_columns(world, k))
    assert np.array_equal(view[:, 35:], ego[:, 30:])
    stacked = world[:60].reshape(3, 20, -1)
    assert np.array_equal(tactical_view(stacked, k), view[:60].reshape(3, 20, -1))
    assert np.array_equal(egocentric_view(world[7]), ego[7])


@pytest.mark.parametrize("view", ["egocentric", "tactical"])
def test_agents_apply_the_view_exactly_once_on_every_path(view):
    """Acting (select_action, decide, the league's PolicyStack) and DQN's replay buffer all see the
    view once: an agent reading a view plays on raw observations as the same weights reading the
    world view play on the viewed rows, and DQN's stored rows are not viewed again."""
    obs = np.random.default_rng(0).normal(size=(64, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    viewed = tactical_view(obs, view_constants()) if view == "tactical" else egocentric_view(obs)
    width = viewed.shape[1]
    agent = PPOAgent(36, 6, PPOConfig(hidden_sizes=(32,), observation_view=view))
    assert agent.input_dim == width
    world = PPOAgent(width, 6, PPOConfig(hidden_sizes=(32,), observation_view="world"))
    world.net.load_state_dict(agent.net.state_dict())
    expected = world.select_action(viewed, deterministic=True)
    assert len(set(expected.tolist())) > 1  # the comparison means something
    assert np.array_equal(agent.select_action(obs, deterministic=True), expected)
    assert np.array_equal(agent.decide(obs).x, agent.obs_norm(torch.from_numpy(viewed)))
    assert np.array_equal(PolicyStack([agent]).act(obs, np.zeros(64, np.int64), True), expected)

    dqn = DQNAgent(36, 6, DQNConfig(hidden_sizes=(32,), stream_size=8, buffer_size=256,
                                    n_step=1, observation_view=view), seed=0)
    dqn.store_transition(obs, np.zeros(64, np.int64), np.zeros(64), obs, np.zeros(64, bool))
    assert np.array_equal(dqn.replay.obs[:64], viewed)
    assert np.array_equal(dqn.stored_greedy(np.arange(64)),
                          dqn.select_action(obs, deterministic=True))


def test_a_view_that_cannot_apply_is_refused_at_construction():
    with pytest.raises(ValueError, match="observation_view='world'"):
        PPOAgent(12, 6)
    with pytest.raises(ValueError, match="observation_view"):
        DQNConfig(observation_view="polar")
    assert DQNAgent(12, 6, DQNConfig(hidden_sizes=(8,), stream_size=4, buffer_size=10,
                                     observation_view="world")).state_dim == 12


# --- the tactical view's columns (TACTICAL_DOC): 30-31 lead, 32 shot quality, 33 threat, 34 time


def _tactical(b):
    return tactical_view(b.observe()[0, 0], view_constants(b.config))


def _fire_and_watch(b, frames: int = 120):
    """Ship 0 fires once and drifts; True if ship 1 died of a torpedo."""
    b.step(np.array([[4, 0]]))
    for _ in range(frames // b.config.frame_skip):
        if b.terminated[0]:
            break
        b.step(np.array([[0, 0]]))
    return cause(b, 1) == engine.DeathCause.TORPEDO


@pytest.mark.parametrize("offset", [0.0, 0.6])
def test_shot_quality_says_whether_a_torpedo_fired_now_hits(offset):
    """A still target 200 units away: dead ahead, quality ~1 and the shot kills; 0.6 rad off,
    quality ~0 and the shot misses. The lead of a still target is its bearing."""
    b = scenario(no_star=True)
    b.place_ship(0, 0, 300.0, 500.0, heading=offset)
    b.place_ship(0, 1, 500.0, 500.0)
    v = _tactical(b)
    assert v[30:32] == pytest.approx((math.cos(-offset), math.sin(-offset)), abs=1e-4)
    assert v[34] == pytest.approx((200.0 - 16.0) / 4.0 / 96.0, abs=1e-3)  # frames to meet / life
    hits = _fire_and_watch(b)
    if offset == 0.0:
        assert v[32] > 0.99 and hits
    else:
        assert v[32] < 0.01 and not hits


def test_the_lead_points_ahead_of_a_crossing_target_and_aiming_there_hits():
    """A target crossing from left to right: the lead bearing is to the right of the target's
    bearing, and a ship turned to the lead kills it with one torpedo where one aimed at the
    target itself misses."""
    outcomes = {}
    for aim in ("target", "lead"):
        b = scenario(no_star=True, frame_skip=1)
        b.place_ship(0, 0, 300.0, 500.0)
        b.place_ship(0, 1, 600.0, 500.0, vx=0.0, vy=1.5)  # y grows downward: to the right
        v = _tactical(b)
        lead = math.atan2(v[31], v[30])
        assert lead > 0.1  # to the right of the target, which is dead ahead
        if aim == "lead":
            b.place_ship(0, 0, 300.0, 500.0, heading=lead)
            assert _tactical(b)[32] > 0.9
        outcomes[aim] = _fire_and_watch(b, frames=160)
    assert outcomes == {"target": False, "lead": True}


def test_threat_rises_for_a_torpedo_coming_at_the_ship_only():
    for facing, expect_threat in ((math.pi, True), (0.0, False)):
        b = scenario(no_star=True)
        b.place_ship(0, 0, 300.0, 500.0)
        b.place_ship(0, 1, 500.0, 500.0, heading=facing)  # pi: facing ship 0
        assert _tactical(b)[33] == 0.0  # no torpedo yet
        b.step(np.array([[0, 4]]))
        b.step(np.array([[0, 0]]))
        threat = _tactical(b)[33]
        assert (threat > 0.9) if expect_threat else (threat < 0.05)


def test_a_tactical_network_keeps_the_game_constants_it_learned_with(tmp_path):
    """The view reads the game's constants; they are saved with the weights, so a model trained
    on faster torpedoes reads a game the same way after loading, whatever builds it."""
    fast = GameConfig(torpedo_speed=6.0)
    agent = PPOAgent(36, 6, PPOConfig(hidden_sizes=(16,)), game=fast)
    assert agent.view_constants["torpedo_speed"] == 6.0
    agent.save(tmp_path / "fast.pt")
    loaded, _ = load_agent(tmp_path / "fast.pt")
    assert loaded.view_constants == agent.view_constants
    obs = np.random.default_rng(1).normal(size=(32, 36)).astype(np.float32)
    obs[:, 30:] = 1.0
    assert np.array_equal(loaded.features(obs), agent.features(obs))
    assert not np.array_equal(PPOAgent(36, 6, PPOConfig(hidden_sizes=(16,))).features(obs),
                              agent.features(obs))


# --- gravity: ships' paths bend around the star, torpedoes fly straight (1962)


def test_shot_quality_follows_the_orbit_the_star_bends_the_opponent_into():
    """Shot quality ranks real shots (docs/log/probes/shot_quality.py: positions from real games, one
    torpedo fired in a copy) by whether they kill, better with the bend than with straight lines:
    most shots rated above 0.6 kill, almost none rated below 0.2."""
    obs, killed = shot_quality.forked_shots(games=64, decisions=150, every=10)
    assert 40 <= killed.sum() <= len(killed) - 40  # both outcomes are well represented
    bent = view_constants(GameConfig())
    with_bend = shot_quality.rank_quality(obs, killed, bent)
    straight = shot_quality.rank_quality(obs, killed, dict(bent, gravity=0.0))
    assert with_bend["auc"] > 0.97 and with_bend["auc"] > straight["auc"] + 0.02
    assert with_bend["good"] >= 20 and with_bend["good_kills"] > 0.8
    assert with_bend["good_kills"] > straight["good_kills"]
    assert with_bend["bad_kills"] < 0.02


def test_gravity_in_the_view_follows_the_game_and_old_models_keep_straight_lines():
    assert view_constants(GameConfig())["gravity"] == 512.0
    assert view_constants(GameConfig(light_star=True))["gravity"] == 128.0
    assert view_constants(GameConfig(no_star=True))["gravity"] == 0.0
    # Torpedoes that fall too fall alongside the ships: relative paths stay nearly straight.
    assert view_constants(GameConfig(torpedo_gravity=True))["gravity"] == 0.0
    obs, _ = shot_quality.forked_shots(games=16, decisions=60)
    agent = PPOAgent(36, 6, PPOConfig(hidden_sizes=(16,)))
    state = agent.state_dict()
    del state["view_constants"]["gravity"]  # as saved before the view knew of gravity
    old = PPOAgent(36, 6, PPOConfig(hidden_sizes=(16,)))
    old.load_state_dict(state)
    straight = tactical_view(obs, dict(view_constants(), gravity=0.0))
    assert np.array_equal(old.features(obs), straight)
    assert not np.array_equal(agent.features(obs), straight)
    # The shipped model learned with straight lines, and reads them still.
    shipped, _ = load_agent(PRETRAINED_PATH)
    assert shipped.view_constants.get("gravity", 0.0) == 0.0
    assert np.array_equal(shipped.features(obs), straight)
