# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Segment capacity: which job sizes Slurm's topology/block places now, and what failures cost.

Pure functions of the block layout (``slurm.plan_blocks``) and the node states. The placement
rules are those of Slurm 26.05's ``eval_nodes_block()`` for whole-node jobs of equal node weight;
docs/segment-capacity.md states each rule and where it comes from.
"""

from __future__ import annotations

import math

from ansible_collections.aifactory.topology.plugins.module_utils import _hostlist as hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._model import TopologyError

STATES = ("idle", "allocated", "drained", "down")
# Slurm keeps block levels in a 16-bit map (MAX_BLOCK_LEVELS).
MAX_BLOCK_LEVELS = 16
DEFAULT_RATES = tuple(round(step * 0.005, 3) for step in range(21))  # 0 % .. 10 %
DEFAULT_MIN_SHARE = 0.9

# Slurm node state words (scontrol/sinfo names, lower case) -> what they mean for scheduling.
# "base" states come first in Slurm's output; the others are flags added to them.
_BASE_WORDS = {
    "idle": "idle", "allocated": "allocated", "alloc": "allocated", "mixed": "allocated", "mix": "allocated",
    "down": "down", "error": "down", "future": "down", "futr": "down", "unknown": "down", "unk": "down",
}
_FLAG_WORDS = {
    # not schedulable until an administrator acts
    "drain": "drained", "drained": "drained", "draining": "drained", "drng": "drained", "drain_pending": "drained",
    "fail": "down", "failing": "down", "not_responding": "down", "no_respond": "down", "invalid_reg": "down",
    "inval": "down", "invalid": "down", "reboot_issued": "down", "powering_down": "down", "powered_off": "down",
    # busy until the work on the node ends
    "completing": "allocated", "comp": "allocated",
    # schedulable: Slurm powers cloud nodes up on demand; reservations are not modelled
    "cloud": None, "powered_down": None, "power_down": None, "powering_up": None, "pow_up": None,
    "planned": None, "plnd": None, "reserved": None, "resv": None, "maintenance": None, "maint": None,
    "reboot_requested": None, "reboot": None, "dynamic_future": None, "dynamic_norm": None, "dyn": None,
    "blocked": None, "power_drain": "drained", "resume": None, "undrain": None,
}
# sinfo's state suffixes: '*' = not responding; the others only describe power or reboot progress.
_SUFFIX_WORDS = {"*": "down", "~": None, "#": None, "!": None, "%": "down", "$": None, "@": None, "^": "down",
                 "-": None}
_RANK = {"idle": 0, "allocated": 1, "drained": 2, "down": 3}


def classify_state(value, where):
    """'idle', 'allocated', 'drained' or 'down' for a Slurm state (``IDLE+DRAIN``, ``down*``, or a list)."""
    if isinstance(value, (list, tuple)):
        words = list(value)
    elif isinstance(value, str):
        words = value.replace("|", "+").split("+")
    else:
        raise TopologyError(f"{where}: the state must be a string such as 'idle' or 'drain', got {value!r}")
    category = None
    for index, raw in enumerate(words):
        if not isinstance(raw, str) or not raw.strip():
            raise TopologyError(f"{where}: state {value!r} has an empty or non-string word")
        word = raw.strip().lower()
        while word and word[-1] in _SUFFIX_WORDS:
            category = _worse(category, _SUFFIX_WORDS[word[-1]])
            word = word[:-1]
        if word in _BASE_WORDS:
            category = _worse(category, _BASE_WORDS[word])
        elif word in _FLAG_WORDS:
            # A flag alone ("drain") stands for an otherwise idle node.
            category = _worse(category, _FLAG_WORDS[word] or ("idle" if index == 0 else None))
        else:
            raise TopologyError(f"{where}: unknown Slurm node state {raw!r} in {value!r}")
    return category or "idle"


def _worse(current, new):
    if new is None:
        return current
    if current is None:
        return new
    return new if _RANK[new] > _RANK[current] else current


def states_from_scontrol_json(text, where="scontrol show nodes --json"):
    """{node: category} from ``scontrol show nodes --json`` output (Slurm 23.02 and later)."""
    import json  # pylint: disable=import-outside-toplevel

    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise TopologyError(f"{where} did not print valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise TopologyError(f"{where}: the JSON has no 'nodes' list")
    errors = data.get("errors") or []
    if errors:
        raise TopologyError(f"{where} reported errors: {errors}")
    states = {}
    for index, entry in enumerate(data["nodes"]):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            raise TopologyError(f"{where}: nodes[{index}] has no name")
        if "state" not in entry:
            raise TopologyError(f"{where}: node {name} has no state")
        states[name] = classify_state(entry["state"], f"{where}: node {name}")
    return states


def states_from_option(node_states, known, where="node_states"):
    """{node: category} from the ``node_states`` option; every node must be in the model."""
    if not isinstance(node_states, dict):
        raise TopologyError(f"{where} must be a mapping of node name to Slurm state")
    unknown = sorted((str(n) for n in node_states if n not in known), key=hostlist.natural_key)
    if unknown:
        raise TopologyError(f"{where}: {len(unknown)} nodes are not in the topology: {hostlist.compress(unknown)}")
    return {node: classify_state(state, f"{where}.{node}") for node, state in node_states.items()}


# -- the block ladder ----------------------------------------------------------------------------

class Ladder:
    """Slurm's view of a block topology: base size B, enforced levels, base block count."""

    def __init__(self, block_sizes, block_count):
        self.base = block_sizes[0]
        self.levels = sorted({(size // self.base).bit_length() - 1 for size in block_sizes} | {0})
        self.block_count = block_count

    def enforced_at_or_above(self, level):
        """bit_ffs_from_bit(block_levels, level): the first enforced level >= level, or None."""
        for candidate in self.levels:
            if candidate >= level:
                return candidate
        return None

    def enforced_at_or_below(self, level):
        """bit_fls_from_bit(block_levels, level): the last enforced level <= level (0 always is)."""
        return max(candidate for candidate in self.levels if candidate <= min(level, MAX_BLOCK_LEVELS - 1))


def _group_sums(counts, width):
    return [sum(counts[i:i + width]) for i in range(0, len(counts), width)]


def feasible_ranges(counts, ladder):
    """[[from, to], ...]: the node counts N for which ``sbatch -N N`` (no --segment) is placed.

    ``counts`` are the usable nodes per base block, in file order (placeholders as 0).
    Mirrors eval_nodes_block(): the job must fit in one aggregated block of the first enforced
    level that holds ceil(N / B) base blocks (the whole topology above the top level), using at
    most ceil(N / lower-level size) blocks of the enforced level below; see docs/segment-capacity.md.
    """
    total = sum(counts)
    base = ladder.base
    feasible = []
    level = 0
    while total and (level == 0 or (base << (level - 1)) < total):
        low, high = (1, base) if level == 0 else ((base << (level - 1)) + 1, base << level)
        high = min(high, total)
        feasible += _feasible_at_level(counts, ladder, level, low, high)
        level += 1
    return _merge(feasible)


def _feasible_at_level(counts, ladder, raw, low, high):
    base, block_count = ladder.base, ladder.block_count
    level = ladder.enforced_at_or_above(raw) if raw < MAX_BLOCK_LEVELS else None
    lower = 0 if raw == 0 else ladder.enforced_at_or_below(raw - 1)
    per_block = block_count if level is None else 1 << level        # bblock_per_block
    per_lower = 1 << lower                                           # bblock_per_llblock
    lower_size = per_lower * base                                    # llblock_size
    block_totals = _group_sums(counts, per_block)
    lower_sums = _group_sums(counts, per_lower)
    # Integer division as in Slurm: above the top level a trailing partial lower block is not counted.
    lower_per_block = per_block // per_lower
    prefix_max = None
    ranges = []
    for k in range(-(-low // lower_size), -(-high // lower_size) + 1):   # k = max_llblock
        sub_low, sub_high = max(low, (k - 1) * lower_size + 1), min(high, k * lower_size)
        if sub_low > sub_high:
            continue
        if per_block == per_lower * k:
            most = max(block_totals)
        else:
            if prefix_max is None:
                prefix_max = _best_prefix_sums(lower_sums, lower_per_block)
            most = prefix_max[min(k, len(prefix_max) - 1)]
        if most >= sub_low:
            ranges.append([sub_low, min(sub_high, most)])
    return ranges


def _best_prefix_sums(lower_sums, lower_per_block):
    """best[k] = max over aggregated blocks of the sum of its k fullest lower-level blocks."""
    best = [0] * (lower_per_block + 1)
    for offset in range(0, max(len(lower_sums), 1), max(lower_per_block, 1)):
        group = sorted(lower_sums[offset:offset + lower_per_block], reverse=True)
        running = 0
        for k, value in enumerate(group, start=1):
            running += value
            if running > best[k]:
                best[k] = running
    for k in range(1, len(best)):  # fewer blocks than k: the whole group counts
        best[k] = max(best[k], best[k - 1])
    return best


def _merge(ranges):
    merged = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return merged


def largest_segmented(counts, size):
    """Largest N accepted with --segment=size (size <= B): every segment lands in one base block."""
    return size * sum(count // size for count in counts)


# -- expected capacity ---------------------------------------------------------------------------

def _binomial_survival(nodes, up):
    """[P(X >= x) for x in 0..nodes+1], X ~ Binomial(nodes, up), computed in log space."""
    if up >= 1.0:
        return [1.0] * (nodes + 1) + [0.0]
    if up <= 0.0:
        return [1.0] + [0.0] * (nodes + 1)
    log_up, log_down = math.log(up), math.log1p(-up)
    pmf = [math.exp(math.lgamma(nodes + 1) - math.lgamma(x + 1) - math.lgamma(nodes - x + 1)
                    + x * log_up + (nodes - x) * log_down) for x in range(nodes + 1)]
    survival = [0.0] * (nodes + 2)
    for x in range(nodes, -1, -1):
        survival[x] = survival[x + 1] + pmf[x]
    return survival


def expected_fractions(rack_sizes, segment_sizes, rates):
    """{size: [expected usable share of all nodes at each rate]}: sum over racks of E[floor(X/s)*s] / total.

    Each node is unavailable independently with probability rate; a rack of n nodes has
    X ~ Binomial(n, 1 - rate) available nodes and gives floor(X / s) segments.
    """
    total = sum(rack_sizes)
    histogram = {}
    for size in rack_sizes:
        if size:
            histogram[size] = histogram.get(size, 0) + 1
    result = {size: [] for size in segment_sizes}
    for rate in rates:
        survivals = {n: _binomial_survival(n, 1.0 - rate) for n in histogram}
        for size in segment_sizes:
            usable = 0.0
            for n, racks in histogram.items():
                survival = survivals[n]
                usable += racks * size * sum(survival[j * size] for j in range(1, n // size + 1))
            result[size].append(usable / total if total else 0.0)
    return result


# -- the whole analysis --------------------------------------------------------------------------

def analyse(blocks, block_sizes, states, segment_sizes=None, rates=DEFAULT_RATES, min_share=DEFAULT_MIN_SHARE):
    """The module's result (blocks, segments, expected, advice, unsegmented_feasible) as a dict.

    ``blocks`` come from slurm.plan_blocks; ``states`` maps node -> category (unlisted: idle).
    """
    base = block_sizes[0]
    segment_sizes = check_segment_sizes(segment_sizes, base)
    rates = check_rates(rates)
    if not isinstance(min_share, (int, float)) or isinstance(min_share, bool) or not 0 <= min_share <= 1:
        raise TopologyError(f"min_share must be a number between 0 and 1, got {min_share!r}")
    block_rows, idle_counts, available_counts, rack_sizes = [], [], [], []
    for block in blocks:
        by_state = {state: [] for state in STATES}
        for node in block.nodes:
            by_state[states.get(node, "idle")].append(node)
        row = {
            "name": block.name,
            "domain": block.label,
            "placeholder": not block.nodes,
            "nodes": hostlist.compress(block.nodes),
            "node_count": len(block.nodes),
        }
        for state in STATES:
            row[state] = len(by_state[state])
        for state in STATES[1:]:
            row[f"{state}_nodes"] = hostlist.compress(by_state[state])
        block_rows.append(row)
        idle_counts.append(row["idle"])
        available_counts.append(row["idle"] + row["allocated"])
        rack_sizes.append(len(block.nodes))
    total = sum(rack_sizes)
    unavailable = total - sum(available_counts)
    observed = unavailable / total if total else 0.0
    segments = []
    for size in segment_sizes:
        now, later = largest_segmented(idle_counts, size), largest_segmented(available_counts, size)
        segments.append({
            "size": size,
            "largest_job_nodes": now,
            "largest_job_nodes_available": later,
            "share": _ratio(now, total),
            "share_available": _ratio(later, total),
        })
    all_rates = list(rates)
    expected = expected_fractions(rack_sizes, segment_sizes, all_rates + [observed])
    expected_rows = [{"size": size, "fractions": [round(v, 6) for v in values[:-1]],
                      "at_observed": round(values[-1], 6)} for size, values in expected.items()]
    keep = [row["size"] for row in expected_rows if row["at_observed"] >= min_share]
    ladder = Ladder(block_sizes, len(blocks))
    return {
        "block_sizes": list(block_sizes),
        "summary": {"nodes": total, "idle": sum(idle_counts), "available": sum(available_counts),
                    "blocks": len(block_rows),
                    "placeholders": [row["name"] for row in block_rows if row["placeholder"]]},
        "blocks": block_rows,
        "segments": segments,
        "expected": {"rates": all_rates, "observed_rate": round(observed, 6), "sizes": expected_rows},
        "advice": _advice(keep, min_share, observed),
        "unsegmented_feasible": feasible_ranges(idle_counts, ladder),
        "unsegmented_feasible_available": feasible_ranges(available_counts, ladder),
    }


def _ratio(part, whole):
    return round(part / whole, 6) if whole else 0.0


def _advice(keep, min_share, observed):
    if keep:
        text = (f"At today's unavailability ({observed:.1%}) --segment sizes {_ranges_text(keep)} keep at least "
                f"{min_share:.0%} of the nodes usable; the largest is {max(keep)}.")
    else:
        text = f"At today's unavailability ({observed:.1%}) no --segment size keeps {min_share:.0%} of the nodes usable."
    return {"min_share": min_share, "observed_rate": round(observed, 6), "sizes": keep,
            "largest_size": max(keep) if keep else None, "text": text}


def _ranges_text(values):
    runs = _merge([[v, v] for v in values])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def check_segment_sizes(segment_sizes, base):
    if segment_sizes is None:
        return list(range(1, base + 1))
    if not isinstance(segment_sizes, (list, tuple)) or not segment_sizes:
        raise TopologyError("segment_sizes must be a non-empty list of integers")
    values = []
    for index, size in enumerate(segment_sizes):
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= base:
            raise TopologyError(
                f"segment_sizes[{index}] = {size!r}: a segment size must be between 1 and the base block size {base}"
            )
        values.append(size)
    return sorted(set(values))


def check_rates(rates):
    if not isinstance(rates, (list, tuple)) or not rates:
        raise TopologyError("unavailability_rates must be a non-empty list of numbers between 0 and 1")
    values = []
    for index, rate in enumerate(rates):
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise TopologyError(f"unavailability_rates[{index}] = {rate!r} must be a number between 0 and 1")
        values.append(float(rate))
    return sorted(set(values))
