"""_base/numbers is the only way to read a number from text: int() and float() on anything but a literal
are refused under plugins/ and extensions/, except the uses listed here, each with why it is safe.

Text from a node or an API goes through whole_number / whole_number_or_none (ASCII digits, bounded
length, range before int()); a decoded value through number_value. A new int(x) or float(x) fails this
test until it is one of those or is listed below with its reason.
"""

from __future__ import annotations

import ast

import pytest

from tests.collection_sources import python_sources


# (file, the call as ast.unparse writes it) -> why it reads no untrusted text.
ALLOWED = {
    ("plugins/module_utils/_base/fact_cache.py", "float(now)"): "the caller's clock (time.time() or a test's)",
    ("plugins/module_utils/_base/hostlist.py", "int(digits)"):
        "ASCII digits (re.ASCII) of at most MAX_RANGE_DIGITS: longer names stay literals",
    ("plugins/module_utils/_base/hostlist.py", "int(low_text)"): "checked: ASCII digits, at most MAX_RANGE_DIGITS",
    ("plugins/module_utils/_base/hostlist.py", "int(high_text)"): "checked: ASCII digits, at most MAX_RANGE_DIGITS",
    ("plugins/module_utils/_base/hostlist.py", "map(int, digit_strings)"):
        "the same bounded ASCII digit strings as int(digits)",
    ("plugins/module_utils/_base/hostlist.py", "int(text)"):
        "the sort key of the same bounded ASCII digit strings as int(digits)",
    ("plugins/module_utils/_engines/ansible_groups.py", "int(part[2:] or '0', 16)"):
        "an inventory host name part that _INET_ATON_PART matched (ASCII hex digits)",
    ("plugins/module_utils/_engines/ansible_groups.py", "int(part, 8)"): "matched by _INET_ATON_PART: ASCII octal",
    ("plugins/module_utils/_engines/ansible_groups.py", "int(part)"): "matched by _INET_ATON_PART: ASCII digits",
    ("plugins/module_utils/_engines/capacity.py", "float(rate)"): "an option already checked as a number from 0 to 1",
    ("plugins/module_utils/_engines/imex.py", "int(value)"): "a boolean setting written as 0 or 1",
    ("plugins/module_utils/_engines/metrics.py", "int(failed)"): "a boolean this module computed",
    ("plugins/module_utils/_engines/metrics.py", "float(sample.group(3))"):
        "the module's own metrics file, matched by _NUMBER (ASCII digits); inf and NaN are refused next",
    ("plugins/module_utils/_engines/metrics.py", "int(given)"): "a typed module option or a checked count",
    ("plugins/module_utils/_engines/metrics.py", "int(reported)"): "a checked count",
    ("plugins/module_utils/_engines/metrics.py", "int(before.get('consecutive_failures', 0))"):
        "a value of the module's own file, already refused when NaN or beyond 2**53",
    ("plugins/module_utils/_engines/slurm.py", "int(math.log2(len(blocks)))"): "arithmetic on a count",
    ("plugins/module_utils/_events/k8s_watch.py", "int(watch_timeout)"): "a typed module option",
    ("plugins/module_utils/_providers/_aws_metadata.py", "int(_number(core, 'metadata_service_num_attempts', 1))"):
        "the operator's botocore configuration, read by _number",
    ("plugins/module_utils/_providers/_aws_metadata.py", "float(core.get_config_variable(name) or default)"):
        "the operator's botocore configuration",
    ("plugins/module_utils/_providers/nscale.py", "int(offset or 0)"): "the page offset this provider wrote itself",
    ("plugins/module_utils/_transport/http.py", "float(seconds)"): "an int whole_number_or_none read",
    ("plugins/module_utils/_transport/http.py", "int(attempts)"): "a typed module option",
    ("plugins/module_utils/_transport/k8s.py", "int(concurrency)"): "a typed module option",
    ("plugins/module_utils/_transport/k8s.py", "float(timeout)"): "a typed module option",
    ("plugins/module_utils/_transport/k8s.py", "float(self.timeout)"): "a typed module option",
    ("plugins/module_utils/_writers/k8s.py", "int(concurrency)"): "a typed module option",
    ("plugins/module_utils/_writers/shrink_guard.py", "float(value)"): "checked as a finite number from 0 to 100",
}


def calls_in(source):
    """The int()/float() calls of one file's source whose first argument is not a literal, and the calls
    that are handed int or float to call (``map(int, texts)``), as unparsed."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        if (isinstance(node.func, ast.Name) and node.func.id in ("int", "float")
                and node.args and not isinstance(node.args[0], ast.Constant)):
            found.append((node.lineno, ast.unparse(node)))
        elif not (isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass")) and any(
                isinstance(value, ast.Name) and value.id in ("int", "float")
                for value in [*node.args, *(keyword.value for keyword in node.keywords)]):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_number_is_read_outside_base_numbers():
    found, seen = [], set()
    for name, source in python_sources(skip="plugins/module_utils/_base/numbers.py"):
        for line, call in calls_in(source):
            seen.add((name, call))
            if (name, call) not in ALLOWED:
                found.append(f"{name}:{line}: {call}: read it with _base/numbers (whole_number, number_value) "
                             "or list it in ALLOWED with the reason it reads no untrusted text")
    assert not found, "\n".join(found)
    assert not set(ALLOWED) - seen, f"ALLOWED lists calls that are gone: {sorted(set(ALLOWED) - seen)}"


@pytest.mark.parametrize("snippet", [
    "def f(line):\n    return int(line.split()[1])\n",
    "def f(m):\n    return float(m.group(1))\n",
    "x = int(os.environ['N'])\n",
    "def f(texts):\n    return sorted(map(int, texts))\n",
    "def f(texts):\n    return sorted(texts, key=float)\n",
])
def test_the_guard_fails_on_what_it_forbids(snippet):
    assert calls_in(snippet)


def test_the_guard_lets_literals_pass():
    assert not calls_in("A = int('7')\nB = float('inf')\nC = int()\n")
