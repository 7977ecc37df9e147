"""tools/slurm_testbed.log_complaints: what makes `check FILE` reject a topology file."""

from __future__ import annotations

from slurm_testbed import log_complaints

LOG = """\
[2026-12-01T00:50:27.001] slurmctld version 26.05.5 started on cluster test
[2026-12-01T00:50:27.263] error: High latency for 1000 calls to gettimeofday(): 1246 microseconds
[2026-12-01T00:50:27.300] warning: Invalid hostnames in block configuration: n99
[2026-12-01T00:50:27.400] error: Parsing error at unrecognized key: SwitchNam
[2026-12-01T00:50:27.500] Running as primary controller
"""


def test_configuration_complaints_count_and_a_busy_clock_does_not():
    assert log_complaints(LOG) == [
        "[2026-12-01T00:50:27.300] warning: Invalid hostnames in block configuration: n99",
        "[2026-12-01T00:50:27.400] error: Parsing error at unrecognized key: SwitchNam",
    ]
    assert log_complaints("[t] error: High latency for 1000 calls to gettimeofday(): 2000 microseconds\n") == []
