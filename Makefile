# aifactory.topology developer entry points.
#
#   make example   set everything up, then run playbooks/site.yml on inventories/example
#   make test      set everything up, then run the whole suite (what CI runs via .ci/run)
#
# Every tool comes from .venv (created here from tests/requirements.txt). The collection is
# visible to Ansible and to Python as ansible_collections.aifactory.topology through the
# symlink .collections/ansible_collections/aifactory/topology -> this checkout.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
PYTHON ?= python3
VENV := $(ROOT)/.venv
VENV_STAMP := $(VENV)/.requirements.sha256
REQUIREMENTS := tests/requirements.txt requirements.txt
COLLECTIONS := $(ROOT)/.collections
COLLECTION_LINK := $(COLLECTIONS)/ansible_collections/aifactory/topology
OUTPUT := $(ROOT)/tests/output
# Debian packages the Slurm test bed (debootstrap, lua5.1), the shellcheck sanity test and the
# segment report's browser test (chromium, headless) need, and podman for the Molecule scenarios
# and the execution environment (runc: crun fails on hybrid cgroup hosts; netavark +
# aardvark-dns: the scenarios' networks, and iptables, which netavark calls to set up every
# bridge network: without it each build or container fails with "netavark: No such file or
# directory"; rootful, so no uidmap or slirp4netns).
# (The Kubernetes test bed needs none: Go >= 1.26 comes with the machine, certificates come
# from the cryptography package, and etcd is built from the Go module proxy.)
# openjdk-17-jre-headless: ansible-rulebook's rule engine (drools, through drools_jpy) for the EDA tests.
# busybox-static: the preflight's tiny container (tools/preflight.py); git: the AWX tests' project sync
# and the release notes. prometheus (with promtool) and prometheus-node-exporter: the alert rules and
# the metrics against the real thing (tests/integration/test_prometheus.py). python3-venv: Debian's own
# python3 makes no virtual environment with pip without it (.venv, the compat and sanity environments).
APT_PACKAGES := debootstrap lua5.1 shellcheck chromium openjdk-17-jre-headless podman runc netavark aardvark-dns iptables \
                busybox-static git prometheus prometheus-node-exporter python3-venv
SLURM_CACHE := $(or $(AIFACTORY_CACHE),/var/cache/aifactory-topology)
# Measured cold build time of the Kubernetes test bed, for the setup message (docs/testing.md).
K8S_COLD_MINUTES := 7

export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
# Explicit, so the checkout's ansible.cfg applies even where Ansible would ignore it
# (for example a world-writable working directory).
export ANSIBLE_CONFIG := $(ROOT)/ansible.cfg
ifdef CI
export ANSIBLE_NOCOLOR := 1
endif
# Where a suite cannot run here: outside CI it is skipped, loudly; under CI=true that is a failure,
# since a green CI run must mean every suite ran.
# CI is read as tools/ci_mode.py reads it: set unless empty, 0, false or no, in any case.
SKIP_OR_FAIL := $(if $(filter-out 0 false no,$(shell printf '%s' '$(CI)' | tr A-Z a-z)),echo "* CI=true: a suite that cannot run fails the run"; exit 1,true)
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# ansible-rulebook (EDA tests, docs/event-driven.md) loads the JVM from JAVA_HOME.
JAVA_HOME ?= $(firstword $(wildcard /usr/lib/jvm/java-17-openjdk-*))
export JAVA_HOME
export DEBIAN_FRONTEND := noninteractive

# ansible-core releases that meta/runtime.yml's requires_ansible covers and this Python (3.11) runs,
# besides .venv's 2.19 (2.20 needs Python 3.12): `make compat` runs sanity and units on each.
COMPAT_CORE := 2.17 2.18
# On the machine, not in the checkout: CI's fresh clones reuse them (rebuilt when their requirements change).
COMPAT_VENVS := $(SLURM_CACHE)/compat
# empty-init: before 2.19 it also wants every plugins/module_utils/**/__init__.py empty (a Python 2
# rule that 2.19 dropped); AnsiballZ ships those packages whole, which the module run proves.
COMPAT_SANITY_SKIP := --skip-test empty-init

.PHONY: help setup preflight-host preflight-packages venv link system-packages testbed k8s-testbed ee-image compat-venvs sanity-venvs example test units integration integration-k8s \
        sanity lint build compat release-notes bench bench-topograph clean images molecule
