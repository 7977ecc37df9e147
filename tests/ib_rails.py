"""ibnetdiscover text of a rail-optimised fabric, for the cabling comparison's tests.

Scalable unit ``s`` (1-based) has one leaf per rail, ``SU<s>-R<r>``; HCA ``mlx5_<r>`` of each of its nodes
``gpu-<s><n>`` (or ``host_name(s, n)``) is cabled to rail r's leaf, every leaf to one spine. ``cables`` overrides where an HCA goes:
``{("gpu-12", 0): (1, 1)}`` puts gpu-12's mlx5_0 on SU1-R1. The text is what ibnetdiscover prints (records,
port lines with the peer's description), in the form the collection's own fixtures use.
"""

from __future__ import annotations


def _guid(kind, *numbers):
    return f"{kind:02x}" + "".join(f"{number:02x}" for number in numbers).rjust(14, "0")


def rail_fabric(units=2, nodes=4, rails=2, cables=None, host_name=None):
    cables = cables or {}
    host_name = host_name or (lambda unit, node: f"gpu-{unit}{node}")
    spine = _guid(0x0c, 0xff)
    leaves = {(s, r): _guid(0x0c, s, r) for s in range(1, units + 1) for r in range(rails)}
    leaf_name = {key: f"SU{key[0]}-R{key[1]}" for key in leaves}
    hcas = {}  # hca guid -> (description, leaf key)
    for s in range(1, units + 1):
        for n in range(1, nodes + 1):
            host = host_name(s, n)
            for r in range(rails):
                hcas[_guid(0x94, s, n, r)] = (f"{host} mlx5_{r}", cables.get((host, r), (s, r)))
    on_leaf = {key: [] for key in leaves}
    for guid, (_description, key) in hcas.items():
        on_leaf[key].append(guid)
    out = ["#", "# Topology file: generated for the cabling tests", "#", ""]
    out += ["vendid=0x2c9", "devid=0xd2f0", f"sysimgguid=0x{spine}", f"switchguid=0x{spine}({spine})",
            f'Switch\t65 "S-{spine}"\t\t# "MF0;SPINE-1:MQM9790/U1" enhanced port 0 lid 1 lmc 0']
    for port, key in enumerate(sorted(leaves), start=1):
        out.append(f'[{port}]\t"S-{leaves[key]}"[40]\t\t# "MF0;{leaf_name[key]}:MQM9790/U1" lid 2 4xNDR')
    out.append("")
    for spine_port, key in enumerate(sorted(leaves), start=1):
        guid = leaves[key]
        out += ["vendid=0x2c9", "devid=0xd2f0", f"sysimgguid=0x{guid}", f"switchguid=0x{guid}({guid})",
                f'Switch\t65 "S-{guid}"\t\t# "MF0;{leaf_name[key]}:MQM9790/U1" enhanced port 0 lid 2 lmc 0']
        for port, hca in enumerate(sorted(on_leaf[key]), start=1):
            out.append(f'[{port}]\t"H-{hca}"[1]({hca}) \t\t# "{hcas[hca][0]}" lid 9 4xNDR')
        out.append(f'[40]\t"S-{spine}"[{spine_port}]\t\t# "MF0;SPINE-1:MQM9790/U1" lid 1 4xNDR')
        out.append("")
    for hca, (description, key) in sorted(hcas.items()):
        port = sorted(on_leaf[key]).index(hca) + 1
        out += ["vendid=0x2c9", "devid=0x1021", f"sysimgguid=0x{hca}", f"caguid=0x{hca}",
                f'Ca\t1 "H-{hca}"\t\t# "{description}"',
                f'[1]({hca}) \t"S-{leaves[key]}"[{port}]\t\t# lid 9 lmc 0 "MF0;{leaf_name[key]}:MQM9790/U1" lid 2 4xNDR',
                ""]
    return "\n".join(out)
