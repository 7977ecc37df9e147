"""A test module never imports another test module: what several share lives in a helpers module
(``tests/unit/helpers.py``, ``tests/integration/fake_*.py``, ``*_support.py``) or a ``conftest.py``.

Importing a test module runs its collection-time code again and ties two files' tests together; a
helper moved or renamed in one silently breaks the other. Import statements of this project's modules
are read, and no test module loads another with importlib either: ``test_provider_creds_playbook.py``
takes each provider's ``playbook_case`` from its ``fake_<name>.py`` helpers module (CONTRIBUTING.md,
"Adding a provider", step 7).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _is_test(dotted):
    return any(part.startswith("test_") for part in dotted.split("."))


def imported_test_modules(source):
    """The project's modules named ``test_*`` that ``source`` imports, however it spells the import."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("tests.")):
            module = node.module or ""
            names = [module] if _is_test(module) else [f"{module}.{alias.name}".lstrip(".") for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if alias.name.startswith("tests.")]
        else:
            continue
        found.extend(name for name in names if _is_test(name))
    return found


def test_no_test_module_imports_another():
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        imports = imported_test_modules(path.read_text(encoding="utf-8"))
        if imports:
            found[str(path.relative_to(TESTS))] = imports
    assert found == {}


def test_the_check_sees_every_spelling():
    source = ("from tests.integration.test_awx import clean_env\nfrom .test_command import gone\n"
              "from ..module_utils import test_command\nimport tests.unit.test_x\nfrom tests.unit.helpers import ok\n"
              "from aiohttp.test_utils import TestServer\n")
    assert imported_test_modules(source) == ["tests.integration.test_awx", "test_command",
                                             "module_utils.test_command", "tests.unit.test_x"]


def loaded_test_modules(source):
    """The ``importlib.import_module`` calls of ``source`` whose name (a string or an f-string) names a test module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module":
            name = node.args[0] if node.args else None
            text = "".join(part.value for part in ast.walk(name) if isinstance(part, ast.Constant)
                           and isinstance(part.value, str)) if name is not None else ""
            if _is_test(text) or ".test_" in text or text.startswith("test_"):
                found.append(text)
    return found


def test_no_test_module_loads_another_with_importlib():
    found = {str(path.relative_to(TESTS)): loaded_test_modules(path.read_text(encoding="utf-8"))
             for path in sorted(TESTS.rglob("*.py"))}
    assert {path: names for path, names in found.items() if names} == {}
    assert loaded_test_modules('importlib.import_module(f"tests.integration.test_provider_{name}")') == [
        "tests.integration.test_provider_"]
