"""playbooks/rack_rolling.yml on a live slurmctld 26.05 (the Debian sid test bed).

The inventory is the aifactory.topology.topology plugin over a model file (three racks of three
CLOUD nodes) plus a static file with the controller, reached with community.general.chroot. The
nodes run their tasks on this machine (ansible_connection local, composed by the plugin); the
maintenance task file each test writes records what Slurm said about every node at the moment
the node was being maintained. Slurm itself is the judge: sinfo states and reasons, squeue jobs.
"""

from __future__ import annotations

import json
import sys
import time

import pytest
import slurm_testbed as testbed  # tools/ is on sys.path (tests/conftest.py)
import yaml

from tests.ansible_run import REPO, ansible_env, run_playbook

pytestmark = [pytest.mark.slurm, pytest.mark.playbook]

RACKS = {f"rack{r:02d}": [f"gb200-r{r:02d}-n{n:02d}" for n in range(1, 4)] for r in (1, 2, 3)}
NODES = [node for nodes in RACKS.values() for node in nodes]
REASON = "firmware 2026.11"
# The maintenance task file: each node writes what sinfo says about every node at that moment.
TASKS = """\
- name: Ask Slurm about every node while this one is maintained
  ansible.builtin.command:
    argv: [sinfo, --noheader, --Node, --format, "%N|%T|%E"]
  environment:
    SLURM_CONF: "{{ rack_rolling_slurm_conf }}"
  delegate_to: "{{ groups['slurm_controller'][0] }}"
  changed_when: false
  check_mode: false
  register: seen

- name: Record it
  ansible.builtin.copy:
    content: "{{ seen.stdout }}\\n"
    dest: "{{ marker_dir }}/{{ inventory_hostname }}"
    mode: "0644"
  delegate_to: localhost

- name: Fail where the test says so
  ansible.builtin.fail:
    msg: firmware flash failed
  when: inventory_hostname == (fail_on | default(''))
"""


@pytest.fixture(scope="module")
def controller(slurm_root):
    # One controller for the module: the test bed runs one slurmctld at a time machine-wide.
    # A job's CLOUD node never registers (no slurmd): keep it allocated for the test's lifetime
    # instead of Slurm's 60 s ResumeTimeout, after which the job would be requeued off the rack.
    conf = testbed.slurm_conf(set(NODES)) + "ResumeTimeout=3600\n"
    with testbed.slurmctld(slurm_root, {"slurm.conf": conf}) as running:
        yield running


@pytest.fixture
def ctld(controller):
    """The controller with every node back in service and no job, as each test expects to start."""
    yield controller
    controller.run("scancel", "--user", "root")
    drained = [node for node, (state, _reason) in states(controller).items() if state.startswith(("drain", "down"))]
    if drained:
        controller.scontrol("update", f"NodeName={','.join(drained)}", "State=RESUME")


@pytest.fixture
def cluster(tmp_path, slurm_root, ctld):
    model = {"format": "aifactory.topology/v1", "switches": {"spine": None, "leaf1": "spine", "leaf2": "spine"},
             "nodes": [{"nodes": f"gb200-r{r:02d}-n[01-03]", "switch": "leaf1" if r < 3 else "leaf2",
                        "domain": f"rack{r:02d}"} for r in (1, 2, 3)]}
    (tmp_path / "model.json").write_text(json.dumps(model))
    (tmp_path / "cluster.topology.yml").write_text(yaml.safe_dump({
        "plugin": "aifactory.topology.topology", "model_path": "model.json",
        "compose": {"ansible_connection": "'local'", "ansible_python_interpreter": repr(sys.executable)}}))
    (tmp_path / "site.yml").write_text(yaml.safe_dump({"all": {"children": {"slurm_controller": {"hosts": {"ctl": {
        "ansible_connection": "community.general.chroot", "ansible_host": str(slurm_root),
        "ansible_python_interpreter": "/usr/bin/python3", "ansible_remote_tmp": "/tmp/.ansible-tmp",
        "slurm_topology_conf_dir": ctld.conf_dir}}}}}}))
    (tmp_path / "maintain.yml").write_text(TASKS)
    (tmp_path / "markers").mkdir()
    return tmp_path


