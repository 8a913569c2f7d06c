// torchgrabcut::grabcut on CUDA: the same checks and outputs as the CPU kernel
// (grabcut_op.cpp, op_checks.h), one grabcut_cuda call for the whole batch on the
// current stream of the input's device, with its scratch memory taken from
// PyTorch's caching allocator.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <tuple>

#include "bindings/op_checks.h"
#include "cuda/driver_cuda.h"

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

std::tuple<at::Tensor, at::Tensor> grabcut_cuda_kernel(const at::Tensor& image, const at::Tensor& mask,
                                                       const at::Tensor& model, at::IntArrayRef sizes,
                                                       int64_t max_iter, int64_t components, double gamma,
                                                       int64_t seed, bool init_model, bool freeze_model) {
  const GrabCutArgs args =
      check_grabcut_args(image, mask, model, sizes, max_iter, components, gamma, seed, init_model, freeze_model);
  const c10::cuda::CUDAGuard guard(image.device());
  grabcut::cuda::BatchLayout layout;
  layout.pitch_height = static_cast<int32_t>(image.size(2));
  layout.pitch_width = static_cast<int32_t>(image.size(3));
  for (size_t b = 0; b < args.heights.size(); ++b) {
    layout.add(static_cast<int32_t>(args.heights[b]), static_cast<int32_t>(args.widths[b]));
  }
  if (layout.batch() == 0) return grabcut_outputs(mask, model);
  // The scratch (tens of bytes per pixel) first: a batch too large for the device
  // fails before the copies below (a few bytes per pixel) are made.
  const std::size_t bytes = grabcut::cuda::grabcut_workspace_bytes(layout, args.options);
  at::Tensor workspace = grabcut_workspace(bytes, image, layout);
  const at::Tensor image_c = image.contiguous();
  at::Tensor mask_out;
  at::Tensor model_out;
  std::tie(mask_out, model_out) = grabcut_outputs(mask, model);
  try {
    grabcut::cuda::grabcut_cuda(layout, image_c.data_ptr<uint8_t>(), mask_out.data_ptr<uint8_t>(),
                                model_out.data_ptr<double>(), workspace.data_ptr(), bytes, args.options,
                                at::cuda::getCurrentCUDAStream());
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
  return {mask_out, model_out};
}

}  // namespace

TORCH_LIBRARY_IMPL(torchgrabcut, CUDA, m) { m.impl("grabcut", &grabcut_cuda_kernel); }

}  // namespace torchgrabcut
