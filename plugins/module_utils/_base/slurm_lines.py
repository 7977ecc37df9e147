# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How Slurm reads the lines of its configuration files (slurm.conf, topology.conf).

Slurm's parser (src/common/parse_config.c) reads with ``fgets``, so:

- a line ends at ``\\n`` only: a form feed, ``\\r``, U+0085 or U+2028 is a character of the line,
  never a line break (``str.splitlines`` splits on all of them);
- ``#`` starts a comment unless an odd number of ``\\`` come right before it;
- a line whose text before its comment ends in an odd number of ``\\`` (white space after them
  aside) continues on the next line;
- then every ``\\`` is dropped and the character after it kept (``\\#`` is ``#``, ``\\\\`` is ``\\``);
- white space is C's ``isspace``: space, tab, ``\\n``, ``\\v``, ``\\f``, ``\\r``; no UTF-8 character is.

Pure: no disk.
"""

from __future__ import annotations

import re

SPACE = " \t\n\v\f\r"
_CODE = re.compile(r"(?:[^#\\]|\\[\s\S])*\\?")  # the text before the first '#' not escaped
_ESCAPE = re.compile(r"\\([\s\S]?)")
# One setting as Slurm's keyvalue regex reads it: a key, an operator, a quoted or unquoted value.
_SETTING = re.compile(r"[ \t\n\v\f\r]*([A-Za-z0-9_.]+)[ \t\n\v\f\r]*([-*+/]?)=[ \t\n\v\f\r]*"
                      r"(?:\"([^\"]*)\"|([^ \t\n\v\f\r]+))(?=[ \t\n\v\f\r]|\Z)")
_INCLUDE = re.compile(r"(?i)include[ \t\n\v\f\r]+([^ \t\n\v\f\r]*)")


class Line:
    """One line as Slurm parses it: physical lines ``first`` to ``last`` (0-based) joined.

    ``text`` is what Slurm reads (comments gone, continuations joined, escapes resolved);
    ``comments`` the comment of each physical line that has one, ``#`` included.
    """

    __slots__ = ("first", "last", "text", "comments")

    def __init__(self, first, last, text, comments):
        self.first = first
        self.last = last
        self.text = text
        self.comments = comments


def physical_lines(text):
    """``text`` split at ``\\n`` only; a final ``\\n`` ends the last line, it does not start another."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def logical_lines(lines):
    """The Lines of a list of physical lines, in order; every physical line belongs to exactly one."""
    index = 0
    while index < len(lines):
        first, pieces, comments = index, [], []
        while True:
            raw = lines[index]
            code = _CODE.match(raw).group()
            if len(code) < len(raw):
                comments.append(raw[len(code):])
            stripped = code.rstrip(SPACE)
            trailing = len(stripped) - len(stripped.rstrip("\\"))
            index += 1
            if trailing % 2 == 1 and index < len(lines):
                pieces.append(stripped[:-1])
                continue
            pieces.append(stripped[:-1] if trailing % 2 == 1 else code)
            break
        yield Line(first, index - 1, _ESCAPE.sub(r"\1", "".join(pieces)), comments)


def key_values(text):
    """``[(key, value), ...]`` of a line's text, from its start, as Slurm matches them one after another."""
    found, position = [], 0
    while True:
        match = _SETTING.match(text, position)
        if match is None:
            return found
        found.append((match.group(1), match.group(3) if match.group(3) is not None else match.group(4)))
        position = match.end()


def include_target(text):
    """The file an ``Include`` line names (``""`` when it names none), or None when ``text`` is no Include.

    Slurm takes the word ``include`` (any case) at the very start of the line, then white space.
    """
    match = _INCLUDE.match(text)
    return match.group(1) if match else None


def quote_value(value):
    """``value`` written so that Slurm reads it back unchanged (quoted when it holds white space)."""
    escaped = re.sub(r"([\\#])", r"\\\1", value)
    return f'"{escaped}"' if any(char in SPACE for char in value) or not value else escaped
