"""Physics and rules of the engine: orbits, wrap-around, torpedoes, every death cause, rewards."""

import math

import numpy as np
import pytest

from spacewar_ai.config import GameConfig, RewardConfig
from spacewar_ai.game import engine
from spacewar_ai.game.engine import DeathCause
from tests.helpers import cause, run, scenario

C = GameConfig()
R = RewardConfig()
CX, CY = C.width / 2, C.height / 2


def test_coasting_circular_orbit_keeps_its_radius_over_10000_frames():
    b = scenario(frame_skip=1, max_episode_steps=20000)
    r = 256.0
    v = math.sqrt(C.gravity_constant / r)
    b.place_ship(0, 0, CX + r, CY, 0.0, v)
    # Ship 1 on the same orbit, half a turn ahead: the two never meet.
    b.place_ship(0, 1, CX - r, CY, 0.0, -v)
    radii = []
    acts = np.zeros((1, 2), dtype=np.int64)
    for _ in range(10000):
        b.step(acts)
        assert not (b.terminated[0] or b.truncated[0])
        radii.append(math.hypot(b.ship_f[0, 0, engine.SX] - CX, b.ship_f[0, 0, engine.SY] - CY))
    radii = np.array(radii)
    assert np.all(np.abs(radii - r) / r < 0.02), (radii.min(), radii.max())


def test_ships_wrap_around_both_edges():
    b = scenario(no_star=True, frame_skip=1)
    b.place_ship(0, 0, 1023.5, 10.0, 1.0, -11.0)
    b.place_ship(0, 1, 500.0, 500.0)
    run(b)
    assert b.ship_f[0, 0, engine.SX] == pytest.approx(0.5)
    assert b.ship_f[0, 0, engine.SY] == pytest.approx(1023.0)


def test_torpedo_inherits_ship_velocity_and_starts_at_the_nose():
    b = scenario(no_star=True, frame_skip=1)
    b.place_ship(0, 0, 300.0, 300.0, 0.5, 0.25, heading=0.0)
    b.place_ship(0, 1, 800.0, 800.0)
    run(b, a0=4)
    live = np.flatnonzero(b.torp_t[0, 0] > 0)
    assert len(live) == 1
    tx, ty, tvx, tvy = b.torp_f[0, 0, live[0]]
    assert (tvx, tvy) == pytest.approx((0.5 + C.torpedo_speed, 0.25))
    assert tx == pytest.approx(300.5 + GameConfig().torpedo_spawn_offset)
    assert b.ship_i[0, 0, engine.AMMO] == C.max_ammo - 1
    assert b.ship_i[0, 0, engine.COOLDOWN] == C.fire_cooldown - 1


def test_fire_rate_is_one_torpedo_per_reload():
    b = scenario(no_star=True, frame_skip=1, max_episode_steps=10000)
    b.place_ship(0, 0, 100.0, 100.0)
    b.place_ship(0, 1, 600.0, 700.0)
    run(b, a0=4, steps=C.fire_cooldown * 3)
    assert b.ship_i[0, 0, engine.SHOTS] == 3


def _duel():
    """Ship 0 faces ship 1, 80 units away on +x, no star."""
    b = scenario(no_star=True)
    b.place_ship(0, 0, 300.0, 300.0, heading=0.0)
    b.place_ship(0, 1, 380.0, 300.0, heading=math.pi / 2)
    return b


def test_torpedo_kill_rewards_and_info():
    b = _duel()
    total, term, trunc = run(b, a0=4, steps=50)
    assert term and not trunc
    assert cause(b, 1) == DeathCause.TORPEDO and cause(b, 0) == DeathCause.NONE
    assert b.game_i[0, engine.WINNER] == 0 and b.game_i[0, engine.REAL_WINNER] == 0
    steps = b.game_i[0, engine.FRAME] // C.frame_skip + (b.game_i[0, engine.FRAME] % C.frame_skip > 0)
    fuel = b.ship_f[0, 0, engine.SFUEL] / C.max_fuel
    ammo = b.ship_i[0, 0, engine.AMMO] / C.max_ammo
    winner = (steps * R.step_penalty + R.kill_reward + R.win_bonus
              + R.fuel_efficiency_bonus * fuel + R.ammo_efficiency_bonus * ammo)
    loser = steps * R.step_penalty + R.death_penalty + R.lose_penalty
    assert total == pytest.approx([winner, loser])
    assert b.ship_i[0, 0, engine.HITS] == 1


