"""scripts/sb3_curve.py: the Stable-Baselines3 peers, PPO and DQN, trained and measured as ours."""

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.helpers import load_script

sb3_curve = load_script("sb3_curve")


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["ppo", "dqn"])
def test_the_peer_logs_a_curve_and_reports_like_evaluate(tmp_path, capsys, algorithm):
    # Evaluations are due every 60 ms, shorter than one evaluation (100 games) takes, so the
    # second falls right after the first whatever the host's speed; a cadence of 1.2 s used to
    # fall inside PPO's first update on a fast host and leave no point on the way, and a budget
    # of 6 s left none on a loaded one.
    assert sb3_curve.main(["--algorithm", algorithm, "--minutes", "0.25", "--eval-every", "0.001",
                           "--run-name", "peer", "--log-dir", str(tmp_path),
                           "--final-opponent", "heuristic:medium", "--final-games", "10"]) == 0
    out = capsys.readouterr().out
    ea = EventAccumulator(str(tmp_path / "peer"))
    ea.Reload()
    rates = ea.Scalars("eval/win_rate")
    minutes = [e.value for e in ea.Scalars("eval/wall_minutes")]
    # A point at the start, at least one on the way, one at the end; the clock only moves on.
    assert len(rates) >= 3 and len(rates) == len(minutes)
    assert minutes == sorted(minutes) and len(set(minutes)) == len(minutes)
    assert 0.25 <= minutes[-1] < 2.0
    assert all(0.0 <= e.value <= 1.0 for e in rates)
    steps = [e.step for e in rates]
    assert steps == sorted(steps) and steps[-1] > steps[0]
    # The last policy's record, in `spacewar-ai --evaluate`'s report.
    assert f"sb3-{algorithm} vs heuristic:medium: 10 games, sides swapped" in out
    assert "95% CI" in out and f"deaths of sb3-{algorithm}:" in out


def test_a_bad_final_game_count_is_named(capsys):
    with pytest.raises(SystemExit):
        sb3_curve.main(["--final-games", "3"])
    assert "--final-games an even number" in capsys.readouterr().err
