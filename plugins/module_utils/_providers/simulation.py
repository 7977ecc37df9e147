# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Topograph's simulation-model YAML, read unchanged (topograph: pkg/models/model.go).

``switches`` maps a switch id to ``{name, labels, annotations, switches: [children]}``;
``blocks`` list ``{switch, nodes, labels, annotations}``; the annotations
``accelerator.topology.test/domain`` and ``/sub-domain`` set the accelerator domain.

params: ``model_path``; ``normalize_switch_names`` (bool) names switches the way
Topograph's OCI providers do.
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError, check_known_keys, clip
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology, normalize_switch_names

DOMAIN_ANNOTATION = "accelerator.topology.test/domain"
SUB_DOMAIN_ANNOTATION = "accelerator.topology.test/sub-domain"


def discover(params, creds, warn):
    path = params["model_path"]
    try:
        model = _input_file.read_yaml(path, "simulation model_path")
    except _input_file.InputFileError as exc:
        raise TopologyError(str(exc)) from None
    topology = from_model(model, source=str(path))
    # Topograph's oci-sim prints normalised switch names (switch.<tier>.<n>) in topology.conf.
    return normalize_switch_names(topology) if params.get("normalize_switch_names") else topology


def _mapping(value, where):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TopologyError(f"{where} must be a mapping")
    return value


def _name(value, where):
    """A switch id or node entry as written: YAML that loads as a number, bool or null is refused,
    not turned into a name (``str(None)`` would be ``None``, ``yes`` would be ``True``)."""
    if not isinstance(value, str):
        raise TopologyError(f"{where}: expected a name (a string), got {type(value).__name__} {clip(value)}; "
                            "quote it in the model")
    return value


def from_model(model, source="model"):
    model = _mapping(model, source)
    check_known_keys(model, {"switches", "blocks"}, source)
    topo = Topology()
    switches = _mapping(model.get("switches"), f"{source}: switches")
    labels_of = {}
    for switch_id, spec in switches.items():
        where = f"{source}: switches.{str(switch_id)[:60]}"
        switch_id = _name(switch_id, f"{source}: switches")
        spec = _mapping(spec, where)
        name = spec.get("name")
        if name is not None and name != switch_id:
            raise TopologyError(f"{where}.name {clip(name)} must equal the switch id")
        topo.add_switch(switch_id, source=where)
        labels_of[switch_id] = _mapping(spec.get("labels"), f"{where}.labels")
        children = spec.get("switches") or []
        if not isinstance(children, list):
            raise TopologyError(f"{where}.switches must be a list of switch ids")
        for index, child in enumerate(children):
            child_where = f"{where}.switches[{index}]"
            topo.add_switch(_name(child, child_where), parent=switch_id, source=child_where)
    topo.check_switch_forest()  # labels are merged along paths below
    blocks = model.get("blocks") or []
    if not isinstance(blocks, list):
        raise TopologyError(f"{source}: blocks must be a list")
    if not blocks:
        raise TopologyError(f"{source}: the model declares no blocks, so it has no nodes")
    seen_in_block = {}
    for index, block in enumerate(blocks):
        where = f"{source}: blocks[{index}]"
        block = _mapping(block, where)
        switch = block.get("switch")
        if switch is not None:
            switch = _name(switch, f"{where}.switch")
            if switch not in topo.switches:
                raise TopologyError(f"{where}.switch refers to unknown switch {clip(switch)}")
        annotations = _mapping(block.get("annotations"), f"{where}.annotations")
        nodes = block.get("nodes") or []
        if not isinstance(nodes, list):
            raise TopologyError(f"{where}.nodes must be a list of hostlist strings, got {clip(nodes)}")
        try:
            names = topo.host_budget.expand([_name(item, f"{where}.nodes[{n}]") for n, item in enumerate(nodes)])
        except hostlist.HostlistError as exc:
            raise TopologyError(f"{where}.nodes: {exc}") from None
        if not names:
            raise TopologyError(f"{where} has no nodes")
        labels = {}
        for switch_id in reversed(topo.path(switch)) if switch else ():
            labels.update(labels_of.get(switch_id, {}))
        labels.update(_mapping(block.get("labels"), f"{where}.labels"))
        for key, value in labels.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TopologyError(f"{where}: label {clip(key)}: {clip(value)} must map a string to a string")
        domain = annotations.get(DOMAIN_ANNOTATION)
        sub_domain = annotations.get(SUB_DOMAIN_ANNOTATION)
        for value, key in ((domain, DOMAIN_ANNOTATION), (sub_domain, SUB_DOMAIN_ANNOTATION)):
            if value is not None and not isinstance(value, str):
                raise TopologyError(f"{where}.annotations[{key!r}] must be a string, got {clip(value)}")
        domain, sub_domain = domain or None, sub_domain or None
        if not seen_in_block.keys().isdisjoint(names):
            name = next(name for name in names if name in seen_in_block)
            raise TopologyError(f"node {name!r} is in two blocks: blocks[{seen_in_block[name]}] and blocks[{index}]")
        seen_in_block.update(dict.fromkeys(names, index))  # names has no duplicates (hostlist.expand)
        topo.add_nodes(names, switch, domain, sub_domain, labels, source=f"{where}.nodes")
    return topo
