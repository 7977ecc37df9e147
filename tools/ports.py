# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Free ports on 127.0.0.1 for the test beds' servers (slurmctld, kube-apiserver, etcd, Kueue, webhooks)."""

from __future__ import annotations

import random
import socket

# Below Linux's ephemeral range (32768-60999 by default): a port the kernel hands out for port 0 is also
# the range every outgoing connection takes its local port from, so on a busy machine a connection could
# take it between this choice and the server's bind ("Address already in use": seen with slurmctld).
PORT_RANGE = (20000, 32000)


def free_port() -> int:
    """A port no one is bound to now, outside the ephemeral range, picked at random (concurrent runs differ)."""
    for port in random.sample(range(*PORT_RANGE), 200):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORT_RANGE[0]}-{PORT_RANGE[1]} after 200 tries")
