// The batch description of cuda/batch.h: the layout's checks and the upload of its
// image table.
#include <algorithm>
#include <cstddef>
#include <string>

#include "cuda/batch.h"
#include "cuda/check.h"

namespace grabcut::cuda {
namespace {

// Table entries per launch of the upload kernel (2 KiB of parameters, within the
// 4 KiB every CUDA version accepts); longer tables take several launches.
constexpr int kUploadChunk = 128;

struct ImageTableChunk {
  BatchImage items[kUploadChunk];
  int start;
  int count;
};

__global__ void upload_table_kernel(ImageTableChunk chunk, BatchImage* images) {
  const int i = static_cast<int>(threadIdx.x);
  if (i < chunk.count) images[chunk.start + i] = chunk.items[i];
}

}  // namespace

void BatchLayout::check() const {
  if (pitch_height < 0 || pitch_width < 0) {
    throw std::invalid_argument("layout: expected a non-negative pitch, got " + std::to_string(pitch_height) +
                                " x " + std::to_string(pitch_width));
  }
  std::int64_t offset = 0;
  for (std::size_t b = 0; b < images.size(); ++b) {
    const BatchImage& im = images[b];
    if (im.height < 0 || im.width < 0 || im.height > pitch_height || im.width > pitch_width) {
      throw std::invalid_argument("layout: image " + std::to_string(b) + " is " + std::to_string(im.height) + " x " +
                                  std::to_string(im.width) + ", expected within the pitch " +
                                  std::to_string(pitch_height) + " x " + std::to_string(pitch_width));
    }
    if (im.offset != offset) {
      throw std::invalid_argument("layout: image " + std::to_string(b) + " at offset " + std::to_string(im.offset) +
                                  ", expected " + std::to_string(offset) + " (packed after the images before it)");
    }
    offset += im.pixels();
  }
}

StageBatch upload_batch(const BatchLayout& layout, BatchImage* table, cudaStream_t stream) {
  layout.check();
  StageBatch batch;
  batch.batch = layout.batch();
  batch.pitch_height = layout.pitch_height;
  batch.pitch_width = layout.pitch_width;
  batch.total_pixels = layout.total_pixels();
  batch.max_pixels = layout.max_pixels();
  batch.images = table;
  const std::vector<BatchImage>& images = layout.images;
  for (std::size_t start = 0; start < images.size(); start += kUploadChunk) {
    ImageTableChunk chunk{};
    chunk.start = static_cast<int>(start);
    chunk.count = static_cast<int>(std::min<std::size_t>(kUploadChunk, images.size() - start));
    for (int i = 0; i < chunk.count; ++i) chunk.items[i] = images[start + static_cast<std::size_t>(i)];
    upload_table_kernel<<<1, kUploadChunk, 0, stream>>>(chunk, table);
    GRABCUT_CUDA_CHECK_LAUNCH("upload_table_kernel");
  }
  return batch;
}

}  // namespace grabcut::cuda
