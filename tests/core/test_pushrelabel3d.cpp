// The GPU 3D push-relabel (core/pushrelabel3d.h), run by its host emulator, against
// the CPU's 3D solver (core/maxflow3d.h, Boykov-Kolmogorov): the same flow value and
// the same canonical cut, voxel for voxel, on random and adversarial graphs (zero,
// huge, all-source, all-sink, checkerboards, ties, snakes, one voxel, lines along each
// axis), one at a time and in batches of mixed content; and the phases are race-free:
// any order of the voxels within a phase gives the same state, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/grid3d_graph.h"
#include "core/pushrelabel3d.h"
#include "core/pushrelabel3d_emulator.h"

namespace {

using grabcut::Grid3dPushRelabelEmulator;
using grabcut::testing::cut_capacity3d;
using grabcut::testing::Graph3d;
using grabcut::testing::graph3d_kinds;
using grabcut::testing::solve_cpu3d;

std::int32_t draw(std::mt19937& rng, std::int32_t low, std::int32_t high) {
  return grabcut::testing::draw3d(rng, low, high);
}

Graph3d make_graph(std::mt19937& rng, int d, int h, int w, const std::string& kind) {
  return grabcut::testing::make_graph3d(rng, d, h, w, kind);
}

// Graphs of one size solved as one batch by the emulator; each checked against the CPU.
void expect_batch_matches_cpu(const std::vector<Graph3d>& graphs, const std::string& what) {
  ASSERT_FALSE(graphs.empty());
  const grabcut::testing::Batch3d packed = grabcut::testing::pack3d(graphs);
  const int d = packed.depth, h = packed.height, w = packed.width;
  const std::int64_t n = graphs[0].voxels(), batch = packed.batch;
  std::vector<std::uint8_t> cut(static_cast<std::size_t>(batch * n), 7);
  std::vector<std::int64_t> flows(static_cast<std::size_t>(batch), -1);
  Grid3dPushRelabelEmulator emulator;
  const grabcut::pr3d::Stats stats =
      emulator.solve(batch, d, h, w, packed.terminal.data(), packed.nlinks.data(), cut.data(), flows.data());
  EXPECT_GE(stats.global_relabels, 1);
  for (std::int64_t b = 0; b < batch; ++b) {
    const Graph3d& g = graphs[static_cast<std::size_t>(b)];
    const grabcut::testing::Result3d want = solve_cpu3d(g);
    const std::uint8_t* got = cut.data() + b * n;
    const std::string where = what + ", graph " + std::to_string(b) + " (" + g.kind + ", " + std::to_string(d) +
                              " x " + std::to_string(h) + " x " + std::to_string(w) + ")";
    ASSERT_EQ(flows[static_cast<std::size_t>(b)], want.flow) << where;
    ASSERT_TRUE(std::equal(want.cut.begin(), want.cut.end(), got)) << where;
    ASSERT_EQ(cut_capacity3d(g, got), want.flow) << where;
  }
}

TEST(PushRelabel3d, EqualsTheCpuSolverOnRandomAndAdversarialGraphs) {
  std::mt19937 rng(3601);
  int graphs = 0;
  for (int it = 0; it < 40; ++it) {
    for (const std::string& kind : graph3d_kinds()) {
      const int d = draw(rng, 1, 7), h = draw(rng, 1, 8), w = draw(rng, 1, 9);
      expect_batch_matches_cpu({make_graph(rng, d, h, w, kind)}, "iteration " + std::to_string(it));
      ++graphs;
    }
  }
  EXPECT_EQ(graphs, 400);
}

TEST(PushRelabel3d, OneVoxelAndLinesAlongEachAxis) {
  std::mt19937 rng(3602);
  for (const std::string& kind : graph3d_kinds()) {
    expect_batch_matches_cpu({make_graph(rng, 1, 1, 1, kind)}, "one voxel");
    for (const int len : {2, 3, 17, 64}) {
      expect_batch_matches_cpu({make_graph(rng, 1, len, 1, kind)}, "1 x N x 1");
      expect_batch_matches_cpu({make_graph(rng, 1, 1, len, kind)}, "1 x 1 x N");
      expect_batch_matches_cpu({make_graph(rng, len, 1, 1, kind)}, "N x 1 x 1");
    }
  }
}

TEST(PushRelabel3d, LongSnakesAndLargerVolumes) {
  std::mt19937 rng(3603);
  expect_batch_matches_cpu({make_graph(rng, 1, 1, 600, "snake")}, "a 600-voxel line");
  expect_batch_matches_cpu({make_graph(rng, 1, 24, 25, "snake")}, "a 600-voxel slice snake");
  expect_batch_matches_cpu({make_graph(rng, 9, 10, 11, "snake")}, "a 990-voxel volume snake");
  for (const char* kind : {"random", "huge", "checkerboard", "ties", "sparse"}) {
    expect_batch_matches_cpu({make_graph(rng, 12, 14, 16, kind)}, "12 x 14 x 16");
  }
}

TEST(PushRelabel3d, BatchesOfMixedContentEqualTheirGraphsOneByOne) {
  std::mt19937 rng(3604);
  for (int it = 0; it < 12; ++it) {
    const int d = draw(rng, 1, 6), h = draw(rng, 1, 7), w = draw(rng, 1, 8);
    std::vector<Graph3d> graphs;
    for (const std::string& kind : graph3d_kinds()) graphs.push_back(make_graph(rng, d, h, w, kind));
    std::shuffle(graphs.begin(), graphs.end(), rng);
    expect_batch_matches_cpu(graphs, "mixed batch " + std::to_string(it));
  }
}

TEST(PushRelabel3d, RepeatedSolvesAreIdentical) {
  std::mt19937 rng(3605);
  const Graph3d g = make_graph(rng, 6, 7, 8, "random");
  const std::int64_t n = g.voxels();
  Grid3dPushRelabelEmulator emulator;
  std::vector<std::uint8_t> first(static_cast<std::size_t>(n)), again(static_cast<std::size_t>(n));
  std::int64_t flow_first = 0, flow_again = 0;
  const grabcut::pr3d::Stats a =
      emulator.solve(1, g.depth, g.height, g.width, g.terminal.data(), g.nlinks.data(), first.data(), &flow_first);
  const grabcut::pr3d::Stats b =
      emulator.solve(1, g.depth, g.height, g.width, g.terminal.data(), g.nlinks.data(), again.data(), &flow_again);
  EXPECT_EQ(first, again);
  EXPECT_EQ(flow_first, flow_again);
  EXPECT_EQ(a.phases, b.phases);
  EXPECT_EQ(a.sweeps, b.sweeps);
}

// The phases with their voxels in a shuffled order, push, apply and relabel each in a
// loop of its own (as separate kernels would run them), must leave the emulator's
// state bit for bit: no step reads what another voxel writes in the same phase.
class ShuffledBackend {
 public:
  ShuffledBackend(const Graph3d& g, std::uint32_t seed) : rng_(seed) {
    const std::int64_t n = g.voxels();
    order_.resize(static_cast<std::size_t>(n));
    std::iota(order_.begin(), order_.end(), std::int64_t{0});
    s = grabcut::pr3d::grid3d_state(1, g.depth, g.height, g.width, g.terminal.data(), g.nlinks.data());
    state_.assign(grabcut::pr3d::state_bytes(n), 0);
    grabcut::pr3d::carve_state(s, label_, state_.data());
  }
  ShuffledBackend(const ShuffledBackend&) = delete;
  ShuffledBackend& operator=(const ShuffledBackend&) = delete;
  template <class F>
  void each(F f) {
    std::shuffle(order_.begin(), order_.end(), rng_);
    for (const std::int64_t i : order_) f(i);
  }
  void start() {
    each([&](std::int64_t i) { grabcut::pr3d::init_voxel(s, i); });
  }
  void bfs_start() {
    each([&](std::int64_t i) { grabcut::pr3d::bfs_start_voxel(s, i, label_[cur]); });
  }
  bool bfs_sweeps(int count) {
    bool changed = false;
    for (int k = 0; k < count; ++k) {
      changed = false;
      each([&](std::int64_t i) {
        changed = grabcut::pr3d::bfs_sweep_voxel(s, i, label_[cur], label_[1 - cur]) || changed;
      });
      cur = 1 - cur;
    }
    return changed;
  }
  void phases(int count) {
    for (int k = 0; k < count; ++k) {
      each([&](std::int64_t i) { grabcut::pr3d::push_voxel(s, i, label_[cur]); });
      each([&](std::int64_t i) { grabcut::pr3d::settle_voxel(s, i); });
      each([&](std::int64_t i) { grabcut::pr3d::relabel_voxel(s, i, label_[cur], label_[1 - cur]); });
      cur = 1 - cur;
    }
  }
  bool any_active() {
    bool any = false;
    each([&](std::int64_t i) { any = any || grabcut::pr3d::active_voxel(s, i, label_[cur]); });
    return any;
  }

