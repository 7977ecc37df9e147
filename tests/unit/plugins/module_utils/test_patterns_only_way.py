"""_base/patterns is the only way to build a regular expression from something that is not a literal.

Every call to re.compile/match/search/fullmatch/findall/finditer/sub/subn/split under plugins/ and
extensions/ inside a function must have a string literal (or a module-level name bound to one) as its
pattern, outside _base/patterns.py. A call at module level runs at import time, before any option or
node output exists, so it may join the module's own constants (labels.py, metrics.py). No pattern
compiled for multi-line text ((?m) or re.MULTILINE) may hold a repetition that can match a line break:
literals are checked here, module-level compiled patterns of module_utils by importing them, the
templates of roles and playbooks by reading them.
"""

from __future__ import annotations

import ast
import importlib
import re

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.patterns import line_crossing_problem

from tests.collection_sources import ROOT, python_sources

PATTERNS_MODULE = "plugins/module_utils/_base/patterns.py"
RE_FUNCTIONS = {"compile", "match", "search", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
_FLAG_NAMES = {"M": re.M, "MULTILINE": re.M, "S": re.S, "DOTALL": re.S, "X": re.X, "VERBOSE": re.X,
               "I": re.I, "IGNORECASE": re.I, "A": re.A, "ASCII": re.A}


def _literal(node, constants):
    """The string a pattern argument stands for, or None when it is not a literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return None


def _flags(node):
    value = 0
    for part in ast.walk(node) if node is not None else ():
        if isinstance(part, ast.Attribute) and part.attr in _FLAG_NAMES:
            value |= _FLAG_NAMES[part.attr]
    return value


def problems_in(source, name="<snippet>"):
    """What the guard refuses in one file's source: non-literal patterns and multi-line patterns that
    run across lines."""
    tree = ast.parse(source)
    constants = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Constant) \
                and isinstance(statement.value.value, str):
            constants[statement.targets[0].id] = statement.value.value
    at_import = set()
    for statement in tree.body:
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            at_import.update(id(node) for node in ast.walk(statement)
                             if not any(isinstance(outer, ast.Lambda) for outer in ast.walk(statement)))
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                and node.func.attr in RE_FUNCTIONS and node.args):
            continue
        pattern = _literal(node.args[0], constants)
        if pattern is None and id(node) in at_import:
            continue
        if pattern is None:
            found.append(f"{name}:{node.lineno}: re.{node.func.attr} on a pattern that is not a literal; "
                         "build it with _base/patterns (compile_pattern, compile_search_pattern)")
            continue
        flag_node = next((keyword.value for keyword in node.keywords if keyword.arg == "flags"), None)
        position = {"compile": 1, "match": 2, "search": 2, "fullmatch": 2, "findall": 2, "finditer": 2,
                    "split": 3, "sub": 4, "subn": 4}[node.func.attr]
        if flag_node is None and len(node.args) > position:
            flag_node = node.args[position]
        try:
            problem = line_crossing_problem(pattern, _flags(flag_node))
        except re.error:
            problem = None  # an f-string part or a template: compiled for real by the code's own tests
        if problem:
            found.append(f"{name}:{node.lineno}: {problem}")
    return found


def test_no_pattern_is_built_outside_base_patterns():
    found = []
    for name, source in python_sources(skip=PATTERNS_MODULE):
        found += problems_in(source, name)
    assert not found, "\n".join(found)


def test_no_module_level_pattern_runs_across_lines():
    found = []
    for path in sorted((ROOT / "plugins" / "module_utils").rglob("*.py")):
        name = ".".join(("ansible_collections.aifactory.topology",) + path.relative_to(ROOT).with_suffix("").parts)
        module = importlib.import_module(name.removesuffix(".__init__"))
        for attribute, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                problem = line_crossing_problem(value.pattern, value.flags)
                if problem:
                    found.append(f"{name}.{attribute}: {problem}")
    assert not found, "\n".join(found)


_ROLE_REGEX = re.compile(r"regex_(?:search|findall|replace)\(\s*'((?:[^'\\]|\\.)*)'")


def test_no_template_pattern_runs_across_lines():
    """Roles' and playbooks' templates, which run on the controller over what nodes print."""
    found = []
    for path in sorted([*(ROOT / "roles").rglob("*.yml"), *(ROOT / "playbooks").rglob("*.yml")]):
        for match in _ROLE_REGEX.finditer(path.read_text(encoding="utf-8")):
            problem = line_crossing_problem(match.group(1))
            if problem:
                found.append(f"{path.relative_to(ROOT)}: {problem}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("snippet", [
    "import re\ndef f(spec):\n    return re.compile(spec['rack_from_name'])\n",
    "import re\ndef f(p, t):\n    return re.search(p, t)\n",
    "import re\ndef f(text):\n    return re.sub(PREFIX + 'x', '', text)\n",
    "import re\ndef f(name, text):\n    return re.findall(f'{name}=', text)\n",
    "import re\nBRANCH = re.compile(r'(?m)^\\s*(\\d{3,})\\.\\d+')\n",
    "import re\nre.findall(r'^[^:]+: (\\d+)', text, re.MULTILINE)\n",
    "import re\nclass A:\n    def f(self, o):\n        return re.compile(o['regexp'])\n",
    "import re\nF = lambda p: re.compile(p)\n",
])
def test_the_guard_fails_on_what_it_forbids(snippet):
    assert problems_in(snippet)


@pytest.mark.parametrize("snippet", [
    "import re\nre.compile(r'^[0-9]+$')\n",
    "import re\nNAME = r'[a-z]+'\nre.fullmatch(NAME, text)\n",
    "import re\nre.compile(r'(?m)^[ \\t]*([0-9]+)[ \\t]+x[ \\t]*$')\n",
    "import re\nre.search(r'^\\s*x', line)\n",
    "import re\nA = 'x'\nB = re.compile(A + r'[0-9]+')\n",
])
def test_the_guard_lets_literals_pass(snippet):
    assert not problems_in(snippet)


def test_the_role_guard_fails_on_the_old_channel_pattern():
    assert line_crossing_problem(r"(?m)^\s*(\d+)\s+nvidia-caps-imex-channels\s*$")


@pytest.mark.parametrize("pattern, flags", [
    (r"(?m)^\s*x", 0), (r"^\s*x", re.M), (r"(?ms)^.*x", 0), (r"(?m)^[^\S]+x", 0), (r"(?m)^[\x00-\x7f]+", 0),
    (r"(?m)^(?:a|\n)+", 0), (r"(?m)^\D*", 0), (r"(?m)^\W+", 0), (r"(?m)^(?:x[^y]){2,}", 0),
])
def test_a_repetition_that_can_match_a_line_break_is_refused_under_multiline(pattern, flags):
    assert line_crossing_problem(pattern, flags)


@pytest.mark.parametrize("pattern, flags", [
    (r"(?m)^[ \t]*x", 0), (r"(?m)^[^\s]+ \S+$", 0), (r"(?m)^.*x", 0), (r"\s*x", 0), (r"(?m)^\n", 0),
    (r"(?m)^[0-9]+\.[0-9]+", 0),
])
def test_a_repetition_held_to_its_line_passes(pattern, flags):
    assert line_crossing_problem(pattern, flags) is None
