// torchgrabcut::maxflow_grid on CUDA: the same checks and outputs as the CPU
// kernel (maxflow_grid_op.cpp, op_checks.h), the whole batch in one maxflow_cuda
// call on the current stream of the input's device, with its scratch memory taken
// from PyTorch's caching allocator.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <tuple>

#include "bindings/op_checks.h"
#include "cuda/maxflow.h"

namespace torchgrabcut {
namespace {

std::tuple<at::Tensor, at::Tensor> maxflow_grid_cuda_kernel(const at::Tensor& terminal, const at::Tensor& nlinks) {
  const MaxflowGridArgs args = maxflow_grid_args(terminal, nlinks);
  if (args.batch == 0 || args.height == 0 || args.width == 0) return {args.cut, args.flows};
  const c10::cuda::CUDAGuard guard(terminal.device());
  const int64_t pixels = args.height * args.width;
  grabcut::cuda::BatchedGridGraph graph;
  for (int64_t b = 0; b < args.batch; ++b) {
    graph.desc.push_back({b * pixels, static_cast<int32_t>(args.height), static_cast<int32_t>(args.width)});
  }
  graph.total_pixels = args.batch * pixels;
  graph.terminal = args.terminal.data_ptr<int32_t>();
  // nlinks is (B, 4, H, W); the solver wants one array per direction over the
  // whole batch, so lay the directions out first.
  const at::Tensor by_direction = args.nlinks.transpose(0, 1).contiguous();
  for (int d = 0; d < grabcut::kNumForwardDirections; ++d) {
    graph.nlink[d] = by_direction[d].data_ptr<int32_t>();
  }
  const std::size_t bytes = grabcut::cuda::maxflow_workspace_bytes(graph.desc);
  at::Tensor workspace = at::empty({static_cast<int64_t>(bytes)}, terminal.options().dtype(at::kByte));
  grabcut::cuda::maxflow_cuda(graph, args.cut.data_ptr<uint8_t>(), args.flows.data_ptr<int64_t>(),
                              workspace.data_ptr(), bytes, /*warm_start=*/false, at::cuda::getCurrentCUDAStream());
  return {args.cut, args.flows};
}

}  // namespace

TORCH_LIBRARY_IMPL(torchgrabcut, CUDA, m) { m.impl("maxflow_grid", &maxflow_grid_cuda_kernel); }

}  // namespace torchgrabcut
