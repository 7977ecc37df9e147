# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one strict reader of numbers the collection did not write itself.

Untrusted text (a node's nvidia-smi output, an HCA description, a header a server sent, a state
file on the controller) holds numbers that Python reads too generously: ``str.isdigit()`` is true for
``²`` (which ``int()`` refuses), ``int()`` takes ``٣`` (Arabic-Indic digits), ``_``, spaces and signs,
and raises on more than 4,300 digits; ``float()`` takes ``nan`` and ``inf``; JSON's ``true`` is the
integer 1. Every reader of such input goes through these two functions instead:

* ``whole_number(text, where, high=...)``: ASCII digits only, at most ``MAX_DIGITS`` of them, checked
  against the range before ``int()`` runs, so it never raises anything but ``error``;
* ``whole_number_or_none(text, ...)``: the same reading, None instead of an error, for a reader that
  has an answer for text that is no number;
* ``number_value(value, where, ...)``: an already-decoded value (JSON, YAML, an Ansible variable) that
  must be a finite number in a range; booleans are refused, strings are not numbers.

Both raise ``error`` (``TopologyError`` unless the caller names its kind, such as ``NodeDataError``
for data about one node, which quarantines that node) with a message naming ``where``.
``tests/unit/plugins/module_utils/test_numbers_only_way.py`` holds a guard that fails when code calls
``int()`` or ``float()`` on anything but a literal outside this module and the uses it lists with a reason.
"""

from __future__ import annotations

import math

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, clip

# Longer than any number a reader here accepts (2**64 has 20 digits); leading zeros included.
MAX_DIGITS = 32
_ASCII_DIGITS = frozenset("0123456789")


def whole_number_or_none(text, low=0, high=2 ** 63 - 1):
    """``text`` as an int from ``low`` to ``high`` (ASCII digits only, at most ``MAX_DIGITS``), or None: for a
    reader that has an answer for text that is no number (a name kept as text, a default backoff)."""
    if (not isinstance(text, str) or not text or len(text) > MAX_DIGITS
            or not _ASCII_DIGITS.issuperset(text)):
        return None
    value = int(text)
    return value if low <= value <= high else None


def whole_number(text, where, low=0, high=2 ** 63 - 1, error=TopologyError) -> int:
    """``text`` as an int from ``low`` to ``high``: ASCII digits only (no sign, space or ``_``), at most
    ``MAX_DIGITS`` of them; ``error`` naming ``where`` else."""
    value = whole_number_or_none(text, low, high)
    if value is None:
        raise error(f"{where} must be a whole number from {low} to {high}, got {clip(text)}")
    return value


def number_value(value, where, low=0, high=2 ** 63 - 1, integer=False, error=TopologyError):
    """``value`` (already decoded: JSON, YAML, a variable) when it is a finite number from ``low`` to
    ``high`` (an int when ``integer``); booleans, strings, NaN and infinities are refused with ``error``
    naming ``where``."""
    kind = "a whole number" if integer else "a number"
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or (isinstance(value, float) and (not math.isfinite(value) or (integer and not value.is_integer())))):
        raise error(f"{where} must be {kind} from {low} to {high}, got {clip(value)}")
    if not low <= value <= high:
        raise error(f"{where} must be {kind} from {low} to {high}, got {clip(value)}")
    return int(value) if integer else value
