"""AWX and automation, offline: the execution environment definition, the AWX example, and
playbooks/site.yml run as AWX runs a job (ansible-runner).

Execution environment (ee/execution-environment.yml, ansible-builder v3):
- `ansible-builder create` makes a build context that installs the collection artifact built from
  this checkout, and that artifact carries the checkout's meta/execution-environment.yml,
  requirements.txt and bindep.txt;
- replaying the context's own galaxy and introspection steps (no container engine) yields exactly
  the collection's requirements, and `ansible-builder introspect` reports the same;
- the image gets the ansible-core and ansible-runner this suite tests, on a Python they support.

AWX example (docs/examples/awx_setup.yml): every awx.awx argument is one the module documents; run
against a fake AWX API (tests/integration/fake_awx.py) it creates the EE, project, credential type
and credential, inventory and its SCM source, both job templates with their survey, and the nightly
schedule, with the fields docs/awx.md describes, and a second run changes nothing; the survey is
valid for AWX and each of its variables has a default in the example inventory; no playbook or
role prompts.

A job (playbooks/site.yml through ansible-runner, the engine AWX uses): the project is an SCM-like
copy of the repository and a project sync installs the collection from collections/requirements.yml
as AWX does; extra variables take effect; the artifacts (status, rc, stdout, job events, stats)
tell the truth; a second job changes nothing; a check-mode job with diffs shows the change and
writes nothing.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

import ansible_runner
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.ansible_run import tool
from tests.integration import fake_awx
from tests.integration.awx_support import AWX_SETUP, clean_env, job_events, run, scm_checkout

REPO = Path(__file__).resolve().parents[2]
EE_FILE = REPO / "ee" / "execution-environment.yml"
EXAMPLE_INVENTORY = REPO / "inventories" / "example"
GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())
FQCN = f"{GALAXY['namespace']}.{GALAXY['name']}"

# The survey questions whose effect the job tests check.
OUTPUT_DIR_VAR = "slurm_topology_conf_dir"
BLOCK_SIZES_VAR = "slurm_topology_block_sizes"
TOPOLOGY_FILES = ("topology.conf", "topology.yaml")
# Question types an AWX survey accepts (awx/main/models/mixins.py).
SURVEY_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}


def requirement_lines(path):
    """The requirement entries of a pip or bindep file, comments and blank lines dropped."""
    lines = (re.sub(r"(^|\s+)#.*$", "", line).strip() for line in Path(path).read_text().splitlines())
    return [line for line in lines if line]


def without_collection_note(lines):
    """Introspection's lines without their ``# from collection ...`` note."""
    return [re.sub(r"\s+# from collection .*$", "", line) for line in lines]


# --- Execution environment --------------------------------------------------------------------


@pytest.fixture(scope="module")
def ee_build(tmp_path_factory):
    """The EE definition, unchanged, next to a fresh artifact; `ansible-builder create`'s context."""
    work = tmp_path_factory.mktemp("ee")
    shutil.copytree(EE_FILE.parent, work / EE_FILE.parent.name)
    run([tool("ansible-galaxy"), "collection", "build", "--output-path", work / "build", REPO], env=clean_env())
    definition = work / EE_FILE.parent.name / EE_FILE.name
    context = work / "context"
    created = run([tool("ansible-builder"), "create", "--file", definition, "--context", context,
                   "--output-filename", "Containerfile"])
    output = created.stdout + created.stderr
    # A missing additional_build_files source is only a warning to ansible-builder.
    assert "No matches" not in output and "does not exist" not in output, output
    return {"work": work, "context": context, "build": context / "_build",
            "containerfile": (context / "Containerfile").read_text(),
            "definition": yaml.safe_load(definition.read_text())}


def galaxy_collections(ee_build):
    requirements = yaml.safe_load((ee_build["build"] / "requirements.yml").read_text())
    return requirements["collections"]


def containerfile_command(containerfile, marker):
    """The arguments after `marker` on the Containerfile's RUN line that has it (build args dropped)."""
    lines = [line for line in containerfile.splitlines() if line.startswith("RUN ") and marker in line]
    assert len(lines) == 1, f"expected one RUN line with {marker!r}:\n{containerfile}"
    args = shlex.split(lines[0].split(marker, 1)[1])
    return [arg for arg in args if not arg.startswith("$")]


