# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""YAML loading for large models and files: libyaml's parser, one pass, safe constructors only.

Every document is scanned event by event (libyaml's parser keeps its own stack, so this never
recurses) and refused when it nests deeper than ``MAX_DEPTH`` (libyaml's composer recurses in C
and crashes the process on a few tens of thousands of open brackets) or when its aliases would
expand to more than ``MAX_ALIAS_NODES`` nodes (an alias bomb: a few levels of anchors that name
each other ten times expand to billions of nodes for every consumer that walks the data).

The same pass builds the data for the documents models are made of (untagged mappings,
sequences and scalars, aliases to finished nodes): each plain scalar is resolved by PyYAML's own
implicit resolvers and built by its own safe constructors, so the result is what
``yaml.safe_load`` returns, without PyYAML composing a node graph first (on a 100,000-node model
that graph costs more than everything else the load does). Anything else (an explicit tag, a merge
key ``<<``, a collection as a key, an alias to an unfinished node, a second document) is left to
``yaml.load`` with the safe loader, after the pass has checked the limits of the whole text.
"""

from __future__ import annotations

try:
    import yaml
    from yaml.constructor import SafeConstructor
    from yaml.nodes import ScalarNode

    HAS_YAML = True
    YAMLError = yaml.YAMLError
    _LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    HAS_YAML = False
    YAMLError = ValueError
    _LOADER = None

MAX_DEPTH = 200
MAX_ALIAS_NODES = 1_000_000
# Implicit tags whose meaning is the mapping's, not the scalar's: left to yaml.load.
_MAPPING_TAGS = ("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value")


class YAMLLimitError(YAMLError):
    """A document refused before loading: too deep, or aliases that expand too far."""


class _NotBuilt:
    """The data of a document the one-pass builder left to yaml.load."""


def check_limits(text, max_depth=MAX_DEPTH, max_alias_nodes=MAX_ALIAS_NODES):
    """Raise YAMLLimitError when ``text`` nests deeper than ``max_depth`` or its aliases expand too far.

    Sizes are counted per anchor (a collection's size includes the expanded size of the
    aliases inside it), so nested anchors are charged what they would cost a consumer.
    """
    _scan(text, max_depth, max_alias_nodes, build=False)


def _scan(text, max_depth=MAX_DEPTH, max_alias_nodes=MAX_ALIAS_NODES, build=True):
    """Check the limits of ``text``; return its data, or ``_NotBuilt`` when yaml.load must build it."""
    # pylint: disable=too-many-locals,too-many-branches,too-many-statements
    # One loop over every event of the document: its speed is the point, so it is not split.
    scalar_event, alias_event, mapping_start = yaml.ScalarEvent, yaml.AliasEvent, yaml.MappingStartEvent
    document_start = yaml.DocumentStartEvent
    node_events = {scalar_event, alias_event, mapping_start, yaml.SequenceStartEvent}
    end_events = {yaml.SequenceEndEvent, yaml.MappingEndEvent}
    wildcard = _LOADER.yaml_implicit_resolvers.get(None, [])
    resolvers = {first: found + wildcard for first, found in _LOADER.yaml_implicit_resolvers.items()}
    constructors = SafeConstructor.yaml_constructors
    constructor = SafeConstructor()
    building = build and not _LOADER.yaml_path_resolvers
    sizes = {}  # anchor -> expanded node count
    stack = []  # per open collection: [anchor, node count so far, its data, key waiting for a value]
    expanded = 0
    anchors = {}  # anchor -> data of a finished node
    seen_anchors = set()  # every anchor of the document, finished or not
    root = _NotBuilt
    documents = 0
    no_key = _NotBuilt  # no key waits for its value (a class no document can hold)
    for event in yaml.parse(text, Loader=_LOADER):
        kind = type(event)
        if kind in end_events:
            anchor, size, data, _key = stack.pop()
            if anchor is not None:
                sizes[anchor] = size
                if building:
                    anchors[anchor] = data
            if stack:
                stack[-1][1] += size
            continue
        if kind is document_start:
            documents += 1
            building = building and documents == 1  # yaml.load refuses a second document
            continue
        if kind not in node_events:  # stream start and end, document end
            continue
        anchor = event.anchor
        if kind is alias_event:
            size = sizes.get(anchor, 1)
            expanded += size
            if expanded > max_alias_nodes:
                raise YAMLLimitError(f"line {event.start_mark.line + 1}: aliases expand to more than "
                                     f"{max_alias_nodes} nodes (a YAML alias bomb?)")
            # An undefined alias, or one to a collection still open: yaml.load says what it makes of it.
            building = building and anchor in anchors
            data = anchors.get(anchor)
        else:
            size = 1
            if building and (event.tag is not None or anchor in seen_anchors):
                building = False  # a tag, or a duplicate anchor: yaml.load's
            if anchor is not None:
                seen_anchors.add(anchor)
            if kind is scalar_event:
                if anchor is not None:
                    sizes[anchor] = 1
                data = value = event.value
                if building and event.implicit[0]:  # plain: resolved as the composer does
                    for tag, pattern in resolvers.get(value[:1], wildcard):
                        if pattern.match(value):
                            if tag in _MAPPING_TAGS or tag not in constructors:
                                building = False
                            else:
                                data = constructors[tag](constructor, ScalarNode(tag, value))
                            break
                if anchor is not None:
                    anchors[anchor] = data
            else:
                data = {} if kind is mapping_start else []
        if building:
            if not stack:
                root = data
            elif type(stack[-1][2]) is list:  # pylint: disable=unidiomatic-typecheck
                stack[-1][2].append(data)
            elif stack[-1][3] is no_key:
                building = not isinstance(data, (list, dict))  # a collection as a key: yaml.load's error
                stack[-1][3] = data
            else:
                stack[-1][2][stack[-1][3]] = data
                stack[-1][3] = no_key
        if kind is scalar_event or kind is alias_event:
            if stack:
                stack[-1][1] += size
        else:
            stack.append([anchor, 1, data, no_key])
            if len(stack) > max_depth:
                raise YAMLLimitError(f"line {event.start_mark.line + 1}: nested more than {max_depth} levels deep")
    if not building:
        return _NotBuilt
    return None if root is _NotBuilt else root


def safe_load(stream):
    """What yaml.safe_load returns, read by libyaml when PyYAML has it, within check_limits' limits.

    ``stream`` is text or a text file. Raises YAMLError (YAMLLimitError is one) for a bad document.
    """
    if not HAS_YAML:
        raise RuntimeError("PyYAML is required")
    text = stream if isinstance(stream, (str, bytes)) else stream.read()
    data = _scan(text)
    if data is _NotBuilt:
        return yaml.load(text, Loader=_LOADER)  # nosec B506 - a SafeLoader class
    return data
