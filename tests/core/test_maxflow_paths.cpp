// Tests of the grid max-flow solver's two solve paths and of the push sweeps' skip
// rule (csrc/core/maxflow.cpp, issue 36):
//   * a 4-connected graph (every diagonal n-link inside the grid zero) is solved with
//     the 4 axis neighbours only; it must give what the 8-neighbour solver gives on
//     the same graph (set_four_connected_path(false)): flow value and canonical cut,
//     cold and warm, serial and in strips, and the same as an independent reference;
//   * a solver that alternates 4- and 8-connected graphs keeps each answer exact and
//     never warm-starts from the other path's flow;
//   * segmentation-like graphs (smooth unaries, strong contrast-sensitive n-links:
//     few sinks that no inflow can fill, so the push sweeps are skipped) and
//     GrabCut-like ones (hard background: the sweeps run) match the reference.
// The reference is Edmonds-Karp on an explicit arc list, written here and sharing no
// code with the solver.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/grabcut_graph.h"
#include "common/grid_graph.h"
#include "core/maxflow.h"

namespace {

using grabcut::GridMaxflowSolver;
using grabcut::kForwardDx;
using grabcut::kForwardDy;
using grabcut::testing::set_nlinks;
using TestGraph = grabcut::testing::HostGridGraph;

// Edmonds-Karp (shortest augmenting paths by breadth-first search), int64.
struct Reference {
  std::int64_t flow = 0;
  std::vector<std::uint8_t> side;  // 1: cannot reach the sink in the residual graph
};

Reference reference_cut(const TestGraph& g) {
  const int n = static_cast<int>(g.size());
  const int source = n;
  const int sink = n + 1;
  std::vector<std::vector<int>> out(static_cast<std::size_t>(n) + 2);
  std::vector<int> head;
  std::vector<std::int64_t> cap;
  const auto add = [&](int u, int v, std::int64_t cuv, std::int64_t cvu) {
    out[static_cast<std::size_t>(u)].push_back(static_cast<int>(head.size()));
    head.push_back(v);
    cap.push_back(cuv);
    out[static_cast<std::size_t>(v)].push_back(static_cast<int>(head.size()));
    head.push_back(u);
    cap.push_back(cvu);
  };
  for (int y = 0; y < g.height; ++y) {
    for (int x = 0; x < g.width; ++x) {
      const int i = y * g.width + x;
      const std::int64_t t = g.terminal[static_cast<std::size_t>(i)];
      if (t > 0) add(source, i, t, 0);
      if (t < 0) add(i, sink, -t, 0);
      for (int d = 0; d < 4; ++d) {
        if (!g.has_neighbour(y, x, d)) continue;
        const std::int64_t c = g.nlink[static_cast<std::size_t>(d)][static_cast<std::size_t>(i)];
        if (c > 0) add(i, (y + kForwardDy[d]) * g.width + x + kForwardDx[d], c, c);
      }
    }
  }
  Reference r;
  std::vector<int> via(static_cast<std::size_t>(n) + 2);
  for (;;) {
    std::fill(via.begin(), via.end(), -1);
    std::vector<int> queue{source};
    via[static_cast<std::size_t>(source)] = -2;
    for (std::size_t k = 0; k < queue.size() && via[static_cast<std::size_t>(sink)] == -1; ++k) {
      for (int e : out[static_cast<std::size_t>(queue[k])]) {
        const int v = head[static_cast<std::size_t>(e)];
        if (cap[static_cast<std::size_t>(e)] > 0 && via[static_cast<std::size_t>(v)] == -1) {
          via[static_cast<std::size_t>(v)] = e;
          queue.push_back(v);
        }
      }
    }
    if (via[static_cast<std::size_t>(sink)] == -1) break;
    std::int64_t f = std::numeric_limits<std::int64_t>::max();
    for (int v = sink; v != source; v = head[static_cast<std::size_t>(via[static_cast<std::size_t>(v)] ^ 1)]) {
      f = std::min(f, cap[static_cast<std::size_t>(via[static_cast<std::size_t>(v)])]);
    }
    for (int v = sink; v != source; v = head[static_cast<std::size_t>(via[static_cast<std::size_t>(v)] ^ 1)]) {
      cap[static_cast<std::size_t>(via[static_cast<std::size_t>(v)])] -= f;
      cap[static_cast<std::size_t>(via[static_cast<std::size_t>(v)] ^ 1)] += f;
    }
    r.flow += f;
  }
  // Backward from the sink over arcs u -> v with residual capacity.
  std::vector<std::uint8_t> reaches(static_cast<std::size_t>(n) + 2, 0);
  std::vector<int> queue{sink};
  reaches[static_cast<std::size_t>(sink)] = 1;
  for (std::size_t k = 0; k < queue.size(); ++k) {
    for (int e : out[static_cast<std::size_t>(queue[k])]) {
      const int u = head[static_cast<std::size_t>(e)];
      if (reaches[static_cast<std::size_t>(u)] == 0 && cap[static_cast<std::size_t>(e ^ 1)] > 0) {
        reaches[static_cast<std::size_t>(u)] = 1;
        queue.push_back(u);
      }
    }
  }
  r.side.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) r.side[static_cast<std::size_t>(i)] = reaches[static_cast<std::size_t>(i)] ? 0 : 1;
  return r;
}

