"""DAgger of the LM pilot (--algorithm dagger) on a tiny model built offline."""

import json
import re

import numpy as np
import pytest

from tests.helpers import require_lm

require_lm()


@pytest.fixture
def start(tiny, tmp_path, monkeypatch):
    """A project folder with an adapter to start from (sft-start) and a dataset of the
    teacher's own games (teach)."""
    from spacewar_ai.training.datasets import generate
    from tests.tiny_lm import trained_adapter

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    trained_adapter(tiny, tmp_path / "models" / "adapters" / "sft-start")
    generate([("heuristic:hard", "heuristic:medium")], 8, "teach", seed=1, quiet=True)
    return tmp_path


def test_dagger_records_its_rounds_as_datasets_labelled_by_the_teacher(tiny, start):
    """Each round's games are a Minari dataset naming who flew each episode; the LM's states
    carry the teacher's answers there, the opponent's none; TensorBoard has the round's
    agreement and win rates, and the adapter plays as lm:RUN."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from spacewar_ai.lm.models import adapter_meta
    from spacewar_ai.main import main
    from spacewar_ai.pilots.build import make_pilot
    from spacewar_ai.training.datasets import arrays, dataset_folder

    (start / "dagger.toml").write_text("[dagger]\ngames = 4\nsteps = 6\n[sft]\nbatch_size = 8\n"
                                       "held_out = 50\n")
    code = main(["--algorithm", "dagger", "--init-from", "sft-start", "--teacher",
                 "heuristic:hard", "--opponent", "heuristic:easy,self", "--dataset", "teach",
                 "--dataset-pilot", "heuristic:hard", "--episodes", "8", "--config",
                 "dagger.toml", "--run-name", "dag-tiny", "--quiet"])
    assert code == 0
    lm_name = f"lm:{tiny.name}+dag-tiny"
    teacher = make_pilot("heuristic:hard")
    for k in (1, 2):
        did = f"spacewar/dag-tiny-round{k}-v0"
        games = [json.loads(x) for x in
                 (dataset_folder(did) / "games.jsonl").read_text().splitlines()]
        assert sorted({(g["a"], g["b"]) for g in games}) == [(lm_name, "heuristic:easy"),
                                                            (lm_name, lm_name)]
        obs, labels = arrays(did, teacher=True)
        assert np.array_equal(labels, teacher.act(obs))  # the teacher's answers at those states
        lm_obs, _ = arrays(did, lm_name)
        easy_obs, _ = arrays(did, "heuristic:easy")
        assert len(obs) == len(lm_obs) and len(easy_obs) > 0  # the LM's states alone labelled

    events = EventAccumulator(str(start / "runs" / "dag-tiny"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"dagger/agreement_own", "dagger/agreement_teacher", "dagger/win_rate",
            "dagger/win_rate/heuristic:easy", "dagger/win_rate/self", "dagger/loss",
            "dagger/labels"} <= tags
    assert [e.step for e in events.Scalars("dagger/agreement_own")] == [1, 2]
    assert [e.step for e in events.Scalars("dagger/agreement_teacher")] == [0, 1, 2]
    sizes = [e.value for e in events.Scalars("dagger/labels")]
    assert sizes[1] > sizes[0] > 0  # the aggregate grows

    meta = adapter_meta(start / "models" / "adapters" / "dag-tiny")
    assert meta["algorithm"] == "dagger" and meta["init_from"] == "sft-start"
    assert meta["rounds"] == 2 and meta["teacher"] == "heuristic:hard"
    assert meta["datasets"] == ["spacewar/dag-tiny-round1-v0", "spacewar/dag-tiny-round2-v0"]
    pilot = make_pilot("lm:dag-tiny")
    assert pilot.name == lm_name and pilot.act(obs[:5]).shape == (5,)
    # --episodes N plays N games: fewer than a round's [dagger] games is one smaller round.
    (start / "short.toml").write_text("[dagger]\ngames = 16\nsteps = 2\n")
    assert main(["--algorithm", "dagger", "--init-from", "sft-start", "--teacher",
                 "heuristic:hard", "--opponent", "heuristic:easy", "--episodes", "4",
                 "--config", "short.toml", "--run-name", "dag-short", "--quiet"]) == 0
    short = dataset_folder("spacewar/dag-short-round1-v0") / "games.jsonl"
    assert len(short.read_text().splitlines()) == 4
    assert not dataset_folder("spacewar/dag-short-round2-v0").exists()
    assert adapter_meta(start / "models" / "adapters" / "dag-short")["rounds"] == 1


def test_dagger_brings_the_lm_closer_to_its_teacher_on_its_own_states(tiny, start):
    """Rounds of DAgger from an adapter that knows nothing of the game: the LM's agreement with
    its teacher at the states it reaches itself, measured before it trains on them, rises. The
    teacher is one whose answer a model this tiny can learn in a few steps (the hard pilot's
    turns it cannot: there it stays near its majority answer's share)."""
    from spacewar_ai.config import DaggerConfig, RunConfig, SFTConfig, TrainConfig
    from spacewar_ai.training import train

    cfg = RunConfig(
        train=TrainConfig(algorithm="dagger", run_name="dag-learns", seed=3,
                          log_dir=str(start / "runs")),
        sft=SFTConfig(batch_size=32),
        dagger=DaggerConfig(rounds=3, games=4, steps=40, opponents=("heuristic:medium",),
                            teacher="idle", learning_rate=3e-3))
    out = train(cfg, start_from="sft-start", quiet=True)
    own = [row["agreement_own"] for row in out["history"]]
    assert own[-1] > own[0] + 0.5, own


def test_expert_iteration_the_planner_over_the_teacher_labels_and_the_lm_follows(tiny, start):
    """Expert iteration: DAgger whose teacher is the planner over the hard pilot (the improved
    policy, attached to the LM's games like any teacher). The LM's agreement with the planner's
    choices at its own states rises. The planner here is over the idle pilot, whose choices a
    model this tiny can learn: it drifts but where playing on shows an action that does better."""
    from spacewar_ai.config import DaggerConfig, RunConfig, SFTConfig, TrainConfig
    from spacewar_ai.training import train
    from spacewar_ai.training.datasets import arrays

    planner = "search:idle+heuristic:medium@samples=2@horizon=20"
    cfg = RunConfig(
        train=TrainConfig(algorithm="dagger", run_name="exit-learns", seed=3,
                          log_dir=str(start / "runs")),
        sft=SFTConfig(batch_size=32),
        dagger=DaggerConfig(rounds=3, games=4, steps=40, opponents=("heuristic:medium",),
                            teacher=planner, learning_rate=3e-3))
    out = train(cfg, start_from="sft-start", quiet=True)
    own = [row["agreement_own"] for row in out["history"]]
    assert own[-1] > own[0] + 0.5, own
    _, labels = arrays("spacewar/exit-learns-round1-v0", teacher=True)
    assert 0 < np.count_nonzero(labels) < len(labels)  # the planner overrides idle's drift


def test_expert_iteration_with_soft_targets_records_and_trains_on_the_planners_policy(
        tiny, start):
    """[dagger] target_temperature > 0: each round's dataset holds the planner's improved
    policy at the LM's states (a distribution over the valid actions; where the rollouts value
    actions alike, and within a short horizon most are alike, they share the weight), the
    adapter trains on it (a finite loss each round) and says its temperature."""
    import minari

    from spacewar_ai.config import DaggerConfig, RunConfig, SFTConfig, TrainConfig
    from spacewar_ai.lm.models import adapter_meta
    from spacewar_ai.training import train
    from spacewar_ai.training.datasets import TEACHER_POLICY_KEY

    cfg = RunConfig(
        train=TrainConfig(algorithm="dagger", run_name="exit-soft", seed=3,
                          log_dir=str(start / "runs")),
        sft=SFTConfig(batch_size=32),
        dagger=DaggerConfig(rounds=2, games=4, steps=10, opponents=("heuristic:medium",),
                            teacher="search:heuristic:hard+heuristic:hard@samples=2@horizon=20",
                            target_temperature=0.2))
    out = train(cfg, start_from="sft-start", quiet=True)
    assert all(np.isfinite(row["loss"]) for row in out["history"])
    episodes = list(minari.load_dataset("spacewar/exit-soft-round1-v0").iterate_episodes())
    lm = [e for e in episodes if (e.infos["teacher_action"][:-1] >= 0).all()]
    obs = np.concatenate([e.observations[:-1] for e in lm])
    policies = np.concatenate([e.infos[TEACHER_POLICY_KEY][:-1] for e in lm])
    answers = np.concatenate([e.infos["teacher_action"][:-1] for e in lm])
    assert np.allclose(policies.sum(axis=1), 1.0, atol=1e-5)
    assert (policies[obs[:, 30:36] < 0.5] == 0).all()  # no weight on an invalid action
    assert ((policies > 0.05).sum(axis=1) > 1).mean() > 0.5  # mostly shared
    decided = policies.max(axis=1) > 0.5  # where one action stands out, it is the answer
    assert decided.any() and (policies[decided].argmax(axis=1) == answers[decided]).mean() > 0.8
    assert adapter_meta(start / "models" / "adapters" / "exit-soft")["target_temperature"] == 0.2


def test_a_student_whose_games_run_to_the_time_limit_is_said_in_one_line(tiny, start, capsys):
    """Against the idle pilot the tiny student kills no one: its games run to the time limit,
    and the round says so (and how to shorten them) instead of leaving a bar that seems stuck;
    the bar counts the student's decisions as they come."""
    from spacewar_ai.config import DaggerConfig, GameConfig, RunConfig, SFTConfig, TrainConfig
    from spacewar_ai.training import train

    cfg = RunConfig(
        train=TrainConfig(algorithm="dagger", run_name="dag-slow", seed=3, device="auto",
                          log_dir=str(start / "runs")),
        game=GameConfig(max_episode_steps=200),
        sft=SFTConfig(batch_size=8),
        dagger=DaggerConfig(rounds=1, games=4, steps=2, opponents=("idle",)))
    out = train(cfg, start_from="sft-start")
    said = capsys.readouterr()
    ended = out["history"][0]
    assert "round 1: 4 of 4 games ran to the time limit (200 frames): the student ends few " \
           "games" in said.out + said.err, said
    assert "[game] max_episode_steps" in said.out + said.err and ended["win_rate"] == 0
    assert " decisions" in said.err  # the bar's count of the student's decisions
    # The round's line says where its time went, on which device (auto: CUDA where there is one).
    device = "cuda" if __import__("torch").cuda.is_available() else "cpu"
    assert re.search(r"played and labelled in \d+ s, trained in \d+ s on " + device,
                     said.out + said.err), said


def test_dagger_refuses_what_cannot_work_in_one_line(tiny, start, capsys):
    from spacewar_ai.main import main

    (start / "taken.toml").write_text("[dagger]\ngames = 8\nrounds = 1\n")
    main(["--datagen", "--players", "heuristic:hard,heuristic:easy", "--episodes", "2",
          "--dataset-id", "taken-round1", "--quiet"])
    cases = {
        ("--algorithm", "dagger"): "--init-from ADAPTER",
        ("--algorithm", "dagger", "--init-from", "sft-start", "--teacher", "heuristic:wild"):
            "heuristic:wild",
        ("--algorithm", "dagger", "--init-from", "sft-start", "--opponent", "nobody"):
            "nobody",
        ("--algorithm", "dagger", "--init-from", "sft-start", "--opponent",
         "heuristic:easy,self,random"): "multiple of 6",
        ("--algorithm", "dagger", "--init-from", "sft-start", "--config", "taken.toml",
         "--episodes", "12"): "--episodes 12: the run plays whole rounds of 8 games",
        ("--algorithm", "dagger", "--init-from", "sft-start", "--config", "taken.toml",
         "--run-name", "taken"): "choose another --run-name",
        ("--algorithm", "dagger", "--init-from", "sft-start", "--base-model", "smollm2"):
            "--init-from adapter names",
        ("--algorithm", "ppo", "--teacher", "heuristic:hard"): "read by --algorithm dagger",
        ("--algorithm", "dagger", "--init-from", "sft-start", "--num-envs", "4"):
            "does not apply to --algorithm dagger",
    }
    capsys.readouterr()
    for args, words in cases.items():
        with pytest.raises(SystemExit) as exc:
            main(list(args))
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and words in err and len(err.splitlines()) == 1, (args, err)
    assert not (start / "models" / "adapters" / "taken").exists()


@pytest.mark.parametrize("afresh, rank", [(False, 4), (True, 8)])
def test_dagger_continues_its_start_or_trains_a_new_adapter_afresh(tiny, start, afresh, rank):
    """By default a round trains the adapter it started from further (the start's LoRA rank,
    4 here); with [dagger] afresh a new adapter of [sft] lora_rank is trained each round."""
    from spacewar_ai.config import DaggerConfig, RunConfig, SFTConfig, TrainConfig
    from spacewar_ai.training import train

    name = f"dag-afresh-{afresh}"
    cfg = RunConfig(
        train=TrainConfig(algorithm="dagger", run_name=name, log_dir=str(start / "runs")),
        sft=SFTConfig(batch_size=4, lora_rank=8),
        dagger=DaggerConfig(rounds=1, games=2, steps=2, opponents=("heuristic:medium",),
                            afresh=afresh))
    train(cfg, start_from="sft-start", quiet=True)
    config = json.loads((start / "models" / "adapters" / name / "adapter_config.json").read_text())
    assert config["r"] == rank
