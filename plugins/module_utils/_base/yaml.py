# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""YAML loading for large models and files: libyaml's parser, one pass, safe constructors only.

One pass over the parser's events (libyaml's parser keeps its own stack, so nothing here
recurses) through two parts:

- the limit checker, ``_events_within_limits``, passes the events on and refuses a document that
  nests deeper than ``MAX_DEPTH`` (libyaml's composer recurses in C and crashes the process on a
  few tens of thousands of open brackets) or whose aliases would expand to more than
  ``MAX_ALIAS_NODES`` nodes (an alias bomb: a few levels of anchors that name each other ten times
  expand to billions of nodes for every consumer that walks the data);
- the builder, ``_build``, builds the data of the documents models are made of (untagged mappings,
  sequences and scalars, aliases to finished nodes) from the checked events: each plain scalar is
  resolved by PyYAML's own implicit resolvers and built by its own safe constructors, so the result
  is what ``yaml.safe_load`` returns, without PyYAML composing a node graph first (on a
  100,000-node model that graph costs more than everything else the load does).

Anything else (an explicit tag, a merge key ``<<``, a collection as a key, an alias to an
unfinished node, a second document) the builder leaves to ``yaml.load`` with the safe loader,
after the checker has read the rest of the text.

A host without PyYAML (ansible-core needs it on the controller, not on the hosts modules run on):
this module is the collection's one YAML reader and that host's one policy. Every read there raises
``PyYAMLMissing`` (a ``TopologyError``: a missing library on the host), whose message says so, and
each caller treats it as a file it cannot read: a model or input file fails the task naming the file,
the shrink guard fails closed (``force`` replaces the file unchecked, with a warning), topology_metrics
fails. Nothing guesses at YAML without PyYAML.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError

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


class PyYAMLMissing(TopologyError):
    """YAML was to be read on a host whose Python lacks PyYAML."""


def _require_pyyaml():
    if not HAS_YAML:
        raise PyYAMLMissing("reading YAML needs PyYAML, which the Python running this task lacks "
                            "(install python3-yaml, or PyYAML with pip)")


class YAMLLimitError(YAMLError):
    """A document refused before loading: too deep, or aliases that expand too far."""


class _NotBuilt:
    """The data of a document the builder left to yaml.load."""


def check_limits(text, max_depth=MAX_DEPTH, max_alias_nodes=MAX_ALIAS_NODES):
    """Raise YAMLLimitError when ``text`` nests deeper than ``max_depth`` or its aliases expand too far.

    Sizes are counted per anchor (a collection's size includes the expanded size of the
    aliases inside it), so nested anchors are charged what they would cost a consumer.
    """
    _require_pyyaml()
    for _event in _events_within_limits(yaml.parse(text, Loader=_LOADER), max_depth, max_alias_nodes):
        pass


def _events_within_limits(events, max_depth=MAX_DEPTH, max_alias_nodes=MAX_ALIAS_NODES):
    """Yield ``events``; raise YAMLLimitError, before yielding it, at the event that passes a limit."""
    scalar_event, alias_event = yaml.ScalarEvent, yaml.AliasEvent
    start_events = {yaml.MappingStartEvent, yaml.SequenceStartEvent}
    end_events = {yaml.SequenceEndEvent, yaml.MappingEndEvent}
    sizes = {}  # anchor -> expanded node count
    # Nodes so far (a scalar 1, an alias what it expands to, a collection 1 at its start), so a
    # collection's size is the count at its end less the count before its start.
    nodes = 0
    stack = []  # per open collection: (its anchor, the node count before its start)
    expanded = 0  # nodes the aliases so far expand to
    for event in events:
        kind = type(event)
        if kind is scalar_event:
            nodes += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif kind is alias_event:
            size = sizes.get(event.anchor, 1)  # 1 for an alias to an open collection or to no anchor
            nodes += size
            expanded += size
            if expanded > max_alias_nodes:
                raise YAMLLimitError(f"line {event.start_mark.line + 1}: aliases expand to more than "
                                     f"{max_alias_nodes} nodes (a YAML alias bomb?)")
        elif kind in start_events:
            stack.append((event.anchor, nodes))
            nodes += 1
            if len(stack) > max_depth:
                raise YAMLLimitError(f"line {event.start_mark.line + 1}: nested more than {max_depth} levels deep")
        elif kind in end_events:
            anchor, before = stack.pop()
            if anchor is not None:
                sizes[anchor] = nodes - before
        yield event