def test_ee_context_installs_the_artifact_of_this_checkout(ee_build):
    collections = galaxy_collections(ee_build)
    assert len(collections) == 1, collections
    entry = collections[0]
    assert entry["type"] == "file"
    # ansible-galaxy runs in /build, where the context's _build/ is copied.
    artifact = ee_build["build"] / entry["name"]
    assert artifact.is_file(), f"{entry['name']} is not in the build context (is the artifact version current?)"
    with tarfile.open(artifact) as tar:
        manifest = json.load(tar.extractfile("MANIFEST.json"))["collection_info"]
        assert (manifest["namespace"], manifest["name"], manifest["version"]) == \
            (GALAXY["namespace"], GALAXY["name"], GALAXY["version"])
        for name in ("meta/execution-environment.yml", "requirements.txt", "bindep.txt"):
            assert tar.extractfile(name).read() == (REPO / name).read_bytes(), name
    meta = yaml.safe_load((REPO / "meta" / "execution-environment.yml").read_text())
    assert meta["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}
    containerfile = ee_build["containerfile"]
    assert "ansible-galaxy collection install" in containerfile
    assert "introspect.py introspect" in containerfile


def assert_collection_python_requirements(found):
    """`found` is requirements.txt, less only what ansible-core requires (ansible-builder leaves
    PyYAML and the like to ansible-core, which brings them)."""
    wanted = requirement_lines(REPO / "requirements.txt")
    assert set(found) <= set(wanted), f"not in requirements.txt: {sorted(set(found) - set(wanted))}"
    core = {Requirement(line).name.lower() for line in metadata.requires("ansible-core") or []}
    dropped = [line for line in wanted if line not in found]
    assert all(Requirement(line).name.lower() in core for line in dropped), f"missing from the EE: {dropped}"
    assert len(found) == len(set(found)), found


@pytest.fixture(scope="module")
def ee_installed(ee_build):
    """Replay of the context's galaxy stage: the collection installed as the image would have it."""
    collections = ee_build["work"] / "usr-share-ansible-collections"
    args = containerfile_command(ee_build["containerfile"], "ansible-galaxy collection install")
    index = args.index("--collections-path")
    args[index + 1] = str(collections)
    run([tool("ansible-galaxy"), "collection", "install", *args], cwd=ee_build["build"],
        env=clean_env(ANSIBLE_GALAXY_DISABLE_GPG_VERIFY="1"))
    assert (collections / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"] / "MANIFEST.json").is_file()
    return collections


def test_ee_build_installs_exactly_the_collection_requirements(ee_build, ee_installed):
    """The builder stage's introspection, run from the context with the Containerfile's arguments."""
    output = ee_build["work"] / "tmp-src"
    output.mkdir()
    args = containerfile_command(ee_build["containerfile"], "/output/scripts/introspect.py")
    args = [arg.replace("/tmp/src/", f"{output}/") for arg in args]
    run([sys.executable, ee_build["build"] / "scripts" / "introspect.py", *args, ee_installed],
        cwd=ee_build["build"])
    pip = output / "requirements.txt"
    bindep = output / "bindep.txt"
    # The build's pip and system package lists; a file is written only when it has entries.
    assert_collection_python_requirements(requirement_lines(pip) if pip.exists() else [])
    assert (requirement_lines(bindep) if bindep.exists() else []) == requirement_lines(REPO / "bindep.txt")
    # Every entry is attributed to this collection: no second list in the EE definition.
    for path in (pip, bindep):
        if path.exists():
            assert all(line.endswith(f"# from collection {FQCN}") for line in path.read_text().splitlines() if line)


def test_ansible_builder_introspect_reports_the_collection_requirements(ee_installed):
    shown = run([tool("ansible-builder"), "introspect", "--sanitize", ee_installed]).stdout
    data = yaml.safe_load(shown.split("\n---\n", 1)[1])
    assert_collection_python_requirements(without_collection_note(data["python"]))
    assert without_collection_note(data["system"]) == requirement_lines(REPO / "bindep.txt")


def test_ee_gets_the_ansible_core_and_runner_this_suite_tests(ee_build):
    dependencies = ee_build["definition"]["dependencies"]
    tested = {Requirement(line).name: Requirement(line).specifier
              for line in requirement_lines(REPO / "tests" / "requirements.txt") if not line.startswith("-r")}
    for key, package in (("ansible_core", "ansible-core"), ("ansible_runner", "ansible-runner")):
        pinned = Requirement(dependencies[key]["package_pip"])
        assert pinned.name == package and pinned.specifier == tested[package], (key, pinned, tested[package])
    # The image's Python runs that ansible-core, and that ansible-core satisfies the collection.
    python = re.fullmatch(r"python(\d+\.\d+)", dependencies["python_interpreter"]["package_system"]).group(1)
    assert dependencies["python_interpreter"]["python_path"].endswith(f"python{python}")
    assert Version(python) in SpecifierSet(metadata.metadata("ansible-core")["Requires-Python"])
    core = Version(metadata.version("ansible-core"))
    assert core in tested["ansible-core"]
    requires_ansible = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    assert core in SpecifierSet(requires_ansible)


# --- The AWX example: awx.awx arguments, the objects it makes, survey, no prompts ----------------


class UnsafeTolerantLoader(yaml.SafeLoader):
    """Reads Ansible's `!unsafe` tag as the plain string it marks."""


UnsafeTolerantLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def awx_setup_play():
    (play,) = yaml.load(AWX_SETUP.read_text(), Loader=UnsafeTolerantLoader)
    return play


def test_awx_example_uses_only_documented_awx_arguments():
    """ansible-lint does not check awx.awx arguments; the modules' own documentation does."""
    tasks = awx_setup_play()["tasks"]
    modules = sorted({key for task in tasks for key in task if key.startswith("awx.awx.")})
    docs = json.loads(run([tool("ansible-doc"), "--json", *modules], env=clean_env()).stdout)
    for task in tasks:
        (module,) = [key for key in task if key.startswith("awx.awx.")]
        options = docs[module]["doc"]["options"]
        names = {alias: name for name, option in options.items() for alias in [name, *option.get("aliases", [])]}
        for arg, value in task[module].items():
            assert arg in names, f"{task['name']}: {module} has no option {arg!r}"
            choices = options[names[arg]].get("choices")
            if choices and not (isinstance(value, str) and "{{" in value):
                assert value in choices, f"{task['name']}: {arg}={value!r} not in {choices}"


NETQ_PASSWORD = "netq-pa55word-1c9e"


@pytest.fixture(scope="module")
def awx_api():
    """docs/examples/awx_setup.yml run twice against a fake AWX API on 127.0.0.1."""
    with fake_awx.serve() as (api, url):
        env = clean_env(CONTROLLER_HOST=url, CONTROLLER_OAUTH_TOKEN="test-token", NETQ_PASSWORD=NETQ_PASSWORD)
        command = [tool("ansible-playbook"), "-i", "localhost,", AWX_SETUP, "-e", "awx_topology_netq_username=svc-netq",
                   "-e", json.dumps({"awx_topology_credentials": ["NetQ"]})]
        first = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, check=False)
        second = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, check=False)
        yield api, (first, second)


