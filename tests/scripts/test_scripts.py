"""The measurement scripts behind docs/ladder.md and docs/personalities.md, on tiny budgets:
they run end to end and write the tables and files their docs link to."""

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.commands import script
from tests.helpers import ROOT, load_script, script_path


def _script(tmp_path, name, *args, **env_vars):
    env = dict(os.environ, MINARI_DATASETS_PATH=str(tmp_path / "minari"), **env_vars)
    out = script(script_path(name), *args, cwd=tmp_path, env=env,
                 timeout=3600)  # a safety net for a loaded host, not a measurement
    # a script that runs pytest reports its failures on standard output
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    return out


@pytest.mark.slow
def test_ladder_writes_every_stage(tmp_path):
    _script(tmp_path, "ladder", "--games", "4", "--cql-steps", "200", "--ppo-minutes", "0.05",
            "--eval-games", "4", "--train-eval-games", "4", "--scratch-minutes", "0.05",
            "--warm-decisions", "2000", "--out", "ladder.md")
    table = (tmp_path / "ladder.md").read_text()
    for stage in ("| BC |", "| CQL |", "| PPO from CQL |", "| PPO from scratch"):
        assert stage in table
    rows = json.loads((tmp_path / "ladder.json").read_text())["rows"]
    assert [r["hard"]["games"] for r in rows] == [4, 4, 4, 4]
    for stage in ("bc", "cql", "ppo", "scratch"):
        assert (tmp_path / "checkpoints" / f"ladder-{stage}-s0" / "best.pt").is_file()


@pytest.mark.slow
def test_personalities_trains_and_charts_each_one(tmp_path):
    _script(tmp_path, "personalities", "--timesteps", "2048", "--num-envs", "16", "--games",
            "4", "--pairing-games", "2", "--train-eval-games", "4", "--out", "p.md")
    table = (tmp_path / "p.md").read_text()
    styles = json.loads((tmp_path / "p.json").read_text())["styles"]
    assert set(styles) == {"standard", "aggressive", "survival", "efficient", "sniper"}
    for name in styles:
        assert f"| {name} |" in table
        assert sum(styles[name]["ends"].values()) == 4
    assert (tmp_path / "p-win.png").stat().st_size > 1000


@pytest.mark.slow
def test_web_tour_measures_latency_and_photographs_the_pages(tmp_path):
    pytest.importorskip("playwright")
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("no browser at /usr/bin/chromium: apt-get install chromium")
    out = _script(tmp_path, "web_tour", "--trials", "3", "--seconds", "1",
                  "--screenshots", "shots")
    latency = next(line for line in out.stdout.splitlines() if line.startswith("key press"))
    assert "3 presses: median" in latency
    fps = float(out.stdout.split("per second while a game plays: ")[1].split()[0])
    assert 20 < fps < 70  # the game streams 50 frames a second
    shots = {p.name for p in (tmp_path / "shots").iterdir()}
    # The replays page is photographed when a replay exists: here only if the round played for
    # the Play page's picture ended (and was saved) in time.
    assert {"web-play.png", "web-watch.png", "web-tournaments.png"} <= shots
    assert shots <= {"web-play.png", "web-watch.png", "web-tournaments.png", "web-replays.png"}
    assert all((tmp_path / "shots" / name).stat().st_size > 10_000 for name in shots)


def test_strength_table_panel_cells_are_the_panel_commands_games(tmp_path):
    """The table's panel cells are `--evaluate --panel`'s games, so the figures in
    docs/strength.md reproduce with either command."""
    from spacewar_ai.rating.panel import evaluate_panel, panel_specs

    out = _script(tmp_path, "strength", "--games", "2", "--agents", "medium=heuristic:medium",
                  "--out", "s.json")
    assert "| medium: `heuristic:medium` (2) |" in out.stdout
    (row,) = json.loads((tmp_path / "s.json").read_text())
    assert len(row["cells"]) == 2 + len(panel_specs())
    panel = evaluate_panel("heuristic:medium", 2, 0, quiet=True)
    assert [row["cells"][r["spec"]]["wins"] for r in panel["rows"]] == \
        [r["wins"] for r in panel["rows"]]
    assert row["panel_mean"] == pytest.approx(panel["mean"])


