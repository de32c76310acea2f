"""GRPO of the LM pilot on a tiny random-weight Llama model built offline (tests/tiny_lm.py):
the update raises a rewarded action over an unrewarded one, invalid actions never get
probability or gradient, actions are scored by the game played on, and `--algorithm grpo`
runs end to end to an adapter that plays."""

import numpy as np
import pytest

from spacewar_ai.config import OBS_MASK, GameConfig, RewardConfig
from tests.helpers import require_lm

require_lm()


def _states(n_games=4, steps=12, seed=0):
    """Game states, observations and sides from the middle of real games (heuristic play)."""
    from spacewar_ai.game.engine import GameBatch
    from spacewar_ai.pilots.build import make_pilot

    cfg = GameConfig()
    batch = GameBatch(n_games, cfg)
    batch.reset(seeds=np.arange(n_games) + seed)
    a, b = make_pilot("heuristic:hard", cfg), make_pilot("heuristic:medium", cfg)
    for _ in range(steps):
        obs = batch.observe()
        batch.step(np.stack([a.act(obs[:, 0]), b.act(obs[:, 1])], 1))
    return batch.state_dict(), batch.observe()[:, 0].copy(), np.zeros(n_games, dtype=np.int64)


def _model(tiny):
    import torch

    from spacewar_ai.lm.models import add_lora, load_base
    from spacewar_ai.lm.pilot import PromptCoder

    torch.manual_seed(0)
    model, tokenizer = load_base(str(tiny))
    return add_lora(model, 4), PromptCoder(tokenizer, 6, view=1)  # as these were tuned on


def test_grpo_raises_a_rewarded_action_over_an_unrewarded_one_at_the_same_state(tiny):
    import torch

    from spacewar_ai.training.lm.grpo import answer_log_probs, group_advantages, grpo_update

    model, coder = _model(tiny)
    obs = _states()[1][:1]
    obs[0, OBS_MASK:] = 1.0  # every action valid
    scores = np.array([[0.0, 0.0, 0.0, 0.0, 100.0, -50.0]])  # fire wins, thrust-and-fire loses
    adv, useful = group_advantages(scores)
    assert useful.all() and adv[0].argmax() == 4 and adv[0].argmin() == 5
    before = answer_log_probs(model, coder, obs, bf16=False).exp()[0]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    for _ in range(4):  # iterations: the clip bounds how far each moves the policy
        old = answer_log_probs(model, coder, obs, bf16=False)
        passes = grpo_update(model, opt, coder, obs, adv, old, old.clone(), 2, 1, 0.2, 0.0,
                             np.random.default_rng(0))
        assert passes[-1]["loss"] < passes[0]["loss"]  # the surrogate improves on its states
    after = answer_log_probs(model, coder, obs, bf16=False).exp()[0]
    assert after[4] > 1.3 * before[4] and after[5] < before[5]
    assert after[4] / after[5] > 1.5 * before[4] / before[5]


def test_the_improved_objective_learns_the_groups_softmax_of_a_hand_made_group(tiny):
    """"improved": the target is a softmax of the group's z-scores over its valid actions
    (the best action most, invalid ones nothing, a colder temperature sharper); the loss is the
    cross-entropy toward it, exactly; and updates move the answer toward the target until the
    best action leads."""
    import torch

    from spacewar_ai.lm.pilot import prompt_logits
    from spacewar_ai.pilots.search import improved_policy
    from spacewar_ai.training.lm.grpo import (
        answer_log_probs,
        group_advantages,
        grpo_update,
        improved_loss,
        log_probs,
    )

    model, coder = _model(tiny)
    obs = _states()[1][:1]
    obs[0, OBS_MASK:] = 1.0
    obs[0, OBS_MASK + 5] = 0.0  # thrust-and-fire reloading
    scores = np.array([[0.0, 10.0, 0.0, 0.0, 100.0, np.nan]])
    adv, useful = group_advantages(scores)
    valid = obs[:, OBS_MASK:] > 0.5
    warm, cold = improved_policy(adv, valid, 1.0), improved_policy(adv, valid, 0.25)
    for target in (warm, cold):
        assert abs(target.sum() - 1) < 1e-9 and target[0, 5] == 0
        assert target[0].argmax() == 4 and target[0, 1] > target[0, 0] == target[0, 2]
    assert cold[0, 4] > warm[0, 4] > 0.5
    logits = prompt_logits(model, coder, obs)
    loss, kl = improved_loss(logits, log_probs(logits).detach(),
                             torch.as_tensor(warm, dtype=torch.float32),
                             torch.as_tensor(valid), kl_coef=0.5)
    by_hand = -(warm[0, :5] * torch.log_softmax(logits[0, :5].float(), -1).detach().numpy()).sum()
    assert abs(loss.item() - by_hand) < 1e-4 and abs(kl.item()) < 1e-6
    # the valid actions' probabilities (log_probs writes 0 at the invalid one)
    before = answer_log_probs(model, coder, obs, bf16=False).exp()[0, :5]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(8):
        old = answer_log_probs(model, coder, obs, bf16=False)
        passes = grpo_update(model, opt, coder, obs, adv, old, old.clone(), 2, 1, 0.2, 0.0,
                             np.random.default_rng(0), objective="improved",
                             target_temperature=0.25)
        assert set(passes[-1]) == {"loss", "kl"}
    after = answer_log_probs(model, coder, obs, bf16=False).exp()[0, :5]
    assert after[4] > before[4] + 0.05 and after.argmax() == 4
    distance = lambda p: float(np.abs(p.numpy() - cold[0, :5]).sum())  # noqa: E731
    assert distance(after) < distance(before)


