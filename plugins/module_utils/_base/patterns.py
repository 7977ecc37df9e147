# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Include/exclude regular expressions an operator writes for names (switches, HCAs), at bounded cost.

A pattern is untrusted input run against names another host chose (an HCA's node description,
a switch's), so the cost of one match is bounded before any match is tried:

* a pattern matches a name whole (``re.fullmatch``; write ``.*LEAF.*`` for a part), and only
  names of at most ``MAX_NAME_LENGTH`` characters are matched (longer ones match nothing);
* at most ``MAX_PATTERNS`` patterns of at most ``MAX_PATTERN_LENGTH`` characters per list;
* what makes Python's backtracking matcher exponential or a high polynomial is refused: a
  repetition (``*``, ``+``, ``{m,n}`` with n > 1) inside another, an alternation inside a
  repetition (``(a|ab)*``), back-references and look-arounds, and more than
  ``MAX_REPEATS`` repetitions in one pattern. What remains costs at most about n² steps per name.

Errors name the field and the index (``params.switches.exclude[1]``).
"""

from __future__ import annotations

import re

try:  # Python 3.11+: the parser behind re.compile (sre_parse warns when imported there)
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_parse as _sre_parse  # pylint: disable=deprecated-module

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, check_known_keys, clip

MAX_NAME_LENGTH = 253
MAX_PATTERN_LENGTH = 256
MAX_PATTERNS = 64
MAX_REPEATS = 2

_REPEATS = {_sre_parse.MAX_REPEAT, _sre_parse.MIN_REPEAT}
_POSSESSIVE = getattr(_sre_parse, "POSSESSIVE_REPEAT", None)
if _POSSESSIVE is not None:
    _REPEATS.add(_POSSESSIVE)
_REFUSED = {
    _sre_parse.GROUPREF: "a back-reference",
    _sre_parse.GROUPREF_EXISTS: "a conditional group",
    _sre_parse.ASSERT: "a look-ahead or look-behind",
    _sre_parse.ASSERT_NOT: "a negative look-ahead or look-behind",
}


def _walk(items, inside_repeat, counts):
    """The first cost problem of a parsed pattern, or None; counts repetitions in ``counts``."""
    for op, arg in items:
        if op in _REFUSED:
            return f"{_REFUSED[op]} is not allowed"
        if op in _REPEATS:
            low, high, body = arg
            if high > 1:
                if inside_repeat:
                    return "a repetition inside a repetition is not allowed (its matching time can explode)"
                counts[0] += 1
            problem = _walk(body, inside_repeat or high > 1, counts)
        elif op == _sre_parse.SUBPATTERN:
            problem = _walk(arg[-1], inside_repeat, counts)
        elif op == getattr(_sre_parse, "ATOMIC_GROUP", None):
            problem = _walk(arg, inside_repeat, counts)
        elif op == _sre_parse.BRANCH:
            if inside_repeat:
                return "an alternation (|) inside a repetition is not allowed (its matching time can explode)"
            problem = None
            for branch in arg[1]:
                problem = problem or _walk(branch, inside_repeat, counts)
        else:
            problem = None
        if problem:
            return problem
    return None


def compile_pattern(pattern, where):
    """``re.compile(pattern)`` once it is known to be cheap to match; a TopologyError naming ``where`` else."""
    if not isinstance(pattern, str) or not pattern:
        raise TopologyError(f"{where} must be a non-empty string (a regular expression), got {clip(pattern)}")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise TopologyError(f"{where} is {len(pattern)} characters long; at most {MAX_PATTERN_LENGTH}")
    try:
        compiled = re.compile(pattern)
        parsed = _sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise TopologyError(f"{where}: {clip(pattern)} is not a regular expression: {exc}") from None
    counts = [0]
    problem = _walk(parsed, False, counts)
    if problem is None and counts[0] > MAX_REPEATS:
        problem = f"more than {MAX_REPEATS} repetitions (*, +, {{m,n}}) are not allowed"
    if problem:
        raise TopologyError(f"{where}: {clip(pattern)}: {problem}")
    return compiled


def _pattern_list(value, where):
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
        raise TopologyError(f"{where} must be a non-empty list of regular expressions, got {clip(value)}")
    if len(value) > MAX_PATTERNS:
        raise TopologyError(f"{where} has {len(value)} patterns; at most {MAX_PATTERNS}")
    return [compile_pattern(pattern, f"{where}[{index}]") for index, pattern in enumerate(value)]


class NameSelector:
    """``include`` and ``exclude`` pattern lists: a name is selected when no exclude pattern and (if
    there are include patterns) some include pattern matches it whole."""

    __slots__ = ("include", "exclude", "where")

    def __init__(self, include, exclude, where):
        self.include, self.exclude, self.where = include, exclude, where

    @classmethod
    def from_params(cls, value, where):
        """The selector of ``value`` (``{include: [...], exclude: [...]}``), or None when it is not set."""
        if value is None:
            return None
        if not isinstance(value, dict):
            raise TopologyError(f"{where} must be a mapping with include and/or exclude (lists of regular "
                                f"expressions), got {clip(value)}")
        check_known_keys(value, ("include", "exclude"), where)
        include = _pattern_list(value.get("include"), f"{where}.include")
        exclude = _pattern_list(value.get("exclude"), f"{where}.exclude")
        if not include and not exclude:
            raise TopologyError(f"{where} needs include or exclude patterns")
        return cls(include, exclude, where)

    @staticmethod
    def _any(patterns, names):
        return any(pattern.fullmatch(name) for name in names
                   if isinstance(name, str) and len(name) <= MAX_NAME_LENGTH for pattern in patterns)

    def excludes(self, *names):
        """True when an exclude pattern matches one of ``names`` (the same thing's names: id, display name)."""
        return self._any(self.exclude, names)

    def included(self, *names):
        """True when there are no include patterns or one matches one of ``names``."""
        return not self.include or self._any(self.include, names)

    def selects(self, *names):
        return self.included(*names) and not self.excludes(*names)
