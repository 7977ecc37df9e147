"""AWX: the scheduled segment report job (docs/examples/awx_segment_report.yml) and its artifact.

* The example creates its job template and schedule through awx.awx against the fake AWX API on
  127.0.0.1 (tests/integration/fake_awx.py), after docs/examples/awx_setup.yml; a second run changes nothing.
* playbooks/segment_report.yml run by ansible-runner, as AWX runs a job, leaves the report in the
  job's artifact data (set_stats), the page included.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import ansible_runner
import yaml

from tests.integration import fake_awx
from tests.ansible_run import REPO, tool
from tests.integration.awx_support import AWX_SETUP, clean_env, job_events

REPORT_SETUP = REPO / "docs" / "examples" / "awx_segment_report.yml"


def recap(stdout):
    found = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", stdout)
    assert found, stdout
    return tuple(int(value) for value in found.groups())


def test_report_template_and_schedule_are_created_once():
    (play,) = yaml.safe_load(REPORT_SETUP.read_text())
    with fake_awx.serve() as (api, url):
        env = clean_env(CONTROLLER_HOST=url, CONTROLLER_OAUTH_TOKEN="test-token")
        setup = subprocess.run([tool("ansible-playbook"), "-i", "localhost,", AWX_SETUP], capture_output=True,
                               text=True, env=env, cwd=REPO, check=False)
        assert setup.returncode == 0, setup.stdout + setup.stderr
        runs = [subprocess.run([tool("ansible-playbook"), "-i", "localhost,", REPORT_SETUP], capture_output=True,
                               text=True, env=env, cwd=REPO, check=False) for _run in range(2)]
        for result in runs:
            assert result.returncode == 0, result.stdout + result.stderr
        assert recap(runs[0].stdout) == (2, 2, 0) and recap(runs[1].stdout)[1:] == (0, 0)
        (template,) = api.named("job_templates", "Topology: segment capacity report")
        assert template["playbook"] == "playbooks/segment_report.yml" and (REPO / template["playbook"]).is_file()
        extra = template["extra_vars"]
        extra = json.loads(extra) if isinstance(extra, str) else extra
        assert extra["segment_report_dest"] == play["vars"]["awx_segment_report_dest"]
        (schedule,) = api.named("schedules", "Topology: hourly segment capacity report")
        assert schedule["unified_job_template"] == template["id"] and "FREQ=HOURLY" in schedule["rrule"]


def test_the_job_keeps_the_report_as_its_artifact(tmp_path):
    dest = tmp_path / "segment-report.html"
    (tmp_path / "job").mkdir()
    result = ansible_runner.run(
        private_data_dir=str(tmp_path / "job"), project_dir=str(REPO), playbook="playbooks/segment_report.yml",
        inventory=str(REPO / "inventories" / "example"), extravars={"segment_report_dest": str(dest)},
        ident="report", quiet=True, envvars={"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"})
    assert (result.status, result.rc) == ("successful", 0)
    events = job_events(Path(tmp_path / "job" / "artifacts" / "report"))
    (stats,) = [event for event in events if event["event"] == "playbook_on_stats"]
    report = stats["event_data"]["artifact_data"]["segment_report"]
    assert report["path"] == str(dest) and report["html"] == dest.read_text(encoding="utf-8")
    assert "--segment sizes" in report["advice"] and report["unsegmented_feasible"][0] == [1, 35]
