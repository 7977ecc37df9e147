"""Every module is its documentation, its argument spec and one call: ``_orchestration.<module>.run(module)``.

So each module's job has one predictable home (plugins/module_utils/_orchestration/<module>.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
MODULES = sorted((REPO / "plugins" / "modules").glob("*.py"))
ORCHESTRATION = "ansible_collections.aifactory.topology.plugins.module_utils._orchestration"


def orchestration_calls(source: str, name: str):
    """(whether a module's ``source`` imports ``_orchestration.<name>``, the last call of its ``main()``, whether
    ``main()`` does any work itself: a ``with``, a loop, a ``try`` or a call on the module object)."""
    tree = ast.parse(source)
    imported = any(isinstance(node, ast.ImportFrom) and node.module == ORCHESTRATION
                   and any(alias.name == name and alias.asname is None for alias in node.names)
                   for node in tree.body)
    main = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main")
    last = main.body[-1]
    last_call = ast.unparse(last.value.func) if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) else None
    works = any(isinstance(node, (ast.With, ast.For, ast.While, ast.Try))
                or isinstance(node, ast.Call) and ast.unparse(node.func).startswith("module.")
                for node in ast.walk(main))
    return imported, last_call, works


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_main_hands_the_module_to_its_orchestration_file(path):
    imported, last_call, works = orchestration_calls(path.read_text(encoding="utf-8"), path.stem)
    assert imported, f"{path.name} does not import _orchestration.{path.stem}"
    assert (REPO / "plugins" / "module_utils" / "_orchestration" / path.name).is_file()
    assert last_call == f"{path.stem}.run", f"main() of {path.name} must end in the call {path.stem}.run(module)"
    assert not works, f"main() of {path.name} does part of the job itself; move it to _orchestration/{path.name}"


def test_the_check_catches_a_module_that_does_its_job_inline():
    inline = (f"from {ORCHESTRATION} import thing\n"
              "def main():\n    module = AnsibleModule(argument_spec={})\n    module.exit_json(changed=False)\n")
    assert orchestration_calls(inline, "thing") == (True, "module.exit_json", True)
    half = inline.replace("    module.exit_json(changed=False)\n", "    module.warn('x')\n    thing.run(module)\n")
    assert orchestration_calls(half, "thing") == (True, "thing.run", True)