def test_flying_into_the_star_is_suicide():
    b = scenario()
    b.place_ship(0, 0, CX + 40.0, CY, -2.0, 0.0)
    b.place_ship(0, 1, CX - 300.0, CY - 300.0)
    total, term, _ = run(b, steps=20)
    assert term
    assert cause(b, 0) == DeathCause.STAR and cause(b, 1) == DeathCause.NONE
    assert b.game_i[0, engine.WINNER] == 1 and b.game_i[0, engine.REAL_WINNER] == -1
    steps = math.ceil(b.game_i[0, engine.FRAME] / C.frame_skip)
    # The survivor of an opponent's suicide gets nothing extra.
    assert total == pytest.approx([steps * R.step_penalty + R.star_penalty, steps * R.step_penalty])


def test_star_teleports_to_the_corner_with_the_switch():
    b = scenario(star_teleports=True, frame_skip=1)
    b.place_ship(0, 0, CX + 17.0, CY, -2.0, 0.0)
    b.place_ship(0, 1, 100.0, 900.0)
    _, term, _ = run(b)
    assert not term and b.ship_i[0, 0, engine.ALIVE] == 1
    assert (b.ship_f[0, 0, engine.SX], b.ship_f[0, 0, engine.SY]) == (0.0, 0.0)


def test_ship_collision_kills_both_and_is_a_draw():
    b = scenario(no_star=True)
    b.place_ship(0, 0, 300.0, 300.0, 1.0, 0.0)
    b.place_ship(0, 1, 330.0, 300.0, -1.0, 0.0)
    total, term, _ = run(b, steps=20)
    assert term
    assert cause(b, 0) == cause(b, 1) == DeathCause.COLLISION
    assert b.game_i[0, engine.WINNER] == -1
    steps = math.ceil(b.game_i[0, engine.FRAME] / C.frame_skip)
    expected = steps * R.step_penalty + R.collision_penalty + R.draw_penalty
    assert total == pytest.approx([expected, expected])


def test_timeout_truncates_as_a_draw():
    b = scenario(no_star=True, max_episode_steps=40)
    b.place_ship(0, 0, 100.0, 100.0)
    b.place_ship(0, 1, 600.0, 600.0)
    total, term, trunc = run(b, steps=100)
    assert trunc and not term
    assert cause(b, 0) == cause(b, 1) == DeathCause.TIMEOUT
    assert total == pytest.approx([10 * R.step_penalty + R.draw_penalty] * 2)


def test_both_out_of_torpedoes_ends_the_round():
    b = scenario(no_star=True, max_ammo=1)
    b.place_ship(0, 0, 100.0, 100.0, heading=0.0)
    b.place_ship(0, 1, 600.0, 700.0, heading=0.0)
    _, term, trunc = run(b, a0=4, a1=4, steps=100)
    assert term and not trunc
    assert b.game_i[0, engine.END_REASON] == engine.END_NO_AMMO
    assert b.game_i[0, engine.FRAME] == C.torpedo_lifetime + 1


