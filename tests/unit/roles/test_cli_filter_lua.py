"""cli_filter.lua rendered from the role's template and run by a real Lua 5.1 (Slurm's Lua).

The template is rendered with Ansible's own `bool` and `to_json` filters, so values given as
strings (`-e slurm_topology_segment_reject_full_domain=false`) behave as in a playbook run. The
`slurm` table is the small API cli_filter/lua gives scripts (SUCCESS, ERROR, log_error); the
end-to-end check with sbatch is in tests/integration/test_role_slurm_topology.py. lua5.1 and
luac5.1 come from the Debian package lua5.1, which `make setup` installs: their absence is a
failure, not a skip.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml
from ansible.plugins.filter.core import FilterModule as AnsibleCoreFilters

ROLE = Path(__file__).resolve().parents[3] / "roles" / "slurm_topology"
ANSIBLE_FILTERS = AnsibleCoreFilters().filters()


def lua_tool(name):
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is missing: `make setup` installs the Debian package lua5.1 (the Makefile's "
                    f"APT_PACKAGES)", pytrace=False)
    return found


HARNESS = r"""
slurm = {SUCCESS = 0, ERROR = -1}
function slurm.log_error(fmt, ...) io.write("ERROR " .. string.format(fmt, ...) .. "\n") end
dofile(arg[1])
local job_id = arg[3]
if job_id ~= "" then
  -- os.getenv is what the script reads for SLURM_JOB_ID
  local real = os.getenv
  os.getenv = function(name) if name == "SLURM_JOB_ID" then return job_id end return real(name) end
end
local options = {}
for key, value in string.gmatch(arg[2], "([%w_-]+)=([^;]*);") do options[key] = value end
io.write("RC " .. slurm_cli_pre_submit(options, 0) .. "\n")
"""


def render(tmp_path, **overrides):
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    values = dict(defaults, slurm_topology_policed_partitions=["gpu"], **overrides)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["bool"] = ANSIBLE_FILTERS["bool"]
    env.filters["to_json"] = ANSIBLE_FILTERS["to_json"]
    script = tmp_path / "cli_filter.lua"
    script.write_text(env.from_string((ROLE / "templates" / "cli_filter.lua.j2").read_text()).render(values))
    harness = tmp_path / "harness.lua"
    harness.write_text(HARNESS)
    return script, harness


def submit(script, harness, job_id="", **options):
    options.setdefault("type", "sbatch")
    options.setdefault("segment", "unset")
    options.setdefault("nodes", "1-0")
    encoded = "".join(f"{key}={value};" for key, value in options.items())
    out = subprocess.run([lua_tool("lua5.1"), str(harness), str(script), encoded, job_id], capture_output=True, text=True,
                         check=True).stdout
    rc = int(out.rsplit("RC ", 1)[1])
    return rc, out.split("RC ")[0].strip()


@pytest.fixture
def policy(tmp_path):
    script, harness = render(tmp_path)
    return lambda job_id="", **options: submit(script, harness, job_id, **options)


def test_script_compiles_with_lua_5_1(tmp_path):
    script, _harness = render(tmp_path)
    compiled = subprocess.run([lua_tool("luac5.1"), "-p", str(script)], capture_output=True, text=True, check=False)
    assert compiled.returncode == 0, compiled.stderr


@pytest.mark.parametrize("options, rc, message", [
    ({"nodes": "32", "segment": "16", "partition": "gpu"}, 0, ""),
    ({"nodes": "32", "segment": "18", "partition": "gpu"}, -1, "--segment=18 needs every node of an NVLink domain"),
    ({"nodes": "36", "segment": "36", "partition": "gpu"}, -1, "larger than an NVLink domain (18 nodes)"),
    ({"nodes": "20", "segment": "16", "partition": "gpu"}, -1, "--segment=16 does not divide the node count 20"),
    ({"nodes": "1-0", "segment": "16", "partition": "gpu"}, -1, "does not divide the node count 1"),
    ({"nodes": "64", "partition": "gpu"}, 0, ""),
    ({"nodes": "32", "segment": "18", "partition": "admin"}, 0, ""),
    ({"nodes": "32", "segment": "18", "partition": "cpu,gpu"}, -1, "needs every node"),
    ({"nodes": "32", "segment": "18"}, -1, "needs every node"),
])
def test_segment_policy(policy, options, rc, message):
    got_rc, output = policy(**options)
    assert got_rc == rc, output
    assert message in output


def test_steps_inside_an_allocation_are_not_policed(policy):
    assert policy(job_id="42", type="srun", nodes="32", segment="18", partition="gpu")[0] == 0
    assert policy(type="srun", nodes="32", segment="18", partition="gpu")[0] == -1


def test_optional_rules(tmp_path):
    script, harness = render(tmp_path, slurm_topology_segment_require_above_domain=True,
                             slurm_topology_segment_reject_full_domain=False,
                             slurm_topology_segment_police_default_partition=False)
    assert submit(script, harness, nodes="64", partition="gpu") == (
        -1, "ERROR jobs of more than 18 nodes need --segment=<n>: n <= 18, dividing -N (e.g. --segment=16)")
    assert submit(script, harness, nodes="36", segment="18", partition="gpu")[0] == 0
    assert submit(script, harness, nodes="36", segment="18")[0] == 0


@pytest.mark.parametrize("text, lua", [("false", "false"), ("no", "false"), ("true", "true"), ("yes", "true")])
def test_booleans_given_as_strings(tmp_path, text, lua):
    """`-e name=false` reaches the template as the string "false": the role's `| bool` reads it as false."""
    script, _harness = render(tmp_path, slurm_topology_segment_reject_full_domain=text,
                              slurm_topology_segment_require_above_domain=text,
                              slurm_topology_segment_police_default_partition=text)
    rendered = script.read_text()
    for name in ("REJECT_FULL_DOMAIN", "REQUIRE_ABOVE_DOMAIN", "POLICE_DEFAULT_PARTITION"):
        assert f"local {name} = {lua}\n" in rendered
