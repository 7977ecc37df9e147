# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Segment capacity: which job sizes Slurm's topology/block places now, and what failures cost.

Pure functions of the block layout (``slurm.plan_blocks``) and the node states (read and classified
by ``_base/slurm_states``, the collection's one reader of Slurm node states). The placement
rules are those of Slurm 26.05's ``eval_nodes_block()`` for whole-node jobs of equal node weight;
docs/segment-capacity.md states each rule and where it comes from.
"""

from __future__ import annotations

import math

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist, slurm_states
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError

STATES = slurm_states.CATEGORIES  # idle, allocated, drained, down
# Slurm keeps block levels in a 16-bit map (MAX_BLOCK_LEVELS).
MAX_BLOCK_LEVELS = 16
DEFAULT_RATES = tuple(round(step * 0.005, 3) for step in range(21))  # 0 % .. 10 %
DEFAULT_MIN_SHARE = 0.9
# Base-block steps spent re-running a stalled pass (see feasible_ranges); bounds the time per run.
RETRY_BUDGET = 20_000_000


def states_from_scontrol_json(text, warn=None):
    """{node: class} from ``scontrol show nodes --json`` output, in Slurm's order (slurm_states.read_nodes).

    A state word this collection does not know counts as down, and ``warn`` is told which.
    """
    nodes = slurm_states.read_nodes(text)
    unknown = slurm_states.unknown_words_warning(nodes)
    if unknown and warn is not None:
        warn(unknown)
    return {node.name: node.state.category for node in nodes}


def states_from_option(node_states, known, where="node_states"):
    """{node: class} from the ``node_states`` option; every node must be in the model and every word one
    Slurm prints (an operator's typo is an error naming the node, never a guess)."""
    if not isinstance(node_states, dict):
        raise TopologyError(f"{where} must be a mapping of node name to Slurm state")
    unknown = sorted((str(n) for n in node_states if n not in known), key=hostlist.natural_key)
    if unknown:
        raise TopologyError(f"{where}: {len(unknown)} nodes are not in the topology: {hostlist.compress(unknown)}")
    return {node: slurm_states.classify(state, f"{where}.{node}").category for node, state in node_states.items()}


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


def feasible_ranges(counts, ladder, node_order=None, unresolved=None, retry_budget=RETRY_BUDGET):
    """[[from, to], ...]: the node counts N for which ``sbatch -N N`` (no --segment) is placed.

    ``counts`` are the usable nodes per base block, in file order (placeholders as 0).
    Mirrors eval_nodes_block(): the job must fit in one aggregated block of the first enforced
    level that holds ceil(N / B) base blocks (the whole topology above the top level), using at
    most ceil(N / lower-level size) blocks of the enforced level below; see docs/segment-capacity.md.
    A first pass that stalls is retried as common_topo_choose_nodes() does, with the usable node
    of lowest index in ``node_order`` (per block, Slurm's node table indices; default: block order)
    removed from the failed attempt each time. N whose retries exceed ``retry_budget`` steps are
    left out and appended to ``unresolved``.
    """
    total = sum(counts)
    base = ladder.base
    feasible = []
    level = 0
    budget = [retry_budget]
    while total and (level == 0 or (base << (level - 1)) < total):
        low, high = (1, base) if level == 0 else ((base << (level - 1)) + 1, base << level)
        high = min(high, total)
        stalled = []
        feasible += _feasible_at_level(counts, ladder, level, low, high, stalled)
        for nodes in stalled:
            placed = _place_with_retries(counts, ladder, nodes, node_order, budget)
            if placed:
                feasible.append([nodes, nodes])
            elif placed is None and unresolved is not None:
                unresolved.append(nodes)
        level += 1
    return _merge(feasible)


def _shape(ladder, raw):
    """(bblock_per_block, bblock_per_llblock) for a job of raw level ceil(log2(ceil(N / B)))."""
    level = ladder.enforced_at_or_above(raw) if raw < MAX_BLOCK_LEVELS else None
    lower = 0 if raw == 0 else ladder.enforced_at_or_below(raw - 1)
    return (ladder.block_count if level is None else 1 << level), 1 << lower


def _feasible_at_level(counts, ladder, raw, low, high, stalled):
    per_block, per_lower = _shape(ladder, raw)
    lower_size = per_lower * ladder.base                             # llblock_size
    ranges = []
    blocks = None
    for k in range(-(-low // lower_size), -(-high // lower_size) + 1):   # k = max_llblock
        sub_low, sub_high = max(low, (k - 1) * lower_size + 1), min(high, k * lower_size)
        if sub_low > sub_high:
            continue
        if per_block == per_lower * k:
            # No lower-level limit: the largest aggregated block decides; empty base blocks are taken last.
            most = max(_group_sums(counts, per_block))
            if most >= sub_low:
                ranges.append([sub_low, min(sub_high, most)])
            continue
        if blocks is None:
            blocks = _limited_blocks(counts, per_block, per_lower)
        ranges += _limited(blocks, k, sub_low, sub_high, stalled)
    return ranges


class _Aggregated:
    """One aggregated block as the lower-level-limited pass of eval_nodes_block() sees it."""

    __slots__ = ("index", "total", "candidate", "greedy", "stall")

    def __init__(self, index, members, per_block, per_lower):
        self.index, self.total = index, sum(members)
        lower = [(sum(group), i, per_lower > 1 and min(group) == 0, max(group))
                 for i, group in ((i, members[i:i + per_lower]) for i in range(0, len(members), per_lower))]
        # The candidate test sums the k fullest of the first per_block // per_lower lower blocks
        # (integer division as in Slurm: above the top level a trailing partial one is not counted).
        self.candidate = _prefix(sorted((item[0] for item in lower[:per_block // per_lower]), reverse=True))
        # The greedy pass opens lower blocks fullest first, at most k; inside one it takes an empty base
        # block last, and taking it while nodes are still missing stalls the pass.
        ordered = sorted(lower, key=_opening_order)
        self.greedy = _prefix(item[0] for item in ordered)
        self.stall = next((position for position, item in enumerate(ordered, start=1) if item[2]), len(ordered))

    def avail(self, k):
        return self.candidate[min(k, len(self.candidate) - 1)]

    def cap(self, k):
        return self.greedy[min(k, self.stall, len(self.greedy) - 1)]


def _opening_order(item):
    """_choose_best_bblock() among lower blocks that cannot hold the rest: the fullest; on a tie the one
    with the fullest base block; on a tie again the later one. ``item`` = (count, offset, _, fullest)."""
    return -item[0], -item[3], -item[1]


def _prefix(values):
    sums = [0]
    for value in values:
        sums.append(sums[-1] + value)
    return sums


def _limited_blocks(counts, per_block, per_lower):
    return [_Aggregated(index, counts[start:start + per_block], per_block, per_lower)
            for index, start in enumerate(range(0, len(counts), per_block))]


def _limited(blocks, k, low, high, stalled):
    """Feasible N in [low, high] when a job may use at most k lower-level blocks of one aggregated block.

    N that a block passes the candidate test for but whose first pass stalls go to ``stalled``.
    """
    ordered = sorted(blocks, key=lambda block: -block.avail(k))
    ranges, chosen = [], None
    for position, block in enumerate(ordered):
        # Among the candidates (avail >= N) Slurm takes the one with the fewest nodes, the last on ties.
        if chosen is None or (block.total, -block.index) < (chosen.total, -chosen.index):
            chosen = block
        floor = ordered[position + 1].avail(k) if position + 1 < len(ordered) else 0
        top, bottom = min(high, block.avail(k)), max(low, floor + 1)
        if top >= bottom:
            cap = chosen.cap(k)
            if cap >= bottom:
                ranges.append([bottom, min(top, cap)])
            stalled.extend(range(max(bottom, cap + 1), top + 1))
    return ranges


def _first_pass(counts, per_block, per_lower, k, nodes):
    """('placed' | 'no_fit' | 'stalled', base blocks taken) for one N, at node-count level."""
    chosen = None
    for index, start in enumerate(range(0, len(counts), per_block)):
        members = counts[start:start + per_block]
        lower = _group_sums(members, per_lower)
        if sum(sorted(lower[:per_block // per_lower], reverse=True)[:k]) >= nodes and \
                (chosen is None or sum(members) <= chosen[1]):
            chosen = (start, sum(members))
    if chosen is None:
        return "no_fit", []
    start = chosen[0]
    members = counts[start:start + per_block]
    groups = sorted(((sum(members[i:i + per_lower]), i, None, max(members[i:i + per_lower]))
                     for i in range(0, len(members), per_lower)), key=_opening_order)
    remaining, taken = nodes, []
    for position, (count, offset, _unused, _fullest) in enumerate(groups):
        if position >= k:
            break
        if count >= remaining:
            return "placed", taken
        group = members[offset:offset + per_lower]
        taken += [start + offset + i for i, c in enumerate(group) if c]
        remaining -= count
        if per_lower > 1 and min(group) == 0:
            return "stalled", taken
    return "stalled", taken


def _place_with_retries(counts, ladder, nodes, node_order, budget):
    """True/False: placed after common_topo_choose_nodes()'s retries; None when the budget ran out."""
    per_block, per_lower = _shape(ladder, (-(-nodes // ladder.base) - 1).bit_length())
    k = -(-nodes // (per_lower * ladder.base))
    counts = list(counts)
    if node_order is None:
        offsets = _prefix(counts)
        order = [list(range(offsets[i], offsets[i + 1])) for i in range(len(counts))]
    else:
        order = [sorted(indices) for indices in node_order]
    heads = [0] * len(counts)
    available = sum(counts)
    while True:
        budget[0] -= len(counts)
        if budget[0] < 0:
            return None
        outcome, taken = _first_pass(counts, per_block, per_lower, k, nodes)
        if outcome != "stalled":
            return outcome == "placed"
        if available <= nodes or not taken:
            return False
        victim = min(taken, key=lambda block: order[block][heads[block]])
        heads[victim] += 1
        counts[victim] -= 1
        available -= 1


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

def analyse(blocks, block_sizes, states, segment_sizes=None, rates=DEFAULT_RATES, min_share=DEFAULT_MIN_SHARE,
            node_index=None, warn=None):
    """The module's result (blocks, segments, expected, advice, unsegmented_feasible) as a dict.

    ``blocks`` come from slurm.plan_blocks; ``states`` maps node -> category (unlisted: idle);
    ``node_index`` maps node -> its index in Slurm's node table (default: natural name order).
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
    if node_index is None:
        ordered = sorted((node for block in blocks for node in block.nodes), key=hostlist.natural_key)
        node_index = {node: index for index, node in enumerate(ordered)}
    feasible = {}
    for name, usable in (("now", ("idle",)), ("available", ("idle", "allocated"))):
        order = [[node_index.get(node, 0) for node in block.nodes if states.get(node, "idle") in usable]
                 for block in blocks]
        unresolved = []
        feasible[name] = feasible_ranges([len(indices) for indices in order], ladder, order, unresolved)
        if unresolved and warn is not None:
            warn(f"{len(unresolved)} job sizes need more retries of Slurm's placement than this run computes "
                 f"and are reported as refused ({name}): {_ranges_text(unresolved)}")
    return {
        "block_sizes": list(block_sizes),
        "summary": {"nodes": total, "idle": sum(idle_counts), "available": sum(available_counts),
                    "blocks": len(block_rows),
                    "placeholders": [row["name"] for row in block_rows if row["placeholder"]]},
        "blocks": block_rows,
        "segments": segments,
        "expected": {"rates": all_rates, "observed_rate": round(observed, 6), "sizes": expected_rows},
        "advice": _advice(keep, min_share, observed),
        "unsegmented_feasible": feasible["now"],
        "unsegmented_feasible_available": feasible["available"],
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
