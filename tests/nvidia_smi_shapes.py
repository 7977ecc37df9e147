"""nvidia-smi's answers in the exact shapes real drivers print them, built from GPU records.

Written for this project from what drivers 550 to 595 print (not recorded on hardware, no real
identifier): the ``--query-gpu`` CSV (``N/A`` for fabric fields without a value, ``[N/A]`` for
others, an empty field for an empty chassis serial, values separated by ``, ``), ``nvidia-smi -q``
in the 550-565 layout (keys padded to column 42, ``Platform Info`` with the v1 names ``RACK Serial
Number``, ``Chassis Physical Slot Number``, ``Compute Slot Index``, ``Node Index``) and the 570+ one
(column 55, the v2 names), ``Attached GPUs`` before the ``GPU <bus id>`` sections, and the answer
of a driver to a field it does not know.

A GPU is a dict of ``--query-gpu`` property names to values, as ``gpu(kind, ...)`` builds it:
``gb200`` / ``gb300`` (rack-scale NVL72 trays: a cluster UUID, a clique, the chassis serial
number, slot, tray, host), ``hgx`` (HGX H100/H200/B200: registered, all-zero cluster UUID, clique
0), ``pcie`` (L40S, H100 NVL, a single-GPU VM: ``N/A`` everywhere).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap

FABRIC = ("fabric.clusterUuid", "fabric.cliqueId", "fabric.state", "fabric.status")
HEALTH = ("fabric.health.summary", "fabric.health.bandwidth", "fabric.health.route_recovery_in_progress",
          "fabric.health.route_unhealthy", "fabric.health.access_timeout_recovery",
          "fabric.health.incorrect_configuration", "fabric.health.partition_assigned")
PLATFORM = ("platform.chassis_serial_number", "platform.slot_number", "platform.tray_index",
            "platform.host_id", "platform.peer_type", "platform.module_id")
EVERY_FIELD = FABRIC + HEALTH + PLATFORM
# What each driver's --query-gpu knows (550 has the fabric fields, 580 the health and platform ones too).
KNOWN_FIELDS = {"550": FABRIC, "580": EVERY_FIELD}
ZERO_UUID = "00000000-0000-0000-0000-000000000000"


def gpu(kind, module=1, uuid="4b1d9c3e-7a25-4f60-9e8b-d2c5a7f01e36", clique="32766", chassis="1821124000123",
        slot=10, tray=0, host=1, **overrides):
    """One GPU's fields; ``overrides`` by property name with dots as ``__`` (``fabric__state="In Progress"``)."""
    if kind in ("gb200", "gb300"):
        record = {"fabric.clusterUuid": uuid, "fabric.cliqueId": clique, "fabric.state": "Completed",
                  "fabric.status": "Success", "fabric.health.summary": "Healthy", "fabric.health.bandwidth": "Full",
                  "fabric.health.route_recovery_in_progress": "False", "fabric.health.route_unhealthy": "False",
                  "fabric.health.access_timeout_recovery": "False",
                  "fabric.health.incorrect_configuration": "None" if kind == "gb300" else "N/A",
                  "fabric.health.partition_assigned": "N/A",
                  "platform.chassis_serial_number": chassis, "platform.slot_number": str(slot),
                  "platform.tray_index": str(tray), "platform.host_id": str(host),
                  "platform.peer_type": "Switch Connected", "platform.module_id": str(module)}
    elif kind == "hgx":
        record = {"fabric.clusterUuid": ZERO_UUID, "fabric.cliqueId": "0", "fabric.state": "Completed",
                  "fabric.status": "Success", **{field: "N/A" for field in HEALTH},
                  "platform.chassis_serial_number": "N/A", "platform.slot_number": "N/A",
                  "platform.tray_index": "N/A", "platform.host_id": "N/A", "platform.peer_type": "N/A",
                  "platform.module_id": str(module)}
    elif kind == "hgx-b200":  # Blackwell HGX: a summary and a host id, an empty chassis serial
        record = dict(gpu("hgx", module), **{"fabric.health.summary": "Healthy",
                                             "fabric.health.access_timeout_recovery": "False",
                                             "platform.chassis_serial_number": "", "platform.host_id": "1",
                                             "platform.peer_type": "Switch Connected"})
    elif kind == "pcie":
        record = {field: "N/A" for field in FABRIC + HEALTH + PLATFORM[:-1]}
        record["platform.module_id"] = str(module)
    else:
        raise ValueError(kind)
    record.update({key.replace("__", "."): value for key, value in overrides.items()})
    return record


