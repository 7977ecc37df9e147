"""topology_metrics against a user who can write node_exporter's textfile directory, and against counts
that are no counts.

The module runs as root and writes into a directory other users may write. A link there is refused,
never followed; a FIFO is refused without a blocking read; a previous file that is not one this module
wrote (another owner, a hard link, too big, not UTF-8, not its format) is a warning, is read at most
64 KiB + 1 bytes, is never shown in the diff, and is replaced by a rename that leaves whatever it
pointed at untouched. Names must match whole; counts are whole numbers from 0 to 2**53.
"""

from __future__ import annotations

import os
import stat
import tracemalloc

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._engines import metrics as _metrics
from ansible_collections.aifactory.topology.plugins.modules import topology_metrics

from ..plugins.modules.module_runner import run_module

TOKEN = "s3cr3t-token-do-not-print\n"
SLURM = {"changed": True, "summary": {"format": "topology.conf", "nodes": 54, "blocks": 4, "placeholders": []}}


@pytest.fixture
def run(monkeypatch):
    def runner(args, **kwargs):
        return run_module(topology_metrics, args, monkeypatch=monkeypatch, **kwargs)
    return runner


@pytest.fixture
def textfiles(tmp_path):
    """(the textfile directory, the .prom path of target slurm, a 0600 token file outside the directory)."""
    directory = tmp_path / "textfile"
    directory.mkdir()
    token = tmp_path / "token"
    token.write_text(TOKEN)
    os.chmod(token, 0o600)
    return directory, directory / "aifactory_topology_slurm.prom", token


def _args(directory, **extra):
    return dict({"directory": str(directory), "target": "slurm", "results": [SLURM]}, **extra)


def _warning(result):
    (warning,) = [text for text in result["warnings"] if text.startswith("the previous metrics file")]
    return warning


def test_a_link_at_the_textfile_is_refused_and_its_target_neither_written_nor_shown(run, textfiles):
    directory, prom, token = textfiles
    prom.symlink_to(token)
    for check_mode in (True, False):
        result = run(_args(directory), check_mode=check_mode, diff=True)
        assert result["failed"] and result["msg"] == (f"{prom} is a symbolic link; links are not followed there (a "
                                                      "user who can write the directory could point it at any "
                                                      "file), so it is not replaced and nothing was written")
        assert "s3cr3t" not in str(result)
    assert token.read_text() == TOKEN and stat.S_IMODE(token.stat().st_mode) == 0o600
    assert prom.is_symlink() and sorted(p.name for p in directory.iterdir()) == [prom.name]


def test_a_fifo_at_the_textfile_is_refused_without_blocking(run, textfiles):
    directory, prom, _token = textfiles
    os.mkfifo(prom)
    result = run(_args(directory))
    assert result["failed"] and result["msg"] == f"{prom} is a FIFO; only a regular file is ever replaced"
    assert stat.S_ISFIFO(os.lstat(prom).st_mode)


def test_a_hard_link_to_another_file_is_replaced_never_shown_and_its_target_untouched(run, textfiles):
    directory, prom, token = textfiles
    os.link(token, prom)
    dry = run(_args(directory), check_mode=True, diff=True)
    assert not dry["failed"] and "s3cr3t" not in str(dry)
    assert dry["diff"]["before"] == "" and dry["diff"]["before_header"] == (
        f"{prom} (its content is not shown: it has 2 hard links (a file this module writes has one))")
    assert _warning(dry) == (f"the previous metrics file {prom} has 2 hard links (a file this module writes has one): "
                             "it is neither read nor shown, and it is replaced; the last success time and the counts "
                             "start again")
    result = run(_args(directory), diff=True)
    assert not result["failed"] and "s3cr3t" not in str(result)
    assert token.read_text() == TOKEN and token.stat().st_nlink == 1 and stat.S_IMODE(token.stat().st_mode) == 0o600
    assert prom.stat().st_ino != token.stat().st_ino and "aifactory_topology_nodes" in prom.read_text()


def test_a_previous_file_of_another_owner_is_replaced_unread(run, textfiles):
    directory, prom, _token = textfiles
    if os.geteuid() != 0:
        pytest.skip("a file owned by another user needs root to make (chown)")
    prom.write_text('aifactory_topology_consecutive_failures{target="slurm"} 41.0\n')
    os.chown(prom, 65534, 65534)
    result = run(_args(directory, failed=True))
    assert _warning(result).startswith(f"the previous metrics file {prom} is owned by uid 65534, not by the user "
                                       "running the task (uid 0)")
    assert result["metrics"]["aifactory_topology_consecutive_failures"] == 1  # 41 was not ours to count on
    assert prom.stat().st_uid == 0


