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

from ansible_collections.aifactory.topology.plugins.module_utils import _hostlist as hostlist

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


def _check(result):
    if not isinstance(result, dict):
        raise ReportError("segment_report_html expects the registered result of aifactory.topology.segment_capacity")
    missing = [key for key in ("blocks", "segments", "expected", "advice", "summary") if key not in result]
    if missing:
        raise ReportError("segment_report_html: the input lacks " + ", ".join(missing)
                          + " (register the result of aifactory.topology.segment_capacity)")


def rack_map(result, plt):
    """One column per block, one cell per node coloured by state; placeholders grey."""
    blocks = result["blocks"]
    height = max([block["node_count"] for block in blocks] + [result["block_sizes"][0]])
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
            for node in hostlist.expand(block[f"{state}_nodes"]):
                special[node] = state
        for row, node in enumerate(hostlist.expand(block["nodes"])):
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


def _ranges(ranges):
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in ranges) or "none"


def render(result, title="Segment capacity"):
    """The whole page as a string."""
    _check(result)
    plt = _pyplot()
    summary, advice = result["summary"], result["advice"]
    esc = html.escape
    tree = fabric_tree(result, plt)
    rows = "\n".join(
        f"<tr><td>{entry['size']}</td><td>{entry['largest_job_nodes']}</td><td>{100 * entry['share']:.1f} %</td>"
        f"<td>{entry['largest_job_nodes_available']}</td><td>{100 * entry['share_available']:.1f} %</td>"
        f"<td>{100 * expected['at_observed']:.1f} %</td></tr>"
        for entry, expected in zip(result["segments"], result["expected"]["sizes"]))
    block_rows = "\n".join(
        f"<tr><td>{esc(block['name'])}</td><td>{'placeholder' if block['placeholder'] else block['node_count']}</td>"
        f"<td>{block['idle']}</td><td>{block['allocated']}</td><td>{block['drained']}</td><td>{block['down']}</td>"
        f"<td>{esc(', '.join(x for x in (block['drained_nodes'], block['down_nodes']) if x))}</td></tr>"
        for block in result["blocks"][:MAX_TREE_BLOCKS] if block["placeholder"] or block["idle"] < block["node_count"])
    warnings = "".join(f"<li>{esc(w)}</li>" for w in summary.get("warnings", []))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }}
th {{ background: #f0f0f0; }}
.advice {{ background: #eef6ee; border-left: 4px solid #2e9e4f; padding: 0.6em 1em; }}
figure {{ margin: 1.5em 0; }} svg {{ max-width: 100%; height: auto; }}
</style></head>
<body>
<h1>{esc(title)}</h1>
<p>Block sizes {esc(', '.join(map(str, result['block_sizes'])))}; {summary['nodes']} nodes in {summary['blocks']} blocks
({len(summary['placeholders'])} placeholders); {summary['idle']} idle, {summary['available']} available;
today's unavailability λ = {100 * result['expected']['observed_rate']:.2f} %; states from {esc(result.get('state_source', '?'))}.</p>
<p class="advice" id="advice">{esc(advice['text'])}</p>
<h2>Jobs Slurm accepts now</h2>
<p id="unsegmented">Without <code>--segment</code>: <code>-N</code> {_ranges(result['unsegmented_feasible'])}
(once running jobs end: {_ranges(result.get('unsegmented_feasible_available', []))}).</p>
<table id="segments"><tr><th>--segment</th><th>largest -N now</th><th>share</th><th>largest -N on available</th>
<th>share</th><th>expected at today's λ</th></tr>
{rows}
</table>
<figure id="rack-map">{rack_map(result, plt)}</figure>
<figure id="curves">{capacity_curves(result, plt)}</figure>
<figure id="fabric">{tree or f'<p>The fabric tree is drawn for up to {MAX_TREE_BLOCKS} blocks.</p>'}</figure>
<h2>Blocks that are not fully idle</h2>
<table id="blocks"><tr><th>block</th><th>nodes</th><th>idle</th><th>allocated</th><th>drained</th><th>down</th>
<th>out</th></tr>
{block_rows}
</table>
{f'<h2>Warnings</h2><ul>{warnings}</ul>' if warnings else ''}
<p><small>aifactory.topology.segment_capacity: placement per Slurm 26.05 topology/block rules.</small></p>
</body></html>
"""