def test_hyperspace_death_and_vanishing():
    # With one jump allowed, the first jump destroys the ship (probability 1/1).
    b = scenario(hyperspace=True, hyperspace_jumps=1, no_star=True)
    b.place_ship(0, 0, 100.0, 100.0)
    b.place_ship(0, 1, 600.0, 600.0)
    total, term, _ = run(b, a0=6)
    assert term and cause(b, 0) == DeathCause.HYPERSPACE
    assert total[0] == pytest.approx(R.step_penalty + R.hyperspace_penalty)
    # With many jumps the first is nearly always survived: the ship vanishes, then reappears.
    b = scenario(hyperspace=True, hyperspace_jumps=10**9, no_star=True, frame_skip=1)
    b.place_ship(0, 0, 100.0, 100.0)
    b.place_ship(0, 1, 600.0, 600.0)
    run(b, a0=6)
    assert b.ship_i[0, 0, engine.HYPER_HIDDEN] > 0
    obs = b.observe()
    assert np.all(obs[0, 1, 9:15] == 0.0), "a ship in hyperspace is invisible"
    assert obs[0, 0, b.mask_columns].tolist() == [1, 0, 0, 0, 0, 0, 0]
    run(b, steps=C.hyperspace_vanish_frames)
    assert b.ship_i[0, 0, engine.HYPER_HIDDEN] == 0 and b.ship_i[0, 0, engine.ALIVE] == 1


def test_each_ship_sees_its_own_and_its_opponents_jumps_left_before_the_mask():
    # They decide where a jump from an orbit lands and how likely a jump fails.
    b = scenario(hyperspace=True, hyperspace_jumps=8, no_star=True)
    assert b.config.obs_dim == 39 and b.mask_columns == slice(32, None)
    b.place_ship(0, 0, 100.0, 100.0)
    b.place_ship(0, 1, 600.0, 600.0)
    b.ship_i[0, 1, engine.JUMPS] = 5  # a start's resources can leave a ship three jumps
    obs = b.observe()
    assert obs[0, 0, engine.OBS_JUMPS:engine.OBS_JUMPS + 2].tolist() == [1.0, 3 / 8]
    assert obs[0, 1, engine.OBS_JUMPS:engine.OBS_JUMPS + 2].tolist() == [3 / 8, 1.0]
    run(b, a0=6)  # one jump: seven left, shown to both ships while it is away
    obs = b.observe()
    assert obs[0, 0, 30:32].tolist() == [7 / 8, 3 / 8]
    assert obs[0, 1, 30:32].tolist() == [3 / 8, 7 / 8]
    assert obs[0, 0, 32:].tolist() == [1, 0, 0, 0, 0, 0, 0]  # only drift while in hyperspace
    assert scenario(no_star=True).config.obs_dim == 36  # no hyperspace: no such columns


def test_masked_action_is_played_as_drift_and_counted():
    b = scenario(no_star=True, max_fuel=0)
    b.place_ship(0, 0, 100.0, 100.0, heading=0.0)
    b.place_ship(0, 1, 600.0, 600.0)
    run(b, a0=3)
    assert b.ship_f[0, 0, engine.SVX] == 0.0
    assert b.ship_i[0, 0, engine.MASKED] == 1


@pytest.mark.parametrize("hyperspace", [False, True])
def test_the_observed_mask_is_what_the_step_accepts(hyperspace):
    # Games in every phase (out of fuel, out of torpedoes, reloading, in hyperspace, jumped
    # out): for each action, the step counts it as masked exactly where the view said 0.
    config = GameConfig(hyperspace=hyperspace, max_fuel=40, max_ammo=4, hyperspace_jumps=3)
    n = 256
    b = engine.GameBatch(n, config)
    b.reset(seeds=np.arange(n))
    rng = np.random.default_rng(3)
    checked = set()
    for _ in range(60):
        obs = b.observe().copy()
        running = b.game_i[:, engine.OVER] == 0
        before = b.state_dict()
        for a in range(config.num_actions):
            b.load_state_dict(before)
            masked = b.ship_i[:, :, engine.MASKED].copy()
            b.step(np.full((n, 2), a))
            counted = b.ship_i[:, :, engine.MASKED] - masked
            allowed = obs[:, :, config.mask_start + a] == 1.0
            assert np.array_equal(counted[running] == 0, allowed[running]), a
            checked.update((a, int(v)) for v in allowed[running].ravel())
        b.load_state_dict(before)
        b.step(rng.integers(0, config.num_actions, size=(n, 2)))
        b.reset(b.game_i[:, engine.OVER] != 0)
    # Every action was seen allowed, and refused wherever a rule refuses it: thrust and fire
    # always can be; turning and jumping only around hyperspace; drifting never.
    refusable = [engine.Action.THRUST, engine.Action.FIRE, engine.Action.THRUST_FIRE]
    if hyperspace:
        refusable += [engine.Action.ROTATE_LEFT, engine.Action.ROTATE_RIGHT,
                      engine.Action.HYPERSPACE]
    assert checked == ({(a, 1) for a in range(config.num_actions)}
                       | {(int(a), 0) for a in refusable})


