"""rllib_sw:PATH, the peer project's agent: its file read safely, its view of our game, and the
pilot in every mode that plays games. The files here have the released layout and random
weights (the real ones are not ours to ship)."""

from __future__ import annotations

import collections
import math
import os
import pickle

import numpy as np
import pytest

from spacewar_ai.config import GameConfig
from spacewar_ai.game import controls, engine
from spacewar_ai.pilots import make_pilot
from spacewar_ai.pilots.rllib_sw import (
    MODULE_PATHS,
    WRAP,
    A,
    RllibSwPilot,
    _layout,
    _ships,
    copy_peer_state,
    from_peer,
    load_module_state,
    peer_observations,
    to_peer,
)
from spacewar_ai.rating.match import play_match
from tests.commands import cli

PRESET = GameConfig.preset("rllib_sw")
SWITCHES = GameConfig.from_dict({"rules": "rllib_sw", "controls": "switches"})


def peer_file(path, emb=16, ff=32, hidden=24, seed=0, drop=None):
    """A module_state.pkl of the released layout (actor and critic) with random weights, pickled
    as RLlib pickles it (protocol 5, arrays in the stream)."""
    rng = np.random.default_rng(seed)
    sizes = {A + "embs.self.weight": np.zeros((emb, 16)), A + "mha.0.ff.0.weight":
             np.zeros((ff, emb)), "pi.net.mlp.0.weight": np.zeros((hidden, emb))}
    state = collections.OrderedDict()
    for key, shape in _layout(sizes).items():
        state[key] = (rng.normal(size=shape) * 0.3).astype(np.float32)
        if key.startswith(A):  # the critic's copy, which the pilot leaves alone
            state[key.replace("actor_encoder", "critic_encoder")] = state[key].copy()
    state["vf.net.mlp.6.weight"] = np.zeros((1, hidden), np.float32)
    if drop:
        del state[drop]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(state, protocol=5))
    return path


class Payload:
    """What a hostile file would hold: a call made while it is unpickled."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_released_layout_file_or_its_folder_plays_in_both_controls(tmp_path):
    path = peer_file(tmp_path / "pfsp" / "module_state.pkl")
    folder = tmp_path / "1111"
    peer_file(folder / MODULE_PATHS[1])
    for spec in (f"rllib_sw:{path}", f"rllib_sw:{path.parent}", f"rllib_sw:{folder}"):
        for config in (PRESET, SWITCHES):
            r = play_match(spec, "heuristic:hard", 4, seed=1, config=config)
            assert r.n == 4 and r.name_a.startswith("rllib_sw:")
    # The same file, seed and game give the same games; sampling differs from the argmax but
    # repeats itself.
    one = play_match(f"rllib_sw:{path}", "heuristic:medium", 6, seed=2, config=SWITCHES)
    two = play_match(f"rllib_sw:{path}", "heuristic:medium", 6, seed=2, config=SWITCHES)
    assert [g.frames for g in one.games] == [g.frames for g in two.games]
    pilot = make_pilot(f"rllib_sw:{path}", SWITCHES, seed=5, deterministic=False)
    batch = engine.GameBatch(8, SWITCHES)
    batch.reset(seeds=np.arange(8))
    pilot.attach(batch, 0)
    drawn = pilot.choices()
    again = make_pilot(f"rllib_sw:{path}", SWITCHES, seed=5, deterministic=False)
    again.attach(batch, 0)
    assert (again.choices() == drawn).all()
    greedy = make_pilot(f"rllib_sw:{path}", SWITCHES)
    greedy.attach(batch, 0)
    assert drawn.shape == greedy.choices().shape == (8, 4)


def test_a_game_decides_the_same_alone_as_in_a_batch(tmp_path):
    """Torpedo slots that are empty in one game but not another are left out of attention, so
    a game's logits do not depend on the games beside it."""
    pilot = RllibSwPilot(peer_file(tmp_path / "m.pkl"), "x", SWITCHES)
    batch = engine.GameBatch(6, SWITCHES)
    batch.reset(seeds=np.arange(6))
    for _ in range(12):  # everybody fires: torpedo counts differ between games
        batch.step(np.where(np.arange(12).reshape(6, 2) % 3 == 0, controls.SW_FIRE, 0))
    pilot.attach(batch, 0)
    together = pilot.logits()
    for g in range(6):
        alone = engine.GameBatch(1, SWITCHES)
        alone.load_state_dict({k: v[g:g + 1] for k, v in batch.state_dict().items()})
        pilot.attach(alone, 0)
        assert np.allclose(pilot.logits()[0], together[g], atol=1e-5)
    assert (batch.torp_t[:, 0] > 0).sum(1).std() > 0  # the games did hold different torpedoes


