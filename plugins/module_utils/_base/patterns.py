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

A pattern an option gives for something other than a name selector (``accelerator.rack_from_name``,
``block_name_pattern.regexp``) goes through ``compile_search_pattern``: the same cost rules, and a
``BoundedPattern`` that matches nothing longer than ``MAX_NAME_LENGTH`` characters.

Patterns the collection writes itself and applies to hostile multi-line text (a node's command
output, a file it serves) are literals, and one more rule holds for them: under ``(?m)`` no
repetition may match a line break (``^\\s*`` runs on from every line start across every blank line
that follows: quadratic). ``line_crossing_problem`` says why a pattern breaks that rule; the guard
test ``tests/unit/plugins/module_utils/test_patterns_only_way.py`` runs it over every literal
multi-line pattern and fails when code outside this module compiles or applies a non-literal
pattern. Such text is read line by line (``str.split("\\n")``, strip, an anchored match) instead.
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


def _can_match_newline(items, dotall):
    """Whether one of the parsed ``items`` (a repetition's body) can match a line break."""
    for op, arg in items:
        if op == _sre_parse.LITERAL and arg == 10:
            return True
        if op == _sre_parse.NOT_LITERAL and arg != 10:
            return True
        if op == _sre_parse.ANY and dotall:
            return True
        if op == _sre_parse.IN:
            negated = any(inner_op == _sre_parse.NEGATE for inner_op, _inner_arg in arg)
            matches = any(
                (inner_op == _sre_parse.LITERAL and inner_arg == 10)
                or (inner_op == _sre_parse.RANGE and inner_arg[0] <= 10 <= inner_arg[1])
                or (inner_op == _sre_parse.CATEGORY and inner_arg in (
                    _sre_parse.CATEGORY_SPACE, _sre_parse.CATEGORY_NOT_DIGIT, _sre_parse.CATEGORY_NOT_WORD))
                for inner_op, inner_arg in arg)
            if matches != negated:
                return True
        if op in _REPEATS and _can_match_newline(arg[2], dotall):
            return True
        if op == _sre_parse.SUBPATTERN and _can_match_newline(arg[-1], dotall):
            return True
        if op == _sre_parse.BRANCH and any(_can_match_newline(branch, dotall) for branch in arg[1]):
            return True
    return False


def _repeat_crossing(items, dotall):
    for op, arg in items:
        if op in _REPEATS:
            if arg[1] > 1 and _can_match_newline(arg[2], dotall):
                return True
            found = _repeat_crossing(arg[2], dotall)
        elif op == _sre_parse.SUBPATTERN:
            found = _repeat_crossing(arg[-1], dotall)
        elif op == _sre_parse.BRANCH:
            found = any(_repeat_crossing(branch, dotall) for branch in arg[1])
        else:
            found = False
        if found:
            return True
    return False


def line_crossing_problem(pattern, flags=0):
    """Why ``pattern`` (a literal the collection applies to multi-line text) breaks the line rule, or None:
    under ``(?m)`` (or ``re.MULTILINE`` in ``flags``) no repetition may match a line break."""
    parsed = _sre_parse.parse(pattern, flags)
    state_flags = parsed.state.flags if hasattr(parsed, "state") else parsed.pattern.flags
    if not state_flags & re.MULTILINE:
        return None
    if _repeat_crossing(parsed, bool(state_flags & re.DOTALL)):
        return (f"{pattern!r}: a repetition that can match a line break (such as \\s* or [^x]+) in a multi-line "
                "pattern runs on across lines (quadratic in blank lines); match line by line or use [ \\t]")
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
    if problem is None and line_crossing_problem(pattern) is not None:  # an operator's (?m) is held to the line rule
        problem = "under (?m) a repetition that can match a line break (such as \\s*) is not allowed"
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


class BoundedPattern:
    """A pattern from an option, past the cost check, that matches only text of at most ``max_length``
    characters (longer text matches nothing): so one match costs at most about ``max_length``² steps."""

    __slots__ = ("compiled", "max_length")

    def __init__(self, compiled, max_length=MAX_NAME_LENGTH):
        self.compiled, self.max_length = compiled, max_length

    @property
    def groupindex(self):
        return self.compiled.groupindex

    @property
    def pattern(self):
        return self.compiled.pattern

    def _fits(self, text):
        return isinstance(text, str) and len(text) <= self.max_length

    def fullmatch(self, text):
        return self.compiled.fullmatch(text) if self._fits(text) else None

    def search(self, text):
        return self.compiled.search(text) if self._fits(text) else None


def compile_search_pattern(pattern, where, max_length=MAX_NAME_LENGTH) -> BoundedPattern:
    """A pattern an option gives (not a name selector's list), with ``compile_pattern``'s cost rules, as a
    ``BoundedPattern`` (``fullmatch`` and ``search`` on text of at most ``max_length`` characters)."""
    return BoundedPattern(compile_pattern(pattern, where), max_length)