struct Result {
  std::int64_t flow = 0;
  std::vector<std::uint8_t> side;
};

Result run(GridMaxflowSolver& solver, const TestGraph& g, bool warm) {
  Result r;
  r.side.assign(g.size() + 8, 0xAB);
  r.flow = warm ? solver.solve_warm(g.view(), r.side.data()) : solver.solve(g.view(), r.side.data());
  for (std::size_t k = g.size(); k < r.side.size(); ++k) EXPECT_EQ(r.side[k], 0xAB) << "write past the end";
  r.side.resize(g.size());
  return r;
}

std::string first_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b, int w) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] != b[i]) {
      return "first difference at (y=" + std::to_string(i / static_cast<std::size_t>(w)) +
             ", x=" + std::to_string(i % static_cast<std::size_t>(w)) + ")";
    }
  }
  return a.size() == b.size() ? "no difference" : "sizes differ";
}

void expect_same(const Result& a, const Result& b, int width, const std::string& what) {
  EXPECT_EQ(a.flow, b.flow) << what;
  EXPECT_TRUE(a.side == b.side) << what << ": " << first_difference(a.side, b.side, width);
}

// Solvers on the two paths, with `threads` (1: serial; >= 2: strips).
struct PathPair {
  GridMaxflowSolver four;   // the default: 4-connected graphs take the 4-neighbour path
  GridMaxflowSolver eight;  // always the 8-neighbour path
  explicit PathPair(int threads) {
    four.set_num_threads(threads);
    eight.set_num_threads(threads);
    eight.set_four_connected_path(false);
  }
};

// Random 4-connected graphs: the adversarial regimes of test_maxflow.cpp (ties, huge
// capacities, long paths, zeros) and one with capacities at the limits.
enum class Kind { kSmall, kTiny, kHuge, kStrongNlinks, kSparseTerminals, kZeroHeavy, kLimits };
constexpr Kind kKinds[] = {Kind::kSmall,           Kind::kTiny,      Kind::kHuge,  Kind::kStrongNlinks,
                           Kind::kSparseTerminals, Kind::kZeroHeavy, Kind::kLimits};

TestGraph random_four_connected(int h, int w, Kind kind, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto uniform = [&rng](std::int64_t lo, std::int64_t hi) {
    return static_cast<std::int32_t>(std::uniform_int_distribution<std::int64_t>(lo, hi)(rng));
  };
  const auto chance = [&rng](double p) { return std::bernoulli_distribution(p)(rng); };
  std::int64_t nmax = 10;
  std::int64_t tmax = 20;
  switch (kind) {
    case Kind::kSmall: break;
    case Kind::kTiny: nmax = 2; tmax = 3; break;
    case Kind::kHuge: nmax = std::int64_t{1} << 20; tmax = std::int64_t{1} << 30; break;
    case Kind::kStrongNlinks: nmax = 1000; tmax = 50; break;
    case Kind::kSparseTerminals: nmax = 100; tmax = 5000; break;
    case Kind::kZeroHeavy: nmax = 30; tmax = 30; break;
    case Kind::kLimits: nmax = (std::int64_t{1} << 30) - 1; tmax = std::numeric_limits<std::int32_t>::max(); break;
  }
  TestGraph g(h, w);
  set_nlinks(g, /*eight_connected=*/false, [&](int, int, int) {
    if (kind == Kind::kZeroHeavy && chance(0.5)) return std::int32_t{0};
    if (kind == Kind::kLimits) return chance(0.5) ? static_cast<std::int32_t>(nmax) : uniform(0, 3);
    return uniform(0, nmax);
  });
  for (auto& t : g.terminal) {
    if (kind == Kind::kSparseTerminals && !chance(0.02)) continue;
    if (kind == Kind::kZeroHeavy && chance(0.5)) continue;
    if (kind == Kind::kLimits) {
      t = chance(0.5) ? (chance(0.5) ? std::numeric_limits<std::int32_t>::min() : static_cast<std::int32_t>(tmax))
                      : uniform(-5, 5);
      continue;
    }
    t = uniform(-tmax, tmax);
  }
  return g;
}

