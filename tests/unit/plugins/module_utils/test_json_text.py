"""_base/json_text is the only way to decode JSON someone else wrote: bounded size, RecursionError turned
into JSONLimitError, depth walked without recursion; a guard fails when code elsewhere calls json.loads."""

from __future__ import annotations

import ast
import json

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base import json_text
from tests.collection_sources import python_sources


@pytest.mark.parametrize("text, kind", [
    ("[" * 100_000 + "]" * 100_000, "depth"),  # beyond the recursion limit: json raises RecursionError
    ("[" * 70 + "]" * 70, "depth"),  # parsed, then refused by the walk
    ('{"a": ' * 70 + "1" + "}" * 70, "depth"),
    ("x" * 101, "size"),
    ("{", "syntax"),
    (b"\xff\xfe", "syntax"),
])
def test_refused_text_names_why(text, kind):
    with pytest.raises(json_text.JSONLimitError) as caught:
        json_text.loads(text, max_chars=100 if kind == "size" else None, max_depth=64)
    assert caught.value.kind == kind and isinstance(caught.value, ValueError)


def test_brackets_in_strings_and_exact_depth_pass():
    assert json_text.loads('{"a": "[[[[[[[[[["}', max_depth=1) == {"a": "[[[[[[[[[["}
    assert json_text.loads("[" * 64 + "]" * 64, max_depth=64) is not None
    assert json_text.loads("7", max_depth=1) == 7


def test_without_a_depth_bound_only_the_recursion_is_caught():
    assert json_text.loads("[" * 500 + "]" * 500) is not None
    with pytest.raises(json_text.JSONLimitError, match="^nested too deeply$"):
        json_text.loads("[" * 100_000)


def json_decodes_in(source):
    """The json.loads / json.load calls of one file's source (and ``from json import loads``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "json"
                and node.attr in ("loads", "load", "JSONDecoder")):
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.ImportFrom) and node.module == "json":
            found.append((node.lineno, "from json import ..."))
    return found


def test_no_json_is_decoded_outside_base_json_text():
    found = [f"{name}:{line}: {call}: decode it with _base/json_text.loads"
             for name, source in python_sources(skip="plugins/module_utils/_base/json_text.py")
             for line, call in json_decodes_in(source)]
    assert not found, "\n".join(found)


def test_the_guard_fails_on_what_it_forbids():
    assert json_decodes_in("import json\nx = json.loads(text)\n")
    assert json_decodes_in("from json import loads\n")
    assert json_decodes_in("import json\nwith open(p) as f:\n    x = json.load(f)\n")
    assert not json_decodes_in("import json\nx = json.dumps(value)\n")
    assert json.loads("[]") == []  # the tests themselves may decode what they wrote
