// GrabCut's energy on the GPU: the batched twins of core/energy.cpp (beta's sum of
// squared differences, n-links, t-links). The per-pixel math is core/energy.h's,
// shared with the CPU, so capacities are bit-identical (built with -fmad=false).
#include <cub/block/block_reduce.cuh>

#include "core/energy.h"
#include "cuda/check.h"
#include "cuda/energy.h"
#include "cuda/gmm.h"

namespace grabcut::cuda {
namespace {

using detail::kChunk;
using detail::kThreads;

__device__ __forceinline__ int color_distance(const int* a, const int* b) { return squared_distance(a, b); }

// One block per (chunk of kChunk pixels, image): the int64 sum over the 4 backward
// neighbour pairs (left, up-left, up, up-right) of each pixel, as the CPU does.
__global__ void __launch_bounds__(kThreads) ssd_kernel(StageBatch batch, const std::uint8_t* images,
                                                       std::int64_t* ssd) {
  using BlockReduce = cub::BlockReduce<long long, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  const std::int64_t begin = detail::chunk_first_pixel();
  detail::for_each_block_image(batch.batch, [&](int b) {
    const BatchImage im = batch.images[b];
    const std::int64_t n = im.pixels();
    if (begin >= n) return;  // uniform over the block
    long long total = 0;
    for (int i = 0; i < detail::kPixelsPerThread; ++i) {
      const std::int64_t p = begin + static_cast<std::int64_t>(i) * kThreads + threadIdx.x;
      if (p >= n) break;
      const auto [y, x] = detail::pixel_pos(im, p);
      int c[3];
      int q[3];
      detail::load_color(batch, images, b, y, x, c);
      if (x > 0) {
        detail::load_color(batch, images, b, y, x - 1, q);
        total += color_distance(c, q);
      }
      if (x > 0 && y > 0) {
        detail::load_color(batch, images, b, y - 1, x - 1, q);
        total += color_distance(c, q);
      }
      if (y > 0) {
        detail::load_color(batch, images, b, y - 1, x, q);
        total += color_distance(c, q);
      }
      if (x + 1 < im.width && y > 0) {
        detail::load_color(batch, images, b, y - 1, x + 1, q);
        total += color_distance(c, q);
      }
    }
    const long long block_total = BlockReduce(temp).Sum(total);
    if (threadIdx.x == 0 && block_total != 0) {
      atomicAdd(reinterpret_cast<unsigned long long*>(ssd + b), static_cast<unsigned long long>(block_total));
    }
    __syncthreads();  // temp is reused by the next image of this block
  });
}

__global__ void __launch_bounds__(kThreads) nlinks_kernel(StageBatch batch, const std::uint8_t* images, double gamma,
                                                          const std::int64_t* ssd, std::int32_t* right,
                                                          std::int32_t* down_right, std::int32_t* down,
                                                          std::int32_t* down_left) {
  detail::for_each_thread_pixel(batch, [&](int b, const BatchImage& im, std::int64_t p, detail::PixelPos pos) {
    const double beta = beta_from_sum(ssd[b], im.height, im.width);
    const int y = pos.y;
    const int x = pos.x;
    const bool has_right = x + 1 < im.width;
    const bool has_down = y + 1 < im.height;
    const bool has_left = x > 0;
    int c[3];
    int q[3];
    detail::load_color(batch, images, b, y, x, c);
    std::int32_t v = 0;
    if (has_right) {
      detail::load_color(batch, images, b, y, x + 1, q);
      v = nlink_capacity(gamma, beta, color_distance(c, q), false);
    }
    right[im.offset + p] = v;
    v = 0;
    if (has_down && has_right) {
      detail::load_color(batch, images, b, y + 1, x + 1, q);
      v = nlink_capacity(gamma, beta, color_distance(c, q), true);
    }
    down_right[im.offset + p] = v;
    v = 0;
    if (has_down) {
      detail::load_color(batch, images, b, y + 1, x, q);
      v = nlink_capacity(gamma, beta, color_distance(c, q), false);
    }
    down[im.offset + p] = v;
    v = 0;
    if (has_down && has_left) {
      detail::load_color(batch, images, b, y + 1, x - 1, q);
      v = nlink_capacity(gamma, beta, color_distance(c, q), true);
    }
    down_left[im.offset + p] = v;
  });
}

__global__ void __launch_bounds__(kThreads) tlinks_kernel(StageBatch batch, const std::uint8_t* images,
                                                          const std::uint8_t* masks, int k, const ComponentEval* evals,
                                                          double lambda, std::int32_t* terminal) {
  __shared__ alignas(ComponentEval) unsigned char eval_storage[2 * kMaxComponents * sizeof(ComponentEval)];
  ComponentEval* shared_evals = reinterpret_cast<ComponentEval*>(eval_storage);
  const std::int64_t p = detail::thread_pixel();
  detail::for_each_block_image(batch.batch, [&](int b) {
    const BatchImage im = batch.images[b];
    const std::int64_t n = im.pixels();
    // Uniform over the block: whether this block has any pixel of an active image.
    if (!detail::is_active(batch, b) || detail::block_first_pixel() >= n) return;
    detail::load_evals(evals, b, k, shared_evals);
    __syncthreads();
    if (p < n) {
      const detail::PixelPos pos = detail::pixel_pos(im, p);
      int c[3];
      detail::load_color(batch, images, b, pos.y, pos.x, c);
      const std::uint8_t label = masks[detail::mask_index(batch, b, pos.y, pos.x)];
      terminal[im.offset + p] = terminal_capacity(label, lambda, shared_evals, shared_evals + k, k, c[0], c[1], c[2]);
    }
    __syncthreads();  // shared_evals is reloaded for the next image
  });
}

}  // namespace

void sum_squared_differences_cuda(const StageBatch& batch, const std::uint8_t* images, std::int64_t* ssd,
                                  cudaStream_t stream) {
  if (batch.batch <= 0) return;
  GRABCUT_CUDA_CHECK(cudaMemsetAsync(ssd, 0, sizeof(std::int64_t) * static_cast<std::size_t>(batch.batch), stream));
  if (!detail::has_work(batch)) return;
  ssd_kernel<<<detail::image_grid(batch, kChunk), kThreads, 0, stream>>>(batch, images, ssd);
  GRABCUT_CUDA_CHECK_LAUNCH("ssd_kernel");
}

void nlinks_cuda(const StageBatch& batch, const std::uint8_t* images, double gamma, const std::int64_t* ssd,
                 std::int32_t* const nlink[kNumForwardDirections], cudaStream_t stream) {
  if (!detail::has_work(batch)) return;
  nlinks_kernel<<<detail::image_grid(batch, kThreads), kThreads, 0, stream>>>(
      batch, images, gamma, ssd, nlink[kRight], nlink[kDownRight], nlink[kDown], nlink[kDownLeft]);
  GRABCUT_CUDA_CHECK_LAUNCH("nlinks_kernel");
}

void tlinks_cuda(const StageBatch& batch, const std::uint8_t* images, const std::uint8_t* masks, int k,
                 const double* models, double gamma, ComponentEval* evals, std::int32_t* terminal,
                 cudaStream_t stream) {
  check_components(k);
  if (!detail::has_work(batch)) return;
  prepare_evals_cuda(batch, k, models, evals, stream);
  tlinks_kernel<<<detail::image_grid(batch, kThreads), kThreads, 0, stream>>>(batch, images, masks, k, evals,
                                                                               lambda_of(gamma), terminal);
  GRABCUT_CUDA_CHECK_LAUNCH("tlinks_kernel");
}

}  // namespace grabcut::cuda
