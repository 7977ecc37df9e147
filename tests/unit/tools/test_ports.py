"""free_port: a port nobody holds, outside the range the kernel gives outgoing connections."""

from __future__ import annotations

import socket

import ports  # tools/ is on sys.path (tests/conftest.py)


def _ephemeral_range():
    with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as handle:
        low, high = (int(value) for value in handle.read().split())
    return low, high


def test_a_free_port_is_outside_the_ephemeral_range_and_bindable():
    low, high = _ephemeral_range()
    port = ports.free_port()
    assert not low <= port <= high
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_a_port_someone_holds_is_never_chosen(monkeypatch):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        free = ports.free_port()
        monkeypatch.setattr(ports, "PORT_RANGE", (taken, taken + 2))
        monkeypatch.setattr(ports.random, "sample", lambda population, _count: [taken, *population[1:]])
        assert ports.free_port() == taken + 1
    assert free != taken
