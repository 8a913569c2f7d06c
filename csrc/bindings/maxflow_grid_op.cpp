// torchgrabcut::maxflow_grid on CPU: the core's grid max-flow on each graph of the
// batch (the schema: registration.cpp; the CUDA kernel: ops_cuda.cpp).
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <torch/torch.h>

#include "bindings/op_checks.h"
#include "core/maxflow.h"

namespace torchgrabcut {
namespace {

std::tuple<at::Tensor, at::Tensor> maxflow_grid_cpu_kernel(const at::Tensor& terminal, const at::Tensor& nlinks) {
  check_maxflow_args(terminal, nlinks);
  const at::Tensor term_c = terminal.contiguous();
  const at::Tensor nl_c = grid_nlinks(nlinks);
  const int64_t batch = terminal.size(0);
  const int64_t h = terminal.size(1);
  const int64_t w = terminal.size(2);
  at::Tensor cut = at::empty({batch, h, w}, terminal.options().dtype(at::kByte));
  at::Tensor flows = at::empty({batch}, terminal.options().dtype(at::kLong));
  at::parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    grabcut::GridMaxflowSolver solver;
    for (int64_t b = begin; b < end; ++b) {
      grabcut::GridGraphView graph;
      graph.height = static_cast<int>(h);
      graph.width = static_cast<int>(w);
      graph.terminal = term_c[b].data_ptr<int32_t>();
      for (int d = 0; d < grabcut::kNumForwardDirections; ++d) graph.nlink[d] = nl_c[b][d].data_ptr<int32_t>();
      flows[b] = solver.solve(graph, cut[b].data_ptr<uint8_t>());
    }
  });
  return {cut, flows};
}

}  // namespace

TORCH_LIBRARY_IMPL(torchgrabcut, CPU, m) { m.impl("maxflow_grid", &maxflow_grid_cpu_kernel); }

}  // namespace torchgrabcut
