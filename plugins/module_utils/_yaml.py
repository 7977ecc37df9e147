# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""YAML loading for large models and files: libyaml's loader when PyYAML has it (4x faster).

Every document is first scanned event by event (libyaml's parser keeps its own stack, so
this never recurses) and refused when it nests deeper than ``MAX_DEPTH`` (libyaml's composer
recurses in C and crashes the process on a few tens of thousands of open brackets) or when
its aliases would expand to more than ``MAX_ALIAS_NODES`` nodes (an alias bomb: a few levels
of anchors that name each other ten times expand to billions of nodes for every consumer
that walks the data). Only then is it loaded, with safe constructors only.
"""

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

MAX_DEPTH = 200
MAX_ALIAS_NODES = 1_000_000


class YAMLLimitError(YAMLError):
    """A document refused before loading: too deep, or aliases that expand too far."""


def check_limits(text, max_depth=MAX_DEPTH, max_alias_nodes=MAX_ALIAS_NODES):
    """Raise YAMLLimitError when ``text`` nests deeper than ``max_depth`` or its aliases expand too far.

    Sizes are counted per anchor (a collection's size includes the expanded size of the
    aliases inside it), so nested anchors are charged what they would cost a consumer.
    """
    sizes = {}  # anchor -> expanded node count
    stack = []  # [anchor, node count so far] per open collection
    expanded = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            stack.append([event.anchor, 1])
            if len(stack) > max_depth:
                raise YAMLLimitError(f"line {event.start_mark.line + 1}: nested more than {max_depth} levels deep")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor, size = stack.pop()
            if anchor is not None:
                sizes[anchor] = size
            if stack:
                stack[-1][1] += size
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            if isinstance(event, yaml.AliasEvent):
                size = sizes.get(event.anchor, 1)
                expanded += size
                if expanded > max_alias_nodes:
                    raise YAMLLimitError(f"line {event.start_mark.line + 1}: aliases expand to more than "
                                         f"{max_alias_nodes} nodes (a YAML alias bomb?)")
            else:
                size = 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            if stack:
                stack[-1][1] += size


def safe_load(stream):
    """yaml.safe_load with the C loader when available, after check_limits (same results otherwise).

    ``stream`` is text or a text file. Raises YAMLError (YAMLLimitError is one) for a bad document.
    """
    if not HAS_YAML:
        raise RuntimeError("PyYAML is required")
    text = stream if isinstance(stream, (str, bytes)) else stream.read()
    check_limits(text)
    return yaml.load(text, Loader=_LOADER)  # nosec B506 - a SafeLoader class
