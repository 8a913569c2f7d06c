#!/usr/bin/env bash
# Bounded libFuzzer session of the core's fuzz targets (fuzz/) under AddressSanitizer
# and UndefinedBehaviorSanitizer. Builds build-fuzz with clang, runs each target for
# FUZZ_SECONDS (default 30) from the committed seed corpus, prints the executions per
# target, and exits non-zero if any target crashed; a crash input is saved under
# fuzz/crashes/<target>/ (replayed by ctest from then on, once the bug is fixed).
#
# Environment:
#   FUZZ_SECONDS   seconds per target (default 30)
#   FUZZ_TARGETS   targets to run (default "gmm maxflow driver")
#   FUZZ_JOBS      build parallelism (default 1)
#   FUZZ_MERGE=1   afterwards, merge the new inputs that add coverage into
#                  fuzz/corpus/<target>/ (a developer step; CI leaves the corpus alone)
#   FUZZ_BUILD_DIR build directory (default build-fuzz)
# Needs clang, libFuzzer and libomp (Debian: clang, libclang-rt-14-dev, libomp-14-dev).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-30}
targets=${FUZZ_TARGETS:-gmm maxflow driver}
jobs=${FUZZ_JOBS:-1}

CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGRABCUT_FUZZ=ON -DGRABCUT_TESTS=OFF -DGRABCUT_SANITIZE=ON -DGRABCUT_CUDA=OFF >/dev/null
build_targets=()
for t in $targets; do build_targets+=("fuzz_$t"); done
cmake --build "$build" -j "$jobs" --target "${build_targets[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# Idle OpenMP workers sleep rather than spin: the fuzzer runs one input at a time.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

status=0
summary=()
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in $targets; do
  corpus="$root/fuzz/corpus/$t"
  crashes="$root/fuzz/crashes/$t"
  mkdir -p "$crashes" "$work/$t"
  log="$work/$t.log"
  echo "== fuzz_$t: ${seconds}s"
  # New inputs go to the scratch directory (first); the committed corpus and the
  # saved crash inputs are only read.
  set +e
  "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=20 -rss_limit_mb=4096 \
    -max_len=8192 -artifact_prefix="$crashes/" "$work/$t" "$corpus" "$crashes" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
  cov=$(grep -aE '^#[0-9]+' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p' || true)
  if [[ $rc -ne 0 ]]; then
    status=1
    tail -40 "$log" || true
    saved=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1 || true)
    summary+=("fuzz_$t: CRASH (exit $rc) after ${execs:-?} executions; input saved to ${saved:-?}")
  else
    summary+=("fuzz_$t: ok, ${execs:-?} executions in ${seconds}s, coverage ${cov:-?}")
  fi
  if [[ "${FUZZ_MERGE:-0}" == 1 && $rc -eq 0 ]]; then
    "$build/fuzz/fuzz_$t" -merge=1 -max_len=8192 "$corpus" "$work/$t" >>"$log" 2>&1
    echo "   corpus now $(ls "$corpus" | wc -l) files"
  fi
done
printf '%s\n' "${summary[@]}"
exit $status
