# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The segment capacity report: one self-contained HTML page (pictures inlined as SVG) on the controller.

Input is the result of aifactory.topology.segment_capacity. Plots need matplotlib (controller
only); without it ReportError says so. The page carries no timestamp and SVG ids are seeded, so
the same result gives the same bytes (a second playbook run reports no change).
"""

from __future__ import annotations

import html
import io
import math

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import clip

STATE_COLOURS = {"idle": "#2e9e4f", "allocated": "#3b6fd6", "drained": "#f0a020", "down": "#d03030",
                 "placeholder": "#d8d8d8"}
# Beyond this many blocks the fabric tree would be unreadable: the page says so instead.
MAX_TREE_BLOCKS = 256


class ReportError(Exception):
    pass


def _pyplot():
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise ReportError("the segment capacity report needs the Python package matplotlib on the Ansible "
                          "controller: pip install matplotlib") from None
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "aifactory.topology"  # deterministic ids
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    return plt


def _svg(figure, plt):
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


# Shapes of the result's fields that reach the page: int = a whole number >= 0, float = a finite number,
# (a, b) = either, None = null, a key ending in "?" may be missing; unlisted keys are not read.
RESULT_SHAPE = {
    "block_sizes": [int],
    "summary": {"nodes": int, "idle": int, "available": int, "blocks": int, "placeholders": [str], "warnings?": [str],
                "quarantined?": int},
    "blocks": [{"name": str, "placeholder": bool, "nodes": str, "node_count": int, "idle": int, "allocated": int,
                "drained": int, "down": int, "allocated_nodes": str, "drained_nodes": str, "down_nodes": str}],
    "segments": [{"size": int, "largest_job_nodes": int, "largest_job_nodes_available": int, "share": float,
                  "share_available": float}],
    "expected": {"rates": [float], "observed_rate": float,
                 "sizes": [{"size": int, "fractions": [float], "at_observed": float}]},
    "advice": {"min_share": float, "text": str},
    "unsegmented_feasible": [[int]],
    "unsegmented_feasible_available?": [[int]],
    "state_source?": str,
    "fabric?": {"switches": [{"id": str, "name": str, "parent": (str, None)}], "block_switch": {str: (str, None)}},
    "quarantined?": [{"node": (str, None), "identifier": str, "source": str, "reason": str, "kind": str}],
}
_KINDS = {int: "a whole number (0 or more)", float: "a finite number", str: "a string", bool: "true or false",
          None: "null"}
# Beyond these the rack map would be a picture of no use (or one matplotlib cannot allocate): the page says so.
MAX_RACK_MAP_ROWS = 2048
MAX_RACK_MAP_CELLS = 1_000_000


def _is(value, kind):
    if kind is None:
        return value is None
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind is int:
        return isinstance(value, int) and value >= 0
    if kind is float:
        return isinstance(value, (int, float)) and math.isfinite(value)
    return isinstance(value, kind)


def _check_shape(value, shape, where):
    """ReportError naming the first field of ``value`` that does not have ``shape`` (see RESULT_SHAPE)."""
    if isinstance(shape, list):
        if not isinstance(value, (list, tuple)):
            raise ReportError(f"segment_report_html: {where} must be a list, got {clip(value)}")
        for index, item in enumerate(value):
            _check_shape(item, shape[0], f"{where}[{index}]")
    elif isinstance(shape, dict):
        if not isinstance(value, dict):
            raise ReportError(f"segment_report_html: {where} must be a mapping, got {clip(value)}")
        if list(shape) == [str]:
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ReportError(f"segment_report_html: {where} has a key that is not a string: {clip(key)}")
                _check_shape(item, shape[str], f"{where}.{key}")
            return
        for key, item_shape in shape.items():
            name = key.rstrip("?")
            if name in value:
                _check_shape(value[name], item_shape, f"{where}.{name}" if where else name)
            elif not key.endswith("?"):
                raise ReportError(f"segment_report_html: {where or 'the input'} lacks {name}"
                                  " (register the result of aifactory.topology.segment_capacity)")
    else:
        kinds = shape if isinstance(shape, tuple) else (shape,)
        if not any(_is(value, kind) for kind in kinds):
            wanted = " or ".join(_KINDS[kind] for kind in kinds)
            raise ReportError(f"segment_report_html: {where} must be {wanted}, got {clip(value)}")


def _check(result):
    """The result is what segment_capacity returns, in every field the page shows: a forged or damaged
    one fails here, naming the field, rather than reaching the page or crashing matplotlib."""
    if not isinstance(result, dict):
        raise ReportError("segment_report_html expects the registered result of aifactory.topology.segment_capacity")
    _check_shape(result, RESULT_SHAPE, "")
    if not result["block_sizes"]:
        raise ReportError("segment_report_html: block_sizes is empty")
    for key in ("unsegmented_feasible", "unsegmented_feasible_available"):
        for index, pair in enumerate(result.get(key, [])):
            if len(pair) != 2:
                raise ReportError(f"segment_report_html: {key}[{index}] must be [from, to], got {clip(pair)}")
    expected = result["expected"]
    for index, entry in enumerate(expected["sizes"]):
        if len(entry["fractions"]) != len(expected["rates"]):
            raise ReportError(f"segment_report_html: expected.sizes[{index}].fractions has {len(entry['fractions'])}"
                              f" values for {len(expected['rates'])} rates")
    if [entry["size"] for entry in result["segments"]] != [entry["size"] for entry in expected["sizes"]]:
        raise ReportError("segment_report_html: segments and expected.sizes list different segment sizes")
    _check_fabric(result.get("fabric") or {"switches": [], "block_switch": {}})


def _check_fabric(fabric):
    parents = {}
    for index, switch in enumerate(fabric["switches"]):
        if switch["id"] in parents:
            raise ReportError(f"segment_report_html: fabric.switches[{index}]: switch {clip(switch['id'])} "
                              "is listed twice")
        parents[switch["id"]] = switch["parent"]
    rooted = set()  # switches whose chain of parents is known to end at a root
    for sid in parents:
        chain, child = {sid: None}, sid
        while child not in rooted and parents[child] is not None:
            parent = parents[child]
            if parent not in parents:
                raise ReportError(f"segment_report_html: fabric: the parent {clip(parent)} of switch {clip(child)} "
                                  "is not in fabric.switches")
            if parent in chain:
                raise ReportError(f"segment_report_html: fabric: switch {clip(parent)} is its own ancestor")
            chain[parent] = None
            child = parent
        rooted.update(chain)
    for block, switch in fabric["block_switch"].items():
        if switch is not None and switch not in parents:
            raise ReportError(f"segment_report_html: fabric.block_switch.{block}: switch {clip(switch)} is not in "
                              "fabric.switches")


def _block_nodes(block, index, key):
    """The names of one of the block's hostlists; never more than the block says it has."""
    try:
        return hostlist.expand(block[key], max_hosts=block["node_count"])
    except hostlist.HostlistError as exc:
        raise ReportError(f"segment_report_html: blocks[{index}].{key}: {exc}") from None


