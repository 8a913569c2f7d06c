// The GrabCut loop for a batch of images on the GPU: the CUDA twin of
// core/driver.h, stage for stage, with the same results.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/driver.h"

namespace grabcut::cuda {

struct ImageExtent {
  std::int32_t height = 0;
  std::int32_t width = 0;
};

// A batch of images padded to one pitch: channel c of pixel (y, x) of image b at
// images[((b * 3 + c) * pitch_height + y) * pitch_width + x]; mask entry at
// masks[(b * pitch_height + y) * pitch_width + x]; image b is extents[b] in size
// (at most the pitch); pixels outside it are neither read nor written.
struct BatchLayout {
  std::int32_t pitch_height = 0;
  std::int32_t pitch_width = 0;
  std::vector<ImageExtent> extents;
  int batch() const { return static_cast<int>(extents.size()); }
};

// Device scratch bytes grabcut_cuda needs for this batch and these options.
std::size_t grabcut_workspace_bytes(const BatchLayout& layout, const GrabCutOptions& options);

// Runs GrabCut on every image of the batch on `stream`, like grabcut_cpu on each.
// images, masks (in/out) and models (in/out, batch x 2 * components x
// kParamsPerComponent doubles) are device pointers. The caller has validated the
// inputs (labels 0..3, both classes present when init_model, usable models);
// the kernels never read or write outside the buffers whatever the data.
void grabcut_cuda(const BatchLayout& layout, const std::uint8_t* images, std::uint8_t* masks, double* models,
                  void* workspace, std::size_t workspace_bytes, const GrabCutOptions& options, cudaStream_t stream);

}  // namespace grabcut::cuda
