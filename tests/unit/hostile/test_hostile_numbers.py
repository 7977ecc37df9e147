"""Hostile numbers: '²' (U+00B2, str.isdigit() is true and int() raises), other scripts' digits and
5,000 digits (past int()'s limit) in each reader of node or API output that reads a number. Each ends
in a quarantined node, a clear error naming the source, or the reader's own answer for no number:
never a ValueError."""

from __future__ import annotations

import math
import os

import pytest

from ansible_collections.aifactory.topology.plugins.module_utils._base import hostlist
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import NodeDataError, RemoteAPIError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _nvidia_smi, nebius, node_facts, oci
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import retry_after_seconds
from ansible_collections.aifactory.topology.plugins.module_utils._writers import file as file_writer

HOSTILE = ["²", "٣", "１", "1_0", "-1", " ", "9" * 5000]


@pytest.mark.parametrize("count", ["٣", "١٢"])
def test_attached_gpus_in_another_script_quarantines_the_node(count):
    # \d matches Arabic-Indic digits; int() would read them as a count the node never printed in ASCII.
    with pytest.raises(NodeDataError, match=r"gpu1.*line 1.*Attached GPUs must be a whole number"):
        _nvidia_smi.parse("gpu1", f"Attached GPUs : {count}\nGPU 00000008:01:00.0\n    Fabric\n        State : Completed\n")


@pytest.mark.parametrize("count", ["²", "9" * 5000, "99999"])
def test_attached_gpus_that_are_no_count_are_not_read_as_one(count):
    try:
        _nvidia_smi.parse("gpu1", f"Attached GPUs : {count}\nGPU 00000008:01:00.0\n    Fabric\n        State : Completed\n")
    except NodeDataError as exc:
        assert "gpu1" in str(exc)


def test_port_directories_named_by_hostile_digits_stay_names(tmp_path):
    ports = tmp_path / "class" / "infiniband" / "mlx5_0" / "ports"
    for name in ("1", "²", "٣", "9" * 200):
        (ports / name).mkdir(parents=True)
    hcas = node_facts.infiniband_hcas(str(tmp_path))
    assert sorted(map(str, (port["port"] for port in hcas[0]["ports"]))) == sorted(["1", "²", "٣", "9" * 200])
    assert 1 in [port["port"] for port in hcas[0]["ports"]]


@pytest.mark.parametrize("value", HOSTILE + ["1.5", "nan", "inf", None, 7])
def test_a_retry_after_that_is_no_delay_in_seconds_leaves_our_backoff(value):
    assert retry_after_seconds(value) is None


def test_a_retry_after_in_digits_is_read():
    assert retry_after_seconds(" 7 ") == 7.0


class _Pushback:
    def __init__(self, value):
        self.value = value

    def trailing_metadata_sync(self):
        return [("grpc-retry-pushback-ms", self.value)]


@pytest.mark.parametrize("value", HOSTILE + ["9" * 20])
def test_a_hostile_grpc_pushback_leaves_our_backoff(value):
    assert nebius._pushback(_Pushback(value)) is None  # pylint: disable=protected-access


def test_a_grpc_pushback_in_digits_is_read():
    assert nebius._pushback(_Pushback("1500")) == 1.5  # pylint: disable=protected-access
    # A day is read as a day: the caller caps the wait at retry_after_max, as it does Retry-After.
    assert nebius._pushback(_Pushback("86400000")) == 86400.0  # pylint: disable=protected-access


def test_five_thousand_digits_in_a_name_neither_sort_nor_compress_into_a_value_error():
    long = "n" + "9" * 5000
    assert sorted(["n10", long, "n2"], key=hostlist.natural_key) == ["n2", "n10", long]
    assert hostlist.compress([long, "n1", "n2"]) == f"n[1-2],{long}"
    assert hostlist.compress(["n" + "1" * 19, "n" + "1" * 18 + "2"]).count(",") == 1  # no range expand refuses


@pytest.mark.parametrize("pid", ["²", "٣", "9" * 5000])
def test_a_temp_file_with_a_hostile_pid_is_left_to_age(tmp_path, pid):
    dest = tmp_path / "topology.conf"
    host = file_writer._host()  # pylint: disable=protected-access
    stray = tmp_path / f".topology.conf{file_writer.TEMP_MARK}{pid}@{host}.abc"[:255]
    stray.write_text("x")
    assert file_writer.remove_stale_temp_files(str(dest)) == []
    assert os.path.exists(stray)


@pytest.mark.parametrize("exp", [math.nan, math.inf, 2.0 ** 60])
def test_an_oci_session_token_that_never_expires_is_refused(exp):
    with pytest.raises(RemoteAPIError, match=r"^session: the token's exp claim must be a number from 0 to "):
        oci._session_token("session", "header.payload.signature", {"exp": exp})  # pylint: disable=protected-access
