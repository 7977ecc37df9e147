"""nebius provider end to end against a local gRPC server serving nebius.compute.v1.InstanceService/List.

The server decodes the request and encodes its answers with the real protobuf library, from
message definitions that follow nebius/api's ``compute/v1/instance.proto``,
``instance_service.proto`` and ``common/v1/metadata.proto`` field numbers (plus fields the
provider must skip), so the provider's small wire-format codec is checked against protobuf
itself, and every request's ``authorization`` metadata is recorded.
"""

from __future__ import annotations

import grpc  # noqa: F401  # pylint: disable=unused-import  # a requirement: its absence fails, never skips
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.integration.fake_apis import (
    HANG,
    NO_WAIT,
    GrpcAbort,
    discover,
    placement,
    slurm_topology_run,
    topology_info_run,
)


METHOD = "/nebius.compute.v1.InstanceService/List"
TOKEN = "nebius-iam-token-c0ffee"
PROJECT = "project-e00abc"


def _messages():
    field = descriptor_pb2.FieldDescriptorProto
    string, int64, int32, boolean, message = (field.TYPE_STRING, field.TYPE_INT64, field.TYPE_INT32, field.TYPE_BOOL,
                                              field.TYPE_MESSAGE)
    proto = descriptor_pb2.FileDescriptorProto(name="fake_nebius_compute_v1.proto", package="fake", syntax="proto3")

    def define(name, *fields):
        descriptor = proto.message_type.add(name=name)
        for field_name, number, kind, *rest in fields:
            added = descriptor.field.add(name=field_name, number=number, type=kind,
                                         label=field.LABEL_REPEATED if "repeated" in rest else field.LABEL_OPTIONAL)
            if kind == message:
                added.type_name = f".fake.{rest[0]}"

    define("Timestamp", ("seconds", 1, int64), ("nanos", 2, int32))
    define("ResourceMetadata", ("id", 1, string), ("parent_id", 2, string), ("name", 3, string),
           ("resource_version", 4, int64), ("created_at", 5, message, "Timestamp"))
    define("InstanceSpec", ("service_account_id", 1, string), ("stopped", 13, boolean), ("hostname", 20, string),
           ("nvl_instance_group_id", 21, string))
    define("InstanceStatusInfinibandTopologyPath", ("path", 1, string, "repeated"))
    define("InstanceStatus", ("state", 1, int32), ("reconciling", 5, boolean),
           ("infiniband_topology_path", 10, message, "InstanceStatusInfinibandTopologyPath"),
           ("reservation_id", 12, string))
    define("Instance", ("metadata", 1, message, "ResourceMetadata"), ("spec", 2, message, "InstanceSpec"),
           ("status", 3, message, "InstanceStatus"))
    define("ListInstancesRequest", ("parent_id", 1, string), ("page_size", 2, int64), ("page_token", 3, string))
    define("ListInstancesResponse", ("items", 1, message, "Instance", "repeated"), ("next_page_token", 2, string))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"fake.{name}"))
            for name in ("Instance", "ListInstancesRequest", "ListInstancesResponse")}


MESSAGES = _messages()


def instance(instance_id, path=None, nvl_group="", state=4):
    found = MESSAGES["Instance"]()
    found.metadata.id = instance_id
    found.metadata.parent_id = PROJECT
    found.metadata.name = f"vm-{instance_id}"
    found.metadata.resource_version = 7
    found.metadata.created_at.seconds = 1_780_000_000
    found.spec.hostname = f"host-{instance_id[-2:]}"
    found.spec.stopped = False
    found.spec.nvl_instance_group_id = nvl_group
    found.status.state = state
    found.status.reconciling = True
    found.status.reservation_id = "res-1"
    if path is not None:
        found.status.infiniband_topology_path.path.extend(path)
    return found


def page(items, token=""):
    return MESSAGES["ListInstancesResponse"](items=items, next_page_token=token).SerializeToString()


def decoded_requests(server):
    return [MESSAGES["ListInstancesRequest"].FromString(request) for _method, request, _meta in server.requests]


def paged_list(request, metadata):
    asked = MESSAGES["ListInstancesRequest"].FromString(request)
    if not asked.page_token:
        return page([instance("computeinstance-a1", ["core-1", "spine-1", "leaf-1"], "nvlgroup-1"),
                     instance("computeinstance-a2", ["core-1", "spine-1", "leaf-2"], "nvlgroup-1"),
                     instance("computeinstance-a3")], token="next-1")  # no infiniband_topology_path
    return page([instance("computeinstance-a4", ["core-1", "spine-2"]),  # 2 entries: ignored
                 instance("computeinstance-zz", ["x", "y", "z"])])  # not requested


REQUESTED = [{"instances": {"computeinstance-a1": "h100-01", "computeinstance-a2": "h100-02",
                            "computeinstance-a3": "h100-03", "computeinstance-a4": "h100-04",
                            "computeinstance-a5": "h100-05"}}]


