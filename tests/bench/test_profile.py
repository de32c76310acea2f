"""The per-part profile of a PPO run (bench/profile.py): every part is clocked in a real run,
a call inside another is counted once, and the parts never add up to more than the run."""

from spacewar_ai.bench.profile import BESIDE, FEATURES, FORWARD, profile_run


def test_each_part_of_a_short_run_is_clocked_once():
    spent, decisions, wall = profile_run(seconds=1.0, seed=3, threads=1)
    assert decisions > 0 and decisions % (256 * 64) == 0  # whole rollouts of the default run
    for part in (FORWARD, FEATURES, "the league's opponents", "the PPO update",
                 "the engine's step (and both ships' observations)", "storing the step",
                 "waiting for the opponent model's fit", "TensorBoard", "checkpoints"):
        assert spent[part] > 0, part
    # The model learns in a thread of its own, beside the learner's parts, which alone add up
    # to no more than the run.
    assert spent[BESIDE] > 0
    assert sum(v for part, v in spent.items() if part != BESIDE) <= wall
