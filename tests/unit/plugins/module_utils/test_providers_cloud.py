"""The cloud providers' shared parts and codecs, one function at a time (the APIs: tests/integration)."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import NodeDataError, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _cloud, nebius, oci, validate

INSTANCES = [{"region": "r", "instances": {"i-1": "n1"}}]


def test_instances_take_topographs_request_form_and_reject_ambiguity():
    regions = _cloud.requested_instances({"instances": [{"region": "r1", "instances": {"a": "n1", 7: "n2"}}]}, "aws")
    assert regions == [("r1", {"a": "n1", "7": "n2"})]
    cases = {
        "needs params.instances: a list of": {},
        r"params.instances\[0\].region is required": {"instances": [{"instances": {"a": "n1"}}]},
        r"params.instances\[1\].instances must be a non-empty mapping": {
            "instances": [{"region": "r", "instances": {"a": "n1"}}, {"region": "r", "instances": []}]},
        r"instance 'a' is listed twice: params.instances\[0\] and params.instances\[1\]": {
            "instances": [{"region": "r", "instances": {"a": "n1"}}, {"region": "s", "instances": {"a": "n2"}}]},
        "node 'n1' is mapped from two instances: 'a' and 'b'": {
            "instances": [{"region": "r", "instances": {"a": "n1", "b": "n1"}}]},
        r"params.instances\[0\].instances\['a'\]: the node name must be a non-empty string": {
            "instances": [{"region": "r", "instances": {"a": ""}}]},
    }
    for message, params in cases.items():
        with pytest.raises(TopologyError, match=message):
            _cloud.requested_instances(params, "aws")
    assert _cloud.requested_instances({"instances": [{"instances": {"a": "n"}}]}, "nebius", require_region=False)


def test_placements_trim_tiers_skip_empty_ids_and_keep_missing_nodes():
    placed = _cloud.Placements("x", {"a": "n1", "b": "n2", "c": "n3"}, trim_tiers=1)
    assert placed.add("a", ["leaf", "", "spine", "core"], "d1", "d1.r1")
    assert not placed.add("zz", ["leaf"])  # not requested
    assert placed.add("b", ["leaf2", "spine"], None, "ignored-without-domain")
    warnings = []
    topo = placed.topology(warnings.append)
    assert {sid: sw.parent for sid, sw in topo.switches.items()} == {"leaf": "spine", "spine": None, "leaf2": None}
    assert (topo.nodes["n1"].domain, topo.nodes["n1"].sub_domain) == ("d1", "d1.r1")
    assert topo.nodes["n2"].sub_domain is None and topo.nodes["n3"].switch is None
    assert warnings == ["1 of 3 requested instances have no topology data in the x API; they have no switch "
                        "(the tree topology puts them under no-topology): n3"]


def test_an_instance_reported_twice_differently_quarantines_its_node():
    placed = _cloud.Placements("x", {"a": "n1", "b": "n2"})
    placed.add("a", ["l1", "s"])
    placed.add("a", ["l1", "s"])  # the same record again is harmless
    placed.add("b", ["l1", "s"])
    placed.add("a", ["l2", "s"])
    placed.add("a", ["l1", "s"])  # once refused, it stays refused
    topo = placed.topology(print)
    assert list(topo.nodes) == ["n2"] and topo.quarantined["n1"].source == "x"
    assert "instance 'a' twice with different topology" in topo.quarantined["n1"].reason


def test_a_malformed_record_or_an_id_that_is_no_name_quarantines_only_that_instance():
    placed = _cloud.Placements("x", {"a": "n1", "b": "n2", "c": "n3"})
    with placed.instance("a"):
        raise NodeDataError("instance 'a': networkPath must be a list")
    with placed.instance("z"):  # not requested: ignored, as the API's other instances are
        raise NodeDataError("instance 'z': bad")
    placed.add("b", ["leaf 1"])
    placed.add("c", ["l1"], domain="d,1")
    placed.add("d", ["whatever"])
    with pytest.raises(TopologyError, match=r"every node was quarantined \(3\)"):
        placed.topology(print).validate()
    topo = placed.topology(print)
    assert topo.quarantined["n1"].reason == "instance 'a': networkPath must be a list"
    assert topo.quarantined["n2"].reason.startswith("the x API's tier 0 of instance 'b': 'leaf 1' contains white space")
    assert topo.quarantined["n3"].reason.startswith("the x API's domain of instance 'c': 'd,1' contains ','")


def test_settings_validate_and_never_show_secret_values(monkeypatch):
    warnings = []
    assert _cloud.page_size({"page_size": 0}, 100, warnings.append) == 100 and "not positive" in warnings[0]
    assert _cloud.page_size({"page_size": 900}, 500, warnings.append, maximum=500) == 500
    params, _creds = validate("aws", {"instances": INSTANCES, "retry_attempts": 0})
    with pytest.raises(TopologyError, match=r"params.retry_attempts must be at least 1, got 0"):
        _cloud.client_settings(params)
    monkeypatch.delenv("FIRST", raising=False)
    monkeypatch.setenv("SECOND", "from-env")
    assert _cloud.secret({}, "token", env=("FIRST", "SECOND")) == "from-env"
    with pytest.raises(TopologyError, match=r"needs creds.token \(or the environment variable A\)"):
        _cloud.secret({}, "token", env=("A",), required_by="lambda")


class _Prepared:
    def __init__(self, method, url, body=None):
        self.method, self.url, self.body, self.headers = method, url, body, {}


def test_oci_signs_bodies_with_their_content_headers():
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    signer = oci.Signer("t", "u", "f", key)
    request = signer(_Prepared("POST", "https://iaas.r.example/20160918/x?a=1", b'{"k": 1}'))
    header = request.headers["Authorization"]
    names = re.search(r'headers="([^"]+)"', header).group(1).split()
    assert names == ["date", "(request-target)", "host", "content-length", "content-type", "x-content-sha256"]
    assert request.headers["x-content-sha256"] == base64.b64encode(hashlib.sha256(b'{"k": 1}').digest()).decode()
    text = "\n".join([f"date: {request.headers['date']}", "(request-target): post /20160918/x?a=1",
                      "host: iaas.r.example", "content-length: 8", "content-type: application/json",
                      f"x-content-sha256: {request.headers['x-content-sha256']}"])
    signature = base64.b64decode(re.search(r'signature="([^"]+)"', header).group(1))
    key.public_key().verify(signature, text.encode(), padding.PKCS1v15(), hashes.SHA256())
    assert 'keyId="t/u/f"' in header


def test_nebius_codec_reads_what_it_writes_and_rejects_truncation():
    metadata = nebius._string(1, "ci-1")
    status_path = b"".join(nebius._string(1, hop) for hop in ("c", "s", "l"))
    body = (_message(1, metadata) + _message(2, nebius._string(21, "grp") + nebius._varint_field(13, 1))
            + _message(3, nebius._varint_field(1, 4) + _message(10, status_path)))
    response = _message(1, body) + nebius._string(2, "tok")
    assert nebius._decode_list_response(response) == ([{"id": "ci-1", "nvl_group": "grp", "path": ["c", "s", "l"]}],
                                                      "tok")
    assert nebius._decode_list_response(b"") == ([], None)
    for broken in (response[:-1], b"\x0a\xff", b"\x0a\x02\x08"):
        with pytest.raises(ValueError):
            nebius._decode_list_response(broken)
    assert nebius._varint(300) == b"\xac\x02"


def _message(number, payload):
    return nebius._varint(number << 3 | 2) + nebius._varint(len(payload)) + payload
