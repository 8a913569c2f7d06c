// The kernels of cuda/batch_transfer.h: a grid of (blocks per image, images) blocks,
// each block striding over one image's pixels; enough blocks per image for the
// largest to take ~8 pixels a thread, within a cap on the whole grid (blocks of
// smaller images find nothing to do and end at once).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/batch_transfer.h"
#include "cuda/check.h"

namespace grabcut::cuda {
namespace {

using detail::kThreads;
constexpr long long kPixelsPerBlock = kThreads * 8;
constexpr long long kMaxBlocks = 1 << 16;

template <int kChannels>
__global__ void spread_kernel(const std::uint8_t* packed, const PackedImage* images, int batch, int pitch_h,
                              int pitch_w, std::uint8_t* out) {
  detail::for_each_block_image(batch, [&](int b) {
    const PackedImage packed_image = images[b];
    const BatchImage im = packed_image.image;
    const long long n = im.pixels();
    const std::uint8_t* src = packed + im.offset;
    const long long plane = static_cast<long long>(pitch_h) * pitch_w;
    std::uint8_t* dst = out + static_cast<long long>(b) * kChannels * plane;
    for (long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * kThreads) {
      const long long y = i / im.width;
      const long long x = i - y * im.width;
      const long long at = y * pitch_w + x;
#pragma unroll
      for (int c = 0; c < kChannels; ++c) {
        dst[c * plane + at] = packed_image.interleaved != 0 ? src[kChannels * i + c] : src[c * n + i];
      }
    }
  });
}

// This block's share of mask b of the pitched batch `masks`, row after row to dst.
__device__ void unpitch_mask(const std::uint8_t* masks, int b, const BatchImage& im, int pitch_h, int pitch_w,
                             std::uint8_t* dst) {
  const long long n = im.pixels();
  const std::uint8_t* src = masks + static_cast<long long>(b) * pitch_h * pitch_w;
  for (long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * kThreads) {
    const long long y = i / im.width;
    dst[i] = src[y * pitch_w + (i - y * im.width)];
  }
}

__global__ void gather_kernel(const std::uint8_t* masks, const BatchImage* images, int batch, int pitch_h, int pitch_w,
                              std::uint8_t* out) {
  detail::for_each_block_image(batch, [&](int b) {
    const BatchImage im = images[b];
    unpitch_mask(masks, b, im, pitch_h, pitch_w, out + im.offset);
  });
}

__global__ void scatter_kernel(const std::uint8_t* masks, const BatchImage* images, std::uint8_t* const* outs,
                               int batch, int pitch_h, int pitch_w) {
  detail::for_each_block_image(batch, [&](int b) {
    if (outs[b] != nullptr) unpitch_mask(masks, b, images[b], pitch_h, pitch_w, outs[b]);
  });
}

// image_grid, with at least one block per image and, as the kernels stride over
// an image's pixels, at most max(4, kMaxBlocks / images) of them.
dim3 copy_grid(int batch, long long max_pixels) {
  dim3 grid = detail::image_grid(batch, max_pixels, kPixelsPerBlock);
  grid.x = static_cast<unsigned>(
      std::clamp(static_cast<long long>(grid.x), 1LL, std::max(4LL, kMaxBlocks / static_cast<long long>(grid.y))));
  return grid;
}

}  // namespace

void spread_packed(const std::uint8_t* packed, const PackedImage* images, int batch, long long max_pixels, int channels,
                   int pitch_h, int pitch_w, std::uint8_t* out, cudaStream_t stream) {
  if (batch <= 0 || max_pixels <= 0) return;
  const dim3 grid = copy_grid(batch, max_pixels);
  if (channels == 3) {
    spread_kernel<3><<<grid, kThreads, 0, stream>>>(packed, images, batch, pitch_h, pitch_w, out);
  } else if (channels == 1) {
    spread_kernel<1><<<grid, kThreads, 0, stream>>>(packed, images, batch, pitch_h, pitch_w, out);
  } else {
    throw std::invalid_argument("spread_packed: expected 1 or 3 channels, got " + std::to_string(channels));
  }
  GRABCUT_CUDA_CHECK_LAUNCH("spread_kernel");
}

void gather_masks(const std::uint8_t* masks, const BatchImage* images, int batch, long long max_pixels, int pitch_h,
                  int pitch_w, std::uint8_t* out, cudaStream_t stream) {
  if (batch <= 0) return;
  gather_kernel<<<copy_grid(batch, max_pixels), kThreads, 0, stream>>>(masks, images, batch, pitch_h, pitch_w, out);
  GRABCUT_CUDA_CHECK_LAUNCH("gather_kernel");
}

void scatter_masks(const std::uint8_t* masks, const BatchImage* images, std::uint8_t* const* outs, int batch,
                   long long max_pixels, int pitch_h, int pitch_w, cudaStream_t stream) {
  if (batch <= 0 || max_pixels <= 0) return;
  scatter_kernel<<<copy_grid(batch, max_pixels), kThreads, 0, stream>>>(masks, images, outs, batch, pitch_h, pitch_w);
  GRABCUT_CUDA_CHECK_LAUNCH("scatter_kernel");
}

}  // namespace grabcut::cuda