def test_thrust_accelerates_along_heading_and_burns_fuel():
    b = scenario(no_star=True, frame_skip=1)
    b.place_ship(0, 0, 100.0, 100.0, heading=math.pi / 2)
    b.place_ship(0, 1, 600.0, 600.0)
    run(b, a0=3, steps=10)
    assert b.ship_f[0, 0, engine.SVY] == pytest.approx(10 * C.thrust_power)
    assert abs(b.ship_f[0, 0, engine.SVX]) < 1e-12
    assert b.ship_f[0, 0, engine.SFUEL] == C.max_fuel - 10


def test_rotation_directions_and_angular_momentum_switch():
    b = scenario(no_star=True, frame_skip=1)
    b.place_ship(0, 0, 100.0, 100.0, heading=1.0)
    b.place_ship(0, 1, 600.0, 600.0, heading=1.0)
    run(b, a0=1, a1=2)
    assert b.ship_f[0, 0, engine.SANG] == pytest.approx(1.0 - C.rotation_speed)
    assert b.ship_f[0, 1, engine.SANG] == pytest.approx(1.0 + C.rotation_speed)
    b = scenario(no_star=True, frame_skip=1, angular_momentum=True)
    b.place_ship(0, 0, 100.0, 100.0, heading=1.0)
    b.place_ship(0, 1, 600.0, 600.0)
    run(b, a0=2, steps=4)
    run(b, a0=0, steps=4)
    # Spin keeps going after the button is released.
    spin = 4 * C.rotation_speed * engine.ANGULAR_ACCEL_FRACTION
    assert b.ship_f[0, 0, engine.SANGV] == pytest.approx(spin)


def test_light_star_and_no_star_switches_scale_gravity():
    def pull(**kw):
        b = scenario(frame_skip=1, **kw)
        b.place_ship(0, 0, CX + 256.0, CY)
        b.place_ship(0, 1, CX - 300.0, CY - 300.0)
        run(b)
        return -b.ship_f[0, 0, engine.SVX]

    normal = pull()
    assert normal == pytest.approx(C.gravity_constant / 256.0 ** 2)
    assert normal == pytest.approx(C.thrust_power), "gravity equals full thrust at 256 units"
    assert pull(light_star=True) == pytest.approx(normal / 4)
    assert pull(no_star=True) == 0.0


def test_torpedoes_ignore_gravity_unless_switched_on():
    def torpedo_vy(**kw):
        b = scenario(frame_skip=1, **kw)
        b.place_ship(0, 0, CX, CY - 200.0, heading=0.0)
        b.place_ship(0, 1, CX - 300.0, CY + 300.0)
        run(b, a0=4)
        k = np.flatnonzero(b.torp_t[0, 0])[0]
        at_launch = b.torp_f[0, 0, k, 3]  # the ship's own fall, inherited
        run(b, steps=5)
        return b.torp_f[0, 0, k, 3] - at_launch

    assert torpedo_vy() == 0.0
    assert torpedo_vy(torpedo_gravity=True) > 5 * 0.9 * C.gravity_constant / 200.0 ** 2


def test_torpedoes_destroy_each_other():
    b = scenario(no_star=True, frame_skip=1, max_episode_steps=10000)
    b.place_ship(0, 0, 200.0, 300.0, heading=0.0)
    b.place_ship(0, 1, 500.0, 300.0, heading=math.pi)
    run(b, a0=4, a1=4)
    run(b, steps=60)
    assert b.ship_i[0, 0, engine.ALIVE] == 1 and b.ship_i[0, 1, engine.ALIVE] == 1
    assert not b.torp_t[0].any()