def _build(events):
    """The data of the document ``events`` make, as yaml.safe_load builds it, or ``_NotBuilt``.

    ``_NotBuilt`` as soon as an event is one yaml.load must judge (see the module's docstring);
    the events after it are left unread.
    """
    # pylint: disable=too-many-locals,too-many-branches,too-many-statements
    # One loop over every event of the document: its speed is the point, so it is not split.
    if _LOADER.yaml_path_resolvers:
        return _NotBuilt
    scalar_event, alias_event, mapping_start = yaml.ScalarEvent, yaml.AliasEvent, yaml.MappingStartEvent
    document_start = yaml.DocumentStartEvent
    start_events = {mapping_start, yaml.SequenceStartEvent}
    end_events = {yaml.SequenceEndEvent, yaml.MappingEndEvent}
    wildcard = _LOADER.yaml_implicit_resolvers.get(None, [])
    resolvers = {first: found + wildcard for first, found in _LOADER.yaml_implicit_resolvers.items()}
    constructors = SafeConstructor.yaml_constructors
    constructor = SafeConstructor()
    stack = []  # per open collection: [its anchor, its data, the key waiting for its value]
    anchors = {}  # anchor -> data of a finished node
    seen_anchors = set()  # every anchor of the document, finished or not
    root = _NotBuilt
    documents = 0
    no_key = _NotBuilt  # no key waits for its value (a class no document can hold)
    for event in events:
        kind = type(event)
        # Scalars first, then collections: they are nearly all the events a model has.
        if kind is scalar_event or kind in start_events:
            anchor = event.anchor
            if event.tag is not None or anchor in seen_anchors:
                return _NotBuilt  # a tag, or a duplicate anchor: yaml.load's
            if anchor is not None:
                seen_anchors.add(anchor)
            if kind is scalar_event:
                data = value = event.value
                if event.implicit[0]:  # plain: resolved as the composer does
                    for tag, pattern in resolvers.get(value[:1], wildcard):
                        if pattern.match(value):
                            if tag in _MAPPING_TAGS or tag not in constructors:
                                return _NotBuilt
                            data = constructors[tag](constructor, ScalarNode(tag, value))
                            break
                if anchor is not None:
                    anchors[anchor] = data
            else:
                data = {} if kind is mapping_start else []
        elif kind in end_events:
            anchor, data, _key = stack.pop()
            if anchor is not None:
                anchors[anchor] = data
            continue
        elif kind is alias_event:
            if event.anchor not in anchors:
                return _NotBuilt  # undefined, or a collection still open: yaml.load says what it makes of it
            data = anchors[event.anchor]
        elif kind is document_start:
            documents += 1
            if documents > 1:
                return _NotBuilt  # yaml.load refuses a second document
            continue
        else:  # stream start and end, document end
            continue
        if not stack:
            root = data
        elif type(stack[-1][1]) is list:  # pylint: disable=unidiomatic-typecheck
            stack[-1][1].append(data)
        elif stack[-1][2] is no_key:
            if isinstance(data, (list, dict)):
                return _NotBuilt  # a collection as a key: yaml.load's error
            stack[-1][2] = data
        else:
            stack[-1][1][stack[-1][2]] = data
            stack[-1][2] = no_key
        if kind is not scalar_event and kind is not alias_event:  # a collection: open until its end event
            stack.append([anchor, data, no_key])
    return None if root is _NotBuilt else root


def safe_load(stream):
    """What yaml.safe_load returns, read by libyaml when PyYAML has it, within check_limits' limits.

    ``stream`` is text or a text file. Raises YAMLError (YAMLLimitError is one) for a bad document,
    PyYAMLMissing without PyYAML.
    """
    _require_pyyaml()
    text = stream if isinstance(stream, (str, bytes)) else stream.read()
    events = _events_within_limits(yaml.parse(text, Loader=_LOADER))
    data = _build(events)
    if data is _NotBuilt:
        for _event in events:  # the limits cover the whole text before yaml.load reads any of it
            pass
        return yaml.load(text, Loader=_LOADER)  # nosec B506 - a SafeLoader class
    return data
