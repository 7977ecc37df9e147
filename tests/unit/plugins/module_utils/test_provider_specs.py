"""The provider registry: specs, central validation, lazy loading, and docs generated from the specs."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys

import pytest
import yaml

from ansible_collections.aifactory.topology.plugins.module_utils import _providers
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import TopologyError
from ansible_collections.aifactory.topology.plugins.module_utils._providers import _specs, load, validate

from ...conftest_paths import REPO

INSTANCES = [{"region": "r", "instances": {"i-1": "n1"}}]
# A value of each option type that validation accepts as it is.
SAMPLES = {"str": "x", "path": "/x", "raw": "x", "int": 1, "float": 1.0, "bool": True}


def minimal(spec):
    """The least ``spec`` accepts: its required options only, each with a value of its type."""
    return {key: _sample(option) for key, option in spec.items() if option.get("required")}


def _sample(option):
    if option.get("choices"):
        return option["choices"][0]
    kind = option.get("type", "str")
    if kind == "dict":
        return minimal(option.get("options") or {})
    if kind == "list":
        return [_sample({"type": option.get("elements", "str"), "options": option.get("options")})]
    return SAMPLES[kind]


# The least each provider needs to pass validation, from its spec.
MINIMAL = {name: minimal(provider.params.argument_spec) for name, provider in _specs.PROVIDERS.items()}
PROVIDERS_INIT = REPO / "plugins" / "module_utils" / "_providers" / "__init__.py"
SDKS = ("boto3", "botocore", "kubernetes", "requests", "grpc", "cryptography", "urllib3")


def _load_tool():
    spec = importlib.util.spec_from_file_location("provider_docs", REPO / "tools" / "provider_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_provider_validates_its_minimal_params_and_takes_accelerator():
    for name, provider in _specs.PROVIDERS.items():
        validate(name, MINIMAL[name])  # raises when a required key is missing
        assert provider.params.argument_spec["accelerator"] is _specs.ACCELERATOR, name
        assert provider.params.argument_spec["discovery_timeout"] is _specs.DISCOVERY_TIMEOUT, name


@pytest.mark.parametrize("name", sorted(_specs.PROVIDERS))
def test_unknown_params_keys_are_errors_naming_provider_and_key(name):
    with pytest.raises(TopologyError, match=rf"^provider {name}: params has unknown keys: normalise_switch_names; known: "):
        validate(name, dict(MINIMAL[name], normalise_switch_names=True))
    with pytest.raises(TopologyError, match=rf"^provider {name}: params.accelerator has unknown keys: nvidiaSmi; known: "
                                            "nvidia_smi, rack_escalation, rack_from_name, rack_trays, require_domain, source$"):
        validate(name, dict(MINIMAL[name], accelerator={"nvidiaSmi": {}}))


@pytest.mark.parametrize("name", sorted(_specs.PROVIDERS))
def test_unknown_creds_keys_are_errors_that_never_show_values(name):
    with pytest.raises(TopologyError, match=rf"^provider {name}: creds has unknown keys: tokn; known: ") as info:
        validate(name, MINIMAL[name], {"tokn": "s3cr3t-value"})
    assert "s3cr3t-value" not in str(info.value)


def test_creds_values_quoted_by_the_validator_are_masked():
    with pytest.raises(TopologyError, match=r"creds: argument 'validate_certs' is of type (<class ')?str('>)? .*'\*\*\*\*\*\*\*\*'") as info:
        validate("dra", {}, {"validate_certs": "s3cr3t-value"})
    assert "s3cr3t-value" not in str(info.value)


def test_types_choices_required_and_defaults_come_from_the_spec():
    params, creds = validate("aws", {"instances": INSTANCES, "timeout": "12", "validate_certs": "no"})
    assert (params["timeout"], params["validate_certs"], params["page_size"], params["retry_attempts"]) == (12.0, False, 100, 5)
    assert creds == {"access_key_id": None, "secret_access_key": None, "session_token": None}
    with pytest.raises(TopologyError, match="^provider aws: params: missing required arguments: instances$"):
        validate("aws", {})
    with pytest.raises(TopologyError, match=r"provider gcp: params: argument 'timeout' is of type (<class ')?str('>)? and we were unable to convert to float"):
        validate("gcp", {"instances": INSTANCES, "timeout": "soon"})
    with pytest.raises(TopologyError, match="provider oci: params: value of trim_tiers must be one of: 0, 1, 2, got: 3"):
        validate("oci", {"instances": INSTANCES, "trim_tiers": 3})
    with pytest.raises(TopologyError, match=r"provider nebius: params.instances\[0\] has unknown keys: nodes; known: instances, region"):
        validate("nebius", {"instances": [{"region": "r", "nodes": {}}]})
    with pytest.raises(TopologyError, match=r"provider inventory: params.domains\[0\].sub_domains\[1\] has unknown keys: node"):
        validate("inventory", {"domains": [{"name": "r", "sub_domains": [{"name": "a"}, {"node": "x"}]}]})
    with pytest.raises(TopologyError, match="^provider netq: params must be a mapping, got list$"):
        validate("netq", [])
    with pytest.raises(TopologyError, match="unknown provider 'cloud'; known providers: aws, dra"):
        validate("cloud", {})
    params, creds = validate("node_labels", {}, {"verify_ssl": False})
    assert params["instance_annotation"] == "topograph.run/instance" and creds["validate_certs"] is False


def test_load_imports_the_named_provider_and_returns_its_discover_function():
    for name, provider in _specs.PROVIDERS.items():
        function = load(name)
        assert function.__name__ == provider.function
        assert function.__module__.endswith(f"._providers.{provider.module}")


def test_importing_the_providers_package_imports_no_provider_and_no_sdk():
    code = ("import sys\n"
            "from ansible_collections.aifactory.topology.plugins.module_utils import _providers\n"
            "from ansible_collections.aifactory.topology.plugins.module_utils._orchestration import common\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in %r or '._providers.' in m))\n" % (SDKS,))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": ":".join(sys.path)})
    assert done.stdout.strip() == "['ansible_collections.aifactory.topology.plugins.module_utils._providers._specs']"


def _loader_branches():
    """(the name compared, the modules imported) per branch of ``_providers._provider_module``'s if/elif chain."""
    tree = ast.parse(PROVIDERS_INIT.read_text(encoding="utf-8"))
    function = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "_provider_module")
    branch, branches = function.body[0], []
    while isinstance(branch, ast.If):
        imported = [alias.name for statement in branch.body if isinstance(statement, ast.ImportFrom)
                    for alias in statement.names]
        branches.append((branch.test.comparators[0].value, imported))
        branch = branch.orelse[0] if branch.orelse else None
    return branches


