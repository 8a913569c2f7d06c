// torchgrabcut::mincut_grid on CUDA: the graph reduced to the solvers' form by tensor
// operations on the input's device (mincut_op.h, one host synchronisation for the
// checks), then the CUDA grid max-flow of maxflow_grid on the current stream.
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <optional>
#include <tuple>

#include "bindings/mincut_op.h"

namespace torchgrabcut {

namespace {

std::tuple<at::Tensor, at::Tensor> mincut_grid_cuda(const at::Tensor& source, const at::Tensor& sink,
                                                    const at::Tensor& edges,
                                                    const std::optional<at::Tensor>& reverse_edges) {
  const c10::cuda::CUDAGuard guard(source.device());
  return mincut_grid_tensor_ops(source, sink, edges, reverse_edges);
}

}  // namespace

TORCH_LIBRARY_IMPL(torchgrabcut, CUDA, m) { m.impl("mincut_grid", &mincut_grid_cuda); }

}  // namespace torchgrabcut
