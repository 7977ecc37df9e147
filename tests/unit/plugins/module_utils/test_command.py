"""_command: local commands bounded in time (children holding the pipes included) and output."""

from __future__ import annotations

import sys

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base import command as _command
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import CommandError
from tests.unit.helpers import gone_or_zombie


def test_a_command_gives_its_exit_code_and_output():
    rc, out, err = _command.run_text([sys.executable, "-c", "import sys; print('ok'); sys.stderr.write('e'); sys.exit(3)"])
    assert (rc, out, err) == (3, "ok\n", "e")


def test_a_failing_command_is_an_error_with_its_stderr():
    with pytest.raises(CommandError, match=r" -c .*import sys.* failed \(exit 2\): no partition gpu"):
        _command.run_checked([sys.executable, "-c", "import sys; sys.stderr.write('no partition gpu'); sys.exit(2)"])


def test_a_missing_command_is_an_error_naming_it():
    with pytest.raises(CommandError, match="cannot run /no/such/scontrol show nodes: No such file"):
        _command.run(["/no/such/scontrol", "show", "nodes"])


def test_the_deadline_covers_a_child_that_holds_the_pipes(tmp_path):
    # A wrapper that exits at once while its child keeps stdout open (ssh, a shell script).
    pidfile = tmp_path / "child.pid"
    wrapper = ["/bin/sh", "-c", f"sleep 300 & echo $! > {pidfile}; exit 0"]
    with pytest.raises(CommandError, match="did not finish within 1 s; it was killed with every process it started"):
        _command.run(wrapper, timeout=1)
    assert gone_or_zombie(int(pidfile.read_text()))


def test_a_command_that_never_ends_is_killed():
    with pytest.raises(CommandError, match="did not finish within 0.5 s"):
        _command.run([sys.executable, "-c", "import time; time.sleep(300)"], timeout=0.5)


def test_output_beyond_the_limit_stops_the_command():
    with pytest.raises(CommandError, match="printed more than 1000 bytes; it was killed"):
        _command.run([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 4096)"], max_output=1000)


def test_output_that_is_not_utf8_is_an_error_naming_the_byte():
    with pytest.raises(CommandError, match=r"printed output that is not UTF-8 \(byte 3\)"):
        _command.run_text([sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'abc\\xff')"])


def test_a_long_argument_is_clipped_in_messages():
    with pytest.raises(CommandError) as info:
        _command.run(["/no/such/tool", "x" * 5000])
    assert len(str(info.value)) < 200


def test_nothing_is_left_running_after_success():
    rc, out, _err = _command.run_text([sys.executable, "-c", "import os; print(os.getpid())"])
    assert rc == 0 and gone_or_zombie(int(out))
