"""Search at play time (search.py): the planner beats the policy it looks ahead with, its shipped
opponent model predicts the hard pilot, it plays wherever the games tell it their state (matches,
SpacewarEnv, human play) and the same way in any batch, and it refuses what it cannot do."""

import numpy as np
import pytest

from spacewar_ai.agents.saved import load_agent
from spacewar_ai.config import GameConfig
from spacewar_ai.game import engine
from spacewar_ai.game.controls import SW_HYPERSPACE
from spacewar_ai.game.environment import SpacewarEnv
from spacewar_ai.pilots.build import file_identity, make_pilot, search_pilot
from spacewar_ai.pilots.scripted import HeuristicPilot
from spacewar_ai.pilots.search import HORIZON, JITTER, SAMPLES, SearchPilot
from spacewar_ai.pilots.spec import OPPONENT_MODEL_PATH
from spacewar_ai.rating.match import play_match
from tests.commands import cli

CFG = GameConfig()


def _planner(horizon, samples, seed=0):
    return search_pilot("pretrained", CFG, seed, horizon=horizon, samples=samples)


@pytest.mark.slow
def test_the_planner_beats_the_policy_it_looks_ahead_with():
    alone = play_match(make_pilot("pretrained", CFG), "heuristic:hard", 40, seed=2000)
    planned = play_match(_planner(30, 2), "heuristic:hard", 40, seed=2000)
    # Measured: 26 of 40 alone, 36 of 40 with a short lookahead (30 decisions, 2 samples).
    assert planned.wins_a >= alone.wins_a + 6 and planned.wins_a >= 32, \
        (alone.wins_a, planned.wins_a)


def test_the_shipped_opponent_model_predicts_the_hard_pilot():
    model, _ = load_agent(OPPONENT_MODEL_PATH, "cpu", None, CFG.obs_dim)
    hard, policy = HeuristicPilot("hard", CFG), make_pilot("pretrained", CFG)
    games = engine.GameBatch(64, CFG)
    games.reset(seeds=np.arange(50_000, 50_064))  # starts the model was not fitted on
    seen, said = [], []
    while not games.game_i[:, engine.OVER].all():
        obs = games.observe()
        running = games.game_i[:, engine.OVER] == 0
        moves = np.stack([policy.act(obs[:, 0]), hard.act(obs[:, 1])], axis=1)
        seen.append(obs[running, 1].copy())
        said.append(moves[running, 1])
        games.step(moves)
    seen, said = np.concatenate(seen), np.concatenate(said)
    agreement = float(np.mean(model.select_action(seen, deterministic=True) == said))
    assert len(said) > 2000 and agreement > 0.95, (len(said), agreement)


@pytest.mark.slow
def test_the_spec_names_the_opponent_model_and_the_right_one_pays():
    opponent = make_pilot("pretrained", CFG)
    default = search_pilot("pretrained", CFG, 0, horizon=40, samples=2)
    exact = search_pilot("pretrained+pretrained", CFG, 0, horizon=40, samples=2)
    named = make_pilot("search:pretrained+pretrained@horizon=40@samples=2", CFG)
    assert named.identity == exact.identity == \
        f"search:{opponent.identity}+{opponent.identity}@samples=2@horizon=40"
    assert default.opponent_model.identity == file_identity(OPPONENT_MODEL_PATH)
    with_hard_model = play_match(default, opponent, 60, seed=3000)
    with_exact_model = play_match(exact, opponent, 60, seed=3000)
    # Measured: 35 of 60 with the model of the hard pilot, 48 with the opponent's own network.
    assert with_exact_model.wins_a >= with_hard_model.wins_a + 8 \
        and with_exact_model.wins_a >= 44, (with_hard_model.wins_a, with_exact_model.wins_a)


@pytest.mark.slow
def test_a_game_is_planned_the_same_alone_and_in_a_batch():
    alone = play_match(_planner(12, 2), "heuristic:hard", 2, seed=10)
    batch = play_match(_planner(12, 2), "heuristic:hard", 6, seed=8)
    # The lookahead changed at least one of these games (measured: both; the first, a loss
    # without it, becomes a win), so what is compared below is the planner's play, not the
    # policy's alone.
    policy = play_match(make_pilot("pretrained", CFG), "heuristic:hard", 2, seed=10)
    assert any((p.frames, p.real_winner) != (m.frames, m.real_winner)
               for p, m in zip(policy.games, alone.games))
    # Seed 10 is game 2 of the batch with the planner as ship 0 and game 5 with it as ship 1.
    for mine, theirs in ((alone.games[0], batch.games[2]), (alone.games[1], batch.games[5])):
        assert (mine.seed, mine.a_side) == (theirs.seed, theirs.a_side)
        assert (mine.frames, mine.real_winner, mine.shots_a, mine.shots_b) == \
            (theirs.frames, theirs.real_winner, theirs.shots_a, theirs.shots_b)


