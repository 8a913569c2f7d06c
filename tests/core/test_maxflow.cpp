// Tests of the grid max-flow solver (csrc/core/maxflow.h) against references that
// share no code with it: Dinic's algorithm on a general adjacency-list graph with
// its own residual search for the canonical cut, and, for graphs of at most 12
// pixels, enumeration of every cut.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/grabcut_graph.h"
#include "common/grid_graph.h"
#include "core/maxflow.h"

namespace {

using grabcut::GridGraphView;
using grabcut::GridMaxflowSolver;

using grabcut::testing::kForwardDx;
using grabcut::testing::kForwardDy;
using grabcut::testing::GrabCutScene;
using grabcut::testing::grabcut_graph;
using grabcut::testing::set_nlinks;
using TestGraph = grabcut::testing::HostGridGraph;

// ---------------------------------------------------------------------------
// Reference: Dinic's algorithm on an explicit graph, int64 capacities.
class ReferenceMaxflow {
 public:
  explicit ReferenceMaxflow(const TestGraph& g)
      : num_pixels_(static_cast<int>(g.size())),
        source_(num_pixels_),
        sink_(num_pixels_ + 1),
        adjacency_(static_cast<std::size_t>(num_pixels_) + 2) {
    for (int y = 0; y < g.height; ++y) {
      for (int x = 0; x < g.width; ++x) {
        const int i = y * g.width + x;
        const std::int64_t t = g.terminal[static_cast<std::size_t>(i)];
        if (t > 0) add_edge(source_, i, t, 0);
        if (t < 0) add_edge(i, sink_, -t, 0);
        for (int d = 0; d < 4; ++d) {
          if (!g.has_neighbour(y, x, d)) continue;
          const std::int64_t c = g.nlink[d][static_cast<std::size_t>(i)];
          const int j = (y + kForwardDy[d]) * g.width + (x + kForwardDx[d]);
          if (c > 0) add_edge(i, j, c, c);  // undirected: both directions c
        }
      }
    }
  }

  std::int64_t max_flow() {
    std::int64_t flow = 0;
    const int n = num_pixels_ + 2;
    std::vector<int> level(static_cast<std::size_t>(n));
    std::vector<std::size_t> next_arc(static_cast<std::size_t>(n));
    std::vector<int> path;  // arc indices from the source
    while (build_levels(level)) {
      std::fill(next_arc.begin(), next_arc.end(), 0);
      path.clear();
      int u = source_;
      for (;;) {
        if (u == sink_) {
          std::int64_t f = std::numeric_limits<std::int64_t>::max();
          for (int e : path) f = std::min(f, cap_[static_cast<std::size_t>(e)]);
          for (int e : path) {
            cap_[static_cast<std::size_t>(e)] -= f;
            cap_[static_cast<std::size_t>(e ^ 1)] += f;
          }
          flow += f;
          std::size_t k = 0;
          while (cap_[static_cast<std::size_t>(path[k])] != 0) ++k;
          path.resize(k);
          u = k == 0 ? source_ : head_[static_cast<std::size_t>(path.back())];
          continue;
        }
        const auto& arcs = adjacency_[static_cast<std::size_t>(u)];
        std::size_t& it = next_arc[static_cast<std::size_t>(u)];
        while (it < arcs.size()) {
          const int e = arcs[it];
          const int v = head_[static_cast<std::size_t>(e)];
          if (cap_[static_cast<std::size_t>(e)] > 0 &&
              level[static_cast<std::size_t>(v)] == level[static_cast<std::size_t>(u)] + 1) {
            break;
          }
          ++it;
        }
        if (it < arcs.size()) {
          const int e = arcs[it];
          path.push_back(e);
          u = head_[static_cast<std::size_t>(e)];
        } else {
          level[static_cast<std::size_t>(u)] = -1;  // dead end
          if (path.empty()) break;
          const int e = path.back();
          path.pop_back();
          u = head_[static_cast<std::size_t>(e ^ 1)];
          ++next_arc[static_cast<std::size_t>(u)];
        }
      }
    }
    return flow;
  }

  // After max_flow(): 1 for pixels that cannot reach the sink in the residual graph.
  std::vector<std::uint8_t> canonical_cut() const {
    std::vector<char> reaches(static_cast<std::size_t>(num_pixels_) + 2, 0);
    std::vector<int> queue{sink_};
    reaches[static_cast<std::size_t>(sink_)] = 1;
    for (std::size_t k = 0; k < queue.size(); ++k) {
      const int v = queue[k];
      for (int e : adjacency_[static_cast<std::size_t>(v)]) {
        const int u = head_[static_cast<std::size_t>(e)];
        // e ^ 1 is the arc u -> v.
        if (!reaches[static_cast<std::size_t>(u)] && cap_[static_cast<std::size_t>(e ^ 1)] > 0) {
          reaches[static_cast<std::size_t>(u)] = 1;
          queue.push_back(u);
        }
      }
    }
    std::vector<std::uint8_t> side(static_cast<std::size_t>(num_pixels_));
    for (std::size_t i = 0; i < side.size(); ++i) side[i] = reaches[i] ? 0 : 1;
    return side;
  }

 private:
  void add_edge(int u, int v, std::int64_t cuv, std::int64_t cvu) {
    adjacency_[static_cast<std::size_t>(u)].push_back(static_cast<int>(head_.size()));
    head_.push_back(v);
    cap_.push_back(cuv);
    adjacency_[static_cast<std::size_t>(v)].push_back(static_cast<int>(head_.size()));
    head_.push_back(u);
    cap_.push_back(cvu);
  }

  bool build_levels(std::vector<int>& level) const {
    std::fill(level.begin(), level.end(), -1);
    std::vector<int> queue{source_};
    level[static_cast<std::size_t>(source_)] = 0;
    for (std::size_t k = 0; k < queue.size(); ++k) {
      const int u = queue[k];
      for (int e : adjacency_[static_cast<std::size_t>(u)]) {
        const int v = head_[static_cast<std::size_t>(e)];
        if (cap_[static_cast<std::size_t>(e)] > 0 && level[static_cast<std::size_t>(v)] < 0) {
          level[static_cast<std::size_t>(v)] = level[static_cast<std::size_t>(u)] + 1;
          queue.push_back(v);
        }
      }
    }
    return level[static_cast<std::size_t>(sink_)] >= 0;
  }