// torchmaxflow-style segmentation graph (bench/mincut_bench.py, in miniature): a
// blurred box probability with noise, unaries -log(1 - p) and -log(p) folded into net
// terminals, contrast-sensitive Potts n-links on a smooth random image with a sharp
// edge; 4- or 8-connected. Few pixels are sinks that no inflow can fill.
TestGraph segmentation_graph(int h, int w, bool eight, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.2);
  std::vector<double> grey(static_cast<std::size_t>(h) * static_cast<std::size_t>(w));
  std::vector<double> prob(grey.size());
  const double fx = 2 + static_cast<double>(rng() % 5);
  const double fy = 2 + static_cast<double>(rng() % 5);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const double u = (x + 0.5) / w;
      const double v = (y + 0.5) / h;
      const bool inside = std::abs(u - 0.5) < 0.3 && std::abs(v - 0.5) < 0.25;
      const std::size_t i = static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x);
      grey[i] = 100 * std::sin(fx * u) * std::cos(fy * v) + (inside ? 80.0 : 0.0);
      // A soft box (the blur) with noise after it.
      const double sx = 1 / (1 + std::exp((std::abs(u - 0.5) - 0.3) * 40));
      const double sy = 1 / (1 + std::exp((std::abs(v - 0.5) - 0.25) * 40));
      prob[i] = std::clamp(sx * sy + noise(rng), 1e-3, 1 - 1e-3);
    }
  }
  TestGraph g(h, w);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double source = std::rint(-std::log(1 - prob[i]) * 100);
    const double sink = std::rint(-std::log(prob[i]) * 100);
    g.terminal[i] = static_cast<std::int32_t>(source - sink);
  }
  const double sigma = 20.0;
  set_nlinks(g, eight, [&](int y, int x, int d) {
    const std::size_t i = static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x);
    const std::size_t j = static_cast<std::size_t>(y + kForwardDy[d]) * static_cast<std::size_t>(w) +
                          static_cast<std::size_t>(x + kForwardDx[d]);
    const double diff = grey[i] - grey[j];
    const double distance = (d == 1 || d == 3) ? std::sqrt(2.0) : 1.0;
    return static_cast<std::int32_t>(std::rint(500 * std::exp(-diff * diff / (2 * sigma * sigma)) / distance));
  });
  return g;
}

TEST(MaxflowPaths, FourNeighbourPathMatchesEightAndReference) {
  const std::pair<int, int> shapes[] = {{1, 1}, {1, 2}, {2, 1}, {1, 29}, {29, 1}, {2, 2},
                                        {3, 7}, {8, 8}, {17, 5}, {31, 33}, {64, 61}};
  std::uint64_t seed = 1;
  for (int threads : {1, 3}) {
    PathPair solvers(threads);
    for (auto [h, w] : shapes) {
      for (Kind kind : kKinds) {
        const TestGraph g = random_four_connected(h, w, kind, seed++);
        const std::string what = std::to_string(h) + "x" + std::to_string(w) + " kind " +
                                 std::to_string(static_cast<int>(kind)) + " threads " + std::to_string(threads);
        const Result four = run(solvers.four, g, false);
        const Result eight = run(solvers.eight, g, false);
        expect_same(four, eight, w, what + " (4 vs 8)");
        const Reference ref = reference_cut(g);
        expect_same(four, Result{ref.flow, ref.side}, w, what + " (vs reference)");
        EXPECT_EQ(grabcut::cut_capacity(g.view(), four.side.data()), four.flow) << what;
        if (HasFailure()) return;
      }
    }
  }
}