def test_a_planner_opponent_in_spacewar_env_kills_a_drifting_ship():
    planner = _planner(20, 2)
    env = SpacewarEnv(CFG, opponent=planner)
    env.reset(seed=3)
    done, info, steps, planned = False, {}, 0, 0
    while not done:
        planner.last_values = planner.last_values[:0]  # cleared: filled again only by planning
        _, _, term, trunc, info = env.step(0)
        planned += planner.last_values.shape[0]
        steps += 1
        done = term or trunc
    assert info["real_winner"] == 1
    assert planned == steps  # it looked ahead at every decision of the game


def test_human_play_plans_at_the_decision_pace(tmp_path):
    from spacewar_ai.human.play import HumanGame, Opponent

    pilot = _planner(60, 2)
    game = HumanGame(CFG, Opponent(pilot, pilot.name, "test"),
                     replay_dir=tmp_path / "replays", save_replays=False)
    try:
        for _ in range(10 * CFG.frame_skip):  # 10 decisions in; the next is due at this frame
            game.tick()
        state = game.batch.state_dict()
        game.tick()
    finally:
        game.close()
    # The same planner in a game stepped a decision (frame_skip frames) at a time, as in
    # matches, decides the same: the window's one-frame steps do not shorten its lookahead.
    same = engine.GameBatch(1, CFG)
    same.load_state_dict(state)
    reference = _planner(60, 2)
    reference.attach(same, 1)
    assert game._ai_action[1] == int(reference.act(same.observe()[:, 1])[0])
    assert np.array_equal(pilot.last_values, reference.last_values)
    # A planner stepping its copies a frame at a time, as the window's batch does, foresees
    # something else (60 frames instead of 60 decisions): the comparison can fail.
    frames = SearchPilot(reference.policy, reference.opponent_model, game.config, 60, 2)
    frames.attach(same, 1)
    frames.act(same.observe()[:, 1])
    assert not np.array_equal(frames.last_values, reference.last_values)


def test_endings_are_valued_as_the_tables_count_them():
    from spacewar_ai.pilots.search import DRAW, LOSS, WIN, ending_value

    # (killer, survivor) from ship 0's side: its torpedo kill; a torpedo from ship 1; ship 0 in
    # the star (ship 1 lives); ship 1 in the star (no torpedo win); both dead or a timeout.
    killer = np.array([0, 1, -1, -1, -1])
    survivor = np.array([0, 1, 1, 0, -1])
    assert ending_value(killer, survivor, np.zeros(5, dtype=np.int64)).tolist() == \
        [WIN, LOSS, LOSS, DRAW, DRAW]
    # The same games from ship 1's side.
    assert ending_value(killer, survivor, np.ones(5, dtype=np.int64)).tolist() == \
        [LOSS, WIN, DRAW, LOSS, DRAW]


def test_a_planner_that_is_not_told_its_game_refuses_to_guess():
    pilot = _planner(30, 2)
    with pytest.raises(RuntimeError, match="not as a training opponent"):
        pilot.act(np.zeros((1, CFG.obs_dim), dtype=np.float32))


