# Two commands for a fresh machine (see README):
#   make demo   set everything up, build, segment the bundled image
#   make test   set everything up, build, run every test (C++ ctest, also under ASan/UBSan, a bounded
#               libFuzzer session, ruff, pytest with the headless-browser test, and a wheel built
#               against the newest torch on PyPI, smoke-tested in a fresh venv without a compiler)
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

.PHONY: demo test setup system-deps build cmake-test cmake-sanitize fuzz lint pytest install-test bench eval clean device-carry

demo: build
	$(PY) -m torchgrabcut demo -o out

test: system-deps build cmake-test cmake-sanitize fuzz lint pytest install-test

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
	CUDA_HOME=$(if $(NVCC),$(patsubst %/bin/nvcc,%,$(NVCC)),) TORCHGRABCUT_CUDA=$(TORCHGRABCUT_CUDA) TORCHGRABCUT_TEST_HOOKS=1 MAX_JOBS=$(JOBS) \
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

# The install as a user meets it, on the newest torch on PyPI (NEWEST_TORCH=2.15.0 picks
# one): a wheel built against it in a copy of the tree (the development build stays as it
# is), installed into a fresh venv holding only torch, numpy and pillow, and smoke-tested
# there with no compiler or CUDA toolkit reachable (tests/install/smoke_installed.py);
# its masks must equal the pinned torch's build's. WHEEL_ARCHS: the CUDA architectures.
NEWEST_TORCH ?=
WHEEL_ARCHS ?= 7.5;8.0;8.6;9.0;10.0;12.0+PTX
COMPAT := build-compat
GRABCUT50 := $(abspath ../shared/data/grabcut50)
SMOKE := $(abspath tests/install/smoke_installed.py)
install-test: build
	rm -rf $(COMPAT)
	mkdir -p $(COMPAT)/src $(COMPAT)/dist
	git ls-files -z --cached --others --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C $(COMPAT)/src
	python3 -m venv $(COMPAT)/venv
	$(COMPAT)/venv/bin/python -m pip install -q --upgrade pip "torch$(if $(NEWEST_TORCH),==$(NEWEST_TORCH))" \
	  numpy pillow setuptools wheel ninja
	cd $(COMPAT)/src && CUDA_HOME=$(if $(NVCC),$(patsubst %/bin/nvcc,%,$(NVCC)),) TORCHGRABCUT_CUDA=$(TORCHGRABCUT_CUDA) \
	  TORCH_CUDA_ARCH_LIST="$(WHEEL_ARCHS)" MAX_JOBS=$(JOBS) ../venv/bin/python -m pip wheel -v --no-build-isolation \
	  --no-deps -w ../dist . > ../wheel.log 2>&1 || { tail -50 ../wheel.log; exit 1; }
	@grep -E "torchgrabcut: " $(COMPAT)/wheel.log | sed 's/^ *//'
	@ls -l $(COMPAT)/dist/*.whl
	$(COMPAT)/venv/bin/python -c 'import torch; print(torch.__version__.split("+")[0])' > $(COMPAT)/torch-version
	@# Each venv holds ~5 GB of torch and its CUDA libraries: one at a time (pip's cache has the wheels).
	rm -rf $(COMPAT)/venv
	python3 -m venv $(COMPAT)/wheel-venv
	$(COMPAT)/wheel-venv/bin/python -m pip install -q --upgrade pip "torch==$$(cat $(COMPAT)/torch-version)" numpy pillow
	$(COMPAT)/wheel-venv/bin/python -m pip install -q $(COMPAT)/dist/torchgrabcut-*.whl
	cd $(COMPAT) && $(abspath $(PY)) $(SMOKE) --grabcut50 $(GRABCUT50) --write reference.npz
	cd $(COMPAT) && env -i HOME="$$HOME" PATH="$(abspath $(COMPAT)/wheel-venv/bin)" \
	  $(abspath $(COMPAT)/wheel-venv/bin/python) $(SMOKE) --no-toolchain --grabcut50 $(GRABCUT50) --reference reference.npz
	rm -rf $(COMPAT)/wheel-venv

eval: build
	$(PY) -m torchgrabcut eval ../shared/data/grabcut50

bench: build
	$(PY) -m torchgrabcut bench

# What scripts/gpu_check.sh needs carried to the GPU machine (both git-ignored): a fresh
# copy of googletest and of GrabCut-50 (research-only: read from ../shared, never
# committed). Copied into absent folders: cp -r into an existing one nests a second copy.
device-carry:
	rm -rf .gtest data/grabcut50
	mkdir -p data
	cp -r /usr/src/googletest .gtest
	cp -r $(GRABCUT50) data/grabcut50

clean:
	rm -rf build build-cmake build-asan build-fuzz build-compat build-ext.log out test-artifacts python/torchgrabcut/*.so \
	  python/torchgrabcut/_build_info.py
