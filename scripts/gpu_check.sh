#!/usr/bin/env bash
# One call on the GPU machine: build the extension with CUDA against that machine's
# own torch (it has no network), run the torch-free CUDA tests (also under
# compute-sanitizer), the CUDA pytest tests, then the benchmarks; print a short
# table per step. STEPS picks the steps (default: all; they run in this order):
#   build cmake busy sanitize pytest  the extension, CUDA tests (alone, then beside another
#                                 process on the GPU), compute-sanitizer
#   cppbench bench                torch-free timings (and the max-flow's phase profile),
#                                 the end-to-end benchmark
#   schedules                     only the max-flow benchmarks, built alone: the
#                                 MaxflowSchedule variants side by side (quick), their
#                                 phase profile, then the tuning grid with relabels capped at 12 sweeps
#   roundbench                    torch-free, built alone: one tile's push-relabel round,
#                                 the solver's block round against warp rounds (issue 33),
#                                 on a 1 MP graph's tiles with global and with in-tile
#                                 heights, every kernel checked against a host reference
#                                 (then --relax: the in-tile BFS relaxation, block Jacobi
#                                 steps against a warp's column passes)
#   segbatch                      issue 36's batch: SEG_IMAGES (8) photos' segmentation graphs at
#                                 256x256 cycled to 512 graphs, one cold solve under the
#                                 GRABCUT_BENCH_SCHEDULES schedules, 4- and 8-connected, cuts
#                                 checked against the CPU solver (PHASES=1: the profile)
#   realimages                    torch-free, built alone: GrabCut-50 scaled to 1024x1024, each
#                                 image under the MaxflowSchedules that GRABCUT_BENCH_SCHEDULES picks side by side
#                                 (median, p90, slowest), then at native sizes as one batch,
#                                 then 500 crops of them (96..320 px) as one batch
#                                 (REAL_REPEATS timed runs per image and schedule, default 5;
#                                 REAL_SCHEDULES, if set, its schedules instead)
#   seggraphs                     issue 36's segmentation graphs (bench/mincut_bench.py --dump,
#                                 SEG_IMAGES photos, 4- and 8-connected, 1024x1024) solved cold
#                                 by bench_maxflow_cuda under the GRABCUT_BENCH_SCHEDULES
#                                 schedules, cuts checked against the CPU solver
#   gcgraphs                      issue 33's per-image figures: the first graph of GrabCut on
#                                 GC_IMAGES GrabCut-50 photos (default 50) at 1 MP
#                                 (bench/cpu_bench.py --dump), each solved cold under the
#                                 schedules (default: v0.13c's, region heights with and
#                                 without the checkerboard): ms and grid-wide barriers per
#                                 image, median, p90, most (builds a CPU-only extension for the
#                                 graphs when the build step does not run); PHASES=1 with
#                                 seggraphs and gcgraphs: each solve's phase profile too
#   cpubatch                      the CPU backend on this machine's cores (issue 21): one list
#                                 call of GrabCut-50 scaled to 1 MP, 1 thread against all; the
#                                 graph cuts' call, one graph and a batch, 1 thread against all
#                                 (builds a CPU-only extension when the build step did not run)
#   robust                        CUDA pytest of robustness, limits, dataset, server, CLI
#   photos                        the dataset job on real photos with ground truth (GrabCut-50,
#                                 2000 jittered boxes), GPU and host-only (issue 33)
#   coco serve pictures scaling   dataset and server benchmarks, the speed plot, the
#                                 dataset job under torchrun with 1..all GPUs
#                                 (SCALE_IMAGES images, default 2000, listed
#                                 SCALE_REPEATS times, default 1; SCALE_NPROCS
#                                 picks the process counts, SCALE_DEFAULT_THREADS=1
#                                 adds one process with torch's default threads)
#   wheel                         the wheel as a user gets it: built for this machine's torch
#                                 and Python with every architecture of the README's wheel line,
#                                 installed into a fresh venv, its CUDA kernels load and give the
#                                 CPU's masks and the in-place build's (tests/install/smoke_installed.py)
#   oomcrash                      a batch larger than the device must raise, not crash;
#                                 a crash prints its native frames (see bench/RESULTS.md)
#
#   device run:  bash scripts/gpu_check.sh            (carry: data, .gtest)
#   device run:  STEPS="build robust coco" bash scripts/gpu_check.sh
#
# Logs go to $OUT/logs.tgz (the device tool brings back few files); the speed
# plot to $OUT/speed.png and the benchmark table to $OUT/bench.md.
#
# Needs data/grabcut50 (a copy of ../shared/data/grabcut50, git-ignored, never
# committed) and .gtest (a copy of /usr/src/googletest, git-ignored): `make device-carry`
# makes both afresh on the dev machine.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# Debug information kept: the oomcrash step names native frames with addr2line.
export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 TORCHGRABCUT_CUDA=1 MAX_JOBS=16 TORCHGRABCUT_DEBUG_INFO=1
export TORCHGRABCUT_GRABCUT50=$PWD/data/grabcut50
OUT=${OUT:-/tmp/gpu_out}
LOGS=/tmp/gpu_logs
mkdir -p "$OUT" "$LOGS"
STEPS=${STEPS:-build cmake busy sanitize pytest cppbench bench robust coco serve pictures scaling wheel oomcrash}
# (schedules is not in the default list: cppbench runs the same benchmark in full;
# roundbench is a measurement for issue 33, not a check.)
status=0
started=$SECONDS
bundle_logs() { tar czf "$OUT/logs.tgz" -C /tmp gpu_logs 2>/dev/null || true; }
trap bundle_logs EXIT
step() { echo "== $1 (at $((SECONDS - started)) s)"; }
# Configures build-gpu (the torch-free CUDA build) and builds TARGETS (none: all) into LOG;
# on failure shows the log's end and marks the run failed. Returns the build's status.
build_gpu() {
  local log=$1
  shift
  local targets=()
  (($# > 0)) && targets=(--target "$@")
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRABCUT_CUDA=ON -DGRABCUT_GTEST_SOURCE="$PWD/.gtest" \
    > "$log" 2>&1 && cmake --build build-gpu -j 16 ${targets[@]+"${targets[@]}"} >> "$log" 2>&1 \
    || { tail -40 "$log"; status=1; return 1; }
}

# The graph-file steps (NAME: seggraphs, gcgraphs, segbatch): builds their benchmark
# ($GRAPHS_BENCH) into $LOGS/NAME_build.log and, without the build step, beside it a
# CPU-only extension (minutes less than the CUDA one) for the dump of the graphs from the
# CPU pipeline ($LOGS/NAME_ext.log); returns when both are done.
build_graph_bench() {
  local ext_pid=
  if [[ " $STEPS " != *" build "* ]]; then
    TORCHGRABCUT_CUDA=0 TORCHGRABCUT_TEST_HOOKS=1 MAX_JOBS=4 python3 setup.py -q build_ext --inplace \
      > "$LOGS/$1_ext.log" 2>&1 &
    ext_pid=$!
  fi
  build_gpu "$LOGS/$1_build.log" "$GRAPHS_BENCH"
  if [[ -n $ext_pid ]]; then wait "$ext_pid" || { tail -20 "$LOGS/$1_ext.log"; status=1; }; fi
}

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'

if [[ " $STEPS " == *" build "* ]]; then
  step "build extension"
  TORCHGRABCUT_TEST_HOOKS=1 python3 setup.py -q build_ext --inplace > "$LOGS/build.log" 2>&1 || { tail -40 "$LOGS/build.log"; exit 1; }
  grep -E "torchgrabcut: building" "$LOGS/build.log" || true
fi
export PYTHONPATH=$PWD/python
# The dataset job, the server and the plots need packages the machine may lack (it has
# no network): wheels carried in .wheels (pip download ... -d .wheels on the dev machine).
if [[ -d .wheels ]]; then
  python3 -m pip install -q --no-index --find-links .wheels pycocotools flask tqdm matplotlib PyMaxflow > "$LOGS/pip.log" 2>&1 \
    || tail -5 "$LOGS/pip.log"
fi

if [[ " $STEPS " == *" cpubatch "* ]]; then
  step "CPU batch: GrabCut-50 at 1 MP as one list call, 1 thread against all cores"
  if [[ " $STEPS " != *" build "* ]]; then
    TORCHGRABCUT_CUDA=0 TORCHGRABCUT_TEST_HOOKS=1 python3 setup.py -q build_ext --inplace > "$LOGS/cpubuild.log" 2>&1 \
      || { tail -40 "$LOGS/cpubuild.log"; status=1; }
  fi
  nproc
  timeout 420 python3 bench/cpu_bench.py --batch --images 50 --sizes 1 --rounds "${CPU_ROUNDS:-2}" \
    --grabcut50 data/grabcut50 2>&1 | tee "$LOGS/cpubatch.log" || status=1
  # The graph cuts (issue 36's all-threads goal): one 1 MP graph on 1 thread and on all
  # (strips), and a batch of one graph per core on 1 thread against all.
  for run in "--threads 1" "--threads $(nproc) --batch $(nproc)"; do
    # shellcheck disable=SC2086  # $run holds two options
    timeout 300 python3 bench/mincut_bench.py --images 4 --size 1024 --repeats 3 $run \
      --grabcut50 data/grabcut50 2>&1 | tee -a "$LOGS/cpubatch.log" || status=1
  done
fi

if [[ " $STEPS " == *" cmake "* ]]; then
  step "torch-free CUDA tests (CMake)"
  build_gpu "$LOGS/cmake.log"
  if [[ -x build-gpu/cuda_tests ]]; then
    timeout 240 build-gpu/cuda_tests --gtest_brief=1 > "$LOGS/cuda_tests.log" 2>&1
    [[ $? -eq 0 ]] || status=1
    tail -25 "$LOGS/cuda_tests.log"
    # Every max-flow test again under other schedules than the default (relabels capped
    # at 12 sweeps, doubled when too short): every relabel capped at 2 sweeps
    # (MaxflowSchedule::bfs_cap), fixed and doubled when too short
    # (MaxflowSchedule::grow_cap), capped at 12, fixed (v0.13), and never capped (v0.7).
    # CMAKE_MODES picks some (capN, "grow" appended for a doubling cap).
    for mode in ${CMAKE_MODES:-cap2 cap2grow cap12 cap0}; do
      cap=${mode#cap}
      # (EverySchedule sets its schedules itself: the first run above covers it.)
      GRABCUT_TEST_CAP=${cap%grow} GRABCUT_TEST_GROW_CAP=$([[ $mode == *grow ]] && echo 1 || echo 0) \
        timeout 240 build-gpu/cuda_tests --gtest_brief=1 --gtest_filter='-MaxflowCuda.EverySchedule' \
        > "$LOGS/cuda_tests_$mode.log" 2>&1
      [[ $? -eq 0 ]] || status=1
      label="relabels capped at ${cap%grow}"
      [[ $mode == *grow ]] && label+=" (doubled when too short)"
      echo "$label:"
      grep -E "grabcut 1024|PASSED|FAILED" "$LOGS/cuda_tests_$mode.log" | tail -6
    done
    # And under region heights (MaxflowSchedule::region), alone and with the checkerboard,
    # 16 push sweeps between relabels (issue 33), the checkerboard also with warm starts'
    # reverse phase (MaxflowSchedule::reverse_warm), and then with the band of visited
    # labels (MaxflowSchedule::band, 1: the narrowest), the relabels' rim lists and
    # exact heights every 5 rounds of a visit (MaxflowSchedule::relax_every).
    for mode in "0 0 0" "1 0 0" "1 1 0" "1 1 1"; do
      read -r checkerboard reverse band <<< "$mode"
      GRABCUT_TEST_REGION=1 GRABCUT_TEST_CHECKERBOARD=$checkerboard GRABCUT_TEST_REVERSE_WARM=$reverse \
        GRABCUT_TEST_BAND=$band GRABCUT_TEST_RIM_LISTS=$band GRABCUT_TEST_RELAX_EVERY=$((band * 5)) GRABCUT_TEST_ROUNDS=16 GRABCUT_TEST_VISITS=16 \
        timeout 240 build-gpu/cuda_tests --gtest_brief=1 --gtest_filter='-Mincut3dCuda.*:MaxflowCuda.EverySchedule' \
        > "$LOGS/cuda_tests_region$checkerboard$reverse$band.log" 2>&1
      [[ $? -eq 0 ]] || status=1
      echo "region heights, checkerboard $checkerboard, reverse warm $reverse, band and rim lists $band:"
      grep -E "grabcut 1024|PASSED|FAILED" "$LOGS/cuda_tests_region$checkerboard$reverse$band.log" | tail -6
    done
  fi
fi

if [[ " $STEPS " == *" busy "* ]]; then
  step "CUDA tests on a shared GPU (another process solving max-flows beside them)"
  [[ -x build-gpu/cuda_tests ]] || build_gpu "$LOGS/busy_build.log" cuda_tests
  # Streams that do not wait for each other only show their races when the GPU is
  # busy: the driver and stage tests run beside a loop of the max-flow tests.
  (while true; do build-gpu/cuda_tests --gtest_filter='MaxflowCuda.*' > /dev/null 2>&1; done) &
  busy_loop=$!
  for cap in 12 0; do
    GRABCUT_TEST_CAP=$cap timeout 200 build-gpu/cuda_tests --gtest_filter='Driver.*:OddSizes.*:Stages*' \
      --gtest_brief=1 > "$LOGS/busy_cap$cap.log" 2>&1
    [[ $? -eq 0 ]] || status=1
    echo "relabels capped at $cap: $(grep -E '^\[  (PASSED|FAILED)' "$LOGS/busy_cap$cap.log" | head -3 | tr '\n' ' ')"
  done
  kill $busy_loop
  pkill -f "gtest_filter=MaxflowCuda" || true
fi

if [[ " $STEPS " == *" sanitize "* ]]; then
  step "compute-sanitizer on small and odd sizes (memcheck, racecheck, synccheck, initcheck)"
  [[ -x build-gpu/cuda_tests ]] || build_gpu "$LOGS/sanitize_build.log" cuda_tests
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  FILTER='OddSizes*:MaxflowCuda.SinglePixel:MaxflowCuda.EmptyBatchAndEmptyGraphs:MaxflowCuda.MixedSizeBatch:Driver.EvalModeMatchesCpu:Mincut3dCuda.RepeatedSolvesAreIdentical'
  # The runs go side by side: each takes minutes (racecheck ~5), mostly on one host
  # core, and the tests pass on a shared GPU (the busy step). SANITIZE_TOOLS and
  # SANITIZE_RUNS pick some (default: all); SANITIZE_TIMEOUT bounds each (default 600 s).
  sanitizer_runs=()
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
    extra=()
    filter=$FILTER
    [[ $tool == memcheck ]] && extra=(--leak-check full)
    # Retired graphs (global flags read across blocks): memory and initialisation checks.
    [[ $tool == memcheck || $tool == initcheck ]] && filter="$FILTER:MaxflowCuda.EarlyFinishersKeepTheirCut"
    # Two schedules: the default (relabels capped at 12 sweeps and doubled when too
    # short), and relabels capped at 2 sweeps, doubled when too short (the capped paths
    # run often).
    for run in default:12:1 capped:2:1; do
      IFS=: read -r name cap grow <<< "$run"
      [[ " ${SANITIZE_RUNS:-default capped} " == *" $name "* ]] || continue
      log="$LOGS/sanitize_${tool}_$name.log"
      (
        t0=$SECONDS
        GRABCUT_TEST_CAP=$cap GRABCUT_TEST_GROW_CAP=$grow \
          timeout -k 10 "${SANITIZE_TIMEOUT:-600}" "$CS" --tool "$tool" ${extra[@]+"${extra[@]}"} --error-exitcode 9 \
          build-gpu/cuda_tests --gtest_filter="$filter" --gtest_brief=1 > "$log" 2>&1
        rc=$?
        echo "exit $rc after $((SECONDS - t0)) s" >> "$log"
        exit $rc
      ) &
      sanitizer_runs+=("$!:$tool:$name:$log")
    done
  done
  for r in "${sanitizer_runs[@]}"; do
    IFS=: read -r pid tool name log <<< "$r"
    wait "$pid"
    rc=$?
    [[ $rc -eq 0 ]] || status=1
    echo "$tool ($name): $(tail -1 "$log"); $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY' "$log" | tr '\n' ' ')"
    grep -E "^\[  (PASSED|FAILED)" "$log" | head -2
  done
fi

if [[ " $STEPS " == *" pytest "* ]]; then
  step "pytest (CUDA tests, the op tests and the graph cuts on both devices)"
  timeout 300 python3 -m pytest -q -p no:cacheprovider tests/python/test_cuda.py tests/python/test_op_registration.py \
    tests/python/test_api.py tests/python/test_graphcut.py tests/python/test_maxflow_pymaxflow.py \
    tests/python/test_maxflow_grid_errors.py tests/python/test_mincut_interrupt.py -s > "$LOGS/pytest.log" 2>&1
  [[ $? -eq 0 ]] || status=1
  grep -E "identical pixels|passed|failed|Error|error" "$LOGS/pytest.log" | tail -30
fi

if [[ " $STEPS " == *" cppbench "* ]]; then
  step "C++ CUDA timings (torch-free)"
  # CPPBENCH picks the benchmarks (default: all three).
  for b in ${CPPBENCH:-bench_maxflow_cuda bench_grabcut_cuda bench_maxflow_cuda_phases}; do
    [[ -x build-gpu/$b ]] || continue
    timeout 180 build-gpu/$b > "$LOGS/$b.log" 2>&1 || status=1
    if [[ $b == bench_maxflow_cuda_phases ]]; then
      # Where a solve's time goes: phases, block busy time, push rounds (profiling build).
      grep -E -A2 "variant:| cold " "$LOGS/$b.log"
    else
      tail -14 "$LOGS/$b.log"
    fi
  done
fi

if [[ " $STEPS " == *" schedules "* ]]; then
  step "max-flow schedules side by side, their phases, the tuning grid with relabels capped at 12"
  build_gpu "$LOGS/schedules_build.log" bench_maxflow_cuda bench_maxflow_cuda_phases
  # The benchmarks print line by line: a run stopped by its timeout still shows what it measured.
  timeout 200 build-gpu/bench_maxflow_cuda quick 2>&1 | tee "$LOGS/schedules.log" | grep -E "variant|ms$|^  [0-9a-z]|cuts =="
  timeout 150 build-gpu/bench_maxflow_cuda_phases quick > "$LOGS/schedules_phases.log" 2>&1
  grep -E -A2 "variant:| cold" "$LOGS/schedules_phases.log" | grep -E "variant|phases|push visits"
  timeout 200 build-gpu/bench_maxflow_cuda tune 12 2>&1 | grep -E "tune K|best"
fi

if [[ " $STEPS " == *" roundbench "* ]]; then
  step "one tile's push-relabel round: block (maxflow.cu) against warp rounds (torch-free)"
  build_gpu "$LOGS/roundbench_build.log" bench_tile_round
  if [[ -x build-gpu/bench_tile_round ]]; then
    for heights in global tile; do
      timeout 240 build-gpu/bench_tile_round --heights $heights 2>&1 | tee "$LOGS/roundbench_$heights.log"
      [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
    done
    # The in-tile relaxation (bfs_tile's Jacobi steps against a warp's column passes), on
    # the same tiles, then thinned into longer residual paths.
    for heights in global tile; do
      timeout 120 build-gpu/bench_tile_round --relax --heights $heights 2>&1 | tee "$LOGS/roundbench_relax_$heights.log"
      [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
    done
    for heights in global tile; do
      timeout 120 build-gpu/bench_tile_round --relax --heights $heights --drop-arcs 40 --keep-sinks 2 2>&1 \
        | tee "$LOGS/roundbench_relax_thin_$heights.log"
      [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
    done
  fi
fi

# The graph-file steps' benchmark: PHASES=1 takes the profiling build, which also prints
# each solve's phases (BFS, check and push time, blocks busy, rounds a visit).
GRAPHS_BENCH=bench_maxflow_cuda
[[ ${PHASES:-0} == 1 ]] && GRAPHS_BENCH=bench_maxflow_cuda_phases
if [[ " $STEPS " == *" seggraphs "* ]]; then
  step "issue 36's 1 MP segmentation graphs under each max-flow schedule (torch-free solve)"
  build_graph_bench seggraphs
  python3 bench/mincut_bench.py --dump /tmp/seggraphs --images "${SEG_IMAGES:-6}" --grabcut50 data/grabcut50 > "$LOGS/seggraphs_dump.log" 2>&1 \
    || { tail -5 "$LOGS/seggraphs_dump.log"; status=1; }
  timeout 300 "build-gpu/$GRAPHS_BENCH" graphs /tmp/seggraphs/*.tgcg 2>&1 | tee "$LOGS/seggraphs.log" | tail -16
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
fi

if [[ " $STEPS " == *" gcgraphs "* ]]; then
  step "GrabCut-50's first graphs at 1 MP, cold, under each max-flow schedule: time and grid-wide barriers per image (issue 33)"
  build_graph_bench gcgraphs
  python3 bench/cpu_bench.py --dump /tmp/gcgraphs --images "${GC_IMAGES:-50}" --sizes 1 --grabcut50 data/grabcut50 \
    > "$LOGS/gcgraphs_dump.log" 2>&1 || { tail -5 "$LOGS/gcgraphs_dump.log"; status=1; }
  GRABCUT_BENCH_SCHEDULES=${GRABCUT_BENCH_SCHEDULES:-q0c12r12g,q0c12r16gR,q0c12r16gRC} \
    timeout 400 "build-gpu/$GRAPHS_BENCH" graphs /tmp/gcgraphs/*.tgcg 2>&1 | tee "$LOGS/gcgraphs.log" | tail -20
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
fi

if [[ " $STEPS " == *" segbatch "* ]]; then
  step "issue 36's batch: 512 segmentation graphs of 256x256 in one cold solve, 4- and 8-connected, under each schedule"
  build_graph_bench segbatch
  python3 bench/mincut_bench.py --dump /tmp/segbatch --images "${SEG_IMAGES:-8}" --size 256 --grabcut50 data/grabcut50 \
    > "$LOGS/segbatch_dump.log" 2>&1 || { tail -5 "$LOGS/segbatch_dump.log"; status=1; }
  for conn in 4 8; do
    echo "${conn}-connected:"
    GRABCUT_BENCH_SCHEDULES=${GRABCUT_BENCH_SCHEDULES:-q0c12r12g,q0c12r16gRC,q0c12r16gR} \
      timeout 200 "build-gpu/$GRAPHS_BENCH" batch 512 /tmp/segbatch/*-$conn.tgcg 2>&1 | tee "$LOGS/segbatch_$conn.log" | tail -14
    [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
  done
fi

if [[ " $STEPS " == *" realimages "* ]]; then
  step "GrabCut-50 under each max-flow schedule (torch-free, masks checked against grabcut_cpu)"
  build_gpu "$LOGS/realimages_build.log" bench_grabcut_cuda
  # REAL_SCHEDULES: this step's schedules where they differ from the other steps'.
  [[ -n ${REAL_SCHEDULES:-} ]] && export GRABCUT_BENCH_SCHEDULES=$REAL_SCHEDULES
  python3 bench/grabcut50_ppm.py --out /tmp/g50_1024 --size 1024 --data data/grabcut50 \
    && python3 bench/grabcut50_ppm.py --out /tmp/g50_native --size 0 --data data/grabcut50 || status=1
  timeout 240 build-gpu/bench_grabcut_cuda list /tmp/g50_1024/list.txt "${REAL_REPEATS:-5}" 2>&1 | tee "$LOGS/realimages_1024.log" \
    | grep -E -A6 "^over|FAILED|differ|error" || status=1
  timeout 120 build-gpu/bench_grabcut_cuda list /tmp/g50_native/list.txt "${REAL_REPEATS:-5}" batch 2>&1 \
    | tee "$LOGS/realimages_native.log" | grep -E -A6 "^over|one batch|FAILED|differ|error" || status=1
  # Crops of real photos as the dataset job cuts them (96..320 px), 10 an image, as one batch.
  python3 bench/grabcut50_ppm.py --out /tmp/g50_crops --crops 10 --data data/grabcut50 || status=1
  timeout 200 build-gpu/bench_grabcut_cuda list /tmp/g50_crops/list.txt "${REAL_REPEATS:-5}" batch 2>&1 \
    | tee "$LOGS/realimages_crops.log" | grep -E -A6 "^over|one batch|FAILED|differ|error" || status=1
fi

if [[ " $STEPS " == *" bench "* ]]; then
  step "benchmark"
  timeout 300 python3 bench/gpu_bench.py --out "$OUT/bench.md" > "$LOGS/bench.log" 2>&1 || status=1
  tail -30 "$LOGS/bench.log"
fi

if [[ " $STEPS " == *" robust "* ]]; then
  step "pytest on CUDA: robustness, limits, dataset job (1-process NCCL torchrun), server, CLI"
  # A crash prints native frames too (scripts/segv_backtrace.c; Python's faulthandler chains to it).
  cc -shared -fPIC -O1 -g -o /tmp/segv_backtrace.so scripts/segv_backtrace.c
  # The error messages of the C++ checks and the extension's exported symbols (a copy of
  # libstdc++ linked into _C must stay private: this machine's g++ links it statically).
  timeout 120 python3 -m pytest -q -p no:cacheprovider tests/python/test_bad_input.py \
    tests/python/test_packaging.py tests/python/test_limits.py -k "not wheel" > "$LOGS/messages.log" 2>&1
  [[ $? -eq 0 ]] || status=1
  echo "C++ error messages and exported symbols: $(tail -1 "$LOGS/messages.log")"
  LD_PRELOAD=/tmp/segv_backtrace.so timeout 400 python3 -m pytest -q -p no:cacheprovider -m cuda -s \
    tests/python/test_robustness.py \
    tests/python/test_limits.py tests/python/dataset tests/python/server tests/python/cli \
    > "$LOGS/robust.log" 2>&1
  [[ $? -eq 0 ]] || status=1
  grep -E "RSS|GPU memory|threads|interrupt|passed|failed|Error|segv_backtrace|_C\.cpython" "$LOGS/robust.log" | tail -40
fi

if [[ " $STEPS " == *" coco "* ]]; then
  step "dataset job throughput (bench/coco_bench.py, 200 and 1000 COCO-like images)"
  timeout 300 python3 bench/coco_bench.py --images 200 --device cuda --batch-size 64,128,256,512 --workers 8 \
    --workdir /tmp/coco_bench > "$LOGS/coco_bench.log" 2>&1 || status=1
  # The larger set weighs start-up (worker processes, the first batch's images) less.
  timeout 300 python3 bench/coco_bench.py --images 1000 --device cuda --batch-size 256,512 --workers 8 \
    --workdir /tmp/coco_bench >> "$LOGS/coco_bench.log" 2>&1 || status=1
  # The same job with GrabCut replaced by an instant stand-in: what this host can feed.
  timeout 120 python3 bench/coco_bench.py --images 1000 --host-only --batch-size 256,512 --workers 8 \
    --workdir /tmp/coco_bench >> "$LOGS/coco_bench.log" 2>&1 || status=1
  grep -E "coco_bench:|seconds:" "$LOGS/coco_bench.log" || tail -20 "$LOGS/coco_bench.log"
fi

if [[ " $STEPS " == *" photos "* ]]; then
  step "dataset job on real photos (GrabCut-50, 40 detector-like boxes a photo: 2000 boxes; issue 33)"
  for run in "--device cuda --batch-size 128,256,512" "--host-only --batch-size 256"; do
    # shellcheck disable=SC2086  # $run holds several options
    timeout 300 python3 bench/coco_bench.py --photos data/grabcut50 --workers 8 --workdir /tmp/photo_bench $run \
      >> "$LOGS/photo_bench.log" 2>&1 || status=1
  done
  grep -E "coco_bench:|seconds:|IoU" "$LOGS/photo_bench.log" || tail -20 "$LOGS/photo_bench.log"
fi

if [[ " $STEPS " == *" serve "* ]]; then
  step "server time per refinement at 1 MP (bench/serve_bench.py)"
  timeout 200 python3 bench/serve_bench.py --device cuda > "$LOGS/serve_bench.log" 2>&1 || status=1
  tail -8 "$LOGS/serve_bench.log"
fi

if [[ " $STEPS " == *" pictures "* ]]; then
  step "speed plot (scripts/make_pictures.py --speed-only)"
  timeout "${PICTURES_TIMEOUT:-400}" python3 scripts/make_pictures.py --speed-only > "$LOGS/pictures.log" 2>&1 || status=1
  tail -12 "$LOGS/pictures.log"
  cp docs/images/speed.png "$OUT/speed.png" 2>/dev/null || true
fi

if [[ " $STEPS " == *" scaling "* ]]; then
  gpus=$(nvidia-smi -L | wc -l)
  n_images=${SCALE_IMAGES:-2000}
  repeats=${SCALE_REPEATS:-1}
  step "dataset job under torchrun: $n_images images listed $repeats times, nproc-per-node 1..$gpus"
  set_dir=/tmp/scale_set
  # Generating takes ~60 ms an image; a set big enough to keep 4 GPUs busy for 20 s
  # (~90k boxes) lists a generated one several times instead (repeat_coco).
  PYTHONPATH="$PYTHONPATH:$PWD/tests/python" python3 -c "from synthetic_coco import make_synthetic_coco as m, repeat_coco as r
p = m('$set_dir', $n_images, seed=1); r(p, p, $repeats)" > "$LOGS/scale_gen.log" 2>&1 \
    || { tail -5 "$LOGS/scale_gen.log"; status=1; }
  # Every process count runs with OMP_NUM_THREADS=1, which torchrun sets by itself for two
  # processes or more: the same configuration per process for every N.
  # SCALE_DEFAULT_THREADS=1 adds one process with torch's default threads.
  runs="${SCALE_NPROCS:-1 2 4 8}"
  [[ -n "${SCALE_DEFAULT_THREADS:-}" ]] && runs="$runs 1threads"
  for run in $runs; do
    n=${run%%threads}
    (( n <= gpus )) || continue
    threads=(OMP_NUM_THREADS=1)
    [[ $run == *threads ]] && threads=(-u OMP_NUM_THREADS)
    t0=$SECONDS
    # NVLink multicast stays off (the device notes): NCCL_NVLS_ENABLE=0.
    env "${threads[@]}" NCCL_NVLS_ENABLE=0 timeout 500 python3 -m torch.distributed.run --standalone --nproc-per-node "$n" \
      -m torchgrabcut dataset --coco "$set_dir/instances.json" --images "$set_dir/images" -o "/tmp/scale_out_$run.json" \
      --batch-size 256 --workers 4 > "$LOGS/scale_$run.log" 2>&1 || status=1
    echo "nproc $run: $((SECONDS - t0)) s wall; $(grep -E 'boxes/s' "$LOGS/scale_$run.log" | tail -1)"
    grep -E '^time: ' "$LOGS/scale_$run.log" | tail -1
    if [[ $run != 1 && -f /tmp/scale_out_1.json ]]; then
      cmp -s /tmp/scale_out_1.json "/tmp/scale_out_$run.json" && echo "nproc $run output identical to nproc 1" \
        || { echo "nproc $run output DIFFERS from nproc 1"; status=1; }
    fi
  done
fi
if [[ " $STEPS " == *" wheel "* ]]; then
  step "wheel: built for this torch and Python, installed into a fresh venv, run on the GPU"
  # In a copy of the tree: the wheel's build writes its own _build_info and objects.
  repo=$PWD
  rm -rf /tmp/wheel_src /tmp/wheel_dist /tmp/wheel_venv
  mkdir -p /tmp/wheel_src
  git ls-files -z --cached --others --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C /tmp/wheel_src
  (cd /tmp/wheel_src && TORCH_CUDA_ARCH_LIST="7.5;8.0;8.6;9.0;10.0;12.0+PTX" TORCHGRABCUT_DEBUG_INFO=0 \
    python3 -m pip wheel -v --no-build-isolation --no-deps -w /tmp/wheel_dist . > "$LOGS/wheel.log" 2>&1) \
    || { tail -30 "$LOGS/wheel.log"; status=1; }
  grep -E "torchgrabcut: " "$LOGS/wheel.log" | sed 's/^ *//'
  ls -l /tmp/wheel_dist/*.whl
  # No network here: the venv sees the machine's torch and numpy through a .pth file
  # (its python3 is itself a venv, whose packages --system-site-packages would not see).
  python3 -m venv /tmp/wheel_venv
  python3 -c 'import site; print(site.getsitepackages()[0])' \
    > "$(/tmp/wheel_venv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine_packages.pth"
  /tmp/wheel_venv/bin/python -m pip install -q --no-index --no-deps /tmp/wheel_dist/torchgrabcut-*.whl \
    > "$LOGS/wheel_install.log" 2>&1 || { tail -10 "$LOGS/wheel_install.log"; status=1; }
  (cd /tmp && python3 "$repo/tests/install/smoke_installed.py" --grabcut50 "$TORCHGRABCUT_GRABCUT50" \
    --write /tmp/wheel_reference.npz > "$LOGS/wheel_smoke.log" 2>&1) || status=1
  (cd /tmp && env -u PYTHONPATH /tmp/wheel_venv/bin/python "$repo/tests/install/smoke_installed.py" --cuda \
    --grabcut50 "$TORCHGRABCUT_GRABCUT50" --reference /tmp/wheel_reference.npz >> "$LOGS/wheel_smoke.log" 2>&1) \
    || status=1
  grep "smoke:" "$LOGS/wheel_smoke.log"
fi

if [[ " $STEPS " == *" oomcrash "* ]]; then
  step "a batch larger than the whole device raises OutOfMemoryError (native frames if it crashes)"
  cc -shared -fPIC -O1 -g -o /tmp/segv_backtrace.so scripts/segv_backtrace.c
  PYTHONFAULTHANDLER=1 LD_PRELOAD=/tmp/segv_backtrace.so timeout 120 python3 -c '
import torch
from torchgrabcut import grabcut
img = torch.zeros(1, 3, 512, 512, dtype=torch.uint8, device="cuda")
try:
    grabcut(img.expand(24800, -1, -1, -1), box=(64, 64, 448, 448))
except torch.OutOfMemoryError as e:
    print("raised torch.OutOfMemoryError:", str(e)[:300])
print("next call:", int(grabcut(img[0], box=(64, 64, 448, 448)).sum()))
' > "$LOGS/oomcrash.log" 2>&1
  rc=$?
  [[ $rc -eq 0 ]] || status=1
  echo "exit $rc"
  grep -v "^/lib\|libpython\|python3\.[0-9]*(" "$LOGS/oomcrash.log" | head -40
  lib=$(ls python/torchgrabcut/_C*.so)
  for off in $(sed -n 's/.*_C[^(]*(+\(0x[0-9a-f]*\)).*/\1/p' "$LOGS/oomcrash.log"); do
    addr2line -f -C -i -e "$lib" "$off" | paste -sd ' '
  done
fi
echo "== done in $((SECONDS - started)) s, status $status"
exit $status
