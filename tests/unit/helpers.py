"""Helpers that several unit test modules share (a test module never imports another one)."""

from __future__ import annotations

import time


def gone_or_zombie(pid, bound=30.0):
    """Whether ``pid`` is dead, waiting up to ``bound`` seconds: SIGKILL is delivered asynchronously,
    and a killed grandchild is not ours to wait for."""
    deadline = time.monotonic() + bound
    while True:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


class ListedNodes:
    """Stands in for K8sClient.list in these parsing tests: each node is (name, labels, annotations) or a
    whole Node object (a dict, with its status)."""

    def __init__(self, *nodes):
        self.nodes = nodes
        self.selectors = []

    def list(self, path, label_selector=None, metadata_only=False):
        assert path == "/api/v1/nodes"
        self.selectors.append(label_selector)
        self.metadata_only = metadata_only
        return [item if isinstance(item, dict) else
                {"metadata": {"name": item[0], "labels": item[1], "annotations": item[2]}} for item in self.nodes]


class ServedNodes(ListedNodes):
    """The caller's own connection, which the provider takes (``discover``'s ``k8s_client``)."""

    def serves(self, options, timeout):
        return True
