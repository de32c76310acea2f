"""GameConfig and RewardConfig: defaults from 1962, validation, JSON round trip."""

import json

import pytest

from spacewar_ai.config import GameConfig, RewardConfig


def test_defaults_follow_the_1962_listing():
    c = GameConfig()
    assert (c.width, c.height, c.max_ammo, c.torpedo_lifetime, c.fire_cooldown) == (
        1024, 1024, 32, 96, 16)
    assert c.torpedo_speed == 4.0 and c.rotation_speed == 1 / 16 and c.thrust_power == 2 / 256
    assert c.max_fuel == 1000 and c.gravity_constant == 512 and c.star_radius == 16
    assert c.hit_radius == 12 and c.max_speed == 8
    # Gravity equals full thrust at a quarter screen.
    assert c.gravity_constant / 256 ** 2 == pytest.approx(c.thrust_power)


@pytest.mark.parametrize("field,value", [
    ("width", 0), ("height", -5), ("max_fuel", -1), ("star_radius", 512),
    ("hit_radius", -1), ("frame_skip", 0), ("max_ammo", 2.5), ("start_positions", "corner"),
    ("torpedo_speed", float("nan")), ("no_star", "yes"), ("max_episode_steps", 0),
])
def test_impossible_values_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        GameConfig(**{field: value})


def test_json_round_trip_and_unknown_fields():
    c = GameConfig(hyperspace=True, frame_skip=2)
    assert GameConfig.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    r = RewardConfig(kill_reward=5.0)
    assert RewardConfig.from_dict(json.loads(json.dumps(r.to_dict()))) == r
    with pytest.raises(ValueError, match="gravity"):
        GameConfig.from_dict({"gravity": 1.0})


def test_reward_values_must_be_finite():
    with pytest.raises(ValueError, match="kill_reward"):
        RewardConfig(kill_reward=float("inf"))


def test_each_algorithm_has_its_section_and_the_old_train_keys_still_load(tmp_path, capsys):
    from spacewar_ai.config import RunConfig, load_run_config

    old = tmp_path / "old.toml"
    old.write_text("[train]\nalgorithm = \"grpo\"\ngrpo_games = 4\nlm_batch_size = 8\n"
                   "offline_steps = 300\nbase_model = \"tiny\"\n[grpo]\nstates = 12\n")
    cfg = load_run_config(old)
    assert (cfg.grpo.games, cfg.grpo.states, cfg.grpo.batch_size) == (4, 12, 8)
    assert cfg.sft.batch_size == 8 and cfg.sft.base_model == "tiny"  # lm_ keys served both
    assert cfg.offline.cql_steps == 300 and cfg.train.algorithm == "grpo"
    note = capsys.readouterr().err
    assert note.count("\n") == 1 and "grpo_games -> [grpo] games" in note
    assert "lm_batch_size -> [sft] batch_size and [grpo] batch_size" in note
    # A key given in its new place wins over the old one.
    both = tmp_path / "both.toml"
    both.write_text("[train]\ngrpo_kl = 0.5\n[grpo]\nkl = 0.1\n")
    assert load_run_config(both).grpo.kl == 0.1
    # A checkpoint saved before the sections existed holds its settings under [train].
    saved = RunConfig().to_dict()
    saved["train"]["lm_learning_rate"] = 1e-3
    for section in ("offline", "sft", "grpo"):
        del saved[section]
    assert RunConfig.from_dict(saved).sft.learning_rate == 1e-3


@pytest.mark.parametrize("text, says", [
    ("[grpo]\ngames = 3\n", "[grpo] GRPOConfig.games=3 is invalid: must be even"),
    ("[sft]\nlora_layers = -1\n", "[sft] SFTConfig.lora_layers=-1"),
    ("[offline]\ncql_alpha = -1\n", "[offline] OfflineConfig.cql_alpha=-1"),
    ("[grpo]\nopponent = \"\"\n", "must name a pilot"),
    ("[dagger]\nopponents = []\n", "[dagger] DaggerConfig.opponents=() is invalid"),
    ("[dagger]\nown_share = 1.5\n", "[dagger] DaggerConfig.own_share=1.5"),
    ("[dagger]\nteacher = \"\"\n", "must name a pilot"),
    ("[sfts]\nepochs = 2\n", "did you mean 'sft'"),
])
def test_the_new_sections_name_the_field_and_the_rule(tmp_path, text, says):
    from spacewar_ai.config import load_run_config

    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as exc:
        load_run_config(path)
    assert says in str(exc.value) and str(path) in str(exc.value), str(exc.value)


