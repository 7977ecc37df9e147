"""The one reader of Slurm node states (_base/slurm_states): its words, its classes, scontrol's JSON.

The recorded output is ``tests/fixtures/slurm/scontrol-show-nodes-26.05.json`` (its README says
which records come from the test bed's real slurmctld and which were written);
tests/integration/test_slurm_states_real.py drives a live slurmctld through the states it can reach.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import slurm_state_docs  # tools/ is on sys.path (tests/conftest.py)

from ansible_collections.aifactory.topology.extensions.eda.plugins.event_source import slurm_nodes
from ansible_collections.aifactory.topology.plugins.module_utils._base import slurm_states
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._engines import capacity, slurm_drain
from ansible_collections.aifactory.topology.plugins.module_utils._events import eda as _eda

REPO = Path(__file__).resolve().parents[4]
FIXTURE = REPO / "tests" / "fixtures" / "slurm" / "scontrol-show-nodes-26.05.json"
WAIT = 30  # seconds: a bound on every wait, never a measure

# What Slurm 26.05 prints, from its sources: the words of the JSON (data_parser v0.0.45's
# NODE_STATES, src/plugins/data_parser/v0.0.45/parsers.c) ...
JSON_WORDS = [
    "INVALID", "UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE", "EXTERNAL", "RESERVED",
    "UNDRAIN", "CLOUD", "RESUME", "DRAIN", "COMPLETING", "NOT_RESPONDING", "POWERED_DOWN", "FAIL", "POWERING_UP",
    "MAINTENANCE", "REBOOT_REQUESTED", "REBOOT_CANCELED", "POWERING_DOWN", "DYNAMIC_FUTURE", "REBOOT_ISSUED",
    "PLANNED", "INVALID_REG", "POWER_DOWN", "POWER_UP", "POWER_DRAIN", "POWER_DOWN_ASAP", "POWER_DOWN_FORCE",
    "DYNAMIC_NORM", "BLOCKED",
]
# ... and sinfo's (node_state_string and node_state_string_compact, src/common/slurm_protocol_defs.c),
# which sinfo prints in lower case, each with any of its suffixes.
SINFO_WORDS = [
    "ALLOCATED", "BLOCKED", "CANCEL_REBOOT", "CLOUD", "COMPLETING", "DOWN", "DRAINED", "DRAINING", "DYNAMIC_FUTURE",
    "DYNAMIC_NORM", "EXTERNAL", "FAIL", "FAILING", "FUTURE", "IDLE", "INVAL", "MAINT", "MIXED", "PLANNED",
    "POWERED_DOWN", "POWERING_DOWN", "POWERING_UP", "POWER_DOWN", "POWER_UP", "REBOOT", "REBOOT_ISSUED", "RESERVED",
    "RESUME", "UNDRAIN", "UNKNOWN",
    "ALLOC", "BLOCK", "BOOT", "CANC_R", "COMP", "DRAIN", "DRNG", "EXT", "FAILG", "FUTR", "MIX", "PLND", "POWERED_DN",
    "POWRING_DN", "POW_DN", "POW_UP", "RESM", "RESV", "UNK",
]
# ... and the scontrol man page's (NODES - SPECIFICATIONS FOR SHOW COMMAND: states and flags).
MAN_WORDS = [
    "ALLOCATED", "DOWN", "ERROR", "FUTURE", "IDLE", "MIXED", "UNKNOWN", "CLOUD", "COMPLETING", "DRAIN", "DYNAMIC",
    "INVALID_REG", "MAINTENANCE", "NOT_RESPONDING", "POWER_DOWN", "POWERED_DOWN", "POWERING_DOWN", "POWERING_UP",
    "PLANNED", "REBOOT_ISSUED", "REBOOT_REQUESTED", "RESERVED",
]

# The recorded output: node -> class.
RECORDED = {
    "c1": "idle", "c2": "down", "c3": "idle", "c4": "idle", "c5": "drained",
    "r1": "down", "r2": "down", "r3": "down", "r4": "down",
    "x1": "idle", "x2": "drained", "x3": "down", "x4": "down", "x5": "down", "x6": "idle",
    "d1": "idle", "p1": "idle", "p2": "drained",
    "w01": "down", "w02": "down", "w03": "down", "w04": "drained", "w05": "drained", "w06": "allocated",
    "w07": "allocated", "w08": "allocated", "w09": "allocated", "w10": "drained", "w11": "down",
    "w12": "allocated", "w13": "idle", "w14": "idle", "w15": "down", "w16": "idle", "w17": "idle", "w18": "idle",
    "w19": "idle", "w20": "down",
}


def recorded():
    return FIXTURE.read_text(encoding="utf-8")


def test_every_word_slurm_26_05_prints_is_in_the_table():
    table = {entry.word for entry in slurm_states.WORDS}
    assert set(JSON_WORDS) - table == set() and set(MAN_WORDS) - table == set()
    for word in SINFO_WORDS:
        for printed in (word.lower(), word.lower() + "*", word + "~"):
            slurm_states.classify(printed, "sinfo", strict=True)
    # Each spelling belongs to one word only.
    spellings = [spelling for entry in slurm_states.WORDS for spelling in (entry.word, *entry.aliases)]
    assert len(spellings) == len(set(spellings))


def test_the_recorded_output_of_slurm_26_05_is_classified_node_by_node():
    nodes = slurm_states.read_nodes(recorded())
    assert [node.name for node in nodes] == list(RECORDED)  # Slurm's order
    assert {node.name: node.state.category for node in nodes} == RECORDED
    assert all(node.state.unknown == () for node in nodes)
    # The drain reads the same records: the DRAIN flag and Slurm's reason.
    drained, known = slurm_drain.drained_nodes(recorded())
    assert drained == {"c5": "aifactory.topology unhealthy", "x2": "admin: new DIMMs", "p2": "POWER_DOWN_ASAP",
                       "w05": "", "w10": "", "w20": ""}
    assert known == set(RECORDED)
    # And segment capacity.
    assert capacity.states_from_scontrol_json(recorded()) == RECORDED


@pytest.mark.parametrize("state, expected", [
    # What the capacity report called down or drained and the event source called up (issue 32).
    (["ERROR"], "down"), (["UNKNOWN"], "down"), (["IDLE", "INVALID_REG"], "down"), (["IDLE", "REBOOT_ISSUED"], "down"),
    (["IDLE", "POWERING_DOWN"], "down"), (["IDLE", "POWER_DRAIN"], "drained"),
    # The JSON's composite words name bits that are printed on their own too.
    (["IDLE", "CLOUD", "POWERED_DOWN", "POWER_DOWN", "POWER_DOWN_FORCE"], "idle"),
    (["MIXED", "DRAIN", "POWER_DOWN", "POWER_DRAIN", "POWER_DOWN_ASAP"], "drained"),
    ("idle", "idle"), ("IDLE", "idle"), ("alloc", "allocated"), ("mixed", "allocated"), ("drain", "drained"),
    ("idle+drain", "drained"), ("drained", "drained"), ("draining", "drained"), ("down*", "down"),
    ("idle*", "down"), ("idle~", "idle"), ("down+drain", "down"), ("future", "down"), ("fail", "down"),
    (["IDLE", "CLOUD", "POWERED_DOWN"], "idle"), (["IDLE", "CLOUD", "DRAIN", "POWERED_DOWN"], "drained"),
    (["ALLOCATED", "COMPLETING"], "allocated"), (["DOWN", "NOT_RESPONDING"], "down"), ("maint", "idle"),
    ("reboot^", "down"), ("boot", "idle"), ("idle%", "down"), ("mix-", "allocated"), ("ext", "idle"),
])
def test_classify(state, expected):
    assert slurm_states.classify(state, "n1").category == expected
    assert slurm_states.classify(state, "n1", strict=False).category == expected


@pytest.mark.parametrize("value", ["sleepy", "", "idle+", 3, None, ["IDLE", 4], []])
def test_a_state_that_cannot_be_read_is_an_error_naming_the_node(value):
    with pytest.raises(TopologyError, match="n7"):
        slurm_states.classify(value, "node_states.n7")


# segment_capacity's words and classes before the one reader: every one keeps its class.
CAPACITY_BEFORE = {
    "idle": "idle", "allocated": "allocated", "alloc": "allocated", "mixed": "allocated", "mix": "allocated",
    "down": "down", "error": "down", "future": "down", "futr": "down", "unknown": "down", "unk": "down",
    "drain": "drained", "drained": "drained", "draining": "drained", "drng": "drained", "drain_pending": "drained",
    "fail": "down", "failing": "down", "not_responding": "down", "no_respond": "down", "invalid_reg": "down",
    "inval": "down", "invalid": "down", "reboot_issued": "down", "powering_down": "down", "powered_off": "down",
    "completing": "allocated", "comp": "allocated", "power_drain": "drained",
    **{word: None for word in ("cloud", "powered_down", "power_down", "powering_up", "pow_up", "planned", "plnd",
                               "reserved", "resv", "maintenance", "maint", "reboot_requested", "reboot",
                               "dynamic_future", "dynamic_norm", "dyn", "blocked", "resume", "undrain")},
}


@pytest.mark.parametrize("word", sorted(CAPACITY_BEFORE))
def test_segment_capacity_classes_are_unchanged(word):
    before = CAPACITY_BEFORE[word]
    assert slurm_states.classify(word, "n1").category == (before or "idle")  # alone
    assert slurm_states.classify(f"idle+{word}", "n1").category == (before or "idle")


def test_a_word_slurm_does_not_print_is_down_in_slurms_output_and_named():
    state = slurm_states.classify(["IDLE", "SLEEPY", "X" * 1000], "n1", strict=False)
    assert state.category == "down" and state.unknown == ("SLEEPY", "X" * 40 + "...")
    document = {"nodes": [{"name": f"n{i}", "state": ["IDLE", f"NEW_{i % 12}"]} for i in range(24)]
                + [{"name": "ok", "state": ["IDLE"]}], "errors": []}
    nodes = slurm_states.read_nodes(document)
    assert {node.name for node in nodes if node.state.category == "down"} == {f"n{i}" for i in range(24)}
    message = slurm_states.unknown_words_warning(nodes)
    assert message.startswith("scontrol show nodes --json: Slurm node state words this collection does not know, "
                              "their nodes counted as down: 'NEW_0' (n[0,12]), 'NEW_1' (n[1,13]), ")
    assert message.endswith(" and 2 more") and slurm_states.unknown_words_warning(nodes[-1:]) is None


@pytest.mark.parametrize("output, message", [
    ("{not json", r"^scontrol show nodes --json did not print valid JSON: "),
    ("[" * 100_000 + "]" * 100_000, r"did not print valid JSON: nested too deeply$"),
    (b"\xff\xfe", "did not print valid JSON"),
    ("[]", r"^scontrol show nodes --json: no 'nodes' list in the output$"),
    ({"nodes": "all"}, "no 'nodes' list"),
    ({"nodes": [], "errors": [{"description": "Unable to contact slurmctld"}]},
     r"^scontrol show nodes --json reported errors: Unable to contact slurmctld$"),
    ({"nodes": [], "errors": {"description": "x" * 10_000}}, r"reported errors: .{1,260}$"),
    ({"nodes": [{"state": ["IDLE"]}]}, r"nodes\[0\] has no name \(a node record's name is not a name of 1-253"),
    ({"nodes": ["n1"]}, r"nodes\[0\] has no name \(a node record is not an object\)"),
    ({"nodes": [{"name": "n" * 254, "state": ["IDLE"]}]}, r"nodes\[0\] has no name"),
    ({"nodes": [{"name": "x"}]}, "node x has no state"),
    ({"nodes": [{"name": "x", "state": []}]}, "node x: the state is an empty list"),
    ({"nodes": [{"name": "x", "state": {"IDLE": 1}}]}, "node x: the state must be a string"),
], ids=["garbage", "deep", "bytes", "list", "nodes-not-a-list", "errors", "errors-not-a-list", "no-name",
        "not-an-object", "long-name", "no-state", "empty-state", "state-mapping"])
def test_output_that_is_not_slurms_json_is_one_error_kind_for_every_reader(output, message):
    with pytest.raises(RemoteAPIError, match=message):
        slurm_states.read_nodes(output)
    if not isinstance(output, dict):
        output = output if isinstance(output, (str, bytes)) else json.dumps(output)
        for reader in (capacity.states_from_scontrol_json, slurm_drain.drained_nodes):
            with pytest.raises(RemoteAPIError, match=message):
                reader(output)


def test_with_a_bad_handler_a_record_that_cannot_be_read_is_reported_and_never_in_service():
    reported = []
    nodes = slurm_states.read_nodes({"nodes": [{"name": "a", "state": ["IDLE"]}, "b", {"name": ""},
                                               {"name": "c", "state": {"odd": 1}}, {"name": "d"}]},
                                    bad=lambda reason, sample: reported.append(reason))
    assert [(node.name, node.state.category) for node in nodes] == [("a", "idle"), ("c", "down"), ("d", "down")]
    assert reported == [slurm_states.BAD_RECORD, slurm_states.BAD_NAME, slurm_states.BAD_STATE,
                        slurm_states.BAD_STATE]


def test_the_event_source_availability_is_the_class():
    assert _eda.AVAILABILITY == {"idle": "up", "allocated": "up", "drained": "drain", "down": "down"}
    assert _eda.slurm_nodes(recorded()) == {name: _eda.AVAILABILITY[category] for name, category in RECORDED.items()}


def test_the_event_source_sends_an_event_for_every_recorded_state_out_of_service_and_its_return(tmp_path):
    # scontrol prints every node IDLE, then the recorded states, then every node IDLE again.
    document = json.loads(recorded())
    idle = json.loads(recorded())
    for node in idle["nodes"]:
        node["state"] = ["IDLE"]
    outputs = [idle, document, idle]
    for number, output in enumerate(outputs, start=1):
        (tmp_path / f"out{number}").write_text(json.dumps(output), encoding="utf-8")
    script = tmp_path / "scontrol"
    script.write_text(f"#!/bin/sh\ncd '{tmp_path}'\nn=$(cat calls 2>/dev/null || echo 0); n=$((n + 1))\n"
                      f"echo $n > calls\n[ $n -gt {len(outputs)} ] && n={len(outputs)}\ncat out$n\n")
    script.chmod(0o755)
    args = _eda.source_args(slurm_nodes.SOURCE, {"scontrol": [str(script)], "interval": 0.01, "delay": 0.01,
                                                 "max_wait": 5, "initial_sync": False}, slurm_nodes.SPEC)
    out_of_service = {name: category for name, category in RECORDED.items() if category in ("drained", "down")}
    changes = asyncio.run(collect_changes(args, 2 * len(out_of_service)))
    leaving = {(name, "drain" if category == "drained" else "down") for name, category in out_of_service.items()}
    returning = {(name, "resume" if category == "drained" else "up") for name, category in out_of_service.items()}
    assert set(changes[:len(out_of_service)]) == leaving and set(changes[len(out_of_service):]) == returning
    assert len(changes) == 2 * len(out_of_service)


async def collect_changes(args, count):
    """(node, change) of the source's events until ``count`` have come; the source is still running then."""
    changes = []
    enough = asyncio.Event()

    class Queue:
        @staticmethod
        async def put(event):
            changes.extend((c["name"], c["change"]) for c in event[_eda.EVENT_KEY]["changes"])
            if len(changes) >= count:
                enough.set()

    source = asyncio.ensure_future(slurm_nodes.main(Queue(), args))
    await asyncio.wait([source, asyncio.ensure_future(enough.wait())], timeout=WAIT,
                       return_when=asyncio.FIRST_COMPLETED)
    assert not source.done(), source.exception()
    source.cancel()
    await asyncio.gather(source, return_exceptions=True)
    return changes


def test_the_tables_in_the_docs_are_generated_from_the_table():
    for doc, names in slurm_state_docs.DOCS.items():
        text = (REPO / doc).read_text(encoding="utf-8")
        assert slurm_state_docs.expected_doc(text, names) == text, "run python tools/slurm_state_docs.py"
    table = slurm_state_docs.states_table()
    assert all(f"| `{entry.word}` |" in table for entry in slurm_states.WORDS)
