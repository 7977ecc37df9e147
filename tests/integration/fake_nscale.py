"""The Nscale Radar fleet the nscale tests list, and its playbook case.

Shared by ``test_provider_nscale.py`` and ``test_provider_creds_playbook.py`` (a test module never imports
another one).
"""

from __future__ import annotations

from tests.integration.fake_clouds import NSCALE_TOKEN as TOKEN
from tests.integration.fake_clouds import nscale_offset_route as offset_route
from tests.integration.fake_clouds import nscale_params as params


# -- the -vvvv secret cases of test_provider_creds_playbook.py, and what they need --------------------

FLEET = [{"instance_id": f"inst-{n}", "network_node_path": ["core-a", f"spine-{n // 4}", f"leaf-{n // 2}"],
          "block_id": f"nvl-{n // 4}"} for n in range(7)] + [
    {"instance_id": "inst-bare", "network_node_path": [], "block_id": None}]


REQUESTED = [{"region": "glomfjord", "instances": {"inst-0": "n0", "inst-1": "n1", "inst-5": "n5",
                                                   "inst-bare": "cpu1", "inst-gone": "cpu2"}}]


def playbook_case(start_http, start_grpc):
    server = start_http(offset_route(FLEET))
    return params(server, REQUESTED), {"token": TOKEN}, [TOKEN], \
        lambda: server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
