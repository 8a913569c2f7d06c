// The batch transfer: images and masks of different sizes between the host and a
// pitched device batch (cuda/batch.h), each direction in one copy. The host packs
// the images end to end into one buffer, one copy crosses, and one kernel spreads
// them out into the pitch; masks come back the other way, gathered end to end by
// one kernel before the copy. One copy per image would cost a transfer's latency per
// image (~60 us each).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/batch.h"

namespace grabcut::cuda {

// Where image b lies in a packed buffer (image.offset: its first byte; its size; 0
// x 0 for an image that is not in the buffer), and whether its bytes are
// interleaved (pixel after pixel, the channels of each together: an (H, W, 3)
// array) or planar (channel after channel: a (3, H, W) tensor).
struct PackedImage {
  BatchImage image;
  std::int32_t interleaved = 0;
  std::int32_t pad = 0;
};
static_assert(sizeof(PackedImage) == 24, "PackedImage is shared by host and device");

// images[0..batch) (a device table; max_pixels: the largest height * width in it)
// describe images of `channels` (1 or 3) channels packed in `packed` (device); writes
// channel c of pixel (y, x) of image b to out[((b * channels + c) * pitch_h + y) * pitch_w + x]
// (its height and width are at most the pitch), leaving the rest of `out` as it is.
// Asynchronous on `stream`. Throws std::invalid_argument for another channel count.
void spread_packed(const std::uint8_t* packed, const PackedImage* images, int batch, long long max_pixels, int channels,
                   int pitch_h, int pitch_w, std::uint8_t* out, cudaStream_t stream);

// The reverse for masks: mask b's pixels, masks[(b * pitch_h + y) * pitch_w + x], go
// row after row to out + images[b].offset (a device table). Asynchronous.
void gather_masks(const std::uint8_t* masks, const BatchImage* images, int batch, long long max_pixels, int pitch_h,
                  int pitch_w, std::uint8_t* out, cudaStream_t stream);

// The reverse for masks with a destination each: mask b's pixels go row after row to
// outs[b] (a device table of device pointers; null: mask b stays where it is).
// `images` is a device table; its offsets are not read. Asynchronous.
void scatter_masks(const std::uint8_t* masks, const BatchImage* images, std::uint8_t* const* outs, int batch,
                   long long max_pixels, int pitch_h, int pitch_w, cudaStream_t stream);

}  // namespace grabcut::cuda
