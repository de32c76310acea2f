"""trl's GRPOTrainer on Spacewar! (training/trl_adapter.py): recorded decisions scored by the
engine as a reward function, and a game flown through tool calls as an environment_factory,
each trained two steps by trl's own trainer on a tiny model built in the test."""

import functools

import numpy as np
import pytest

from spacewar_ai.config import GameConfig, RewardConfig
from spacewar_ai.lm.text_env import SpacewarTextEnv
from spacewar_ai.training.lm.scoring import action_scores
from spacewar_ai.training.lm.trl_adapter import ScoredDecisions, SpacewarTools


@pytest.fixture(scope="module")
def decisions():
    return ScoredDecisions.record(pilot="heuristic:medium", opponent="heuristic:hard", games=2,
                                  states=24, view=2, seed=3)


def test_recorded_decisions_reward_the_action_the_engine_scores_best(decisions):
    rows = decisions.rows()
    assert len(rows) == 24 and [r["state"] for r in rows] == list(range(24))
    assert all(r["prompt"].startswith("Spacewar! You fly a ship.") and "Lead" in r["prompt"]
               and r["prompt"].endswith("Action:\n") for r in rows)  # view 2, the pilot's text
    decisive = [s for s in range(24) if np.nanmax(decisions.scores[s]) -
                np.nanmin(decisions.scores[s]) >= 1.0]
    assert decisive, "no recorded state where the action changes the outcome"
    for s in decisive:
        best, worst = np.nanargmax(decisions.scores[s]), np.nanargmin(decisions.scores[s])
        got = decisions(prompts=[rows[s]["prompt"]] * 3,
                        completions=[f" {best}", f"{worst}.", [{"role": "assistant",
                                                                 "content": str(best)}]],
                        state=[s, s, s])
        assert got[0] == got[2] == decisions.scores[s, best] > got[1]
    invalid = [s for s in range(24) if np.isnan(decisions.scores[s]).any()]
    for s in invalid + [0]:
        masked = int(np.flatnonzero(np.isnan(decisions.scores[s]))[0]) if s in invalid else 9
        for answer in (str(masked), "fire!", ""):
            assert decisions.score(s, answer) == np.nanmin(decisions.scores[s]) - 1.0


def test_recorded_scores_are_grpo_scores_of_the_same_states():
    """A reward is the score --algorithm grpo gives the action at that state: the same copy
    of the game, the same pilots flying on."""
    from spacewar_ai.pilots.build import make_pilot
    from spacewar_ai.pilots.wrappers import StateRecorder
    from spacewar_ai.rating.match import play_match

    cfg, rew = GameConfig(), RewardConfig()
    d = ScoredDecisions.record(games=2, states=6, seed=5, continuations=3, jitter=0.1)
    recorder = StateRecorder(make_pilot("heuristic:medium", cfg, 5))
    play_match(recorder, "heuristic:hard", 2, 5, cfg, rew)
    states, obs, sides = recorder.draw(6, np.random.default_rng(5))
    again = action_scores(states, obs, sides, make_pilot("heuristic:hard", cfg, 6),
                          make_pilot("heuristic:hard", cfg, 7), cfg, rew, 60, 3, 0.1, 8)
    np.testing.assert_array_equal(d.scores, again)


def test_bad_recordings_are_refused_in_one_line():
    with pytest.raises(ValueError, match="even number"):
        ScoredDecisions.record(games=3)
    with pytest.raises(ValueError, match="2 prompts for 1 rows"):
        ScoredDecisions(["a", "b"], np.zeros((1, 6)))
    with pytest.raises(ValueError, match="'state' column"):
        ScoredDecisions(["a"], np.zeros((1, 6)))(prompts=["a"], completions=["1"])


def test_the_tool_game_is_the_text_env_and_scores_where_the_model_left_it():
    tools = SpacewarTools(opponent="heuristic:medium", horizon=0, moves=3)
    text = tools.reset(seed=11, prompt=[{"role": "user", "content": "ignored"}])
    env = SpacewarTextEnv(opponent="heuristic:medium", view=2, preamble=False)
    first, _ = env.reset(seed=11)
    assert text.startswith("Spacewar! You fly a ship.") and first.removesuffix("Action:\n") in text
    total = 0.0
    for action in (4, 1, 1):
        said = tools.fly(action)
        expected, reward, *_ = env.step(action)
        total += reward
        assert said == expected.removesuffix("Action:\n")
    assert tools.fly(2) == "You have no moves left."
    assert tools.get_reward() == pytest.approx(total)
    # An invalid action drifts, costs the text env's penalty and says what was valid.
    tools = SpacewarTools(horizon=0)
    tools.reset(seed=11)
    tools.fly(4)
    said = tools.fly(4)  # fire is reloading
    assert said.startswith("4 was not a valid action, so you drifted (valid were 0,1,2,3).")
    assert not tools.fly("2").startswith("2 was not")  # an index written as text is read
    # Flying on: the rollout pilot's horizon adds what the ship collects after the model stops.
    on = SpacewarTools(horizon=400)
    on.reset(seed=11)
    assert on.get_reward() != pytest.approx(0.0)
    assert on.get_reward() == on.get_reward()  # the same continuation each time it is asked