def test_a_previous_file_in_another_format_is_replaced_and_never_shown(run, textfiles):
    directory, prom, _token = textfiles
    first = run(_args(directory))
    ours = prom.read_text()
    shown = run(_args(directory), check_mode=True, diff=True)
    assert shown["diff"]["before"] == ours and shown["warnings"] == []  # our own file is shown
    prom.write_text(ours + f"# {TOKEN}")
    result = run(_args(directory), check_mode=True, diff=True)
    assert result["diff"]["before"] == "" and "s3cr3t" not in str(result)
    assert _warning(result).startswith(f"the previous metrics file {prom} is not a file this module wrote for "
                                       f"target slurm (line {ours.count(chr(10)) + 1})")
    assert first["metrics"]["aifactory_topology_nodes"] == 54


@pytest.mark.parametrize("line, why", [
    ('aifactory_topology_nodes{target="kubernetes"} 5.0', ""),
    ('aifactory_topology_nodes{target="slurm"} -5.0', ""),
    ('aifactory_topology_nodes{target="slurm"} 1e+400', ": a value beyond 2**53"),
    ('aifactory_topology_nodes{target="slurm"} 5.0\raifactory_topology_blocks{target="slurm"} 1.0', ""),
    ("other_metric 1.0", ""),
])
def test_a_previous_line_this_module_never_writes_makes_the_file_not_ours(line, why):
    assert _metrics.previous(line + "\n", "slurm") == (
        {}, f"is not a file this module wrote for target slurm (line 1{why})")


def test_a_300_mb_previous_file_is_read_only_up_to_the_bound(run, textfiles):
    directory, prom, _token = textfiles
    with open(prom, "wb") as handle:
        handle.truncate(300 << 20)  # sparse: 300 MB to read, nothing on disk
    tracemalloc.start()
    try:
        result = run(_args(directory))
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not result["failed"] and _warning(result).startswith(
        f"the previous metrics file {prom} holds more than 65536 bytes, more than this module writes:")
    assert peak < 8 << 20, peak
    assert prom.stat().st_size < 65536


def test_a_non_utf8_previous_file_is_a_warning_and_replaced(run, textfiles):
    directory, prom, _token = textfiles
    prom.write_bytes(b'aifactory_topology_nodes{target="slurm"} 5.0\n\xff\xfe\n')
    result = run(_args(directory))
    assert not result["failed"] and _warning(result).startswith(
        f"the previous metrics file {prom} is not UTF-8 text (byte 45):")
    again = run(_args(directory, failed=True))
    assert not again["failed"] and again["warnings"] == []
    assert again["metrics"]["aifactory_topology_nodes"] == 54  # read back: the file is ours now


@pytest.mark.parametrize("target", ["slurm\n", "\nslurm", "slurm\r", "sl urm"])
def test_a_target_must_match_whole(run, textfiles, target):
    directory, _prom, _token = textfiles
    result = run(_args(directory, target=target))
    assert result["failed"] and result["msg"].startswith("target must be a lower-case name")
    assert list(directory.iterdir()) == []


@pytest.mark.parametrize("args, field, shown", [
    ({"results": [{"summary": {"nodes": 10 ** 400}}]}, "results[0].summary.nodes", "1000000000"),
    ({"results": [{}, {"summary": {"nodes_in_topology": -3}}]}, "results[1].summary.nodes_in_topology", "-3"),
    ({"results": [{"summary": {"blocks": -1}}]}, "results[0].summary.blocks", "-1"),
    ({"results": [{"summary": {"nodes": 1, "quarantined": 2 ** 53 + 1}}]}, "results[0].summary.quarantined",
     "9007199254740993"),
    ({"nodes": 2 ** 53 + 1}, "nodes", "9007199254740993"),
    ({"placeholders": -1}, "placeholders", "-1"),
])
def test_a_count_beyond_2_53_or_below_0_fails_naming_the_field(run, textfiles, args, field, shown):
    directory, _prom, _token = textfiles
    result = run(dict({"directory": str(directory), "target": "slurm"}, **args))
    assert result["failed"] and result["msg"].startswith(
        f"{field} must be a whole number from 0 to 9007199254740992 (2**53), got {shown}")
    assert list(directory.iterdir()) == []