def rack_map(result, plt):
    """One column per block, one cell per node coloured by state; placeholders grey."""
    blocks = result["blocks"]
    height = max([block["node_count"] for block in blocks] + [result["block_sizes"][0]])
    if height > MAX_RACK_MAP_ROWS or height * len(blocks) > MAX_RACK_MAP_CELLS:
        return None
    from matplotlib.colors import ListedColormap  # pylint: disable=import-outside-toplevel
    order = ["idle", "allocated", "drained", "down", "placeholder"]
    grid = [[-1] * len(blocks) for _row in range(height)]
    for column, block in enumerate(blocks):
        if block["placeholder"]:
            for row in range(result["block_sizes"][0]):
                grid[row][column] = order.index("placeholder")
            continue
        special = {}
        for state in ("allocated", "drained", "down"):
            for node in _block_nodes(block, column, f"{state}_nodes"):
                special[node] = state
        for row, node in enumerate(_block_nodes(block, column, "nodes")):
            grid[row][column] = order.index(special.get(node, "idle"))
    import numpy  # pylint: disable=import-outside-toplevel
    masked = numpy.ma.masked_less(numpy.array(grid), 0)
    width = min(2 + 0.32 * len(blocks), 24)
    figure, axes = plt.subplots(figsize=(width, 1.2 + 0.18 * height))
    colours = ListedColormap([STATE_COLOURS[name] for name in order])
    axes.imshow(masked, cmap=colours, vmin=-0.5, vmax=len(order) - 0.5, aspect="auto", interpolation="nearest")
    if len(blocks) <= 64:
        axes.set_xticks(range(len(blocks)))
        axes.set_xticklabels([block["name"] for block in blocks], rotation=90, fontsize=8)
        axes.set_xticks([x - 0.5 for x in range(len(blocks) + 1)], minor=True)
        axes.set_yticks([y - 0.5 for y in range(height + 1)], minor=True)
        axes.grid(which="minor", color="white", linewidth=1)
        axes.tick_params(which="minor", length=0)
    else:
        axes.set_xlabel(f"{len(blocks)} blocks, in Slurm's order")
    axes.set_ylabel("node in block")
    handles = [plt.Rectangle((0, 0), 1, 1, color=STATE_COLOURS[name]) for name in order]
    axes.legend(handles, order, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    axes.set_title("Rack map: one column per block")
    return _svg(figure, plt)


def capacity_curves(result, plt):
    """Expected usable share per segment size over λ, today's λ and today's actual share marked."""
    expected = result["expected"]
    rates = [100 * rate for rate in expected["rates"]]
    observed = 100 * expected["observed_rate"]
    actual = {entry["size"]: entry["share_available"] for entry in result["segments"]}
    figure, axes = plt.subplots(figsize=(8.5, 5))
    sizes = expected["sizes"]
    colours = plt.get_cmap("viridis")
    for index, entry in enumerate(sizes):
        colour = colours(index / max(len(sizes) - 1, 1))
        axes.plot(rates, [100 * value for value in entry["fractions"]], color=colour, linewidth=1.2,
                  label=f"--segment={entry['size']}")
        axes.plot([observed], [100 * actual[entry["size"]]], marker="o", color=colour, markersize=5)
    axes.axvline(observed, color="#d03030", linestyle="--", linewidth=1)
    axes.text(observed, 1.0, f" today: λ = {observed:.2f} %", color="#d03030", fontsize=9,
              transform=axes.get_xaxis_transform(), va="top")
    axes.axhline(100 * result["advice"]["min_share"], color="grey", linestyle=":", linewidth=1)
    axes.set_xlabel("per-node unavailability λ (%)")
    axes.set_ylabel("usable share of the nodes (%)")
    axes.set_title("Expected usable capacity per --segment size (dots: today's actual, on available nodes)")
    axes.legend(fontsize=7, ncol=2 if len(sizes) > 9 else 1, loc="upper left", bbox_to_anchor=(1.01, 1),
                frameon=False)
    axes.grid(alpha=0.3)
    return _svg(figure, plt)


def fabric_tree(result, plt):
    """Switches down to blocks, drawn top-down; each block coloured by its idle share."""
    fabric = result.get("fabric") or {}
    blocks = result["blocks"]
    if len(blocks) > MAX_TREE_BLOCKS:
        return None
    switches = {entry["id"]: entry for entry in fabric.get("switches", [])}
    children = {}
    for sid, entry in switches.items():
        children.setdefault(entry["parent"], []).append(("switch", sid))
    for block in blocks:
        children.setdefault((fabric.get("block_switch") or {}).get(block["name"]), []).append(("block", block["name"]))
    positions, depth_of = {}, {}
    leaves = []

    def place(kind_name, depth):
        kids = children.get(kind_name[1], []) if kind_name[0] == "switch" else []
        depth_of[kind_name] = depth
        if not kids:
            leaves.append(kind_name)
            positions[kind_name] = len(leaves) - 1
            return positions[kind_name]
        xs = [place(kid, depth + 1) for kid in kids]
        positions[kind_name] = sum(xs) / len(xs)
        return positions[kind_name]

    roots = children.get(None, [])
    for root in roots:
        place(root, 0)
    depth = max(depth_of.values(), default=0)
    by_name = {block["name"]: block for block in blocks}
    figure, axes = plt.subplots(figsize=(min(2 + 0.45 * max(len(leaves), 1), 24), 1.5 + 1.1 * (depth + 1)))
    for parent, kids in children.items():
        if parent is None:
            continue
        for kid in kids:
            axes.plot([positions[("switch", parent)], positions[kid]], [-depth_of[("switch", parent)], -depth_of[kid]],
                      color="#888888", linewidth=0.8, zorder=1)
    for item, x in positions.items():
        y = -depth_of[item]
        if item[0] == "switch":
            axes.scatter([x], [y], marker="s", s=140, color="#444444", zorder=2)
            axes.annotate(switches[item[1]]["name"], (x, y), textcoords="offset points", xytext=(0, 9),
                          ha="center", fontsize=7)
        else:
            block = by_name[item[1]]
            share = 0 if block["placeholder"] or not block["node_count"] else block["idle"] / block["node_count"]
            colour = STATE_COLOURS["placeholder"] if block["placeholder"] else plt.get_cmap("RdYlGn")(share)
            axes.scatter([x], [y], marker="o", s=160, color=colour, edgecolors="#333333", zorder=2)
            label = f"{block['name']}\n{block['idle']}/{block['node_count']}" if not block["placeholder"] \
                else f"{block['name']}\nplaceholder"
            axes.annotate(label, (x, y), textcoords="offset points", xytext=(0, -22), ha="center", fontsize=7)
    axes.set_axis_off()
    axes.set_title("Fabric: switches down to blocks (idle / nodes)")
    axes.margins(x=0.05, y=0.25)
    return _svg(figure, plt)


def _text(value):
    """Any value as HTML text: escaped whatever its type (the shape check comes first; this is the second wall)."""
    return html.escape(str(value))


def _percent(share, digits=1):
    return _text(f"{100 * share:.{digits}f} %")


def _ranges(ranges):
    return _text(", ".join(str(a) if a == b else f"{a}–{b}" for a, b in ranges) or "none")


# Names come from the fabric: "$" must stay a dollar sign (mathtext would parse "a$^$b" and fail), never LaTeX.
_PLAIN_TEXT = {"text.parse_math": False, "text.usetex": False}


def render(result, title="Segment capacity"):
    """The whole page as a string."""
    _check(result)
    plt = _pyplot()
    with plt.rc_context(_PLAIN_TEXT):
        tree, racks, curves = fabric_tree(result, plt), rack_map(result, plt), capacity_curves(result, plt)
    return page(result, title, racks, curves, tree)


def page(result, title, racks, curves, tree):
    """The HTML around the three pictures (SVG text from matplotlib, which escapes its text; None: not drawn)."""
    summary, advice, expected = result["summary"], result["advice"], result["expected"]
    rows = "\n".join(
        f"<tr><td>{_text(entry['size'])}</td><td>{_text(entry['largest_job_nodes'])}</td>"
        f"<td>{_percent(entry['share'])}</td><td>{_text(entry['largest_job_nodes_available'])}</td>"
        f"<td>{_percent(entry['share_available'])}</td><td>{_percent(at_size['at_observed'])}</td></tr>"
        for entry, at_size in zip(result["segments"], expected["sizes"]))
    block_rows = "\n".join(
        "<tr>" + "".join(f"<td>{_text(cell)}</td>" for cell in (
            block["name"], "placeholder" if block["placeholder"] else block["node_count"], block["idle"],
            block["allocated"], block["drained"], block["down"],
            ", ".join(x for x in (block["drained_nodes"], block["down_nodes"]) if x))) + "</tr>"
        for block in result["blocks"][:MAX_TREE_BLOCKS] if block["placeholder"] or block["idle"] < block["node_count"])
    warnings = "".join(f"<li>{_text(w)}</li>" for w in summary.get("warnings", []))
    counts = {key: _text(summary[key]) for key in ("nodes", "blocks", "idle", "available")}
    source = _text(result.get("state_source", "?"))
    quarantined = result.get("quarantined") or []
    quarantine_rows = "\n".join(
        "<tr>" + "".join(f"<td>{_text(record[key])}</td>" for key in ("identifier", "kind", "source", "reason")) + "</tr>"
        for record in quarantined)
    quarantine = (f'<figcaption id="quarantined-count">{_text(summary.get("quarantined", len(quarantined)))} '
                  "quarantined nodes are in no block (their data was unusable; see below).</figcaption>"
                  if quarantined else "")
    quarantine_table = ('<h2>Quarantined nodes</h2><table id="quarantined"><tr><th>node</th><th>kind</th>'
                        f"<th>source</th><th>reason</th></tr>\n{quarantine_rows}\n</table>" if quarantined else "")
    hardware = summary.get("racks") or []
    hardware_rows = "\n".join(
        "<tr>" + "".join(f"<td>{_text(cell)}</td>" for cell in (
            rack.get("rack"), f"{rack.get('schedulable')} of {rack.get('expected_trays', len(rack.get('trays', [])))}",
            ", ".join(map(str, rack.get("trays", []))), ", ".join(map(str, rack.get("quarantined", []))),
            rack.get("missing_trays", 0))) + "</tr>"
        for rack in hardware[:MAX_TREE_BLOCKS])
    hardware_table = ('<h2>Racks by hardware</h2><p>Named by NVLink domain and chassis serial number, trays in '
                      'physical order.</p><table id="hardware-racks"><tr><th>rack</th><th>schedulable trays</th>'
                      f"<th>trays</th><th>quarantined</th><th>missing</th></tr>\n{hardware_rows}\n</table>"
                      if hardware else "")
    not_drawn = (f"<p>The rack map is drawn for up to {MAX_RACK_MAP_ROWS} nodes per block and "
                 f"{MAX_RACK_MAP_CELLS} cells.</p>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_text(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }}
th {{ background: #f0f0f0; }}
.advice {{ background: #eef6ee; border-left: 4px solid #2e9e4f; padding: 0.6em 1em; }}
figure {{ margin: 1.5em 0; }} svg {{ max-width: 100%; height: auto; }}
</style></head>
<body>
<h1>{_text(title)}</h1>
<p>Block sizes {_text(', '.join(map(str, result['block_sizes'])))}; {counts['nodes']} nodes in {counts['blocks']} blocks
({len(summary['placeholders'])} placeholders); {counts['idle']} idle, {counts['available']} available;
today's unavailability λ = {_percent(expected['observed_rate'], 2)}; states from {source}.</p>
<p class="advice" id="advice">{_text(advice['text'])}</p>
<h2>Jobs Slurm accepts now</h2>
<p id="unsegmented">Without <code>--segment</code>: <code>-N</code> {_ranges(result['unsegmented_feasible'])}
(once running jobs end: {_ranges(result.get('unsegmented_feasible_available', []))}).</p>
<table id="segments"><tr><th>--segment</th><th>largest -N now</th><th>share</th><th>largest -N on available</th>
<th>share</th><th>expected at today's λ</th></tr>
{rows}
</table>
<figure id="rack-map">{racks or not_drawn}{quarantine}</figure>
{hardware_table}
<figure id="curves">{curves}</figure>
<figure id="fabric">{tree or f'<p>The fabric tree is drawn for up to {MAX_TREE_BLOCKS} blocks.</p>'}</figure>
<h2>Blocks that are not fully idle</h2>
<table id="blocks"><tr><th>block</th><th>nodes</th><th>idle</th><th>allocated</th><th>drained</th><th>down</th>
<th>out</th></tr>
{block_rows}
</table>
{quarantine_table}
{f'<h2>Warnings</h2><ul>{warnings}</ul>' if warnings else ''}
<p><small>aifactory.topology.segment_capacity: placement per Slurm 26.05 topology/block rules.</small></p>
</body></html>
"""
