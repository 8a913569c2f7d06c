// Tests of the GPU max-flow (csrc/cuda/maxflow.h) against the CPU solver
// (csrc/core/maxflow.h): the canonical cut must be identical bit for bit, the flow
// value equal, and the cut's capacity equal to the flow, on random, degenerate,
// adversarial and GrabCut-like graphs, single and batched, cold and warm.
// The environment can pick another schedule for every solve (test_schedule.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/grabcut_graph.h"
#include "common/grid_graph.h"
#include "core/maxflow.h"
#include "cuda/check.h"
#include "cuda/maxflow.h"
#include "cuda/maxflow_stats.h"
#include "test_schedule.h"

namespace {

using grabcut::GridGraphView;
using grabcut::GridMaxflowSolver;
using grabcut::cuda::BatchedGridGraph;
using grabcut::cuda::GridDesc;

using grabcut::testing::set_nlinks;
using HostGraph = grabcut::testing::HostGridGraph;
using grabcut::testing::kForwardDx;
using grabcut::testing::kForwardDy;

// Set before any test runs (static initialisation of this file).
const grabcut::cuda::MaxflowSchedule kSchedule = grabcut::testing::schedule_from_environment();

HostGraph random_graph(int h, int w, bool eight, std::int32_t cap_max, std::int32_t term_max, unsigned seed) {
  HostGraph g(h, w);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> cap(0, cap_max);
  std::uniform_int_distribution<std::int32_t> term(-term_max, term_max);
  set_nlinks(g, eight, [&](int, int, int) { return cap(rng); });
  for (auto& t : g.terminal) t = term(rng);
  return g;
}

// The GrabCut-like graphs of tests/common/grabcut_graph.h.
HostGraph grabcut_graph(int h, int w, unsigned seed, double noise = 4.0) {
  return grabcut::testing::grabcut_graph(h, w, seed, {grabcut::testing::GrabCutScene::kSmoothScore, noise});
}

struct CpuResult {
  std::int64_t flow = 0;
  std::vector<std::uint8_t> cut;
};

CpuResult cpu_solve(const HostGraph& g) {
  CpuResult r;
  r.cut.assign(g.size(), 0xCD);
  GridMaxflowSolver solver;
  r.flow = solver.solve(g.view(), r.cut.data());
  return r;
}

template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  std::size_t count = 0;
  explicit DeviceBuffer(std::size_t n) : count(n) {
    if (n > 0) GRABCUT_CUDA_CHECK(cudaMalloc(&ptr, n * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (ptr != nullptr) cudaFree(ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void upload(const T* src, std::size_t n, std::size_t at = 0) {
    if (n > 0) GRABCUT_CUDA_CHECK(cudaMemcpy(ptr + at, src, n * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> v(count);
    if (count > 0) GRABCUT_CUDA_CHECK(cudaMemcpy(v.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
};

// A batch of host graphs packed on the device, with a workspace that persists
// across solves (for warm starts).
class GpuBatch {
 public:
  grabcut::cuda::MaxflowSchedule schedule = kSchedule;  // what solve() passes
  explicit GpuBatch(const std::vector<const HostGraph*>& graphs, std::int64_t gap = 0) {
    std::int64_t off = 0;
    for (const HostGraph* g : graphs) {
      GridDesc d;
      d.offset = off;
      d.height = g->height;
      d.width = g->width;
      desc_.push_back(d);
      off += static_cast<std::int64_t>(g->size()) + gap;
    }
    total_ = off;
    const auto n = static_cast<std::size_t>(total_);
    terminal_ = std::make_unique<DeviceBuffer<std::int32_t>>(n);
    for (auto& l : nlink_) l = std::make_unique<DeviceBuffer<std::int32_t>>(n);
    cut_ = std::make_unique<DeviceBuffer<std::uint8_t>>(n);
    flows_ = std::make_unique<DeviceBuffer<std::int64_t>>(graphs.size());
    ws_bytes_ = grabcut::cuda::maxflow_workspace_bytes(desc_);
    ws_ = std::make_unique<DeviceBuffer<unsigned char>>(ws_bytes_);
    upload(graphs, true);
  }
  void upload(const std::vector<const HostGraph*>& graphs, bool nlinks) {
    for (std::size_t b = 0; b < graphs.size(); ++b) {
      const auto at = static_cast<std::size_t>(desc_[b].offset);
      terminal_->upload(graphs[b]->terminal.data(), graphs[b]->size(), at);
      if (nlinks) {
        for (int d = 0; d < 4; ++d) nlink_[d]->upload(graphs[b]->nlink[d].data(), graphs[b]->size(), at);
      }
    }
  }
  void solve(bool warm) {
    if (cut_->count > 0) GRABCUT_CUDA_CHECK(cudaMemset(cut_->ptr, 0xCD, cut_->count));
    if (flows_->count > 0) GRABCUT_CUDA_CHECK(cudaMemset(flows_->ptr, 0xCD, flows_->count * 8));
    BatchedGridGraph g;
    g.desc = desc_;
    g.total_pixels = total_;
    g.terminal = terminal_->ptr;
    for (int d = 0; d < 4; ++d) g.nlink[d] = nlink_[d]->ptr;
    grabcut::cuda::maxflow_cuda(g, cut_->ptr, flows_->ptr, ws_->ptr, ws_bytes_, warm, nullptr, schedule);
    GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::vector<std::uint8_t> cut(std::size_t b, std::size_t n) const {
    const auto all = cut_->download();
    const auto at = static_cast<std::size_t>(desc_[b].offset);
    return std::vector<std::uint8_t>(all.begin() + static_cast<long>(at), all.begin() + static_cast<long>(at + n));
  }
  std::vector<std::uint8_t> all_cuts() const { return cut_->download(); }
  std::vector<std::int64_t> flows() const { return flows_->download(); }
  grabcut::cuda::detail::MaxflowStats stats() const {
    return grabcut::cuda::detail::maxflow_read_stats(ws_->ptr, nullptr);
  }

 private:
  std::vector<GridDesc> desc_;
  std::int64_t total_ = 0;
  std::unique_ptr<DeviceBuffer<std::int32_t>> terminal_;
  std::array<std::unique_ptr<DeviceBuffer<std::int32_t>>, 4> nlink_;
  std::unique_ptr<DeviceBuffer<std::uint8_t>> cut_;
  std::unique_ptr<DeviceBuffer<std::int64_t>> flows_;
  std::size_t ws_bytes_ = 0;
  std::unique_ptr<DeviceBuffer<unsigned char>> ws_;
};

std::size_t count_mismatch(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  std::size_t m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m += a[i] != b[i] ? 1 : 0;
  return m;
}

// Solves the graphs in one batch on the GPU and checks each against the CPU.
void expect_batch_matches_cpu(const std::vector<const HostGraph*>& graphs, const std::string& what,
                              std::int64_t gap = 0) {
  GpuBatch batch(graphs, gap);
  batch.solve(false);
  const auto flows = batch.flows();
  std::size_t pixels = 0;
  for (const HostGraph* g : graphs) pixels += g->size();
  if (pixels >= 100000) {
    const auto s = batch.stats();
    std::printf("[stats] %s: %zu px, relabels %llu, bfs sweeps %llu, push sweeps %llu, bfs tiles %llu, push tiles %llu, blocks %llu\n",
                what.c_str(), pixels, s.global_relabels, s.bfs_sweeps, s.push_sweeps, s.bfs_tiles, s.push_tiles,
                s.grid_blocks);
  }
  for (std::size_t b = 0; b < graphs.size(); ++b) {
    const HostGraph& g = *graphs[b];
    const CpuResult ref = cpu_solve(g);
    const auto cut = batch.cut(b, g.size());
    EXPECT_EQ(flows[b], ref.flow) << what << " graph " << b << " (" << g.height << "x" << g.width << ")";
    EXPECT_EQ(count_mismatch(cut, ref.cut), 0U)
        << what << " graph " << b << " (" << g.height << "x" << g.width << "): cut differs";
    EXPECT_EQ(grabcut::cut_capacity(g.view(), cut.data()), flows[b]) << what << " graph " << b;
  }
}

void expect_matches_cpu(const HostGraph& g, const std::string& what) { expect_batch_matches_cpu({&g}, what); }

TEST(MaxflowCuda, WorkspaceBytesPerPixel) {
  std::vector<GridDesc> d(1);
  d[0].height = 1024;
  d[0].width = 1024;
  const double per_pixel = static_cast<double>(grabcut::cuda::maxflow_workspace_bytes(d)) / (1024.0 * 1024.0);
  EXPECT_LE(per_pixel, 40.0);
}

TEST(MaxflowCuda, EmptyBatchAndEmptyGraphs) {
  BatchedGridGraph g;
  grabcut::cuda::maxflow_cuda(g, nullptr, nullptr, nullptr, 0, false, nullptr);
  GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());
  HostGraph e0(0, 5);
  HostGraph e1(3, 0);
  GpuBatch batch({&e0, &e1});
  batch.solve(false);
  const auto flows = batch.flows();
  EXPECT_EQ(flows[0], 0);
  EXPECT_EQ(flows[1], 0);
}

TEST(MaxflowCuda, SinglePixel) {
  for (std::int32_t t : {-7, 0, 5}) {
    HostGraph g(1, 1);
    g.terminal[0] = t;
    expect_matches_cpu(g, "1x1 t=" + std::to_string(t));
  }
}

TEST(MaxflowCuda, RandomSizes) {
  struct Case {
    int h, w;
  };
  const Case cases[] = {{1, 1000}, {1000, 1}, {31, 33}, {64, 64}, {257, 129}, {2, 2}, {7, 45}, {33, 31}};
  unsigned seed = 1;
  for (const Case& c : cases) {
    for (bool eight : {false, true}) {
      const HostGraph g = random_graph(c.h, c.w, eight, 100, 300, seed++);
      expect_matches_cpu(g, std::to_string(c.h) + "x" + std::to_string(c.w) + (eight ? " 8c" : " 4c"));
    }
  }
}

TEST(MaxflowCuda, RandomLarge) {
  for (bool eight : {false, true}) {
    const HostGraph g = random_graph(512, 512, eight, 1000, 2500, eight ? 11U : 12U);
    expect_matches_cpu(g, eight ? "512 8c" : "512 4c");
  }
}

TEST(MaxflowCuda, ZeroTinyHugeCapacities) {
  expect_matches_cpu(random_graph(37, 41, true, 0, 10, 3), "zero n-links");
  expect_matches_cpu(random_graph(37, 41, true, 10, 0, 4), "zero terminals");
  expect_matches_cpu(random_graph(64, 64, true, 1, 2, 5), "tiny");
  expect_matches_cpu(random_graph(65, 70, true, 2, 3, 6), "tiny 2");
  expect_matches_cpu(random_graph(64, 64, true, 1 << 30, 0x7fffffff, 7), "huge");
  expect_matches_cpu(random_graph(50, 90, false, 1 << 30, 0x7fffffff, 8), "huge 4c");
  expect_matches_cpu(random_graph(40, 40, true, 1 << 30, 1000, 9), "huge n-links small terminals");
}

TEST(MaxflowCuda, AllSourceAllSink) {
  HostGraph s = random_graph(45, 70, true, 100, 100, 21);
  for (auto& t : s.terminal) t = std::abs(t) + 1;
  expect_matches_cpu(s, "all source");
  HostGraph k = random_graph(45, 70, true, 100, 100, 22);
  for (auto& t : k.terminal) t = -std::abs(t) - 1;
  expect_matches_cpu(k, "all sink");
  HostGraph z = random_graph(45, 70, true, 100, 100, 23);
  for (auto& t : z.terminal) t = 0;
  z.terminal[0] = 1000;
  z.terminal[z.size() - 1] = -1000;
  expect_matches_cpu(z, "one source one sink");
}

// A corridor that snakes through the whole grid: the only route from the excess at
// one end to the sink at the other is thousands of pixels long.
HostGraph serpentine_graph(int size) {
  HostGraph g(size, size);
  auto open = [&](int y, int x) { return (y % 4 != 3) || (((y / 4) % 2 == 0) ? x == size - 1 : x == 0); };
  set_nlinks(g, false, [&](int y, int x, int d) {
    const int ny = y + kForwardDy[d];
    const int nx = x + kForwardDx[d];
    return open(y, x) && open(ny, nx) ? 50 : 0;
  });
  g.terminal[0] = 1000;
  g.terminal[g.size() - 1] = -1000;
  return g;
}

TEST(MaxflowCuda, SerpentineCorridor) {
  for (int size : {40, 130}) expect_matches_cpu(serpentine_graph(size), "serpentine " + std::to_string(size));
}

// A checkerboard of strong terminals: every pixel (square 1) or every 8x8 square pulled
// hard to the side opposite its neighbours', n-links about as strong (`cap` less up to a
// quarter): half the pixels' excess must find the sink through the other half, across
// every tile boundary, and nothing may overflow with terminals at the int32 limit and
// n-links at the contract's 2^30 - 1.
HostGraph checkerboard_graph(int h, int w, int square, std::int32_t term, std::int32_t cap, unsigned seed) {
  HostGraph g(h, w);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> less(0, cap / 4);
  set_nlinks(g, true, [&](int, int, int) { return cap - less(rng); });
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const bool source = (y / square + x / square) % 2 == 0;
      g.terminal[static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)] =
          source ? term : -term;
    }
  }
  return g;
}

TEST(MaxflowCuda, CheckerboardOfStrongTerminals) {
  for (const int square : {1, 8}) {
    for (const auto& [term, cap] : {std::pair{1 << 30, 1 << 28}, std::pair{1000, (1 << 30) - 1},
                                    std::pair{0x7fffffff, (1 << 30) - 1}}) {
      expect_matches_cpu(checkerboard_graph(70, 90, square, term, cap, 31),
                         "checkerboard square " + std::to_string(square) + " terminal " + std::to_string(term) +
                             " n-link " + std::to_string(cap));
    }
  }
  expect_matches_cpu(checkerboard_graph(300, 257, 1, 1 << 30, 1 << 29, 32), "checkerboard 300x257");
}

// Graphs that finish early are retired from later relabels while a hard one goes on
// solving: their cuts must stay exact, cold and warm, and retiring must actually
// happen (without it, every relabel's first sweep would relax every tile).
TEST(MaxflowCuda, EarlyFinishersKeepTheirCut) {
  std::vector<HostGraph> graphs;
  for (int i = 0; i < 40; ++i) {
    if (i == 17) graphs.push_back(serpentine_graph(130));
    const int h = 5 + (i * 11) % 40;
    const int w = 3 + (i * 7) % 45;
    graphs.push_back(i % 3 == 0 ? random_graph(h, w, true, 100, 300, 900U + i) : grabcut_graph(h, w, 900U + i));
  }
  std::vector<const HostGraph*> ptrs;
  for (const auto& g : graphs) ptrs.push_back(&g);
  GpuBatch batch(ptrs);
  long long tiles = 0;
  for (const auto& g : graphs) tiles += static_cast<long long>((g.height + 15) / 16) * ((g.width + 31) / 32);
  std::mt19937 rng(901);
  for (int iter = 0; iter < 3; ++iter) {
    const bool warm = iter > 0;
    if (warm) {
      for (std::size_t b = 0; b < graphs.size(); ++b) {
        if (b == 17) continue;  // the corridor stays as hard as it is
        std::normal_distribution<double> gauss(0.0, 200.0);
        for (auto& t : graphs[b].terminal) t = static_cast<std::int32_t>(std::lround(t + gauss(rng)));
      }
      batch.upload(ptrs, false);
    }
    batch.solve(warm);
    const auto flows = batch.flows();
    const auto s = batch.stats();
    for (std::size_t b = 0; b < graphs.size(); ++b) {
      const CpuResult ref = cpu_solve(graphs[b]);
      EXPECT_EQ(flows[b], ref.flow) << "iter " << iter << " graph " << b;
      EXPECT_EQ(count_mismatch(batch.cut(b, graphs[b].size()), ref.cut), 0U) << "iter " << iter << " graph " << b;
    }
    std::printf("[stats] early finishers iter %d: %lld tiles, relabels %llu, checked tiles %llu, bfs tiles %llu\n",
                iter, tiles, s.global_relabels, s.check_tiles, s.bfs_tiles);
    // Retiring shows from the third relabel on (the grid-wide sweeps need ~36 for the
    // corridor).
    if (!warm) ASSERT_GE(s.global_relabels, 3U) << "the corridor should need several relabels";
    // Without retiring, every relabel checks every tile.
    if (s.global_relabels >= 2) {
      EXPECT_LT(s.check_tiles, s.global_relabels * static_cast<unsigned long long>(tiles)) << "iter " << iter;
    }
    EXPECT_GE(s.check_tiles, static_cast<unsigned long long>(tiles)) << "the first check sees every tile";
  }
}

TEST(MaxflowCuda, GrabCutLike) {
  expect_matches_cpu(grabcut_graph(64, 64, 31), "grabcut 64");
  expect_matches_cpu(grabcut_graph(257, 129, 32), "grabcut 257x129");
  expect_matches_cpu(grabcut_graph(512, 512, 33), "grabcut 512");
  expect_matches_cpu(grabcut_graph(1024, 1024, 34), "grabcut 1024");
  expect_matches_cpu(grabcut_graph(300, 400, 35, 40.0), "grabcut very noisy");
}

TEST(MaxflowCuda, RandomLargest) {
  expect_matches_cpu(random_graph(1024, 1024, true, 1000, 2000, 41), "random 1024 8c");
}

TEST(MaxflowCuda, MixedSizeBatch) {
  std::vector<HostGraph> graphs;
  graphs.push_back(random_graph(1, 1, true, 10, 10, 51));
  graphs.push_back(random_graph(1, 1000, true, 100, 300, 52));
  graphs.push_back(HostGraph(0, 7));
  graphs.push_back(random_graph(1000, 1, false, 100, 300, 53));
  graphs.push_back(grabcut_graph(31, 33, 54));
  graphs.push_back(random_graph(64, 64, true, 1, 2, 55));
  graphs.push_back(grabcut_graph(257, 129, 56));
  graphs.push_back(random_graph(33, 31, true, 1 << 30, 0x7fffffff, 57));
  graphs.push_back(HostGraph(4, 0));
  std::vector<const HostGraph*> ptrs;
  for (const auto& g : graphs) ptrs.push_back(&g);
  expect_batch_matches_cpu(ptrs, "mixed batch");
  expect_batch_matches_cpu(ptrs, "mixed batch with gaps", 37);
}

TEST(MaxflowCuda, ManyGraphBatch) {
  std::vector<HostGraph> graphs;
  for (int i = 0; i < 150; ++i) graphs.push_back(grabcut_graph(20 + (i * 7) % 50, 15 + (i * 13) % 60, 100U + i));
  std::vector<const HostGraph*> ptrs;
  for (const auto& g : graphs) ptrs.push_back(&g);
  expect_batch_matches_cpu(ptrs, "150-graph batch");
}

// Warm start: same n-links, new terminals; must equal a cold solve (and the CPU).
TEST(MaxflowCuda, WarmStartMatchesCold) {
  std::vector<HostGraph> graphs;
  graphs.push_back(grabcut_graph(200, 300, 61));
  graphs.push_back(random_graph(97, 45, true, 100, 300, 62));
  graphs.push_back(grabcut_graph(320, 288, 63));
  std::vector<const HostGraph*> ptrs;
  for (const auto& g : graphs) ptrs.push_back(&g);
  GpuBatch warm(ptrs);
  warm.solve(false);
  std::mt19937 rng(64);
  for (int iter = 0; iter < 4; ++iter) {
    for (auto& g : graphs) {
      std::normal_distribution<double> gauss(0.0, iter == 3 ? 20000.0 : 1500.0);
      for (auto& t : g.terminal) {
        t = static_cast<std::int32_t>(std::clamp(std::lround(t + gauss(rng)), -115200L, 115200L));
      }
    }
    warm.upload(ptrs, false);
    warm.solve(true);
    GpuBatch cold(ptrs);
    cold.solve(false);
    const auto wf = warm.flows();
    const auto cf = cold.flows();
    for (std::size_t b = 0; b < graphs.size(); ++b) {
      const CpuResult ref = cpu_solve(graphs[b]);
      EXPECT_EQ(cf[b], ref.flow) << "cold iter " << iter << " graph " << b;
      EXPECT_EQ(wf[b], ref.flow) << "warm iter " << iter << " graph " << b;
      EXPECT_EQ(count_mismatch(warm.cut(b, graphs[b].size()), ref.cut), 0U) << "warm iter " << iter << " graph " << b;
      EXPECT_EQ(count_mismatch(cold.cut(b, graphs[b].size()), ref.cut), 0U) << "cold iter " << iter << " graph " << b;
    }
  }
}

// Every schedule (relabels never capped, capped at 1 and 4 sweeps, and at 1 sweep doubled
// each time it proves too short; short and long visits; pixel heights, region heights
// with and without the checkerboard, warm starts with and without the reverse phase),
// whatever the environment says: the CPU's cut and flow, cold and warm.
TEST(MaxflowCuda, EverySchedule) {
  const HostGraph grabcut_like = grabcut_graph(300, 420, 91);
  const HostGraph random = random_graph(150, 190, true, 100, 300, 92);
  // (region, checkerboard, exact, reverse, band, rim, relax): exact, reverse, band, rim and
  // relax turn on the region switches that are off by default (exact starts reused, the
  // reverse phase of warm starts, the band of visited labels: 1, the narrowest, and 4,
  // the relabels' lists of the neighbours that see a move, exact heights again every 5
  // or 16 rounds of a visit).
  struct Heights {
    bool region, checkerboard, exact, reverse;
    int band;
    bool rim;
    int relax;
  };
  for (const auto& [region, checkerboard, exact, reverse, band, rim, relax] :
       {Heights{false, false, false, false, 0, false, 0}, Heights{true, false, false, true, 1, true, 5},
        Heights{true, true, false, false, 0, false, 0}, Heights{true, true, true, true, 4, true, 16}}) {
    for (const auto& [cap, grow] :
         {std::pair{0, false}, std::pair{1, false}, std::pair{4, false}, std::pair{1, true}}) {
      for (const auto& [visits, rounds] : {std::pair{8, 24}, std::pair{1, 1}, std::pair{3, 200}}) {
        const std::string what = std::string(region ? "region " : "") + (checkerboard ? "checkerboard " : "") +
                                 (exact ? "exact starts " : "") + (reverse ? "reverse warm " : "") +
                                 (rim ? "rim lists " : "") + "band " + std::to_string(band) + " relax every " +
                                 std::to_string(relax) + " cap " +
                                 std::to_string(cap) +
                                 (grow ? " growing" : "") + " visits " + std::to_string(visits) + " rounds " +
                                 std::to_string(rounds);
        HostGraph g0 = grabcut_like;
        HostGraph g1 = random;
        const std::vector<const HostGraph*> graphs{&g0, &g1};
        GpuBatch batch(graphs);
        batch.schedule.bfs_cap = cap;
        batch.schedule.grow_cap = grow;
        batch.schedule.push_visits = visits;
        batch.schedule.local_rounds = rounds;
        batch.schedule.region = region;
        batch.schedule.checkerboard = checkerboard;
        batch.schedule.exact_start = exact;
        batch.schedule.reverse_warm = reverse;
        batch.schedule.band = band;
        batch.schedule.rim_lists = rim;
        batch.schedule.relax_every = relax;
        batch.solve(false);
        // A cap stops relabels on these graphs (their waves need more sweeps than 4).
        EXPECT_EQ(batch.stats().capped_relabels > 0, cap > 0) << what;
        for (std::size_t b = 0; b < graphs.size(); ++b) {
          const CpuResult ref = cpu_solve(*graphs[b]);
          EXPECT_EQ(batch.flows()[b], ref.flow) << what << " cold graph " << b;
          EXPECT_EQ(count_mismatch(batch.cut(b, graphs[b]->size()), ref.cut), 0U) << what << " cold graph " << b;
        }
        std::mt19937 rng(93);
        std::normal_distribution<double> gauss(0.0, 3000.0);
        for (HostGraph* g : {&g0, &g1}) {
          for (auto& t : g->terminal) {
            t = static_cast<std::int32_t>(std::clamp(std::lround(t + gauss(rng)), -115200L, 115200L));
          }
        }
        batch.upload(graphs, false);
        batch.solve(true);
        for (std::size_t b = 0; b < graphs.size(); ++b) {
          const CpuResult ref = cpu_solve(*graphs[b]);
          EXPECT_EQ(batch.flows()[b], ref.flow) << what << " warm graph " << b;
          EXPECT_EQ(count_mismatch(batch.cut(b, graphs[b]->size()), ref.cut), 0U) << what << " warm graph " << b;
        }
      }
    }
  }
}

// Region heights are exact up to about 5.8 megapixels a graph (maxflow_cuda: a height
// D * kRegionStep + steps must stay below kInf); a larger graph asked to use them runs
// pixel heights, with the same cut and flow.
TEST(MaxflowCuda, RegionHeightsOnAGraphBeyondTheirBound) {
  const HostGraph big = random_graph(1920, 3232, true, 100, 300, 94);  // 101 x 120 = 12120 tiles
  const HostGraph small = random_graph(200, 300, true, 100, 300, 95);
  const std::vector<const HostGraph*> graphs{&big, &small};
  GpuBatch batch(graphs);
  batch.schedule = grabcut::cuda::region_schedule(/*checkerboard=*/true);
  batch.solve(false);
  for (std::size_t b = 0; b < graphs.size(); ++b) {
    const CpuResult ref = cpu_solve(*graphs[b]);
    EXPECT_EQ(batch.flows()[b], ref.flow) << "graph " << b;
    EXPECT_EQ(count_mismatch(batch.cut(b, graphs[b]->size()), ref.cut), 0U) << "graph " << b;
  }
}

TEST(MaxflowCuda, Deterministic) {
  const HostGraph a = grabcut_graph(700, 500, 71);
  const HostGraph b = random_graph(300, 300, true, 500, 1000, 72);
  GpuBatch batch({&a, &b});
  batch.solve(false);
  const auto c1 = batch.all_cuts();
  const auto f1 = batch.flows();
  for (int run = 0; run < 3; ++run) {
    batch.solve(false);
    EXPECT_EQ(batch.all_cuts(), c1) << "run " << run;
    EXPECT_EQ(batch.flows(), f1) << "run " << run;
  }
  GpuBatch other({&a, &b});
  other.solve(false);
  EXPECT_EQ(other.all_cuts(), c1);
  EXPECT_EQ(other.flows(), f1);
}

TEST(MaxflowCuda, RejectsBadArguments) {
  std::vector<GridDesc> d(1);
  d[0].height = -1;
  d[0].width = 3;
  EXPECT_THROW(grabcut::cuda::maxflow_workspace_bytes(d), std::invalid_argument);
  const HostGraph g = random_graph(8, 8, true, 10, 10, 81);
  GpuBatch batch({&g});
  BatchedGridGraph bg;
  bg.desc.resize(1);
  bg.desc[0].height = 8;
  bg.desc[0].width = 8;
  bg.total_pixels = 64;
  EXPECT_THROW(grabcut::cuda::maxflow_cuda(bg, nullptr, nullptr, nullptr, 0, false, nullptr), std::invalid_argument);
  for (int field = 0; field < 3; ++field) {
    grabcut::cuda::MaxflowSchedule bad;
    if (field == 0) bad.push_visits = 0;
    if (field == 1) bad.local_rounds = 0;
    if (field == 2) bad.bfs_cap = -1;
    batch.schedule = bad;
    EXPECT_THROW(batch.solve(false), std::invalid_argument) << "schedule field " << field;
  }
}

}  // namespace

// Small and odd shapes for compute-sanitizer (scripts/gpu_check.sh): alone, then as one batch.
TEST(OddSizesMaxflow, EachShapeAlone) {
  unsigned seed = 71;
  for (const auto& [h, w] : {std::pair{1, 1}, std::pair{31, 33}, std::pair{1, 4096}, std::pair{4096, 1}}) {
    expect_matches_cpu(random_graph(h, w, true, 100, 300, seed++), std::to_string(h) + "x" + std::to_string(w));
    expect_matches_cpu(grabcut_graph(h, w, seed++), "grabcut-like " + std::to_string(h) + "x" + std::to_string(w));
  }
}

TEST(OddSizesMaxflow, MixedBatch) {
  std::vector<HostGraph> graphs;
  graphs.push_back(random_graph(1, 1, true, 10, 10, 81));
  graphs.push_back(grabcut_graph(31, 33, 82));
  graphs.push_back(random_graph(1, 4096, true, 100, 300, 83));
  graphs.push_back(grabcut_graph(4096, 1, 84));
  graphs.push_back(HostGraph(0, 3));
  std::vector<const HostGraph*> ptrs;
  for (const auto& g : graphs) ptrs.push_back(&g);
  expect_batch_matches_cpu(ptrs, "odd-size batch");
}