def test_strength_reruns_one_row_and_keeps_the_others(tmp_path):
    agents = "medium=heuristic:medium;easy=heuristic:easy"
    _script(tmp_path, "strength", "--games", "2", "--agents", agents, "--out", "s.json")
    out = _script(tmp_path, "strength", "--games", "4", "--agents", agents, "--out", "s.json",
                  "--only", "heuristic:easy")
    rows = json.loads((tmp_path / "s.json").read_text())
    assert [(r["spec"], r["games"]) for r in rows] == [("heuristic:medium", 2),
                                                       ("heuristic:easy", 4)]
    assert "| medium: `heuristic:medium` (2) |" in out.stdout
    bad = script(ROOT / "scripts" / "strength.py", "--agents", agents, "--only",
                 "heuristic:hard", "--out", "s.json", cwd=tmp_path, timeout=120)
    assert bad.returncode != 0 and bad.stderr.strip().count("\n") == 0
    assert "'heuristic:hard' is not a row" in bad.stderr


@pytest.mark.slow
def test_adapt_curve_plays_both_planners_match_after_match(tmp_path):
    out = _script(tmp_path, "adapt_curve", "--opponent", "heuristic:medium", "--matches", "2",
                  "--games", "2")
    lines = out.stdout.splitlines()
    assert lines[0].startswith("match 1 against heuristic:medium (2 games, seed 0, rules 1962): "
                               "foreseen ")
    assert lines[1].startswith("match 2 against heuristic:medium (2 games, seed 1000, rules 1962)")
    assert lines[2].startswith("all matches: adapt: ") and "/4 (" in lines[2]


@pytest.mark.slow
def test_adapt_curve_plays_the_game_its_config_names(tmp_path):
    out = _script(tmp_path, "adapt_curve", "--policy", "pretrained:rllib_sw", "--config",
                  str(ROOT / "examples" / "rllib_sw_1f9e818.toml"), "--opponent",
                  "heuristic:medium", "--matches", "1", "--games", "2")
    assert out.stdout.startswith("match 1 against heuristic:medium (2 games, seed 0, rules "
                                 "rllib_sw_1f9e818): foreseen "), out.stdout


def test_adapt_curve_refuses_a_config_it_cannot_read_in_one_line(tmp_path):
    out = script(script_path("adapt_curve"), "--config", str(tmp_path / "missing.toml"),
                 cwd=tmp_path, timeout=600)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"adapt_curve: config file {tmp_path / 'missing.toml'}: no such file"]


@pytest.mark.slow
def test_engine_ab_times_two_engine_files_side_by_side(tmp_path):
    # The kernels run as Python: what is tested is the script (two engines loaded apart, timed
    # in pairs, reported), and compiling them would only repeat the engine's own tests' work.
    engine = str(ROOT / "spacewar_ai" / "game" / "engine.py")
    out = _script(tmp_path, "engine_ab", engine, engine, "--games", "8", "--pairs", "4",
                  "--steps", "2", "--observe", NUMBA_DISABLE_JIT="1")
    assert out.stdout.startswith("8 games with observations, 4 pairs: A ") and "B/A median " in out.stdout
    missing = script(ROOT / "scripts" / "engine_ab.py", engine, "nowhere.py", cwd=tmp_path,
                     timeout=120)
    assert missing.returncode != 0 and ("nowhere.py: neither an engine file nor a spacewar_ai "
                                        "package folder") in missing.stderr
    # Whole package copies.
    package = str(ROOT / "spacewar_ai")
    out = _script(tmp_path, "engine_ab", package, package, "--games", "4", "--pairs", "2",
                  "--steps", "30", NUMBA_DISABLE_JIT="1")
    assert out.stdout.startswith("4 games of the vector env, 2 pairs: A ")
    out = _script(tmp_path, "engine_ab", package, package, "--single", "--pairs", "2",
                  NUMBA_DISABLE_JIT="1")
    assert out.stdout.startswith("1 game of the single env, 2 pairs: A ")


