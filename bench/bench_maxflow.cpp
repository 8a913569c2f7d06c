// Times GridMaxflowSolver::solve on GrabCut-like grid graphs.
//
//   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DGRABCUT_BENCHMARKS=ON
//   cmake --build build-bench --target bench_maxflow && ./build-bench/bench_maxflow
//
// The graphs imitate one GrabCut iteration on a photo (tests/common/grabcut_graph.h,
// scene kWaves: random low-frequency waves per channel around an elliptic object).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/grabcut_graph.h"
#include "common/grid_graph.h"
#include "core/maxflow.h"

namespace {

using Graph = grabcut::testing::HostGridGraph;

// The size x size graph of seed 42; noise is the t-link noise in energy units (larger: a harder cut).
Graph bench_graph(int size, double noise) {
  return grabcut::testing::grabcut_graph(size, size, 42, {grabcut::testing::GrabCutScene::kWaves, noise});
}

void BM_SolveGrabCutGraph(benchmark::State& state) {
  const int size = static_cast<int>(state.range(0));
  const double noise = static_cast<double>(state.range(1));
  const Graph g = bench_graph(size, noise);
  grabcut::GridMaxflowSolver solver;
  solver.set_num_threads(static_cast<int>(state.range(2)));
  std::vector<std::uint8_t> side(g.terminal.size());
  // Warm up: the first call allocates the solver's buffers (page faults); a GrabCut
  // loop reuses them, so that is what is timed.
  std::int64_t flow = solver.solve(g.view(), side.data());
  for (auto _ : state) {
    flow = solver.solve(g.view(), side.data());
    benchmark::DoNotOptimize(flow);
    benchmark::ClobberMemory();
  }
  std::int64_t foreground = 0;
  for (std::uint8_t s : side) foreground += s;
  state.counters["flow"] = static_cast<double>(flow);
  state.counters["fg_fraction"] = static_cast<double>(foreground) / static_cast<double>(side.size());
  state.counters["Mpix/s"] = benchmark::Counter(static_cast<double>(side.size()) * 1e-6,
                                                benchmark::Counter::kIsIterationInvariantRate);
}
// Args: side length, t-link noise in energy units (2 mild, 6 hard), threads of
// the cold solve (0 automatic, 1 serial; see GridMaxflowSolver::set_num_threads).
BENCHMARK(BM_SolveGrabCutGraph)
    ->Args({1024, 2, 0})
    ->Args({1024, 2, 1})
    ->Args({1024, 6, 0})
    ->Args({1024, 6, 1})
    ->Args({512, 2, 0})
    ->Args({2048, 2, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Warm solves as between GrabCut iterations: the same n-links, terminals moved
// toward the evidence of the other graph (alternating between two terminal sets,
// so every timed solve starts from the other one's maximum flow).
void BM_SolveWarmGrabCutGraph(benchmark::State& state) {
  const int size = static_cast<int>(state.range(0));
  const double noise = static_cast<double>(state.range(1));
  const Graph a = bench_graph(size, noise);
  Graph b = a;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0.0, 0.5 * 256.0);
  for (auto& t : b.terminal) {
    if (t <= grabcut::testing::kGrabCutHardBackground) continue;  // hard background stays
    t = static_cast<std::int32_t>(std::nearbyint(0.8 * t + normal(rng)));
  }
  grabcut::GridMaxflowSolver solver;
  std::vector<std::uint8_t> side(a.terminal.size());
  std::int64_t flow = solver.solve(a.view(), side.data());
  bool use_b = true;
  for (auto _ : state) {
    flow = solver.solve_warm((use_b ? b : a).view(), side.data());
    use_b = !use_b;
    benchmark::DoNotOptimize(flow);
    benchmark::ClobberMemory();
  }
  state.counters["flow"] = static_cast<double>(flow);
}
BENCHMARK(BM_SolveWarmGrabCutGraph)->Args({1024, 2})->Args({1024, 6})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
