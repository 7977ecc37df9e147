"""What each step of `make test` ran, read from its log in tests/output/, for the final summary.

    python tools/step_summary.py STEP LOG    # one line: what the step ran, passed, skipped
    python tools/step_summary.py --total LOG...   # the closing line: N passed, N failed, N skipped

Per step: the pytest steps (units, integration, and compat, which runs pytest once per
ansible-core release) give pytest's own counts, added up; sanity counts ansible-test's sanity
tests; lint gives ansible-lint's result line; build its checks; molecule its scenarios. The total
adds up every pytest count, in the plain form CI reads (``total: N passed, N failed, N skipped``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# pytest's closing line: "==== 745 passed, 3 skipped, 2 warnings in 46.12s ====" (or -q's without the '=').
PYTEST_LINE = re.compile(r"^=*\s*((?:\d+ [a-z]+(?:, )?)+) in [0-9.]+s")
COUNT = re.compile(r"(\d+) ([a-z]+)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SANITY_TEST = re.compile(r"""^Running sanity test ["']([^"']+)["']""")
# What pytest calls its outcomes, by the summary's name for them.
OUTCOMES = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed")


def log_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []


def pytest_counts(lines: list[str]) -> dict[str, int]:
    """Every pytest closing line of a log, added up ("error" and "errors" are one outcome)."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for line in lines:
        match = PYTEST_LINE.match(ANSI.sub("", line).strip())
        if not match:
            continue
        for number, outcome in COUNT.findall(match.group(1)):
            outcome = "errors" if outcome == "error" else outcome
            if outcome in counts:
                counts[outcome] += int(number)
    return counts


def describe_pytest(counts: dict[str, int]) -> str:
    ran = counts["passed"] + counts["failed"] + counts["errors"] + counts["xfailed"] + counts["xpassed"]
    text = f"ran {ran}: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
    if counts["errors"]:
        text += f", {counts['errors']} errors"
    return text


def describe(step: str, lines: list[str]) -> str:
    lines = [ANSI.sub("", line) for line in lines]
    counts = pytest_counts(lines)
    if any(counts.values()):
        text = describe_pytest(counts)
        if step == "compat":
            sanity = sum(1 for line in lines if SANITY_TEST.match(line))
            text += f"; {sanity} sanity tests"
        return text
    if step == "sanity":
        tests = [line for line in lines if SANITY_TEST.match(line)]
        return f"ran {len(tests)} ansible-test sanity tests" if tests else "no sanity test ran"
    if step == "lint":
        result = [line for line in lines if line.startswith(("Passed:", "Failed:"))]
        return f"ansible-lint {result[-1]}" if result else "no ansible-lint result line"
    if step == "build":
        checks = [line for line in lines if line.startswith("build: ")]
        return f"{len(checks)} checks of the built artifact" if checks else "no build check ran"
    if step == "molecule":
        result = [line for line in lines if line.startswith(("molecule: ", "* molecule: "))]
        return re.sub(r"^\*? ?molecule: ", "", result[-1]) if result else "no scenario ran"
    return "no result line"


def total(paths: list[Path]) -> str:
    counts = dict.fromkeys(OUTCOMES, 0)
    for path in paths:
        for outcome, number in pytest_counts(log_lines(path)).items():
            counts[outcome] += number
    return (f"total: {counts['passed']} passed, {counts['failed'] + counts['errors']} failed, "
            f"{counts['skipped']} skipped")


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[1] == "--total":
        print(total([Path(p) for p in argv[2:]]))
        return 0
    if len(argv) != 3:
        print(f"usage: {argv[0]} STEP LOG | --total LOG...", file=sys.stderr)
        return 2
    print(describe(argv[1], log_lines(Path(argv[2]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
