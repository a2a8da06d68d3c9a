# rocm-fleet: the two commands a fresh machine needs are `make demo` and `make test` (as root).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# What the lab needs from Debian: roots, a signed apt repo, network namespaces, TLS; and
# promtool (prometheus) for the audit's metrics and files/monitoring (test_monitoring.py).
LAB_PACKAGES := debootstrap apt-utils gnupg dpkg-dev iproute2 openssh-client zstd openssl curl \
	prometheus
# What `make lint` needs from Debian.
LINT_PACKAGES := shellcheck
# Every shell file: the operations' scripts and the login profile are POSIX sh (they run
# under the hosts' /bin/sh), .ci/run is bash (its shebang says so).
SH_FILES := files/scripts/*.sh files/*.sh
BASH_FILES := .ci/run

# $(call apt_install,PACKAGES): install those of PACKAGES that are missing (root only then).
define apt_install
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
		| grep -q "ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
endef

.PHONY: deps lint-deps venv test unit integration pyinfra-next demo bench lint docs format settings-docs matrix-check clean

deps:
	$(call apt_install,$(LAB_PACKAGES) $(LINT_PACKAGES))

lint-deps:
	$(call apt_install,$(LINT_PACKAGES))

# The product, and the lab as its own package (tests/lab/pyproject.toml: `lab` and the command
# rocm-fleet-lab), both editable: the demo, the benches and the tests import `lab` installed.
$(VENV)/.installed: pyproject.toml tests/lab/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]' -e tests/lab
	touch $@

venv: $(VENV)/.installed

# The tiers (tests/conftest.py): the pure tests (no process, no socket; budget 1 minute), then
# the CLI, loopback servers, gpg, dash and the docs build (6 minutes), then the lab (root).

unit: venv
	$(PY) -m pytest tests/unit -q

integration: venv
	$(PY) -m pytest tests/integration -q

# The pure and integration tiers against the newest pyinfra 3.x the index serves (pyproject.toml
# allows any 3.x from the tested minor up), in a throwaway venv; CI runs it after `make test`
# (.ci/run). When the newest 3.x is the one .venv already has, `make test` just ran those tiers
# on it: nothing new to run. The next pyinfra minor's breakage shows here before users see it:
# on an untested minor the planning speedups step aside (engine/speedups.py) and their tests
# compare them with pyinfra's functions all the same; tests/unit/test_pyinfra_internals.py says
# which of the internals engine/ reads (engine/version.py) moved.
NEXT_VENV := .venv-pyinfra-next
pyinfra-next: venv
	@set -o pipefail; newer=$$($(PY) -m pip install -q --dry-run --upgrade --no-deps --report - 'pyinfra>=3,<4' \
		| $(PY) -c 'import json, sys; print(*(i["metadata"]["version"] for i in json.load(sys.stdin)["install"]))') \
		|| { echo "pyinfra-next: the index did not say which pyinfra 3.x is newest"; exit 1; }; \
	if [ -z "$$newer" ]; then \
		echo "pyinfra-next: the newest pyinfra 3.x is .venv's $$($(PY) -c 'import importlib.metadata as m; print(m.version("pyinfra"))'), which make test ran on"; \
		exit 0; \
	fi; \
	rm -rf $(NEXT_VENV) && $(PYTHON) -m venv $(NEXT_VENV) \
	&& $(NEXT_VENV)/bin/python -m pip install -q --upgrade pip \
	&& $(NEXT_VENV)/bin/python -m pip install -q -e '.[dev]' -e tests/lab \
	&& $(NEXT_VENV)/bin/python -m pip install -q "pyinfra==$$newer" \
	&& echo "pyinfra $$newer" \
	&& $(NEXT_VENV)/bin/python -m pytest tests/unit tests/integration -q; status=$$?; \
	rm -rf $(NEXT_VENV); exit $$status

# Every tier, in order: the pure and integration tiers (with CI=true a tier over its budget
# fails), then the lab's modules on LAB_WORKERS workers (pytest-xdist, --dist loadfile: a
# module and its fleet stay on one worker; the longest modules start first,
# tests/e2e/conftest.py). Both runs always run; the status is the worse.
LAB_WORKERS ?= 2
test: deps venv
	$(PY) -m pytest -v -rs --durations=15 tests/unit tests/integration; status=$$?; \
	$(PY) -m pytest -v -rs --durations=15 -n $(LAB_WORKERS) --dist loadfile --no-loadscope-reorder tests/e2e tests/lab \
		|| status=$$?; exit $$status

demo: deps venv
	$(VENV)/bin/rocm-fleet-lab demo

# Every benchmark runs even when one misses a goal; the status is the worst of them.
# fleet.py: the lab's converged fleet; simulate.py: 10/100/1,000 simulated hosts replaying a
# recorded lab host (the controller alone); mirror.py: what the fleet mirror saves.
bench: deps venv
	$(PY) bench/fleet.py; fleet=$$?; \
		$(PY) bench/simulate.py; simulated=$$?; \
		$(PY) bench/mirror.py && exit $$((fleet | simulated))

lint: venv lint-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	shellcheck -s sh $(SH_FILES)
	shellcheck $(BASH_FILES)

# The documentation site (README.md as its home page, docs/), into site/; --strict fails on
# a broken link or anchor between pages.
docs: venv
	$(VENV)/bin/mkdocs build --strict

format: venv
	$(VENV)/bin/ruff format . && $(VENV)/bin/ruff check --fix .

# The settings reference and JSON Schema, generated from the model (a unit test says when
# they are stale).
settings-docs: venv
	$(VENV)/bin/rocm-fleet settings --page > docs/settings.md
	$(VENV)/bin/rocm-fleet settings --schema > docs/settings.schema.json

# The matrix's data, made again from the stored upstream copies and records: each prints
# "unchanged" when the committed data is theirs, and exits 1 (failing the target) when it
# differs or upstream has something it lacks ("upstream has: ...").
matrix-check: venv
	$(VENV)/bin/python tools/matrix_update.py --stored tests/fixtures/upstream/stored --check
	$(VENV)/bin/rocm-fleet matrix update --records tests/fixtures/upstream \
		--overrides tools/matrix_overrides.toml --check

clean:
	rm -rf $(VENV) $(NEXT_VENV) build site *.egg-info tests/lab/*.egg-info
