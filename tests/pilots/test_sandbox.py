"""Strategy files: the allow-list refuses escapes before anything runs, the sandboxed child
contains what gets through (loops, memory bombs, C-level hangs), and failures forfeit games."""

import time
from pathlib import Path

import numpy as np
import pytest

from spacewar_ai.pilots.build import make_pilot
from spacewar_ai.pilots.sandbox import StrategyError, StrategyPilot, validate_source
from spacewar_ai.rating.match import play_match
from spacewar_ai.rating.ratings import standings
from spacewar_ai.rating.tournament import play_round_robin, resolve_entrants
from tests.helpers import ROOT

EXAMPLE = ROOT / "examples" / "strategies" / "aim_and_fire.py"


def _write(tmp_path, body: str, name: str = "s.py") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


ESCAPES = {
    "generator frame walking": (
        "def strategy(obs):\n    g = (x for x in obs)\n    f = g.gi_frame.f_back\n    return 0\n",
        3, "gi_frame"),
    "frame globals": (
        "def strategy(obs):\n    g = (x for x in obs)\n    return g.gi_frame\n", 3, "gi_frame"),
    "format-string attribute path": (
        "def strategy(obs):\n    s = '{0.__class__}'.format(obs)\n    return 0\n", 2, "'__'"),
    "dunder format field alone": (
        "def strategy(obs):\n    s = '{0.__class__}'\n    return 0\n", 2, "'__'"),
    "format method with a clean field": (
        "def strategy(obs):\n    s = '{0.real}'.format(obs[0])\n    return 0\n", 2, "format"),
    "format_map": (
        "def strategy(obs):\n    s = '{a}'.format_map({'a': 1})\n    return 0\n", 2,
        "format_map"),
    "f-string attribute path": (
        "def strategy(obs):\n    s = f'{obs.__class__}'\n    return 0\n", 2, "__class__"),
    "subclasses walk": (
        "def strategy(obs):\n    return ().__class__.__bases__[0].__subclasses__()\n", 2,
        "underscore"),
    "__builtins__ by subscript": (
        "def strategy(obs):\n    e = __builtins__['eval']\n    return 0\n", 2, "__builtins__"),
    "getattr with built strings": (
        "def strategy(obs):\n    n = 'cla' + 'ss'\n    return getattr(obs, n)\n", 3, "getattr"),
    "chr-built dunder names": (
        "def strategy(obs):\n    n = chr(95) * 2 + 'class' + chr(95) * 2\n    return 0\n", 2,
        "'chr'"),
    "import os": ("import os\ndef strategy(obs):\n    return 0\n", 1, "import os"),
    "from os import": ("from os import system\ndef strategy(obs):\n    return 0\n", 1, "from os"),
    "star import": ("from math import *\ndef strategy(obs):\n    return 0\n", 1, "*"),
    "eval": ("def strategy(obs):\n    return eval('1')\n", 2, "eval"),
    "exec": ("def strategy(obs):\n    exec('x = 1')\n    return 0\n", 2, "exec"),
    "open": ("def strategy(obs):\n    open('/etc/passwd')\n    return 0\n", 2, "open"),
    "type": ("def strategy(obs):\n    return type(obs)\n", 2, "type"),
    "vars": ("def strategy(obs):\n    return vars()\n", 2, "vars"),
    "lambda": ("f = lambda x: x\ndef strategy(obs):\n    return 0\n", 1, "lambda"),
    "yield": ("def strategy(obs):\n    yield 0\n", 2, "yield"),
    "class": ("class A:\n    pass\ndef strategy(obs):\n    return 0\n", 1, "class"),
    "try": ("def strategy(obs):\n    try:\n        return 0\n    except Exception:\n"
            "        return 1\n", 2, "try"),
    "with": ("def strategy(obs):\n    with obs:\n        return 0\n", 2, "with"),
    "global": ("X = 0\ndef strategy(obs):\n    global X\n    return 0\n", 3, "global"),
    "async": ("async def strategy(obs):\n    return 0\n", 1, "async"),
    "dunder in a string": ("S = '__import__'\ndef strategy(obs):\n    return 0\n", 1, "__"),
    "print's self": ("def strategy(obs):\n    return print.__self__\n", 2, "__self__"),
    "decorator": ("def d(f):\n    return f\n@d\ndef strategy(obs):\n    return 0\n", 4,
                  "decorator"),
    "no strategy function": ("def play(obs):\n    return 0\n", 0, "def strategy"),
    "strategy rebound": ("def strategy(obs):\n    return 0\nstrategy = 3\n", 3,
                         "bound once"),
    "strategy imported": ("from math import floor as strategy\ndef strategy(obs):\n"
                          "    return 0\n", 1, "bound once"),
    "strategy deleted": ("def strategy(obs):\n    return 0\ndel strategy\n", 3, "bound once"),
    "syntax error": ("def strategy(obs)\n    return 0\n", 1, "syntax error"),
    "absurd nesting": ("def strategy(obs):\n    return " + "(" * 5000 + "1" + ")" * 5000 + "\n",
                       2, "nested"),
    "null byte": ("X = 1\0\ndef strategy(obs):\n    return 0\n", 0, "null bytes"),
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_allow_list_refuses_escapes_with_file_line_and_reason(name):
    source, line, reason = ESCAPES[name]
    with pytest.raises(StrategyError) as err:
        validate_source(source, "escape.py")
    message = str(err.value)
    assert message.startswith(f"escape.py:{line}:"), message
    assert reason in message, message


def test_allow_list_accepts_the_documented_language():
    source = (
        "import math\nfrom math import atan2\nLIMIT = 0.1\nTABLE = {'a': 1}\n"
        "def helper(x, y=2):\n    return [v * y for v in range(3) if v] + list((1, 2))\n"
        "def strategy(obs):\n    total = sum(abs(v) for v in obs[:4])\n"
        "    best = max(enumerate(obs[30:36]), key=None)\n    i = 0\n"
        "    while i < 3:\n        i += 1\n        if i == 2:\n            break\n"
        "    ok = all(isinstance(v, float) for v in obs) and not any(v > 9 for v in obs)\n"
        "    s = f'{total:.2f}'\n    print(s, helper(1))\n"
        "    pairs = {k: v for k, v in zip(range(2), reversed(sorted(obs[:2])))}\n"
        "    return int(round(math.sqrt(4))) if ok and atan2(0, 1) == 0 else 0\n")
    validate_source(source, "fine.py")


def _pilot(tmp_path, body: str, **kwargs) -> StrategyPilot:
    return StrategyPilot(_write(tmp_path, body), **kwargs)


def _obs(n: int, first: float = 0.0) -> np.ndarray:
    obs = np.zeros((n, 36))
    obs[:, 0] = first
    return obs


def test_infinite_loop_forfeits_only_its_game_and_the_child_keeps_serving(tmp_path):
    pilot = _pilot(tmp_path, "def strategy(obs):\n    while obs[0] > 0.5:\n        pass\n"
                             "    return 4\n")
    try:
        pilot.reset(np.ones(3, dtype=bool))
        obs = _obs(3)
        obs[1, 0] = 1.0
        actions = pilot.act(obs)
        assert list(actions) == [4, 0, 4]
        assert list(pilot.forfeits()) == [1]
        assert "hard limit of 100,000 operations" in pilot.forfeits()[1]
        # The forfeited row is not asked again; the others still are, by the same child.
        actions = pilot.act(_obs(3))
        assert list(actions) == [4, 0, 4] and pilot.forfeits() == {} and pilot.restarts == 0
    finally:
        pilot.close()


def test_a_strategys_error_text_is_made_within_its_limits_and_reaches_no_one_raw(tmp_path):
    """An exception whose text is huge (a KeyError's repr of millions of keys) or full of
    terminal escapes: the game is forfeited, its reason one short printable line, wherever it
    goes (the pilot's forfeits, the match report a terminal shows)."""
    from spacewar_ai.rating.match import report

    huge = _write(tmp_path, "def strategy(obs):\n    return {}[(0,) * 6000000]\n", "huge.py")
    rude = _write(tmp_path, "def strategy(obs):\n    return {}['\\x1b[2J\\x07' + 'A' * 5000]\n",
                  "rude.py")
    for path in (huge, rude):
        pilot = StrategyPilot(path)
        try:
            pilot.reset(np.ones(1, dtype=bool))
            assert list(pilot.act(_obs(1))) == [0]
            (reason,) = pilot.forfeits().values()
        finally:
            pilot.close()
        assert reason.startswith("KeyError") and len(reason) <= 200, reason
        assert reason.isprintable(), reason
    result = play_match(make_pilot(f"strategy:{rude}"), "idle", 2, seed=1)
    text = report(result)
    assert "forfeit by strategy:rude.py: KeyError: '\\x1b[2J\\x07AAA" in text, text
    assert "\x1b" not in text and "\x07" not in text


def test_memory_bomb_meets_the_address_space_limit(tmp_path):
    pilot = _pilot(tmp_path, "def strategy(obs):\n    junk = [0.5] * (10 ** 10)\n"
                             "    return len(junk) % 6\n")
    try:
        pilot.reset(np.ones(2, dtype=bool))
        assert list(pilot.act(_obs(2))) == [0, 0]
        assert len(pilot.forfeits()) == 2
        assert all("MemoryError" in r for r in pilot.forfeits().values())
        assert pilot.restarts == 0  # contained inside the child, which keeps serving
    finally:
        pilot.close()


@pytest.mark.slow
def test_a_child_that_stops_answering_is_killed_and_replaced(tmp_path):
    # Python checks its signals even inside long builtin calls, so no allowed code hangs the
    # child for good; a stopped process stands in for a hang inside C code. Neither the
    # operation count nor the in-child timer can act; the parent stops waiting, kills the child
    # and starts a fresh one.
    import os
    import signal

    pilot = _pilot(tmp_path, "def strategy(obs):\n    return 3\n")
    try:
        pilot.reset(np.ones(1, dtype=bool))
        assert list(pilot.act(_obs(1))) == [3]
        os.kill(pilot._proc.pid, signal.SIGSTOP)
        start = time.perf_counter()
        assert list(pilot.act(_obs(1))) == [0]
        waited = time.perf_counter() - start
        assert "killed" in pilot.forfeits()[0] and waited < 60
        pilot.reset(np.ones(1, dtype=bool))
        assert list(pilot.act(_obs(1))) == [3] and pilot.restarts == 1
    finally:
        pilot.close()


@pytest.mark.parametrize("body, reason", [
    ("    return 7\n", "int 0..5"),
    ("    return 1.0\n", "float"),
    ("    return None\n", "NoneType"),
    ("    return True\n", "bool"),
    ("    return 1 // int(obs[0])\n", "ZeroDivisionError"),
    ("    return helper(obs)\n", "RecursionError"),
])
def test_invalid_results_and_exceptions_forfeit_with_the_reason(tmp_path, body, reason):
    pilot = _pilot(tmp_path, "def helper(o):\n    return helper(o)\n"
                             "def strategy(obs):\n" + body)
    try:
        pilot.reset(np.ones(1, dtype=bool))
        pilot.act(_obs(1))
        assert reason in pilot.forfeits()[0], pilot.forfeits()
    finally:
        pilot.close()


def test_slow_strategy_forfeits_on_the_average_operation_budget(tmp_path):
    # 2 + 2 x 6,000 operations a decision (a call, a range's elements, the loop's iterations):
    # under the hard limit, over an average budget of 10,000.
    pilot = _pilot(tmp_path, "def strategy(obs):\n    t = 0\n    for i in range(6000):\n"
                             "        t += i\n    return t % 6\n", min_decisions_for_avg=5)
    try:
        pilot.reset(np.ones(1, dtype=bool))
        for _ in range(4):
            pilot.act(_obs(1))
        assert pilot.forfeit_reason == {}  # judged only after 5 decisions
        pilot.act(_obs(1))
        assert pilot.forfeit_reason[0] == ("decisions averaged 12,001 operations, over the budget "
                                           "of 10,000"), pilot.forfeit_reason
    finally:
        pilot.close()


@pytest.mark.parametrize("body, counted", [
    ("    for i in range(10):\n        pass\n", 21),  # the call, 10 range elements, 10 loops
    ("    i = 0\n    while i < 10:\n        i += 1\n", 11),
    ("    x = [a for a in obs[:5]]\n    return helper(x)\ndef helper(x):\n"
     "    return int(sum(x)) % 6\n", 7),
    ("    x = sum(range(1000))\n", 1001)])
def test_operations_are_counted_the_same_on_every_machine(tmp_path, body, counted):
    source = "def strategy(obs):\n" + body + ("    return 0\n" if "return" not in body else "")
    pilot = _pilot(tmp_path, source)
    try:
        pilot.reset(np.ones(2, dtype=bool))
        for _ in range(3):
            pilot.act(_obs(2))
        assert pilot.forfeit_reason == {} and list(pilot._ops) == [3 * counted] * 2
    finally:
        pilot.close()


def test_uncounted_work_in_builtins_meets_the_cpu_safety_net(tmp_path):
    # One builtin call does the work, which no operation count sees: CPU time stops it.
    pilot = _pilot(tmp_path, "import math\ndef strategy(obs):\n    while True:\n"
                             "        math.factorial(150000)\n")
    try:
        pilot.reset(np.ones(1, dtype=bool))
        pilot.act(_obs(1))
        assert "CPU-time safety limit of 200 ms" in pilot.forfeits()[0], pilot.forfeits()
    finally:
        pilot.close()


def test_the_child_itself_refuses_what_the_validator_would(tmp_path):
    # Defense in depth: source handed over unvalidated still finds no open and no os.
    probes = {"def strategy(obs):\n    open('/etc/hostname')\n    return 0\n": "NameError",
              "import os\ndef strategy(obs):\n    return 0\n": "only math may be imported"}
    path = _write(tmp_path, "def strategy(obs):\n    return 0\n")
    for source, reason in probes.items():
        pilot = StrategyPilot(path, source=source)
        try:
            pilot.reset(np.ones(1, dtype=bool))
            pilot.act(_obs(1))
            assert reason in pilot.forfeits()[0]
        finally:
            pilot.close()


def test_forfeits_are_recorded_and_the_tournament_goes_on(tmp_path):
    crash = _write(tmp_path, "def strategy(obs):\n    if obs[6] < 0.999:\n"
                             "        return 1 // 0\n    return 3\n", "crash.py")
    entrants = resolve_entrants([f"strategy:{crash}", f"strategy:{EXAMPLE}", "heuristic:easy"])
    result = play_round_robin(entrants, 6, seed=3)
    rows = {r["name"]: r for r in standings(result)}
    crashed = rows["strategy:crash.py"]
    assert crashed["forfeits"] == 12 and crashed["score"] == 0
    assert crashed["deaths"]["FORFEIT"] == 12
    assert any("ZeroDivisionError" in r for r in crashed["forfeit_reasons"])
    # The other pairing was played normally.
    assert rows["strategy:aim_and_fire.py"]["forfeits"] == 0
    assert rows["strategy:aim_and_fire.py"]["games"] == 12


def test_strategy_spec_resolves_with_a_file_identity_and_plays_deterministically():
    pilot = make_pilot(f"strategy:{EXAMPLE}")
    assert pilot.name == "strategy:aim_and_fire.py"
    assert pilot.identity.startswith("aim_and_fire@") and len(pilot.identity) == 25
    first = play_match(pilot, "idle", 10, seed=4)
    second = play_match(make_pilot(f"strategy:{EXAMPLE}"), "idle", 10, seed=4)
    assert [(g.winner, g.frames) for g in first.games] == \
           [(g.winner, g.frames) for g in second.games]
    assert first.wins_a >= 8  # it aims and fires at a target that does not move


def test_a_strategy_saved_with_a_byte_order_mark_plays_as_without(tmp_path):
    """Editors on Windows save UTF-8 with a byte-order mark; the file is the same program."""
    marked = tmp_path / "marked.py"
    marked.write_bytes(b"\xef\xbb\xbf" + EXAMPLE.read_bytes())
    plain = play_match(make_pilot(f"strategy:{EXAMPLE}"), "idle", 4, seed=4)
    bom = play_match(make_pilot(f"strategy:{marked}"), "idle", 4, seed=4)
    assert [(g.winner, g.frames) for g in bom.games] == \
        [(g.winner, g.frames) for g in plain.games]


def test_a_refused_strategy_stops_the_tournament_before_play_naming_the_player(tmp_path):
    bad = _write(tmp_path, "import subprocess\ndef strategy(obs):\n    return 0\n", "bad.py")
    with pytest.raises(ValueError) as err:
        resolve_entrants(["idle", f"strategy:{bad}"])
    assert f"player 'strategy:{bad}'" in str(err.value)
    assert "bad.py:1: import subprocess is not allowed" in str(err.value)
    with pytest.raises(ValueError, match="no such strategy file"):
        resolve_entrants([f"strategy:{tmp_path / 'missing.py'}"])


def test_a_slow_top_level_is_reported_as_the_load_limit(tmp_path):
    pilot = _pilot(tmp_path, "x = 0\nwhile True:\n    x = x + 1\n"
                             "def strategy(obs):\n    return 0\n")
    try:
        pilot.reset(np.ones(1, dtype=bool))
        pilot.act(_obs(1))
        reason = pilot.forfeits()[0]
        assert "loading the file took more than 1,000,000 operations" in reason, reason
    finally:
        pilot.close()


@pytest.mark.parametrize("value, said", [("10 ** 5000", "an int of 16610 bits"),
                                         ("7", "returned 7"), ("'4'", "a str"),
                                         ("[4] * 10 ** 6", "a list")])
def test_a_returned_non_action_is_named_without_printing_it(tmp_path, value, said):
    pilot = _pilot(tmp_path, f"def strategy(obs):\n    return {value}\n")
    try:
        pilot.reset(np.ones(1, dtype=bool))
        pilot.act(_obs(1))
        reason = pilot.forfeits()[0]
        assert said in reason and "an action must be an int 0..5" in reason, reason
    finally:
        pilot.close()


EDGE = """import math
def strategy(obs):
    # About the average budget of 10,000 operations a decision: 2 per loop (the range's element
    # and the iteration), more when the opponent is to the right, fewer to the left.
    x = 0.0
    for i in range(4900 + int(300 * obs[9])):
        x = x * 0.5 + 1.0
    err = math.atan2(obs[10], obs[9]) - math.atan2(obs[4], obs[5])
    while err > math.pi:
        err = err - 2 * math.pi
    while err < -math.pi:
        err = err + 2 * math.pi
    if abs(err) < 0.2 and obs[34] > 0.5:
        return 4
    return 2 if err > 0 else 1
"""


@pytest.mark.slow
def test_a_loaded_machine_gives_the_same_crosstable(tmp_path):
    """The budget is counted in operations, which the load beside the sandbox does not change:
    a strategy at the edge of its average budget forfeits exactly the same games whether three
    processes hog the two cores or not (on CPU time, they varied from run to run)."""
    import multiprocessing

    path = _write(tmp_path, EDGE, "edge.py")

    def table():
        entrants = resolve_entrants([f"strategy:{path}", "heuristic:easy", "idle"])
        result = play_round_robin(entrants, 8, seed=9)
        return [(r["name"], r["score"], r["forfeits"], sorted(r["forfeit_reasons"]))
                for r in standings(result)]

    quiet = table()
    hogs = [multiprocessing.get_context("spawn").Process(target=_spin, daemon=True)
            for _ in range(3)]
    for h in hogs:
        h.start()
    try:
        loaded = table()
    finally:
        for h in hogs:
            h.kill()
    assert loaded == quiet
    forfeits = {name: n for name, _, n, _ in quiet}["strategy:edge.py"]
    assert 0 < forfeits < 16, quiet  # the edge: some games over the budget, some under


def _spin():
    while True:
        pass


def test_both_players_forfeiting_at_once_is_a_draw_whichever_is_listed_first(tmp_path):
    crash = _write(tmp_path, "def strategy(obs):\n    return 1 // 0\n", "crash.py")
    bad = _write(tmp_path, "def strategy(obs):\n    return 9\n", "bad.py")
    for first, second in ((crash, bad), (bad, crash)):
        r = play_match(make_pilot(f"strategy:{first}"), make_pilot(f"strategy:{second}"), 4,
                       seed=2)
        assert r.draws == 4 and r.wins_a == r.wins_b == 0
        assert all(g.forfeit_of("a") and g.forfeit_of("b") for g in r.games)
        assert all(g.cause_a == g.cause_b == "FORFEIT" for g in r.games)
    # Three players that always forfeit finish level, in any order of the list.
    third = _write(tmp_path, "def strategy(obs):\n    return obs\n", "third.py")
    specs = [f"strategy:{p}" for p in (crash, bad, third)]
    scores = []
    for order in (specs, specs[::-1]):
        result = play_round_robin(resolve_entrants(order), 2, seed=5)
        scores.append({r["name"]: (r["score"], r["forfeits"]) for r in standings(result)})
    assert scores[0] == scores[1]
    assert len({score for score, _ in scores[0].values()}) == 1
    assert all(forfeits == 4 for _, forfeits in scores[0].values())
