"""The package's layers: no import circles, and no import against the order ARCHITECTURE.md writes
down (its "Layers" section: the order, and the exceptions with their reasons). Every import
counts, those inside functions and under TYPE_CHECKING too: a circle hidden in a function is
still a circle a reader has to untangle."""

import ast
import re
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGE = ROOT / "spacewar_ai"
DOORS = "doors"  # the package's own __init__ and the top-level front doors, above everything


def module_sources() -> dict[str, str]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(PACKAGE / "pretrained"):
            continue  # strategy files the package ships as data (the panel's pilots)
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path.read_text()
    return out


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """module -> the package's modules it imports (`from P import m` counts as importing the
    module P.m when there is one)."""
    graph = {}
    for name, source in sources.items():
        is_package = (PACKAGE / Path(*name.split(".")[1:]) / "__init__.py").is_file() \
            or name == "spacewar_ai"
        targets = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    targets.add(sub if sub in sources else module)
        graph[name] = {t for t in targets if t in sources and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def declared_layers() -> tuple[list[str], dict[tuple[str, str], str]]:
    """The layer order and the allowed exceptions, as ARCHITECTURE.md's "Layers" section has
    them: a line `util -> config -> ...` and a table of `from` | `to` | why."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    order_line = next(line for line in section.splitlines() if " -> " in line)
    order = [part.strip(" `") for part in order_line.split("->")]
    allowed = {}
    for row in re.findall(r"^\| `(spacewar_ai[\w.]*)` \| `(spacewar_ai[\w.]*)` \| (.+) \|$",
                          section, re.MULTILINE):
        allowed[(row[0], row[1])] = row[2].strip()
    return order, allowed


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()):
        return parts[1]
    return "config" if module == "spacewar_ai.config" else DOORS


def back_edges(graph, order, allowed) -> list[tuple[str, str]]:
    rank = {name: k for k, name in enumerate(order)}
    return sorted((a, b) for a, targets in graph.items() for b in targets
                  if rank[layer(b)] > rank[layer(a)] and (a, b) not in allowed)


def test_every_module_sits_in_a_declared_layer():
    order, allowed = declared_layers()
    assert order[-1] == DOORS and len(set(order)) == len(order), order
    unplaced = sorted(m for m in module_sources() if layer(m) not in order)
    assert not unplaced, f"modules in no layer of ARCHITECTURE.md: {unplaced}"
    for (a, b), why in allowed.items():
        assert len(why.split()) >= 5, f"the exception {a} -> {b} needs its reason"


def test_the_package_has_no_import_circles():
    assert cycles(import_graph(module_sources())) == []


def test_no_import_runs_against_the_layers_and_every_exception_is_used():
    order, allowed = declared_layers()
    graph = import_graph(module_sources())
    assert back_edges(graph, order, allowed) == []
    used = {(a, b) for a, targets in graph.items() for b in targets}
    assert set(allowed) <= used, f"exceptions no import needs any more: {set(allowed) - used}"


# Each kind of run's own module, by wing: what they share lives beside them (training/'s
# budget, run_frame, run_log, datasets, evaluation; a wing's run or scoring), never in one of
# them. PBT runs the Trainer, so it may import that one and no other.
TRAINERS = ("online.trainer", "offline.learners", "lm.sft", "lm.dagger", "lm.grpo",
            "lm.trl_adapter", "population.pbt")
ALLOWED = {("population.pbt", "online.trainer")}


def test_no_trainer_imports_another_and_every_trainer_is_listed():
    graph = import_graph(module_sources())
    names = {f"spacewar_ai.training.{t}" for t in TRAINERS}
    assert names <= set(graph)
    short = len("spacewar_ai.training.")
    assert {(a[short:], b[short:]) for a in names for b in graph[a] & names} == ALLOWED
    # A module of a wing that another module of training/ imports as a kind of run: run.py's
    # table names every trainer it starts, and each of those is listed above.
    table = {b for b in graph["spacewar_ai.training.run"] if b.count(".") == 3}
    assert table <= names, table - names


@pytest.mark.parametrize("source, kind", [
    # An import hidden in a function, against the order: web is above util.
    ("def f():\n    from spacewar_ai.web.app import create_app\n", "back edge"),
    # A circle: engine imports the new module, which imports engine back.
    ("import spacewar_ai.game.engine\n", "circle"),
])
def test_the_check_catches_a_test_only_module_that_breaks_the_rule(source, kind):
    order, allowed = declared_layers()
    sources = module_sources()
    if kind == "back edge":
        sources["spacewar_ai.util.test_only"] = source
        assert back_edges(import_graph(sources), order, allowed) == [
            ("spacewar_ai.util.test_only", "spacewar_ai.web.app")]
    else:
        sources["spacewar_ai.game.test_only"] = source
        sources["spacewar_ai.game.engine"] += "\ndef _f():\n    import spacewar_ai.game.test_only\n"
        assert cycles(import_graph(sources)) == [["spacewar_ai.game.engine",
                                                  "spacewar_ai.game.test_only"]]


# What a module would test spec text for, were it reading specs itself (pilots/spec.py's kinds).
SPEC_PREFIXES = ("search:", "adapt:", "strategy:", "onnx:", "sb3:", "lm:", "ppo:", "dqn:",
                 "heuristic")
TEXT_TESTS = {"startswith", "endswith", "removeprefix", "partition", "split", "find", "index"}


def spec_text_tests(source: str) -> list[int]:
    """The lines that test or cut a string for a pilot spec's prefix: `.startswith("search:")`,
    `.removeprefix("adapt:")`, `"lm:" in spec`, `spec == "strategy:..."`."""
    def is_prefix(node) -> bool:
        values = node.elts if isinstance(node, ast.Tuple) else [node]
        return any(isinstance(v, ast.Constant) and isinstance(v.value, str)
                   and v.value.lower().startswith(SPEC_PREFIXES) for v in values)

    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in TEXT_TESTS and any(map(is_prefix, node.args)):
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare) and any(map(is_prefix, [node.left, *node.comparators])):
            lines.append(node.lineno)
    return lines


def test_no_module_outside_pilots_reads_spec_text():
    """Spec text becomes a `Spec` (pilots/spec.py) at the door; below it, code asks the value."""
    found = {name: lines for name, source in module_sources().items()
             if not name.startswith("spacewar_ai.pilots") and (lines := spec_text_tests(source))}
    assert found == {}


@pytest.mark.parametrize("line", ['spec.lower().startswith(("onnx:", "sb3:"))',
                                  'spec.removeprefix("search:")', '"lm:" in spec[:3]',
                                  'kind = spec.partition("adapt:")'])
def test_the_spec_scan_catches_a_module_that_reads_spec_text(line):
    assert spec_text_tests(f"def f(spec):\n    {line}\n") == [2]
