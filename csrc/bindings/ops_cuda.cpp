// CUDA kernels of the torchgrabcut operators: same schemas and checks as the CPU
// kernels in grabcut_op.cpp and maxflow_grid_op.cpp; each runs on the current
// stream of the input's device, with its scratch memory taken from PyTorch's
// caching allocator.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <cstdio>
#include <string>

#include "cuda/driver_cuda.h"
#include "cuda/maxflow_cuda.h"
#include "bindings/op_checks.h"

namespace torchgrabcut {
namespace {

at::Tensor workspace_tensor(std::size_t bytes, const at::Tensor& like) {
  return at::empty({static_cast<int64_t>(bytes)}, like.options().dtype(at::kByte));
}

std::string gib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

// The scratch memory of a grabcut batch. When it cannot be had, the error says how
// much this batch needs and how much the device has free, so that the caller can
// size the next batch; the process goes on (nothing was allocated).
at::Tensor grabcut_workspace(std::size_t bytes, const at::Tensor& like, const grabcut::cuda::BatchLayout& layout) {
  const int64_t pixels = layout.total_pixels();
  const auto fail = [&](std::size_t free_bytes, std::size_t total_bytes) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, "torchgrabcut.grabcut: this batch (", layout.batch(), " images, ",
                     pixels, " pixels) needs ", bytes, " bytes (", gib(bytes), ") of GPU scratch memory on ",
                     like.device(), ", but ", gib(free_bytes), " of its ", gib(total_bytes),
                     " are free; split the batch into smaller ones (the scratch grows with the number of pixels)");
  };
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  C10_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  // More than the whole device: fail without asking the allocator (which would
  // first free PyTorch's cached blocks and retry).
  if (bytes > total_bytes) fail(free_bytes, total_bytes);
  try {
    return workspace_tensor(bytes, like);
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
  if (layout.batch() == 0) return {mask.contiguous().clone(), model.detach().contiguous().clone()};
  // The scratch (tens of bytes per pixel) first: a batch too large for the device
  // fails before the copies below (a few bytes per pixel) are made.
  const std::size_t bytes = grabcut::cuda::grabcut_workspace_bytes(layout, args.options);
  at::Tensor workspace = grabcut_workspace(bytes, image, layout);
  const at::Tensor image_c = image.contiguous();
  at::Tensor mask_out = mask.contiguous().clone();
  at::Tensor model_out = model.detach().contiguous().clone();
  try {
    grabcut::cuda::grabcut_cuda(layout, image_c.data_ptr<uint8_t>(), mask_out.data_ptr<uint8_t>(),
                                model_out.data_ptr<double>(), workspace.data_ptr(), bytes, args.options,
                                at::cuda::getCurrentCUDAStream());
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
  return {mask_out, model_out};
}

std::tuple<at::Tensor, at::Tensor> maxflow_grid_cuda_kernel(const at::Tensor& terminal, const at::Tensor& nlinks) {
  check_maxflow_args(terminal, nlinks);
  const c10::cuda::CUDAGuard guard(terminal.device());
  const at::Tensor term_c = terminal.contiguous();
  const at::Tensor nl_c = grid_nlinks(nlinks);
  const int64_t batch = terminal.size(0);
  const int64_t h = terminal.size(1);
  const int64_t w = terminal.size(2);
  at::Tensor cut = at::empty({batch, h, w}, terminal.options().dtype(at::kByte));
  at::Tensor flows = at::zeros({batch}, terminal.options().dtype(at::kLong));
  if (batch == 0 || h == 0 || w == 0) {
    return {cut, flows};
  }
  grabcut::cuda::BatchedGridGraph graph;
  for (int64_t b = 0; b < batch; ++b) {
    graph.desc.push_back({b * h * w, static_cast<int32_t>(h), static_cast<int32_t>(w)});
  }
  graph.total_pixels = batch * h * w;
  graph.terminal = term_c.data_ptr<int32_t>();
  // nlinks is (B, 4, H, W); the solver wants one array per direction over the
  // whole batch, so lay the directions out first.
  const at::Tensor by_direction = nl_c.transpose(0, 1).contiguous();
  for (int d = 0; d < grabcut::kNumForwardDirections; ++d) {
    graph.nlink[d] = by_direction[d].data_ptr<int32_t>();
  }
  const std::size_t bytes = grabcut::cuda::maxflow_workspace_bytes(graph.desc);
  at::Tensor workspace = workspace_tensor(bytes, terminal);
  grabcut::cuda::maxflow_cuda(graph, cut.data_ptr<uint8_t>(), flows.data_ptr<int64_t>(), workspace.data_ptr(), bytes,
                              /*warm_start=*/false, at::cuda::getCurrentCUDAStream());
  return {cut, flows};
}

}  // namespace

TORCH_LIBRARY_IMPL(torchgrabcut, CUDA, m) {
  m.impl("grabcut", &grabcut_cuda_kernel);
  m.impl("maxflow_grid", &maxflow_grid_cuda_kernel);
}

}  // namespace torchgrabcut