  int num_pixels_;
  int source_;
  int sink_;
  std::vector<std::vector<int>> adjacency_;
  std::vector<int> head_;            // arc e goes to head_[e]; e ^ 1 is its reverse
  std::vector<std::int64_t> cap_;    // residual capacity of arc e
};

// Reference 2: every cut of a graph of at most 12 pixels. Returns the minimum cut
// value and the union of all minimum source sets (the largest one).
std::pair<std::int64_t, std::vector<std::uint8_t>> brute_force_min_cut(const TestGraph& g) {
  const int n = static_cast<int>(g.size());
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  unsigned best_union = 0;
  for (unsigned mask = 0; mask < (1U << n); ++mask) {
    std::int64_t value = 0;
    for (int y = 0; y < g.height; ++y) {
      for (int x = 0; x < g.width; ++x) {
        const int i = y * g.width + x;
        const bool s = ((mask >> i) & 1U) != 0;
        const std::int64_t t = g.terminal[static_cast<std::size_t>(i)];
        if (s && t < 0) value += -t;
        if (!s && t > 0) value += t;
        for (int d = 0; d < 4; ++d) {
          if (!g.has_neighbour(y, x, d)) continue;
          const int j = (y + kForwardDy[d]) * g.width + (x + kForwardDx[d]);
          if (s != (((mask >> j) & 1U) != 0)) value += g.nlink[d][static_cast<std::size_t>(i)];
        }
      }
    }
    if (value < best) {
      best = value;
      best_union = mask;
    } else if (value == best) {
      best_union |= mask;
    }
  }
  std::vector<std::uint8_t> side(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) side[static_cast<std::size_t>(i)] = (best_union >> i) & 1U;
  return {best, side};
}

// ---------------------------------------------------------------------------
// Graph generators.
enum class Regime {
  kSmall,           // n-links 0..10, terminals -20..20
  kTiny,            // n-links 0..2, terminals -3..3, many ties
  kHuge,            // n-links up to 2^20, terminals up to +-2^30
  kStrongNlinks,    // n-links up to 1000, terminals -50..50: flow runs far
  kSparseTerminals, // 98% of terminals zero, the rest large: long paths
  kZeroHeavy,       // half of everything zero
};

const char* regime_name(Regime r) {
  switch (r) {
    case Regime::kSmall: return "Small";
    case Regime::kTiny: return "Tiny";
    case Regime::kHuge: return "Huge";
    case Regime::kStrongNlinks: return "StrongNlinks";
    case Regime::kSparseTerminals: return "SparseTerminals";
    case Regime::kZeroHeavy: return "ZeroHeavy";
  }
  return "?";
}

TestGraph random_graph(int h, int w, Regime regime, bool eight_connected, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&rng](std::int64_t lo, std::int64_t hi) {
    return static_cast<std::int32_t>(std::uniform_int_distribution<std::int64_t>(lo, hi)(rng));
  };
  auto chance = [&rng](double p) { return std::bernoulli_distribution(p)(rng); };
  TestGraph g(h, w);
  std::int64_t nmax = 10;
  std::int64_t tmax = 20;
  switch (regime) {
    case Regime::kSmall: break;
    case Regime::kTiny: nmax = 2; tmax = 3; break;
    case Regime::kHuge: nmax = std::int64_t{1} << 20; tmax = std::int64_t{1} << 30; break;
    case Regime::kStrongNlinks: nmax = 1000; tmax = 50; break;
    case Regime::kSparseTerminals: nmax = 100; tmax = 5000; break;
    case Regime::kZeroHeavy: nmax = 30; tmax = 30; break;
  }
  set_nlinks(g, eight_connected, [&](int, int, int) {
    if (regime == Regime::kZeroHeavy && chance(0.5)) return std::int32_t{0};
    return uniform(0, nmax);
  });
  for (auto& t : g.terminal) {
    if (regime == Regime::kSparseTerminals && !chance(0.02)) continue;
    if (regime == Regime::kZeroHeavy && chance(0.5)) continue;
    t = uniform(-tmax, tmax);
  }
  return g;
}

struct SolveResult {
  std::int64_t flow = 0;
  std::vector<std::uint8_t> side;
};

SolveResult solve_with(GridMaxflowSolver& solver, const TestGraph& g) {
  SolveResult r;
  // Guard bytes after the output catch writes past height * width.
  r.side.assign(g.size() + 16, 0xAB);
  r.flow = solver.solve(g.view(), r.side.data());
  for (std::size_t k = g.size(); k < r.side.size(); ++k) {
    EXPECT_EQ(r.side[k], 0xAB) << "write past the end at " << k;
  }
  r.side.resize(g.size());
  return r;
}

SolveResult solve_fresh(const TestGraph& g) {
  GridMaxflowSolver solver;
  return solve_with(solver, g);
}

std::string first_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                             int width) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] != b[i]) {
      return "first difference at (y=" + std::to_string(i / static_cast<std::size_t>(width)) +
             ", x=" + std::to_string(i % static_cast<std::size_t>(width)) +
             "): " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
    }
  }
  return a.size() == b.size() ? "no difference" : "sizes differ";
}

// Solves g with a (possibly reused) solver and checks flow, cut and cut capacity
// against the Dinic reference.
void expect_matches_reference(GridMaxflowSolver& solver, const TestGraph& g,
                              const std::string& what) {
  SCOPED_TRACE(what);
  const SolveResult r = solve_with(solver, g);
  ReferenceMaxflow ref(g);
  const std::int64_t ref_flow = ref.max_flow();
  const std::vector<std::uint8_t> ref_side = ref.canonical_cut();
  EXPECT_EQ(r.flow, ref_flow);
  EXPECT_EQ(grabcut::cut_capacity(g.view(), r.side.data()), r.flow);
  EXPECT_EQ(grabcut::cut_capacity(g.view(), ref_side.data()), ref_flow);
  EXPECT_TRUE(r.side == ref_side) << first_difference(r.side, ref_side, g.width);
  for (std::uint8_t s : r.side) ASSERT_TRUE(s == 0 || s == 1);
}

void expect_matches_reference(const TestGraph& g, const std::string& what) {
  GridMaxflowSolver solver;
  expect_matches_reference(solver, g, what);
}

// ---------------------------------------------------------------------------
// Small and degenerate graphs.

TEST(Maxflow, EmptyGraphsReturnZeroAndWriteNothing) {
  GridMaxflowSolver solver;
  for (auto [h, w] : {std::pair{0, 0}, std::pair{0, 7}, std::pair{5, 0}}) {
    GridGraphView v;
    v.height = h;
    v.width = w;
    std::uint8_t sentinel = 0x5A;
    EXPECT_EQ(solver.solve(v, &sentinel), 0);
    EXPECT_EQ(sentinel, 0x5A);
    EXPECT_EQ(solver.solve(v, nullptr), 0);
    EXPECT_EQ(grabcut::cut_capacity(v, nullptr), 0);
  }
}

TEST(Maxflow, SinglePixel) {
  for (std::int32_t t : {0, 1, -1, 77, -77, 1 << 30, -(1 << 30), std::numeric_limits<std::int32_t>::max(),
                         std::numeric_limits<std::int32_t>::min()}) {
    TestGraph g(1, 1);
    g.terminal[0] = t;
    const SolveResult r = solve_fresh(g);
    EXPECT_EQ(r.flow, 0) << t;
    EXPECT_EQ(r.side[0], t < 0 ? 0 : 1) << t;  // a zero terminal ties toward the source
  }
}

TEST(Maxflow, TwoPixels) {
  // source -5-> a -3- b -4-> sink: flow 3, the n-link is the cut; b can reach the sink,
  // a cannot (a -> b saturated).
  TestGraph g(1, 2);
  g.terminal = {5, -4};
  g.nlink[grabcut::kRight][0] = 3;
  SolveResult r = solve_fresh(g);
  EXPECT_EQ(r.flow, 3);
  EXPECT_EQ(r.side, (std::vector<std::uint8_t>{1, 0}));
  // A strong n-link: b -> sink saturates and a keeps 1 unit from the source, so
  // neither pixel reaches the sink.
  g.nlink[grabcut::kRight][0] = 100;
  r = solve_fresh(g);
  EXPECT_EQ(r.flow, 4);
  EXPECT_EQ(r.side, (std::vector<std::uint8_t>{1, 1}));
  // A tie: everything saturates and the canonical cut puts both on the source side.
  g.terminal = {4, -4};
  r = solve_fresh(g);
  EXPECT_EQ(r.flow, 4);
  EXPECT_EQ(r.side, (std::vector<std::uint8_t>{1, 1}));
  // Vertical pair.
  TestGraph v(2, 1);
  v.terminal = {-6, 9};
  v.nlink[grabcut::kDown][0] = 2;
  r = solve_fresh(v);
  EXPECT_EQ(r.flow, 2);
  EXPECT_EQ(r.side, (std::vector<std::uint8_t>{0, 1}));
}