def test_engine_profile_splits_the_vector_envs_step_into_its_parts(tmp_path):
    out = _script(tmp_path, "engine_profile", "--games", "8", "--steps", "3", "--repeats", "2")
    lines = out.stdout.splitlines()
    assert lines[0] == "8 games, medians of 2 timings of 3 steps:"
    us = {line[:48].strip(): float(line[48:].split(" us")[0]) for line in lines[1:]}
    assert list(us) == ["the engine's step (GameBatch.step, restarts)",
                        "both ships' observations (GameBatch.observe)",
                        "the vector env's step_both, in all", "the default opponent's choices",
                        "the vector env's step against it, in all",
                        "the env's own work (step_both's rest)"]
    assert all(v > 0 for v in list(us.values())[:5])  # each part measured


@pytest.mark.slow
def test_web_load_drives_a_local_server_and_reports(tmp_path):
    pytest.importorskip("uvicorn")
    web_load = load_script("web_load")
    out = _script(tmp_path, "web_load", "--players", "1", "--watchers", "1", "--seconds", "8",
                  "--submit-every", "3", "--stuck", "--hostile")
    figures = dict(line.split(None, 1) for line in out.stdout.splitlines()[1:])
    # Behaviour, whatever the host's load: both games started and showed their frames beside
    # the stuck one, no socket failed, the arena took the submissions, and every figure the
    # report promises is there (their values are the benchmark's business, not this test's).
    assert figures["games_started"] == "2" and figures["socket_errors"] == "0"
    assert int(figures["frames_per_game_min"]) >= web_load.MIN_FRAMES
    assert int(figures["submissions"]) >= 2 and figures["hostile_refused"].endswith(" of 2")
    for key in ("page_ms_p50", "page_ms_p99", "frame_gap_ms_p99", "memory_mb_peak"):
        assert float(figures[key].replace(",", "")) > 0  # measured, not missing


def test_cleanrl_curve_records_every_game_the_example_plays(tmp_path):
    """scripts/cleanrl_curve.py's per-run mode on the example: every game of the budget is
    recorded with the decisions played so far, its points and a winner, in order. (Its CleanRL
    half needs a clone of CleanRL, which the tests cannot download.)"""
    example_file = ROOT / "examples" / "cleanrl_ppo.py"  # stands in for the path checked
    out = tmp_path / "games.json"
    _script(tmp_path, "cleanrl_curve", "--cleanrl-ppo", str(example_file), "--one", "example",
            "--seed", "3", "--total-timesteps", "4096", "--out", str(out),
            "--log-dir", str(tmp_path / "runs"))
    games = json.loads(out.read_text())["games"]
    assert len(games) >= 4
    decisions = [d for d, _, _ in games]
    assert decisions == sorted(decisions) and decisions[-1] <= 4096
    assert {w for _, _, w in games} <= {-1, 0, 1}
    assert all(points < 0 for _, points, w in games if w == 1)  # a loss costs points
    assert list((tmp_path / "runs").glob("cleanrl_ppo__3__*/events.out.tfevents.*"))


def test_cleanrl_curve_names_a_missing_cleanrl_file(tmp_path):
    out = script(ROOT / "scripts" / "cleanrl_curve.py", "--cleanrl-ppo", tmp_path / "ppo.py",
                 timeout=600)
    assert out.returncode == 2
    assert out.stderr.strip().endswith("give the path of cleanrl/ppo.py in a clone of "
                                       "github.com/vwxyzjn/cleanrl")
    assert len(out.stderr.strip().splitlines()) == 1