def roll(cluster, *extra, **variables):
    variables = {"rack_rolling_tasks": str(cluster / "maintain.yml"), "rack_rolling_reason": REASON,
                 "rack_rolling_poll_interval": 1, "marker_dir": str(cluster / "markers"), **variables}
    result = run_playbook("-i", cluster / "cluster.topology.yml", "-i", cluster / "site.yml",
                          REPO / "playbooks" / "rack_rolling.yml", "-e", json.dumps(variables), *extra,
                          env=ansible_env(ANSIBLE_CALLBACK_RESULT_FORMAT="json"))  # messages on one line
    (cluster / "ansible-playbook.out").write_text(result.stdout + result.stderr)  # for a failure's reader
    return result


def states(ctld):
    """node -> (state, reason) as sinfo shows them."""
    lines = ctld.run("sinfo", "--noheader", "--Node", "--format", "%N|%T|%E").stdout.splitlines()
    # The reason last, split off by position: it may hold "|" (these node names do not).
    return {name: (state, reason) for name, state, reason in (line.split("|", 2) for line in lines)}


def service(snapshot):
    """States without Slurm's power suffixes (~ powered down, # powering up, % powering down), and reasons:
    what the playbook may change, not the power steps Slurm takes by itself meanwhile."""
    return {node: (state.rstrip("~#%!"), reason) for node, (state, reason) in snapshot.items()}


def seen(cluster, node):
    """What sinfo said about every node while ``node`` was maintained."""
    text = (cluster / "markers" / node).read_text()
    return {name: state for name, state, _reason in (line.split("|", 2) for line in text.splitlines())}


def rack_states(snapshot, rack):
    return {snapshot[node] for node in RACKS[rack]}


def test_racks_are_drained_maintained_and_resumed_one_at_a_time(ctld, cluster):
    ctld.scontrol("update", "NodeName=gb200-r03-n02", "State=DRAIN", "Reason=bad psu")  # held before the rollout
    result = roll(cluster)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert "3 racks, one at a time: rack01 -> rack02 -> rack03" in result.stdout
    # While rack02 was maintained: rack01 was back, rack02 drained with our reason, rack03 not touched yet.
    during = seen(cluster, "gb200-r02-n01")
    assert rack_states(during, "rack01") == {"idle~"}
    assert rack_states(during, "rack02") == {"drained~"}
    assert [during[node] for node in RACKS["rack03"]] == ["idle~", "drained~", "idle~"]
    assert rack_states(seen(cluster, "gb200-r03-n03"), "rack02") == {"idle~"}
    assert sorted(path.name for path in (cluster / "markers").iterdir()) == NODES
    after = states(ctld)
    # Every node is back, except the one drained for its own reason before: it keeps state and reason.
    assert {node: state for node, (state, _reason) in after.items() if state != "idle~"} == {"gb200-r03-n02": "drained~"}
    assert after["gb200-r03-n02"][1] == "bad psu"
    assert "rack03: resumed gb200-r03-n[01,03]; left drained (were so before): gb200-r03-n02" in result.stdout


def test_check_mode_shows_the_plan_and_changes_nothing(ctld, cluster):
    before = states(ctld)
    result = roll(cluster, "--check", rack_rolling_racks=["rack02", "rack01"])
    assert result.returncode == 0, result.stdout[-5000:]
    assert "2 racks, one at a time: rack02 -> rack01" in result.stdout
    assert "rack02: drain gb200-r02-n[01-03] (reason 'firmware 2026.11')" in result.stdout
    assert "rack01: would resume gb200-r01-n[01-03]" in result.stdout
    assert states(ctld) == before
    assert not list((cluster / "markers").iterdir())  # the task file's copy ran in check mode too


def test_a_failed_node_stops_the_rollout_before_the_next_rack(ctld, cluster):
    result = roll(cluster, fail_on="gb200-r02-n02")
    assert result.returncode != 0
    assert ("rack02: maintenance failed on gb200-r02-n02 (firmware flash failed); gb200-r02-n[01-03] stay drained "
            "and the rollout stops before the next rack") in result.stdout, result.stdout[-6000:]
    after = states(ctld)
    assert {after[node][0] for node in RACKS["rack01"]} == {"idle~"}
    assert {after[node] for node in RACKS["rack02"]} == {("drained~", REASON)}
    assert {after[node][0] for node in RACKS["rack03"]} == {"idle~"}
    assert not any((cluster / "markers" / node).exists() for node in RACKS["rack03"])


