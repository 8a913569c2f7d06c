// The kernel of cuda/mincut_reduce.h: the whole batch in one launch on a grid of
// (blocks per graph, graphs) blocks. blockIdx.y picks the graph (then every
// gridDim.y-th, the grid's y being capped at 65535); the blockIdx.x-th block of a
// graph takes its pixels blockIdx.x * 256 + threadIdx.x, then every gridDim.x * 256-th
// (gridDim.x: enough for 4 pixels a thread of the largest graph). Each thread runs
// grabcut::mincut_reduce_pixel on its pixels (reads coalesced: consecutive threads,
// consecutive pixels; the edges into a pixel are its neighbours' and come from the
// caches) and writes the terminal and the four solver n-links; then the block adds
// its threads' offsets (a warp shuffle, then one value per warp in shared memory)
// and thread 0 adds the block's sum into the graph's offset with one 64-bit atomic.
// Integer addition is exact and associative, so the offset is the same whatever the
// order, and every partial sum is bounded (core/mincut_pixel.h: below 2^58 in
// magnitude): no overflow. A pixel that fails a check sets the batch's error flag.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/maxflow.h"
#include "core/mincut_pixel.h"
#include "cuda/check.h"
#include "cuda/mincut_reduce.h"

namespace grabcut::cuda {
namespace {

constexpr int kReduceThreads = 256;
constexpr int kReducePixelsPerThread = 4;
constexpr std::int64_t kReduceMaxGridY = 65535;

// The sum of every thread's v in thread 0 of the block (other threads: 0). Every
// thread of the block must call it.
__device__ __forceinline__ long long block_sum(long long v) {
  __shared__ long long warp_sums[kReduceThreads / 32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffU, v, o);
  if ((threadIdx.x & 31U) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  long long total = 0;
  if (threadIdx.x == 0) {
    for (int i = 0; i < kReduceThreads / 32; ++i) total += warp_sums[i];
  }
  __syncthreads();  // read before the block's next graph writes warp_sums again
  return total;
}

template <typename T, int K, bool kAsym>
__global__ void __launch_bounds__(kReduceThreads)
    mincut_reduce_kernel(MincutInput<T> in, std::int32_t* terminal, std::int32_t* nlinks, std::int64_t* sums) {
  const int h = in.height, w = in.width;
  const int pixels = h * w;
  const std::int64_t total = in.batch * pixels;
  const int first = static_cast<int>(blockIdx.x) * kReduceThreads + static_cast<int>(threadIdx.x);
  const int stride = static_cast<int>(gridDim.x) * kReduceThreads;
  bool ok = true;
  // The loop over graphs is the block's alone (blockIdx.y, gridDim.y): every thread of
  // a block takes the same graphs, so block_sum's barriers are reached by all.
  for (std::int64_t b = blockIdx.y; b < in.batch; b += gridDim.y) {
    const std::int64_t base = b * pixels;
    const T* edges[K];
    const T* reverse[K];
    std::int32_t* nl[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      edges[k] = in.edges + (b * K + k) * pixels;
      reverse[k] = kAsym ? in.reverse + (b * K + k) * pixels : nullptr;
      nl[k] = nlinks + mincut_solver_direction(k) * total + base;
    }
    std::int64_t offset = 0;
    for (int p = first; p < pixels; p += stride) {
      const int y = p / w, x = p - y * w;
      ok &= mincut_reduce_pixel<T, K, kAsym, /*kWriteNl=*/true, /*kChecked=*/true>(
          in.source + base, in.sink + base, edges, reverse, h, w, y, x, terminal + base, nl, offset);
      if constexpr (K == 2) {  // 4-connected on the 8-connected solver: zero diagonals
        nlinks[kDownRight * total + base + p] = 0;
        nlinks[kDownLeft * total + base + p] = 0;
      }
    }
    const long long sum = block_sum(offset);
    if (threadIdx.x == 0 && sum != 0) {
      atomicAdd(reinterpret_cast<unsigned long long*>(sums + b), static_cast<unsigned long long>(sum));
    }
  }
  if (!ok) sums[in.batch] = 1;
}

template <typename T, int K, bool kAsym>
void launch(const MincutInput<T>& in, std::int32_t* terminal, std::int32_t* nlinks, std::int64_t* sums,
            cudaStream_t stream) {
  const std::int64_t pixels = static_cast<std::int64_t>(in.height) * in.width;
  const std::int64_t per_block = kReduceThreads * kReducePixelsPerThread;
  const dim3 grid(static_cast<unsigned>((pixels + per_block - 1) / per_block),
                  static_cast<unsigned>(in.batch < kReduceMaxGridY ? in.batch : kReduceMaxGridY));
  mincut_reduce_kernel<T, K, kAsym><<<grid, kReduceThreads, 0, stream>>>(in, terminal, nlinks, sums);
  GRABCUT_CUDA_CHECK_LAUNCH("mincut_reduce_kernel");
}

}  // namespace

template <typename T>
void mincut_reduce(const MincutInput<T>& in, std::int32_t* terminal, std::int32_t* nlinks, std::int64_t* sums,
                   cudaStream_t stream) {
  const std::int64_t pixels = static_cast<std::int64_t>(in.height) * in.width;
  if (in.batch < 1 || in.height < 1 || in.width < 1 || pixels >= (std::int64_t{1} << 28)) {
    throw std::invalid_argument("mincut_reduce: expected batch, height, width >= 1 and height * width < 2^28, got " +
                                std::to_string(in.batch) + " x " + std::to_string(in.height) + " x " +
                                std::to_string(in.width));
  }
  if (in.neighbours != 2 && in.neighbours != 4) {
    throw std::invalid_argument("mincut_reduce: expected 2 or 4 neighbours, got " + std::to_string(in.neighbours));
  }
  GRABCUT_CUDA_CHECK(cudaMemsetAsync(sums, 0, sizeof(std::int64_t) * static_cast<std::size_t>(in.batch + 1), stream));
  const bool asym = in.reverse != nullptr;
  if (in.neighbours == 2 && asym) {
    launch<T, 2, true>(in, terminal, nlinks, sums, stream);
  } else if (in.neighbours == 2) {
    launch<T, 2, false>(in, terminal, nlinks, sums, stream);
  } else if (asym) {
    launch<T, 4, true>(in, terminal, nlinks, sums, stream);
  } else {
    launch<T, 4, false>(in, terminal, nlinks, sums, stream);
  }
}

template void mincut_reduce<std::int32_t>(const MincutInput<std::int32_t>&, std::int32_t*, std::int32_t*,
                                          std::int64_t*, cudaStream_t);
template void mincut_reduce<std::int64_t>(const MincutInput<std::int64_t>&, std::int32_t*, std::int32_t*,
                                          std::int64_t*, cudaStream_t);

}  // namespace grabcut::cuda
