# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm-compatible hostlist expressions: expand and compress.

Syntax (Slurm's src/common/hostlist.c): names are separated by commas or white space
outside brackets; ``tux[0-3,12]`` ranges; several bracket groups expand as a cartesian
product (``r[1-2]n[01-18]``); zero padding comes from the width of each range's low bound;
text after ``]`` is kept; numeric-only names (``[1101-1102]``) have an empty prefix.
"""

from __future__ import annotations

import itertools
import re

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import clip
from ansible_collections.aifactory.topology.plugins.module_utils._base.numbers import whole_number_or_none

# Topograph caps request-supplied ranges at 500,000 names; a hostlist is untrusted input.
DEFAULT_MAX_HOSTS = 500_000

# Slurm's own ranges are unsigned longs; longer digit strings only serve to blow up memory.
MAX_RANGE_DIGITS = 18

_SEPARATORS = ",\t\n "
# prefix, the last run of digits, suffix; a greedy prefix ending in a non-digit is ~3x faster than
# the equivalent lazy "^(.*?)(\d+)(\D*)$" (same groups for every name, newlines included).
# re.ASCII: \d is 0-9 only; a name with another script's digit (U+0ED0) is a name, never a number.
_NAME_SPLIT = re.compile(r"(.*[^\d\n]|)(\d+)(\D*)$", re.ASCII)


class HostlistError(ValueError):
    """A hostlist expression that cannot be expanded; the message names the expression."""


class HostBudget:
    """One expansion limit for a whole run: every expression expanded through it draws on ``max_hosts``.

    A per-expression limit lets four expressions of 500k names each through; a budget shared
    by every hostlist of one discovery (or model) does not.
    """

    def __init__(self, max_hosts=DEFAULT_MAX_HOSTS):
        self.max_hosts = max_hosts
        self.used = 0

    def expand(self, expression):
        names = expand(expression, self.max_hosts - self.used, budget_total=self.max_hosts)
        self.used += len(names)
        return names


def _split_top_level(expression: str) -> list[str]:
    tokens, depth, current = [], 0, []
    for char in expression:
        if char == "[":
            if depth:
                raise HostlistError(f"nested '[' in hostlist {clip(expression)}")
            depth = 1
        elif char == "]":
            if not depth:
                raise HostlistError(f"unbalanced ']' in hostlist {clip(expression)}")
            depth = 0
        if char in _SEPARATORS and not depth:
            if current:
                tokens.append("".join(current))
                current = []
            continue
        current.append(char)
    if depth:
        raise HostlistError(f"unbalanced '[' in hostlist {clip(expression)}")
    if current:
        tokens.append("".join(current))
    return tokens


def _parse_ranges(body: str, token: str) -> list[tuple[int, int, int]]:
    """``01-03,7`` -> [(1, 3, 2), (7, 7, 1)] as (low, high, width)."""
    ranges = []
    for part in body.split(","):
        low_text, sep, high_text = part.partition("-")
        if not sep:
            high_text = low_text
        if not (low_text.isdigit() and high_text.isdigit() and low_text.isascii() and high_text.isascii()):
            raise HostlistError(f"invalid range {clip(part)} in hostlist {clip(token)}")
        if max(len(low_text), len(high_text)) > MAX_RANGE_DIGITS:
            raise HostlistError(f"range {clip(part)} in hostlist {clip(token)} has more than {MAX_RANGE_DIGITS} digits")
        low, high = int(low_text), int(high_text)
        if low > high:
            raise HostlistError(f"invalid range {clip(part)} in hostlist {clip(token)}: low bound above high bound")
        ranges.append((low, high, len(low_text)))
    return ranges


def _parse_token(token: str) -> list[object]:
    """A token as a list of literal strings and range lists."""
    pieces: list[object] = []
    rest = token
    while rest:
        start = rest.find("[")
        if start < 0:
            pieces.append(rest)
            break
        if start:
            pieces.append(rest[:start])
        end = rest.index("]", start)
        body = rest[start + 1:end]
        if not body:
            raise HostlistError(f"empty brackets in hostlist {clip(token)}")
        pieces.append(_parse_ranges(body, token))
        rest = rest[end + 1:]
    return pieces


def _token_size(pieces: list[object]) -> int:
    size = 1
    for piece in pieces:
        if isinstance(piece, list):
            size *= sum(high - low + 1 for low, high, _width in piece)
    return size


def _expand_pieces(pieces: list[object]) -> list[str]:
    names = [""]
    for piece in pieces:
        if isinstance(piece, str):
            names = [name + piece for name in names]
            continue
        values = [
            str(number).zfill(width) for low, high, width in piece for number in range(low, high + 1)
        ]
        names = [name + value for name in names for value in values]
    return names


def expand(expression: str | list[str] | None, max_hosts: int = DEFAULT_MAX_HOSTS, budget_total=None) -> list[str]:
    """Expand a hostlist expression (or a list of them) into names, in order, without duplicates.

    Raises HostlistError for a malformed expression or one that names more than
    ``max_hosts`` hosts; the size is computed before anything is generated.
    """
    if expression is None:
        return []
    if isinstance(expression, str):
        expressions = [expression]
    elif isinstance(expression, (list, tuple)):
        expressions = list(expression)
    else:
        raise HostlistError(f"a hostlist must be a string or a list of strings, got {clip(expression)}")
    parsed = []
    total = 0
    for item in expressions:
        if not isinstance(item, str):
            raise HostlistError(f"hostlist entries must be strings, got {clip(item)}")
        for token in _split_top_level(item):
            pieces = _parse_token(token)
            total += _token_size(pieces)
            if total > max_hosts:
                shared = f" left of the run's {budget_total}" if budget_total is not None else ""
                raise HostlistError(f"hostlist {clip(item)} expands to more than {max_hosts} hosts{shared} "
                                    "(limit against runaway expansion)")
            parsed.append(pieces)
    # dict.fromkeys keeps the first of each name, in order (C speed at 100,000 names).
    return list(dict.fromkeys(itertools.chain.from_iterable(map(_expand_pieces, parsed))))


def _format_runs(runs: list[tuple[int, int, int]]) -> str:
    parts = []
    for low, high, width in runs:
        low_text = str(low).zfill(width)
        parts.append(low_text if low == high else f"{low_text}-{str(high).zfill(width)}")
    return ",".join(parts)


def compress(names) -> str:
    """Compress names into a hostlist expression that expands back to the same set.

    Like Topograph's cluset: names are grouped by the text around their last run of
    digits, groups are ordered by prefix, numbers numerically, and the digit strings
    keep their padding. Unlike it, a run never mixes widths that would not expand back
    (``n9,n010`` stays two entries instead of Topograph's ``n[9-010]``).
    """
    groups: dict[tuple[str, str], set[str]] = {}
    literals = set()
    for name in names:
        match = _NAME_SPLIT.match(name)
        # A number longer than expand() reads back stays a literal name (and never meets int()'s limit).
        if match is None or len(match.group(2)) > MAX_RANGE_DIGITS:
            literals.add(name)
            continue
        prefix, digits, suffix = match.groups()
        groups.setdefault((prefix, suffix), set()).add(digits)
    entries: list[tuple[str, str, str]] = [(name, "", name) for name in literals]
    for (prefix, suffix), digit_strings in groups.items():
        runs = _same_width_runs(digit_strings) or _runs(digit_strings)
        runs.sort(key=lambda run: (run[0], run[2]))
        if len(runs) == 1 and runs[0][0] == runs[0][1]:
            text = prefix + str(runs[0][0]).zfill(runs[0][2]) + suffix
        else:
            text = f"{prefix}[{_format_runs([tuple(run) for run in runs])}]{suffix}"
        entries.append((prefix, suffix, text))
    entries.sort(key=lambda entry: (entry[0], entry[1]))
    return ",".join(entry[2] for entry in entries)


def _same_width_runs(digit_strings):
    """The runs when every digit string has one width (the common case, and fast), else None."""
    width = len(next(iter(digit_strings)))
    if any(len(digits) != width for digits in digit_strings):
        return None
    runs: list[list[int]] = []
    for number in sorted(map(int, digit_strings)):
        if runs and runs[-1][1] == number - 1:
            runs[-1][1] = number
        else:
            runs.append([number, number, width])
    return runs


def _runs(digit_strings):
    """[low, high, width] runs of mixed-width digit strings; a run never mixes widths that would not
    expand back."""
    runs: list[list[int]] = []
    open_runs: dict[int, list[int]] = {}  # width -> run ending at the previous number
    for digits in sorted(digit_strings, key=lambda text: (int(text), len(text))):
        number = int(digits)
        extended = False
        for width, run in list(open_runs.items()):
            if run[1] == number - 1 and str(number).zfill(width) == digits:
                run[1] = number
                extended = True
                break
        if not extended:
            run = [number, number, len(digits)]
            runs.append(run)
            open_runs[len(digits)] = run
        # Runs that can no longer grow are dropped from the open set.
        open_runs = {width: run for width, run in open_runs.items() if run[1] >= number}
    return runs


_NATURAL = re.compile(r"(\d+)", re.ASCII)


def natural_key(name: str) -> tuple:
    """Sort key that orders ``rack2`` before ``rack10``."""
    # A digit run too long to be a number here (5,000 digits: int() raises) sorts after the numbers.
    return tuple((0, number, part) if (number := whole_number_or_none(part)) is not None else (1, 0, part)
                 for part in _NATURAL.split(name))
