# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Edit only the slurm.conf settings this collection needs; leave every other line as it is.

Global settings are ``Key=Value`` lines (keys are case-insensitive in Slurm). Partitions are
``PartitionName=<name> Key=Value ...`` lines; we set or remove single attributes in place.
"""

from __future__ import annotations

import math
import re

from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError, clip

MANAGED_MARKER = "# Settings managed by Ansible (aifactory.topology)"
# Changing these needs every daemon restarted (slurm.conf(5)); everything else we manage,
# TopologyPlugin included, is applied by `scontrol reconfigure` since Slurm 23.11.
RESTART_KEYS = frozenset({"switchtype", "switchparameters"})
_WORD = re.compile(r"(\S+?)=(\S*)")
_SAFE_VALUE = re.compile(r"^[^\s#]+$")


def _key_of(line):
    match = re.match(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*=", line)
    return match.group(1).lower() if match else None


def _check_key(key, where):
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", str(key)):
        raise TopologyError(f"{where}: {key!r} is not a slurm.conf key")


def _slurm_value(key, value, where):
    """``value`` as slurm.conf text, or None (remove it): booleans are YES and NO, as slurm.conf writes them.

    YAML makes numbers of ``MaxNodes: 4`` and booleans of ``Hidden: yes``: both mean what they say.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "YES" if value else "NO"
    if isinstance(value, int) or isinstance(value, float) and math.isfinite(value):
        return str(value)
    if not isinstance(value, str) or not _SAFE_VALUE.match(value):
        # An empty Topology= once swallowed the next option in slurmd (SlinkyProject/slurm-operator#261).
        raise TopologyError(f"{where}: {key} must be a non-empty string without spaces or '#', a number or a boolean, "
                            f"got {clip(value)}; use null to remove the setting")
    return value


def _split_partition(line):
    """PartitionName line -> (name, [(key, value)], trailing comment)."""
    body, _sep, comment = line.partition("#")
    pairs = _WORD.findall(body)
    return pairs[0][1], pairs[1:], ("#" + comment if _sep else "")


def apply(text, settings=None, partitions=None):
    """(new_text, changed_settings, changed_partitions).

    ``settings``: key -> value (None removes the key). ``partitions``: name -> None (remove the
    partition) or a mapping attribute -> value (None removes the attribute); a partition that
    does not exist is added when its mapping has ``Nodes``.
    """
    settings = dict(settings or {})
    partitions = dict(partitions or {})
    for key, value in settings.items():
        _check_key(key, "settings")
        if str(key).lower() in ("partitionname", "nodename"):
            raise TopologyError(f"settings: manage {key} lines through partitions, not settings")
        settings[key] = _slurm_value(key, value, f"settings.{key}")
    for name, attrs in partitions.items():
        # Written verbatim after PartitionName=: a space, '=' or line break would add attributes or lines.
        if not isinstance(name, str) or not _SAFE_VALUE.match(name) or "=" in name:
            raise TopologyError(f"partitions: {clip(name)} is not a partition name (no spaces, '#' or '=')")
        if attrs is None:
            continue
        if not isinstance(attrs, dict):
            raise TopologyError(f"partitions.{name} must be a mapping of attributes (or null to remove it)")
        for key in attrs:
            _check_key(key, f"partitions.{name}")
            if str(key).lower() == "partitionname":
                raise TopologyError(f"partitions.{name}: the partition's name is its key, not a PartitionName attribute")
        partitions[name] = {key: _slurm_value(key, value, f"partitions.{name}.{key}") for key, value in attrs.items()}

    lines = text.splitlines()
    wanted = {str(key).lower(): (str(key), value) for key, value in settings.items()}
    changed_settings, changed_partitions = set(), set()
    seen_settings, seen_partitions = set(), set()
    out = []
    for line in lines:
        key = _key_of(line)
        if key in wanted:
            original, value = wanted[key]
            if key in seen_settings or value is None:
                changed_settings.add(original)  # a duplicate or a removal: the line goes
                continue
            seen_settings.add(key)
            new_line = f"{original}={value}"
            current = line.split("#", 1)[0].split("=", 1)[1].strip()
            if current != value:
                changed_settings.add(original)
                out.append(new_line)
            else:
                out.append(line)
            continue
        if key == "partitionname":
            name, pairs, comment = _split_partition(line)
            if name in partitions:
                seen_partitions.add(name)
                attrs = partitions[name]
                if attrs is None:
                    changed_partitions.add(name)
                    continue
                new_line = _edit_partition(name, pairs, attrs, comment)
                if new_line != line:
                    changed_partitions.add(name)
                    out.append(new_line)
                else:
                    out.append(line)
                continue
        out.append(line)

    missing_settings = [(orig, value) for key, (orig, value) in wanted.items()
                        if key not in seen_settings and value is not None]
    missing_partitions = []
    for name, attrs in partitions.items():
        if name in seen_partitions or attrs is None:
            continue
        if not any(k.lower() == "nodes" for k in attrs):
            raise TopologyError(f"partition {name!r} is not in slurm.conf; give its Nodes to create it")
        missing_partitions.append(_edit_partition(name, [], attrs, ""))
        changed_partitions.add(name)
    if missing_settings or missing_partitions:
        if MANAGED_MARKER not in out:
            out.append(MANAGED_MARKER)
        for original, value in missing_settings:
            changed_settings.add(original)
            # Slurm reads global settings anywhere; under our marker a reader finds them together.
            out.append(f"{original}={value}")
        out.extend(missing_partitions)
    return "\n".join(out) + "\n", sorted(changed_settings), sorted(changed_partitions)


def _edit_partition(name, pairs, attrs, comment):
    lowered = {str(key).lower(): (str(key), value) for key, value in attrs.items()}
    kept, done = [], set()
    for key, value in pairs:
        wanted = lowered.get(key.lower())
        if wanted is None:
            kept.append(f"{key}={value}")
            continue
        done.add(key.lower())
        if wanted[1] is not None:
            kept.append(f"{key}={wanted[1]}")
    for low, (key, value) in lowered.items():
        if low not in done and value is not None:
            kept.append(f"{key}={value}")
    line = " ".join([f"PartitionName={name}"] + kept)
    return f"{line} {comment}" if comment else line


def restart_settings(changed_settings):
    """The changed settings that need the Slurm daemons restarted."""
    return [key for key in changed_settings if key.lower() in RESTART_KEYS]