  grabcut::pr3d::Grid3dState s;
  int cur = 0;
  std::int32_t* label_[2] = {nullptr, nullptr};

  std::vector<std::int32_t> labels() const { return {label_[cur], label_[cur] + s.total}; }

 private:
  std::mt19937 rng_;
  std::vector<std::int64_t> order_;
  std::vector<unsigned char> state_;
};

TEST(PushRelabel3d, AnyOrderOfTheVoxelsWithinAPhaseGivesTheSameResult) {
  std::mt19937 rng(3606);
  for (int it = 0; it < 30; ++it) {
    const std::string& kind = graph3d_kinds()[static_cast<std::size_t>(it) % graph3d_kinds().size()];
    const Graph3d g = make_graph(rng, draw(rng, 1, 6), draw(rng, 1, 7), draw(rng, 1, 8), kind);
    const std::int64_t n = g.voxels();
    std::vector<std::uint8_t> cut(static_cast<std::size_t>(n));
    std::int64_t flow = 0;
    Grid3dPushRelabelEmulator emulator;
    const grabcut::pr3d::Stats want =
        emulator.solve(1, g.depth, g.height, g.width, g.terminal.data(), g.nlinks.data(), cut.data(), &flow);
    ShuffledBackend shuffled(g, static_cast<std::uint32_t>(it));
    const grabcut::pr3d::Stats got = grabcut::pr3d::solve_schedule(shuffled);
    EXPECT_EQ(got.phases, want.phases) << kind;
    EXPECT_EQ(got.sweeps, want.sweeps) << kind;
    std::int64_t shuffled_flow = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(grabcut::pr3d::source_side_voxel(shuffled.s, i, shuffled.label_[shuffled.cur]) ? 1 : 0,
                cut[static_cast<std::size_t>(i)])
          << kind << " voxel " << i;
      shuffled_flow += grabcut::pr3d::sink_flow_voxel(shuffled.s, i);
    }
    EXPECT_EQ(shuffled_flow, flow) << kind;
    EXPECT_EQ(flow, solve_cpu3d(g).flow) << kind;
  }
}

