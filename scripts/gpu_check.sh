#!/usr/bin/env bash
# One call on the GPU machine: build the extension with CUDA against that machine's
# own torch (it has no network), run the torch-free CUDA tests, the CUDA pytest
# tests, then the benchmark; print a short table last.
#
#   device run:  bash scripts/gpu_check.sh            (carry: data, .gtest)
#
# Needs data/grabcut50 (a copy of ../shared/data/grabcut50, git-ignored, never
# committed) and .gtest (a copy of /usr/src/googletest, git-ignored).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 TORCHGRABCUT_CUDA=1 MAX_JOBS=16
export TORCHGRABCUT_GRABCUT50=$PWD/data/grabcut50
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
STEPS=${STEPS:-build cmake sanitize pytest cppbench bench}
status=0

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'

if [[ " $STEPS " == *" build "* ]]; then
  echo "== build extension"
  python3 setup.py -q build_ext --inplace > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  grep -E "torchgrabcut: building" "$OUT/build.log" || true
fi
export PYTHONPATH=$PWD/python

if [[ " $STEPS " == *" cmake "* ]]; then
  echo "== torch-free CUDA tests (CMake)"
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRABCUT_CUDA=ON -DGRABCUT_GTEST_SOURCE="$PWD/.gtest" \
    > "$OUT/cmake.log" 2>&1 && cmake --build build-gpu -j 16 >> "$OUT/cmake.log" 2>&1 || { tail -40 "$OUT/cmake.log"; status=1; }
  if [[ -x build-gpu/cuda_tests ]]; then
    timeout 240 build-gpu/cuda_tests --gtest_brief=1 > "$OUT/cuda_tests.log" 2>&1
    [[ $? -eq 0 ]] || status=1
    tail -25 "$OUT/cuda_tests.log"
  fi
fi

if [[ " $STEPS " == *" sanitize "* ]]; then
  echo "== compute-sanitizer on small and odd sizes (memcheck, racecheck, synccheck, initcheck)"
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  FILTER='OddSizes*:MaxflowCuda.SinglePixel:MaxflowCuda.EmptyBatchAndEmptyGraphs:MaxflowCuda.MixedSizeBatch:Driver.EvalModeMatchesCpu'
  for tool in memcheck racecheck synccheck initcheck; do
    extra=""
    [[ $tool == memcheck ]] && extra="--leak-check full"
    timeout 600 "$CS" --tool $tool $extra --error-exitcode 9 build-gpu/cuda_tests --gtest_filter="$FILTER" --gtest_brief=1 \
      > "$OUT/sanitize_$tool.log" 2>&1
    rc=$?
    [[ $rc -eq 0 ]] || status=1
    echo "$tool: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY' "$OUT/sanitize_$tool.log" | tr '\n' ' ')"
    grep -E "PASSED|FAILED" "$OUT/sanitize_$tool.log" | tail -3
  done
fi

if [[ " $STEPS " == *" pytest "* ]]; then
  echo "== pytest (CUDA tests and the op tests on both devices)"
  timeout 300 python3 -m pytest -q -p no:cacheprovider tests/python/test_cuda.py tests/python/test_op_registration.py \
    tests/python/test_api.py -s > "$OUT/pytest.log" 2>&1
  [[ $? -eq 0 ]] || status=1
  grep -E "identical pixels|passed|failed|Error|error" "$OUT/pytest.log" | tail -30
fi

if [[ " $STEPS " == *" cppbench "* ]]; then
  echo "== C++ CUDA timings (torch-free)"
  for b in bench_maxflow_cuda bench_grabcut_cuda; do
    [[ -x build-gpu/$b ]] && { timeout 120 build-gpu/$b > "$OUT/$b.log" 2>&1 || status=1; tail -14 "$OUT/$b.log"; }
  done
fi

if [[ " $STEPS " == *" bench "* ]]; then
  echo "== benchmark"
  timeout 300 python3 bench/gpu_bench.py --out "$OUT/bench.md" > "$OUT/bench.log" 2>&1 || status=1
  tail -30 "$OUT/bench.log"
fi
exit $status