# Molecule scenarios of `make molecule` (extensions/molecule/<name>), in order.
MOLECULE_SCENARIOS := slurm_cluster imex

help:
	@echo "make example      set up, then: ansible-playbook -i inventories/example playbooks/site.yml"
	@echo "make test         set up and run every test step, each as soon as what it needs is built"
	@echo "make setup        .venv, .collections link, Debian packages, the Slurm chroot (root) and the"
	@echo "                  Kubernetes test bed (kube-apiserver, kube-scheduler, etcd; needs Go)"
	@echo "make units | integration | integration-k8s | sanity | lint | build | compat | molecule | images | release-notes | bench | bench-topograph | clean"

## Setup ------------------------------------------------------------------------------

# The builds and the tests are one graph of these make targets (tools/run_steps.py): each starts as
# soon as what it needs is ready, so the Go builds (which need Go, not .venv) start right after the
# Debian packages and the tests that need no Kubernetes run while Go compiles. Each step's output is
# in tests/output/<step>.run.log; the terminal gets its start, its end and a line every two minutes.
setup: preflight-host system-packages preflight-packages link
	@$(PYTHON) "$(ROOT)/tools/run_steps.py" setup

# The cheapest real check of every prerequisite, in seconds, before the long builds
# (tools/preflight.py): what apt cannot install first, then every installed tool and a tiny
# podman container on its own network. Under CI=true, what would make a suite skip fails here.
preflight-host:
	@$(PYTHON) "$(ROOT)/tools/preflight.py" host

preflight-packages: system-packages
	@$(PYTHON) "$(ROOT)/tools/preflight.py" packages

# Idempotent: reinstalls only when the requirement files change (hash in $(VENV_STAMP)).
# Under a lock: several make runs at once (parallel test sessions) must not install into .venv together.
venv:
	@cd "$(ROOT)"; \
	exec 9>"$(ROOT)/.venv.lock"; flock 9; \
	if [ ! -x "$(VENV)/bin/python" ]; then \
	  echo "setup: creating $(VENV) with $$($(PYTHON) --version)"; \
	  $(PYTHON) -m venv "$(VENV)"; \
	fi; \
	want=$$(cat $(REQUIREMENTS) | sha256sum | cut -d' ' -f1); \
	if [ "$$(cat "$(VENV_STAMP)" 2>/dev/null)" != "$$want" ]; then \
	  echo "setup: installing tests/requirements.txt into .venv (cold: about 5 minutes)"; \
	  ( while sleep 60 >/dev/null 2>&1; do echo "setup: still installing into .venv"; done ) & beat=$$!; \
	  "$(VENV)/bin/python" -m pip install --quiet -r tests/requirements.txt || { kill $$beat; exit 1; }; \
	  kill $$beat; \
	  echo "$$want" > "$(VENV_STAMP)"; \
	else \
	  echo "setup: .venv is up to date"; \
	fi

link:
	@mkdir -p "$(dir $(COLLECTION_LINK))"
	@if [ "$$(readlink "$(COLLECTION_LINK)" 2>/dev/null)" != "../../.." ]; then \
	  ln -sfn ../../.. "$(COLLECTION_LINK)"; \
	  echo "setup: linked .collections/ansible_collections/aifactory/topology -> ../../.."; \
	fi

system-packages:
	@if [ "$$(id -u)" != 0 ]; then exit 0; fi; \
	missing=; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "setup: apt-get install$$missing"; \
	  apt-get -o DPkg::Lock::Timeout=600 update -qq; \
	  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The three builds below run on the machine's python3 (standard library only), so they need no .venv.
testbed:
	@if [ "$$(id -u)" = 0 ]; then \
	  echo "setup: Slurm test bed (built once, 1 to 4 minutes; cached in $(SLURM_CACHE))"; \
	  $(PYTHON) "$(ROOT)/tools/slurm_testbed.py" build; \
	else \
	  echo "************************************************************************"; \
	  echo "* NOTE: not running as root, so the Slurm test bed (a Debian sid chroot"; \
	  echo "* with a real slurmctld) cannot be built: the tests marked 'slurm' will"; \
	  echo "* be SKIPPED. Run as root for the full suite."; \
	  echo "************************************************************************"; \
	  $(SKIP_OR_FAIL); \
	fi