def test_classic_start_positions():
    b = engine.GameBatch(1, GameConfig(start_positions="classic"))
    b.reset()
    f = b.ship_f[0]
    assert (f[0, engine.SX] - CX, f[0, engine.SY] - CY) == (256.0, -256.0)
    assert (f[1, engine.SX] - CX, f[1, engine.SY] - CY) == (-256.0, 256.0)
    assert f[1, engine.SANG] - f[0, engine.SANG] == pytest.approx(math.pi)


def test_orbit_starts_are_opposing_near_circular_orbits():
    b = engine.GameBatch(64, GameConfig())
    b.reset(seeds=np.arange(64))
    f = b.ship_f
    rx, ry = f[:, :, engine.SX] - CX, f[:, :, engine.SY] - CY
    r = np.hypot(rx, ry)
    speed = np.hypot(f[:, :, engine.SVX], f[:, :, engine.SVY])
    assert np.allclose(speed, np.sqrt(C.gravity_constant / r))
    spin = np.sign(rx * f[:, :, engine.SVY] - ry * f[:, :, engine.SVX])
    assert np.all(spin[:, 0] == -spin[:, 1]), "the two ships orbit in opposite senses"
    assert np.allclose(np.arctan2(ry[:, 0], rx[:, 0]), np.arctan2(-ry[:, 1], -rx[:, 1]))


def test_varied_starts_cover_orbits_eccentric_orbits_and_ships_at_rest():
    """Training's mix: half the games begin on circular orbits, a quarter on eccentric ones and
    a quarter at rest (half of those the 1962 start), with varied torpedoes and fuel where the
    start is not an orbit, the same for both ships."""
    n = 2000
    b = engine.GameBatch(n, GameConfig(start_positions="varied"))
    b.reset(seeds=np.arange(n))
    f, i = b.ship_f, b.ship_i
    rx, ry = f[:, :, engine.SX] - CX, f[:, :, engine.SY] - CY
    r = np.hypot(rx, ry)
    speed = np.hypot(f[:, :, engine.SVX], f[:, :, engine.SVY])
    rest = (speed == 0).all(1)
    circular = np.isclose(speed, np.sqrt(C.gravity_constant / r)).all(1)
    classic = rest & (rx[:, 0] == 256.0) & (ry[:, 0] == -256.0)
    eccentric = ~rest & ~circular
    assert abs(circular.mean() - 0.5) < 0.05 and abs(eccentric.mean() - 0.25) < 0.04
    assert abs(rest.mean() - 0.25) < 0.04 and abs(classic.mean() - 0.125) < 0.03
    full = ((i[:, :, engine.AMMO] == C.max_ammo).all(1)
            & (f[:, :, engine.SFUEL] == C.max_fuel).all(1))
    assert full[circular | classic].all() and not full[eccentric | (rest & ~classic)].all()
    assert (i[:, 0, engine.AMMO] == i[:, 1, engine.AMMO]).all()  # a fair start: the same share
    again = engine.GameBatch(n, GameConfig(start_positions="varied"))
    again.reset(seeds=np.arange(n))
    assert np.array_equal(again.ship_f, f)  # seeded, as every start


def test_death_causes_print_by_name_as_in_the_original_diagnostic(capsys):
    """The original design's diagnostic: step_both(3, 3) until the game ends, then print the death
    causes. They print as names (COLLISION, TORPEDO, ...), not numbers."""
    from spacewar_ai import SpacewarEnv

    env = SpacewarEnv(opponent=None)
    env.reset(seed=0)
    done = False
    while not done:
        _, _, term, trunc, info = env.step_both(3, 3)
        done = term or trunc
    print(info["ship_0_death_cause"], info["ship_1_death_cause"])
    printed = capsys.readouterr().out.split()
    names = {c.name for c in engine.DeathCause} | {"None"}
    assert set(printed) <= names and any(p != "None" for p in printed), printed
    assert f"{engine.DeathCause.COLLISION}" == str(engine.DeathCause.COLLISION) == "COLLISION"


