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

A host without PyYAML (ansible-core needs it on the controller, not on the hosts modules run on,
and a minimal Slurm controller often lacks python3-yaml): this module is the collection's one YAML
reader and that host's one policy. One read is made there, the node lists of a topology.yaml, so
the shrink guard still guards the file it would replace (``topology_nodes_without_pyyaml``: keys and
``nodes`` values only, failing closed on anything it cannot take literally). Every other read raises
``PyYAMLMissing`` (a ``TopologyError``: a missing library on the host), whose message says so, and
each caller treats it as a file it cannot read: a model or input file fails the task naming the
file, topology_metrics fails.
"""

from __future__ import annotations

import re

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, clip

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


# The reader for hosts without PyYAML: a tokenizer of the YAML a topology.yaml is written in, block
# or flow style (JSON included). It reads keys and the ``nodes`` values; anything it cannot take
# literally (a block scalar, an alias or tag as the value, a scalar over several lines, a directive)
# raises, so that the guard fails closed instead of missing nodes.
_PLAIN_START = r"""(?:[^\s\-?:,\[\]{}#&*!|>'"%@`]|[-?:](?=[^\s,\[\]{}]))"""
_TOKEN = r"""
    (?P<quoted>"(?:[^"\\\n]|\\.)*"|'(?:[^'\n]|'')*')
  | (?P<space>[ \t\r]+|\#[^\n]*)
  | (?P<newline>\n)
  | (?P<flow>[\[\]{},])
  | (?P<colon>:COLON_END)
  | (?P<other>-(?=\s|$)|[&*!][^\s,\[\]{}]*)
  | (?P<plain>START(?:[^\s:STOP]|:(?=[^\sSTOP])|[ \t]+(?=[^\s\#STOP]))*)
"""
# A plain scalar runs to the end of the line in block context and stops at a flow indicator in
# flow context, where any colon after a quoted key is a value indicator (JSON's "key":value).
_BLOCK_TOKEN, _FLOW_TOKEN = (
    re.compile(_TOKEN.replace("START", _PLAIN_START).replace("COLON_END", colon_end).replace("STOP", stop), re.X)
    for colon_end, stop in ((r"(?=\s|$)", ""), ("", r",\[\]{}")))
_SCALARS = ("plain", "quoted")


def _yaml_tokens(text):
    """(kind, text, line) of every token but spaces and comments."""
    tokens, depth, position, line = [], 0, 0, 1
    while position < len(text):
        match = (_FLOW_TOKEN if depth else _BLOCK_TOKEN).match(text, position)
        if match is None:
            shown = text[position:position + 20].split("\n", 1)[0]
            raise TopologyError(f"line {line}: {clip(shown)} cannot be read without PyYAML")
        kind, value = match.lastgroup, match.group()
        position = match.end()
        if kind == "newline":
            line += 1
        elif kind == "flow":
            depth = max(0, depth + (value in "[{") - (value in "]}"))
        if kind != "space":
            tokens.append((kind, value.rstrip() if kind == "plain" else value, line))
    return tokens


def _scalar(kind, value, line):
    if kind == "plain":
        return value
    if value[0] == "'":
        return value[1:-1].replace("''", "'")
    if "\\" in value:
        raise TopologyError(f"line {line}: an escape sequence in {clip(value)} cannot be read without PyYAML")
    return value[1:-1]


def _is_key(tokens, index):
    return tokens[index][0] in _SCALARS and index + 1 < len(tokens) and tokens[index + 1][0] == "colon"


def _after_newlines(tokens, index):
    """The index of the first token at or after ``index`` that is not a line break, and whether one was crossed."""
    start = index
    while index < len(tokens) and tokens[index][0] == "newline":
        index += 1
    return index, index > start


def _nodes_value(tokens, index):
    """The hostlist after the ``nodes:`` whose value starts at ``index``, or "" for a null value."""
    index = _after_newlines(tokens, index)[0]
    if index == len(tokens) or tokens[index][1] in (",", "}", "]") or _is_key(tokens, index):
        return ""
    kind, value, line = tokens[index]
    if kind not in _SCALARS:
        raise TopologyError(f"line {line}: nodes: {clip(value)} cannot be read without PyYAML")
    following, crossed = _after_newlines(tokens, index + 1)
    if crossed and following < len(tokens) and tokens[following][0] in _SCALARS and not _is_key(tokens, following):
        raise TopologyError(f"line {line}: a nodes value over several lines cannot be read without PyYAML")
    return _scalar(kind, value, line)


def topology_nodes_without_pyyaml(text):
    """(nodes, flat only) of a topology.yaml in block or flow style: the one read a host without PyYAML makes.

    The shrink guard must read the file it would replace on a minimal Slurm controller (no python3-yaml).
    This tokenizer reads keys and the ``nodes`` values only; anything it cannot take literally (a block
    scalar, an alias or tag as the value, a scalar over several lines, an escape, a directive) raises
    TopologyError, so the guard fails closed instead of missing nodes.
    """
    tokens = _yaml_tokens(text)
    names, keys = set(), set()
    for index, (kind, value, line) in enumerate(tokens):
        if not _is_key(tokens, index):
            continue
        key = _scalar(kind, value, line)
        keys.add(key)
        if key == "nodes":
            nodes = _nodes_value(tokens, index + 2)
            if nodes:
                names.update(hostlist.expand(nodes))
    return names, "flat" in keys and not keys & {"tree", "block"}