def test_grpo_puts_no_probability_or_gradient_on_an_invalid_action(tiny):
    """An invalid action scored best still gets nothing: it is out of the group, -inf in every
    log-probability, and the loss and its gradients stay finite."""
    import torch

    from spacewar_ai.lm.pilot import prompt_logits
    from spacewar_ai.training.lm.grpo import answer_log_probs, group_advantages, grpo_loss

    model, coder = _model(tiny)
    obs = _states()[1][:2]
    obs[:, OBS_MASK:] = 1.0
    obs[:, OBS_MASK + 4] = 0.0  # fire reloading
    obs[:, OBS_MASK + 5] = 0.0
    scores = np.array([[10.0, 0.0, 0.0, 0.0, 1e6, 1e6], [0.0, 20.0, 0.0, 0.0, 1e6, 1e6]])
    scores[obs[:, OBS_MASK:] < 0.5] = np.nan  # as action_scores marks them
    adv, useful = group_advantages(scores)
    assert useful.all() and (adv[:, 4:] == 0).all()
    assert adv[0].argmax() == 0 and adv[1].argmax() == 1
    old = answer_log_probs(model, coder, obs, bf16=False)
    assert torch.isfinite(old).all() and (old[:, 4:] == 0).all()
    model.train()
    logits = prompt_logits(model, coder, obs)
    assert torch.isinf(logits[:, 4:]).all() and (torch.softmax(logits, -1)[:, 4:] == 0).all()
    valid = torch.as_tensor(obs[:, OBS_MASK:] > 0.5)
    loss, kl, _ = grpo_loss(logits, old, old, torch.as_tensor(adv, dtype=torch.float32), valid,
                            0.2, 0.1)
    loss.backward()
    assert torch.isfinite(loss) and abs(kl.item()) < 1e-6
    grads = [p.grad for p in model.parameters() if p.requires_grad and p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)


def test_actions_are_scored_by_the_reward_table_of_the_game_played_on():
    """Played on one decision under the sniper table (each shot costs 4), firing scores exactly
    4 below drifting; invalid actions are NaN; the same states score the same twice."""
    from spacewar_ai.pilots.build import make_pilot
    from spacewar_ai.training.lm.scoring import action_scores

    cfg = GameConfig()
    states, obs, sides = _states(n_games=6, steps=8)
    rollout, opp = make_pilot("heuristic:hard", cfg), make_pilot("heuristic:medium", cfg)
    sniper = RewardConfig.preset("sniper")
    scores = action_scores(states, obs, sides, rollout, opp, cfg, sniper, horizon=1)
    fire_ok = obs[:, OBS_MASK + 4] > 0.5
    assert fire_ok.any()
    assert np.allclose(scores[fire_ok, 4] - scores[fire_ok, 0], sniper.shot_reward)
    assert np.isnan(scores[~(obs[:, OBS_MASK:] > 0.5)]).all()
    longer = action_scores(states, obs, sides, rollout, opp, cfg, RewardConfig(), horizon=60)
    again = action_scores(states, obs, sides, rollout, opp, cfg, RewardConfig(), horizon=60)
    assert np.array_equal(longer, again, equal_nan=True)
    assert np.nanmax(np.abs(longer)) > 10  # some games were played to a kill or a death


