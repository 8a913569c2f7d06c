// The 3D min-cut's CUDA kernels (csrc/cuda/mincut3d.h) against their host emulation
// and the CPU solver: the push-relabel solver must take the emulator's phases and
// sweeps (the same schedule, the same per-voxel steps) and give the CPU solver's flow
// and canonical cut, voxel for voxel, on random and adversarial volumes, lines, snakes,
// batches of mixed content and batches of more graphs than a grid has rows; the
// reduction kernel must give its host loop's net terminals, n-links, offsets and
// verdict, for int32 and int64 inputs, symmetric and asymmetric.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/grid3d_graph.h"
#include "core/mincut3d_voxel.h"
#include "core/pushrelabel3d_emulator.h"
#include "cuda/check.h"
#include "cuda/mincut3d.h"

namespace {

using grabcut::testing::Batch3d;
using grabcut::testing::Graph3d;

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t count) : count_(count) {
    GRABCUT_CUDA_CHECK(cudaMalloc(&data_, (count > 0 ? count : 1) * sizeof(T)));
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    GRABCUT_CUDA_CHECK(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return data_; }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    GRABCUT_CUDA_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

struct Solved {
  std::vector<std::uint8_t> cut;
  std::vector<std::int64_t> flows;
  grabcut::pr3d::Stats stats;
};

Solved solve_gpu(const Batch3d& b, cudaStream_t stream = nullptr) {
  const DeviceArray<std::int32_t> terminal(b.terminal), nlinks(b.nlinks);
  grabcut::cuda::Grid3dBatch graph;
  graph.batch = b.batch;
  graph.depth = b.depth;
  graph.height = b.height;
  graph.width = b.width;
  graph.terminal = terminal.get();
  graph.nlinks = nlinks.get();
  const std::size_t bytes = grabcut::cuda::pushrelabel3d_workspace_bytes(graph);
  const DeviceArray<std::uint8_t> workspace(bytes), cut(b.terminal.size());
  const DeviceArray<std::int64_t> flows(static_cast<std::size_t>(b.batch));
  Solved out;
  out.stats = grabcut::cuda::pushrelabel3d_cuda(graph, cut.get(), flows.get(), workspace.get(), bytes, stream);
  GRABCUT_CUDA_CHECK(cudaStreamSynchronize(stream));
  out.cut = cut.download();
  out.flows = flows.download();
  return out;
}

Solved solve_emulated(const Batch3d& b) {
  Solved out;
  out.cut.assign(b.terminal.size(), 0);
  out.flows.assign(static_cast<std::size_t>(b.batch), 0);
  grabcut::Grid3dPushRelabelEmulator emulator;
  out.stats = emulator.solve(b.batch, b.depth, b.height, b.width, b.terminal.data(), b.nlinks.data(), out.cut.data(),
                             out.flows.data());
  return out;
}

// One batch on the GPU: the emulator's schedule and results, and the CPU solver's.
void expect_gpu_matches(const std::vector<Graph3d>& graphs, const std::string& what, bool check_cpu = true) {
  const Batch3d b = grabcut::testing::pack3d(graphs);
  const Solved gpu = solve_gpu(b);
  const Solved emulated = solve_emulated(b);
  EXPECT_EQ(gpu.stats.phases, emulated.stats.phases) << what;
  EXPECT_EQ(gpu.stats.sweeps, emulated.stats.sweeps) << what;
  EXPECT_EQ(gpu.stats.global_relabels, emulated.stats.global_relabels) << what;
  ASSERT_EQ(gpu.flows, emulated.flows) << what;
  ASSERT_EQ(gpu.cut, emulated.cut) << what;
  if (!check_cpu) return;
  const std::int64_t n = graphs[0].voxels();
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const grabcut::testing::Result3d want = grabcut::testing::solve_cpu3d(graphs[i]);
    const std::uint8_t* got = gpu.cut.data() + static_cast<std::int64_t>(i) * n;
    ASSERT_EQ(gpu.flows[i], want.flow) << what << ", graph " << i << " (" << graphs[i].kind << ")";
    ASSERT_TRUE(std::equal(want.cut.begin(), want.cut.end(), got)) << what << ", graph " << i;
  }
}