# The refusals as they were worded before the rules moved beside the fields (config.setting),
# word for word: the rules' new home must not change what a user reads.
WORDED = [
    ("GameConfig", {"width": -1}, "GameConfig.width=-1 is invalid: must be a finite number > 0 "
                                  "and at most 1,000,000"),
    ("GameConfig", {"max_ammo": 1.5}, "GameConfig.max_ammo=1.5 is invalid: must be an integer "
                                      ">= 0 and at most 10,000"),
    # The bounds that keep one game finite (a replay a visitor uploads is held to them).
    ("GameConfig", {"torpedo_lifetime": 10**9}, "GameConfig.torpedo_lifetime=1000000000 is "
                                                "invalid: must be an integer >= 1 and at most "
                                                "100,000"),
    ("GameConfig", {"max_episode_steps": 10**8}, "GameConfig.max_episode_steps=100000000 is "
                                                 "invalid: must be an integer >= 1 and at most "
                                                 "10,000,000"),
    ("GameConfig", {"start_positions": "x"}, "GameConfig.start_positions='x' is invalid: must "
                                             "be one of ('classic', 'orbit', "
                                             "'eccentric_or_rest', 'varied')"),
    ("GameConfig", {"controls": "keys"}, "GameConfig.controls='keys' is invalid: must be one of "
                                         "('six', 'switches')"),
    ("GameConfig", {"star_radius": 1e9}, "GameConfig.star_radius=1000000000.0 is invalid: must "
                                         "be >= 0 and smaller than half the screen (512)"),
    ("GameConfig", {"hyperspace": 1}, "GameConfig.hyperspace=1 is invalid: must be true or "
                                      "false"),
    ("PPOConfig", {"hidden_sizes": (64, 0)}, "PPOConfig.hidden_sizes=(64, 0) is invalid: must "
                                             "be a non-empty tuple of positive layer sizes"),
    ("PPOConfig", {"gamma": 1.5}, "PPOConfig.gamma=1.5 is invalid: must be in [0, 1]"),
    ("DQNConfig", {"learning_starts": -1}, "DQNConfig.learning_starts=-1 is invalid: must be an "
                                           "integer >= 0"),
    ("LeagueConfig", {"curriculum": ()}, "LeagueConfig.curriculum=() is invalid: must be a "
                                         "non-empty tuple of pilot specs"),
    ("SFTConfig", {"view": 3}, "SFTConfig.view=3 is invalid: must be 1 (where things are) or 2 "
                               "(and the aim); lm/view.py says what each reads"),
    ("DaggerConfig", {"opponents": ("",)}, "DaggerConfig.opponents=('',) is invalid: must be a "
                                           "non-empty list of pilot specs (\"self\": the LM "
                                           "itself)"),
    ("GRPOConfig", {"continuations": 2}, "GRPOConfig.continuations=2 is invalid: needs jitter > "
                                         "0 to differ: the game and the scripted pilots are "
                                         "deterministic, so every continuation would be the "
                                         "same game"),
    ("GRPOConfig", {"objective": "ppo"}, "GRPOConfig.objective='ppo' is invalid: must be "
                                         "\"clip\" or \"improved\""),
    ("TrainConfig", {"run_name": "a/b"}, "TrainConfig.run_name='a/b' is invalid: must be a "
                                         "plain folder name of at most 100 characters "
                                         "(--run-name NAME, without '/', '\\' or '..'): the "
                                         "run's files go in checkpoint_dir/NAME and "
                                         "log_dir/NAME"),
    ("TrainConfig", {"algorithm": "x"}, "TrainConfig.algorithm='x' is invalid: must be one of "
                                        "ppo, dqn, bc, cql, sft, grpo, dagger"),
    ("TrainConfig", {"total_timesteps": 0}, "TrainConfig.total_timesteps=0 is invalid: must be "
                                            "an integer > 0 (0 only with a warm start: "
                                            "imitation alone)"),
    ("RewardConfig", {"personality": ""}, "RewardConfig.personality='' is invalid: must be a "
                                          "name"),
]


@pytest.mark.parametrize("kind, fields, says", WORDED, ids=[w[2].split(" is")[0] for w in WORDED])
def test_each_rule_declared_beside_its_field_refuses_in_its_words(kind, fields, says):
    import spacewar_ai.config as config

    with pytest.raises(ValueError) as refused:
        getattr(config, kind)(**fields)
    assert str(refused.value) == says


