"""JSON from outside, read strictly: no NaN or Infinity anywhere, no nesting deep enough to
exhaust the parser's recursion, and the refusal names the document and the field."""

import pytest

from spacewar_ai.util.json_input import MAX_DEPTH, loads_strict, nesting_depth


def test_brackets_inside_strings_do_not_count_as_nesting():
    # the object, the list in it, the list in that: 3; none of the brackets in the strings
    assert nesting_depth('{"a": "[[[[{{", "b": [1, [2]], "c": "\\"]"}') == 3
    assert nesting_depth("[]") == 1 and nesting_depth("3") == 0


def test_a_plain_document_reads_as_json_does():
    assert loads_strict('{"seed": 3, "actions": [[0, 1], [4, 5]]}', "the replay") == \
        {"seed": 3, "actions": [[0, 1], [4, 5]]}


@pytest.mark.parametrize("text, field, token", [
    ('{"result": {"winner": NaN}}', "result.winner", "NaN"),
    ('[1, Infinity]', "[1]", "Infinity"),
    ('{"frames": [{"f": 0}, {"f": -Infinity}]}', "frames[1].f", "-Infinity"),
    ("NaN", "(the document)", "NaN"),
])
def test_non_finite_numbers_are_refused_by_field(text, field, token):
    with pytest.raises(ValueError) as exc:
        loads_strict(text, "the replay")
    assert str(exc.value) == f"the replay: field {field} is {token}; numbers must be finite"


def test_deep_nesting_is_refused_before_parsing():
    deep = "[" * 100_000 + "]" * 100_000  # json.loads itself would raise RecursionError
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH} levels"):
        loads_strict(deep, "the message")
    assert loads_strict("[" * MAX_DEPTH + "]" * MAX_DEPTH, "the message") is not None