TEST(Maxflow, AgreesWithBruteForceOnTinyGraphs) {
  std::mt19937_64 rng(12345);
  const std::pair<int, int> shapes[] = {{1, 2}, {2, 1}, {2, 2}, {1, 7}, {7, 1}, {2, 3}, {3, 2},
                                        {3, 3}, {2, 5}, {3, 4}, {4, 3}, {2, 6}, {1, 12}, {12, 1}};
  int cases = 0;
  for (auto [h, w] : shapes) {
    for (int rep = 0; rep < 40; ++rep) {
      const Regime regime = rep % 3 == 0 ? Regime::kTiny : (rep % 3 == 1 ? Regime::kSmall : Regime::kZeroHeavy);
      const TestGraph g = random_graph(h, w, regime, rep % 2 == 0, rng());
      const auto [ref_flow, ref_side] = brute_force_min_cut(g);
      const SolveResult r = solve_fresh(g);
      ASSERT_EQ(r.flow, ref_flow) << h << "x" << w << " rep " << rep;
      ASSERT_EQ(r.side, ref_side) << h << "x" << w << " rep " << rep << ": "
                                  << first_difference(r.side, ref_side, w);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 14 * 40);
}

TEST(Maxflow, AllZeroCapacities) {
  for (auto [h, w] : {std::pair{1, 1}, std::pair{1, 9}, std::pair{9, 1}, std::pair{31, 33}}) {
    const TestGraph g(h, w);
    const SolveResult r = solve_fresh(g);
    EXPECT_EQ(r.flow, 0);
    EXPECT_TRUE(std::all_of(r.side.begin(), r.side.end(), [](std::uint8_t s) { return s == 1; }));
  }
}

TEST(Maxflow, AllSourceAndAllSink) {
  for (bool eight : {false, true}) {
    TestGraph g = random_graph(31, 33, Regime::kSmall, eight, 7);
    for (auto& t : g.terminal) t = 1 + (t & 15);
    SolveResult r = solve_fresh(g);
    EXPECT_EQ(r.flow, 0);
    EXPECT_TRUE(std::all_of(r.side.begin(), r.side.end(), [](std::uint8_t s) { return s == 1; }));
    for (auto& t : g.terminal) t = -t;
    r = solve_fresh(g);
    EXPECT_EQ(r.flow, 0);
    EXPECT_TRUE(std::all_of(r.side.begin(), r.side.end(), [](std::uint8_t s) { return s == 0; }));
  }
}

TEST(Maxflow, CheckerboardTerminals) {
  for (bool eight : {false, true}) {
    for (std::int32_t nl : {0, 1, 5, 1000, 1 << 20}) {
      for (auto [h, w] : {std::pair{1, 16}, std::pair{16, 1}, std::pair{8, 8}, std::pair{31, 33}}) {
        TestGraph g(h, w);
        set_nlinks(g, eight, [&](int, int, int) { return nl; });
        for (int y = 0; y < h; ++y) {
          for (int x = 0; x < w; ++x) g.terminal[static_cast<std::size_t>(y) * w + x] = (x + y) % 2 ? 100 : -100;
        }
        expect_matches_reference(g, "checkerboard " + std::to_string(h) + "x" + std::to_string(w) +
                                        " nlink " + std::to_string(nl) + (eight ? " 8c" : " 4c"));
      }
    }
  }
}

TEST(Maxflow, HugeCapacities) {
  constexpr std::int32_t kMaxNlink = (1 << 30) - 1;  // the largest n-link accepted
  constexpr std::int32_t kInt32Max = std::numeric_limits<std::int32_t>::max();
  constexpr std::int32_t kInt32Min = std::numeric_limits<std::int32_t>::min();
  // Terminals at the int32 extremes, n-links at the maximum or 2^20.
  TestGraph g(40, 41);
  std::mt19937_64 rng(99);
  set_nlinks(g, true, [&](int, int, int) { return rng() % 2 ? kMaxNlink : std::int32_t{1} << 20; });
  for (auto& t : g.terminal) {
    const auto r = rng() % 4;
    t = r == 0 ? kInt32Max : r == 1 ? kInt32Min : (r == 2 ? (1 << 30) : -(1 << 30));
  }
  expect_matches_reference(g, "extreme terminals");
  // A flow far beyond int32: source and sink columns alternate.
  TestGraph big(64, 64);
  set_nlinks(big, true, [&](int, int, int) { return kMaxNlink; });
  for (std::size_t i = 0; i < big.size(); ++i) big.terminal[i] = i % 2 ? (1 << 30) : -(1 << 30);
  SolveResult r = solve_fresh(big);
  EXPECT_EQ(r.flow, std::int64_t{2048} << 30);
  EXPECT_EQ(grabcut::cut_capacity(big.view(), r.side.data()), r.flow);
  expect_matches_reference(big, "alternating columns");
  // Every pixel at +-2^30 with n-links 2^20, in a checkerboard.
  TestGraph board(50, 51);
  set_nlinks(board, true, [](int, int, int) { return std::int32_t{1} << 20; });
  for (int y = 0; y < board.height; ++y) {
    for (int x = 0; x < board.width; ++x) {
      board.terminal[static_cast<std::size_t>(y) * board.width + x] = (x + y) % 2 ? (1 << 30) : -(1 << 30);
    }
  }
  expect_matches_reference(board, "huge checkerboard");
}

// A 4-connected serpentine corridor: augmenting paths run the length of the grid,
// and saturating them orphans long chains of the trees.
TEST(Maxflow, SerpentineCorridor) {
  for (int variant = 0; variant < 4; ++variant) {
    const int h = 41;
    const int w = 43;
    TestGraph g(h, w);
    std::mt19937_64 rng(static_cast<std::uint64_t>(variant));
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const std::size_t i = static_cast<std::size_t>(y) * w + x;
        // Corridors along the even rows, joined at the right end after rows
        // 0, 4, 8, ... and at the left end after rows 2, 6, 10, ...
        if (y % 2 == 0 && x + 1 < w) g.nlink[grabcut::kRight][i] = static_cast<std::int32_t>(50 + rng() % 50);
        const bool turn_column = (y % 4 < 2) ? x == w - 1 : x == 0;
        if (y + 1 < h && turn_column) g.nlink[grabcut::kDown][i] = static_cast<std::int32_t>(50 + rng() % 50);
        if (variant >= 2 && rng() % 16 == 0) g.terminal[i] = static_cast<std::int32_t>(rng() % 41) - 20;
      }
    }
    g.terminal[0] = 1000;
    g.terminal[g.size() - 1] = -1000;
    if (variant % 2) std::swap(g.terminal[0], g.terminal[g.size() - 1]);
    expect_matches_reference(g, "serpentine " + std::to_string(variant));
  }
}

TEST(Maxflow, GrabCutLikeGraphs) {
  for (auto [h, w] : {std::pair{24, 24}, std::pair{64, 80}, std::pair{150, 130}}) {
    for (std::uint64_t seed : {1U, 2U}) {
      expect_matches_reference(grabcut_graph(h, w, seed, {GrabCutScene::kRipples}),
                               "grabcut " + std::to_string(h) + "x" + std::to_string(w));
    }
  }
}

// ---------------------------------------------------------------------------
// Random graphs against the reference, over sizes, regimes and connectivity.

using RandomCase = std::tuple<std::pair<int, int>, Regime, bool>;

class MaxflowRandomTest : public ::testing::TestWithParam<RandomCase> {};

TEST_P(MaxflowRandomTest, MatchesReference) {
  const auto& [shape, regime, eight] = GetParam();
  const auto [h, w] = shape;
  // Many seeds for small graphs, fewer for large ones.
  const int area = h * w;
  const int seeds = area <= 64 ? 30 : area <= 2000 ? 6 : area <= 20000 ? 2 : 1;
  GridMaxflowSolver reused;
  for (int s = 0; s < seeds; ++s) {
    const std::uint64_t seed = static_cast<std::uint64_t>(s) * 7919U + static_cast<std::uint64_t>(area);
    const TestGraph g = random_graph(h, w, regime, eight, seed);
    expect_matches_reference(reused, g, "seed " + std::to_string(s));
    if (HasFatalFailure()) return;
  }
}

