// torchgrabcut::maxflow_grid on CPU: the core's grid max-flow on each graph of the
// batch (the schema: registration.cpp; the CUDA kernel: maxflow_grid_op_cuda.cpp).
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <stdexcept>

#include "bindings/op_checks.h"
#include "core/maxflow.h"

namespace torchgrabcut {
namespace {

std::tuple<at::Tensor, at::Tensor> maxflow_grid_cpu_kernel(const at::Tensor& terminal, const at::Tensor& nlinks) {
  const MaxflowGridArgs args = maxflow_grid_args(terminal, nlinks);
  at::parallel_for(0, args.batch, 1, [&](int64_t begin, int64_t end) {
    grabcut::GridMaxflowSolver solver;
    for (int64_t b = begin; b < end; ++b) {
      grabcut::GridGraphView graph;
      graph.height = static_cast<int>(args.height);
      graph.width = static_cast<int>(args.width);
      graph.terminal = args.terminal[b].data_ptr<int32_t>();
      for (int d = 0; d < grabcut::kNumForwardDirections; ++d) graph.nlink[d] = args.nlinks[b][d].data_ptr<int32_t>();
      try {
        args.flows[b] = solver.solve(graph, args.cut[b].data_ptr<uint8_t>());
      } catch (const std::invalid_argument& e) {
        // A capacity out of range, found by the solver: the message names the pixel, not the graph.
        TORCH_CHECK_VALUE(false, "graph ", b, " of the batch: ", e.what());
      }
    }
  });
  return {args.cut, args.flows};
}

}  // namespace

TORCH_LIBRARY_IMPL(torchgrabcut, CPU, m) { m.impl("maxflow_grid", &maxflow_grid_cpu_kernel); }

}  // namespace torchgrabcut