def test_lm_ceiling_reads_back_what_the_prompt_says_and_reports(tmp_path):
    """docs/log/probes/lm_ceiling.py: the prompt's numbers are exactly its text's (a state's situation
    read back), and a small run writes the agreement of every view on every set of states."""
    from spacewar_ai.lm.view import situation
    from tests.helpers import game_observations

    ceiling = load_script("lm_ceiling")
    obs = game_observations()[:200]
    numbers = [ceiling.prompt_numbers(situation(o)) for o in obs]
    assert {len(n) for n in numbers} == {24}
    assert [n[13:19] for n in numbers] == [(o[30:36] > 0.5).astype(float).tolist() for o in obs]
    assert all(n[19:] == [0.0, 0.0, 0.0, 1.0, 1.0] for n in numbers)  # view 1 says no aim
    said = ceiling.prompt_numbers("Enemy 35 right 4 away, closing. Lead 30 right in 6, shot "
                                  "misses by 2. Threat passes 1 off. Fuel 50, torpedoes 16. "
                                  "Valid: 0,2.\nAction:\n")
    assert said[:7] == [1.0, 35 / 180, 0.4, 0.0, 0.0, 0.0, 0.0]
    assert said[19:] == [1.0, 30 / 180, 0.6, 2 / 9, 1 / 9]
    out = tmp_path / "c.json"
    _script(tmp_path, "lm_ceiling", "--games", "6", "--epochs", "2", "--student",
            "heuristic:medium", "--student-games", "2", "--json", str(out))
    figures = json.loads(out.read_text())
    assert set(figures["agreement"]) == {"prompt", "prompt v2", "observation", "tactical"}
    for row in figures["agreement"].values():
        assert set(row) == {"teacher", "noisy", "student"}
        assert all(0.0 <= v <= 1.0 for v in row.values())
    assert min(figures["states"].values()) > 0
    assert 0.0 <= figures["student_agreement"] < 1.0  # medium is not hard


def test_lm_ceiling_takes_any_teacher_a_planner_included(tmp_path):
    """--teacher: the labels are heard from the teacher as the games are played, so a student
    that is its teacher agrees with it everywhere, a planner over idle labels the student's
    states too, and a teacher that cannot be built is refused in one line before any game."""
    out = tmp_path / "c.json"
    _script(tmp_path, "lm_ceiling", "--games", "4", "--epochs", "1", "--student",
            "heuristic:medium", "--student-games", "2", "--teacher", "heuristic:medium",
            "--json", str(out))
    assert json.loads(out.read_text())["student_agreement"] == 1.0
    planner = "search:idle+heuristic:medium@samples=1@horizon=5"
    _script(tmp_path, "lm_ceiling", "--games", "4", "--epochs", "1", "--student",
            "heuristic:medium", "--student-games", "2", "--teacher", planner, "--json", str(out))
    figures = json.loads(out.read_text())
    assert figures["teacher"] == planner and figures["student_agreement"] < 1.0
    assert min(figures["states"].values()) > 0
    refused = script(script_path("lm_ceiling"), "--teacher", "search:nothere.pt",
                     cwd=tmp_path, timeout=300)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "nothere.pt" in refused.stderr


def test_lm_ceiling_reads_a_lookahead_of_the_exact_state(tmp_path):
    """--lookahead H: at every recorded decision the values are those of the state the pilot
    acted in, so a teacher that is that same lookahead always picked an action its values put
    at the top, and two more inputs are measured."""
    from spacewar_ai.pilots.build import make_pilot
    from spacewar_ai.pilots.search import TIE

    ceiling = load_script("lm_ceiling")
    same = f"search:{ceiling.LOOKAHEAD}+{ceiling.LOOKAHEAD}@samples=1@horizon=8@jitter=0"
    obs, _, _, labels, ahead = ceiling.collect(make_pilot(same), 4, seed=3, lookahead=8)
    valid = obs[:, 30:36] > 0.5
    best = np.where(valid, ahead, -np.inf).max(axis=1)
    assert len(labels) > 50 and (ahead[np.arange(len(labels)), labels] >= best - TIE).all()
    assert (ahead != 0).any()  # some endings within 8 decisions
    out = tmp_path / "c.json"
    _script(tmp_path, "lm_ceiling", "--games", "4", "--epochs", "1", "--lookahead", "5",
            "--json", str(out))
    figures = json.loads(out.read_text())
    assert figures["lookahead"] == 5 and {"prompt v2 + lookahead", "tactical + lookahead"} < \
        set(figures["agreement"])