# Built from the Go module proxy once per machine (cold: about $(K8S_COLD_MINUTES) min on 2 cores), then cached
# in $(SLURM_CACHE)/k8s: kube-apiserver, kube-scheduler, etcd, the Kueue controller manager and nfd-master
# by one go build, so the packages they share compile once; exit code 3 from the tool means "no usable Go here".
k8s-testbed:
	@echo "setup: Kubernetes test bed (built once, about $(K8S_COLD_MINUTES) min cold; cached in $(SLURM_CACHE)/k8s)"; \
	rc=0; $(PYTHON) "$(ROOT)/tools/k8s_testbed.py" build || rc=$$?; \
	if [ "$$rc" = 3 ]; then \
	  echo "************************************************************************"; \
	  echo "* NOTE: no usable Go toolchain, so the Kubernetes test bed (kube-apiserver,"; \
	  echo "* kube-scheduler, etcd, Kueue and nfd-master from the Go module proxy) cannot be built:"; \
	  echo "* the tests marked 'k8s' will be SKIPPED. Install Go >= 1.26 for the full suite."; \
	  echo "************************************************************************"; \
	  $(SKIP_OR_FAIL); \
	elif [ "$$rc" != 0 ]; then \
	  exit "$$rc"; \
	fi

# The systemd node image of the Molecule scenarios and the execution environment's base image:
# debootstrapped once per recipe (tools/images/), then cached in podman's storage under
# $(SLURM_CACHE)/podman; exit code 3 from the tool means "podman cannot run here".
images: system-packages
	@echo "setup: container images (built once per recipe, about 2 min cold; cached in $(SLURM_CACHE)/podman)"; \
	rc=0; $(PYTHON) "$(ROOT)/tools/container_images.py" build || rc=$$?; \
	if [ "$$rc" = 3 ]; then \
	  echo "************************************************************************"; \
	  echo "* NOTE: podman cannot run containers here (see the line above), so the"; \
	  echo "* Molecule scenarios and the execution environment test will be SKIPPED."; \
	  echo "* Run as root on a machine with podman for the full suite."; \
	  echo "************************************************************************"; \
	  $(SKIP_OR_FAIL); \
	elif [ "$$rc" != 0 ]; then \
	  exit "$$rc"; \
	fi

# The execution environment (ansible-builder onto the ee-base image; pip from PyPI, several
# minutes cold), built in setup beside the other builds rather than inside the integration step;
# tests/integration/test_execution_environment.py reuses the tag. Skipped with images (exit 3).
ee-image: venv images link
	@echo "setup: execution environment image (built once per definition, several minutes cold)"; \
	rc=0; "$(VENV)/bin/python" "$(ROOT)/tools/execution_environment.py" build || rc=$$?; \
	if [ "$$rc" = 3 ]; then \
	  $(SKIP_OR_FAIL); \
	elif [ "$$rc" != 0 ]; then \
	  exit "$$rc"; \
	fi

## Main job ---------------------------------------------------------------------------

# The main job needs neither the Kubernetes test bed nor its build time. Where the Slurm test
# bed is built, every topology file is checked by its real slurmctld before it is written
# (the role's documented slurm_topology_validate_command); elsewhere the files are written unchecked.
EXAMPLE_VALIDATE := {"slurm_topology_validate_command": "$(VENV)/bin/python $(ROOT)/tools/slurm_testbed.py check %s"}
example: venv link system-packages testbed
	@cd "$(ROOT)"; \
	if "$(VENV)/bin/python" tools/slurm_testbed.py status >/dev/null 2>&1; then \
	  echo 'example: topology files are validated by the Slurm test bed (tools/slurm_testbed.py check)'; \
	  set -- -e '$(EXAMPLE_VALIDATE)'; \
	else \
	  echo 'example: no Slurm test bed here (it needs root), so topology files are written unvalidated'; \
	  set --; \
	fi; \
	set -x; ansible-playbook -i inventories/example playbooks/site.yml "$$@"

## Test suite -------------------------------------------------------------------------

# The set-up and every test step, as one graph (tools/run_steps.py; the summary at the end gives each
# step's status, time and what it ran; the step logs are kept under tests/output/).
test: preflight-host system-packages preflight-packages link
	@$(PYTHON) "$(ROOT)/tools/run_steps.py" test