def params(server, **extra):
    return dict(NO_WAIT, instances=REQUESTED, project_id=PROJECT, endpoint=server.endpoint, tls=False, **extra)


def test_pages_root_first_paths_nvl_group_domains_and_missing_instances(fake_grpc, monkeypatch):
    server = fake_grpc({METHOD: paged_list})
    result = topology_info_run(monkeypatch, "nebius", params(server, page_size=3), {"iam_token": TOKEN})
    assert not result["failed"], result
    asked = decoded_requests(server)
    assert [(r.parent_id, r.page_size, r.page_token) for r in asked] == [(PROJECT, 3, ""), (PROJECT, 3, "next-1")]
    assert all(meta["authorization"] == f"Bearer {TOKEN}" for _m, _r, meta in server.requests)
    assert result["summary"]["nodes_without_switch"] == 3
    assert any("without exactly 3 switches are ignored for: h100-04 (2)" in w for w in result["warnings"])
    assert any(w.endswith("no-topology): h100-[03-05]") for w in result["warnings"])
    topology, _warnings = discover("nebius", params(server), {"iam_token": TOKEN})
    assert placement(topology, "h100-01") == (["leaf-1", "spine-1", "core-1"], "nvlgroup-1", None)
    assert placement(topology, "h100-02") == (["leaf-2", "spine-1", "core-1"], "nvlgroup-1", None)


def test_a_repeated_page_token_stops_with_an_error(fake_grpc):
    looping = page([instance("computeinstance-a1", ["a", "b", "c"])], token="loop")
    server = fake_grpc({METHOD: lambda request, metadata: looping})
    with pytest.raises(Exception, match="page token 'loop' twice"):
        discover("nebius", params(server), {"iam_token": TOKEN})


def test_resource_exhausted_honours_pushback_then_unavailable_backs_off(fake_grpc, sleeps):
    answers = [GrpcAbort("RESOURCE_EXHAUSTED", "quota", (("grpc-retry-pushback-ms", "1500"),)),
               GrpcAbort("UNAVAILABLE", "try later")]

    def flaky(request, metadata):
        if answers:
            raise answers.pop(0)
        return page([instance("computeinstance-a1", ["a", "b", "c"], "g")])

    server = fake_grpc({METHOD: flaky})
    topology, _warnings = discover("nebius", dict(params(server), retry_backoff=0.25, retry_after_max=60), {"iam_token": TOKEN})
    assert sleeps == [1.5, 0.5] and len(server.requests) == 3
    assert topology.nodes["h100-01"].domain == "g"


def test_unavailable_retries_are_bounded(fake_grpc, sleeps):
    def down(request, metadata):
        raise GrpcAbort("UNAVAILABLE", "maintenance")

    server = fake_grpc({METHOD: down})
    with pytest.raises(Exception, match="gRPC UNAVAILABLE after 3 attempts"):
        discover("nebius", dict(params(server), retry_attempts=3), {"iam_token": TOKEN})
    assert len(server.requests) == 3


def test_permission_denied_is_not_retried_and_says_why(fake_grpc):
    def denied(request, metadata):
        raise GrpcAbort("PERMISSION_DENIED", "no access to project")

    server = fake_grpc({METHOD: denied})
    with pytest.raises(Exception, match="PERMISSION_DENIED: no access to project.*compute.instance.list"):
        discover("nebius", params(server), {"iam_token": TOKEN})
    assert len(server.requests) == 1


def test_deadlines_are_retried_then_reported(fake_grpc, sleeps):
    server = fake_grpc({METHOD: lambda request, metadata: HANG})
    with pytest.raises(Exception, match="gRPC DEADLINE_EXCEEDED after 2 attempts"):
        discover("nebius", dict(params(server), timeout=0.3, retry_attempts=2), {"iam_token": TOKEN})
    assert len(server.requests) == 2


def test_a_malformed_body_fails_the_module_and_writes_nothing(fake_grpc, monkeypatch, tmp_path):
    server = fake_grpc({METHOD: lambda request, metadata: b"\x0a\xff\xff\xff\x0f<html>"})
    dest = tmp_path / "topology.conf"
    result = slurm_topology_run(monkeypatch, "nebius", params(server), dest, {"iam_token": TOKEN})
    assert result["failed"] and "is not a ListInstancesResponse" in result["msg"] and not dest.exists()


def test_token_from_the_environment(fake_grpc, monkeypatch):
    monkeypatch.setenv("NEBIUS_IAM_TOKEN", "env-iam-token")
    server = fake_grpc({METHOD: lambda request, metadata: page([])})
    discover("nebius", params(server))
    assert server.requests[0][2]["authorization"] == "Bearer env-iam-token"


def playbook_case(start_http, start_grpc):
    server = start_grpc({METHOD: lambda request, metadata: page([instance("computeinstance-a1", ["a", "b", "c"])])})
    return params(server), {"iam_token": TOKEN}, [TOKEN], \
        lambda: server.requests[0][2]["authorization"] == f"Bearer {TOKEN}"