std::string random_case_name(const ::testing::TestParamInfo<RandomCase>& info) {
  const auto& [shape, regime, eight] = info.param;
  return std::to_string(shape.first) + "x" + std::to_string(shape.second) + "_" + regime_name(regime) +
         (eight ? "_8c" : "_4c");
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, MaxflowRandomTest,
    ::testing::Combine(::testing::Values(std::pair{1, 1}, std::pair{1, 2}, std::pair{2, 1}, std::pair{1, 37},
                                         std::pair{37, 1}, std::pair{3, 5}, std::pair{8, 8}, std::pair{2, 50},
                                         std::pair{31, 33}, std::pair{64, 65}, std::pair{100, 37},
                                         std::pair{120, 120}),
                       ::testing::Values(Regime::kSmall, Regime::kTiny, Regime::kHuge, Regime::kStrongNlinks,
                                         Regime::kSparseTerminals, Regime::kZeroHeavy),
                       ::testing::Bool()),
    random_case_name);

INSTANTIATE_TEST_SUITE_P(
    Large, MaxflowRandomTest,
    ::testing::Values(RandomCase{{200, 200}, Regime::kSmall, true},
                      RandomCase{{200, 200}, Regime::kStrongNlinks, false},
                      RandomCase{{150, 160}, Regime::kSparseTerminals, true},
                      RandomCase{{1, 3000}, Regime::kStrongNlinks, true},
                      RandomCase{{3000, 1}, Regime::kSparseTerminals, true}),
    random_case_name);

// ---------------------------------------------------------------------------
// Buffer reuse, input handling, large graphs.

TEST(Maxflow, ReusedSolverAcrossSizesMatchesFreshSolver) {
  GridMaxflowSolver reused;
  std::mt19937_64 rng(2024);
  // Includes transposed shapes with the same padded size (10x20 and 20x10).
  const std::pair<int, int> shapes[] = {{10, 20}, {20, 10}, {1, 1}, {0, 4}, {33, 31}, {31, 33}, {5, 5},
                                        {64, 64}, {1, 50}, {50, 1}, {64, 64}, {12, 80}};
  for (auto [h, w] : shapes) {
    const TestGraph g = random_graph(h, w, static_cast<Regime>(rng() % 6), rng() % 2 == 0, rng());
    if (g.size() == 0) {
      EXPECT_EQ(reused.solve(g.view(), nullptr), 0);
      continue;
    }
    expect_matches_reference(reused, g, std::to_string(h) + "x" + std::to_string(w));
  }
}

TEST(Maxflow, MovedSolverStillWorks) {
  const TestGraph g = random_graph(20, 21, Regime::kSmall, true, 5);
  const SolveResult expected = solve_fresh(g);
  GridMaxflowSolver a;
  (void)solve_with(a, g);
  GridMaxflowSolver b(std::move(a));
  SolveResult r = solve_with(b, g);
  EXPECT_EQ(r.flow, expected.flow);
  EXPECT_EQ(r.side, expected.side);
  GridMaxflowSolver c;
  c = std::move(b);
  r = solve_with(c, g);
  EXPECT_EQ(r.side, expected.side);
  // A moved-from solver may be used again.
  r = solve_with(b, g);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(r.flow, expected.flow);
  EXPECT_EQ(r.side, expected.side);
}

TEST(Maxflow, IgnoresNlinkEntriesOutsideTheGrid) {
  TestGraph g = random_graph(17, 19, Regime::kSmall, true, 11);
  const SolveResult clean = solve_fresh(g);
  for (int y = 0; y < g.height; ++y) {
    for (int x = 0; x < g.width; ++x) {
      for (int d = 0; d < 4; ++d) {
        if (!g.has_neighbour(y, x, d)) g.nlink[d][static_cast<std::size_t>(y) * g.width + x] = 12345;
      }
    }
  }
  const SolveResult r = solve_fresh(g);
  EXPECT_EQ(r.flow, clean.flow);
  EXPECT_EQ(r.side, clean.side);
  EXPECT_EQ(grabcut::cut_capacity(g.view(), r.side.data()), r.flow);
}

TEST(Maxflow, RejectsInvalidInput) {
  GridMaxflowSolver solver;
  TestGraph g = random_graph(4, 5, Regime::kSmall, true, 3);
  std::vector<std::uint8_t> side(g.size());
  GridGraphView v = g.view();
  v.height = -1;
  EXPECT_THROW(solver.solve(v, side.data()), std::invalid_argument);
  v = g.view();
  v.nlink[2] = nullptr;
  EXPECT_THROW(solver.solve(v, side.data()), std::invalid_argument);
  EXPECT_THROW(solver.solve(g.view(), nullptr), std::invalid_argument);
  g.nlink[grabcut::kDown][3] = -1;
  EXPECT_THROW(solver.solve(g.view(), side.data()), std::invalid_argument);
  g.nlink[grabcut::kDown][3] = 1 << 30;
  EXPECT_THROW(solver.solve(g.view(), side.data()), std::invalid_argument);
  g.nlink[grabcut::kDown][3] = std::numeric_limits<std::int32_t>::min();
  EXPECT_THROW(solver.solve(g.view(), side.data()), std::invalid_argument);
  // The solver still works after a rejected call.
  g.nlink[grabcut::kDown][3] = 4;
  expect_matches_reference(solver, g, "after rejection");
}

// ---------------------------------------------------------------------------
// Warm starts (solve_warm) and the parallel cold solve (set_num_threads).

SolveResult solve_warm_with(GridMaxflowSolver& solver, const TestGraph& g) {
  SolveResult r;
  r.side.assign(g.size() + 16, 0xAB);
  r.flow = solver.solve_warm(g.view(), r.side.data());
  for (std::size_t k = g.size(); k < r.side.size(); ++k) {
    EXPECT_EQ(r.side[k], 0xAB) << "write past the end at " << k;
  }
  r.side.resize(g.size());
  return r;
}

SolveResult solve_serial(const TestGraph& g) {
  GridMaxflowSolver solver;
  solver.set_num_threads(1);
  return solve_with(solver, g);
}

// The ways GrabCut-like terminals may change between two solves.
enum class Change { kRerandomise, kPerturb, kFlipSigns, kNone, kAllZero, kFewPixels, kExtreme };
constexpr Change kAllChanges[] = {Change::kRerandomise, Change::kPerturb,  Change::kFlipSigns,
                                  Change::kNone,        Change::kAllZero,  Change::kFewPixels,
                                  Change::kExtreme};

