# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""YAML loading for large models and files: libyaml's loader when PyYAML has it (4x faster)."""

from __future__ import annotations

try:
    import yaml

    HAS_YAML = True
    YAMLError = yaml.YAMLError
    _LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    HAS_YAML = False
    YAMLError = ValueError
    _LOADER = None


def safe_load(stream):
    """yaml.safe_load with the C loader when available (same results, safe constructors only)."""
    if not HAS_YAML:
        raise RuntimeError("PyYAML is required")
    return yaml.load(stream, Loader=_LOADER)  # nosec B506 - a SafeLoader class
