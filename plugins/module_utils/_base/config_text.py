# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one rule for keys and values written into ``KEY=value`` configuration files (IMEX's config.cfg).

An operator's key or value is written verbatim into a file another daemon parses line by line, so what it
may hold is stated once: a key is a name (a letter or ``_``, then letters, digits and ``_``, at most
``MAX_KEY_LENGTH`` characters), never a line break, ``=`` or white space that would make another line or
another key; a value is one line of printable text (no NUL, no line break, no escape sequence or other
control character, at most ``MAX_VALUE_LENGTH`` characters). The problems are words for a message that
names the key; the caller says where.
"""

from __future__ import annotations

import re
import unicodedata

MAX_KEY_LENGTH = 128
MAX_VALUE_LENGTH = 4096
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def key_problem(key):
    """Why ``key`` cannot be written as a config key, or None."""
    if not isinstance(key, str) or not key:
        return "a key must be a non-empty name"
    if len(key) > MAX_KEY_LENGTH:
        return f"a key is at most {MAX_KEY_LENGTH} characters"
    if not _KEY.fullmatch(key):
        return "a key is a letter or _ then letters, digits and _ (no line break, '=', space or other character)"
    return None


def value_problem(value):
    """Why the text of ``value`` cannot be written on a config line, or None (numbers and booleans are fine)."""
    if not isinstance(value, str):
        return None
    if len(value) > MAX_VALUE_LENGTH:
        return f"a value is at most {MAX_VALUE_LENGTH} characters"
    for char in value:
        if unicodedata.category(char)[0] == "C" or unicodedata.category(char) in ("Zl", "Zp"):
            return (f"a value is one line of printable text; it holds U+{ord(char):04X} "
                    "(a line break, NUL, escape or other control character)")
    return None