@pytest.mark.slow
def test_lm_ladder_runs_every_stage_and_each_against_the_one_before(tmp_path):
    """docs/log/probes/lm_ladder.py on the tiny model: the teacher's games, SFT, DAgger and GRPO (from
    the DAgger adapter, against two opponents), then the matches and both head to heads, with
    every stage's command and wall clock in the JSON."""
    pytest.importorskip("transformers")
    from tests.tiny_lm import make_tiny_lm

    base = make_tiny_lm(tmp_path / "tiny")
    out = tmp_path / "ladder.json"
    run = _script(tmp_path, "lm_ladder", "--base", str(base), "--games", "20",
                  "--sft-examples", "16", "--view", "1", "--dagger-rounds", "1",
                  "--dagger-games", "8", "--dagger-steps", "2", "--grpo-games", "4",
                  "--grpo-games-per-iteration", "4", "--grpo-scored", "8", "--grpo-states", "4",
                  "--eval-games", "2", "--torch-threads", "1", "--json", str(out))
    figures = json.loads(out.read_text())
    assert list(figures["stages"]) == ["datagen", "sft", "dagger", "grpo"]
    assert "--init-from ladder-dagger --opponent heuristic:medium,heuristic:hard" in \
        figures["stages"]["grpo"]["command"]
    assert set(figures["head_to_head"]) == {"DAgger against SFT", "GRPO against DAgger"}
    assert all(r["games"] == 2 for r in figures["head_to_head"].values())
    assert {m["pilot"] for m in figures["matches"]} == {
        "base (untrained)", "SFT", "DAgger", "GRPO", "teacher (heuristic:hard)"}
    assert "| GRPO |" in run.stdout and "DAgger against SFT, head to head" in run.stdout
    meta = json.loads((tmp_path / "models" / "adapters" / "ladder-grpo" /
                       "spacewar_lm.json").read_text())
    assert meta["init_from"] == "ladder-dagger"


def test_grpo_noise_scores_the_decisive_states_twice_and_reports(tmp_path):
    pytest.importorskip("transformers")
    from tests.tiny_lm import make_tiny_lm

    tiny = make_tiny_lm(tmp_path / "tiny")
    out = tmp_path / "noise.json"
    run = _script(tmp_path, "grpo_noise", "--games", "4", "--states", "64", "--horizon", "30",
                  "--continuations", "1,2", "--adapters", f"lm:{tiny}", "--json", str(out))
    figures = json.loads(out.read_text())
    assert [r["continuations"] for r in figures["rows"]] == [1, 2]
    assert 0 < figures["decisive"] <= figures["states"] == 64
    assert all(0.0 <= r["agree"] <= 1.0 and 0.0 <= r["plain_agrees"] <= 1.0
               and -1.0 <= r["correlation"] <= 1.0 for r in figures["rows"])
    assert "| 2 |" in run.stdout
    (lm,) = figures["adapters"]
    assert lm["pilot"] == f"lm:{tiny}" and 0.0 < lm["p_best"] < 1.0
    assert lm["uniform"] <= lm["best"] and min(lm["uniform"], lm["expected"]) <= lm["best"]


def test_network_exit_runs_its_rounds_and_reports_each(tmp_path):
    """Two tiny rounds, the second planning over the first round's student."""
    out = tmp_path / "rows.json"
    run = _script(tmp_path, "network_exit", "--rounds", "2", "--games", "2", "--opponents",
                  "heuristic:medium", "--teacher", "search:{student}+heuristic:hard@samples=1"
                  "@horizon=10", "--judges", "idle", "--eval-games", "2", "--out", "exit",
                  "--json", str(out))
    rows = json.loads(out.read_text())
    assert [r["round"] for r in rows] == [1, 2]
    assert rows[0]["teacher"] == "search:pretrained+heuristic:hard@samples=1@horizon=10"
    assert rows[1]["teacher"] == "search:ppo:exit/round1.pt+heuristic:hard@samples=1@horizon=10"
    assert rows[1]["aggregate"] > rows[0]["aggregate"] > 0
    assert (tmp_path / "exit" / "round2.pt").is_file() and "| 2 |" in run.stdout