def test_its_view_of_the_fixed_start():
    """The peer's start, both ships at rest on the diagonal: the star, the opponent and the
    counters as its environment describes them (its units: the screen is sqrt(2) wide)."""
    batch = engine.GameBatch(1, PRESET)
    batch.reset(seeds=np.array([0]))
    batch.place_ship(0, 0, 256.0, 256.0, heading=0.0)
    batch.place_ship(0, 1, 700.0, 650.0, heading=math.pi)
    own, opponent, (mine, mine_on), _ = peer_observations(batch, np.array([0]))
    quarter = 0.5 * WRAP
    assert own[0, :2] == pytest.approx([quarter, quarter])  # the star, ahead and to the side
    assert own[0, 2:4] == pytest.approx([0.0, 0.0])
    assert own[0, 6] == pytest.approx(1.0)  # a full load of torpedoes
    assert own[0, 8] == pytest.approx(1.0)  # a full tank (1024 frames, as there)
    assert own[0, 9] == pytest.approx(1.0)  # every hyperspace charge
    unit = 2 * WRAP / 1024
    assert opponent[0, :2] == pytest.approx([444 * unit, 394 * unit])
    assert opponent[0, 16:18] == pytest.approx([-188 * unit, -138 * unit])
    assert not mine_on.any()
    batch.step(np.array([[engine.Action.FIRE, 0]]))
    *_, (mine, mine_on), _ = peer_observations(batch, np.array([0]))
    assert mine_on[0].sum() == 1
    k = mine_on[0].argmax()
    assert mine[0, k, 1] == pytest.approx(0.0, abs=1e-3)  # ahead of the nose (gravity bends)
    assert mine[0, k, 4] == pytest.approx(batch.torp_t[0, 0, k] / 96)


def test_a_hostile_or_foreign_file_is_refused_in_one_line_before_anything_runs(tmp_path):
    marker = tmp_path / "ran"
    poisoned = tmp_path / "evil.pkl"
    poisoned.write_bytes(pickle.dumps(collections.OrderedDict(x=Payload(marker)), protocol=5))
    short = peer_file(tmp_path / "short.pkl", drop="pi.net.mlp.6.bias")
    other = tmp_path / "other.pkl"
    other.write_bytes(pickle.dumps({"weights": [1, 2, 3]}))
    for path, says in ((poisoned, "posix.system"), (short, "pi.net.mlp.6.bias is missing"),
                       (other, "holds no arrays by name"), (tmp_path, "holds no module_state")):
        out = cli("--evaluate", "--checkpoint", f"rllib_sw:{path}", "--eval-episodes", "2")
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0] and "Traceback" not in out.stderr, lines
    assert not marker.exists()
    with pytest.raises(ValueError, match="never holds"):
        load_module_state(poisoned)