def test_without_a_model_the_planner_forecasts_with_a_stand_in_that_reads_the_game(tmp_path):
    """The shipped clone of the hard pilot reads the default game's observations (and flies the
    switches through the six actions); in a game whose observations it cannot read, a planner
    with no model of its own forecasts with the hard pilot itself, and plays; an adapting one,
    which learns a network, is told to name one of that game."""
    switches = GameConfig.preset("rllib_sw").changed(controls="switches")
    assert search_pilot("heuristic:hard", switches).opponent_model.identity == \
        file_identity(OPPONENT_MODEL_PATH)
    hyperspace = GameConfig(hyperspace=True)
    assert search_pilot("heuristic:hard", hyperspace).opponent_model.identity == \
        make_pilot("heuristic:hard", hyperspace).identity
    # Nor can the adapting planner learn from the hard pilot's code.
    with pytest.raises(ValueError, match="cannot read this game's observations; name one "
                                         "trained in it: adapt:heuristic:hard\\+PATH"):
        search_pilot("heuristic:hard", hyperspace, adaptive=True)
    (tmp_path / "hs.toml").write_text("[game]\nhyperspace = true\n")
    done = cli("--evaluate", "--checkpoint", "search:heuristic:hard@samples=1@horizon=8",
               "--opponent", "heuristic:medium", "--config", "hs.toml", "--eval-episodes", "2",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 games, sides swapped" in done.stdout


def test_bad_specs_and_settings_are_named(tmp_path):
    with pytest.raises(ValueError, match="cannot plan over another planner"):
        make_pilot("search:search:pretrained", CFG)
    with pytest.raises(ValueError, match="no such checkpoint"):
        make_pilot(f"search:{tmp_path / 'nope.pt'}", CFG)
    with pytest.raises(ValueError, match="opponent model .*missing.pt does not exist; reinstall"):
        search_pilot("pretrained", CFG, opponent_model=tmp_path / "missing.pt")
    with pytest.raises(ValueError, match="nothing after '\\+'"):
        make_pilot("search:pretrained+ ", CFG)
    with pytest.raises(ValueError, match="cannot plan over another planner"):
        make_pilot("search:pretrained+search:pretrained", CFG)
    # Pilots that answer a few games at a time cannot fly a planner's thousands of copies.
    with pytest.raises(ValueError, match="is a strategy file.* --warm-start strategy:"):
        make_pilot("search:pretrained+strategy:examples/strategies/aim_and_fire.py", CFG)
    with pytest.raises(ValueError, match="is a language model.*plan over a scripted pilot"):
        make_pilot("search:lm:sft+heuristic:hard", CFG)
    with pytest.raises(ValueError, match="unknown setting 'depth' after @; the settings are"):
        make_pilot("search:heuristic:hard@depth=3", CFG)
    with pytest.raises(ValueError, match="samples='0' is invalid: must be an integer >= 1"):
        make_pilot("search:heuristic:hard@samples=0", CFG)
    with pytest.raises(ValueError, match="jitter='1.5' is invalid"):
        make_pilot("search:heuristic:hard@jitter=1.5", CFG)
    with pytest.raises(ValueError, match="horizon is set twice"):
        make_pilot("search:heuristic:hard@horizon=3@horizon=4", CFG)
    with pytest.raises(ValueError, match="samples of a pilot that is not a PPO model are all "
                                         "one game; give it jitter"):
        make_pilot("search:heuristic:hard+heuristic:hard@jitter=0", CFG)
    with pytest.raises(ValueError, match="adapt: learns one model of the opponent"):
        make_pilot("adapt:pretrained+pretrained+heuristic:hard", CFG)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="its opponent model: .*junk.pt"):
        make_pilot(f"search:pretrained+{tmp_path / 'junk.pt'}", CFG)
    with pytest.raises(ValueError, match="its opponent model .*nope.pt does not exist"):
        make_pilot(f"search:pretrained+{tmp_path / 'nope.pt'}", CFG)
    policy = make_pilot("pretrained", CFG)
    with pytest.raises(ValueError, match="horizon=0 is invalid"):
        SearchPilot(policy, policy, CFG, horizon=0)
    with pytest.raises(ValueError, match="all one game; give it jitter"):
        SearchPilot(HeuristicPilot("hard", CFG), policy, CFG, samples=2)