# pytest wrapper: logs to tests/output/<name>.log; exit code 5 ("no tests collected") fails loudly.
define pytest
	@mkdir -p "$(OUTPUT)"
	@cd "$(ROOT)"; set +e; \
	PYTHONPATH="$(COLLECTIONS)" "$(VENV)/bin/python" -m pytest $(1) $(PYTEST_ARGS) 2>&1 | tee "$(OUTPUT)/$(2).log"; \
	rc=$${PIPESTATUS[0]}; set -e; \
	if [ "$$rc" = 5 ]; then echo "ERROR: pytest collected no tests from $(1) (exit 5); failing." | tee -a "$(OUTPUT)/$(2).log"; fi; \
	exit $$rc
endef

# The unit tests are CPU-bound and independent: one worker per core (pytest-xdist).
UNIT_WORKERS := -n $(shell nproc)

units: venv link
	$(call pytest,$(UNIT_WORKERS) tests/unit,units)

# The integration tests in two steps, so that the ones that need no Kubernetes test bed run while
# it builds: `make integration integration-k8s` is the whole integration suite.
integration: venv link
	$(call pytest,--durations=15 --cpu-durations=15 -m "not k8s" tests/integration,integration)

integration-k8s: venv link
	$(call pytest,--durations=15 --cpu-durations=15 -m k8s tests/integration,integration-k8s)

# Every scenario of MOLECULE_SCENARIOS through `molecule test` (create, converge, idempotence,
# verify, destroy) with the project's podman configuration; skipped, loudly, only where podman
# cannot run at all.
molecule: venv link images
	@mkdir -p "$(OUTPUT)"
	@cd "$(ROOT)"; \
	reason=$$("$(VENV)/bin/python" tools/container_images.py status 2>&1) && rc=0 || rc=$$?; \
	if [ "$$rc" = 3 ]; then \
	  echo "************************************************************************" | tee "$(OUTPUT)/molecule.log"; \
	  echo "* molecule: SKIPPED: $$reason" | tee -a "$(OUTPUT)/molecule.log"; \
	  echo "************************************************************************" | tee -a "$(OUTPUT)/molecule.log"; \
	  $(SKIP_OR_FAIL); \
	  exit 0; \
	fi; \
	eval "$$("$(VENV)/bin/python" tools/container_images.py env)"; \
	: > "$(OUTPUT)/molecule.log"; passed=; \
	for scenario in $(MOLECULE_SCENARIOS); do \
	  start=$$SECONDS; \
	  NO_COLOR=1 "$(VENV)/bin/molecule" test --scenario-name "$$scenario" 2>&1 | tee -a "$(OUTPUT)/molecule.log" || { \
	    echo "molecule: $$scenario FAILED (log: $(OUTPUT)/molecule.log)" | tee -a "$(OUTPUT)/molecule.log"; exit 1; }; \
	  passed="$$passed $$scenario ($$((SECONDS - start))s)"; \
	done; \
	echo "molecule: passed:$$passed" | tee -a "$(OUTPUT)/molecule.log"

sanity: venv
	@mkdir -p "$(OUTPUT)"
	@"$(ROOT)/tests/sanity.sh" 2>&1 | tee "$(OUTPUT)/sanity.log"

lint: venv
	@mkdir -p "$(OUTPUT)"
	@cd "$(ROOT)" && "$(VENV)/bin/ansible-lint" --offline $(if $(CI),--nocolor,) 2>&1 | tee "$(OUTPUT)/lint.log"
	@# A warning from Ansible while the project is linted is a defect of the project (the green path prints none).
	@if grep -a '\[WARNING\]:' "$(OUTPUT)/lint.log"; then echo "ERROR: Ansible printed the warning above while linting"; exit 1; fi