TEST(Mincut3dCuda, EqualsTheEmulatorAndTheCpuSolver) {
  std::mt19937 rng(3611);
  for (int it = 0; it < 12; ++it) {
    const int d = grabcut::testing::draw3d(rng, 1, 9), h = grabcut::testing::draw3d(rng, 1, 10),
              w = grabcut::testing::draw3d(rng, 1, 11);
    std::vector<Graph3d> graphs;
    for (const std::string& kind : grabcut::testing::graph3d_kinds()) {
      graphs.push_back(grabcut::testing::make_graph3d(rng, d, h, w, kind));
      expect_gpu_matches({graphs.back()}, "alone: " + kind);
    }
    std::shuffle(graphs.begin(), graphs.end(), rng);
    expect_gpu_matches(graphs, "mixed batch " + std::to_string(it));
  }
}

TEST(Mincut3dCuda, OneVoxelLinesSnakesAndLargerVolumes) {
  std::mt19937 rng(3612);
  for (const std::string& kind : grabcut::testing::graph3d_kinds()) {
    expect_gpu_matches({grabcut::testing::make_graph3d(rng, 1, 1, 1, kind)}, "one voxel");
    expect_gpu_matches({grabcut::testing::make_graph3d(rng, 1, 300, 1, kind)}, "1 x 300 x 1");
    expect_gpu_matches({grabcut::testing::make_graph3d(rng, 1, 1, 300, kind)}, "1 x 1 x 300");
    expect_gpu_matches({grabcut::testing::make_graph3d(rng, 300, 1, 1, kind)}, "300 x 1 x 1");
  }
  expect_gpu_matches({grabcut::testing::make_graph3d(rng, 12, 12, 12, "snake")}, "a 12^3 snake");
  for (const char* kind : {"random", "huge", "checkerboard", "ties", "sparse", "all_sink"}) {
    expect_gpu_matches({grabcut::testing::make_graph3d(rng, 40, 48, 56, kind)}, std::string("40 x 48 x 56 ") + kind);
  }
}

TEST(Mincut3dCuda, ABatchOfMoreGraphsThanAGridHasRows) {
  std::mt19937 rng(3613);
  std::vector<Graph3d> graphs;
  for (int i = 0; i < 70000; ++i) {
    graphs.push_back(grabcut::testing::make_graph3d(rng, 1, 2, 3, i % 2 == 0 ? "random" : "tiny"));
  }
  expect_gpu_matches(graphs, "70,000 graphs", /*check_cpu=*/false);
}

TEST(Mincut3dCuda, RepeatedSolvesAreIdentical) {
  std::mt19937 rng(3614);
  const Batch3d b = grabcut::testing::pack3d({grabcut::testing::make_graph3d(rng, 20, 21, 22, "random"),
                                              grabcut::testing::make_graph3d(rng, 20, 21, 22, "checkerboard")});
  const Solved first = solve_gpu(b);
  cudaStream_t stream = nullptr;
  GRABCUT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int k = 0; k < 3; ++k) {
    const Solved again = solve_gpu(b, stream);
    EXPECT_EQ(again.cut, first.cut);
    EXPECT_EQ(again.flows, first.flows);
    EXPECT_EQ(again.stats.phases, first.stats.phases);
  }
  GRABCUT_CUDA_CHECK(cudaStreamDestroy(stream));
}

// The user's form of a batch (core/mincut3d_voxel.h), with values out of range here
// and there when `bad`.
template <typename T>
struct UserBatch {
  std::int64_t batch = 0;
  int d = 0, h = 0, w = 0;
  std::vector<T> source, sink, edges, reverse;
};

