// Times GridMaxflowSolver::solve on GrabCut-like grid graphs.
//
//   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DGRABCUT_BENCHMARKS=ON
//   cmake --build build-bench --target bench_maxflow && ./build-bench/bench_maxflow
//
// The graph imitates one GrabCut iteration on a photo: a smooth random colour field
// (a sum of random low-frequency waves per channel) with an elliptic object of
// another colour, OpenCV's n-links gamma * exp(-beta * |dc|^2) (diagonals divided by
// sqrt 2) scaled by 256, noisy t-links inside a box and hard background (-lambda)
// outside it.
#include <benchmark/benchmark.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/grid_graph.h"
#include "core/maxflow.h"

namespace {

using grabcut::testing::kForwardDx;
using grabcut::testing::kForwardDy;
using Graph = grabcut::testing::HostGridGraph;

// noise_sigma is the t-link noise in energy units: larger means a harder cut.
Graph make_grabcut_graph(int h, int w, double noise_sigma, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  constexpr double kPi = 3.14159265358979323846;

  // Smooth random field: 6 random plane waves per channel.
  struct Wave {
    double ky, kx, phase, amplitude;
  };
  std::array<std::array<Wave, 6>, 3> waves;
  for (auto& channel : waves) {
    for (auto& wave : channel) {
      const double angle = 2 * kPi * uniform(rng);
      const double freq = 2 * kPi * (1.0 + 15.0 * uniform(rng)) / w;
      wave = {freq * std::sin(angle), freq * std::cos(angle), 2 * kPi * uniform(rng), 10.0 + 30.0 * uniform(rng)};
    }
  }
  const std::size_t n = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  std::vector<float> colour(3 * n);
  std::vector<char> object(n);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::size_t i = static_cast<std::size_t>(y) * w + x;
      const double ey = (y - 0.5 * h) / (0.32 * h);
      const double ex = (x - 0.5 * w) / (0.27 * w);
      object[i] = ey * ey + ex * ex < 1.0 + 0.1 * std::sin(8 * std::atan2(ey, ex));
      for (int k = 0; k < 3; ++k) {
        double c = object[i] ? 170.0 - 35.0 * k : 70.0 + 25.0 * k;
        for (const Wave& wave : waves[static_cast<std::size_t>(k)]) {
          c += wave.amplitude * std::sin(wave.ky * y + wave.kx * x + wave.phase);
        }
        colour[3 * i + static_cast<std::size_t>(k)] = static_cast<float>(c + 4.0 * normal(rng));
      }
    }
  }
  auto dist2 = [&](std::size_t a, std::size_t b) {
    double s = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      const double d = double{colour[3 * a + k]} - double{colour[3 * b + k]};
      s += d * d;
    }
    return s;
  };
  double sum = 0;
  double count = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int d = 0; d < 4; ++d) {
        const int ny = y + kForwardDy[d];
        const int nx = x + kForwardDx[d];
        if (ny < h && nx >= 0 && nx < w) {
          sum += dist2(static_cast<std::size_t>(y) * w + x, static_cast<std::size_t>(ny) * w + nx);
          count += 1;
        }
      }
    }
  }
  const double beta = sum > 0 ? 1.0 / (2.0 * sum / count) : 0.0;
  constexpr double kGamma = 50.0;
  constexpr double kScale = 256.0;
  const double lambda = 9.0 * kGamma;

  Graph g(h, w);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::size_t i = static_cast<std::size_t>(y) * w + x;
      for (int d = 0; d < 4; ++d) {
        const int ny = y + kForwardDy[d];
        const int nx = x + kForwardDx[d];
        if (ny >= h || nx < 0 || nx >= w) continue;
        const double diag = (d == 1 || d == 3) ? 1.0 / std::sqrt(2.0) : 1.0;
        const double e = kGamma * diag * std::exp(-beta * dist2(i, static_cast<std::size_t>(ny) * w + nx));
        g.nlink[static_cast<std::size_t>(d)][i] = static_cast<std::int32_t>(std::nearbyint(e * kScale));
      }
      const bool in_box = y >= h / 10 && y < h - h / 10 && x >= w / 10 && x < w - w / 10;
      double t = -lambda;
      if (in_box) {
        t = (object[i] ? 1.5 : -1.5) + noise_sigma * normal(rng);
        if (t > lambda) t = lambda;
        if (t < -lambda) t = -lambda;
      }
      g.terminal[i] = static_cast<std::int32_t>(std::nearbyint(t * kScale));
    }
  }
  return g;
}

void BM_SolveGrabCutGraph(benchmark::State& state) {
  const int size = static_cast<int>(state.range(0));
  const double noise = static_cast<double>(state.range(1));
  const Graph g = make_grabcut_graph(size, size, noise, 42);
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
  const Graph a = make_grabcut_graph(size, size, noise, 42);
  Graph b = a;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0.0, 0.5 * 256.0);
  for (auto& t : b.terminal) {
    if (t <= -static_cast<std::int32_t>(9 * 50 * 256)) continue;  // hard background stays
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
