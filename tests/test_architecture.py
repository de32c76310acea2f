"""ARCHITECTURE.md is a map a newcomer can trust: read in minutes, and every file, module, class
and function it names is where it says."""

import importlib
import pkgutil
import re

import spacewar_ai
from tests.helpers import ROOT

TEXT = (ROOT / "ARCHITECTURE.md").read_text()
SPANS = re.findall(r"`([^`\n]+)`", TEXT)


def _modules() -> dict:
    """Every module of the package, imported, by its dotted name under spacewar_ai."""
    found = {}
    for info in pkgutil.walk_packages(spacewar_ai.__path__, "spacewar_ai."):
        if info.name.endswith("__main__") or ".pretrained." in info.name:
            continue
        found[info.name] = importlib.import_module(info.name)
    return found


def test_the_map_reads_in_minutes():
    assert len(TEXT.splitlines()) <= 300


def test_every_file_it_names_exists():
    named = set(re.findall(r"(?<![\w.:-])((?:[\w-]+/)*[\w-]+\.(?:py|md|js))\b", TEXT))
    everything = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
                  if ".git" not in p.parts and p.is_file()]
    missing = [name for name in sorted(named)
               if not any(path == name or path.endswith("/" + name) for path in everything)]
    assert len(named) > 30 and not missing, missing


def test_every_module_class_and_function_it_names_exists():
    modules = _modules()
    by_attribute: dict[str, list] = {}
    for module in modules.values():
        for key, value in vars(module).items():
            by_attribute.setdefault(key, []).append(value)
    checked, missing = 0, []
    for span in SPANS:
        name = span.split("(")[0].strip()
        if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name) or name.islower() and \
                "." not in name or name.endswith((".py", ".md", ".js")):
            continue  # a flag, a setting, a call with arguments, a bare word, a file
        parts = name.split(".")
        if parts[0] == "spacewar_ai":
            parts = parts[1:]
        # The longest module prefix, then attributes; else a class or function defined in the
        # package, then its attributes.
        owners = []
        for k in range(len(parts), 0, -1):
            module = modules.get("spacewar_ai." + ".".join(parts[:k]))
            if module is not None:
                owners, rest = [module], parts[k:]
                break
        else:
            if parts[0][0].islower():
                continue  # a variable in a sentence (agent.decide), not a name to look up
            owners, rest = by_attribute.get(parts[0], []), parts[1:]
        found = any(_has(owner, rest) for owner in owners)
        checked += 1
        if not found:
            missing.append(name)
    assert checked > 40 and not missing, missing


def _has(owner, rest: list[str]) -> bool:
    for attribute in rest:
        fields = getattr(owner, "__dataclass_fields__", {})
        if not hasattr(owner, attribute) and attribute not in fields and \
                attribute not in getattr(owner, "__annotations__", {}):
            return False
        owner = getattr(owner, attribute, None)
    return True
