# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Edit only the slurm.conf settings this collection needs; leave every other line as it is.

Global settings are ``Key=Value`` lines (keys are case-insensitive in Slurm). Partitions are
``PartitionName=<name> Key=Value ...`` lines; we set or remove single attributes in place.
Lines are read as Slurm reads them (``_base/slurm_lines``), and ``Include`` is followed as Slurm
follows it: what an included file sets counts, though only slurm.conf itself is edited.

Pure, like every engine: the included files are read through the ``files`` object the caller
gives (``_orchestration/slurm_conf.LocalFiles`` on the module's host): ``read(path, where, max_bytes)``
returns a file's text, ``identity(path)`` the name that tells two paths of one file apart (its real path).
"""

from __future__ import annotations

import math
import os
import re

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, clip
from ansible_collections.aifactory.topology.plugins.module_utils._base.slurm_lines import (
    include_target, key_values, logical_lines, physical_lines, quote_value)

MANAGED_MARKER = "# Settings managed by Ansible (aifactory.topology)"
# Changing these needs every daemon restarted (slurm.conf(5)); everything else we manage,
# TopologyPlugin included, is applied by `scontrol reconfigure` since Slurm 23.11.
RESTART_KEYS = frozenset({"switchtype", "switchparameters"})
# Include: Slurm has no limits (a file that includes itself recurses until it crashes); these are
# far above any real configuration.
MAX_INCLUDE_DEPTH = 8
MAX_INCLUDED_FILES = 100
MAX_INCLUDED_BYTES = 16 << 20  # per file, slurm.conf itself too
_SAFE_VALUE = re.compile(r"[^\s#]+")  # fullmatch: "$" would match before a final "\n", written as a line break


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
    if not isinstance(value, str) or not _SAFE_VALUE.fullmatch(value):
        # An empty Topology= once swallowed the next option in slurmd (SlinkyProject/slurm-operator#261).
        raise TopologyError(f"{where}: {key} must be a non-empty string without spaces or '#', a number or a boolean, "
                            f"got {clip(value)}; use null to remove the setting")
    return value


def apply(text, settings=None, partitions=None, path=None, files=None):
    """(new_text, changed_settings, changed_partitions).

    ``settings``: key -> value (None removes the key). ``partitions``: name -> None (remove the
    partition) or a mapping attribute -> value (None removes the attribute); a partition that
    does not exist is added when its mapping has ``Nodes``. ``path`` is where ``text`` lives:
    a relative ``Include`` is found in its directory. A setting or partition an included file
    already holds as wanted is not added again; one that would have to change there is an error
    naming the file and line (only ``text`` is edited), raised before anything is written.
    ``files`` reads the included files (``IncludedFiles``); without it an ``Include`` is an error.
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
        if not isinstance(name, str) or not _SAFE_VALUE.fullmatch(name) or "=" in name:
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

    lines = physical_lines(text)
    parsed = list(logical_lines(lines))
    source = path or "slurm.conf"
    wanted = {str(key).lower(): (str(key), value) for key, value in settings.items()}
    included = [entry[1:] for entry in _entries(parsed, path, files) if entry[0] > 0]
    held_settings, held_partitions = _held_by_includes(included, wanted, partitions, source)
    changed_settings, changed_partitions = set(), set()
    seen_settings, seen_partitions = set(), set()
    out = []
    for line in parsed:
        pairs = key_values(line.text) if include_target(line.text) is None else []
        key = pairs[0][0].lower() if pairs else None
        kept = lines[line.first:line.last + 1]
        if key in wanted:
            original, value = wanted[key]
            if key in seen_settings or value is None:
                changed_settings.add(original)  # a duplicate or a removal: the line goes
                continue
            seen_settings.add(key)
            if pairs[0][1] != value:
                changed_settings.add(original)
                out.append(f"{original}={quote_value(value)}")
            else:
                out.extend(kept)
            continue
        if key == "partitionname" and pairs[0][1] in partitions:
            name = pairs[0][1]
            seen_partitions.add(name)
            attrs = partitions[name]
            if attrs is None:
                changed_partitions.add(name)
                continue
            edited = _edit_partition(pairs[1:], attrs)
            if edited != pairs[1:]:
                changed_partitions.add(name)
                out.extend(line.comments[:-1])  # the comments of a continued line stay, on their own lines
                out.append(_partition_line(name, edited, line.comments[-1:]))
            else:
                out.extend(kept)
            continue
        out.extend(kept)

    missing_settings = [(orig, value) for key, (orig, value) in wanted.items()
                        if key not in seen_settings and key not in held_settings and value is not None]
    missing_partitions = []
    for name, attrs in partitions.items():
        if name in seen_partitions or name in held_partitions or attrs is None:
            continue
        if not any(k.lower() == "nodes" for k in attrs):
            raise TopologyError(f"partition {name!r} is not in slurm.conf; give its Nodes to create it")
        missing_partitions.append(_partition_line(name, _edit_partition([], attrs), []))
        changed_partitions.add(name)
    if missing_settings or missing_partitions:
        if MANAGED_MARKER not in out:
            out.append(MANAGED_MARKER)
        for original, value in missing_settings:
            changed_settings.add(original)
            # Slurm reads global settings anywhere; under our marker a reader finds them together.
            out.append(f"{original}={quote_value(value)}")
        out.extend(missing_partitions)
    new_text = "\n".join(out) + "\n" if out else ""  # an empty file stays empty
    return new_text, sorted(changed_settings), sorted(changed_partitions)


def _edit_partition(pairs, attrs):
    """The attributes of a partition line, ``(key, value)`` in order, with ``attrs`` set or removed."""
    lowered = {str(key).lower(): (str(key), value) for key, value in attrs.items()}
    kept, done = [], set()
    for key, value in pairs:
        wanted = lowered.get(key.lower())
        if wanted is None:
            kept.append((key, value))
            continue
        done.add(key.lower())
        if wanted[1] is not None:
            kept.append((key, wanted[1]))
    for low, (key, value) in lowered.items():
        if low not in done and value is not None:
            kept.append((key, value))
    return kept


def _partition_line(name, pairs, comment):
    line = " ".join([f"PartitionName={name}"] + [f"{key}={quote_value(value)}" for key, value in pairs])
    return " ".join([line, *comment])


def _entries(parsed, path, files=None):
    """``(depth, file, line number, [(key, value), ...])`` of every setting line, in the order Slurm reads them.

    ``Include`` is followed in place, as Slurm does: ``%c`` is the ClusterName read so far (lower
    case); a relative path is relative to the directory of slurm.conf, in nested includes too.
    Depth 0 is slurm.conf itself. ``files`` reads the included files (``IncludedFiles``).
    """
    conf_dir = os.path.dirname(os.path.abspath(path)) if path else None
    state = {"cluster": None, "files": 0, "open": [files.identity(path)] if path and files is not None else [],
             "reader": files}
    return _walk(parsed, path or "slurm.conf", conf_dir, state, 0)


def _walk(parsed, source, conf_dir, state, depth):
    for line in parsed:
        target = include_target(line.text)
        if target is None:
            pairs = key_values(line.text)
            if pairs:
                if pairs[0][0].lower() == "clustername":
                    state["cluster"] = pairs[0][1]
                yield depth, source, line.first + 1, pairs
            continue
        where = f"{source} line {line.first + 1}: Include {clip(target)}"
        full = _included_path(target, where, conf_dir, state["cluster"])
        if depth + 1 > MAX_INCLUDE_DEPTH:
            raise TopologyError(f"{where}: includes nest more than {MAX_INCLUDE_DEPTH} deep")
        state["files"] += 1
        if state["files"] > MAX_INCLUDED_FILES:
            raise TopologyError(f"{where}: more than {MAX_INCLUDED_FILES} included files")
        if state["reader"] is None:
            raise TopologyError(f"{where}: no reader of included files was given")
        text = state["reader"].read(full, f"{where}:", MAX_INCLUDED_BYTES)
        identity = state["reader"].identity(full)
        if identity in state["open"]:
            raise TopologyError(f"{where}: the file includes itself (through {clip(' -> '.join(state['open']), 300)})")
        state["open"].append(identity)
        yield from _walk(list(logical_lines(physical_lines(text))), full, conf_dir, state, depth + 1)
        state["open"].pop()


def _included_path(target, where, conf_dir, cluster):
    if not target:
        raise TopologyError(f"{where}: names no file")
    if "*" in target:
        raise TopologyError(f"{where}: Slurm does not expand '*' in Include (it fails to start, or skips the "
                            "file with DebugFlags=GLOB_SILENCE); include each file by name")
    if "%c" in target:
        if cluster is None:
            raise TopologyError(f"{where}: %c stands for ClusterName, which is not set before this line")
        target = target.replace("%c", cluster.lower())
    if os.path.isabs(target):
        return target
    if conf_dir is None:
        raise TopologyError(f"{where}: a relative Include needs the path of slurm.conf")
    return os.path.join(conf_dir, target)


def _held_by_includes(included, wanted, partitions, source):
    """Settings and partitions that included files already hold as wanted; an error for any other.

    Only slurm.conf is edited: a value an included file sets differently would stay in effect
    (Slurm takes the last one it reads), or be overridden with an error logged by every daemon.
    """
    held_settings, held_partitions = set(), set()
    for where, number, pairs in included:
        key, value = pairs[0][0].lower(), pairs[0][1]
        at = f"{where} line {number}, a file {source} includes"
        if key in wanted:
            original, want = wanted[key]
            if want != value:
                todo = "remove it there" if want is None else f"set it to {want!r} there"
                raise TopologyError(f"{original} is {clip(value)} in {at}; this module edits only {source}: "
                                    f"{todo}, or move the setting into {source}")
            held_settings.add(key)
        elif key == "partitionname" and value in partitions:
            attrs = partitions[value]
            if attrs is None or _edit_partition(pairs[1:], attrs) != pairs[1:]:
                todo = "remove it there" if attrs is None else "change it there"
                raise TopologyError(f"partition {clip(value)} is defined in {at}; this module edits only {source}: "
                                    f"{todo}, or move the partition into {source}")
            held_partitions.add(value)
    return held_settings, held_partitions


def restart_settings(changed_settings):
    """The changed settings that need the Slurm daemons restarted."""
    return [key for key in changed_settings if key.lower() in RESTART_KEYS]
