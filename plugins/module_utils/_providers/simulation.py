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

from ansible_collections.aifactory.topology.plugins.module_utils import _hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._model import Topology, normalize_switch_names
from ansible_collections.aifactory.topology.plugins.module_utils._errors import TopologyError, check_known_keys
from ansible_collections.aifactory.topology.plugins.module_utils import _yaml
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _specs

DOMAIN_ANNOTATION = "accelerator.topology.test/domain"
SUB_DOMAIN_ANNOTATION = "accelerator.topology.test/sub-domain"
PARAMS_SPEC, CREDS_SPEC = _specs.SIMULATION_PARAMS, {}


def load_model_file(path):
    if not _yaml.HAS_YAML:
        raise TopologyError("the simulation provider needs PyYAML")
    try:
        with open(path, encoding="utf-8") as handle:
            return _yaml.safe_load(handle)
    except OSError as exc:
        raise TopologyError(f"simulation model_path {path!r}: {exc.strerror}") from None
    except _yaml.YAMLError as exc:
        raise TopologyError(f"simulation model {path!r} is not valid YAML: {exc}") from None


def discover(params, creds, warn):
    path = params["model_path"]
    topology = from_model(load_model_file(path), source=str(path))
    # Topograph's oci-sim prints normalised switch names (switch.<tier>.<n>) in topology.conf.
    return normalize_switch_names(topology) if params.get("normalize_switch_names") else topology


def _mapping(value, where):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TopologyError(f"{where} must be a mapping")
    return value


def from_model(model, source="model"):
    model = _mapping(model, source)
    check_known_keys(model, {"switches", "blocks"}, source)
    topo = Topology()
    switches = _mapping(model.get("switches"), f"{source}: switches")
    labels_of = {}
    for switch_id, spec in switches.items():
        where = f"{source}: switches.{switch_id}"
        spec = _mapping(spec, where)
        name = spec.get("name")
        if name is not None and name != switch_id:
            raise TopologyError(f"{where}.name {name!r} must equal the switch id")
        topo.add_switch(str(switch_id), source=where)
        labels_of[str(switch_id)] = _mapping(spec.get("labels"), f"{where}.labels")
        children = spec.get("switches") or []
        if not isinstance(children, list):
            raise TopologyError(f"{where}.switches must be a list of switch ids")
        for child in children:
            topo.add_switch(str(child), parent=str(switch_id), source=f"{where}.switches")
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
            switch = str(switch)
            if switch not in topo.switches:
                raise TopologyError(f"{where}.switch refers to unknown switch {switch!r}")
        annotations = _mapping(block.get("annotations"), f"{where}.annotations")
        try:
            names = hostlist.expand([str(item) for item in block.get("nodes") or []])
        except hostlist.HostlistError as exc:
            raise TopologyError(f"{where}.nodes: {exc}") from None
        if not names:
            raise TopologyError(f"{where} has no nodes")
        labels = {}
        for switch_id in reversed(topo.path(switch)) if switch else ():
            labels.update(labels_of.get(switch_id, {}))
        labels.update(_mapping(block.get("labels"), f"{where}.labels"))
        # Once per block, not per node: add_node copies the labels.
        labels = {str(k): str(v) for k, v in labels.items()}
        domain = annotations.get(DOMAIN_ANNOTATION) or None
        sub_domain = annotations.get(SUB_DOMAIN_ANNOTATION) or None
        source = f"{where}.nodes"
        for name in names:
            if name in seen_in_block:
                raise TopologyError(f"node {name!r} is in two blocks: blocks[{seen_in_block[name]}] and blocks[{index}]")
            seen_in_block[name] = index
            topo.add_node(name, switch, domain, sub_domain, labels, source=source)
    return topo