def test_jobs_on_a_rack_are_found_by_the_wait(ctld, cluster):
    """The job a rack's node is allocated to is what the wait waits for (shown in check mode).

    The failing end of the bounded wait is not reachable on this test bed: its CLOUD nodes have no
    slurmd, so a job never gets past CONFIGURING, and Slurm requeues a job whose node is still
    powering up as soon as that node is drained; the wait then rightly finds no job.
    """
    submitted = ctld.run("sbatch", "--nodelist", "gb200-r01-n02", "--wrap", "sleep 1000")
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.split()[-1]
    # The controller allocates the job on its next scheduling pass; wait for that, bounded.
    deadline = time.monotonic() + 60
    while ctld.run("squeue", "--noheader", "--nodelist", "gb200-r01-n02", "--format", "%i").stdout.strip() != job:
        assert time.monotonic() < deadline, "slurmctld did not allocate the job within 60 s"
        time.sleep(0.5)
    before = service(states(ctld))
    result = roll(cluster, "--check", rack_rolling_racks=["rack01"])
    assert result.returncode == 0, result.stdout[-6000:]
    assert f"rack01: would wait for jobs {job}" in result.stdout
    assert service(states(ctld)) == before
    assert ctld.run("squeue", "--noheader", "--format", "%i %T").stdout.split() == [job, "CONFIGURING"]


def test_a_drain_reason_with_a_pipe_is_the_rollouts_own_on_the_rerun(ctld, cluster):
    """sinfo's `%N|%T|%E` lines split such a reason: the rerun took its own nodes for held ones."""
    reason = "firmware | 2026.11 | batch 2"
    stopped = roll(cluster, fail_on="gb200-r02-n02", rack_rolling_reason=reason)
    assert stopped.returncode != 0 and "rack02: maintenance failed on gb200-r02-n02" in stopped.stdout
    assert {states(ctld)[node] for node in RACKS["rack02"]} == {("drained~", reason)}
    rerun = roll(cluster, rack_rolling_reason=reason, rack_rolling_racks=["rack02"])
    assert rerun.returncode == 0, rerun.stdout[-5000:]
    assert "rack02: resumed gb200-r02-n[01-03]" in rerun.stdout and "left drained" not in rerun.stdout
    assert {states(ctld)[node][0] for node in RACKS["rack02"]} == {"idle~"}


@pytest.mark.parametrize("variables, message", [
    ({"rack_rolling_poll_interval": 0}, "rack_rolling_poll_interval must be a whole number of seconds, at least 1; got 0"),
    ({"rack_rolling_job_timeout": "1h"},
     "argument 'rack_rolling_job_timeout' is of type str and we were unable to convert to int"),
    ({"rack_rolling_reconnect_timeout": -5}, "rack_rolling_reconnect_timeout must be a whole number of seconds, at least 1"),
    ({"rack_rolling_racks": "rack02,rack02"}, 'rack_rolling_racks must name each rack once, got ["rack02", "rack02"]'),
    ({"rack_rolling_reason": "two\nlines"}, "rack_rolling_reason must be one line of text"),
    ({"rack_rolling_tasks": "maintain.yml"}, "rack_rolling_tasks must name the maintenance task file by its absolute path"),
], ids=["poll-0", "job-1h", "reconnect-negative", "racks-twice", "reason-two-lines", "tasks-relative"])
def test_every_variable_is_checked_before_the_first_drain(ctld, cluster, variables, message):
    before = service(states(ctld))
    result = roll(cluster, **variables)
    assert result.returncode != 0
    assert message in result.stdout, result.stdout[-4000:]
    assert "PLAY [Maintain one rack at a time]" not in result.stdout  # nothing after the checks ran
    assert service(states(ctld)) == before
    assert not list((cluster / "markers").iterdir())


def test_values_given_as_text_are_read_as_their_types(ctld, cluster):
    before = states(ctld)
    result = roll(cluster, "--check", rack_rolling_racks="rack03,rack01", rack_rolling_job_timeout="60",
                  rack_rolling_poll_interval="1", rack_rolling_resume_timeout="30")
    assert result.returncode == 0, result.stdout[-5000:]
    assert "2 racks, one at a time: rack03 -> rack01" in result.stdout
    assert "rack03: drain gb200-r03-n[01-03] (reason 'firmware 2026.11'), wait up to 60 s" in result.stdout
    assert states(ctld) == before
