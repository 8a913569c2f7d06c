// The operators that move a list of host images into a padded GPU batch and the
// masks back (torchgrabcut.grabcut on a list of numpy images bound for a GPU; see
// cuda/batch_copy.h). Each call packs everything into one pinned buffer and makes
// one transfer, in C++ and without the GIL, so that the cost does not grow with a
// few tensor operations per image: each would be a trip through the dispatcher
// and a chance for another Python thread to hold the GIL the caller needs next.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "cuda/batch_copy.h"

namespace torchgrabcut {
namespace {

using grabcut::cuda::BatchImage;
using grabcut::cuda::BatchLayout;
using grabcut::cuda::PackedImage;

constexpr int64_t kAlign = 16;

int64_t align_up(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

at::Tensor pinned_bytes(int64_t n) {
  return at::empty({n}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
}

// A (3, H, W) view of an (H, W, 3) array whose rows are each W * 3 bytes in a row:
// copied row by row as it is (interleaved), without a transpose on the host.
bool rows_interleaved(const at::Tensor& im) {
  return im.stride(0) == 1 && im.stride(2) == 3 && im.stride(1) >= 3 * im.size(2);
}

// Copies the host images (uint8 (3, H, W) CPU tensors, any strides) into batch[b, :,
// :H, :W] of the uint8 (B, 3, PH, PW) contiguous CUDA tensor `batch`, on the current
// stream; the rest of `batch` is left as it is. Returns once the host buffers may
// change (the images were copied to pinned memory).
void upload_images_cuda(const at::Tensor& batch, at::TensorList images) {
  TORCH_CHECK_VALUE(batch.is_cuda() && batch.scalar_type() == at::kByte && batch.dim() == 4 && batch.size(1) == 3 &&
                        batch.is_contiguous(),
                    "batch: expected a contiguous uint8 CUDA tensor of shape (B, 3, H, W), got ", batch.scalar_type(),
                    " ", batch.sizes(), " on ", batch.device());
  const int64_t count = batch.size(0);
  TORCH_CHECK_VALUE(static_cast<int64_t>(images.size()) == count, "images: expected one image per batch entry (",
                    count, "), got ", images.size());
  TORCH_CHECK_VALUE(count <= std::numeric_limits<int32_t>::max(), "images: too many (", count, ")");
  const int64_t ph = batch.size(2);
  const int64_t pw = batch.size(3);
  std::vector<PackedImage> table(static_cast<size_t>(count));
  int64_t used = align_up(count * static_cast<int64_t>(sizeof(PackedImage)));
  int64_t max_pixels = 0;
  for (int64_t b = 0; b < count; ++b) {
    const at::Tensor& im = images[static_cast<size_t>(b)];
    TORCH_CHECK_VALUE(im.device().is_cpu() && im.scalar_type() == at::kByte && im.dim() == 3 && im.size(0) == 3 &&
                          im.size(1) <= ph && im.size(2) <= pw,
                      "images[", b, "]: expected a uint8 CPU tensor of shape (3, H, W) with H <= ", ph, " and W <= ",
                      pw, ", got ", im.scalar_type(), " ", im.sizes(), " on ", im.device());
    PackedImage& e = table[static_cast<size_t>(b)];
    e.image.offset = used;
    e.image.height = static_cast<int32_t>(im.size(1));
    e.image.width = static_cast<int32_t>(im.size(2));
    e.interleaved = rows_interleaved(im) ? 1 : 0;
    max_pixels = std::max(max_pixels, e.image.pixels());
    used += align_up(3 * e.image.pixels());
  }
  at::Tensor host = pinned_bytes(used);
  auto* dst = host.data_ptr<uint8_t>();
  std::memcpy(dst, table.data(), table.size() * sizeof(PackedImage));
  for (int64_t b = 0; b < count; ++b) {
    const at::Tensor& im = images[static_cast<size_t>(b)];
    const PackedImage& e = table[static_cast<size_t>(b)];
    if (e.image.pixels() == 0) continue;
    uint8_t* out = dst + e.image.offset;
    if (e.interleaved != 0) {
      const auto* src = im.data_ptr<uint8_t>();
      const int64_t row = 3 * int64_t{e.image.width};
      for (int64_t y = 0; y < e.image.height; ++y) std::memcpy(out + y * row, src + y * im.stride(1), row);
    } else {
      const at::Tensor planar = im.contiguous();
      std::memcpy(out, planar.data_ptr<uint8_t>(), 3 * static_cast<size_t>(e.image.pixels()));
    }
  }
  const c10::cuda::CUDAGuard guard(batch.device());
  at::Tensor device = at::empty({used}, batch.options());
  device.copy_(host, /*non_blocking=*/true);  // the host allocator keeps `host` until the copy is done
  const auto* base = device.data_ptr<uint8_t>();
  grabcut::cuda::spread_packed_images(base, reinterpret_cast<const PackedImage*>(base), static_cast<int>(count),
                                      max_pixels, static_cast<int>(ph), static_cast<int>(pw),
                                      batch.data_ptr<uint8_t>(), at::cuda::getCurrentCUDAStream());
}

// Mask b of the uint8 (B, PH, PW) CUDA tensor `masks`, cut to sizes[2b] x sizes[2b+1],
// for every b, end to end in a uint8 CPU tensor (ordinary memory). Synchronises the
// current stream.
at::Tensor download_masks_cuda(const at::Tensor& masks, at::IntArrayRef sizes) {
  TORCH_CHECK_VALUE(masks.is_cuda() && masks.scalar_type() == at::kByte && masks.dim() == 3 && masks.is_contiguous(),
                    "masks: expected a contiguous uint8 CUDA tensor of shape (B, H, W), got ", masks.scalar_type(),
                    " ", masks.sizes(), " on ", masks.device());
  const int64_t count = masks.size(0);
  TORCH_CHECK_VALUE(static_cast<int64_t>(sizes.size()) == 2 * count, "sizes: expected 2 * B = ", 2 * count,
                    " values (h, w per mask), got ", sizes.size());
  TORCH_CHECK_VALUE(count <= std::numeric_limits<int32_t>::max(), "masks: too many (", count, ")");
  // The masks end to end: the packed layout of the batch.
  BatchLayout layout;
  layout.pitch_height = static_cast<int32_t>(masks.size(1));
  layout.pitch_width = static_cast<int32_t>(masks.size(2));
  for (int64_t b = 0; b < count; ++b) {
    const int64_t h = sizes[static_cast<size_t>(2 * b)];
    const int64_t w = sizes[static_cast<size_t>(2 * b + 1)];
    TORCH_CHECK_VALUE(h >= 0 && h <= masks.size(1) && w >= 0 && w <= masks.size(2), "sizes: mask ", b, " is ", h,
                      " x ", w, ", outside the batch's ", masks.size(1), " x ", masks.size(2));
    layout.add(static_cast<int32_t>(h), static_cast<int32_t>(w));
  }
  const std::vector<BatchImage>& table = layout.images;
  const int64_t total = layout.total_pixels();
  at::Tensor result = at::empty({total}, at::TensorOptions().dtype(at::kByte));
  if (total == 0) return result;
  const c10::cuda::CUDAGuard guard(masks.device());
  const auto stream = at::cuda::getCurrentCUDAStream();
  const auto table_bytes = static_cast<int64_t>(table.size() * sizeof(BatchImage));
  at::Tensor table_host = pinned_bytes(table_bytes);
  std::memcpy(table_host.data_ptr<uint8_t>(), table.data(), static_cast<size_t>(table_bytes));
  at::Tensor table_dev = at::empty({table_bytes}, masks.options());
  table_dev.copy_(table_host, /*non_blocking=*/true);
  at::Tensor packed = at::empty({total}, masks.options());
  grabcut::cuda::gather_masks(masks.data_ptr<uint8_t>(), reinterpret_cast<const BatchImage*>(table_dev.data_ptr()),
                              static_cast<int>(count), layout.max_pixels(), static_cast<int>(masks.size(1)),
                              static_cast<int>(masks.size(2)), packed.data_ptr<uint8_t>(), stream);
  at::Tensor staging = pinned_bytes(total);
  staging.copy_(packed, /*non_blocking=*/true);
  stream.synchronize();
  std::memcpy(result.data_ptr<uint8_t>(), staging.data_ptr<uint8_t>(), static_cast<size_t>(total));
  return result;
}

}  // namespace

TORCH_LIBRARY_IMPL(torchgrabcut, CUDA, m) {
  m.impl("upload_images_", &upload_images_cuda);
  m.impl("download_masks", &download_masks_cuda);
}

}  // namespace torchgrabcut
