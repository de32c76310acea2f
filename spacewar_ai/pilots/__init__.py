"""Pilots: anything that flies a ship, and `make_pilot(spec)`, the one spec language that builds
any of them (build.py; its docstring is the table of specs).

| module | what it holds |
|---|---|
| spec.py | `Spec`, `parse_spec` (the one parser of spec text), `check_spec` (no pilot built) |
| build.py | `make_pilot` (a Spec or its text to a pilot), the files a spec names, `AgentPilot` |
| scripted.py | idle, random, heuristic easy / medium / hard |
| search.py | `search:` and `adapt:`, a network planning ahead with a model of its opponent |
| sandbox.py, sandbox_child.py | `strategy:PATH.py`, a strategy file checked and run in a child process |
| outside.py, onnx_export.py | `onnx:` and `sb3:` models trained elsewhere; `--export model.onnx` |

The language model that flies (`lm:`) is spacewar_ai/lm/; make_pilot builds it like the rest.
"""

from .build import (
    PRETRAINED_PATH,
    SPEC_HELP,
    AgentPilot,
    CallablePilot,
    Pilot,
    Spec,
    absolute_spec,
    check_spec,
    file_identity,
    is_scripted,
    make_pilot,
    map_spec_files,
    parse_spec,
    path_label,
    spec_files,
    spec_path,
)

__all__ = ["PRETRAINED_PATH", "SPEC_HELP", "AgentPilot", "CallablePilot", "Pilot", "Spec",
           "absolute_spec", "check_spec", "file_identity", "is_scripted", "make_pilot",
           "map_spec_files", "parse_spec", "path_label", "spec_files", "spec_path"]
