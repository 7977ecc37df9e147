"""CPU time per test: ``--cpu-durations=N`` lists the N tests that used the most CPU.

pytest's ``--durations`` gives wall time, which on a loaded 2-core machine mostly says how busy the
machine was. What a test costs the suite is the CPU its processes use: pytest's own, plus every child
process it ran and waited for (ansible-playbook, its workers and their modules; slurmctld in the
chroot). That is ``getrusage`` of the process and of its waited-for children, read before and after
each test's setup, call and teardown.

Not counted: processes nobody waited for yet (a control plane a session fixture keeps running is
counted in the test whose teardown reaps it) and containers (podman's are not our children).
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass


def cpu_seconds():
    """User plus system CPU seconds of this process and of its waited-for children."""
    return sum(usage.ru_utime + usage.ru_stime
               for usage in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)))


@dataclass(frozen=True)
class CpuCost:
    nodeid: str
    cpu: float
    wall: float


class Stopwatch:
    """Started when made; ``cost(nodeid)`` is the CPU and wall time since then."""

    def __init__(self, clock=time.monotonic, cpu=cpu_seconds):
        self._clock, self._cpu = clock, cpu
        self._wall, self._cpu_start = clock(), cpu()

    def cost(self, nodeid):
        return CpuCost(nodeid, self._cpu() - self._cpu_start, self._clock() - self._wall)


def report(costs, count):
    """The lines of the terminal summary: the ``count`` costliest tests by CPU, then the total."""
    costs = list(costs)
    if not costs or count <= 0:
        return []
    total = sum(cost.cpu for cost in costs)
    costliest = sorted(costs, key=lambda cost: (-cost.cpu, cost.nodeid))[:count]
    lines = [f"{cost.cpu:8.2f}s cpu {cost.wall:8.2f}s wall  {cost.nodeid}" for cost in costliest]
    return lines + [f"{len(costs)} tests used {total:.1f} CPU seconds; the {len(costliest)} above "
                    f"{sum(cost.cpu for cost in costliest):.1f}"]
