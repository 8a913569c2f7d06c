// Moving a list of images of different sizes into a padded device batch and their
// masks back out, each in one transfer: the host packs the images end to end, one
// copy crosses, and one kernel spreads them out (or gathers the masks together).
// One copy per image would cost a transfer's latency per image (~60 us each).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/batch.h"

namespace grabcut::cuda {

// Where image b lies in a packed buffer (image.offset: its first byte; its size),
// and whether its bytes are interleaved (pixel after pixel, three channels each: an
// (H, W, 3) array) or planar (channel after channel: a (3, H, W) tensor).
struct PackedImage {
  BatchImage image;
  std::int32_t interleaved = 0;
  std::int32_t pad = 0;
};
static_assert(sizeof(PackedImage) == 24, "PackedImage is shared by host and device");

// images[0..batch) (a device table; max_pixels: the largest height * width in it)
// describe images packed in `packed` (device); writes image b into out[((b * 3 + c) * pitch_h + y) * pitch_w + x] for the pixels
// of the image (its height and width are at most the pitch), leaving the rest of
// `out` as it is. Asynchronous on `stream`.
void spread_packed_images(const std::uint8_t* packed, const PackedImage* images, int batch, long long max_pixels,
                          int pitch_h, int pitch_w, std::uint8_t* out, cudaStream_t stream);

// The reverse for masks: mask b's pixels, masks[(b * pitch_h + y) * pitch_w + x], go
// row after row to out + images[b].offset (a device table). Asynchronous.
void gather_masks(const std::uint8_t* masks, const BatchImage* images, int batch, long long max_pixels, int pitch_h,
                  int pitch_w, std::uint8_t* out, cudaStream_t stream);

}  // namespace grabcut::cuda