def test_network_exit_fits_on_the_device_asked_for(tmp_path):
    """`--device cuda` fits the student on the GPU where there is one (one tiny round), and is
    refused in one line before any game where there is none."""
    import torch

    args = ["--rounds", "1", "--games", "2", "--opponents", "heuristic:medium", "--teacher",
            "heuristic:hard", "--judges", "idle", "--eval-games", "2", "--out", "exit",
            "--device", "cuda"]
    if torch.cuda.is_available():
        _script(tmp_path, "network_exit", *args)
        from spacewar_ai.agents.saved import load_agent

        _, ckpt = load_agent(tmp_path / "exit" / "round1.pt")
        assert ckpt["metadata"]["expert_iteration"]["rounds"][0]["decisions"] > 0
        return
    refused = script(script_path("network_exit"), *args, cwd=tmp_path, timeout=300)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "no CUDA GPU is available: use --device cpu" in refused.stderr
    assert not (tmp_path / "exit").exists()


def test_planner_overrides_asks_twice_and_fits_a_classifier(tmp_path):
    """A few games: the shares are printed and written, the second asking is the same planner
    with one more sample (its other settings kept), and a teacher that is not a planner is
    refused in one line before any game."""
    tool = load_script("planner_overrides")
    assert tool.second_asking("search:pretrained+heuristic:hard@margin=0.25") == \
        "search:pretrained+heuristic:hard@margin=0.25@samples=9"
    assert tool.second_asking("search:idle@samples=2") == "search:idle@samples=3"
    out = tmp_path / "o.json"
    run = _script(tmp_path, "planner_overrides", "--games", "4", "--epochs", "2", "--teacher",
                  "search:pretrained+heuristic:hard@samples=2@horizon=10", "--json", str(out))
    figures = json.loads(out.read_text())
    assert figures["states"] > 0 and "held out overrides" in run.stdout
    assert {"overrides", "asked again, the same action", "trained overrides",
            "held out other moves"} <= set(figures)
    refused = script(script_path("planner_overrides"), "--teacher", "heuristic:hard",
                     cwd=tmp_path, timeout=300)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "not a planner" in refused.stderr


@pytest.mark.slow
def test_foresight_learns_an_opponents_moves_from_both_readings(tmp_path):
    """A scripted opponent decides from what our view reads, so a network learning its moves
    from that reading foresees most of them on games it never saw; a bad count of games and a
    policy that is not a network are refused in one line before any game."""
    run = _script(tmp_path, "foresight", "--opponent", "heuristic:medium", "--games", "220",
                  "--learn", "20", "--steps", "300")
    head, ours, peer = run.stdout.splitlines()
    assert head.startswith("pretrained:rllib_sw against heuristic:medium, 220 games in "
                           "rllib_sw_1f9e818 (seed 10000; it won ")
    assert ours.startswith("  learned from 20 games (") and "reading ours: foreseen " in ours
    assert "reading peer: foreseen " in peer
    assert float(ours.split("foreseen ")[1].split("%")[0]) > 50.0, ours
    for args, says in ((("--learn", "30", "--games", "220"), "--learn '30' must be whole "
                        "numbers of games from 1 to --games minus 200 (20)"),
                       (("--policy", "heuristic:hard"), "--policy 'heuristic:hard' is not a "
                        "network")):
        refused = script(script_path("foresight"), "--opponent", "heuristic:medium", *args,
                         cwd=tmp_path, timeout=600)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
        assert says in refused.stderr, refused.stderr