def test_a_planner_over_the_hard_pilot_beats_it_and_repeats_itself():
    """The planner over a scripted pilot, its model of the opponent that pilot's own rules:
    it wins more of the same games than the pilot it plans over, and a seed gives its games
    bit for bit, whichever of its settings the spec names."""
    spec = "search:heuristic:hard+heuristic:hard@samples=4@horizon=30"
    planner = make_pilot(spec, CFG, seed=3)
    assert (planner.samples, planner.horizon, planner.jitter) == (4, 30, 0.05)
    assert planner.name == planner.identity == spec
    alone = play_match(make_pilot("heuristic:hard", CFG), "heuristic:hard", 12, seed=31337)
    planned = play_match(planner, "heuristic:hard", 12, seed=31337)
    again = play_match(make_pilot(spec, CFG, seed=3), "heuristic:hard", 12, seed=31337)
    # Measured: the hard pilot wins 6 of its 12 games against itself, the planner 10.
    assert planned.wins_a >= alone.wins_a + 3, (alone.wins_a, planned.wins_a)
    assert [(g.frames, g.real_winner) for g in planned.games] == \
        [(g.frames, g.real_winner) for g in again.games]
    other_seed = play_match(make_pilot(spec, CFG, seed=4), "heuristic:hard", 12, seed=31337)
    assert [(g.frames, g.real_winner) for g in other_seed.games] != \
        [(g.frames, g.real_winner) for g in planned.games]


def test_the_defaults_and_a_mix_of_models():
    """A scripted policy's planner jitters by default; its name keeps to what the spec said and
    its identity (what ratings key on) names every setting that is not a default; a mix of
    models shares each action's samples among its members."""
    plain = make_pilot("search:heuristic:hard+heuristic:hard", CFG)
    assert (plain.samples, plain.horizon, plain.jitter) == (SAMPLES, HORIZON, JITTER)
    assert plain.identity == "search:heuristic:hard+heuristic:hard"
    learned = make_pilot("search:pretrained@horizon=20", CFG)
    assert learned.jitter == 0.0 and learned.identity.endswith("@horizon=20")
    assert make_pilot("search:pretrained@samples=8", CFG).identity == \
        make_pilot("search:pretrained", CFG).identity  # a default named is still the default
    game = _in_the_fight([123], 40)  # where the forecast of the opponent matters

    def values(models):
        planner = make_pilot(f"search:heuristic:hard+{models}@samples=2@horizon=40", CFG)
        planner.attach(game, 0)
        planner.act(game.observe()[:, 0])
        return planner.last_values

    # With the same noise, a mix of the hard pilot with itself is the hard pilot's model alone,
    # and a mix with the idle pilot is not: half the samples forecast an idle opponent.
    hard = values("heuristic:hard")
    assert np.array_equal(values("heuristic:hard+heuristic:hard"), hard)
    assert not np.array_equal(values("heuristic:hard+idle"), hard)
    assert [m.name for m in make_pilot("search:heuristic:hard+heuristic:hard+idle",
                                       CFG).models] == ["heuristic:hard", "idle"]


def test_a_chooser_forecasts_each_game_with_the_member_that_foresees_its_opponent():
    """choose=1: each game is forecast with the member of the mix that has foreseen most of that
    game's opponent moves: the hard pilot's rules against the hard pilot, the network against the
    network. Without a mix there is nothing to choose."""
    spec = "search:pretrained+heuristic:hard+pretrained@samples=2@horizon=10@choose=1"
    for opponent, member in (("heuristic:hard", 0), ("pretrained", 1)):
        planner = make_pilot(spec, CFG)
        game = _in_the_fight([11, 12], 10)
        opponent = make_pilot(opponent, CFG)
        planner.attach(game, 0)
        for _ in range(12):
            obs = game.observe()
            game.step(np.stack([planner.act(obs[:, 0]), opponent.act(obs[:, 1])], axis=1))
        # Eleven moves read (none before the first decision), each foreseen by its own kind.
        hits = planner.forecast_hits
        assert list(hits[:, member]) == [11, 11] and hits[:, 1 - member].max() < 11, hits
    with pytest.raises(ValueError, match="choose=1 picks among a mix's members"):
        make_pilot("search:pretrained+heuristic:hard@choose=1", CFG)
    with pytest.raises(ValueError, match="choose='2' is invalid: must be an integer from 0 to 1"):
        make_pilot("search:pretrained+heuristic:hard+pretrained@choose=2", CFG)


def test_a_forecaster_that_is_the_policys_own_network_is_read_with_it():
    """The shipped network forecasting for itself is read in the policy's own call at every
    rollout step after the first, and plans exactly as the same network asked apart."""
    game = _in_the_fight([21, 22], 30)
    together = make_pilot("search:pretrained+pretrained@samples=2@horizon=20", CFG)
    forecaster = make_pilot("pretrained", CFG)
    forecaster.identity = "the same weights under another name"
    apart = SearchPilot(make_pilot("pretrained", CFG), forecaster, CFG, horizon=20, samples=2)
    asked = []
    for planner in (together, apart):
        act = planner.opponent_model.act
        calls = [0]
        planner.opponent_model.act = lambda obs, active=None, act=act, calls=calls: (
            calls.__setitem__(0, calls[0] + 1), act(obs))[1]
        planner.attach(game, 0)
        planner.act(game.observe()[:, 0])
        asked.append(calls[0])
    assert np.array_equal(together.last_values, apart.last_values)
    assert asked[0] == 1 and asked[1] > 10, asked