def recap(result):
    found = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", result.stdout)
    assert found, result.stdout + result.stderr
    return tuple(int(value) for value in found.groups())


def test_awx_example_creates_everything_and_a_second_run_changes_nothing(awx_api):
    api, (first, second) = awx_api
    for result in (first, second):
        assert result.returncode == 0, result.stdout + result.stderr
        assert NETQ_PASSWORD not in result.stdout + result.stderr
    ok, changed, failed = recap(first)
    assert failed == 0 and changed == ok == len(awx_setup_play()["tasks"]), first.stdout
    assert recap(second)[1:] == (0, 0), second.stdout
    defaults = awx_setup_play()["vars"]

    def one(endpoint, name):
        (item,) = api.named(endpoint, name)
        return item

    ee = one("execution_environments", defaults["awx_topology_ee_name"])
    assert ee["image"] == defaults["awx_topology_ee_image"]
    project = one("projects", defaults["awx_topology_project_name"])
    assert (project["scm_type"], project["scm_url"], project["default_environment"]) == \
        ("git", defaults["awx_topology_scm_url"], ee["id"])
    credential_type = one("credential_types", "NVIDIA NetQ")
    # Injector templates reach AWX unrendered (AWX renders them per job).
    assert credential_type["injectors"] == {"env": {"NETQ_USERNAME": "{{ username }}", "NETQ_PASSWORD": "{{ password }}"}}
    credential = one("credentials", "NetQ")
    assert credential["credential_type"] == credential_type["id"]
    assert credential["inputs"] == {"username": "svc-netq", "password": NETQ_PASSWORD}
    inventory = one("inventories", defaults["awx_topology_inventory_name"])
    (source,) = api.objects["inventory_sources"].values()
    assert (source["inventory"], source["source"], source["source_project"], source["source_path"]) == \
        (inventory["id"], "scm", project["id"], defaults["awx_topology_inventory_source_path"])
    assert (REPO / source["source_path"]).is_file()
    templates = {}
    for name, job_type in (("Topology: apply (site.yml)", "run"), ("Topology: review (check, diff)", "check")):
        template = templates[job_type] = one("job_templates", name)
        assert (template["job_type"], template["diff_mode"], template["survey_enabled"]) == (job_type, True, True)
        assert (template["project"], template["inventory"], template["execution_environment"]) == \
            (project["id"], inventory["id"], ee["id"])
        assert (REPO / template["playbook"]).is_file() and template["playbook"] == "playbooks/site.yml"
        assert api.associations[("job_templates", template["id"], "credentials")] == [credential["id"]]
        assert api.surveys[template["id"]]["spec"]
    (schedule,) = api.objects["schedules"].values()
    assert schedule["unified_job_template"] == templates["run"]["id"]
    assert "RRULE:FREQ=DAILY" in schedule["rrule"] and schedule["enabled"] is True