void change_terminals(TestGraph& g, Change change, std::mt19937_64& rng) {
  auto uniform = [&rng](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (auto& t : g.terminal) {
    switch (change) {
      case Change::kRerandomise: t = static_cast<std::int32_t>(uniform(-60, 60)); break;
      case Change::kPerturb:
        t = static_cast<std::int32_t>(std::clamp<std::int64_t>(t + uniform(-5, 5), -100000, 100000));
        break;
      case Change::kFlipSigns: t = t == std::numeric_limits<std::int32_t>::min() ? 0 : -t; break;
      case Change::kNone: break;
      case Change::kAllZero: t = 0; break;
      case Change::kFewPixels:
        if (uniform(0, 19) == 0) t = static_cast<std::int32_t>(uniform(-1000, 1000));
        break;
      case Change::kExtreme:
        t = uniform(0, 1) == 0 ? std::numeric_limits<std::int32_t>::min() : std::numeric_limits<std::int32_t>::max();
        break;
    }
  }
}

// A sequence of terminal changes on one graph: every warm solve must give the
// canonical cut and the flow value of a cold solve (and of the reference where the
// graph is small enough), and the cut must be a minimum cut.
// threads: the solver's set_num_threads (0: automatic; >= 2 forces strips, cold and warm).
void expect_warm_sequence(int h, int w, Regime regime, bool eight, std::uint64_t seed, int steps, int threads = 0) {
  SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w) + " " + regime_name(regime) + (eight ? " 8c" : " 4c") +
               " seed " + std::to_string(seed) + " threads " + std::to_string(threads));
  std::mt19937_64 rng(seed);
  TestGraph g = random_graph(h, w, regime, eight, seed);
  GridMaxflowSolver warm;
  warm.set_num_threads(threads);
  const SolveResult first = solve_with(warm, g);
  EXPECT_EQ(first.side, solve_serial(g).side);
  const bool small = g.size() <= 20000;
  for (int step = 0; step < steps; ++step) {
    const Change change = step < 7 ? kAllChanges[step] : kAllChanges[rng() % 7];
    change_terminals(g, change, rng);
    SCOPED_TRACE("step " + std::to_string(step) + " change " + std::to_string(static_cast<int>(change)));
    const SolveResult r = solve_warm_with(warm, g);
    const SolveResult cold = solve_serial(g);
    EXPECT_EQ(r.flow, cold.flow);
    EXPECT_TRUE(r.side == cold.side) << first_difference(r.side, cold.side, g.width);
    EXPECT_EQ(grabcut::cut_capacity(g.view(), r.side.data()), r.flow);
    if (small) {
      ReferenceMaxflow ref(g);
      EXPECT_EQ(r.flow, ref.max_flow());
      const std::vector<std::uint8_t> ref_side = ref.canonical_cut();
      EXPECT_TRUE(r.side == ref_side) << first_difference(r.side, ref_side, g.width);
    }
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(MaxflowWarm, MatchesColdSolveAfterTerminalChanges) {
  const std::pair<int, int> shapes[] = {{1, 1},  {1, 2},  {2, 1},   {1, 37},  {37, 1}, {3, 5},
                                        {8, 8},  {7, 13}, {31, 33}, {64, 65}, {100, 37}};
  std::uint64_t seed = 1;
  for (auto [h, w] : shapes) {
    for (Regime regime : {Regime::kSmall, Regime::kTiny, Regime::kHuge, Regime::kStrongNlinks,
                          Regime::kSparseTerminals, Regime::kZeroHeavy}) {
      for (bool eight : {false, true}) {
        const int steps = h * w <= 64 ? 20 : 10;
        expect_warm_sequence(h, w, regime, eight, seed++, steps);
        if (HasFailure()) return;
      }
    }
  }
}

TEST(MaxflowWarm, MatchesColdSolveOnLargeGrids) {
  expect_warm_sequence(200, 201, Regime::kStrongNlinks, true, 77, 8);
  expect_warm_sequence(257, 131, Regime::kSmall, false, 78, 8);
  expect_warm_sequence(1, 3000, Regime::kSparseTerminals, true, 79, 8);
  expect_warm_sequence(3000, 1, Regime::kStrongNlinks, false, 80, 8);
  expect_warm_sequence(512, 512, Regime::kStrongNlinks, true, 81, 8);
}

// The GrabCut case: n-links fixed, terminals from noisy evidence, re-drawn.
TEST(MaxflowWarm, GrabCutLikeSequence) {
  for (auto [h, w] : {std::pair{150, 130}, std::pair{512, 512}}) {
    TestGraph g = grabcut_graph(h, w, 5, {GrabCutScene::kRipples});
    GridMaxflowSolver warm;
    (void)solve_with(warm, g);
    std::mt19937_64 rng(9);
    std::normal_distribution<double> noise(0.0, 300.0);
    for (int step = 0; step < 4; ++step) {
      for (auto& t : g.terminal) {
        if (t == -115200) continue;  // hard background stays
        t = static_cast<std::int32_t>(std::nearbyint(t * 0.8 + noise(rng)));
      }
      SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w) + " step " + std::to_string(step));
      const SolveResult r = solve_warm_with(warm, g);
      const SolveResult cold = solve_serial(g);
      EXPECT_EQ(r.flow, cold.flow);
      EXPECT_TRUE(r.side == cold.side) << first_difference(r.side, cold.side, g.width);
      EXPECT_EQ(grabcut::cut_capacity(g.view(), r.side.data()), r.flow);
    }
  }
}

// Without a usable earlier flow (none yet, another size, other n-links, a call
// that threw) solve_warm is a cold solve.
TEST(MaxflowWarm, FallsBackToColdSolve) {
  GridMaxflowSolver solver;
  TestGraph g = random_graph(23, 17, Regime::kSmall, true, 4);
  expect_matches_reference(solver, g, "warm before any solve");  // solve
  GridMaxflowSolver fresh;
  SolveResult r = solve_warm_with(fresh, g);
  EXPECT_EQ(r.side, solve_serial(g).side);
  EXPECT_EQ(r.flow, solve_serial(g).flow);

  // Other n-links, same size: the earlier flow must not be used.
  TestGraph other = random_graph(23, 17, Regime::kStrongNlinks, true, 5);
  r = solve_warm_with(solver, other);
  EXPECT_EQ(r.side, solve_serial(other).side);
  EXPECT_EQ(r.flow, solve_serial(other).flow);
  // One n-link changed by one.
  other.nlink[grabcut::kDownLeft][40] += 1;
  r = solve_warm_with(solver, other);
  EXPECT_EQ(r.side, solve_serial(other).side);
  EXPECT_EQ(r.flow, solve_serial(other).flow);
  // Another size, and the transposed shape with the same padded size.
  const TestGraph t = random_graph(17, 23, Regime::kSmall, false, 6);
  r = solve_warm_with(solver, t);
  EXPECT_EQ(r.side, solve_serial(t).side);
  EXPECT_EQ(r.flow, solve_serial(t).flow);
  // A call that throws leaves no flow to start from.
  TestGraph bad = t;
  bad.nlink[grabcut::kRight][5] = -1;
  std::vector<std::uint8_t> side(t.size());
  EXPECT_THROW(solver.solve_warm(bad.view(), side.data()), std::invalid_argument);
  EXPECT_THROW(solver.solve_warm(t.view(), nullptr), std::invalid_argument);
  GridGraphView v = t.view();
  v.width = -2;
  EXPECT_THROW(solver.solve_warm(v, side.data()), std::invalid_argument);
  r = solve_warm_with(solver, t);
  EXPECT_EQ(r.side, solve_serial(t).side);
  EXPECT_EQ(r.flow, solve_serial(t).flow);
  // Empty graphs.
  const TestGraph empty(0, 5);
  EXPECT_EQ(solver.solve_warm(empty.view(), nullptr), 0);
  r = solve_warm_with(solver, t);
  EXPECT_EQ(r.side, solve_serial(t).side);
}

// Terminals that push a warm residual past int32 force a cold solve.
TEST(MaxflowWarm, ExtremeTerminalsStayExact) {
  for (bool eight : {false, true}) {
    TestGraph g = random_graph(9, 11, Regime::kHuge, eight, 12);
    GridMaxflowSolver solver;
    (void)solve_with(solver, g);
    std::mt19937_64 rng(3);
    for (int step = 0; step < 12; ++step) {
      for (auto& t : g.terminal) {
        const auto pick = rng() % 4;
        t = pick == 0   ? std::numeric_limits<std::int32_t>::min()
            : pick == 1 ? std::numeric_limits<std::int32_t>::max()
            : pick == 2 ? 0
                        : static_cast<std::int32_t>(static_cast<std::int64_t>(rng() % 2000001) - 1000000);
      }
      const SolveResult r = solve_warm_with(solver, g);
      ReferenceMaxflow ref(g);
      EXPECT_EQ(r.flow, ref.max_flow());
      EXPECT_EQ(r.side, ref.canonical_cut());
    }
  }
}