# Build the artifact, install it into a scratch collections path and check that
# ansible-doc finds the module there (not in this checkout).
build: venv
	@cd "$(ROOT)"; rm -rf build; mkdir -p build "$(OUTPUT)"; \
	ansible-galaxy collection build --force --output-path build . | tee "$(OUTPUT)/build.log"; \
	artifact=$$(ls build/aifactory-topology-*.tar.gz); \
	listing=$$(tar -tzf "$$artifact"); \
	if grep -E '^(\.venv|\.collections|\.git|\.ci|build|tests/output)(/|$$)' <<<"$$listing"; then \
	  echo "ERROR: $$artifact contains development state (listed above)"; exit 1; \
	fi; \
	for f in meta/runtime.yml meta/execution-environment.yml requirements.txt bindep.txt LICENSE \
	         extensions/eda/rulebooks/k8s_topology.yml extensions/eda/rulebooks/slurm_topology.yml \
	         extensions/eda/plugins/event_source/k8s_nodes.py extensions/eda/plugins/event_source/slurm_nodes.py \
	         extensions/eda/plugins/event_source/regenerate.py files/prometheus/aifactory-topology-alerts.yml; do \
	  grep -qx "$$f" <<<"$$listing" || { echo "ERROR: $$artifact lacks $$f"; exit 1; }; \
	done; \
	scratch=$$(mktemp -d); trap 'rm -rf "$$scratch"' EXIT; \
	cd "$$scratch"; \
	export ANSIBLE_COLLECTIONS_PATH="$$scratch" ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false; \
	unset PYTHONPATH ANSIBLE_CONFIG; \
	ansible-galaxy collection install --offline -p "$$scratch" "$(ROOT)/$$artifact" >/dev/null; \
	ansible-doc -t module -l aifactory.topology > list.txt; \
	grep -q '^aifactory\.topology\.topology_info ' list.txt || { \
	  echo "ERROR: ansible-doc does not list aifactory.topology.topology_info from the installed artifact"; \
	  cat list.txt; exit 1; }; \
	ansible-doc --json aifactory.topology.topology_info \
	  | "$(VENV)/bin/python" -c 'import json, sys; d = json.load(sys.stdin)["aifactory.topology.topology_info"]["doc"]; \
	    assert d["filename"].startswith(sys.argv[1]), d["filename"]; print("build: ansible-doc reads", d["filename"])' "$$scratch" \
	  | tee -a "$(OUTPUT)/build.log"; \
	ansible localhost -c local -e ansible_python_interpreter="$(VENV)/bin/python" -m aifactory.topology.slurm_topology \
	  -a '{"provider": {"name": "inventory", "params": {"domains": [{"name": "r1", "nodes": "n[1-2]"}, {"name": "r2"}]}}, "plugin": "topology/block"}' \
	  > run.txt 2>&1 || { cat run.txt; echo "ERROR: the installed slurm_topology module failed"; exit 1; }; \
	grep -q 'BlockName=r1 Nodes=n\[1-2\]\\nBlockName=r2\\nBlockSizes=2' run.txt || { \
	  cat run.txt; echo "ERROR: the installed slurm_topology module rendered something unexpected"; exit 1; }; \
	echo "build: the installed collection renders topology.conf" | tee -a "$(OUTPUT)/build.log"; \
	"$(VENV)/bin/python" -c 'import runpy, sys; [runpy.run_path(p)["main"] for p in sys.argv[1:]]' \
	  "$$scratch"/ansible_collections/aifactory/topology/extensions/eda/plugins/event_source/*.py \
	  || { echo "ERROR: the installed EDA event sources do not load as ansible-rulebook loads them"; exit 1; }; \
	echo "build: the installed EDA event sources load (as ansible-rulebook runs them)" | tee -a "$(OUTPUT)/build.log"; \
	echo "build: $$artifact OK ($$(wc -l <<<"$$listing") entries)" | tee -a "$(OUTPUT)/build.log"

# Sanity and units on the older ansible-core releases requires_ansible covers, each in a small
# virtual environment kept in $(COMPAT_VENVS) and rebuilt only when its requirements change.
# The compat virtual environments (pip, a few minutes cold): built in setup beside the other builds.
compat-venvs:
	@mkdir -p "$(COMPAT_VENVS)"
	@cd "$(ROOT)"; for core in $(COMPAT_CORE); do \
	  venv="$(COMPAT_VENVS)/ansible-core-$$core"; \
	  reqs=("ansible-core==$$core.*" "pytest>=9.0,<10" "pytest-xdist>=3.6,<4" "pytest-timeout>=2.3,<3" "hypothesis>=6.170,<7" \
	        -r requirements.txt); \
	  exec 9>"$$venv.lock"; flock 9; \
	  want=$$( { printf '%s\n' "$${reqs[@]}"; cat requirements.txt; } | sha256sum | cut -d' ' -f1); \
	  if [ "$$(cat "$$venv/.requirements.sha256" 2>/dev/null)" != "$$want" ]; then \
	    echo "compat: creating $$venv"; rm -rf "$$venv"; $(PYTHON) -m venv "$$venv"; \
	    ( while sleep 60 >/dev/null 2>&1; do echo "compat: still installing into $$venv"; done ) & beat=$$!; \
	    "$$venv/bin/python" -m pip install --quiet "$${reqs[@]}" || { kill $$beat; exit 1; }; \
	    kill $$beat; \
	    echo "$$want" > "$$venv/.requirements.sha256"; \
	  fi; \
	  exec 9>&-; \
	done

# ansible-test's own virtual environments for each sanity test (pip, minutes cold; cached in
# ~/.ansible/test/venv), for .venv's ansible-core and each compat release: one after another, since
# releases with equal pins share a directory.
sanity-venvs: venv compat-venvs
	@mkdir -p "$(OUTPUT)"; "$(ROOT)/tests/sanity.sh" --prime-venvs > "$(OUTPUT)/sanity-venvs.log"
	@for core in $(COMPAT_CORE); do \
	  VENV="$(COMPAT_VENVS)/ansible-core-$$core" "$(ROOT)/tests/sanity.sh" $(COMPAT_SANITY_SKIP) --prime-venvs \
	    >> "$(OUTPUT)/sanity-venvs.log"; \
	done
	@echo "setup: ansible-test's sanity environments are ready"

compat: link compat-venvs
	@mkdir -p "$(OUTPUT)"
	@cd "$(ROOT)"; set -o pipefail; for core in $(COMPAT_CORE); do \
	  venv="$(COMPAT_VENVS)/ansible-core-$$core"; \
	  echo "==> compat: ansible-core $$("$$venv/bin/python" -c 'from ansible.release import __version__; print(__version__)'): units"; \
	  PYTHONPATH="$(COLLECTIONS)" "$$venv/bin/python" -m pytest $(UNIT_WORKERS) tests/unit -q -p no:cacheprovider $(PYTEST_ARGS); \
	  echo "==> compat: ansible-core $$core: a module run through AnsiballZ"; \
	  ran=$$(ANSIBLE_COLLECTIONS_PATH="$(COLLECTIONS)" ANSIBLE_CALLBACK_RESULT_FORMAT=json "$$venv/bin/ansible" \
	    localhost -c local -e ansible_python_interpreter="$$venv/bin/python" -m aifactory.topology.slurm_topology \
	    -a '{"provider": {"name": "inventory", "params": {"domains": [{"name": "r1", "nodes": "n[1-2]"}, {"name": "r2"}]}}, "plugin": "topology/block"}' \
	    2>&1) || true; \
	  grep -q 'BlockName=r1 Nodes=n\[1-2\]\\nBlockName=r2\\nBlockSizes=2' <<<"$$ran" \
	    || { echo "$$ran"; echo "compat: slurm_topology failed or rendered something else on ansible-core $$core"; exit 1; }; \
	  echo "compat: ansible-core $$core ran aifactory.topology.slurm_topology"; \
	  echo "==> compat: ansible-core $$core: sanity"; \
	  VENV="$$venv" "$(ROOT)/tests/sanity.sh" $(COMPAT_SANITY_SKIP); \
	done 2>&1 | tee "$(OUTPUT)/compat.log"

# The next release's notes, generated by antsibull-changelog from a scratch copy (docs/releasing.md).
release-notes: venv
	cd "$(ROOT)" && "$(VENV)/bin/python" tools/release_notes.py --output build/release-notes.md

## Other ------------------------------------------------------------------------------

bench: venv link
	cd "$(ROOT)" && PYTHONPATH="$(COLLECTIONS)" "$(VENV)/bin/python" bench/run.py

# Against NVIDIA Topograph: TOPOGRAPH_DRIVER=<driver binary or its Go source dir> (skips without it).
bench-topograph: venv link
	cd "$(ROOT)" && PATH="$(VENV)/bin:$$PATH" PYTHONPATH="$(COLLECTIONS)" "$(VENV)/bin/python" bench/topograph.py

# Never touches the Slurm chroot or the Kubernetes binaries cached in $(SLURM_CACHE).
clean:
	cd "$(ROOT)" && rm -rf .venv .venv-compat .collections build