def test_survey_is_valid_for_awx_and_every_variable_has_a_default(awx_api):
    api, _runs = awx_api
    surveys = list(api.surveys.values())
    assert len(surveys) == 2 and surveys[0] == surveys[1]
    spec = surveys[0]
    assert spec["name"] and spec["description"] and spec["spec"]
    variables = [question["variable"] for question in spec["spec"]]
    assert len(set(variables)) == len(variables)
    assert {OUTPUT_DIR_VAR, BLOCK_SIZES_VAR} <= set(variables)
    for question in spec["spec"]:
        assert question["type"] in SURVEY_TYPES, question
        assert isinstance(question["required"], bool) and question["question_name"], question
        default = str(question.get("default", ""))
        if question["type"] in ("text", "textarea", "password"):
            assert question["min"] <= len(default) <= question["max"], question
        if question["type"] in ("multiplechoice", "multiselect"):
            assert set(default.split("\n")) <= set(question["choices"].split("\n")), question
    # Without the survey (ad-hoc runs, schedules with no answers) the inventory supplies each value.
    source = REPO / awx_setup_play()["vars"]["awx_topology_inventory_source_path"]
    listing = json.loads(run([tool("ansible-inventory"), "-i", source, "--list"], env=clean_env()).stdout)
    hostvars = listing["_meta"]["hostvars"]
    assert hostvars
    for host, values in hostvars.items():
        missing = [name for name in variables if name not in values]
        assert not missing, f"{host} has no default for survey variables {missing} in {source}"


def ansible_files():
    roots = [REPO / "playbooks", REPO / "roles", AWX_SETUP.parent]
    return sorted(path for root in roots if root.exists() for path in root.rglob("*.yml"))


def mappings(data):
    if isinstance(data, dict):
        yield data
        for value in data.values():
            yield from mappings(value)
    elif isinstance(data, list):
        for value in data:
            yield from mappings(value)


def test_no_playbook_or_role_prompts():
    """An AWX job has no terminal: vars_prompt and pause prompts would hang or fail it."""
    checked = 0
    for path in ansible_files():
        data = yaml.load(path.read_text(), Loader=UnsafeTolerantLoader)
        checked += 1
        for mapping in mappings(data):
            assert "vars_prompt" not in mapping, f"{path}: vars_prompt"
            for key in ("pause", "ansible.builtin.pause", "ansible.legacy.pause"):
                assert not (isinstance(mapping.get(key), dict) and "prompt" in mapping[key]), f"{path}: {key} prompt"
    assert checked >= 2


# --- A job, run the way AWX runs it --------------------------------------------------------------


def changed_ok(events):
    return [event for event in events
            if event["event"] == "runner_on_ok" and event.get("event_data", {}).get("res", {}).get("changed")]


def writes_to(events, directory):
    """{file name: runner_on_ok event} for the tasks whose result names a file in `directory`."""
    found = {}
    for event in events:
        res = event.get("event_data", {}).get("res", {})
        dest = res.get("dest") if event["event"] == "runner_on_ok" else None
        if dest and Path(dest).parent == directory:
            found[Path(dest).name] = event
    return found