def test_the_grpo_opponents_of_earlier_files_are_read_and_refused_as_before():
    from spacewar_ai.config import RunConfig

    cfg = RunConfig.from_dict({"grpo": {"opponent": "idle, random", "games": 4}})
    assert cfg.grpo.opponents == ("idle", "random") and cfg.grpo.opponent == "idle,random"
    with pytest.raises(ValueError) as refused:
        RunConfig.from_dict({"grpo": {"opponent": "a,,b"}})
    assert str(refused.value) == ("[grpo] GRPOConfig.opponent='a,,b' is invalid: has an empty "
                                  "name in its comma list")


def test_a_huge_value_is_refused_in_one_short_line(tmp_path, capsys):
    """A config whose run_name is a megabyte: one line that quotes its start and says its
    length, not the value (or a traceback from the file system)."""
    from spacewar_ai.main import main

    path = tmp_path / "big.toml"
    path.write_text('[train]\nrun_name = "' + "a" * 1_000_000 + '"\n')
    with pytest.raises(SystemExit) as exc:
        main(["--config", str(path), "--timesteps", "1000"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and "\n" not in err and len(err) < 600
    assert "(1,000,002 characters)" in err and "at most 100 characters" in err


def test_a_value_of_the_wrong_kind_is_named_by_its_key_in_every_section():
    """An array or a table where a setting takes a name, a number or a switch, in any field of
    any section (those with a rule of their own and those without), is refused as a ValueError
    naming the field, never a TypeError from inside."""
    import dataclasses

    from spacewar_ai.config import RunConfig

    base = RunConfig()
    for section in dataclasses.fields(RunConfig):
        fields = getattr(base, section.name)
        for f in dataclasses.fields(fields):
            if f.name == "hidden_sizes":  # a list of layer sizes is its kind
                continue
            for value in ([1, 2], {"a": 1}):
                with pytest.raises(ValueError, match=f"\\.{f.name}="):
                    RunConfig.from_dict({section.name: {f.name: value}})


def test_a_rules_label_is_what_the_values_are():
    """A config labelled with a preset holds that preset's values, or is refused; one changed
    after a preset says which of the preset's fields it changed, and keeps saying so through a
    saved file."""
    from spacewar_ai.config import GameConfig

    peer = GameConfig.preset("rllib_sw")
    assert peer.rules == "rllib_sw" and peer.frame_skip == 5
    changed = peer.changed(frame_skip=4, torpedo_speed=3.0, width=2048)  # width is no rule's
    assert changed.rules == "rllib_sw+frame_skip+torpedo_speed"
    assert GameConfig.from_dict(changed.to_dict()) == changed
    assert changed.changed(frame_skip=5, torpedo_speed=peer.torpedo_speed).rules == "rllib_sw"
    assert GameConfig.from_dict({"rules": "rllib_sw", "frame_skip": 4}).rules == \
        "rllib_sw+frame_skip"
    with pytest.raises(ValueError, match=r"rules='rllib_sw' is invalid: these values differ "
                                         r"from 'rllib_sw' in \d+ fields"):
        GameConfig(rules="rllib_sw")  # the 1962 values under the peer's name
    with pytest.raises(ValueError, match="these values are 'rllib_sw'"):
        GameConfig(**{**peer.to_dict(), "rules": "rllib_sw+frame_skip"})  # none changed
    assert GameConfig(hyperspace=True, frame_skip=2).rules == "1962"  # its preset sets nothing


def test_mechanics_saved_under_the_peers_name_are_read_by_their_own():
    from spacewar_ai.config import GameConfig

    old = {**GameConfig.preset("rllib_sw").to_dict(), "start_positions": "rllib_sw",
           "move_order": "rllib_sw"}
    game = GameConfig.from_dict(old)
    assert (game.start_positions, game.move_order) == ("eccentric_or_rest", "thrust_first")
    assert game == GameConfig.preset("rllib_sw")


def test_every_games_mask_start_is_found_from_its_width_alone():
    """Pilots handed bare observations (no game) find the mask by the width: every layout a game
    can give must map to the mask start its config says, and only hyperspace holds jumps left."""
    from spacewar_ai.config import mask_start, without_jumps

    for controls in ("six", "switches"):
        for hyperspace in (False, True):
            game = GameConfig(controls=controls, hyperspace=hyperspace)
            assert mask_start(game.obs_dim) == game.mask_start
            assert (without_jumps(game.obs_dim) is not None) == hyperspace
    with pytest.raises(ValueError, match=r"^observations 45 values wide come from no game.*46"):
        mask_start(45)
