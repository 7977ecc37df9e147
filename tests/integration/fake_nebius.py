"""The Nebius compute API's messages as the nebius tests' fake gRPC server answers them.

Shared by ``test_provider_nebius.py`` and ``test_provider_errors.py`` (a test module never imports
another one).
"""

from __future__ import annotations

from nebius.api.nebius.common.v1 import ResourceMetadata
from nebius.api.nebius.compute.v1 import (
    Instance,
    InstanceSpec,
    InstanceStatus,
    InstanceStatusInfinibandTopologyPath,
    ListInstancesResponse,
)


METHOD = "/nebius.compute.v1.InstanceService/List"


PROJECT = "project-e00abc"


def instance(instance_id, path=None, nvl_group="", state=4):
    status = InstanceStatus(state=state, reconciling=True, reservation_id="res-1")
    if path is not None:
        status = InstanceStatus(state=state, reconciling=True, reservation_id="res-1",
                                infiniband_topology_path=InstanceStatusInfinibandTopologyPath(path=path))
    return Instance(metadata=ResourceMetadata(id=instance_id, parent_id=PROJECT, name=f"vm-{instance_id}",
                                              resource_version=7),
                    spec=InstanceSpec(hostname=f"host-{instance_id[-2:]}", stopped=False,
                                      nvl_instance_group_id=nvl_group),
                    status=status)


def page(items, token=""):
    return ListInstancesResponse(items=items, next_page_token=token).SerializeToString()
