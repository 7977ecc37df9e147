"""Make ``ansible_collections.aifactory.topology`` importable from a plain checkout.

`make setup` links the repository into .collections/ansible_collections/aifactory/topology;
when that link is missing (a bare pytest run), a temporary one is made.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _collections_root() -> Path:
    linked = REPO / ".collections"
    if (linked / "ansible_collections" / "aifactory" / "topology" / "galaxy.yml").exists():
        return linked
    root = Path(tempfile.mkdtemp(prefix="aifactory-collections-"))
    target = root / "ansible_collections" / "aifactory"
    target.mkdir(parents=True)
    os.symlink(REPO, target / "topology")
    return root


try:
    FOUND = importlib.util.find_spec("ansible_collections.aifactory.topology") is not None
except ImportError:
    FOUND = False
if not FOUND:
    COLLECTIONS = _collections_root()
    sys.path.insert(0, str(COLLECTIONS))
    os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", str(COLLECTIONS))