TEST(MaxflowWarm, ReusedAcrossSizesWithWarmCalls) {
  GridMaxflowSolver reused;
  std::mt19937_64 rng(31);
  const std::pair<int, int> shapes[] = {{10, 20}, {10, 20}, {20, 10}, {1, 1}, {1, 1}, {33, 31},
                                        {33, 31}, {64, 64}, {1, 50}, {50, 1}, {50, 1}, {12, 80}};
  for (auto [h, w] : shapes) {
    const TestGraph g = random_graph(h, w, static_cast<Regime>(rng() % 6), rng() % 2 == 0, rng());
    SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w));
    const SolveResult r = rng() % 2 == 0 ? solve_warm_with(reused, g) : solve_with(reused, g);
    ReferenceMaxflow ref(g);
    EXPECT_EQ(r.flow, ref.max_flow());
    EXPECT_EQ(r.side, ref.canonical_cut());
  }
}

// g's terminals in the pair form: source max(t, 0), sink max(-t, 0).
std::pair<std::vector<std::int32_t>, std::vector<std::int32_t>> pair_terminals(const TestGraph& g) {
  std::vector<std::int32_t> source(g.size()), sink(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    source[i] = std::max(g.terminal[i], 0);
    sink[i] = std::max(-g.terminal[i], 0);
  }
  return {source, sink};
}

// What solving b says: the message of the std::invalid_argument it throws, or
// "accepted". With source (and sink), b in the pair form with those terminals and node
// sums bounded by max_sum.
std::string solve_message(GridMaxflowSolver& solver, const TestGraph& b, const std::vector<std::int32_t>* source,
                          const std::vector<std::int32_t>* sink, std::int64_t max_sum) {
  grabcut::GridGraphView v = b.view();
  if (source != nullptr) {
    v.terminal = nullptr;
    v.source = source->data();
    v.sink = sink->data();
    v.max_node_sum = max_sum;
  }
  std::vector<std::uint8_t> side(b.size());
  try {
    solver.solve(v, side.data());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

// The parallel cold solve (strips) gives the serial result, whatever the strips.
TEST(MaxflowParallel, StripsMatchSerial) {
  const std::pair<int, int> shapes[] = {{1, 1}, {2, 1}, {1, 40}, {3, 7}, {5, 5}, {17, 3}, {64, 65}, {120, 121}};
  std::uint64_t seed = 100;
  for (auto [h, w] : shapes) {
    for (Regime regime : {Regime::kSmall, Regime::kHuge, Regime::kStrongNlinks, Regime::kSparseTerminals,
                          Regime::kZeroHeavy}) {
      for (bool eight : {false, true}) {
        const TestGraph g = random_graph(h, w, regime, eight, seed++);
        const SolveResult serial = solve_serial(g);
        ReferenceMaxflow ref(g);
        EXPECT_EQ(serial.flow, ref.max_flow());
        EXPECT_EQ(serial.side, ref.canonical_cut());
        for (int threads : {0, 2, 3, 8}) {
          SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w) + " threads " + std::to_string(threads));
          GridMaxflowSolver solver;
          solver.set_num_threads(threads);
          const SolveResult r = solve_with(solver, g);
          EXPECT_EQ(r.flow, serial.flow);
          EXPECT_TRUE(r.side == serial.side) << first_difference(r.side, serial.side, g.width);
        }
      }
    }
  }
}

// A graph with a bad value is refused in strips as in the serial solve, with the
// same message (the first bad pixel in raster order), wherever the value lies: in a
// strip, on a separator row or beside one (whose n-links to the separator the strip
// does not read); in the net and the pair form. The solver works afterwards.
TEST(MaxflowParallel, StripsRefuseAsSerial) {
  const int h = 23;
  const int w = 6;
  const TestGraph g = random_graph(h, w, Regime::kSmall, true, 41);
  const auto terminals = pair_terminals(g);
  const std::vector<std::int32_t>& source = terminals.first;
  const std::vector<std::int32_t>& sink = terminals.second;
  const auto message = [&](GridMaxflowSolver& solver, const TestGraph& b, const std::vector<std::int32_t>* src,
                           std::int64_t max_sum) { return solve_message(solver, b, src, &sink, max_sum); };
  const SolveResult serial = solve_serial(g);
  for (int threads : {2, 3, 8}) {
    GridMaxflowSolver solver;
    solver.set_num_threads(threads);
    GridMaxflowSolver one;
    one.set_num_threads(1);
    for (int y = 0; y < h; ++y) {
      for (int d = 0; d < 4; ++d) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " row " + std::to_string(y) + " n-link " +
                     std::to_string(d));
        TestGraph b = g;
        const std::size_t i = static_cast<std::size_t>(y) * w + 3;
        if (y + 1 < h) b.nlink[static_cast<std::size_t>(d)][i] = -1;  // an n-link out of the grid is ignored
        EXPECT_EQ(message(solver, b, nullptr, 0), message(one, b, nullptr, 0));
        EXPECT_EQ(message(solver, b, &source, 1 << 20), message(one, b, &source, 1 << 20));
        // A node sum over the bound, from the n-links to the row below.
        if (y + 1 < h) b.nlink[static_cast<std::size_t>(d)][i] = 1000;
        EXPECT_EQ(message(solver, b, &source, 999), message(one, b, &source, 999));
      }
    }
    const SolveResult r = solve_with(solver, g);
    EXPECT_EQ(r.flow, serial.flow);
    EXPECT_TRUE(r.side == serial.side) << first_difference(r.side, serial.side, w);
  }
}

// A warm solve of g with every third terminal changed, after the solver's last solve of
// g, equals a cold solve in one piece of the changed graph.
void expect_warm_solve_matches_serial(GridMaxflowSolver& solver, const TestGraph& g) {
  TestGraph changed = g;
  for (std::size_t i = 0; i < changed.size(); i += 3) changed.terminal[i] = -changed.terminal[i] / 2;
  const SolveResult w = solve_warm_with(solver, changed);
  const SolveResult cold = solve_serial(changed);
  EXPECT_EQ(w.flow, cold.flow);
  EXPECT_TRUE(w.side == cold.side) << first_difference(w.side, cold.side, g.width);
}

TEST(MaxflowParallel, LargeGridsMatchSerial) {
  for (const TestGraph& g : {grabcut_graph(512, 512, 4, {GrabCutScene::kRipples}),
                             random_graph(512, 512, Regime::kStrongNlinks, true, 3),
                             random_graph(300, 257, Regime::kSparseTerminals, false, 2)}) {
    const SolveResult serial = solve_serial(g);
    EXPECT_EQ(grabcut::cut_capacity(g.view(), serial.side.data()), serial.flow);
    for (int threads : {0, 2, 4}) {
      SCOPED_TRACE(std::to_string(g.height) + "x" + std::to_string(g.width) + " threads " + std::to_string(threads));
      GridMaxflowSolver solver;
      solver.set_num_threads(threads);
      const SolveResult r = solve_with(solver, g);
      EXPECT_EQ(r.flow, serial.flow);
      EXPECT_TRUE(r.side == serial.side) << first_difference(r.side, serial.side, g.width);
      // Warm solves after a parallel cold solve.
      expect_warm_solve_matches_serial(solver, g);
    }
  }
}

