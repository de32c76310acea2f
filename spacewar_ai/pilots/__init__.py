"""Pilots: anything that flies a ship, and `make_pilot(spec)`, the one spec language that builds
any of them (build.py; its docstring is the table of specs). spec.py parses specs; scripted.py,
search.py, sandbox.py, outside.py and spacewar_ai/lm/ hold the kinds of pilot."""

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
