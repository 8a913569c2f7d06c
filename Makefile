# Two commands for a fresh machine (see README):
#   make demo   set everything up, build, segment the bundled image
#   make test   set everything up, build, run every test (C++ ctest, also under ASan/UBSan, ruff, pytest)
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

.PHONY: demo test setup build cmake-test cmake-sanitize lint pytest bench eval clean

demo: build
	$(PY) -m torchgrabcut demo -o out

test: build cmake-test cmake-sanitize lint pytest

setup: $(VENV)/.installed

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

lint: setup
	$(VENV)/bin/ruff check python tests bench setup.py
	$(VENV)/bin/ruff format --check python tests bench setup.py

pytest: build
	$(PY) -m pytest -q

eval: build
	$(PY) -m torchgrabcut eval ../shared/data/grabcut50

bench: build
	$(PY) -m torchgrabcut bench

clean:
	rm -rf build build-cmake build-asan build-ext.log out python/torchgrabcut/*.so
