// torchgrabcut::grabcut on CUDA: the same checks and outputs as the CPU kernel
// (grabcut_op.cpp, op_checks.h), on the model's device: the images and masks, on
// the host or there, into one pitched batch (batch_transfer_cuda.h), one
// grabcut::cuda::grabcut call for the whole batch on the current stream with its
// scratch memory taken from PyTorch's caching allocator, and each mask back to
// its image's side.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings/batch_transfer_cuda.h"
#include "bindings/op_checks.h"
#include "cuda/driver.h"

namespace torchgrabcut {
namespace {

std::string gib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

// The scratch memory of a grabcut batch. When it cannot be had, the error says how
// much this batch needs and how much the device has free, so that the caller can
// size the next batch; the process goes on (nothing was allocated).
at::Tensor grabcut_workspace(std::size_t bytes, const at::Tensor& like, const grabcut::cuda::BatchLayout& layout) {
  const auto fail = [&](std::size_t free_bytes, std::size_t total_bytes) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, "torchgrabcut.grabcut: this batch (", layout.batch(), " images, ",
                     layout.total_pixels(), " pixels) needs ", bytes, " bytes (", gib(bytes),
                     ") of GPU scratch memory on ", like.device(), ", but ", gib(free_bytes), " of its ",
                     gib(total_bytes),
                     " are free; split the batch into smaller ones (the scratch grows with the number of pixels)");
  };
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  C10_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  // More than the whole device: fail without asking the allocator (which would
  // first free PyTorch's cached blocks and retry).
  if (bytes > total_bytes) fail(free_bytes, total_bytes);
  try {
    return at::empty({static_cast<int64_t>(bytes)}, like.options().dtype(at::kByte));
  } catch (const c10::OutOfMemoryError&) {
    C10_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    fail(free_bytes, total_bytes);
  }
  return {};  // not reached: fail throws
}

std::tuple<std::vector<at::Tensor>, at::Tensor> grabcut_cuda_kernel(at::TensorList images, at::TensorList masks,
                                                                    const at::Tensor& model, int64_t max_iter,
                                                                    int64_t components, double gamma, int64_t seed,
                                                                    bool init_model, bool freeze_model) {
  TORCH_CHECK_VALUE(model.is_cuda(), "model: expected a CUDA tensor (grabcut runs on the model's device; images ",
                    "and masks may also lie on the CPU), got ", model.device());
  const GrabCutArgs args = check_grabcut_args(images, masks, model, max_iter, components, gamma, seed, init_model,
                                              freeze_model, InputsOn::kModelDeviceOrHost);
  const c10::cuda::CUDAGuard guard(model.device());
  at::Tensor model_out = model.detach().contiguous().clone();
  grabcut::cuda::BatchLayout layout = batch_layout(args.heights, args.widths);
  if (layout.batch() == 0) return {std::vector<at::Tensor>{}, model_out};
  // The scratch (tens of bytes per pixel) first: a batch too large for the device
  // fails before the copies below (a few bytes per pixel) are made.
  const std::size_t bytes = grabcut::cuda::grabcut_workspace_bytes(layout, args.options);
  at::Tensor workspace = grabcut_workspace(bytes, model, layout);
  const DeviceBatch batch = batch_to_device(std::move(layout), images, masks, model.device());
  try {
    grabcut::cuda::grabcut(batch.layout, batch.images.data_ptr<uint8_t>(), batch.masks.data_ptr<uint8_t>(),
                           model_out.data_ptr<double>(), workspace.data_ptr(), bytes, args.options,
                           at::cuda::getCurrentCUDAStream(), grabcut::cuda::grabcut_schedule(batch.layout));
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
  return {masks_from_device(batch, images), model_out};
}

}  // namespace

TORCH_LIBRARY_IMPL(torchgrabcut, CUDA, m) { m.impl("grabcut", &grabcut_cuda_kernel); }

}  // namespace torchgrabcut
