"""JSON from outside (uploaded replays, a page's messages) read strictly.

Python's json module accepts NaN and Infinity, which no JSON writer outside Python produces and
which break every figure computed from them, and it parses nesting by recursion, so a document
nested 100,000 deep raises RecursionError. `loads_strict` refuses both with a ValueError that
names the document and the field, before anything reads the data.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64  # arrays and objects inside each other; a replay needs 4


class _NonFinite:
    def __init__(self, token: str):
        self.token = token


def nesting_depth(text: str) -> int:
    """The deepest nesting of [ and { in `text`, brackets inside strings not counted. A scan
    without recursion, so it can be asked of any document."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def loads_strict(text: str, what: str, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads(text), refusing nesting deeper than max_depth and NaN or Infinity anywhere
    (ValueError naming `what` and the field's path, such as `result.winner`)."""
    if nesting_depth(text) > max_depth:
        raise ValueError(f"{what}: JSON nested deeper than {max_depth} levels; nothing this app "
                         "reads is nested so deep")
    data = json.loads(text, parse_constant=_NonFinite)
    where = _non_finite(data)
    if where is not None:
        path, token = where
        raise ValueError(f"{what}: field {path or '(the document)'} is {token}; numbers must be "
                         "finite")
    return data


def _non_finite(data: Any) -> tuple[str, str] | None:
    """The path and token of the first NaN or Infinity in data (depth-bounded by the caller)."""
    stack = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _NonFinite):
            return path, value.token
        if isinstance(value, dict):
            stack.extend((f"{path}.{k}" if path else str(k), v)
                         for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return None