// Warm starts: each path continues from its own last flow; both must agree with each
// other and with a cold solve after every change of the terminals.
TEST(MaxflowPaths, WarmSequencesAgree) {
  for (int threads : {1, 2, 4}) {
    for (auto [h, w, kind] : {std::tuple{9, 11, Kind::kSmall}, std::tuple{40, 37, Kind::kStrongNlinks},
                              std::tuple{64, 64, Kind::kTiny}, std::tuple{300, 200, Kind::kSmall},
                              std::tuple{30, 30, Kind::kLimits}}) {
      SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w) + " threads " + std::to_string(threads));
      std::mt19937_64 rng(static_cast<std::uint64_t>(h * 1000 + w + threads));
      TestGraph g = random_four_connected(h, w, kind, rng());
      PathPair solvers(threads);
      GridMaxflowSolver cold;
      cold.set_num_threads(1);
      for (int step = 0; step < 8; ++step) {
        const Result four = run(solvers.four, g, step > 0);
        const Result eight = run(solvers.eight, g, step > 0);
        const Result reference = run(cold, g, false);
        expect_same(four, eight, w, "step " + std::to_string(step) + " (4 vs 8)");
        expect_same(four, reference, w, "step " + std::to_string(step) + " (warm vs cold)");
        if (HasFailure()) return;
        for (auto& t : g.terminal) {
          if (kind == Kind::kLimits) {
            t = rng() % 2 ? std::numeric_limits<std::int32_t>::min() : std::numeric_limits<std::int32_t>::max();
          } else {
            t = static_cast<std::int32_t>(std::clamp<std::int64_t>(
                t + static_cast<std::int64_t>(rng() % 21) - 10, -100000, 100000));
          }
        }
        if (step == 5) std::fill(g.terminal.begin(), g.terminal.end(), 0);
      }
    }
  }
}

// One solver, graphs of one size alternating between 4- and 8-connected (and warm
// calls between them): each answer is that of a fresh solver.
TEST(MaxflowPaths, AlternatingConnectivityStaysExact) {
  GridMaxflowSolver solver;
  std::mt19937_64 rng(5);
  TestGraph four = random_four_connected(48, 52, Kind::kStrongNlinks, 11);
  TestGraph eight = four;
  set_nlinks(eight, /*eight_connected=*/true, [&](int, int, int) { return static_cast<std::int32_t>(rng() % 700); });
  // A graph whose only nonzero diagonal is the last one inside the grid, and one
  // with nonzero diagonals only outside the grid (ignored: it is 4-connected).
  TestGraph one_diagonal = four;
  one_diagonal.nlink[grabcut::kDownLeft][static_cast<std::size_t>(46 * 52 + 51)] = 3;
  TestGraph outside = four;
  for (int y = 0; y < 48; ++y) {
    outside.nlink[grabcut::kDownRight][static_cast<std::size_t>(y * 52 + 51)] = 9;  // x + 1 leaves the grid
    outside.nlink[grabcut::kDownLeft][static_cast<std::size_t>(y * 52)] = 9;        // x - 1 leaves the grid
  }
  for (int x = 0; x < 52; ++x) {
    outside.nlink[grabcut::kDownRight][static_cast<std::size_t>(47 * 52 + x)] = 9;  // y + 1 leaves the grid
    outside.nlink[grabcut::kDownLeft][static_cast<std::size_t>(47 * 52 + x)] = 9;
  }
  const TestGraph* sequence[] = {&four, &eight, &four, &one_diagonal, &outside, &four, &eight, &eight, &four};
  for (int round = 0; round < 2; ++round) {
    for (std::size_t k = 0; k < std::size(sequence); ++k) {
      TestGraph& g = const_cast<TestGraph&>(*sequence[k]);
      for (auto& t : g.terminal) t = static_cast<std::int32_t>(static_cast<std::int64_t>(rng() % 121) - 60);
      const bool warm = (k + static_cast<std::size_t>(round)) % 2 == 1;
      GridMaxflowSolver fresh;
      const Result r = run(solver, g, warm);
      expect_same(r, run(fresh, g, false), g.width, "call " + std::to_string(k) + (warm ? " warm" : " cold"));
      const Reference ref = reference_cut(g);
      expect_same(r, Result{ref.flow, ref.side}, g.width, "call " + std::to_string(k) + " vs reference");
      if (HasFailure()) return;
    }
  }
}