def test_jittered_continuations_average_games_that_differ_and_repeat_by_seed():
    """[grpo] continuations K > 1 with jitter: each action's score is the mean of K games whose
    pilots sometimes move at random, the same for the same seed; K = 1 without jitter is the
    one deterministic game, as before."""
    from spacewar_ai.pilots.build import make_pilot
    from spacewar_ai.pilots.wrappers import Jittered
    from spacewar_ai.training.lm.scoring import action_scores

    cfg, rew = GameConfig(), RewardConfig()
    states, obs, sides = _states(n_games=6, steps=8)

    def score(k=1, jitter=0.0, seed=0):
        return action_scores(states, obs, sides, make_pilot("heuristic:hard", cfg),
                             make_pilot("heuristic:medium", cfg), cfg, rew, 60, k, jitter, seed)

    plain = score()
    assert np.array_equal(plain, action_scores(
        states, obs, sides, make_pilot("heuristic:hard", cfg),
        make_pilot("heuristic:medium", cfg), cfg, rew, 60), equal_nan=True)
    mean4 = score(4, 0.2, seed=5)
    assert np.array_equal(mean4, score(4, 0.2, seed=5), equal_nan=True)
    assert not np.array_equal(mean4, score(4, 0.2, seed=6), equal_nan=True)
    assert not np.array_equal(mean4, plain, equal_nan=True)
    assert np.array_equal(np.isnan(mean4), np.isnan(plain))  # invalid actions stay NaN
    # A jittered pilot's random moves are valid ones; at epsilon 0 it is the pilot itself.
    o = _states(n_games=64, steps=30)[1]
    hard = make_pilot("heuristic:hard", cfg)
    assert np.array_equal(Jittered(make_pilot("heuristic:hard", cfg), 0.0, 1).act(o), hard.act(o))
    moved = Jittered(make_pilot("heuristic:hard", cfg), 0.99, 1).act(o)
    assert (o[np.arange(len(o)), OBS_MASK + moved] > 0.5).all()


def test_continuations_without_jitter_are_refused_in_one_line():
    from spacewar_ai.config import GRPOConfig

    with pytest.raises(ValueError, match="continuations=4 is invalid: needs jitter > 0"):
        GRPOConfig(continuations=4)
    with pytest.raises(ValueError, match="jitter=1.0 is invalid"):
        GRPOConfig(jitter=1.0)
    assert GRPOConfig(continuations=4, jitter=0.05).continuations == 4