// A serial solve in strips (set_serial_strips), on grids large enough for them (a
// strip holds a few MiB of the solver's arrays): the cut and the value of the solve in
// one piece, in the net and the pair form, and warm solves afterwards.
TEST(MaxflowSerialStrips, MatchSerial) {
  for (const TestGraph& g : {grabcut_graph(512, 512, 4, {GrabCutScene::kRipples}),
                             random_graph(600, 520, Regime::kStrongNlinks, true, 7),
                             random_graph(700, 600, Regime::kSparseTerminals, false, 8),
                             random_graph(640, 700, Regime::kSmall, false, 9)}) {
    SCOPED_TRACE(std::to_string(g.height) + "x" + std::to_string(g.width));
    const SolveResult serial = solve_serial(g);
    GridMaxflowSolver solver;
    solver.set_num_threads(1);
    solver.set_serial_strips(true);
    const SolveResult r = solve_with(solver, g);
    EXPECT_EQ(r.flow, serial.flow);
    EXPECT_TRUE(r.side == serial.side) << first_difference(r.side, serial.side, g.width);
    // The pair form of the same graph (no pixel with both terminals: the same value).
    const auto terminals = pair_terminals(g);
  const std::vector<std::int32_t>& source = terminals.first;
  const std::vector<std::int32_t>& sink = terminals.second;
    grabcut::GridGraphView pair = g.view();
    pair.terminal = nullptr;
    pair.source = source.data();
    pair.sink = sink.data();
    pair.max_node_sum = std::int64_t{1} << 40;
    std::vector<std::uint8_t> side(g.size());
    EXPECT_EQ(solver.solve(pair, side.data()), serial.flow);
    EXPECT_TRUE(side == serial.side) << first_difference(side, serial.side, g.width);
    // Warm solves after a cold solve in strips.
    EXPECT_EQ(solve_with(solver, g).flow, serial.flow);
    expect_warm_solve_matches_serial(solver, g);
  }
}

// A bad value is refused in serial strips as in one piece, with the same message,
// on a strip's row, a separator or a row beside one, in the net and the pair form;
// the solver works afterwards.
TEST(MaxflowSerialStrips, RefuseAsSerial) {
  const int h = 600;
  const int w = 520;  // 8-connected: 3 strips, separators at rows 200 and 400
  const TestGraph g = random_graph(h, w, Regime::kSmall, true, 11);
  const auto terminals = pair_terminals(g);
  const std::vector<std::int32_t>& source = terminals.first;
  const std::vector<std::int32_t>& sink = terminals.second;
  const auto message = [&](GridMaxflowSolver& solver, const TestGraph& b, bool pair, std::int64_t max_sum) {
    return solve_message(solver, b, pair ? &source : nullptr, &sink, max_sum);
  };
  GridMaxflowSolver strips;
  strips.set_num_threads(1);
  strips.set_serial_strips(true);
  GridMaxflowSolver one;
  one.set_num_threads(1);
  for (int y : {0, 1, 199, 200, 201, 399, 400, 401, 598}) {
    for (int d = 0; d < 4; ++d) {
      SCOPED_TRACE("row " + std::to_string(y) + " n-link " + std::to_string(d));
      TestGraph b = g;
      const std::size_t i = static_cast<std::size_t>(y) * w + 3;
      b.nlink[static_cast<std::size_t>(d)][i] = -1;
      const std::string refused = message(one, b, false, 0);
      EXPECT_NE(refused, "accepted");
      EXPECT_EQ(message(strips, b, false, 0), refused);
      EXPECT_EQ(message(strips, b, true, std::int64_t{1} << 20), message(one, b, true, std::int64_t{1} << 20));
      // A node sum over the bound, from the n-links to the row below.
      b.nlink[static_cast<std::size_t>(d)][i] = 1000;
      EXPECT_EQ(message(strips, b, true, 999), message(one, b, true, 999));
    }
  }
  const SolveResult serial = solve_serial(g);
  const SolveResult r = solve_with(strips, g);
  EXPECT_EQ(r.flow, serial.flow);
  EXPECT_TRUE(r.side == serial.side) << first_difference(r.side, serial.side, w);
}

