// A batch of images of different sizes on the GPU: where image b lives (one
// descriptor, BatchImage, for the stages, the batch transfer and the max-flow,
// whose GridDesc is this type), and how a kernel is launched
// over all images at once (one grid shape, one way of opening a per-pixel kernel).
//
// Two layouts hold a batch. Images and masks are pitched: every image padded to one
// pitch_height x pitch_width (BatchLayout). Every per-pixel work array (components,
// terminals, n-links, cut) is packed: image b occupies entries offset_b ..
// offset_b + h_b * w_b - 1, row-major, offset_b = the pixels of the images before it
// (the layout of cuda/maxflow.h's BatchedGridGraph).
//
// Kernels over a batch run on image_grid: blockIdx.y picks the image (striding by
// gridDim.y, capped at kMaxGridY), blockIdx.x the block of its pixels; blocks past
// the end of a smaller image find nothing to do.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/common.h"

namespace grabcut::cuda {

// Image b of a batch: its size, and the index of its first entry in a packed
// buffer (in the buffer's elements).
struct BatchImage {
  std::int64_t offset = 0;
  std::int32_t height = 0;
  std::int32_t width = 0;
  GRABCUT_HD std::int64_t pixels() const { return static_cast<std::int64_t>(height) * width; }
};
static_assert(sizeof(BatchImage) == 16, "BatchImage is shared by host and device");

// A batch padded to one pitch: channel c of pixel (y, x) of image b at
// images[((b * 3 + c) * pitch_height + y) * pitch_width + x]; mask entry at
// masks[(b * pitch_height + y) * pitch_width + x]. Image b is images[b] in size (at
// most the pitch) and at images[b].offset in the packed arrays; pixels outside it
// are neither read nor written.
struct BatchLayout {
  std::int32_t pitch_height = 0;
  std::int32_t pitch_width = 0;
  std::vector<BatchImage> images;

  // Appends an image of this size, packed after the last one.
  void add(std::int32_t height, std::int32_t width) {
    BatchImage im;
    im.offset = total_pixels();
    im.height = height;
    im.width = width;
    images.push_back(im);
  }
  int batch() const { return static_cast<int>(images.size()); }
  // Entries of a packed per-pixel array: the pixels of all images.
  std::int64_t total_pixels() const { return images.empty() ? 0 : images.back().offset + images.back().pixels(); }
  std::int64_t max_pixels() const {
    std::int64_t most = 0;
    for (const BatchImage& im : images) most = im.pixels() > most ? im.pixels() : most;
    return most;
  }
  // Throws std::invalid_argument unless the pitch is non-negative, every image lies
  // within it, and the offsets are packed (as add() makes them).
  void check() const;
};

// What every launcher needs to know about a batch. Built on the host (no device
// access); `images` points at the device copy of the layout's image table.
struct StageBatch {
  int batch = 0;
  std::int32_t pitch_height = 0;
  std::int32_t pitch_width = 0;
  std::int64_t total_pixels = 0;  // packed
  std::int64_t max_pixels = 0;    // largest h * w
  const BatchImage* images = nullptr;
  const std::int32_t* active = nullptr;  // null: every image is active
};

// Checks the layout, writes its image table into `table` (device, batch entries;
// through kernel parameters: no host buffer has to outlive the call, and it works
// inside CUDA graph capture) and returns the batch description.
StageBatch upload_batch(const BatchLayout& layout, BatchImage* table, cudaStream_t stream);

// ---- launch helpers ----

namespace detail {

constexpr int kThreads = 256;
// Pixels per block of the reduction kernels: with 4096 pixels a block's sums of
// colours and colour products (at most 4096 * 255 * 255) fit in uint32 shared
// accumulators; they are then added into the int64 totals.
constexpr int kPixelsPerThread = 16;
constexpr int kChunk = kThreads * kPixelsPerThread;
constexpr int kMaxGridY = 65535;

// Blocks of per_block threads covering `count` items (one a thread).
inline unsigned blocks_for(std::int64_t count, std::int64_t per_block) {
  return static_cast<unsigned>((count + per_block - 1) / per_block);
}

// The grid over a batch (see the file comment): x covers the largest image's
// pixels, per_block a block; y the images.
inline dim3 image_grid(int batch, std::int64_t max_pixels, std::int64_t per_block) {
  const std::int64_t blocks = (max_pixels + per_block - 1) / per_block;
  if (blocks > std::numeric_limits<std::int32_t>::max()) throw std::invalid_argument("image: too many pixels");
  return dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(batch < kMaxGridY ? batch : kMaxGridY), 1);
}
inline dim3 image_grid(const StageBatch& batch, std::int64_t per_block) {
  return image_grid(batch.batch, batch.max_pixels, per_block);
}

inline bool has_work(const StageBatch& batch) { return batch.batch > 0 && batch.max_pixels > 0; }

#if defined(__CUDACC__)
// Runs body(b) for each image b of this block on image_grid: blockIdx.y, then every
// gridDim.y-th. A body's `return` moves on to the next image.
template <typename Body>
__device__ __forceinline__ void for_each_block_image(int batch, Body&& body) {
  for (int b = static_cast<int>(blockIdx.y); b < batch; b += static_cast<int>(gridDim.y)) body(b);
}

// The first pixel of this block in a launch of one pixel a thread; this thread's.
__device__ __forceinline__ std::int64_t block_first_pixel() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x;
}
__device__ __forceinline__ std::int64_t thread_pixel() { return block_first_pixel() + threadIdx.x; }
// The first pixel of this block in a launch of kChunk pixels a block; this
// thread's r-th (r < kPixelsPerThread) is chunk_first_pixel() + r * kThreads + threadIdx.x.
__device__ __forceinline__ std::int64_t chunk_first_pixel() { return static_cast<std::int64_t>(blockIdx.x) * kChunk; }