def test_counting_dodges_changes_no_game():
    """Dodges are a statistic: a batch that counts them plays the same games, bit for bit, as one
    that does not; only the count differs. The vector env reports it only when asked."""
    from spacewar_ai.game.replays import state_hash

    rng = np.random.default_rng(5)
    actions = rng.integers(0, 6, size=(300, 64, 2))
    batches = [engine.GameBatch(64, count_dodges=flag) for flag in (True, False)]
    for b in batches:
        b.reset(seeds=np.arange(64, dtype=np.int64))
        for a in actions:
            b.step(a)
            b.reset(b.terminated | b.truncated)
    assert [state_hash(batches[0], g) for g in range(64)] == \
        [state_hash(batches[1], g) for g in range(64)]
    assert batches[0].stats[:, :, engine.DODGED].sum() > 0
    assert batches[1].stats[:, :, engine.DODGED].sum() == 0

    from spacewar_ai.game.environment import SpacewarVectorEnv

    for flag in (True, False):
        env = SpacewarVectorEnv(8, opponent="heuristic:hard", count_dodges=flag)
        env.reset(seed=1)
        while True:
            *_, info = env.step(np.full(8, 4))
            if "final_info" in info:
                assert ("dodged" in info["final_info"]) == flag
                break


def test_actions_of_any_layout_or_integer_type_play_the_same_games_without_a_new_compile():
    """A transposed, strided or int32 array of actions plays what the C-ordered int64 one plays,
    and costs no compile of a step of its own (many seconds the first time a process meets it)."""
    from spacewar_ai.game.replays import state_hash

    actions = np.random.default_rng(9).integers(0, 6, size=(40, 16, 2))
    layouts = (lambda a: a, lambda a: np.asfortranarray(a).astype(np.int32),
               lambda a: np.repeat(a, 2, axis=0)[::2])
    batches = [engine.GameBatch(16) for _ in layouts]
    for b in batches:
        b.reset(seeds=np.arange(16, dtype=np.int64))
    batches[0].step(actions[0])  # the usual layout, compiled or read from the cache
    known = len(engine.step_games.signatures)
    for b, layout in zip(batches[1:], layouts[1:]):
        b.step(layout(actions[0]))
    for a in actions[1:]:
        for b, layout in zip(batches, layouts):
            b.step(layout(a))
    assert len(engine.step_games.signatures) == known
    played = [[state_hash(b, g) for g in range(16)] for b in batches]
    assert played[1] == played[0] and played[2] == played[0]


def test_the_warm_ups_compile_every_version_the_envs_and_matches_step_with():
    """What a first step compiles after the warm-ups is compiled without the notice: in a fresh
    process, a Gymnasium env's steps (no dodge count, some games observed) and a match's batch
    (dodges counted) use only versions of the step and the observation the warm-ups made."""
    import subprocess
    import sys

    script = (
        "import numpy as np, gymnasium as gym, spacewar_ai\n"
        "from spacewar_ai.game import engine\n"
        "engine.GameBatch(1)\n"
        "made = [len(f.signatures) for f in (engine.step_games, engine.write_observations)]\n"
        "env = gym.make_vec('Spacewar-v0', num_envs=2, vectorization_mode='vector_entry_point')\n"
        "env.reset(seed=0)\n"
        "for _ in range(200):\n"
        "    env.step(np.full(2, 4))\n"
        "b = engine.GameBatch(2)\n"
        "b.reset(seeds=np.arange(2)); b.step(np.zeros((2, 2), dtype=np.int64)); b.observe()\n"
        "print(made)\n"
        "print([len(f.signatures) for f in (engine.step_games, engine.write_observations)])\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr
    made, used = out.stdout.strip().splitlines()[-2:]
    assert made == used == "[2, 2]", out.stdout