def tray(kind="gb200", gpus=None, **fields):
    """The GPUs of one node: 4 of a GB200/GB300 tray, 8 of an HGX board, 1 PCIe GPU by default."""
    count = gpus or {"gb200": 4, "gb300": 4, "hgx": 8, "hgx-b200": 8}.get(kind, 1)
    return [gpu(kind, module=index + 1, **fields) for index in range(count)]


def rack(prefix, uuid, chassis, trays=18, clique="32766", skip=(), first_slot=10, kind="gb200", changes=None):
    """node -> GPUs of an NVL72 rack: ``trays`` trays (0-based tray index, slot ``first_slot`` + index),
    those in ``skip`` left out (they report nothing), ``changes`` per tray index overriding GPU fields."""
    nodes = {}
    for index in range(trays):
        if index in skip:
            continue
        extra = (changes or {}).get(index, {})
        nodes[f"{prefix}{index + 1:02d}"] = tray(kind, uuid=uuid, clique=clique, chassis=chassis,
                                                 slot=first_slot + index, tray=index, **extra)
    return nodes


def _csv_value(field, value):
    if value == "N/A" and not field.startswith("fabric.") and field != "platform.chassis_serial_number":
        return "[N/A]"  # what nvidia-smi prints for such fields in CSV
    return value


def csv(gpus, fields=EVERY_FIELD, header=False):
    """``--query-gpu=<fields> --format=csv[,noheader]``."""
    lines = [", ".join(fields)] if header else []
    lines += [", ".join(_csv_value(field, record.get(field, "[N/A]")) for field in fields) for record in gpus]
    return "\n".join(lines) + "\n"


_Q_NAMES = {
    "Fabric": [("State", "fabric.state"), ("Status", "fabric.status"), ("CliqueId", "fabric.cliqueId"),
               ("ClusterUUID", "fabric.clusterUuid")],
    "Health": [("Summary", "fabric.health.summary"), ("Bandwidth", "fabric.health.bandwidth"),
               ("Route Recovery in progress", "fabric.health.route_recovery_in_progress"),
               ("Route Unhealthy", "fabric.health.route_unhealthy"),
               ("Access Timeout Recovery", "fabric.health.access_timeout_recovery"),
               ("Incorrect Configuration", "fabric.health.incorrect_configuration"),
               ("Partition Assigned", "fabric.health.partition_assigned")],
    "Platform Info 580": [("Chassis Serial Number", "platform.chassis_serial_number"),
                          ("Slot Number", "platform.slot_number"), ("Tray Index", "platform.tray_index"),
                          ("Host ID", "platform.host_id"), ("Peer Type", "platform.peer_type"),
                          ("Module Id", "platform.module_id"), ("GPU Fabric GUID", None)],
    "Platform Info 550": [("RACK Serial Number", "platform.chassis_serial_number"),
                          ("Chassis Physical Slot Number", "platform.slot_number"),
                          ("Compute Slot Index", "platform.tray_index"), ("Node Index", "platform.host_id"),
                          ("Peer Type", "platform.peer_type"), ("Module Id", "platform.module_id")],
}


