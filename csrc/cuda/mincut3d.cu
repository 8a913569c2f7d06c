// The kernels of cuda/mincut3d.h: each maps one per-voxel step of
// core/mincut3d_voxel.h or core/pushrelabel3d.h over the voxels of a batch, one thread
// a voxel, and the host runs core/pushrelabel3d.h's schedule over them. The phases read
// and write disjoint state (core/pushrelabel3d.h), so a launch needs no atomics but
// the integer ones that sum a graph's offset and flow value, or raise a flag (sums of
// integers: the same whatever the order).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "cuda/check.h"
#include "cuda/mincut3d.h"

namespace grabcut::cuda {
namespace {

constexpr int kBlock = 256;
constexpr std::int64_t kMaxGridX = (std::int64_t{1} << 31) - 1;
constexpr std::int64_t kMaxGridY = 65535;
// Per-graph kernels (the reduction, the outputs): at most this many blocks per graph,
// each striding over its graph's voxels.
constexpr std::int64_t kMaxBlocksPerGraph = 4096;

__device__ __forceinline__ std::int64_t voxel_index() {
  return static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x;
}

// The sum of v over the block, in thread 0 (every thread of the block must call it).
__device__ std::int64_t block_sum(std::int64_t v) {
  __shared__ std::int64_t warp_sums[kBlock / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffU, v, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  std::int64_t total = 0;
  if (threadIdx.x == 0) {
    for (int w = 0; w < kBlock / 32; ++w) total += warp_sums[w];
  }
  __syncthreads();  // warp_sums is free again
  return total;
}

__device__ __forceinline__ void add_to(std::int64_t* sum, std::int64_t value) {
  // Two's complement: an unsigned add is the signed one (the true sum fits int64).
  atomicAdd(reinterpret_cast<unsigned long long*>(sum), static_cast<unsigned long long>(value));
}

// A grid of (blocks per graph, graphs): blockIdx.y picks the graph (striding by
// gridDim.y), blockIdx.x a share of its voxels; every block handles one graph at a time.
dim3 graph_grid(std::int64_t batch, std::int64_t voxels) {
  const std::int64_t y = std::min(batch, kMaxGridY);
  const std::int64_t x = std::clamp<std::int64_t>((voxels + kBlock - 1) / kBlock, 1, kMaxBlocksPerGraph);
  return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y));
}

template <typename T>
__global__ void reduce_kernel(mincut3d::Input<T> in, std::int64_t batch, std::int32_t* net, std::int32_t* nlinks,
                              std::int64_t* offsets, unsigned int* bad) {
  for (std::int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    std::int64_t offset = 0;
    bool ok = true;
    for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x; v < in.voxels;
         v += static_cast<std::int64_t>(gridDim.x) * kBlock) {
      ok = mincut3d::reduce_voxel(in, b * in.voxels + v, net, nlinks, offset) && ok;
    }
    const std::int64_t sum = block_sum(offset);
    const int all_ok = __syncthreads_and(ok ? 1 : 0);
    if (threadIdx.x == 0) {
      if (sum != 0) add_to(offsets + b, sum);
      if (all_ok == 0) atomicOr(bad, 1U);
    }
  }
}

__global__ void init_kernel(pr3d::Grid3dState s) {
  const std::int64_t i = voxel_index();
  if (i < s.total) pr3d::init_voxel(s, i);
}

__global__ void bfs_start_kernel(pr3d::Grid3dState s, std::int32_t* out) {
  const std::int64_t i = voxel_index();
  if (i < s.total) pr3d::bfs_start_voxel(s, i, out);
}

// changed: null, or a flag raised if a label changed (every thread reaches the block
// vote, so the launch covers whole blocks).
__global__ void bfs_sweep_kernel(pr3d::Grid3dState s, const std::int32_t* in, std::int32_t* out,
                                 unsigned int* changed) {
  const std::int64_t i = voxel_index();
  const bool mine = i < s.total && pr3d::bfs_sweep_voxel(s, i, in, out);
  if (changed != nullptr) {
    if (__syncthreads_or(mine ? 1 : 0) != 0 && threadIdx.x == 0) atomicOr(changed, 1U);
  }
}

// Phase 1.
__global__ void push_kernel(pr3d::Grid3dState s, const std::int32_t* label) {
  const std::int64_t i = voxel_index();
  if (i < s.total) pr3d::push_voxel(s, i, label);
}

// Phases 2 and 3 in one thread per voxel: relabel_voxel reads of settle_voxel's writes
// only the voxel's own excess, which this thread has just written, and the flows and
// the labels `in`, which no one writes here.
__global__ void settle_relabel_kernel(pr3d::Grid3dState s, const std::int32_t* in, std::int32_t* out) {
  const std::int64_t i = voxel_index();
  if (i < s.total) {
    pr3d::settle_voxel(s, i);
    pr3d::relabel_voxel(s, i, in, out);
  }
}