def test_the_tool_game_plays_to_its_end_and_says_who_won():
    tools = SpacewarTools(opponent="heuristic:hard", moves=2000, horizon=0)
    tools.reset(seed=2, start=0)
    said = ""
    for _ in range(2000):
        said = tools.fly(0)  # drifting against the hard pilot loses
        if said.startswith("The game is over"):
            break
    assert said in ("The game is over: you lost.", "The game is over: nobody won.")
    assert tools.fly(1) == "The game is over."


def test_the_tool_game_starts_mid_game_from_a_row():
    a, b = SpacewarTools(), SpacewarTools()
    assert a.reset(seed=4, start=30) == b.reset(seed=4, start=30) != a.reset(seed=4)


def _trl_config(tmp_path, **extra):
    from trl import GRPOConfig

    settings = {"output_dir": str(tmp_path / "out"), "max_steps": 2, "seed": 0,
                "per_device_train_batch_size": 4, "num_generations": 4, "learning_rate": 1e-2,
                "logging_steps": 1, "report_to": "none", "use_cpu": True, "bf16": False,
                "save_strategy": "no", "dataloader_num_workers": 0}
    return GRPOConfig(**{**settings, **extra})


def _trainable_copy(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def test_trl_grpo_trains_on_scored_decisions(tiny, decisions, tmp_path):
    """trl's own GRPOTrainer, two steps, with the recorded decisions as its reward function and
    their prompts as its dataset, on a model with a plain tokenizer (no chat template)."""
    pytest.importorskip("trl")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    model = AutoModelForCausalLM.from_pretrained(str(tiny))
    tokenizer = AutoTokenizer.from_pretrained(str(tiny), padding_side="left")
    before = _trainable_copy(model)
    trainer = GRPOTrainer(model=model, reward_funcs=decisions, processing_class=tokenizer,
                          train_dataset=Dataset.from_list(decisions.rows()),
                          args=_trl_config(tmp_path, max_completion_length=3))
    trainer.train()
    assert trainer.state.global_step == 2
    logged = [h for h in trainer.state.log_history if "rewards/spacewar_score/mean" in h]
    assert len(logged) == 2
    # Every reward is a score of the table or a point under a state's worst valid action.
    floor = np.nanmin(decisions.scores) - 1.0 - 1e-3  # trl averages in float32
    assert all(floor <= h["rewards/spacewar_score/mean"] <= np.nanmax(decisions.scores) + 1e-3
               for h in logged)
    assert any(not np.array_equal(before[n], p.detach()) for n, p in model.named_parameters())


def test_trl_grpo_flies_the_game_through_tool_calls(tmp_path):
    """trl's own GRPOTrainer with SpacewarTools as its environment_factory: a tiny model taught
    (in the test) to answer with a `fly` call flies the game through the tool, and
    get_reward scores each conversation."""
    pytest.importorskip("trl")
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import get_json_schema
    from trl import GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    from tests.tiny_lm import make_chat_lm

    calls = []

    class Counted(SpacewarTools):
        def fly(self, action: int) -> str:
            """Fly your ship for one decision of the game.

            Args:
                action: The action's index: 0 drift, 1 turn left, 2 turn right, 3 thrust, 4 fire, 5 thrust and fire.

            Returns:
                The situation after the move, ending with the valid actions, or how the game ended.
            """
            calls.append(action)
            return super().fly(action)

    factory = functools.partial(Counted, opponent="heuristic:medium", moves=2, horizon=30)
    answer = '<tool_call>\n{"name": "fly", "arguments": {"action": 4}}\n</tool_call><|im_end|>'
    rows = [{"prompt": [{"role": "user", "content": "Win this game. "}], "seed": s}
            for s in range(8)]
    tool = get_json_schema(Counted.fly)
    samples = []
    for row in rows[:4]:
        env = factory()
        messages = [{"role": "user", "content": row["prompt"][0]["content"]
                     + env.reset(seed=row["seed"])}]
        samples.append((messages, answer))

    texts = [m[0]["content"] + answer for m, _ in samples] + [qwen2_5_chat_template]
    folder = make_chat_lm(tmp_path / "chat", texts, qwen2_5_chat_template)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(str(folder))
    # Teach the tiny model the one answer so that its samples are tool calls.
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    encoded = []
    for messages, target in samples:
        prompt = tokenizer.apply_chat_template(messages, tools=[tool], tokenize=False,
                                               add_generation_prompt=True)
        p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        t = tokenizer(target, add_special_tokens=False)["input_ids"]
        encoded.append((torch.tensor([p + t]), len(p)))
    for _ in range(300):
        losses = []
        for ids, cut in encoded:
            labels = ids.clone()
            labels[0, :cut] = -100
            loss = model(input_ids=ids, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        if max(losses) < 0.02:
            break
    assert max(losses) < 0.02
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, environment_factory=factory,
                          train_dataset=Dataset.from_list(rows),
                          args=_trl_config(tmp_path, max_completion_length=64,
                                           max_tool_calling_iterations=2, learning_rate=1e-4))
    trainer.train()
    assert trainer.state.global_step == 2
    assert calls and set(calls) == {4}  # the model's calls reached the game
    logged = [h for h in trainer.state.log_history if "rewards/Counted/mean" in h]
    assert len(logged) == 2 and all(np.isfinite(h["rewards/Counted/mean"]) for h in logged)
