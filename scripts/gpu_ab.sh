#!/usr/bin/env bash
# A/B timing on the GPU machine, both sides in one call: this tree ("new") against
# the same tree with some files replaced by older versions ("base"). AB_BASE is a
# folder that mirrors the repository's paths and holds only the replaced files, e.g.
#   mkdir -p ab_base/csrc/cuda && git show v0.4:csrc/cuda/maxflow.cu > ab_base/csrc/cuda/maxflow.cu
# Builds both sides (extension and C++ benchmarks), runs the CUDA tests of "new",
# then alternates the C++ CUDA benchmarks and the dataset benchmark. When AB_BASE
# replaces only Python files, "base" is this tree's python/ folder (with the built
# extension) with those files swapped in: nothing is built twice and only the
# Python-level benchmarks (a 512-crop list call, the dataset job on AB_COCO_LARGE
# images, default 1000) run. AB_DATASET_ONLY=1 runs only those for any AB_BASE
# (the base extension built from its files, no C++ benchmarks or tests).
#
#   device run:  AB_BASE=ab_base bash scripts/gpu_ab.sh     (carry: .gtest, .wheels, ab_base)
set -u
cd "$(dirname "$0")/.." || exit 1
AB_BASE=${AB_BASE:?set AB_BASE to the folder of replaced files}
export TORCH_CUDA_ARCH_LIST=9.0 TORCHGRABCUT_CUDA=1 MAX_JOBS=8
BASE=/tmp/ab_base_tree
# The Python-level benchmarks, both sides alternated twice: a list call of the dataset
# job's crops and the dataset job on AB_COCO_LARGE images.
python_rounds() {
  for round in 1 2; do
    for side in base new; do
      pp=$PWD/python
      [[ $side == base ]] && pp=$BASE/python
      echo "== list call (the dataset job's crops), $side, round $round"
      PYTHONPATH=$pp timeout 120 python3 bench/list_call_bench.py --coco 120 | tail -1
      echo "== dataset job, ${AB_COCO_LARGE:-1000} images, $side, round $round"
      PYTHONPATH=$pp timeout 200 python3 bench/coco_bench.py --images "${AB_COCO_LARGE:-1000}" --device cuda \
        --batch-size 256,512 --workers 8 --workdir /tmp/coco_bench 2>&1 | grep -E "coco_bench:|seconds:"
    done
  done
}
if [[ -z $(find "$AB_BASE" -type f ! -path "$AB_BASE/python/*" -print -quit) ]]; then
  STEPS="build pytest" bash scripts/gpu_check.sh
  rm -rf "$BASE" && mkdir -p "$BASE" && cp -r python "$BASE"/ && cp -r "$AB_BASE"/python/. "$BASE"/python/
  python_rounds
  exit 0
fi
rm -rf "$BASE" && mkdir -p "$BASE"
# Built outputs stay behind: setuptools skips an extension whose library is newer than its
# sources, and a replaced header is not among them.
tar cf - --exclude=./data --exclude='./build*' --exclude=./.wheels --exclude="./$AB_BASE" --exclude='*.so' \
  --exclude=./python/torchgrabcut/_build_info.py . | tar xf - -C "$BASE"
cp -r "$AB_BASE"/. "$BASE"/
(cd "$BASE" && python3 setup.py -q build_ext --inplace > /tmp/ab_base_build.log 2>&1 || tail -20 /tmp/ab_base_build.log) &
if [[ -n ${AB_DATASET_ONLY:-} ]]; then
  STEPS="build" bash scripts/gpu_check.sh
  wait
  python_rounds
  exit 0
fi
(cd "$BASE" && cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGRABCUT_CUDA=ON -DGRABCUT_GTEST_SOURCE="$PWD/.gtest" \
  > /tmp/ab_base_cmake.log 2>&1 && cmake --build build-gpu -j 8 --target bench_grabcut_cuda bench_maxflow_cuda \
  >> /tmp/ab_base_cmake.log 2>&1 || tail -20 /tmp/ab_base_cmake.log) &
STEPS="build cmake pytest" bash scripts/gpu_check.sh
wait
for round in 1 2; do
  for side in base new; do
    dir=build-gpu
    [[ $side == base ]] && dir=$BASE/build-gpu
    echo "== bench_grabcut_cuda, $side, round $round"
    timeout 120 "$dir/bench_grabcut_cuda" | grep -E "^1024x1024, 5|^batch of 50|^4096x4096"
  done
done
for side in base new; do
  dir=build-gpu
  [[ $side == base ]] && dir=$BASE/build-gpu
  echo "== bench_maxflow_cuda, $side"
  timeout 200 "$dir/bench_maxflow_cuda" | tail -16
done
echo "== max-flow phase profile, new"
timeout 120 build-gpu/bench_maxflow_cuda_phases | grep -A2 " cold "
for images in 200 ${AB_COCO_LARGE:-1000}; do
  for side in base new; do
    pp=$PWD/python
    [[ $side == base ]] && pp=$BASE/python
    echo "== dataset job, $images images, $side"
    PYTHONPATH=$pp timeout 200 python3 bench/coco_bench.py --images "$images" --device cuda --batch-size 256,512 \
      --workers 8 --workdir /tmp/coco_bench 2>&1 | grep -E "coco_bench:|seconds:"
  done
done