def block_sizes_in(name, text):
    """The block sizes a rendered topology.conf or topology.yaml declares (one list per block topology)."""
    if name == "topology.conf":
        return [[int(size) for size in line.split("=", 1)[1].split(",")]
                for line in text.splitlines() if line.startswith("BlockSizes=")]
    return [entry["block"]["block_sizes"] for entry in yaml.safe_load(text) if "block" in entry]


def rendered_block_sizes(directory):
    found = {name: block_sizes_in(name, (directory / name).read_text())
             for name in TOPOLOGY_FILES if (directory / name).exists()}
    assert found, f"no topology file in {directory}: {sorted(path.name for path in directory.iterdir())}"
    return found


class Job:
    """One ansible-runner run and its artifacts."""

    def __init__(self, result, artifacts, private_data_dir, extravars):
        self.status, self.rc, self.stats = result.status, result.rc, result.stats
        self.artifacts = artifacts
        self.private_data_dir = private_data_dir
        self.extravars = extravars
        self.events = job_events(artifacts)


def write_inventory_script(inventory, directory):
    """The inventory as AWX hands it to a job: an executable that prints the imported JSON."""
    directory.mkdir(parents=True)
    script = directory / "hosts"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write({json.dumps(inventory)!r})\n")
    script.chmod(0o755)
    return script


def run_job(awx, name, extravars, cmdline=None):
    """A fresh private data dir per job, as AWX makes: the inventory, then ansible-runner."""
    private = awx["base"] / name
    inventory = write_inventory_script(awx["inventory"], private / "inventory")
    result = ansible_runner.run(
        private_data_dir=str(private), project_dir=str(awx["project"]), playbook="playbooks/site.yml",
        inventory=str(inventory), extravars=extravars, envvars=awx["envvars"], cmdline=cmdline,
        ident=name, quiet=True)
    return Job(result, private / "artifacts" / name, private, extravars)


