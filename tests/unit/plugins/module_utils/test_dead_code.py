"""No dead code in module_utils: every top-level name is used outside tests/, and no handler is unreachable.

A name counts as used when code outside tests/ (plugins, extensions, roles, playbooks, molecule,
tools, bench) names it: as a name, an attribute, an import, a word of a short string (the provider
registry names discover functions as strings) or a word of a YAML or Jinja file. Methods are left
out: their names are too common for a name search to say anything.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
MODULE_UTILS = "plugins/module_utils/"
# Where callers live: everything outside tests/ that runs.
CALLERS = ("plugins", "extensions", "roles", "playbooks", "molecule", "tools", "bench")


def caller_files():
    for folder in CALLERS:
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".yml", ".yaml", ".j2") and "__pycache__" not in path.parts:
                yield str(path.relative_to(REPO))


def names_defined(tree):
    """Top-level functions, classes and assigned names of a module."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(element, ast.Name):
                        yield element.id


def names_used(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.alias):
            yield node.name.rsplit(".", 1)[-1]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 80:
            yield from re.findall(r"\w+", node.value)


def test_every_module_utils_name_is_used_outside_the_tests():
    used, defined = Counter(), []
    for name in caller_files():
        text = (REPO / name).read_text(encoding="utf-8", errors="replace")
        if name.endswith(".py"):
            tree = ast.parse(text)
            used.update(names_used(tree))
            if name.startswith(MODULE_UTILS):
                defined.extend(f"{name}: {defined_name}" for defined_name in names_defined(tree))
        elif name.endswith((".yml", ".yaml", ".j2")):
            used.update(re.findall(r"\w+", text))
    unused = [entry for entry in defined if not used[entry.rsplit(": ", 1)[1]]
              and not re.fullmatch(r"__\w+__", entry.rsplit(": ", 1)[1])]
    assert unused == []


def test_no_handler_waits_for_an_oserror_run_command_never_raises():
    """run_command fails the task itself on an OSError unless handle_exceptions=False."""
    unreachable = []
    for path in sorted((REPO / "plugins").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Try) or not any(
                    "OSError" in ast.unparse(handler.type or ast.Name("BaseException")) for handler in node.handlers):
                continue
            for call in (inner for statement in node.body for inner in ast.walk(statement)):
                if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "run_command" and not any(
                        keyword.arg == "handle_exceptions" and getattr(keyword.value, "value", True) is False
                        for keyword in call.keywords):
                    unreachable.append(f"{path.relative_to(REPO)}:{call.lineno}")
    assert unreachable == []
