#include "bindings/batch_transfer_cuda.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "cuda/batch_transfer.h"

namespace torchgrabcut {
namespace {

using grabcut::cuda::BatchImage;
using grabcut::cuda::BatchLayout;
using grabcut::cuda::PackedImage;

constexpr int64_t kAlign = 16;

int64_t align_up(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

at::Tensor pinned_bytes(int64_t n) { return at::empty({n}, at::TensorOptions().dtype(at::kByte).pinned_memory(true)); }

// The pitched (B, [3,] pitch_h, pitch_w) batch that these tensors are views of, when
// they are: on `device`, in one storage, tensor b the top-left (3, H_b, W_b) or
// (H_b, W_b) corner of slot b of a contiguous batch (the unbind(0) views of a
// (B, 3, H, W) tensor, or the masks torchgrabcut.grabcut makes for boxes on a GPU).
// Undefined otherwise.
at::Tensor pitched_batch(at::TensorList tensors, const at::Device& device, int64_t pitch_h, int64_t pitch_w) {
  if (tensors.empty()) return {};
  const at::Tensor& first = tensors[0];
  std::vector<int64_t> slot{pitch_h, pitch_w};
  if (first.dim() == 3) slot.insert(slot.begin(), first.size(0));
  const c10::DimVector slot_strides = c10::contiguous_strides(slot);
  const int64_t slot_numel = c10::multiply_integers(slot);
  for (size_t b = 0; b < tensors.size(); ++b) {
    const at::Tensor& t = tensors[b];
    if (t.device() != device || t.dim() != first.dim() || t.numel() == 0 || !t.is_alias_of(first) ||
        t.strides() != at::IntArrayRef(slot_strides) ||
        t.storage_offset() != first.storage_offset() + static_cast<int64_t>(b) * slot_numel) {
      return {};
    }
  }
  std::vector<int64_t> sizes{static_cast<int64_t>(tensors.size())};
  sizes.insert(sizes.end(), slot.begin(), slot.end());
  const int64_t end = first.storage_offset() + c10::multiply_integers(sizes);
  if (end * static_cast<int64_t>(first.element_size()) > static_cast<int64_t>(first.storage().nbytes())) return {};
  return first.as_strided(sizes, c10::contiguous_strides(sizes), first.storage_offset());
}

// The bytes of host tensor t ((3, H, W) image or (H, W) mask, any strides) at out,
// in the form `entry` says: rows copied as they lie where they are in order
// (numpy's (H, W, 3) rows, a crop of a larger array), else through a planar copy.
void pack_host(const at::Tensor& t, const PackedImage& entry, uint8_t* out) {
  const int64_t h = entry.image.height;
  const int64_t w = entry.image.width;
  if (h * w == 0) return;
  const bool image = t.dim() == 3;
  const int64_t row = (image ? 3 : 1) * w;
  const int64_t row_stride = image ? t.stride(1) : t.stride(0);
  if (entry.interleaved != 0 || (!image && t.stride(1) == 1)) {
    const auto* src = t.data_ptr<uint8_t>();
    for (int64_t y = 0; y < h; ++y) std::memcpy(out + y * row, src + y * row_stride, static_cast<size_t>(row));
  } else {
    const at::Tensor planar = t.contiguous();
    std::memcpy(out, planar.data_ptr<uint8_t>(), static_cast<size_t>(planar.numel()));
  }
}

// A (3, H, W) view of an (H, W, 3) array whose rows lie in order.
bool rows_interleaved(const at::Tensor& im) {
  return im.stride(0) == 1 && im.stride(2) == 3 && im.stride(1) >= 3 * im.size(2);
}

// The host-side plan of one upload: tables of what is packed where.
struct Upload {
  std::vector<PackedImage> images;  // 0 x 0 where image b is not on the host
  std::vector<PackedImage> masks;
  int64_t image_table = 0;  // byte offsets in the buffer
  int64_t mask_table = 0;
  int64_t bytes = 0;
  int64_t max_image_pixels = 0;
  int64_t max_mask_pixels = 0;
};

PackedImage plan_entry(const at::Tensor& t, bool image, int64_t& bytes, int64_t& max_pixels) {
  PackedImage e;
  if (!t.device().is_cpu()) return e;
  e.image.offset = bytes;
  e.image.height = static_cast<int32_t>(image ? t.size(1) : t.size(0));
  e.image.width = static_cast<int32_t>(image ? t.size(2) : t.size(1));
  e.interleaved = image && rows_interleaved(t) ? 1 : 0;
  max_pixels = std::max(max_pixels, e.image.pixels());
  bytes += align_up((image ? 3 : 1) * e.image.pixels());
  return e;
}

// The buffer: layout.images (the gather table), the image table, the mask table, then the data.
Upload plan_upload(at::TensorList images, at::TensorList masks) {
  Upload up;
  const auto count = static_cast<int64_t>(images.size());
  up.image_table = align_up(count * static_cast<int64_t>(sizeof(BatchImage)));
  up.mask_table = up.image_table + align_up(count * static_cast<int64_t>(sizeof(PackedImage)));
  up.bytes = up.mask_table + align_up(count * static_cast<int64_t>(sizeof(PackedImage)));
  for (size_t b = 0; b < images.size(); ++b)
    up.images.push_back(plan_entry(images[b], true, up.bytes, up.max_image_pixels));
  for (size_t b = 0; b < masks.size(); ++b)
    up.masks.push_back(plan_entry(masks[b], false, up.bytes, up.max_mask_pixels));
  return up;
}

// Device inputs not in one whole batch: copied one by one into their pitched slot.
void copy_device_inputs(at::TensorList inputs, const at::Tensor& pitched, const BatchLayout& layout, bool image) {
  for (size_t b = 0; b < inputs.size(); ++b) {
    if (inputs[b].device().is_cpu()) continue;
    const BatchImage& im = layout.images[b];
    at::Tensor slot = pitched[static_cast<int64_t>(b)];
    slot = image ? slot.narrow(1, 0, im.height).narrow(2, 0, im.width)
                 : slot.narrow(0, 0, im.height).narrow(1, 0, im.width);
    slot.copy_(inputs[b]);
  }
}

}  // namespace

BatchLayout batch_layout(const std::vector<int64_t>& heights, const std::vector<int64_t>& widths) {
  TORCH_CHECK_VALUE(heights.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()), "images: too many (",
                    heights.size(), ")");
  BatchLayout layout;
  for (size_t b = 0; b < heights.size(); ++b) {
    layout.pitch_height = std::max(layout.pitch_height, static_cast<int32_t>(heights[b]));
    layout.pitch_width = std::max(layout.pitch_width, static_cast<int32_t>(widths[b]));
    layout.add(static_cast<int32_t>(heights[b]), static_cast<int32_t>(widths[b]));
  }
  return layout;
}

DeviceBatch batch_to_device(BatchLayout layout, at::TensorList images, at::TensorList masks, const at::Device& device) {
  const c10::cuda::CUDAGuard guard(device);
  DeviceBatch batch;
  batch.layout = std::move(layout);
  const BatchLayout& lay = batch.layout;
  const int64_t count = lay.batch();
  const int64_t ph = lay.pitch_height;
  const int64_t pw = lay.pitch_width;
  bool ragged = false;
  bool host_images = false;
  bool host_masks = false;
  for (int64_t b = 0; b < count; ++b) {
    const BatchImage& im = lay.images[static_cast<size_t>(b)];
    ragged = ragged || im.height != ph || im.width != pw;
    host_images = host_images || images[static_cast<size_t>(b)].device().is_cpu();
    host_masks = host_masks || masks[static_cast<size_t>(b)].device().is_cpu();
  }
  const auto options = at::TensorOptions().dtype(at::kByte).device(device);
  // Padding is neither read nor written by the driver: zeroed only to hold no stale bytes.
  const auto pitched = [&](std::vector<int64_t> sizes) {
    return ragged ? at::zeros(sizes, options) : at::empty(sizes, options);
  };
  const at::Tensor whole_images = pitched_batch(images, device, ph, pw);
  batch.images = whole_images.defined() ? whole_images : pitched({count, 3, ph, pw});
  const at::Tensor whole_masks = pitched_batch(masks, device, ph, pw);
  batch.masks = whole_masks.defined() ? whole_masks.clone() : pitched({count, ph, pw});
  if (!whole_images.defined()) copy_device_inputs(images, batch.images, lay, true);
  if (!whole_masks.defined()) copy_device_inputs(masks, batch.masks, lay, false);
  // Host inputs cross packed; the table of the layout also serves the masks' way back to the host.
  if (!host_images && !host_masks) return batch;

  const Upload up = plan_upload(images, masks);
  at::Tensor host = pinned_bytes(up.bytes);
  auto* dst = host.data_ptr<uint8_t>();
  std::memcpy(dst, lay.images.data(), lay.images.size() * sizeof(BatchImage));
  std::memcpy(dst + up.image_table, up.images.data(), up.images.size() * sizeof(PackedImage));
  std::memcpy(dst + up.mask_table, up.masks.data(), up.masks.size() * sizeof(PackedImage));
  for (size_t b = 0; b < images.size(); ++b) {
    if (images[b].device().is_cpu()) pack_host(images[b], up.images[b], dst + up.images[b].image.offset);
    if (masks[b].device().is_cpu()) pack_host(masks[b], up.masks[b], dst + up.masks[b].image.offset);
  }
  batch.tables = at::empty({up.bytes}, options);
  batch.tables.copy_(host, /*non_blocking=*/true);  // the host allocator keeps `host` until the copy is done
  const auto* base = batch.tables.data_ptr<uint8_t>();
  const auto stream = at::cuda::getCurrentCUDAStream();
  const auto c = static_cast<int>(count);
  if (!whole_images.defined() && host_images) {
    grabcut::cuda::spread_packed(base, reinterpret_cast<const PackedImage*>(base + up.image_table), c,
                                 up.max_image_pixels, 3, static_cast<int>(ph), static_cast<int>(pw),
                                 batch.images.data_ptr<uint8_t>(), stream);
  }
  if (!whole_masks.defined() && host_masks) {
    grabcut::cuda::spread_packed(base, reinterpret_cast<const PackedImage*>(base + up.mask_table), c,
                                 up.max_mask_pixels, 1, static_cast<int>(ph), static_cast<int>(pw),
                                 batch.masks.data_ptr<uint8_t>(), stream);
  }
  return batch;
}

std::vector<at::Tensor> masks_from_device(const DeviceBatch& batch, at::TensorList images) {
  const BatchLayout& lay = batch.layout;
  const c10::cuda::CUDAGuard guard(batch.masks.device());
  const auto stream = at::cuda::getCurrentCUDAStream();
  const auto count = static_cast<size_t>(lay.batch());
  const bool host_outputs =
      std::any_of(images.begin(), images.end(), [](const at::Tensor& im) { return im.device().is_cpu(); });
  const bool device_outputs =
      std::any_of(images.begin(), images.end(), [](const at::Tensor& im) { return !im.device().is_cpu(); });
  // Every mask in a tensor of its own: an operator's outputs may not share storage
  // (torch.library's aliasing rule), so no views of one buffer are returned.
  std::vector<at::Tensor> out(count);
  if (device_outputs) {
    // A table of the layout and one destination pointer per mask crosses in one
    // copy; one kernel writes every device mask.
    const int64_t pointers = align_up(static_cast<int64_t>(count * sizeof(BatchImage)));
    const int64_t bytes = pointers + static_cast<int64_t>(count * sizeof(uint8_t*));
    at::Tensor host = pinned_bytes(bytes);
    std::memcpy(host.data_ptr<uint8_t>(), lay.images.data(), count * sizeof(BatchImage));
    std::vector<uint8_t*> destinations(count, nullptr);
    for (size_t b = 0; b < count; ++b) {
      if (images[b].device().is_cpu()) continue;
      const BatchImage& im = lay.images[b];
      out[b] = at::empty({im.height, im.width}, batch.masks.options());
      if (im.pixels() > 0) destinations[b] = out[b].data_ptr<uint8_t>();
    }
    std::memcpy(host.data_ptr<uint8_t>() + pointers, destinations.data(), count * sizeof(uint8_t*));
    at::Tensor table = at::empty({bytes}, batch.masks.options());
    table.copy_(host, /*non_blocking=*/true);  // the host allocator keeps `host` until the copy is done
    const auto* base = table.data_ptr<uint8_t>();
    grabcut::cuda::scatter_masks(batch.masks.data_ptr<uint8_t>(), reinterpret_cast<const BatchImage*>(base),
                                 reinterpret_cast<uint8_t* const*>(base + pointers), lay.batch(), lay.max_pixels(),
                                 lay.pitch_height, lay.pitch_width, stream);
  }
  if (host_outputs) {
    // Gathered end to end on the device, through pinned memory in one copy, then into
    // ordinary memory: pinned memory is scarce, and the caller keeps these masks.
    const int64_t total = lay.total_pixels();
    at::Tensor packed = at::empty({total}, batch.masks.options());
    grabcut::cuda::gather_masks(batch.masks.data_ptr<uint8_t>(),
                                reinterpret_cast<const BatchImage*>(batch.tables.data_ptr<uint8_t>()), lay.batch(),
                                lay.max_pixels(), lay.pitch_height, lay.pitch_width, packed.data_ptr<uint8_t>(),
                                stream);
    at::Tensor staging = pinned_bytes(total);
    staging.copy_(packed, /*non_blocking=*/true);
    stream.synchronize();
    const auto* src = staging.data_ptr<uint8_t>();
    for (size_t b = 0; b < count; ++b) {
      if (!images[b].device().is_cpu()) continue;
      const BatchImage& im = lay.images[b];
      out[b] = at::empty({im.height, im.width}, at::TensorOptions().dtype(at::kByte));
      if (im.pixels() > 0) std::memcpy(out[b].data_ptr<uint8_t>(), src + im.offset, static_cast<size_t>(im.pixels()));
    }
  }
  return out;
}

}  // namespace torchgrabcut
