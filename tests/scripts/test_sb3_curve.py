"""scripts/sb3_curve.py: the Stable-Baselines3 peers, PPO and DQN, trained and measured as ours."""

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.helpers import load_script

sb3_curve = load_script("sb3_curve")


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["ppo", "dqn"])
def test_the_peer_logs_a_curve_and_reports_like_evaluate(tmp_path, capsys, algorithm):
    # Evaluations fall every 1,000 steps and the run stops at 3,000, so the count of points is
    # the same on a loaded host as on a quiet one; the clock is only a safety net.
    assert sb3_curve.main(["--algorithm", algorithm, "--minutes", "20", "--steps", "3000",
                           "--eval-every-steps", "1000", "--run-name", "peer",
                           "--log-dir", str(tmp_path),
                           "--final-opponent", "heuristic:medium", "--final-games", "10"]) == 0
    out = capsys.readouterr().out
    ea = EventAccumulator(str(tmp_path / "peer"))
    ea.Reload()
    rates = ea.Scalars("eval/win_rate")
    minutes = [e.value for e in ea.Scalars("eval/wall_minutes")]
    # A point at the first step (one step of every env), two on the way, one at the end; the
    # clock only moves on.
    assert [e.step for e in rates] == [{"ppo": 8, "dqn": 1}[algorithm], 1000, 2000, 3000]
    assert len(minutes) == 4 and minutes == sorted(minutes) and len(set(minutes)) == 4
    assert all(0.0 <= e.value <= 1.0 for e in rates)
    # The last policy's record, in `spacewar-ai --evaluate`'s report.
    assert f"sb3-{algorithm} vs heuristic:medium: 10 games, sides swapped" in out
    assert "95% CI" in out and f"deaths of sb3-{algorithm}:" in out


def test_a_bad_final_game_count_is_named(capsys):
    with pytest.raises(SystemExit):
        sb3_curve.main(["--final-games", "3"])
    assert "--final-games an even number" in capsys.readouterr().err