template <typename T>
UserBatch<T> user_batch(std::mt19937& rng, std::int64_t batch, int d, int h, int w, bool asymmetric, int bad) {
  UserBatch<T> u;
  u.batch = batch;
  u.d = d;
  u.h = h;
  u.w = w;
  const auto n = static_cast<std::size_t>(batch * d * h * w);
  const auto fill = [&](std::vector<T>& v, std::size_t count, std::int32_t hi) {
    v.resize(count);
    for (T& x : v) x = static_cast<T>(grabcut::testing::draw3d(rng, 0, hi));
  };
  fill(u.source, n, 5000);
  fill(u.sink, n, 5000);
  fill(u.edges, 3 * n, 2000);
  if (asymmetric) fill(u.reverse, 3 * n, 2000);
  std::vector<T>* arrays[4] = {&u.source, &u.sink, &u.edges, &u.reverse};
  for (int k = 0; k < bad; ++k) {
    std::vector<T>& a = *arrays[grabcut::testing::draw3d(rng, 0, asymmetric ? 3 : 2)];
    const auto at = static_cast<std::size_t>(grabcut::testing::draw3d(rng, 0, static_cast<std::int32_t>(a.size()) - 1));
    const int which = grabcut::testing::draw3d(rng, 0, 2);
    a[at] = which == 0 ? static_cast<T>(-1) : (which == 1 ? static_cast<T>(grabcut::kMincutMaxNodeSum) : T{600000000});
  }
  return u;
}

template <typename T>
void expect_reduction_matches(const UserBatch<T>& u, const std::string& what) {
  grabcut::mincut3d::Input<T> host;
  host.source = u.source.data();
  host.sink = u.sink.data();
  host.edges = u.edges.data();
  host.reverse = u.reverse.empty() ? nullptr : u.reverse.data();
  host.voxels = std::int64_t{u.d} * u.h * u.w;
  host.depth = u.d;
  host.height = u.h;
  host.width = u.w;
  const auto n = static_cast<std::size_t>(u.batch * host.voxels);
  std::vector<std::int32_t> net(n), nlinks(3 * n);
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(u.batch), 0);
  bool ok = true;
  for (std::int64_t b = 0; b < u.batch; ++b) {
    for (std::int64_t v = 0; v < host.voxels; ++v) {
      ok = grabcut::mincut3d::reduce_voxel(host, b * host.voxels + v, net.data(), nlinks.data(),
                                           offsets[static_cast<std::size_t>(b)]) &&
           ok;
    }
  }
  const DeviceArray<T> source(u.source), sink(u.sink), edges(u.edges), reverse(u.reverse);
  grabcut::mincut3d::Input<T> device = host;
  device.source = source.get();
  device.sink = sink.get();
  device.edges = edges.get();
  device.reverse = u.reverse.empty() ? nullptr : reverse.get();
  const DeviceArray<std::int32_t> d_net(n), d_nlinks(3 * n);
  const DeviceArray<std::int64_t> d_offsets(std::vector<std::int64_t>(static_cast<std::size_t>(u.batch), 0));
  const DeviceArray<unsigned int> flag(1);
  const bool d_ok = grabcut::cuda::mincut3d_reduce_cuda<T>(device, u.batch, d_net.get(), d_nlinks.get(),
                                                           d_offsets.get(), flag.get(), nullptr);
  ASSERT_EQ(d_ok, ok) << what;
  if (!ok) return;
  EXPECT_EQ(d_net.download(), net) << what;
  EXPECT_EQ(d_nlinks.download(), nlinks) << what;
  EXPECT_EQ(d_offsets.download(), offsets) << what;
}

TEST(Mincut3dCuda, TheReductionKernelEqualsItsHostLoop) {
  std::mt19937 rng(3615);
  for (const bool asymmetric : {false, true}) {
    for (const int bad : {0, 0, 1, 3}) {
      const std::string what = std::string(asymmetric ? "asymmetric" : "symmetric") + ", bad " + std::to_string(bad);
      expect_reduction_matches(user_batch<std::int32_t>(rng, 3, 5, 6, 7, asymmetric, bad), what + ", int32");
      expect_reduction_matches(user_batch<std::int64_t>(rng, 3, 5, 6, 7, asymmetric, bad), what + ", int64");
      expect_reduction_matches(user_batch<std::int32_t>(rng, 1, 1, 1, 1, asymmetric, bad), what + ", one voxel");
      expect_reduction_matches(user_batch<std::int32_t>(rng, 70000, 1, 1, 2, asymmetric, bad),
                               what + ", 70,000 graphs");
      expect_reduction_matches(user_batch<std::int64_t>(rng, 1, 70, 80, 90, asymmetric, bad), what + ", 70x80x90");
    }
  }
}

}  // namespace