def test_the_loader_chain_imports_each_registered_module_once_and_nothing_else():
    """The if/elif chain is kept by hand (AnsiballZ ships static imports only): it must say what PROVIDERS says."""
    branches = _loader_branches()
    assert [imported for _compared, imported in branches] == [[compared] for compared, _imported in branches]
    compared = [name for name, _imported in branches]
    assert sorted(compared) == sorted({provider.module for provider in _specs.PROVIDERS.values()})
    assert len(compared) == len(set(compared))


def test_ansiballz_finds_every_provider_imported_inside_the_loader_function():
    """AnsiballZ ships what ansible-core's ModuleDepFinder finds; it walks function bodies too."""
    from ansible.executor.module_common import ModuleDepFinder  # pylint: disable=import-outside-toplevel

    finder = ModuleDepFinder("ansible_collections.aifactory.topology.plugins.module_utils._providers",
                             ast.parse(PROVIDERS_INIT.read_text(encoding="utf-8")), is_pkg_init=True)
    found = {name[-1] for name in finder.submodules if name[-2] == "_providers"}
    assert {provider.module for provider in _specs.PROVIDERS.values()} <= found


def test_the_provider_docs_doc_fragment_and_provider_lists_are_generated_from_the_registry():
    tool = _load_tool()
    stale = [str(path.relative_to(REPO)) for path, text in tool.expected_files().items()
             if path.read_text(encoding="utf-8") != text]
    assert not stale, f"run python tools/provider_docs.py: out of date: {stale}"


def test_every_spec_key_is_on_its_page_and_every_table_key_is_in_the_spec():
    tool = _load_tool()
    for name, provider in _specs.PROVIDERS.items():
        page = (REPO / "docs" / "providers" / provider.doc).read_text(encoding="utf-8")
        table = page.split(tool.TABLE_BEGIN)[1].split(tool.TABLE_END)[0]
        documented = {(row.split("|")[2].strip(), row.split("|")[1].strip().strip("`"))
                      for row in table.strip().splitlines()[2:]}
        sections = (("params", provider.params.argument_spec), ("creds", provider.creds.argument_spec))
        declared = {(section, key) for section, spec in sections for key, _option in tool.flatten(spec)}
        assert documented == declared, name


def test_the_cloud_table_of_the_provider_index_has_a_row_per_cloud_provider():
    """Its columns are facts about each cloud's API, kept by hand; its rows are the providers that take instances."""
    index = (REPO / "docs" / "providers" / "README.md").read_text(encoding="utf-8")
    rows = index.split("\n| Provider | Page | API |")[1].split("\n\n")[0].strip().splitlines()[2:]
    listed = [(row.split("|")[1].strip(" `"), row.split("|")[2].strip()) for row in rows]
    clouds = [(name, f"[{provider.doc}]({provider.doc})") for name, provider in _specs.PROVIDERS.items()
              if "instances" in provider.params.argument_spec]
    assert listed == clouds


def test_the_doc_fragment_lists_every_provider_key_and_the_name_choices():
    from ansible_collections.aifactory.topology.plugins.doc_fragments.provider import ModuleDocFragment  # pylint: disable=import-outside-toplevel

    options = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]["provider"]["suboptions"]
    assert options["name"]["choices"] == list(_specs.PROVIDERS)
    for name, provider in _specs.PROVIDERS.items():
        for section in ("params", "creds"):
            line = next((text for text in options[section]["description"] if text.startswith(f"For V({name}):")), "")
            keys = {part.split(")")[0] for part in line.split("C(")[1:]}
            assert keys == set(getattr(provider, section).argument_spec) - {"accelerator", "discovery_timeout"}, \
                (name, section)


def test_discover_validates_before_it_loads_the_provider(monkeypatch):
    loaded = []
    monkeypatch.setattr(_providers, "load", loaded.append)
    with pytest.raises(TopologyError, match="provider aws: params: missing required arguments: instances"):
        _providers.discover("aws", {})
    assert not loaded
