"""JSON and TOML from outside (uploaded replays, a page's messages, a user's config file) read
strictly.

Python's json module accepts NaN and Infinity, which no JSON writer outside Python produces and
which break every figure computed from them, and it parses nesting by recursion, so a document
nested 100,000 deep raises RecursionError. `loads_strict` refuses both with a ValueError that
names the document and the field, before anything reads the data. tomllib recurses too, and
takes time growing with the square of a dotted key's parts; `toml_shape_problem` finds both in
one scan before it parses.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import UserError

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


MAX_KEY_PARTS = 64  # parts of one dotted TOML key (a.b.c); a config needs 2


def toml_shape_problem(text: str, max_depth: int = MAX_DEPTH) -> str:
    """What makes TOML `text` too deep to parse (arrays and inline tables nested past
    `max_depth`, or a dotted key of more than MAX_KEY_PARTS parts), or "". One scan, strings
    and comments skipped; a dot between two digits is a number's, not a key's."""
    depth = parts = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else ch
            i += len(quote)
            while i < n and not text.startswith(quote, i):
                i += 2 if ch == '"' and text[i] == "\\" else 1
            i += len(quote)
            continue
        if ch == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if ch in "[{":
            depth += 1
            if depth > max_depth:
                return f"arrays or tables nested deeper than {max_depth} levels"
        elif ch in "]}":
            depth -= 1
        if ch in "=,[]{}\n":
            parts = 0
        elif ch == "." and not (0 < i < n - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()):
            parts += 1
            if parts >= MAX_KEY_PARTS:
                return f"a dotted key of more than {MAX_KEY_PARTS} parts"
        i += 1
    return ""


def loads_strict(text: str, what: str, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads(text), refusing nesting deeper than max_depth and NaN or Infinity anywhere
    (ValueError naming `what` and the field's path, such as `result.winner`)."""
    if nesting_depth(text) > max_depth:
        raise UserError(f"{what}: JSON nested deeper than {max_depth} levels; nothing this app "
                        "reads is nested so deep")
    data = json.loads(text, parse_constant=_NonFinite)
    where = _non_finite(data)
    if where is not None:
        path, token = where
        raise UserError(f"{what}: field {path or '(the document)'} is {token}; numbers must be "
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
