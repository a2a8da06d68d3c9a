# rocm-fleet: the two commands a fresh machine needs are `make demo` and `make test` (as root).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# What the lab needs from Debian: roots, a signed apt repo, network namespaces, TLS.
LAB_PACKAGES := debootstrap apt-utils gnupg dpkg-dev iproute2 openssh-client zstd openssl curl
# What `make lint` needs from Debian.
LINT_PACKAGES := shellcheck
# Every shell file: the operations' scripts and the login profile are POSIX sh (they run
# under the hosts' /bin/sh), .ci/run is bash (its shebang says so).
SH_FILES := files/scripts/*.sh files/rocm-profile.sh
BASH_FILES := .ci/run

# $(call apt_install,PACKAGES): install those of PACKAGES that are missing (root only then).
define apt_install
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
		| grep -q "ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
endef

.PHONY: deps lint-deps venv test unit demo bench lint format clean

deps:
	$(call apt_install,$(LAB_PACKAGES) $(LINT_PACKAGES))

lint-deps:
	$(call apt_install,$(LINT_PACKAGES))

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

unit: venv
	$(PY) -m pytest tests/unit -q

test: deps venv
	$(PY) -m pytest -v -rs --durations=15

demo: deps venv
	PYTHONPATH=tests $(PY) -m lab.demo

# Both benchmarks run even when the first misses a goal; the status is the worse of the two.
bench: deps venv
	PYTHONPATH=tests $(PY) bench/fleet.py; fleet=$$?; \
		PYTHONPATH=tests $(PY) bench/mirror.py && exit $$fleet

lint: venv lint-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	shellcheck -s sh $(SH_FILES)
	shellcheck $(BASH_FILES)

format: venv
	$(VENV)/bin/ruff format . && $(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) build *.egg-info
