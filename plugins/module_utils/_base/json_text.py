# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one bounded reader of JSON that someone else could have written: a state file on the controller,
an event's body.

``json.loads`` alone takes any size, raises RecursionError (not ValueError) on deep nesting and reads
``NaN`` and ``Infinity``; a value parsed within Python's recursion limit can still be deep enough to break
whatever walks it later (a deep copy, Ansible's result encoder). ``loads`` bounds the size before parsing,
turns the recursion into ``JSONLimitError`` and walks the result without recursion to bound its depth.
What the values mean (a stamp that is NaN, a list where a name belongs) is for the caller's checks.
"""

from __future__ import annotations

import json


class JSONLimitError(ValueError):
    """JSON text refused; ``kind`` says why: ``size``, ``depth`` or ``syntax`` (no JSON at all)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def nested_deeper_than(value, limit) -> bool:
    """Whether the decoded ``value`` nests arrays and objects deeper than ``limit`` (iterative: any depth)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def loads(text, max_chars=None, max_depth=None):
    """``text`` (str or bytes) decoded; JSONLimitError when it is longer than ``max_chars``, nests deeper
    than ``max_depth`` or is not JSON (a JSONLimitError is a ValueError).

    Without ``max_chars`` the caller has bounded the size (an HTTP body read under its cap); without
    ``max_depth`` the depth is bounded by Python's recursion limit only, for a large answer that the
    caller reads field by field and never walks whole (a Kubernetes list), where a walk would cost a
    steady-state run more than the parse."""
    if max_chars is not None and len(text) > max_chars:
        raise JSONLimitError("size", f"larger than {max_chars} characters ({len(text)})")
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONLimitError("depth", "nested too deeply" if max_depth is None
                             else f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        raise JSONLimitError("syntax", f"not JSON ({exc})") from None
    if max_depth is not None and isinstance(value, (dict, list)) and nested_deeper_than(value, max_depth):
        raise JSONLimitError("depth", f"nested deeper than {max_depth} levels")
    return value