@pytest.mark.parametrize("objective", ["clip", "improved"])
def test_grpo_runs_end_to_end_and_its_adapter_plays(tiny, tmp_path, monkeypatch, objective):
    """--algorithm grpo --init-from an SFT run, with either objective: TensorBoard's grpo/
    curves, an adapter under models/adapters/ naming its base, its start and its objective, and
    lm:RUN playing it."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from spacewar_ai.lm.models import adapter_meta
    from spacewar_ai.main import main
    from spacewar_ai.pilots.build import make_pilot
    from tests.tiny_lm import trained_adapter

    monkeypatch.chdir(tmp_path)
    trained_adapter(tiny, tmp_path / "models" / "adapters" / "sft-start")
    (tmp_path / "grpo.toml").write_text(
        "[grpo]\ngames = 4\nstates = 12\nhorizon = 20\nbatch_size = 4\n"
        f"learning_rate = 0.003\nepochs = 2\nobjective = \"{objective}\"\n")
    code = main(["--algorithm", "grpo", "--init-from", "sft-start", "--episodes", "8",
                 "--opponent", "heuristic:easy", "--config", "grpo.toml", "--run-name",
                 "grpo-tiny", "--quiet", "--reward", "aggressive"])
    assert code == 0
    events = EventAccumulator(str(tmp_path / "runs" / "grpo-tiny"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"grpo/win_rate", "grpo/loss", "grpo/kl", "grpo/best_action_probability",
            "grpo/states_per_second", "grpo/signal_share"} <= tags
    assert ("grpo/clip_fraction" in tags) == (objective == "clip")
    assert all(0 <= e.value <= 1 for e in events.Scalars("grpo/signal_share"))
    assert len(events.Scalars("grpo/win_rate")) == 2  # 8 games, 4 an iteration
    meta = adapter_meta(tmp_path / "models" / "adapters" / "grpo-tiny")
    assert meta["base_model"] == str(tiny) and meta["init_from"] == "sft-start"
    assert meta["games"] == 8 and meta["reward"] == "aggressive"
    assert meta["objective"] == objective
    assert ("target_temperature" in meta) == (objective == "improved")
    pilot = make_pilot("lm:grpo-tiny")
    assert pilot.name == f"lm:{tiny.name}+grpo-tiny"
    assert pilot.act(_states()[1]).shape == (4,)


def test_grpo_shares_its_games_among_opponents_of_varied_skill(tiny, tmp_path, monkeypatch):
    """`--opponent A,B`: each iteration plays half its games against each, scores states of
    both (each with its own game's opponent flying on) and logs each one's win rate."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from spacewar_ai.lm.models import adapter_meta
    from spacewar_ai.main import main
    from tests.tiny_lm import trained_adapter

    monkeypatch.chdir(tmp_path)
    trained_adapter(tiny, tmp_path / "models" / "adapters" / "sft-start")
    (tmp_path / "grpo.toml").write_text(
        "[grpo]\ngames = 4\nstates = 8\nscored = 16\nhorizon = 20\nbatch_size = 4\n")
    assert main(["--algorithm", "grpo", "--init-from", "sft-start", "--episodes", "8",
                 "--opponent", "heuristic:easy,random", "--config", "grpo.toml",
                 "--run-name", "grpo-mixed", "--quiet"]) == 0
    events = EventAccumulator(str(tmp_path / "runs" / "grpo-mixed"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"grpo/win_rate/heuristic:easy", "grpo/win_rate/random"} <= tags
    for it in range(2):
        each = [events.Scalars(f"grpo/win_rate/{o}")[it].value for o in ("heuristic:easy",
                                                                          "random")]
        assert events.Scalars("grpo/win_rate")[it].value == pytest.approx(sum(each) / 2)
    assert adapter_meta(tmp_path / "models" / "adapters" / "grpo-mixed")["opponent"] == \
        "heuristic:easy,random"


def test_grpo_refuses_what_cannot_work_in_one_line(tiny, tmp_path, monkeypatch, capsys):
    from spacewar_ai.main import main
    from tests.tiny_lm import trained_adapter

    monkeypatch.chdir(tmp_path)
    trained_adapter(tiny, tmp_path / "models" / "adapters" / "sft-start")
    cases = {
        ("--algorithm", "grpo"): "--init-from ADAPTER",
        ("--algorithm", "grpo", "--init-from", "nothere"): "train one with --algorithm sft",
        ("--algorithm", "grpo", "--init-from", "sft-start", "--opponent", "heuristic:wild"):
            "heuristic:wild",
        ("--algorithm", "grpo", "--init-from", "sft-start", "--base-model", "smollm2"):
            "--init-from adapter names",
        ("--algorithm", "ppo", "--opponent", "heuristic:hard"): "read by --algorithm grpo",
        ("--algorithm", "grpo", "--init-from", "sft-start", "--device", "cuda"): "no CUDA",
    }
    import torch

    capsys.readouterr()
    for args, words in cases.items():
        if "cuda" in args and torch.cuda.is_available():
            continue
        with pytest.raises(SystemExit) as exc:
            main(list(args))
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and words in err and len(err.splitlines()) == 1, (args, err)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_the_benchmark_prints_the_lm_pilot_sft_and_grpo_rates(tiny, capsys):
    from spacewar_ai.bench.throughput import bench_lm

    figures = bench_lm(quick=True, spec=str(tiny))
    out = capsys.readouterr().out
    for key in ("lm_fp32_1", "lm_bf16_64", "lm_sft_examples_per_s", "lm_grpo_states_per_s"):
        assert figures[key] > 0, key
    assert "examples/s" in out and "states/s" in out and "decisions/s" in out


def test_a_group_whose_scores_differ_by_game_length_alone_teaches_nothing():
    """Step penalties of a game a decision longer or shorter are not an outcome: such a group is
    dropped, while one with a kill in it is kept and z-scored."""
    from spacewar_ai.training.lm.grpo import group_advantages

    scores = np.array([[-0.60, -0.61, -0.59, -0.60, np.nan, np.nan],
                       [-0.60, -0.61, 199.0, -0.60, -150.0, np.nan]])
    adv, useful = group_advantages(scores)
    assert useful.tolist() == [False, True]
    assert (adv[0] == 0).all() and adv[1].argmax() == 2 and adv[1].argmin() == 4
    assert adv[1, 5] == 0 and abs(adv[1, :5].mean()) < 1e-9


def test_the_update_learns_from_the_groups_where_the_action_matters_most():
    """Of the scored groups, those that teach something are kept, widest spread first, up to
    the count asked for; a group whose actions all score alike is never kept."""
    from spacewar_ai.training.lm.grpo import decisive, group_advantages

    nan = np.nan
    scores = np.array([[0.0, 0.2, 0.1, nan, nan, nan],      # alike: teaches nothing
                       [0.0, 150.0, -100.0, 0.0, nan, 0.0],  # a kill or a death
                       [0.0, 5.0, 0.0, 0.0, 0.0, 0.0],       # a little
                       [-100.0, 0.0, 0.0, 0.0, 0.0, 0.0]])   # a death avoided
    _, useful = group_advantages(scores)
    assert list(useful) == [False, True, True, True]
    assert list(decisive(scores, useful, 2)) == [1, 3]
    assert list(decisive(scores, useful, 10)) == [1, 2, 3]
    assert len(decisive(np.zeros((0, 6)), np.zeros(0, dtype=bool), 4)) == 0