@pytest.mark.slow
def test_web_abuse_measures_every_phase_and_loses_nothing(tmp_path):
    """A small run of the abuse harness: every phase's figure is printed, the hostile visitors
    are refused or let go by the budgets (no idle socket held past its deadlines, refused
    uploads over the allowance never checked), an honest upload after a crowd gets a rating,
    and nothing is lost."""
    pytest.importorskip("uvicorn")
    pytest.importorskip("onnx")
    out = _script(tmp_path, "web_abuse", "--players", "0", "--watchers", "1", "--refused", "6",
                  "--idle", "6", "--trickle", "3", "--hold", "12", "--crowd", "3",
                  "--seconds", "900", "--abandoned", "2", "--busy", "8", "--costly-steps", "5000",
                  "--replays", "300", "--answer-seconds", "4", "--churn", "15",
                  "--tournament-games", "2000",
                  "--addresses", "30", "--crowd-seconds", "30", "--newcomers", "2", "--limits",
                  "games_per_client=8,attempts_per_hour=4,head_seconds=4,"
                  "first_message_seconds=4,body_seconds=8,answer_seconds=4")
    figures = dict(line.split(None, 1) for line in out.stdout.splitlines()[1:])
    assert figures["refused_uploads"] == "6 of 6 refused (2 for the allowance, before any check)"
    assert figures["replay_extreme"].split(": ")[1].startswith("400 in ")
    assert figures["idle_websockets_held"].startswith("0 of 6")
    assert figures["idle_connections_held"].startswith("0 of 6")
    assert figures["trickled_uploads_held"].startswith("0 of 3")
    assert int(figures["pairings_queued_after_crowd"]) <= 3 * 8 + 10
    games = re.search(r"after (\d+) games$", figures["honest_first_rating"])
    assert games and int(games.group(1)) % 20 == 0  # rated from whole pairings
    assert figures["lost"] == "nothing"
    assert figures["oversized_head"].startswith("431 in")
    assert figures["fresh_check_after_abandoned"].startswith("200 in")
    # The checkers' crowd did not spend the honest uploader's attempts (4 an hour here).
    assert figures["honest_upload_beside_checkers_crowd"].startswith("accepted after")
    assert "0 over its allowance" in figures["honest_upload_beside_checkers_crowd"]
    assert figures["replays_listing_ms"].startswith("300 files")
    # Both lanes answer a fresh visitor after the churn, and nothing in the log is a traceback.
    assert figures["churn_fresh_replay"].startswith("200 after")
    assert figures["churn_fresh_watch"].startswith("start after")
    assert figures["log_tracebacks"] == "0 tracebacks, 0 InvalidStateError"
    # One address's slow readers leave room for another visitor's answer.
    assert "another visitor's replay: 200" in figures["one_address_answers"]
    assert figures["big_tournament"].startswith("2,000 games")
    assert figures["crowd_newcomers"].startswith("2 of 2 answered")
    assert [p.rsplit(" ", 1)[0] for p in figures["phase_seconds"].split(", ")][-2:] == [
        "big tournament", "thousand addresses"]  # each phase's time, in order
    for key in ("server_cpu_s_all_refused", "server_memory_mb_end", "page_ms_all",
                "slow_readers_memory_mb"):
        assert key in figures  # measured, not missing


@pytest.mark.slow
def test_arena_scale_pairs_by_rating_and_times_the_board(tmp_path):
    (tmp_path / "tmp").mkdir()
    out = _script(tmp_path, "arena_scale", "--entrants", "12", "--board", "40",
                  TMPDIR=str(tmp_path / "tmp"))
    assert not any((tmp_path / "tmp").iterdir())  # its databases go when it ends
    lines = out.stdout.splitlines()
    played, every = (int(x.replace(",", "")) for x in re.search(
        r"([\d,]+) pairings played \(every pair: ([\d,]+)\)", lines[0]).groups())
    assert played < every  # a bounded number per entrant, not every pair
    rows = [line.split() for line in lines[2:] if line.strip() and line.split()[0].isdigit()]
    intervals = [float(r[2]) for r in rows]
    assert rows and intervals[0] > intervals[-1] > 0  # narrower as pairings are played
    assert lines[-1].startswith("board: 40 entrants") and "GET /api/arena median" in lines[-1]


@pytest.mark.slow
def test_weight_hashes_prints_one_hash_a_run_the_same_each_time(tmp_path):
    runs = [_script(tmp_path, "weight_hashes", "--only", "ppo-step").stdout for _ in range(2)]
    lines = [line for line in runs[0].splitlines() if line.startswith("ppo-step ")]
    assert len(lines) == 1 and len(lines[0].split()[1]) == 64  # a SHA-256 in hex
    assert lines[0] in runs[1].splitlines()  # the same seed, the same weights
    # what else the hashes depend on, so that two lists are compared knowing it
    machine = runs[0].splitlines()[0]
    assert machine.startswith("machine: ") and f"torch {torch.__version__}," in machine
    bad = script(ROOT / "scripts" / "weight_hashes.py", "--only", "ppo,nope", cwd=tmp_path,
                 timeout=300)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "ppo" in bad.stderr
    assert bad.stdout == ""  # refused before it prints or runs anything


