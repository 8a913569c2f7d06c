// torchgrabcut::mincut_grid and mincut_grid3d: their schemas and CPU kernels (the
// CUDA kernels: mincut_op_cuda.cpp, mincut3d_op_cuda.cpp). The graph, the bounds and the
// reduction to the solvers' form: mincut_op.h. The schemas live here, as a fragment of
// the torchgrabcut library, beside the code they describe.
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <optional>
#include <stdexcept>
#include <tuple>

#include "bindings/mincut_op.h"
#include "core/maxflow.h"
#include "core/maxflow3d.h"

namespace torchgrabcut {
namespace {

std::tuple<at::Tensor, at::Tensor> mincut_grid_cpu(const at::Tensor& source, const at::Tensor& sink,
                                                   const at::Tensor& edges,
                                                   const std::optional<at::Tensor>& reverse_edges) {
  const MincutShape s = check_mincut_args(source, sink, edges, reverse_edges);
  if (s.batch == 0 || s.height == 0 || s.width == 0) return mincut_empty_result(s, source);
  const MincutGraph g = mincut_graph_cpu(s, source, sink, edges, reverse_edges);
  at::Tensor cut = at::empty({s.batch, s.height, s.width}, source.options().dtype(at::kByte));
  at::Tensor flows = at::empty({s.batch}, source.options().dtype(at::kLong));
  int64_t* flow = flows.data_ptr<int64_t>();
  const int64_t hw = s.height * s.width;
  // Graphs of a batch in parallel; one graph alone gets the solver's own threads.
  at::parallel_for(0, s.batch, 1, [&](int64_t begin, int64_t end) {
    // Each thread keeps its solver, and so its buffers (about 60 bytes a pixel of the
    // largest grid it solved), between calls: fresh ones cost a page fault every 4 KiB,
    // 5-10% of a call at 1 MP. Every solve is cold: nothing else carries over.
    thread_local grabcut::GridMaxflowSolver solver;
    for (int64_t b = begin; b < end; ++b) {
      grabcut::GridGraphView graph;
      graph.height = static_cast<int>(s.height);
      graph.width = static_cast<int>(s.width);
      graph.terminal = g.net.data_ptr<int32_t>() + b * hw;
      for (int d = 0; d < grabcut::kNumForwardDirections; ++d) graph.nlink[d] = g.nlink_ptr[4 * b + d];
      flow[b] = solver.solve(graph, cut.data_ptr<uint8_t>() + b * hw);
    }
  });
  return mincut_result(g, cut, flows);
}

// 3D, 6-connected, on the CPU: the same reduction (mincut3d_graph_cpu), the 3D solver.
std::tuple<at::Tensor, at::Tensor> mincut_grid3d_cpu(const at::Tensor& source, const at::Tensor& sink,
                                                     const at::Tensor& edges,
                                                     const std::optional<at::Tensor>& reverse_edges) {
  const Mincut3dShape s = check_mincut3d_args(source, sink, edges, reverse_edges);
  if (s.batch == 0 || s.depth == 0 || s.height == 0 || s.width == 0) {
    return {at::empty({s.batch, s.depth, s.height, s.width}, source.options().dtype(at::kBool)),
            at::zeros({s.batch}, source.options().dtype(at::kLong))};
  }
  const MincutGraph g = mincut3d_graph_cpu(s, source, sink, edges, reverse_edges);
  at::Tensor cut = at::empty({s.batch, s.depth, s.height, s.width}, source.options().dtype(at::kByte));
  at::Tensor flows = at::empty({s.batch}, source.options().dtype(at::kLong));
  int64_t* flow = flows.data_ptr<int64_t>();
  const int64_t n = s.depth * s.height * s.width;
  at::parallel_for(0, s.batch, 1, [&](int64_t begin, int64_t end) {
    thread_local grabcut::Grid3dMaxflowSolver solver;
    for (int64_t b = begin; b < end; ++b) {
      grabcut::Grid3dGraphView graph;
      graph.depth = static_cast<int>(s.depth);
      graph.height = static_cast<int>(s.height);
      graph.width = static_cast<int>(s.width);
      graph.terminal = g.net.data_ptr<int32_t>() + b * n;
      for (int d = 0; d < grabcut::kNumForwardDirections3d; ++d) graph.nlink[d] = g.nlink_ptr[3 * b + d];
      flow[b] = solver.solve(graph, cut.data_ptr<uint8_t>() + b * n);
    }
  });
  return mincut_result(g, cut, flows);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(torchgrabcut, m) {
  m.def("mincut_grid(Tensor source, Tensor sink, Tensor edges, Tensor? reverse_edges=None) -> (Tensor, Tensor)");
  m.def("mincut_grid3d(Tensor source, Tensor sink, Tensor edges, Tensor? reverse_edges=None) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(torchgrabcut, CPU, m) {
  m.impl("mincut_grid", &mincut_grid_cpu);
  m.impl("mincut_grid3d", &mincut_grid3d_cpu);
}

// Not differentiable: a bool cut and an integer flow value.
TORCH_LIBRARY_IMPL(torchgrabcut, Autograd, m) {
  m.impl("mincut_grid", torch::CppFunction::makeFallthrough());
  m.impl("mincut_grid3d", torch::CppFunction::makeFallthrough());
}

}  // namespace torchgrabcut
