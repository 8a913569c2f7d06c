// The 3D grid max-flow (core/maxflow3d.h) against the 2D solver and against itself:
// a volume one voxel deep is a 4-connected 2D grid, so both solvers must give the same
// flow value and the same canonical cut; a volume with its x and z axes swapped must
// give the same flow and the same cut, voxel for voxel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/maxflow.h"
#include "core/maxflow3d.h"

namespace {

using grabcut::Grid3dGraphView;
using grabcut::Grid3dMaxflowSolver;

std::int32_t draw(std::mt19937& rng, int low, int high) {
  return static_cast<std::int32_t>(std::uniform_int_distribution<int>(low, high)(rng));
}

TEST(Maxflow3d, OneVoxelDeepEqualsThe2dSolverFourConnected) {
  std::mt19937 rng(1);
  Grid3dMaxflowSolver solver3d;
  grabcut::GridMaxflowSolver solver2d;
  solver2d.set_num_threads(1);
  for (int it = 0; it < 200; ++it) {
    const int h = draw(rng, 1, 40), w = draw(rng, 1, 40), hw = h * w;
    const int cap = draw(rng, 1, 1000);
    std::vector<std::int32_t> terminal(hw), right(hw), down(hw), zeros(hw, 0);
    for (int i = 0; i < hw; ++i) {
      terminal[i] = draw(rng, -cap, cap);
      right[i] = draw(rng, 0, cap / 3);
      down[i] = draw(rng, 0, cap / 3);
    }
    Grid3dGraphView g3;
    g3.depth = 1;
    g3.height = h;
    g3.width = w;
    g3.terminal = terminal.data();
    g3.nlink[0] = right.data();
    g3.nlink[1] = down.data();
    g3.nlink[2] = zeros.data();
    // The 2D view wants the links that leave the grid at 0.
    std::vector<std::int32_t> right2 = right, down2 = down;
    for (int y = 0; y < h; ++y) right2[y * w + w - 1] = 0;
    for (int x = 0; x < w; ++x) down2[(h - 1) * w + x] = 0;
    grabcut::GridGraphView g2;
    g2.height = h;
    g2.width = w;
    g2.terminal = terminal.data();
    g2.nlink[grabcut::kRight] = right2.data();
    g2.nlink[grabcut::kDownRight] = zeros.data();
    g2.nlink[grabcut::kDown] = down2.data();
    g2.nlink[grabcut::kDownLeft] = zeros.data();
    std::vector<std::uint8_t> cut3(hw), cut2(hw);
    const std::int64_t flow3 = solver3d.solve(g3, cut3.data());
    const std::int64_t flow2 = solver2d.solve(g2, cut2.data());
    ASSERT_EQ(flow3, flow2) << h << " x " << w;
    ASSERT_EQ(cut3, cut2) << h << " x " << w;
  }
}

TEST(Maxflow3d, SwappingTheXAndZAxesGivesTheSameCut) {
  std::mt19937 rng(2);
  Grid3dMaxflowSolver solver;
  for (int it = 0; it < 100; ++it) {
    const int d = draw(rng, 1, 12), h = draw(rng, 1, 12), w = draw(rng, 1, 12), n = d * h * w;
    std::vector<std::int32_t> t(n), ex(n), ey(n), ez(n), tt(n), fx(n), fy(n), fz(n);
    for (int i = 0; i < n; ++i) {
      t[i] = draw(rng, -200, 200);
      ex[i] = draw(rng, 0, 60);
      ey[i] = draw(rng, 0, 60);
      ez[i] = draw(rng, 0, 60);
    }
    for (int z = 0; z < d; ++z) {
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          const int i = (z * h + y) * w + x, j = (x * h + y) * d + z;
          tt[j] = t[i];
          fx[j] = ez[i];
          fy[j] = ey[i];
          fz[j] = ex[i];
        }
      }
    }
    Grid3dGraphView a;
    a.depth = d;
    a.height = h;
    a.width = w;
    a.terminal = t.data();
    a.nlink[0] = ex.data();
    a.nlink[1] = ey.data();
    a.nlink[2] = ez.data();
    Grid3dGraphView b;
    b.depth = w;
    b.height = h;
    b.width = d;
    b.terminal = tt.data();
    b.nlink[0] = fx.data();
    b.nlink[1] = fy.data();
    b.nlink[2] = fz.data();
    std::vector<std::uint8_t> ca(n), cb(n);
    const std::int64_t flow_a = solver.solve(a, ca.data());
    const std::int64_t flow_b = solver.solve(b, cb.data());
    ASSERT_EQ(flow_a, flow_b);
    for (int z = 0; z < d; ++z) {
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) ASSERT_EQ(ca[(z * h + y) * w + x], cb[(x * h + y) * d + z]);
      }
    }
  }
}