__global__ void any_active_kernel(pr3d::Grid3dState s, const std::int32_t* label, unsigned int* any) {
  const std::int64_t i = voxel_index();
  const bool mine = i < s.total && pr3d::active_voxel(s, i, label);
  if (__syncthreads_or(mine ? 1 : 0) != 0 && threadIdx.x == 0) atomicOr(any, 1U);
}

// The outputs, on graph_grid: the cut, and each graph's flow value (flows zeroed).
__global__ void finish_kernel(pr3d::Grid3dState s, const std::int32_t* label, std::uint8_t* source_side,
                              std::int64_t* flows) {
  for (std::int64_t b = blockIdx.y; b < s.batch; b += gridDim.y) {
    std::int64_t flow = 0;
    for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x; v < s.voxels;
         v += static_cast<std::int64_t>(gridDim.x) * kBlock) {
      const std::int64_t i = b * s.voxels + v;
      source_side[i] = pr3d::source_side_voxel(s, i, label) ? 1 : 0;
      flow += pr3d::sink_flow_voxel(s, i);
    }
    const std::int64_t sum = block_sum(flow);
    if (threadIdx.x == 0 && sum != 0) add_to(flows + b, sum);
  }
}

// The solver's scratch, carved from the workspace (a null base only counts): the
// state of pr3d::carve_state, then one int for the flags.
struct Scratch {
  pr3d::Grid3dState state;
  std::int32_t* label[2] = {nullptr, nullptr};
  unsigned int* flag = nullptr;
  std::size_t bytes = 0;
};

Scratch carve(const Grid3dBatch& g, void* workspace) {
  if (g.batch <= 0 || g.depth <= 0 || g.height <= 0 || g.width <= 0) {
    throw std::invalid_argument("pushrelabel3d_cuda: expected a non-empty batch of non-empty grids");
  }
  const std::int64_t n = std::int64_t{g.depth} * g.height * g.width;
  if (n >= (std::int64_t{1} << 28)) {
    throw std::invalid_argument("pushrelabel3d_cuda: expected fewer than 2^28 voxels a graph, got " +
                                std::to_string(n));
  }
  if (g.batch > kMaxGridX * kBlock / n) {
    throw std::invalid_argument("pushrelabel3d_cuda: a batch of " + std::to_string(g.batch) + " graphs of " +
                                std::to_string(n) + " voxels is too large for one launch");
  }
  Scratch s;
  s.state = pr3d::grid3d_state(g.batch, g.depth, g.height, g.width, g.terminal, g.nlinks);
  auto* base = static_cast<unsigned char*>(workspace);
  const std::size_t state = pr3d::carve_state(s.state, s.label, base);
  const std::size_t flag_at = (state + pr3d::kStateAlignment - 1) / pr3d::kStateAlignment * pr3d::kStateAlignment;
  if (base != nullptr) s.flag = reinterpret_cast<unsigned int*>(base + flag_at);
  s.bytes = flag_at + sizeof(unsigned int);
  return s;
}

// core/pushrelabel3d.h's schedule backend: one launch per sweep or phase step, a
// synchronisation per test for the end.
class DeviceBackend {
 public:
  DeviceBackend(const Scratch& scratch, cudaStream_t stream)
      : s_(scratch.state),
        label_{scratch.label[0], scratch.label[1]},
        flag_(scratch.flag),
        stream_(stream),
        blocks_(static_cast<unsigned>((scratch.state.total + kBlock - 1) / kBlock)) {}