// Bad n-links are refused on the 4-neighbour path as on the 8-neighbour one, with
// the same message, and the solver works afterwards.
TEST(MaxflowPaths, RejectsInvalidNlinksOnBothPaths) {
  TestGraph g = random_four_connected(6, 7, Kind::kSmall, 3);
  std::vector<std::uint8_t> side(g.size());
  for (bool four_path : {true, false}) {
    GridMaxflowSolver solver;
    solver.set_four_connected_path(four_path);
    for (int d : {grabcut::kRight, grabcut::kDown}) {
      for (std::int32_t bad : {-1, std::int32_t{1} << 30, std::numeric_limits<std::int32_t>::min()}) {
        TestGraph b = g;
        b.nlink[static_cast<std::size_t>(d)][9] = bad;
        try {
          solver.solve(b.view(), side.data());
          ADD_FAILURE() << "accepted n-link " << bad;
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("must be in [0, 2^30 - 1], got"), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find("(y=1, x=2)"), std::string::npos) << e.what();
        }
      }
    }
    // A negative diagonal makes the graph 8-connected, and invalid.
    TestGraph b = g;
    b.nlink[grabcut::kDownRight][0] = -5;
    EXPECT_THROW(solver.solve(b.view(), side.data()), std::invalid_argument);
    EXPECT_THROW(solver.solve_warm(b.view(), side.data()), std::invalid_argument);
    const Reference ref = reference_cut(g);
    expect_same(run(solver, g, true), Result{ref.flow, ref.side}, g.width, "after the rejections");
  }
}

// Segmentation-like graphs (the push sweeps find almost no strong sink and are
// skipped) and GrabCut-like ones (hard background: the sweeps run), 4- and
// 8-connected, serial and in strips, against the reference.
TEST(MaxflowPaths, SegmentationAndGrabCutGraphsMatchReference) {
  std::uint64_t seed = 100;
  for (auto [h, w] : {std::pair{40, 56}, std::pair{72, 64}, std::pair{1, 90}, std::pair{90, 1}}) {
    for (bool eight : {false, true}) {
      for (int threads : {1, 2}) {
        const std::string what = std::to_string(h) + "x" + std::to_string(w) + (eight ? " 8c" : " 4c") +
                                 " threads " + std::to_string(threads);
        GridMaxflowSolver solver;
        solver.set_num_threads(threads);
        const TestGraph seg = segmentation_graph(h, w, eight, seed++);
        const Reference ref = reference_cut(seg);
        expect_same(run(solver, seg, false), Result{ref.flow, ref.side}, w, what + " segmentation");
        grabcut::testing::GrabCutGraphOptions options;
        options.scene = grabcut::testing::GrabCutScene::kSmoothScore;
        TestGraph gc = grabcut::testing::grabcut_graph(h, w, seed++, options);
        if (!eight) {
          std::fill(gc.nlink[grabcut::kDownRight].begin(), gc.nlink[grabcut::kDownRight].end(), 0);
          std::fill(gc.nlink[grabcut::kDownLeft].begin(), gc.nlink[grabcut::kDownLeft].end(), 0);
        }
        const Reference gref = reference_cut(gc);
        expect_same(run(solver, gc, false), Result{gref.flow, gref.side}, w, what + " grabcut");
        if (HasFailure()) return;
      }
    }
  }
}

// Larger graphs (strips merge many times) on both paths: equal, and minimum cuts.
TEST(MaxflowPaths, LargeGraphsAgree) {
  for (int threads : {1, 4}) {
    PathPair solvers(threads);
    for (const TestGraph& g : {random_four_connected(257, 301, Kind::kStrongNlinks, 7),
                               segmentation_graph(300, 280, false, 8), random_four_connected(600, 3, Kind::kSmall, 9)}) {
      const Result four = run(solvers.four, g, false);
      const Result eight = run(solvers.eight, g, false);
      expect_same(four, eight, g.width, "threads " + std::to_string(threads));
      EXPECT_EQ(grabcut::cut_capacity(g.view(), four.side.data()), four.flow);
    }
  }
}

}  // namespace