def test_difficulty_ladder_rates_every_level_and_follows_each_stand_in(tmp_path):
    out = _script(tmp_path, "difficulty_ladder", "--levels", "heuristic:easy,heuristic:medium",
                  "--games", "6", "--planner-games", "2", "--standin-games", "4",
                  "--follow-games", "3", "--follow-runs", "2", "--cost-repeats", "1",
                  "--out", "ladder.json")
    data = json.loads((tmp_path / "ladder.json").read_text())
    levels = data["levels"]
    assert [level["level"] for level in levels] == [1, 2] and "below" in levels[1]
    assert levels[1]["below"]["games"] == 6 and levels[0]["ms"] > 0
    # Pool pilots that are levels are one entrant: the same rating in both places.
    assert data["pool"]["heuristic:easy"]["rating"] == levels[0]["rating"]
    assert set(data["standins"]) == {"novice", "casual", "skilled"}
    for name, run in data["follow"].items():
        assert len(run["runs"]) == 2 and all(len(r["levels"]) == 3 for r in run["runs"])
    assert "| 2 | `heuristic:medium` |" in out.stdout
    # Auto again on the same ladder, the ladder kept.
    _script(tmp_path, "difficulty_ladder", "--follow-only", "--follow-games", "2",
            "--follow-runs", "1", "--out", "ladder.json")
    again = json.loads((tmp_path / "ladder.json").read_text())
    assert again["levels"] == levels and len(again["follow"]["novice"]["runs"]) == 1


@pytest.mark.slow
def test_suite_profile_sorts_the_suites_processes_by_kind(tmp_path):
    out = _script(tmp_path, "suite_profile", "--json", str(tmp_path / "rows.json"), "--", "-n",
                  "0", "tests/util/test_processes.py")
    summary = next(line for line in out.stdout.splitlines() if line.startswith("suite: exit 0"))
    machine = float(re.search(r"spent ([\d,]+) CPU-s", summary).group(1).replace(",", ""))
    kinds = [re.fullmatch(r"\s*[\d,]+\s+\d+%\s+(\d+)  (.+)", line)
             for line in out.stdout.splitlines()]
    table = {kind.group(2): int(kind.group(1)) for kind in kinds if kind}
    assert table["pytest and its workers (tests in-process)"] >= 1
    assert table["CLI commands and other package processes"] >= 3  # the tests' own children
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert sum(table.values()) == len(rows)  # the table counts every row --json wrote
    assert sum(r["cpu"] for r in rows) <= machine + 1  # what it saw, the machine spent
    bad = script(ROOT / "scripts" / "suite_profile.py", "--json", tmp_path / "no" / "rows.json",
                 timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--json" in bad.stderr


@pytest.mark.slow
def test_readme_figures_reruns_the_tables_quick_figures_and_catches_one_that_moved(
        tmp_path, monkeypatch, capsys):
    """The suite's short form of scripts/readme_figures.py: README's figures as they stand, then
    a copy of README whose figure was edited, which the script reports and fails on."""
    figures = load_script("readme_figures")
    assert figures.main(["--quick"]) == 0
    out = capsys.readouterr().out.splitlines()
    quick = sum(figure.quick for figure in figures.FIGURES)
    assert len(out) == quick >= 3 and all(line.startswith("same ") for line in out), out
    edited = tmp_path / "README.md"
    edited.write_text(figures.README.read_text().replace("| 57.0% |", "| 58.0% |"))
    monkeypatch.setattr(figures, "README", edited)
    assert figures.main(["--quick"]) == 1
    assert "DIFFERS   58.0% in README,  57.0% now" in capsys.readouterr().out