@pytest.fixture(scope="module")
def awx(tmp_path_factory):
    """Project sync and three jobs: apply with extra variables, apply again, review in check mode."""
    base = tmp_path_factory.mktemp("awx")
    project = base / "project"
    scm_checkout(project)
    # The project sync (awx/playbooks/project_update.yml): from the project's root, into the cache
    # that each job gets first on its collections path.
    collections = base / "requirements_collections"
    sync = run([tool("ansible-galaxy"), "collection", "install", "-r", "collections/requirements.yml",
                "--collections-path", collections], cwd=project, env=clean_env(ANSIBLE_COLLECTIONS_PATH=str(collections)))
    envvars = {"ANSIBLE_COLLECTIONS_PATH": str(collections), "ANSIBLE_NOCOLOR": "1",
               "PATH": clean_env()["PATH"]}
    # The inventory sync of the SCM source the example sets up (awx_setup.yml): AWX imports
    # `ansible-inventory --list --export` and gives jobs that, not the project's inventory files.
    source = awx_setup_play()["vars"]["awx_topology_inventory_source_path"]
    imported = run([tool("ansible-inventory"), "-i", source, "--list", "--export"], cwd=project,
                   env=clean_env(**envvars)).stdout
    listed = run([tool("ansible-galaxy"), "collection", "list", FQCN, "--format", "json"],
                 cwd=project, env=clean_env(**envvars)).stdout
    awx = {"base": base, "project": project, "collections": collections, "envvars": envvars,
           "sync": sync.stdout, "listed": json.loads(listed), "inventory": json.loads(imported),
           "output_dir": base / "slurm"}
    # ansible-runner passes its own environment on: drop this checkout's collection from it.
    with pytest.MonkeyPatch.context() as patch:
        for key in ("ANSIBLE_CONFIG", "PYTHONPATH", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS"):
            patch.delenv(key, raising=False)
        # Extra variables as a job template's extra_vars or a schedule's extra_data give them (YAML).
        answers = {OUTPUT_DIR_VAR: str(awx["output_dir"]), BLOCK_SIZES_VAR: [18, 36]}
        awx["first"] = run_job(awx, "first", answers)
        awx["second"] = run_job(awx, "second", answers)
        awx["check"] = run_job(awx, "check", {**answers, BLOCK_SIZES_VAR: [18, 36, 72]}, cmdline="--check --diff")
    return awx


def assert_succeeded(job):
    assert (job.status, job.rc) == ("successful", 0), (job.artifacts / "stdout").read_text()
    for name in ("stdout", "status", "rc"):
        assert (job.artifacts / name).is_file(), name
    assert (job.artifacts / "status").read_text().strip() == "successful"
    assert (job.artifacts / "rc").read_text().strip() == "0"
    assert list((job.artifacts / "job_events").glob("*.json"))
    assert "PLAY RECAP" in (job.artifacts / "stdout").read_text()
    stats = [event for event in job.events if event["event"] == "playbook_on_stats"]
    assert len(stats) == 1 and stats[0] is job.events[-1], "playbook_on_stats must close the job events"
    data = stats[0]["event_data"]
    assert data["failures"] == {} and data["dark"] == {}, data
    assert data["ok"], data
    assert {key: data[key] for key in ("ok", "changed", "failures")} == \
        {key: job.stats[key] for key in ("ok", "changed", "failures")}
    return data


@pytest.mark.playbook
def test_project_sync_installs_the_collection_from_collections_requirements(awx):
    assert f"Installing '{FQCN}:{GALAXY['version']}'" in awx["sync"]
    installed = awx["collections"] / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"]
    assert not installed.is_symlink() and (installed / "MANIFEST.json").is_file()
    # The job sees the synced copy and nothing else (not this checkout, not .collections).
    assert list(awx["listed"]) == [str(awx["collections"] / "ansible_collections")], awx["listed"]
    assert not (awx["project"] / ".collections").exists()


@pytest.mark.playbook
def test_job_with_extra_variables_writes_the_topology_where_asked(awx):
    job = awx["first"]
    data = assert_succeeded(job)
    output = awx["output_dir"]
    written = writes_to(job.events, output)
    topology = rendered_block_sizes(output)
    for name in topology:
        assert name in written, f"no job event for the task that wrote {name}"
        assert written[name]["event_data"]["res"]["changed"] is True, written[name]["event_data"]["task"]
    assert sum(data["changed"].values()) >= len(topology)
    assert len(changed_ok(job.events)) >= len(topology)
    # The inventory's own default (example-output/ of the project) was overridden, so nothing went there.
    assert not (awx["project"] / "example-output").exists()
    assert not (job.private_data_dir / "inventory" / "output").exists()
    # The block sizes asked for are the ones rendered.
    assert topology == {name: [[18, 36]] for name in topology}


@pytest.mark.playbook
def test_second_job_reports_no_change(awx):
    job = awx["second"]
    data = assert_succeeded(job)
    assert changed_ok(job.events) == [], [event["event_data"]["task"] for event in changed_ok(job.events)]
    assert not any(data["changed"].values()), data["changed"]


@pytest.mark.playbook
def test_check_diff_job_shows_the_change_and_writes_nothing(awx):
    """Job type Check with Show changes: ansible-playbook --check --diff."""
    before = {path.name: path.read_bytes() for path in awx["output_dir"].iterdir()}
    job = awx["check"]
    assert_succeeded(job)
    assert {path.name: path.read_bytes() for path in awx["output_dir"].iterdir()} == before
    written = writes_to(job.events, awx["output_dir"])
    for name in before:
        if name not in TOPOLOGY_FILES:
            continue
        res = written[name]["event_data"]["res"]
        assert res["changed"] is True, name
        diffs = res["diff"] if isinstance(res["diff"], list) else [res["diff"]]
        assert [block_sizes_in(name, diff["after"]) for diff in diffs if "after" in diff] == [[[18, 36, 72]]], name


@pytest.mark.playbook
def test_survey_text_answer_for_block_sizes(awx):
    """A survey answers text ('18,36'); the job renders those sizes all the same."""
    output = awx["base"] / "survey-slurm"
    with pytest.MonkeyPatch.context() as patch:
        for key in ("ANSIBLE_CONFIG", "PYTHONPATH", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS"):
            patch.delenv(key, raising=False)
        job = run_job(awx, "survey", {OUTPUT_DIR_VAR: str(output), BLOCK_SIZES_VAR: "18,36"})
    assert_succeeded(job)
    topology = rendered_block_sizes(output)
    assert topology == {name: [[18, 36]] for name in topology}
