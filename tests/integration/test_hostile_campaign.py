"""Every case of the hostile-input campaign (tests/hostile_cases.py, docs/security.md) is a test.

Each case runs in its own process exactly as `python tests/hostile_cases.py` runs it (tests/hostile_campaign.py) and
must be decided as documented: a clear error of the collection for a case that must fail, the
right result for a case that must pass. Unhandled, wrong output, hang, data lost or a printed
secret fails the test with the class, the case and what happened.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import os

import pytest

from tests.hostile_campaign import CASES, GOOD_VERDICT, REPO, run_in_child

CASES_FILE = REPO / "tests" / "hostile_cases.py"
# A bound that turns a hang into a failure, not a measure: the slowest cases end at their own
# 20 s discovery deadline; without that deadline they would run to the default 600 s.
LIMIT = 120
# Cases run this many at a time: most of a case's time is waiting (a fault server's drip, a
# deadline), so three children share the two cores well. Each test then takes its own case's result.
AT_ONCE = 3


def _load_cases():
    """tests/hostile_cases.py as a module: importing it registers every case in CASES."""
    spec = importlib.util.spec_from_file_location("hostile_cases", CASES_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CASES_MODULE = _load_cases()


def test_every_class_of_the_campaign_has_cases():
    assert sorted({hostile.klass for hostile in CASES.values()}) == sorted(CASES_MODULE.CLASSES)


@pytest.fixture(scope="module")
def campaign():
    """Every case started in its own child process, AT_ONCE at a time, in the order of the tests."""
    runnable = [name for name, hostile in CASES.items() if os.geteuid() == 0 or not hostile.needs_root]
    with concurrent.futures.ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
        yield {name: pool.submit(run_in_child, CASES_FILE, name, LIMIT) for name in runnable}


@pytest.mark.parametrize("name", list(CASES), ids=str)
def test_hostile_case_is_decided_as_documented(campaign, name):
    hostile = CASES[name]
    if name not in campaign:
        pytest.skip(f"HOSTILE CASE SKIPPED: {name!r} needs root (a mount, a device node or chattr +i)")
    result = campaign[name].result()
    assert result.verdict == GOOD_VERDICT, f"{hostile.klass}: {name}: {result.verdict}: {result.message}"