def q_report(gpus, layout="580", attached=None, bus_ids=None):
    """``nvidia-smi -q`` of these GPUs, cut to the sections that matter here but laid out as the driver
    does. ``layout`` 550 (keys to column 42, v1 platform names, Health with Bandwidth only) or 580
    (column 55, every health row). ``attached`` the count printed (default: the GPUs given)."""
    width = 42 if layout == "550" else 55

    def line(depth, key, value=None):
        text = " " * (4 * depth) + key
        return text if value is None else f"{text.ljust(width)}: {value}"

    version = "550.54.14" if layout == "550" else "580.95.05"
    out = ["==============NVSMI LOG==============", "", line(0, "Timestamp", "Fri Dec  4 09:14:02 2026"),
           line(0, "Driver Version", version), line(0, "CUDA Version", "12.4" if layout == "550" else "13.0"), "",
           line(0, "Attached GPUs", len(gpus) if attached is None else attached)]
    for index, record in enumerate(gpus):
        bus = (bus_ids or [])[index] if bus_ids else f"00000000:{0x18 + 0x11 * index:02X}:00.0"
        out += [f"GPU {bus}", line(1, "Product Name", "NVIDIA GPU"), line(1, "Persistence Mode", "Enabled"),
                line(1, "Platform Info")]
        for key, field in _Q_NAMES[f"Platform Info {layout}"]:
            out.append(line(2, key, record.get(field, "N/A") if field else "N/A"))
        out += [line(1, "Inforom Version"), line(2, "Image Version", "G520.0200.00.05"), line(1, "Fabric")]
        for key, field in _Q_NAMES["Fabric"]:
            out.append(line(2, key, record.get(field, "N/A")))
        out.append(line(2, "Health"))
        for key, field in _Q_NAMES["Health"][:(2 if layout == "550" else None)]:
            if layout == "550" and key == "Summary":
                continue
            out.append(line(3, key, record.get(field, "N/A")))
        out += [line(1, "Processes", "None"), line(1, "Capabilities"), line(2, "EGM", "disabled"), ""]
    return "\n".join(out) + "\n"


def unknown_field_answer(field):
    """What a driver prints (on stdout, exit 2) for a --query-gpu field it does not know."""
    return f'Field "{field}" is not a valid field to query.\n\n'


def write_fake_nvidia_smi(directory, gpus, driver="580", rc=0, layout=None):
    """An ``nvidia-smi`` executable in ``directory`` that answers any ``--query-gpu`` field list (a field its
    driver does not know: the driver's answer and exit 2), ``-q`` and ``--version``, from these GPUs, and
    records each call's arguments in ``calls.log`` beside it. Returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    spec = {"gpus": gpus, "known": list(KNOWN_FIELDS[driver]), "layout": layout or driver, "rc": rc}
    (directory / "gpus.json").write_text(json.dumps(spec))
    script = directory / "nvidia-smi"
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""\
        import json, sys
        sys.path.insert(0, {_here()!r})
        import nvidia_smi_shapes as shapes
        here = {str(directory)!r}
        with open(here + "/calls.log", "a") as log:
            log.write(" ".join(sys.argv[1:]) + "\\n")
        spec = json.load(open(here + "/gpus.json"))
        args = sys.argv[1:]
        if spec["rc"]:
            print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
            sys.exit(spec["rc"])
        if args == ["-q"]:
            sys.stdout.write(shapes.q_report(spec["gpus"], spec["layout"]))
            sys.exit(0)
        query = [a for a in args if a.startswith("--query-gpu=")]
        form = [a for a in args if a.startswith("--format=")]
        if not query or not form:
            print("Invalid combination of input arguments.")
            sys.exit(2)
        fields = query[0].split("=", 1)[1].split(",")
        for field in fields:
            if field not in spec["known"]:
                sys.stdout.write(shapes.unknown_field_answer(field))
                sys.exit(2)
        sys.stdout.write(shapes.csv(spec["gpus"], fields, header="noheader" not in form[0]))
        """))
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(script)


def _here():
    return os.path.dirname(os.path.abspath(__file__))


def node_fabric(node, text, require_domain=False):
    """The parser and the decision on one node's answer, as the source runs them: its facts, or the error."""
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import _nvidia_smi
    records, attached = _nvidia_smi.parse(node, text)
    facts = _nvidia_smi.summarize(node, records, attached)
    _nvidia_smi.decide(node, facts, require_domain)
    return facts


def node_domain(node, text, require_domain=False):
    """The multi-node NVLink domain the decision gives one node's answer (None without one)."""
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.aifactory.topology.plugins.module_utils._providers import _nvidia_smi
    records, attached = _nvidia_smi.parse(node, text)
    return _nvidia_smi.decide(node, _nvidia_smi.summarize(node, records, attached), require_domain)


# One node's answer that quarantines it as unhealthy: its GPUs are still registering with the fabric.
UNHEALTHY_TRAY = f"{ZERO_UUID}, 0, In Progress, N/A\n"
