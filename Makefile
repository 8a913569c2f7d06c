# Two commands for a fresh machine (see README):
#   make demo   set everything up, build, segment the bundled image
#   make test   set everything up, build, run every test (C++ ctest, also under ASan/UBSan, a bounded
#               libFuzzer session, ruff, pytest with the headless-browser test)
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

VENV ?= .venv
PY := $(VENV)/bin/python
NVCC ?= $(firstword $(wildcard /usr/local/cuda/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
# CUDA sources are compiled whenever nvcc exists (CI too, so a CUDA compile
# error fails CI), even where no GPU is present to run them.
TORCHGRABCUT_CUDA ?= $(if $(and $(NVCC),$(wildcard csrc/cuda/*.cu)),1,0)
CMAKE_CUDA := $(if $(filter 1,$(TORCHGRABCUT_CUDA)),-DGRABCUT_CUDA=ON -DCMAKE_CUDA_COMPILER=$(NVCC),-DGRABCUT_CUDA=OFF)
JOBS ?= $(shell nproc)

.PHONY: demo test setup system-deps build cmake-test cmake-sanitize fuzz lint pytest bench eval clean

demo: build
	$(PY) -m torchgrabcut demo -o out

test: system-deps build cmake-test cmake-sanitize fuzz lint pytest

setup: $(VENV)/.installed

# Debian packages for the fuzz session and the browser test (clang, libFuzzer, chromium).
system-deps:
	bash scripts/install_system_deps.sh

$(VENV)/.installed: requirements-dev.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

# The extension, built in place (python/torchgrabcut/_C*.so) and installed editable.
build: setup
	@echo "torchgrabcut: TORCHGRABCUT_CUDA=$(TORCHGRABCUT_CUDA) (nvcc: $(or $(NVCC),none))"
	CUDA_HOME=$(if $(NVCC),$(patsubst %/bin/nvcc,%,$(NVCC)),) TORCHGRABCUT_CUDA=$(TORCHGRABCUT_CUDA) MAX_JOBS=$(JOBS) \
	  $(PY) setup.py -q build_ext --inplace > build-ext.log 2>&1 || { tail -50 build-ext.log; exit 1; }
	@grep -E "^torchgrabcut:" build-ext.log
	@test -f $(VENV)/.editable || { TORCHGRABCUT_SKIP_EXT=1 $(PY) -m pip install -q --no-build-isolation --no-deps -e . \
	  && touch $(VENV)/.editable; }

cmake-test:
	cmake -S . -B build-cmake -DCMAKE_BUILD_TYPE=Release $(CMAKE_CUDA) >/dev/null
	cmake --build build-cmake -j $(JOBS)
	cd build-cmake && ctest --output-on-failure -j $(JOBS)

# The core's tests again under AddressSanitizer and UndefinedBehaviorSanitizer.
cmake-sanitize:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRABCUT_SANITIZE=ON -DGRABCUT_CUDA=OFF >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

# libFuzzer over the core (GMM fit, max-flow, driver) under ASan/UBSan, FUZZ_SECONDS per target.
FUZZ_SECONDS ?= 30
fuzz: system-deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(JOBS) bash scripts/fuzz.sh

lint: setup
	$(VENV)/bin/ruff check python tests bench scripts setup.py
	$(VENV)/bin/ruff format --check python tests bench scripts setup.py
	cc -fsyntax-only -Wall -Wextra -Werror scripts/segv_backtrace.c

pytest: build system-deps
	$(PY) -m pytest -q

eval: build
	$(PY) -m torchgrabcut eval ../shared/data/grabcut50

bench: build
	$(PY) -m torchgrabcut bench

clean:
	rm -rf build build-cmake build-asan build-fuzz build-ext.log out test-artifacts python/torchgrabcut/*.so