TEST(PushRelabel3d, GlobalRelabelsGiveExactDistancesToTheSink) {
  // A line of 5 voxels, the sink at its end: after the first global relabel the labels
  // are 5, 4, 3, 2, 1; a voxel cut off by a zero link is dead (n + 1 = 6).
  std::vector<std::int32_t> terminal = {0, 0, 0, 0, -1}, nlinks(15, 0);
  for (int v = 0; v < 4; ++v) nlinks[static_cast<std::size_t>(v)] = 3;
  Graph3d g;
  g.depth = 1;
  g.height = 1;
  g.width = 5;
  g.terminal = terminal;
  g.nlinks = nlinks;
  ShuffledBackend line(g, 1);
  line.start();
  line.bfs_start();
  while (line.bfs_sweeps(1)) {
  }
  EXPECT_EQ(line.labels(), (std::vector<std::int32_t>{5, 4, 3, 2, 1}));
  g.nlinks[1] = 0;
  ShuffledBackend cut_off(g, 2);
  cut_off.start();
  cut_off.bfs_start();
  while (cut_off.bfs_sweeps(1)) {
  }
  EXPECT_EQ(cut_off.labels(), (std::vector<std::int32_t>{6, 6, 3, 2, 1}));
}

// Issue 36's bound on the 3D GPU path's device memory, 48 bytes a voxel beside the
// caller's inputs (a 512^3 volume in 8 GB): the solver's state as carve_state lays it
// out (the layout the CUDA workspace and the emulator take), with the graph in the
// solver's form and the cut.
TEST(PushRelabel3d, TheGpuPathHoldsAtMost48BytesAVoxel) {
  for (const std::int64_t total : {std::int64_t{1}, std::int64_t{4096}, std::int64_t{128} * 128 * 128,
                                   std::int64_t{256} * 256 * 256, std::int64_t{512} * 512 * 512}) {
    const std::size_t state = grabcut::pr3d::state_bytes(total);
    EXPECT_GE(state, static_cast<std::size_t>(total * grabcut::pr3d::kStateBytesPerVoxel)) << total;
    // Six arrays, each padded to 256 bytes at most.
    EXPECT_LE(state, static_cast<std::size_t>(total * grabcut::pr3d::kStateBytesPerVoxel + 6 * 256)) << total;
    if (total >= 4096) {
      EXPECT_LE(static_cast<double>(grabcut::pr3d::device_path_bytes(total)) / static_cast<double>(total), 47.5)
          << total;
    }
  }
  EXPECT_EQ(grabcut::pr3d::kStateBytesPerVoxel + 4 + 12 + 1, 47);
}

}  // namespace