// Row and column of pixel p (row-major, p < im.pixels()).
struct PixelPos {
  int y;
  int x;
};
__device__ __forceinline__ PixelPos pixel_pos(const BatchImage& im, std::int64_t p) {
  const int y = static_cast<int>(p / im.width);
  return {y, static_cast<int>(p - static_cast<std::int64_t>(y) * im.width)};
}

// Runs body(b, im, p, pos) for this thread's pixel p of each image of this block in
// a launch of one pixel a thread on image_grid(batch, blockDim.x), where p exists.
template <typename Body>
__device__ __forceinline__ void for_each_thread_pixel(const StageBatch& batch, Body&& body) {
  const std::int64_t p = thread_pixel();
  for_each_block_image(batch.batch, [&](int b) {
    const BatchImage im = batch.images[b];
    if (p < im.pixels()) body(b, im, p, pixel_pos(im, p));
  });
}

__device__ __forceinline__ bool is_active(const StageBatch& batch, int b) {
  return batch.active == nullptr || batch.active[b] != 0;
}

// Index of channel c of pixel (y, x) of image b in the pitched image buffer.
__device__ __forceinline__ std::int64_t image_index(const StageBatch& batch, int b, int c, int y, int x) {
  return ((static_cast<std::int64_t>(b) * 3 + c) * batch.pitch_height + y) * batch.pitch_width + x;
}
__device__ __forceinline__ std::int64_t mask_index(const StageBatch& batch, int b, int y, int x) {
  return (static_cast<std::int64_t>(b) * batch.pitch_height + y) * batch.pitch_width + x;
}
__device__ __forceinline__ void load_color(const StageBatch& batch, const std::uint8_t* images, int b, int y, int x,
                                           int color[3]) {
  const std::int64_t plane = static_cast<std::int64_t>(batch.pitch_height) * batch.pitch_width;
  const std::int64_t i = image_index(batch, b, 0, y, x);
  color[0] = images[i];
  color[1] = images[i + plane];
  color[2] = images[i + 2 * plane];
}
#endif

}  // namespace detail

}  // namespace grabcut::cuda