// Warm solves in strips: each strip starts from the flow the whole grid holds, and
// the serial search continues from the strips' merged trees. Every shape where a
// strip is one row, strips of unequal height, more strips than rows, and each kind
// of terminal change; the serial cold solve and the reference are the oracles.
TEST(MaxflowParallel, WarmSolvesInStripsMatchSerial) {
  const std::pair<int, int> shapes[] = {{2, 1}, {2, 9}, {3, 7}, {5, 5}, {9, 2}, {17, 3}, {40, 33}, {64, 65}};
  std::uint64_t seed = 500;
  for (auto [h, w] : shapes) {
    for (Regime regime : {Regime::kSmall, Regime::kTiny, Regime::kHuge, Regime::kStrongNlinks,
                          Regime::kSparseTerminals, Regime::kZeroHeavy}) {
      for (bool eight : {false, true}) {
        for (int threads : {2, 3, 8}) {
          expect_warm_sequence(h, w, regime, eight, seed++, 9, threads);
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST(MaxflowParallel, WarmSolvesInStripsOnLargeGrids) {
  expect_warm_sequence(300, 257, Regime::kStrongNlinks, true, 601, 6, 2);
  expect_warm_sequence(257, 300, Regime::kSmall, false, 602, 6, 4);
  expect_warm_sequence(400, 40, Regime::kSparseTerminals, true, 603, 6, 8);
}

// Inside an OpenMP parallel region the automatic setting stays serial, and forced
// strips run one after another; the results are the same either way.
TEST(MaxflowParallel, InsideParallelRegion) {
  const TestGraph g = grabcut_graph(300, 280, 6, {GrabCutScene::kRipples});
  const SolveResult serial = solve_serial(g);
  std::vector<SolveResult> results(4);
#pragma omp parallel for num_threads(2)
  for (int k = 0; k < 4; ++k) {
    GridMaxflowSolver solver;
    solver.set_num_threads(k % 2 == 0 ? 0 : 3);
    results[static_cast<std::size_t>(k)].side.assign(g.size(), 0);
    results[static_cast<std::size_t>(k)].flow = solver.solve(g.view(), results[static_cast<std::size_t>(k)].side.data());
  }
  for (const SolveResult& r : results) {
    EXPECT_EQ(r.flow, serial.flow);
    EXPECT_TRUE(r.side == serial.side);
  }
}

// The search's tree repairs (maxflow.cpp's header): deep trees whose arcs near the
// roots are weak, so that augmentations orphan whole subtrees, which must be
// relabelled or leave their tree, and nodes move between the trees. Serial, and in
// strips on 2 and 3 threads (the strips' trees join across the separators, and the
// source trees' unfinished levels are carried into the last search).
TestGraph deep_tree_graph(int h, int w, bool eight, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  TestGraph g(h, w);
  // Strong n-links, except a band of weak ones a few columns in from either side.
  set_nlinks(g, eight, [&](int, int x, int) {
    const bool weak = x % 16 == 3 || x % 16 == 12;
    return static_cast<std::int32_t>(weak ? 1 + rng() % 3 : 20 + rng() % 80);
  });
  // Terminals on a few columns only: sources on the left of each 16-column band,
  // sinks on the right, a few of either elsewhere.
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      std::int32_t& t = g.terminal[static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)];
      if (x % 16 == 0) t = static_cast<std::int32_t>(50 + rng() % 200);
      if (x % 16 == 15) t = -static_cast<std::int32_t>(50 + rng() % 200);
      if (rng() % 64 == 0) t = static_cast<std::int32_t>(rng() % 61) - 30;
    }
  }
  return g;
}

// The reference's flow and canonical cut for g, against the solver on 1, 2 and 3 threads
// (one piece, then strips); `also(solver)` runs after each, on the same solver.
template <class Also>
void expect_reference_on_threads(const TestGraph& g, bool eight, Also also) {
  ReferenceMaxflow ref(g);
  const std::int64_t flow = ref.max_flow();
  const std::vector<std::uint8_t> side = ref.canonical_cut();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(std::to_string(g.height) + "x" + std::to_string(g.width) + (eight ? " 8c" : " 4c") + " threads " +
                 std::to_string(threads));
    GridMaxflowSolver solver;
    solver.set_num_threads(threads);
    const SolveResult r = solve_with(solver, g);
    EXPECT_EQ(r.flow, flow);
    EXPECT_TRUE(r.side == side) << first_difference(r.side, side, g.width);
    also(solver);
  }
}

// The same for g, and then for g with its terminals' signs swapped on the same solver
// (a warm solve whose other tree closes first).
void expect_reference_then_flipped_on_threads(const TestGraph& g, bool eight) {
  TestGraph flipped = g;
  for (auto& t : flipped.terminal) t = -t;
  ReferenceMaxflow flipped_ref(flipped);
  const std::int64_t flipped_flow = flipped_ref.max_flow();
  const std::vector<std::uint8_t> flipped_side = flipped_ref.canonical_cut();
  expect_reference_on_threads(g, eight, [&](GridMaxflowSolver& solver) {
    const SolveResult f = solve_with(solver, flipped);
    EXPECT_EQ(f.flow, flipped_flow);
    EXPECT_TRUE(f.side == flipped_side) << first_difference(f.side, flipped_side, flipped.width);
  });
}

TEST(MaxflowSearch, DeepTreesMatchReference) {
  std::uint64_t seed = 500;
  for (auto [h, w] : {std::pair{9, 70}, std::pair{40, 64}, std::pair{96, 100}}) {
    for (bool eight : {false, true}) {
      expect_reference_on_threads(deep_tree_graph(h, w, eight, seed++), eight, [](GridMaxflowSolver&) {});
    }
  }
}

// Source-heavy graphs: the sink tree closes long before the source tree has grown
// through its region (the search stops there), in one piece and in every strip.
TEST(MaxflowSearch, SinkTreeClosesFirst) {
  std::uint64_t seed = 900;
  for (auto [h, w] : {std::pair{30, 30}, std::pair{80, 90}}) {
    for (bool eight : {false, true}) {
      std::mt19937_64 rng(seed++);
      TestGraph g(h, w);
      set_nlinks(g, eight, [&](int, int, int) { return static_cast<std::int32_t>(rng() % 40); });
      for (auto& t : g.terminal) {
        const auto r = rng() % 100;
        t = r < 3 ? -static_cast<std::int32_t>(1 + rng() % 30) : (r < 60 ? static_cast<std::int32_t>(rng() % 500) : 0);
      }
      // Then the same graph with the terminals' signs swapped, on the same solver: the
      // source tree closes first.
      expect_reference_then_flipped_on_threads(g, eight);
    }
  }
}

// Strips of very different depths: rows that form one corridor winding back and
// forth (each row open to the next at alternate ends), so that the trees of the strips
// that cut it are hundreds of labels deep and the paths that cross its separators are
// left to the search that joins the strips. That search takes the strips' nodes level
// by level up to the deepest strip's labels (GridCore::later), with levels in between
// where a tree has nothing else to scan; on 2 and 3 threads it must still find the
// reference's flow and canonical cut. Either the whole grid is the corridor, with
// sources in its first quarter and one sink at its end, its n-links strong in its
// second half (T, one chain hundreds of labels deep from the sink up past the middle,
// has no node beside a separator near its root, and the search must carry it across
// the separators), or the corridor's rows are followed by shallow random ones (then
// also with the terminals' signs swapped, S the deep tree).
TestGraph winding_graph(int h, int w, int corridor_rows, bool eight, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  TestGraph g(h, w);
  const bool one_sink = corridor_rows == h;
  set_nlinks(g, eight, [&](int y, int x, int d) {
    const auto strength = static_cast<std::int32_t>(one_sink && 2 * y >= h ? 100 + rng() % 100 : 1 + rng() % 60);
    if (y >= corridor_rows) return strength;
    if (d == grabcut::kRight) return strength;
    // The only way down from a corridor row is at its end: the right for even rows, the
    // left for odd ones (the last corridor row opens into the random rows everywhere).
    const bool end = y % 2 == 0 ? x == w - 1 : x == 0;
    return d == grabcut::kDown && (end || y + 1 == corridor_rows) ? strength : 0;
  });
  const auto at = [w](int y, int x) {
    return static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x);
  };
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      std::int32_t& t = g.terminal[at(y, x)];
      const auto r = rng() % 100;
      if (y >= corridor_rows) {
        t = r < 30 ? static_cast<std::int32_t>(rng() % 301) - 150 : 0;
      } else if (one_sink) {
        t = r < 10 && 4 * y < h ? static_cast<std::int32_t>(1 + rng() % 30) : 0;
      } else {
        // Sources all along the corridor, sinks few and weak: the flow runs far along it.
        const auto source = static_cast<std::int32_t>(20 + rng() % 200);
        const auto sink = -static_cast<std::int32_t>(1 + rng() % 40);
        t = r < 8 ? source : (r < 10 ? sink : 0);
      }
    }
  }
  // The corridor's end: the left of an odd row, the right of an even one.
  const int end_x = (corridor_rows - 1) % 2 == 1 ? 0 : w - 1;
  g.terminal[at(corridor_rows - 1, end_x)] = -5000;
  return g;
}

TEST(MaxflowSearch, StripsOfVeryDifferentDepthsMatchReference) {
  std::uint64_t seed = 1300;
  for (auto [h, w, rows] :
       {std::tuple{64, 50, 64}, std::tuple{45, 31, 45}, std::tuple{90, 60, 48}, std::tuple{61, 37, 40}}) {
    for (bool eight : {false, true}) {
      const TestGraph g = winding_graph(h, w, rows, eight, seed++);
      if (rows == h) {
        expect_reference_on_threads(g, eight, [](GridMaxflowSolver&) {});
        continue;
      }
      expect_reference_then_flipped_on_threads(g, eight);
    }
  }
}

// Graphs too large for the reference: check that the cut is a minimum cut (its
// capacity equals the flow) and that it is the same for a reused solver solving
// twice and for a fresh solver.
void expect_consistent(const TestGraph& g) {
  SCOPED_TRACE(std::to_string(g.height) + "x" + std::to_string(g.width));
  GridMaxflowSolver reused;
  const SolveResult first = solve_with(reused, g);
  EXPECT_GT(first.flow, 0);
  EXPECT_EQ(grabcut::cut_capacity(g.view(), first.side.data()), first.flow);
  const SolveResult second = solve_with(reused, g);
  EXPECT_EQ(second.flow, first.flow);
  EXPECT_TRUE(second.side == first.side) << first_difference(second.side, first.side, g.width);
  const SolveResult fresh = solve_fresh(g);
  EXPECT_EQ(fresh.flow, first.flow);
  EXPECT_TRUE(fresh.side == first.side) << first_difference(fresh.side, first.side, g.width);
}

TEST(Maxflow, LargeGrabCutLikeGraphIsConsistent) {
  expect_consistent(grabcut_graph(1024, 1024, 3, {GrabCutScene::kRipples}));
}

TEST(Maxflow, LargeRandomGraphIsConsistent) {
  expect_consistent(random_graph(512, 512, Regime::kStrongNlinks, true, 8));
}

TEST(Maxflow, LargeSparseGraphIsConsistent) {
  expect_consistent(random_graph(320, 240, Regime::kSparseTerminals, false, 9));
}

}  // namespace
