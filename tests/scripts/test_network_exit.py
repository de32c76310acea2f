"""Expert iteration for a network (docs/log/probes/network_exit.py): the planner labels the
student's own states, the student learns its moves, and the result plays as any checkpoint."""

from spacewar_ai.agents.saved import load_agent
from spacewar_ai.config import GameConfig
from spacewar_ai.pilots.build import PRETRAINED_PATH, make_pilot
from spacewar_ai.rating.match import play_match
from tests.helpers import load_script

probe = load_script("network_exit")
Aggregate, network_round, save_student = probe.Aggregate, probe.network_round, probe.save_student


def test_a_network_student_learns_the_planners_moves_on_its_own_states(tmp_path):
    """The shipped network as the student of a planner over the idle pilot (a teacher whose
    moves differ from the student's almost everywhere, so the change is plain): its agreement
    with the planner at the states it reaches itself rises from one round to the next, the
    aggregate grows, and the student saved plays as a checkpoint."""
    config = GameConfig()
    agent, _ = load_agent(PRETRAINED_PATH, "cpu", None, config.obs_dim)
    teacher = "search:idle+heuristic:medium@samples=2@horizon=20"
    aggregate = Aggregate()
    rounds = [network_round(agent, teacher, ("heuristic:medium",), 4, seed=11 + k,
                            config=config, aggregate=aggregate, epochs=20, batch_size=32,
                            learning_rate=1e-3)
              for k in range(2)]
    first, second = rounds
    assert first["decisions"] > 0 and second["aggregate"] == first["decisions"] + \
        second["decisions"]
    assert first["agreement_own"] < 0.5 < second["agreement_own"], rounds
    # after the first fit the student makes most of the moves the planner overrode
    assert first["overrides_learned"] > 0.5, first
    path = save_student(agent, tmp_path / "exit" / "student.pt", rounds, teacher)
    student = make_pilot(f"ppo:{path}")
    result = play_match(student, "idle", 2, seed=3)
    assert result.n == 2 and student.name == "ppo:exit/student.pt"
