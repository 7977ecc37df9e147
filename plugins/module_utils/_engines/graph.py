# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Topograph's instance-oriented graph JSON (topograph: pkg/engines/graph).

``{"instances":[{"id","network_layers":[tier 0 first],"labels":{}}]}`` sorted by id,
encoded like Go's json.Marshal (compact, HTML-escaped).
"""

from __future__ import annotations

import json


def render_graph_json(topology):
    instances = []
    for name in sorted(topology.nodes):
        node = topology.nodes[name]
        instance = {"id": name, "network_layers": topology.path(node.switch)}
        if node.labels:
            instance["labels"] = dict(sorted(node.labels.items()))
        instances.append(instance)
    text = json.dumps({"instances": instances}, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
