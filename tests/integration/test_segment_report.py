"""The segment capacity report: playbooks/segment_report.yml on inventories/example, then a real browser.

The page is loaded by Debian's chromium in headless mode: a screenshot must be taken, the DOM must
hold the advice, the tables and the three pictures, and chromium's console log must show no error.
A page with a deliberate script error proves the console check would catch one.
"""

from __future__ import annotations

import re
import shutil
import subprocess


from ansible_collections.aifactory.topology.plugins.filter.segment_report import segment_report_html
from tests.ansible_run import REPO, recap, run_playbook

CHROMIUM = shutil.which("chromium")
CONSOLE_PROBLEM = re.compile(r"CONSOLE\(|Uncaught|Failed to load resource|net::ERR_")


def chromium(page, tmp_path, *extra):
    # make setup installs it (APT_PACKAGES): missing is a broken setup, not a reason to pass.
    assert CHROMIUM is not None, "Debian's chromium is not installed; run make setup (it is in APT_PACKAGES)"
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    profile.mkdir()
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra, page.as_uri()],
        capture_output=True, text=True, timeout=180, check=False)


def console_problems(stderr):
    return [line for line in stderr.splitlines() if CONSOLE_PROBLEM.search(line)]


def test_example_report_renders_in_a_real_browser(tmp_path):
    dest = tmp_path / "report" / "segment-report.html"
    args = ["-i", REPO / "inventories" / "example", REPO / "playbooks" / "segment_report.yml",
            "-e", f"segment_report_dest={dest}"]
    first = run_playbook(*args)
    assert first.returncode == 0, first.stdout + first.stderr
    assert recap(first.stdout, "localhost")[0] >= 1
    page = dest.read_text(encoding="utf-8")
    second = run_playbook(*args)
    assert second.returncode == 0 and recap(second.stdout, "localhost") == (0, 0), second.stdout
    assert dest.read_text(encoding="utf-8") == page  # no timestamp, deterministic pictures

    # Self-contained: nothing fetched from anywhere.
    assert not re.search(r"""(?:src|href)\s*=\s*["'](?:https?:|//)""", page)
    assert page.count("<svg") == 3

    shot = tmp_path / "shot.png"
    taken = chromium(dest, tmp_path, "--window-size=1400,3000", f"--screenshot={shot}")
    assert taken.returncode == 0, taken.stderr[-3000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert not console_problems(taken.stderr), console_problems(taken.stderr)

    dom = chromium(dest, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-3000:]
    for marker in ('id="advice"', 'id="segments"', 'id="rack-map"', 'id="curves"', 'id="fabric"',
                   "Example GB200 cluster - segment capacity", "gb200-r02-n[07,11]", "rack07"):
        assert marker in dom.stdout, marker
    # The example's what-if states: 121 of 125 idle, -N 1-35 accepted without --segment.
    assert "125 nodes in 8 blocks" in dom.stdout and "121 idle" in dom.stdout
    assert re.search(r"-N</code> 1–35, ", dom.stdout)
    assert not console_problems(dom.stderr), console_problems(dom.stderr)


def test_the_role_validates_its_required_options_before_any_task(tmp_path):
    """segment_report_model and segment_report_dest have no defaults, so the role's argument spec checks them."""
    playbook = tmp_path / "report.yml"
    playbook.write_text("- hosts: localhost\n  gather_facts: false\n  roles:\n    - aifactory.topology.segment_report\n")
    result = run_playbook("-i", "localhost,", playbook)
    assert result.returncode != 0
    assert "missing required arguments: segment_report_dest, segment_report_model" in result.stdout, result.stdout


def test_the_console_check_catches_a_script_error(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction();</script></body></html>",
                    encoding="utf-8")
    result = chromium(page, tmp_path, "--dump-dom")
    assert console_problems(result.stderr), result.stderr[-3000:]


def test_markup_in_names_stays_text_in_a_real_browser(tmp_path, segment_capacity_result):
    # Names a fabric could carry: as text they are harmless; run as markup they would retitle the page.
    attack = "<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>"
    result = segment_capacity_result()
    result["fabric"]["switches"][0]["name"] = attack
    old = result["blocks"][0]["name"]
    result["blocks"][0]["name"] = "r1" + attack
    result["fabric"]["block_switch"]["r1" + attack] = result["fabric"]["block_switch"].pop(old)
    result["summary"]["warnings"] = [attack]
    page = tmp_path / "hostile.html"
    page.write_text(segment_report_html(result, title="Hostile names"), encoding="utf-8")
    dom = chromium(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-3000:]
    assert re.search(r"<title>Hostile names</title>", dom.stdout), dom.stdout[:500]
    assert "<script" not in dom.stdout and "<img" not in dom.stdout
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom.stdout
