"""Fixtures for tests against a REAL Kubernetes control plane (tools/k8s_testbed.py).

* ``k8s`` (session): etcd + kube-apiserver on 127.0.0.1, started once per pytest run and stopped
  after it; a ``k8s_testbed.ControlPlane`` (``.kubeconfig``, ``.kubectl``, ``.user_kubeconfig()``,
  ``.create_nodes()``, ``.install_nfd_crds()``, ...; see the tool's docstring).
* ``k8s_scheduler``: the same control plane with the real kube-scheduler running.
* ``slurm_root`` (session): the built Debian sid root of the real slurmctld (tools/slurm_testbed.py),
  skipped loudly when the machine cannot host it.
* ``k8s_namespace``: a fresh namespace per test; its pods are deleted with grace period 0 after
  the test (without kube-controller-manager the namespace itself stays Terminating, harmlessly).

Mark tests ``@pytest.mark.k8s``. They are skipped, loudly, only when the binaries are not cached
and Go is missing; a failing build or start is an error, never a skip.

Fake cloud APIs on 127.0.0.1 (tests/integration/fake_apis.py):

* ``fake_http``: ``fake_http(route)`` starts a FakeHttpApi; every one is closed after the test.
* ``fake_grpc``: ``fake_grpc(handlers)`` starts a FakeGrpcApi; likewise.
* ``sleeps``: the delays the providers' retry policy asked for, recorded instead of slept.
"""

from __future__ import annotations

import time

import k8s_testbed  # tools/ is on sys.path (tests/conftest.py)
import pytest
import slurm_testbed

from tests.integration.fake_apis import FakeGrpcApi, FakeHttpApi, servers
from tests.integration.k8s_support import fresh_namespace


# The fixtures that start the Kubernetes test bed: a test that uses one is marked ``k8s`` here even
# if its file forgot to, so `make integration` (``-m "not k8s"``, run while the test bed still
# builds) never starts a control plane.
K8S_FIXTURES = frozenset({"k8s", "k8s_scheduler", "k8s_namespace"})


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by marker
def pytest_collection_modifyitems(items):
    for item in items:
        if K8S_FIXTURES.intersection(getattr(item, "fixturenames", ())) and not item.get_closest_marker("k8s"):
            item.add_marker(pytest.mark.k8s)


@pytest.fixture(scope="session")
def slurm_root():
    reason = slurm_testbed.unavailable_reason()
    if reason:
        pytest.skip(f"REAL SLURM TESTS SKIPPED: {reason}")
    return slurm_testbed.build()


@pytest.fixture
def fake_http():
    yield from servers(FakeHttpApi)


@pytest.fixture
def fake_grpc():
    yield from servers(FakeGrpcApi)


@pytest.fixture
def sleeps(monkeypatch):
    delays = []
    monkeypatch.setattr(time, "sleep", delays.append)
    return delays


@pytest.fixture(scope="session")
def k8s():
    reason = k8s_testbed.unavailable_reason()
    if reason:
        pytest.skip(f"REAL KUBERNETES TESTS SKIPPED: {reason}")
    with k8s_testbed.control_plane() as plane:
        yield plane


@pytest.fixture(scope="session")
def k8s_scheduler(k8s):
    k8s.start_scheduler()
    return k8s


@pytest.fixture
def k8s_namespace(k8s):
    with fresh_namespace(k8s) as name:
        yield name