  void start() {
    init_kernel<<<blocks_, kBlock, 0, stream_>>>(s_);
    GRABCUT_CUDA_CHECK_LAUNCH("pushrelabel3d init_kernel");
  }
  void bfs_start() {
    bfs_start_kernel<<<blocks_, kBlock, 0, stream_>>>(s_, label_[cur_]);
    GRABCUT_CUDA_CHECK_LAUNCH("pushrelabel3d bfs_start_kernel");
  }
  bool bfs_sweeps(int count) {
    for (int k = 0; k < count; ++k) {
      const bool last = k + 1 == count;
      if (last) GRABCUT_CUDA_CHECK(cudaMemsetAsync(flag_, 0, sizeof(unsigned int), stream_));
      bfs_sweep_kernel<<<blocks_, kBlock, 0, stream_>>>(s_, label_[cur_], label_[1 - cur_], last ? flag_ : nullptr);
      GRABCUT_CUDA_CHECK_LAUNCH("pushrelabel3d bfs_sweep_kernel");
      cur_ = 1 - cur_;
    }
    return read_flag();
  }
  void phases(int count) {
    for (int k = 0; k < count; ++k) {
      push_kernel<<<blocks_, kBlock, 0, stream_>>>(s_, label_[cur_]);
      GRABCUT_CUDA_CHECK_LAUNCH("pushrelabel3d push_kernel");
      settle_relabel_kernel<<<blocks_, kBlock, 0, stream_>>>(s_, label_[cur_], label_[1 - cur_]);
      GRABCUT_CUDA_CHECK_LAUNCH("pushrelabel3d settle_relabel_kernel");
      cur_ = 1 - cur_;
    }
  }
  bool any_active() {
    GRABCUT_CUDA_CHECK(cudaMemsetAsync(flag_, 0, sizeof(unsigned int), stream_));
    any_active_kernel<<<blocks_, kBlock, 0, stream_>>>(s_, label_[cur_], flag_);
    GRABCUT_CUDA_CHECK_LAUNCH("pushrelabel3d any_active_kernel");
    return read_flag();
  }
  const std::int32_t* labels() const { return label_[cur_]; }

 private:
  // The one place the host waits for the device.
  bool read_flag() {
    unsigned int host = 0;
    GRABCUT_CUDA_CHECK(cudaMemcpyAsync(&host, flag_, sizeof host, cudaMemcpyDeviceToHost, stream_));
    GRABCUT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return host != 0;
  }

  pr3d::Grid3dState s_;
  std::int32_t* label_[2];
  unsigned int* flag_;
  cudaStream_t stream_;
  unsigned blocks_;
  int cur_ = 0;
};

}  // namespace

template <typename T>
bool mincut3d_reduce_cuda(const mincut3d::Input<T>& input, std::int64_t batch, std::int32_t* net,
                          std::int32_t* nlinks, std::int64_t* offsets, unsigned int* flag, cudaStream_t stream) {
  if (batch <= 0 || input.voxels <= 0) return true;
  GRABCUT_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(unsigned int), stream));
  reduce_kernel<T><<<graph_grid(batch, input.voxels), kBlock, 0, stream>>>(input, batch, net, nlinks, offsets, flag);
  GRABCUT_CUDA_CHECK_LAUNCH("mincut3d reduce_kernel");
  unsigned int bad = 0;
  GRABCUT_CUDA_CHECK(cudaMemcpyAsync(&bad, flag, sizeof bad, cudaMemcpyDeviceToHost, stream));
  GRABCUT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return bad == 0;
}

template bool mincut3d_reduce_cuda<std::int32_t>(const mincut3d::Input<std::int32_t>&, std::int64_t, std::int32_t*,
                                                 std::int32_t*, std::int64_t*, unsigned int*, cudaStream_t);
template bool mincut3d_reduce_cuda<std::int64_t>(const mincut3d::Input<std::int64_t>&, std::int64_t, std::int32_t*,
                                                 std::int32_t*, std::int64_t*, unsigned int*, cudaStream_t);

std::size_t pushrelabel3d_workspace_bytes(const Grid3dBatch& graph) { return carve(graph, nullptr).bytes; }

pr3d::Stats pushrelabel3d_cuda(const Grid3dBatch& graph, std::uint8_t* source_side, std::int64_t* flows,
                               void* workspace, std::size_t workspace_bytes, cudaStream_t stream,
                               const std::function<bool()>& stop) {
  const Scratch scratch = carve(graph, workspace);
  if (workspace == nullptr || workspace_bytes < scratch.bytes) {
    throw std::invalid_argument("pushrelabel3d_cuda: expected a workspace of at least " +
                                std::to_string(scratch.bytes) + " bytes, got " + std::to_string(workspace_bytes));
  }
  if (reinterpret_cast<std::uintptr_t>(workspace) % 16 != 0) {
    throw std::invalid_argument("pushrelabel3d_cuda: expected a workspace aligned to 16 bytes");
  }
  DeviceBackend backend(scratch, stream);
  const pr3d::Stats stats = pr3d::solve_schedule(backend, [&stop] { return stop && stop(); });
  if (stats.stopped) return stats;
  GRABCUT_CUDA_CHECK(cudaMemsetAsync(flows, 0, sizeof(std::int64_t) * static_cast<std::size_t>(graph.batch), stream));
  finish_kernel<<<graph_grid(graph.batch, scratch.state.voxels), kBlock, 0, stream>>>(scratch.state, backend.labels(),
                                                                                      source_side, flows);
  GRABCUT_CUDA_CHECK_LAUNCH("pushrelabel3d finish_kernel");
  return stats;
}

}  // namespace grabcut::cuda
