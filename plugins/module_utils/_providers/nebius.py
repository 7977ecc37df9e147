# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nebius: ``nebius.compute.v1.InstanceService/List`` over gRPC (the Nebius API has no REST form).

``ListInstancesRequest{parent_id = project, page_size, page_token}`` pages through the project's
instances. Each ``Instance`` gives ``metadata.id`` (the instance id mapped to a node),
``spec.nvl_instance_group_id`` (the accelerator domain) and
``status.infiniband_topology_path.path``: exactly 3 switch ids, root first, or the instance has no
topology data (Topograph's rule). Only those fields are decoded, straight from the protobuf
wire format, so the module needs ``grpcio`` but no generated Nebius code.

params: ``instances`` (the region is optional: the project decides), ``project_id`` (else
``NEBIUS_PROJECT_ID``), ``endpoint`` (default ``compute.api.nebius.cloud:443``), ``tls``
(default true; false only for a plaintext test server). creds: ``iam_token`` (else
``NEBIUS_IAM_TOKEN``, as the Nebius CLI and SDKs read it).
"""

from __future__ import annotations

from ansible_collections.aifactory.topology.plugins.module_utils._base import input_file as _input_file
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import RetryableError, call_with_retries, paginate
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import RemoteAPIError, TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _cloud, _specs

try:
    import grpc

    HAS_GRPC = True
except ImportError:  # pragma: no cover - exercised only where grpcio is missing
    HAS_GRPC = False

NAME = "nebius"
METHOD = "/nebius.compute.v1.InstanceService/List"
DEFAULT_ENDPOINT = _specs.NEBIUS_ENDPOINT
DEFAULT_PAGE_SIZE = _specs.NEBIUS_PARAMS["page_size"]["default"]
PATH_LENGTH = 3
RETRY_CODES = ("UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "ABORTED")


def discover(params, creds, warn):
    if not HAS_GRPC:
        raise TopologyError("the nebius provider needs the Python library 'grpcio' on the host that runs it")
    _regions, placed = _cloud.placements(params, NAME, require_region=False)
    token = _cloud.secret(creds, "iam_token", env=("NEBIUS_IAM_TOKEN",), required_by=NAME)
    project = _cloud.setting(params, "project_id", env=("NEBIUS_PROJECT_ID",), required_by=NAME)
    size = _cloud.page_size(params, DEFAULT_PAGE_SIZE, warn)
    bad_paths = []
    with _channel(params) as channel:
        call = channel.unary_unary(METHOD)  # bytes in, bytes out: the codec is below
        for instance in paginate(lambda page: _page(call, params, token, project, size, page)):
            _place(placed, instance, bad_paths)
    if bad_paths:
        warn(f"InfiniBand topology paths without exactly {PATH_LENGTH} switches are ignored for: {', '.join(bad_paths)}")
    return placed.topology(warn)


def _channel(params):
    endpoint = _cloud.setting(params, "endpoint", DEFAULT_ENDPOINT)
    if not params["tls"]:
        return grpc.insecure_channel(endpoint)
    _verify, ca_bundle = _cloud.tls_settings(params)
    roots = None
    if ca_bundle:
        try:
            roots = _input_file.read_text(ca_bundle, "params.ca_bundle").encode()  # PEM
        except _input_file.InputFileError as exc:
            raise TopologyError(str(exc)) from None
    return grpc.secure_channel(endpoint, grpc.ssl_channel_credentials(root_certificates=roots))


def _page(call, params, token, project, size, page):
    settings = _cloud.client_settings(params)
    request = _string(1, project) + _varint_field(2, size) + (_string(3, page) if page else b"")
    what = f"Nebius {METHOD} (project {project})"

    def attempt():
        try:
            return call(request, timeout=settings["timeout"], metadata=(("authorization", f"Bearer {token}"),))
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            name = code.name if code is not None else "UNKNOWN"
            if name in RETRY_CODES:
                raise RetryableError(f"gRPC {name}", _pushback(exc)) from None
            hint = " (the caller needs a role that allows compute.instance.list, e.g. viewer)" if name in (
                "UNAUTHENTICATED", "PERMISSION_DENIED") else ""
            details = exc.details() if hasattr(exc, "details") else ""
            raise RemoteAPIError(f"{what}: gRPC {name}: {details}{hint}", name) from None

    response = call_with_retries(attempt, what, attempts=settings["attempts"], backoff=settings["backoff"],
                                 max_retry_after=settings["max_retry_after"], sleep=settings["sleep"])
    try:
        return _decode_list_response(response)
    except ValueError as exc:
        raise RemoteAPIError(f"{what}: the response is not a ListInstancesResponse: {exc}") from None


def _pushback(error):
    """gRPC's server pushback (``grpc-retry-pushback-ms`` trailer), the analogue of Retry-After."""
    try:
        for key, value in error.trailing_metadata() or ():
            if key == "grpc-retry-pushback-ms":
                return int(value) / 1000.0
    except (AttributeError, TypeError, ValueError):
        pass
    return None


def _place(placed, instance, bad_paths):
    instance_id = instance["id"]
    if not placed.wants(instance_id):
        return
    path = instance["path"]
    if path is None:
        return  # no infiniband_topology_path: no topology data
    if len(path) != PATH_LENGTH:
        bad_paths.append(f"{placed.requested[instance_id]} ({len(path)})")
        return
    placed.add(instance_id, list(reversed(path)), instance["nvl_group"])


# -- protobuf wire format: just the fields used -------------------------------------------

def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _varint_field(number, value):
    return _varint(number << 3) + _varint(value)


def _string(number, text):
    data = text.encode()
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _fields(data):
    """(field number, value) for each field; length-delimited values as bytes."""
    position, end = 0, len(data)
    while position < end:
        key, position = _read_varint(data, position)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, position = _read_varint(data, position)
        elif wire_type == 2:
            length, position = _read_varint(data, position)
            value = data[position:position + length]
            position += length
        elif wire_type in (1, 5):
            size = 8 if wire_type == 1 else 4
            value = data[position:position + size]
            position += size
        else:
            raise ValueError(f"unsupported wire type {wire_type} for field {number}")
        if position > end or number == 0:
            raise ValueError("truncated or corrupt message")
        yield number, value


def _read_varint(data, position):
    result = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, position


def _text(value):
    if not isinstance(value, bytes):
        raise ValueError("a string field has the wrong wire type")
    return value.decode("utf-8")


def _message(value):
    if not isinstance(value, bytes):
        raise ValueError("a message field has the wrong wire type")
    return value


def _decode_list_response(data):
    """ListInstancesResponse{repeated Instance items = 1; string next_page_token = 2}."""
    instances, token = [], None
    for number, value in _fields(data):
        if number == 1:
            instances.append(_decode_instance(_message(value)))
        elif number == 2:
            token = _text(value)
    return instances, token


def _decode_instance(data):
    """Instance{metadata = 1 {id = 1}, spec = 2 {nvl_instance_group_id = 21},
    status = 3 {infiniband_topology_path = 10 {repeated path = 1}}}."""
    instance = {"id": None, "nvl_group": None, "path": None}
    for number, value in _fields(data):
        if number == 1:
            for field, inner in _fields(_message(value)):
                if field == 1:
                    instance["id"] = _text(inner)
        elif number == 2:
            for field, inner in _fields(_message(value)):
                if field == 21:
                    instance["nvl_group"] = _text(inner) or None
        elif number == 3:
            for field, inner in _fields(_message(value)):
                if field == 10:
                    instance["path"] = [_text(hop) for key, hop in _fields(_message(inner)) if key == 1]
    if not instance["id"]:
        raise ValueError("an instance without metadata.id")
    return instance