def test_it_plays_evaluate_and_a_tournament_under_a_config(tmp_path):
    path = peer_file(tmp_path / "m.pkl")
    config = tmp_path / "peer.toml"
    config.write_text('[game]\nrules = "rllib_sw"\ncontrols = "switches"\n')
    out = cli("--evaluate", "--checkpoint", f"rllib_sw:{path}", "--opponent", "heuristic:hard",
              "--eval-episodes", "4", "--config", config, "--quiet", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "rllib_sw:m.pkl vs heuristic:hard: 4 games" in out.stdout
    assert "not added to the ratings file" in out.stdout
    out = cli("--tournament", "--players", f"rllib_sw:{path},heuristic:easy,idle",
              "--matches-per-pairing", "2", "--config", config, "--workers", "1", "--quiet",
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "rllib_sw:m.pkl" in out.stdout


def test_the_network_shipped_for_the_peer_rules_and_its_planner():
    """pretrained:rllib_sw, trained under the peer's rules with the switches (never against the
    peer's agent), flies there alone and under a planner that forecasts with its run's model;
    a rule set with no shipped network is refused in one line naming those there are."""
    from spacewar_ai.pilots import check_spec

    spec = check_spec("pretrained:rllib_sw")
    assert spec.path.parent.name == "rllib_sw"
    assert (spec.path.parent / "opponent_model.pt").is_file()
    # It beats the hard pilot there (about four games in five): enough games that a network
    # that only matched it would fail.
    r = play_match("pretrained:rllib_sw", "heuristic:hard", 40, seed=3, config=SWITCHES)
    assert r.name_a == "pretrained:rllib_sw" and r.wins_a >= 26
    planner = make_pilot("search:pretrained:rllib_sw@samples=2@horizon=10", SWITCHES)
    assert "+opponent_model@" in planner.identity  # its run's model, not the 1962 hard pilot's
    with pytest.raises(ValueError, match="no network is shipped for rules 'classic'; use "
                                         "pretrained"):
        check_spec("pretrained:classic")
    with pytest.raises(ValueError, match="trained on 46-float observations"):
        make_pilot("pretrained:rllib_sw", GameConfig())


class Recording(RllibSwPilot):
    """The peer's pilot, keeping what it was asked: the size of the batch it read and its moves."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.asked = []

    def act(self, obs, active=None):
        moves = super().act(obs, active)
        self.asked.append((self._batch.n, moves.copy(), active))
        return moves


def test_a_planner_forecasts_the_opponent_with_the_peer_agent(tmp_path):
    """`search:SPEC+rllib_sw:PATH`: the peer's agent reads each of the planner's copies of the
    game, so its first forecast in every copy is the move it makes in the real game."""
    from spacewar_ai.pilots import check_spec
    from spacewar_ai.pilots.search import SearchPilot

    folder = peer_file(tmp_path / "pfsp" / "module_state.pkl").parent
    assert check_spec(f"search:heuristic:hard+rllib_sw:{folder}").models[0].kind == "rllib_sw"
    batch = engine.GameBatch(3, SWITCHES)
    batch.reset(seeds=np.arange(3))
    for _ in range(15):
        batch.step(np.where(np.arange(6).reshape(3, 2) % 2 == 0, controls.SW_FIRE, 0))
    model = Recording(folder / "module_state.pkl", "model", SWITCHES)
    planner = SearchPilot(make_pilot("heuristic:hard", SWITCHES), model, SWITCHES, horizon=3,
                          samples=2, jitter=0.1)
    planner.attach(batch, 0)
    planner.act(batch.observe()[:, 0])
    copies, first, active = model.asked[0]
    per = SWITCHES.num_actions * 2
    assert copies == 3 * per and active.all()
    real = RllibSwPilot(folder / "module_state.pkl", "real", SWITCHES)
    real.attach(batch, 1)
    assert (first == np.repeat(real.act(batch.observe()[:, 1]), per)).all()
    # It forecasts every decision of the rollouts, reading the copies as they move on.
    assert len(model.asked) == 3 and all(n == copies for n, _, _ in model.asked)
    assert not (model.asked[1][1] == first).all()


def test_a_planner_with_the_peer_agent_as_its_model_plays_from_the_command_line(tmp_path):
    folder = peer_file(tmp_path / "pfsp" / "module_state.pkl").parent
    config = tmp_path / "peer.toml"
    config.write_text('[game]\nrules = "rllib_sw"\ncontrols = "switches"\n')
    planner = f"search:heuristic:hard+rllib_sw:{folder}@samples=2@horizon=4@jitter=0.1"
    out = cli("--evaluate", "--checkpoint", planner, "--opponent", f"rllib_sw:{folder}",
              "--eval-episodes", "2", "--config", config, "--quiet", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "2 games" in out.stdout
    # The peer's agent as the planner's own policy reads the copies the same way.
    r = play_match(f"search:rllib_sw:{folder}@samples=1@horizon=3", "heuristic:easy", 2, seed=1,
                   config=SWITCHES)
    assert r.n == 2 and r.name_a.startswith("search:rllib_sw:")
    for spec, says in ((f"search:heuristic:hard+rllib_sw:{tmp_path / 'none'}",
                        "its opponent model"),
                       (f"search:heuristic:hard+rllib_sw:{folder}+heuristic:hard@choose=1",
                        "drop @choose=1"),
                       (f"adapt:heuristic:hard+rllib_sw:{folder}", "must be a PPO model")):
        out = cli("--evaluate", "--checkpoint", spec, "--opponent", "heuristic:easy",
                  "--eval-episodes", "2", "--config", config, cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], lines


def test_the_peers_state_and_moves_map_both_ways():
    """A game of ours in the middle of a fight, seen as the peer's environment holds it (its
    units, degrees and counters, as the pilot reads them) and copied back into a fresh batch,
    is the same game; every move of the peer's is one of our actions and back, in both
    controls."""
    from types import SimpleNamespace

    from spacewar_ai.pilots.rllib_sw import RECHARGE, REENTRY

    batch = engine.GameBatch(1, PRESET)
    batch.reset(seeds=np.array([5]))
    rng = np.random.default_rng(0)
    for _ in range(60):  # turning, burning, firing and jumping
        batch.step(rng.integers(0, PRESET.num_actions, size=(1, 2)))
        if batch.game_i[0, engine.OVER]:
            break
    pos, vel, deg, _, _ = _ships(batch)
    f, i = batch.ship_f[0], batch.ship_i[0]
    live = batch.torp_t[0] > 0
    env = SimpleNamespace(time=int(batch.game_i[0, engine.FRAME]), playerShips=[
        SimpleNamespace(pos=pos[0, s], vel=vel[0, s], ang=deg[0, s], fuel=f[s, engine.SFUEL],
                        stored_missiles=i[s, engine.AMMO], reloadTime=i[s, engine.COOLDOWN],
                        h_charges=PRESET.hyperspace_jumps - i[s, engine.JUMPS],
                        stochastic_hspace=i[s, engine.JUMP_KIND] == engine.JUMP_RANDOM,
                        h_reload=i[s, engine.HYPER_HIDDEN] + RECHARGE - REENTRY
                        if i[s, engine.HYPER_HIDDEN] else i[s, engine.HYPER_RECHARGE])
        for s in (0, 1)], missiles=[[
            SimpleNamespace(pos=_ships_position(batch.torp_f[0, s, k, :2]),
                            vel=batch.torp_f[0, s, k, 2:] * 2 * WRAP / 1024.0,
                            life=batch.torp_t[0, s, k])
            for k in np.flatnonzero(live[s])] for s in (0, 1)])
    copy = engine.GameBatch(1, PRESET)
    copy.reset(seeds=np.array([7]))  # on orbits: its ships jump to the mirror until copied
    copy_peer_state(env, copy)
    fields = [engine.SX, engine.SY, engine.SVX, engine.SVY, engine.SANG, engine.SFUEL]
    np.testing.assert_allclose(copy.ship_f[0][:, fields], f[:, fields], atol=1e-9)
    kept = [engine.AMMO, engine.COOLDOWN, engine.JUMPS, engine.HYPER_HIDDEN,
            engine.HYPER_RECHARGE, engine.JUMP_KIND]
    assert (copy.ship_i[0][:, kept] == i[:, kept]).all()
    assert live.sum() > 0 and (copy.torp_t[0] > 0).sum() == live.sum()
    for s in (0, 1):
        np.testing.assert_allclose(copy.torp_f[0, s, :live[s].sum()], batch.torp_f[0, s][live[s]],
                                   atol=1e-9)

    moves = np.array([[t, r, f, j] for t in (0, 1) for r in (0, 1, 2) for f in (0, 1)
                      for j in (0, 1)])
    switches = from_peer(*moves.T, "switches")
    assert len(set(switches.tolist())) == len(moves) - 3 * 2 * 2 + 2 * 2  # a jump turns nothing
    again = to_peer(switches, "switches")
    assert (again[moves[:, 3] == 0] == moves[moves[:, 3] == 0]).all()
    six = from_peer(*moves.T, "six")
    assert set(six.tolist()) == set(range(7))
    assert (to_peer(np.arange(7), "six") == [[0, 0, 0, 0], [0, 1, 0, 0], [0, 2, 0, 0],
                                             [1, 0, 0, 0], [0, 0, 1, 0], [1, 0, 1, 0],
                                             [0, 0, 0, 1]]).all()


def _ships_position(xy):
    """A position of ours in the peer's units (centred on the star, as _ships gives it)."""
    return (np.asarray(xy) - 512.0) * 2 * WRAP / 1024.0
