"""The command line's door to the config, without a subprocess: which field each flag sets
(declared on the field, config.setting), what each algorithm does not read, and the mode the
flags choose."""

import dataclasses

import pytest

from spacewar_ai.cli import build_parser
from spacewar_ai.cli.common import run_config
from spacewar_ai.cli.parser import FLAGS, MODES, TRAIN, choose_mode
from spacewar_ai.cli.train import not_read
from spacewar_ai.config import ALGORITHMS, RunConfig, flag_readers, unread_flags


def args_of(*argv):
    parser = build_parser()
    return parser, parser.parse_args(list(argv))


def config_of(*argv):
    return run_config(args_of(*argv)[1])


@pytest.mark.parametrize("algorithm, section", [("ppo", "ppo"), ("bc", "ppo"), ("dqn", "dqn"),
                                                ("cql", "dqn"), ("sft", "sft"),
                                                ("grpo", "grpo"), ("dagger", "dagger")])
def test_the_learning_rate_goes_to_the_section_the_algorithm_learns_with(algorithm, section):
    extra = ["--dataset", "d"] if algorithm in ("bc", "cql", "sft") else []
    cfg = config_of("--algorithm", algorithm, "--learning-rate", "0.125", *extra)
    assert getattr(cfg, section).learning_rate == 0.125
    others = [s for s in ("ppo", "dqn", "sft", "grpo", "dagger") if s != section]
    assert all(getattr(cfg, s).learning_rate != 0.125 for s in others)


def test_each_flag_sets_the_fields_that_declare_it():
    cfg = config_of("--algorithm", "cql", "--dataset", "d", "--timesteps", "700", "--seed", "9",
                    "--num-envs", "12", "--minutes", "2.5", "--run-name", "r")
    assert (cfg.offline.cql_steps, cfg.train.total_timesteps) == (700, 700)
    assert (cfg.train.seed, cfg.train.num_envs, cfg.train.max_minutes, cfg.train.run_name) == \
        (9, 12, 2.5, "r")
    assert config_of("--episodes", "40").train.total_timesteps == 10**12  # the games decide
    assert config_of("--algorithm", "ppo", "--timesteps", "700").offline.cql_steps == \
        RunConfig().offline.cql_steps


def test_a_list_of_opponents_is_one_comma_list_on_the_command_line_and_a_tuple_below():
    dagger = config_of("--algorithm", "dagger", "--opponent", "idle, self", "--teacher", "random")
    assert dagger.dagger.opponents == ("idle", "self") and dagger.dagger.teacher == "random"
    grpo = config_of("--algorithm", "grpo", "--opponent", "idle,heuristic:easy")
    assert grpo.grpo.opponents == ("idle", "heuristic:easy") and grpo.dagger == RunConfig().dagger
    with pytest.raises(ValueError, match="has an empty name in its comma list"):
        config_of("--algorithm", "grpo", "--opponent", "idle,")


def test_every_flag_a_config_field_declares_is_a_flag_of_the_command_line():
    declared = {f.metadata["flag"] for section in RunConfig.SECTIONS
                for f in dataclasses.fields(getattr(RunConfig(), section))
                if f.metadata.get("flag")}
    assert declared and declared <= {flag.name for flag in FLAGS.values()}


def test_what_each_algorithm_does_not_read():
    assert unread_flags("ppo") == ["--dataset", "--dataset-pilot", "--base-model", "--opponent",
                                   "--teacher"]
    assert "--base-model" in unread_flags("dagger") and "--dataset" not in unread_flags("dagger")
    assert flag_readers("--opponent") == ["grpo", "dagger"]
    assert {"--num-envs", "--timesteps", "--warm-start"} <= set(unread_flags("grpo"))
    assert "--episodes" not in unread_flags("grpo") and "--timesteps" not in unread_flags("cql")
    assert "--timesteps" in unread_flags("bc")  # cql's steps are cql's alone
    _, args = args_of("--algorithm", "grpo", "--num-envs", "8", "--checkpoint", "x.pt")
    assert not_read(args, "grpo") == ["num_envs", "checkpoint"]
    assert all(not_read(args_of("--algorithm", a)[1], a) == [] for a in ALGORITHMS)


def test_the_mode_chooser_picks_one_mode_and_names_a_stray_flag(capsys):
    parser, args = args_of("--evaluate", "--checkpoint", "pretrained")
    assert choose_mode(parser, args).name == "evaluate"
    parser, args = args_of("--seed", "3")
    assert choose_mode(parser, args) is MODES[TRAIN]
    parser, args = args_of("--evaluate", "--tournament")
    with pytest.raises(SystemExit) as stop:
        choose_mode(parser, args)
    assert stop.value.code == 2
    assert "choose one mode: " in capsys.readouterr().err
    parser, args = args_of("--evaluate", "--num-envs", "4")
    with pytest.raises(SystemExit):
        choose_mode(parser, args)
    said = capsys.readouterr().err
    assert "--num-envs does not apply to --evaluate; it applies to training" in said