def _in_the_fight(seeds, decisions: int) -> engine.GameBatch:
    """Games of the hard pilot against itself, `decisions` decisions in."""
    games = engine.GameBatch(len(seeds), CFG)
    games.reset(seeds=np.asarray(list(seeds)))
    hard = HeuristicPilot("hard", CFG)
    for _ in range(decisions):
        games.step(np.stack([hard.act(games.observe()[:, k]) for k in (0, 1)], axis=1))
    return games


def test_the_planner_over_a_scripted_pilot_plans_as_spacewar_envs_opponent():
    """The spec as SpacewarEnv's opponent (the Gymnasium door): the env tells it its game, and
    it plans there (matches are the other tests')."""
    spec = "search:heuristic:hard+heuristic:hard@samples=2@horizon=20"
    env = SpacewarEnv(CFG, opponent=spec)
    env.reset(seed=5)
    for _ in range(30):
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            break
    assert env.opponent.last_values.shape[0] == 1
    env.close()


@pytest.mark.slow
def test_cli_evaluates_a_planner(tmp_path):
    out = cli("--evaluate", "--checkpoint", "search:pretrained", "--opponent", "idle",
              "--eval-episodes", "2", "--ratings-file", tmp_path / "ratings.json", timeout=300,
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "search:pretrained vs idle" in out.stdout and "wins 2 (" in out.stdout, out.stdout


@pytest.mark.parametrize("game", [{}, {"rules": "rllib_sw_1f9e818", "controls": "switches"}],
                         ids=["six", "switches"])
def test_the_opponents_moves_are_read_back_from_the_game(game):
    """What the adapting planner learns from: every valid action, numbered as the game numbers
    it, recovered from the change in the ship's state over one decision; the decisions taken in
    hyperspace, which do nothing, are not read."""
    from spacewar_ai.pilots.search import MoveWatcher

    config = GameConfig.from_dict(game)
    n = 64
    batch = engine.GameBatch(n, config)
    batch.reset(seeds=np.arange(n, dtype=np.int64))
    obs = batch.observe()
    rng = np.random.default_rng(0)
    watcher, ours = MoveWatcher(), np.zeros(n, dtype=np.int64)
    watcher.see(batch, ours)
    seen, skipped = set(), 0
    for _ in range(60):
        valid = obs[:, 1, batch.mask_columns] > 0.5
        moves = np.array([rng.choice(np.flatnonzero(v)) for v in valid])
        hidden = batch.ship_i[:, 1, engine.HYPER_HIDDEN] > 0
        batch.step(np.stack([np.zeros(n, dtype=np.int64), moves], 1))
        obs = batch.observe()
        read_back = watcher.see(batch, ours)
        if read_back is None:  # every game over
            break
        _, rows, read = read_back
        assert np.array_equal(read, moves[rows])
        assert not hidden[rows].any()
        skipped += int(hidden.sum())
        seen |= set(moves[rows].tolist())
    assert seen == set(range(config.num_actions))
    assert skipped > 0 or not config.hyperspace


@pytest.mark.slow
def test_the_adapting_planner_learns_the_opponent_it_meets():
    """adapt: against the spinner, a pilot nothing like the hard pilot its model starts from:
    its forecasts of the spinner's moves improve match by match, while search: keeps its model.
    (Two samples an action: the forecasts are the claim, not the plan's strength.)"""
    spinner = make_pilot("strategy:spacewar_ai/pretrained/panel/spinner.py", CFG, 1)
    adapting = make_pilot("adapt:pretrained@samples=2", CFG)
    fixed = make_pilot("search:pretrained@samples=2", CFG)
    before = [p.detach().clone() for p in fixed.opponent_model.agent.net.parameters()]
    try:
        shares = []
        for k in range(3):
            f0, m0 = adapting.learner.foreseen, adapting.learner.moves
            play_match(adapting, spinner, 12, 10 + 100 * k)
            shares.append((adapting.learner.foreseen - f0) / (adapting.learner.moves - m0))
        play_match(fixed, spinner, 4, 7)
    finally:
        spinner.close()
    assert shares[2] > shares[0] + 0.15 and shares[2] > 0.8, shares
    assert fixed.learner is None
    assert all(np.array_equal(a, b.detach()) for a, b in
               zip(before, fixed.opponent_model.agent.net.parameters()))


@pytest.mark.slow
def test_the_adapting_planner_beats_an_unlike_opponent_more_often_than_the_fixed_model():
    """Against the shipped network, which plays nothing like the hard pilot both planners'
    models start from, adapt: wins more of the same 40 games than search:, learning the
    network's moves as the match goes (scripts/adapt_curve.py's first match)."""
    network = make_pilot("pretrained", CFG, 1)
    adapting = make_pilot("adapt:pretrained", CFG)
    fixed = make_pilot("search:pretrained", CFG)
    adapted = play_match(adapting, network, 40, 0).wins_a
    planned = play_match(fixed, network, 40, 0).wins_a
    # Measured: 29 and 26.
    assert adapting.learner.accuracy > 0.7
    assert adapted > planned, (adapted, planned)


def test_the_improved_policy_of_a_hand_made_group_hard_and_soft():
    """Expert iteration's targets from a planner's action values: at temperature 0 the best
    valid action (the first of equals), an invalid one never, whatever its value; above 0 a
    softmax over the valid actions that gives equal values equal weight and spreads toward
    uniform as the temperature rises."""
    from spacewar_ai.pilots.search import improved_policy

    values = np.array([[0.5, -1.0, 0.2, 0.5, 0.9, 0.0],
                       [np.nan, 0.1, -0.2, 0.1, 0.3, -1.0]])
    valid = np.array([[1, 1, 1, 1, 0, 1], [0, 1, 1, 1, 1, 1]], dtype=bool)
    hard = improved_policy(values, valid, 0.0)
    assert hard.tolist() == [[1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0]]
    soft = improved_policy(values, valid, 0.1)
    assert np.allclose(soft.sum(axis=1), 1.0) and (soft[~valid] == 0).all()
    assert soft[0, 0] == soft[0, 3] > soft[0, 2] > soft[0, 5] > soft[0, 1] > 0
    assert soft[1, 4] > soft[1, 1] == soft[1, 3] > soft[1, 2]
    expected = np.exp(np.array([0.5, -1.0, 0.2, 0.5, 0.0]) / 0.1)
    assert np.allclose(soft[0, [0, 1, 2, 3, 5]], expected / expected.sum())
    flat = improved_policy(values, valid, 1000.0)
    assert np.allclose(flat[0, valid[0]], 1 / 5, atol=1e-3)


def test_the_improved_policy_leans_to_the_move_a_margin_keeps():
    """With the policy's moves and the planner's margin, the targets favour what the planner
    keeps: a move within the margin of the best wins, one beaten by more does not."""
    from spacewar_ai.pilots.search import improved_policy

    values = np.array([[0.1, 0.3, 0.2, 0.0, 0.0, 0.0],
                       [0.1, 0.6, 0.2, 0.0, 0.0, 0.0]])
    valid = np.ones(values.shape, dtype=bool)
    own = np.array([0, 0])
    assert improved_policy(values, valid, 0.0, own, 0.25).argmax(axis=1).tolist() == [0, 1]
    soft = improved_policy(values, valid, 0.05, own, 0.25)
    plain = improved_policy(values, valid, 0.05)
    assert soft.argmax(axis=1).tolist() == [0, 1] and plain.argmax(axis=1).tolist() == [1, 1]
    assert soft[0, 0] > 0.5 > plain[0, 0]
    assert np.allclose(soft.sum(axis=1), 1.0)


def test_a_margin_planners_soft_labels_pick_what_it_plays():
    """Labelled with a margin planner as the teacher: at every decision of a match, the soft
    target's most likely action is the planner's own answer, so the student is taught the
    moves the planner keeps, not the near-equal means it declined."""
    from spacewar_ai.pilots.wrappers import Labelled

    planner = make_pilot("search:heuristic:hard+heuristic:hard@samples=2@horizon=10"
                         "@margin=0.25", CFG)
    student = Labelled(make_pilot("heuristic:medium", CFG), planner, temperature=0.2)
    play_match(student, "heuristic:hard", 2, seed=31)
    labels, policies = np.concatenate(student.labels), np.concatenate(student.policies)
    assert len(labels) > 100 and (policies.argmax(axis=1) == labels).all()
    assert ((policies > 0.05).sum(axis=1) > 1).any()  # soft where the means are close


def test_a_margin_keeps_the_policys_move_unless_another_is_clearly_better():
    """@margin=M: another action replaces the policy's only when its mean ending is better by
    more than M. A margin beyond the values' range plays the policy's games exactly; a
    moderate one overrides fewer moves than none, on the same positions."""
    spec = "search:heuristic:hard+heuristic:hard@samples=4@horizon=30"
    alone = play_match(make_pilot("heuristic:hard", CFG), "heuristic:hard", 4, seed=77)
    stubborn = play_match(make_pilot(spec + "@margin=2", CFG), "heuristic:hard", 4, seed=77)
    assert [(g.frames, g.real_winner) for g in stubborn.games] == \
        [(g.frames, g.real_winner) for g in alone.games]
    games = _in_the_fight(range(900, 916), 30)
    hard = HeuristicPilot("hard", CFG)
    obs = games.observe()[:, 0]
    overrides = []
    for margin in (0.0, 0.25):
        planner = make_pilot(f"{spec}@margin={margin}", CFG)
        planner.attach(games, 0)
        overrides.append(int((planner.act(obs) != hard.act(obs)).sum()))
    assert overrides[0] > overrides[1], overrides


@pytest.mark.parametrize("controls", ["six", "switches"])
def test_a_jump_is_left_to_the_policy(controls, monkeypatch):
    """The planner never chooses hyperspace over its policy's move, however well a jump's
    rollouts ended, and keeps the policy's own jump."""
    config = GameConfig.from_dict({"rules": "rllib_sw", "controls": controls})
    jump = SW_HYPERSPACE if controls == "switches" else engine.Action.HYPERSPACE
    for policy_move, expected in ((engine.Action.NONE, engine.Action.NONE), (jump, jump)):
        planner = make_pilot("search:heuristic:hard+heuristic:hard@samples=1@horizon=2", config)
        batch = engine.GameBatch(2, config)
        batch.reset(seeds=np.array([0, 1]))
        planner.attach(batch, 0)
        monkeypatch.setattr(planner.policy, "act", lambda obs, active=None, m=policy_move:
                            np.full(len(obs), m, dtype=np.int64))
        values = np.zeros((2, config.num_actions))
        values[:, jump] = 1.0  # the jump's rollouts all won
        monkeypatch.setattr(planner, "action_values", lambda rows, v=values: v[rows])
        obs = batch.observe()[:, 0]
        assert obs[:, config.mask_start + jump].all()  # a jump is allowed now
        assert planner.act(obs).tolist() == [expected, expected]


def test_a_jumps_rollouts_fail_at_its_odds_not_at_the_games_next_draw():
    """Each sample draws its own chances: a fourth jump, which fails half the time under the
    peer's rules from rest, fails in some of the rollouts and not in others, whatever the game's
    own random stream would draw next."""
    config = GameConfig.from_dict({"rules": "rllib_sw", "controls": "switches"})
    jump = SW_HYPERSPACE
    for seed in range(3):
        planner = make_pilot("search:idle+idle@samples=32@horizon=24@jitter=0.001", config)
        batch = engine.GameBatch(1, config)
        batch.reset(seeds=np.array([seed]))
        batch.ship_i[0, 0, engine.JUMPS] = 3  # the next jump is the fourth of eight
        batch.ship_i[0, 0, engine.JUMP_KIND] = engine.JUMP_RANDOM  # as from the at-rest start
        planner.attach(batch, 0)
        played, make = [], planner._copies_of  # the copies, read once the rollouts end
        planner._copies_of = lambda m: played.append(make(m)) or played[-1]
        planner.action_values(np.array([0]))
        copies = played[0]
        k = planner.samples
        died = copies.ship_i[jump * k:(jump + 1) * k, 0, engine.ALIVE] == 0
        assert 0.2 < died.mean() < 0.8, (seed, died.mean())
        assert copies.ship_i[:k, 0, engine.ALIVE].all()  # drifting, no rollout died