// The pair form (source and sink read as given) against the net form on a fresh
// solver: the flow plus the sum of min(source, sink), the same cut. The pair-form
// solver is reused across graphs of a few sizes, some of whose solves throw midway,
// as a solve writes every voxel of the grid it reads and relies on nothing else.
TEST(Maxflow3d, PairFormEqualsNetFormOnAReusedSolver) {
  std::mt19937 rng(3);
  Grid3dMaxflowSolver reused;
  int thrown = 0;
  for (int it = 0; it < 300; ++it) {
    const int sizes[3][3] = {{5, 6, 7}, {1, 9, 4}, {8, 8, 8}};
    const int* dims = sizes[draw(rng, 0, 2)];
    const int d = dims[0], h = dims[1], w = dims[2], n = d * h * w;
    const int cap = draw(rng, 1, 300);
    std::vector<std::int32_t> source(n), sink(n), net(n), ex(n), ey(n), ez(n);
    std::int64_t both = 0;
    for (int i = 0; i < n; ++i) {
      source[i] = draw(rng, 0, cap);
      sink[i] = draw(rng, 0, cap);
      net[i] = source[i] - sink[i];
      both += std::min(source[i], sink[i]);
      ex[i] = draw(rng, 0, cap / 2);
      ey[i] = draw(rng, 0, cap / 2);
      ez[i] = draw(rng, 0, cap / 2);
    }
    Grid3dGraphView pair;
    pair.depth = d;
    pair.height = h;
    pair.width = w;
    pair.source = source.data();
    pair.sink = sink.data();
    pair.nlink[0] = ex.data();
    pair.nlink[1] = ey.data();
    pair.nlink[2] = ez.data();
    std::vector<std::uint8_t> cut_pair(n), cut_net(n);
    if (it % 4 == 3) {
      // A bad value somewhere after the first slices: the solve throws midway.
      const int i = draw(rng, n / 2, n - 1);
      std::vector<std::int32_t>* arrays[4] = {&source, &sink, &ex, &sink};
      std::vector<std::int32_t>& a = *arrays[draw(rng, 0, 3)];
      const std::int32_t saved = a[i];
      a[i] = draw(rng, 0, 1) == 0 ? -1 : (std::int32_t{1} << 30);
      const bool off_grid = &a == &ex && (i % w) == w - 1;
      if (!off_grid) {
        EXPECT_THROW(reused.solve(pair, cut_pair.data()), std::invalid_argument);
        ++thrown;
      }
      a[i] = saved;
      continue;
    }
    Grid3dGraphView g = pair;
    g.terminal = net.data();
    Grid3dMaxflowSolver fresh;
    const std::int64_t flow_net = fresh.solve(g, cut_net.data());
    const std::int64_t flow_pair = reused.solve(pair, cut_pair.data());
    ASSERT_EQ(flow_pair, flow_net + both) << it;
    ASSERT_EQ(cut_pair, cut_net) << it;
  }
  EXPECT_GT(thrown, 40);
  // A node sum over the bound, each value in range.
  std::vector<std::int32_t> big(8, (std::int32_t{1} << 29) + 1), zero(8, 0);
  Grid3dGraphView g;
  g.depth = g.height = g.width = 2;
  g.source = big.data();
  g.sink = big.data();
  g.nlink[0] = g.nlink[1] = g.nlink[2] = zero.data();
  std::vector<std::uint8_t> cut(8);
  EXPECT_THROW(reused.solve(g, cut.data()), std::invalid_argument);
}

TEST(Maxflow3d, RefusesCapacitiesOutOfRangeAndHugeGrids) {
  Grid3dMaxflowSolver solver;
  std::vector<std::int32_t> t(8, 0), e(8, 1);
  e[0] = std::int32_t{1} << 30;
  Grid3dGraphView g;
  g.depth = g.height = g.width = 2;
  g.terminal = t.data();
  g.nlink[0] = g.nlink[1] = g.nlink[2] = e.data();
  std::vector<std::uint8_t> cut(8);
  EXPECT_THROW(solver.solve(g, cut.data()), std::invalid_argument);
  g.depth = g.height = g.width = 1000;
  EXPECT_THROW(solver.solve(g, cut.data()), std::length_error);
}

}  // namespace
