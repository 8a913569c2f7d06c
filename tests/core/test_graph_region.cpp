// GraphRegion (core/graph_region.h): solving only the pixels that hard background
// does not settle must give the whole graph's canonical cut and maximum flow value,
// cold and warm, whatever the shape of the hard background.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/grid_graph.h"
#include "core/common.h"
#include "core/graph_region.h"
#include "core/maxflow.h"

namespace grabcut {
namespace {

using testing::HostGridGraph;

constexpr std::int32_t kHard = 4000;  // the hard background's sink capacity

struct Case {
  HostGridGraph graph;
  std::vector<std::uint8_t> mask;
};

// Random n-links up to cap_max; pixels where hard(y, x) are hard background (terminal
// -kHard), the others get random terminals.
template <typename Hard>
Case make_case(int h, int w, std::int32_t cap_max, unsigned seed, Hard&& hard) {
  Case c{HostGridGraph(h, w), std::vector<std::uint8_t>(static_cast<std::size_t>(h) * w, kProbBackground)};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> cap(0, cap_max);
  testing::set_nlinks(c.graph, true, [&](int, int, int) { return cap(rng); });
  randomise_terminals(c, rng, hard);
  return c;
}

template <typename Hard>
void randomise_terminals(Case& c, std::mt19937& rng, Hard&& hard) {
  std::uniform_int_distribution<std::int32_t> term(-3000, 3000);
  for (int y = 0; y < c.graph.height; ++y) {
    for (int x = 0; x < c.graph.width; ++x) {
      const std::size_t i = static_cast<std::size_t>(y) * c.graph.width + x;
      const bool is_hard = hard(y, x);
      c.mask[i] = is_hard ? kBackground : kProbForeground;
      c.graph.terminal[i] = is_hard ? -kHard : term(rng);
    }
  }
}

void expect_same_as_whole(const Case& c, GraphRegion& region, GridMaxflowSolver& region_solver, bool warm,
                          const std::string& what) {
  std::vector<std::uint8_t> expected(c.graph.size(), 7);
  GridMaxflowSolver whole;
  const std::int64_t flow = whole.solve(c.graph.view(), expected.data());
  std::vector<std::uint8_t> cut(c.graph.size(), 7);
  const std::int64_t region_flow = region.solve(region_solver, c.graph.terminal.data(), warm, cut.data());
  EXPECT_EQ(region_flow, flow) << what;
  EXPECT_EQ(cut, expected) << what;
}

GraphRegion region_of(const Case& c) {
  const std::int32_t* nl[4] = {c.graph.nlink[0].data(), c.graph.nlink[1].data(), c.graph.nlink[2].data(),
                               c.graph.nlink[3].data()};
  return GraphRegion(c.mask.data(), c.graph.height, c.graph.width, nl, kHard);
}

TEST(GraphRegion, BoxOfHardBackgroundAroundIt) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const int h = 5 + static_cast<int>(seed * 7 % 40);
    const int w = 3 + static_cast<int>(seed * 11 % 50);
    const int y0 = static_cast<int>(seed % 3);
    const int x0 = static_cast<int>(seed % 4);
    const auto outside = [&](int y, int x) { return y < y0 || x < x0 || y >= h - 1 - static_cast<int>(seed % 2) || x >= w - 1; };
    Case c = make_case(h, w, 400, seed, outside);  // 8 links of <= 400 < kHard: every hard pixel merges
    GraphRegion region = region_of(c);
    EXPECT_FALSE(region.whole_image()) << "seed " << seed;
    EXPECT_EQ(region.y0(), y0);
    EXPECT_EQ(region.x0(), x0);
    GridMaxflowSolver solver;
    expect_same_as_whole(c, region, solver, false, "cold, seed " + std::to_string(seed));
    // Warm starts: only the soft terminals change, as between GrabCut iterations.
    std::mt19937 rng(seed + 100);
    for (int iter = 0; iter < 3; ++iter) {
      randomise_terminals(c, rng, outside);
      expect_same_as_whole(c, region, solver, true, "warm " + std::to_string(iter) + ", seed " + std::to_string(seed));
    }
  }
}

TEST(GraphRegion, ScatteredHardPixelsSomeTooStronglyLinkedToMerge) {
  // Hard background outside an inner box and scattered inside it; links up to 600,
  // so now and then a hard pixel's 8 links add up to kHard or more and it stays.
  int partial = 0;
  int grown = 0;
  for (unsigned seed = 1; seed <= 30; ++seed) {
    std::mt19937 pick(seed);
    std::vector<char> hard_at(30 * 37);
    for (int y = 0; y < 30; ++y) {
      for (int x = 0; x < 37; ++x) {
        const bool ring = y < 5 || y >= 25 || x < 6 || x >= 30;
        hard_at[static_cast<std::size_t>(y) * 37 + x] = static_cast<char>(ring || pick() % 3 == 0);
      }
    }
    const auto hard = [&](int y, int x) { return hard_at[static_cast<std::size_t>(y) * 37 + x] != 0; };
    Case c = make_case(30, 37, 600, seed, hard);
    GraphRegion region = region_of(c);
    partial += region.whole_image() ? 0 : 1;
    grown += region.y0() < 5 || region.x0() < 6 || region.height() > 20 || region.width() > 24 ? 1 : 0;
    GridMaxflowSolver solver;
    expect_same_as_whole(c, region, solver, false, "scattered, seed " + std::to_string(seed));
  }
  EXPECT_GT(partial, 0) << "no case left out any pixel";
  EXPECT_GT(grown, 0) << "no case kept a strongly linked hard pixel of the ring";
}

TEST(GraphRegion, OnlyHardRowsAndColumnsAtTheEdge) {
  // One-pixel-wide images and a border of one row: the region is a strip.
  for (const auto& [h, w] : std::vector<std::pair<int, int>>{{1, 40}, {40, 1}, {2, 2}, {3, 50}}) {
    const auto first_row_or_column = [&](int y, int x) { return h == 1 ? x == 0 : (w == 1 ? y == 0 : y == 0); };
    Case c = make_case(h, w, 300, static_cast<unsigned>(h * 100 + w), first_row_or_column);
    GraphRegion region = region_of(c);
    EXPECT_FALSE(region.whole_image());
    GridMaxflowSolver solver;
    expect_same_as_whole(c, region, solver, false, std::to_string(h) + "x" + std::to_string(w));
  }
}

TEST(GraphRegion, NothingOrEverythingHardSolvesTheWholeImage) {
  Case none = make_case(12, 9, 300, 5, [](int, int) { return false; });
  GraphRegion r1 = region_of(none);
  EXPECT_TRUE(r1.whole_image());
  GridMaxflowSolver s1;
  expect_same_as_whole(none, r1, s1, false, "no hard pixel");
  Case all = make_case(12, 9, 300, 6, [](int, int) { return true; });
  GraphRegion r2 = region_of(all);
  EXPECT_TRUE(r2.whole_image());
  GridMaxflowSolver s2;
  expect_same_as_whole(all, r2, s2, false, "all hard");
}

}  // namespace
}  // namespace grabcut
