"""Every file the documentation names in backticks exists: the map tells the truth.

The rule, so that a renamed or moved file fails here instead of misleading a reader:

* Where: ``CONTRIBUTING.md``, ``README.md``, every ``docs/**/*.md``, and the docstrings (module,
  class, function) of every Python file under ``plugins/``.
* What: each word (split on white space) of a span in backticks, single or double, with its
  ``::name`` suffix (a test or function in that file), its ``#anchor`` and the punctuation around it
  removed. A word with ``<``, ``>``, ``*``, ``{``, ``}`` or ``$`` is a pattern (``test_provider_<name>.py``),
  not a path, and is skipped.
* Which words are paths:

  - a word that starts with ``plugins/``, ``tests/``, ``docs/``, ``tools/``, ``roles/`` or
    ``playbooks/``, read from the repository's root;
  - a word that starts with a layer folder of ``plugins/module_utils`` (``_base/``, ``_engines/``,
    ``_events/``, ``_orchestration/``, ``_providers/``, ``_transport/``, ``_writers/``), read under
    ``plugins/module_utils/``;
  - a bare Python file name that starts with ``_`` or ``test_`` (``_model.py``, ``test_layers.py``):
    some file of the repository has that name;
  - in the Markdown files only, a dotted name that starts with ``_`` (``_model.normalize_switch_names``,
    ``_providers.discover``): its first part is a module or package somewhere under
    ``plugins/module_utils/``. A docstring may name a module by its file's import alias
    (``_errors.clip``), so its dotted names are not read; the Markdown says ``_base/errors.clip``.

* It exists when the path does, or when it names a Python module without its suffix
  (``_base/slurm_states``) or a name inside one (``_engines/tree.walk``: ``_engines/tree.py``).
* ``NOT_PATHS`` lists the words that look like paths and are something else, each with what it is.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOT_FOLDERS = ("plugins/", "tests/", "docs/", "tools/", "roles/", "playbooks/")
LAYER_FOLDERS = ("_base/", "_engines/", "_events/", "_orchestration/", "_providers/", "_transport/", "_writers/")
PATTERN_CHARACTERS = set("<>*{}$")
SPAN = re.compile(r"``([^`\n]+)``|`([^`\n]+)`")
BARE_PYTHON_FILE = re.compile(r"(?:_|test_)\w+\.py")
DOTTED_MODULE = re.compile(r"(_[a-z]\w*)\.[a-z_]\w*(?:[./]\w+)*(?:\(.*)?")
MODULE_UTILS = REPO / "plugins" / "module_utils"
NOT_PATHS = {
    "roles/compute.viewer": "a Google Cloud IAM role (docs/providers/gcp.md)",
}


def named_paths(text, markdown=False):
    """The words of ``text``'s backtick spans that name a file, by the rule of this module."""
    for match in SPAN.finditer(text):
        for word in (match.group(1) or match.group(2)).split():
            word = word.split("::")[0].split("#")[0].strip(".,;:()[]'\"")
            if not word or PATTERN_CHARACTERS & set(word) or word in NOT_PATHS:
                continue
            if word.startswith(ROOT_FOLDERS + LAYER_FOLDERS) or BARE_PYTHON_FILE.fullmatch(word):
                yield word
            elif markdown and DOTTED_MODULE.fullmatch(word):
                yield word


def _file_names():
    """The names of the files in the checkout, outside its hidden folders (.git, .venv, .collections)."""
    names = set()
    for _folder, subfolders, files in os.walk(REPO):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        names.update(files)
    return names


def exists(word, file_names):
    if BARE_PYTHON_FILE.fullmatch(word):
        return word in file_names
    dotted = DOTTED_MODULE.fullmatch(word)
    if dotted:
        name = dotted.group(1)
        return any(path.stem == name or (path.is_dir() and path.name == name) for path in MODULE_UTILS.rglob("_*"))
    path = REPO / word if word.startswith(ROOT_FOLDERS) else REPO / "plugins" / "module_utils" / word
    module = path.name.split(".")[0] + ".py"
    return path.exists() or path.with_name(path.name + ".py").exists() or path.with_name(module).exists()


def _documents():
    for path in [REPO / "CONTRIBUTING.md", REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        yield path, path.read_text(encoding="utf-8"), True
    for path in sorted((REPO / "plugins").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                docstring = ast.get_docstring(node, clean=False)
                if docstring:
                    yield path, docstring, False


def test_every_path_named_in_backticks_exists():
    file_names = _file_names()
    missing = sorted({f"{path.relative_to(REPO)}: {word}" for path, text, markdown in _documents()
                      for word in named_paths(text, markdown) if not exists(word, file_names)})
    assert missing == []


@pytest.mark.parametrize("text, expected", [
    ("see `plugins/module_utils/_errors.py` and ``_writers/gone.py::ensure``", ["plugins/module_utils/_errors.py",
                                                                                "_writers/gone.py"]),
    ("`_engines/tree.walk`, `_base/slurm_states`, (`docs/testing.md#fixtures`)",
     ["_engines/tree.walk", "_base/slurm_states", "docs/testing.md"]),
    ("`_errors.py` `test_layers.py` `errors.py` `test_provider_<name>.py` `roles/compute.viewer` `ansible-doc`",
     ["_errors.py", "test_layers.py"]),
])
def test_the_rule_reads_the_words_it_documents(text, expected):
    assert list(named_paths(text)) == expected


def test_dotted_module_names_are_read_in_markdown_only():
    text = "`_yaml.safe_load` and `_model.normalize_switch_names` and `module.params`"
    assert list(named_paths(text)) == []
    assert list(named_paths(text, markdown=True)) == ["_yaml.safe_load", "_model.normalize_switch_names"]
    assert not exists("_yaml.safe_load", set()) and exists("_model.normalize_switch_names", set())
    assert exists("_providers.discover", set())


def test_a_path_that_is_gone_is_missing_and_a_module_attribute_is_found():
    file_names = _file_names()
    assert not exists("plugins/module_utils/_errors.py", file_names)
    assert not exists("_errors.py", file_names)
    assert not exists("_writers/k8s_labels.py", file_names)
    assert exists("_engines/tree.walk", file_names) and exists("_base/slurm_states", file_names)
    assert exists("test_layers.py", file_names) and exists("docs/providers", file_names)
