// The batch transfer on the torch side (kernels: cuda/batch_transfer.h): the
// images and masks of one grabcut call, each lying on the host or on the device,
// into the pitched device batch the CUDA driver takes, and the masks back, each to
// its image's side. Host data crosses in one pinned copy per direction, packed and
// unpacked in C++ without the GIL, so that the cost does not grow with a few tensor
// operations per image (each a trip through the dispatcher and a chance for another
// Python thread to hold the GIL the caller needs next).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "cuda/batch.h"

namespace torchgrabcut {

// One call's batch on the device.
struct DeviceBatch {
  grabcut::cuda::BatchLayout layout;
  at::Tensor images;          // (B, 3, PH, PW) uint8, the pitch of layout
  at::Tensor masks;           // (B, PH, PW) uint8: copies of the caller's masks, for the driver to update
  at::Tensor tables;  // with host inputs: device copy of the packed tables (layout.images first)
};

// The layout of images of these sizes: pitched to the largest height and width, packed in order.
grabcut::cuda::BatchLayout batch_layout(const std::vector<int64_t>& heights, const std::vector<int64_t>& widths);

// images[b] (uint8 (3, H, W)) and masks[b] (uint8 (H, W)), each on the host or on
// `device`, into a DeviceBatch on the current stream. Images and masks on the device
// that are the top-left corners of the slots of one batch padded to the largest
// height and width (the unbind(0) views of a (B, 3, H, W) tensor are the simplest
// case) go in without a copy of the images and with one copy of the masks. Returns
// once host memory may change.
DeviceBatch batch_to_device(grabcut::cuda::BatchLayout layout, at::TensorList images, at::TensorList masks,
                            const at::Device& device);

// Mask b of the batch as a contiguous (H_b, W_b) uint8 tensor of its own on images[b]'s
// side: the host's (in one copy for all, which synchronises the stream) or the device's.
std::vector<at::Tensor> masks_from_device(const DeviceBatch& batch, at::TensorList images);

}  // namespace torchgrabcut
