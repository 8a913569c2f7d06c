// torchgrabcut::mincut_grid and mincut_grid3d: their schemas and CPU kernels (the
// CUDA kernels: mincut_op_cuda.cpp, mincut3d_op_cuda.cpp). The graph, the bounds and the
// reduction to the solvers' form: mincut_op.h. The schemas live here, as a fragment of
// the torchgrabcut library, beside the code they describe.
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <atomic>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "bindings/mincut_op.h"
#include "core/maxflow.h"
#include "core/maxflow3d.h"

namespace torchgrabcut {
namespace {

// Each thread keeps its solver, and so its buffers (about 60 bytes a pixel of the
// largest grid it solved), between calls: fresh ones cost a page fault every 4 KiB,
// 5-10% of a call at 1 MP. Every solve is cold and keeps no flow for a warm start
// (no copy of the terminals): nothing carries over. A serial solve of a large grid
// runs in strips (set_serial_strips): the segmentation graphs users bring keep their
// flow local.
grabcut::GridMaxflowSolver& thread_solver() {
  thread_local grabcut::GridMaxflowSolver solver;
  solver.set_keep_flow(false);
  solver.set_serial_strips(true);
  return solver;
}

// Runs solve(b) for the graphs of a batch, in parallel (graphs on the threads), until a
// solver refuses one (std::invalid_argument: a value out of range, found while it
// filled its arrays); returns whether one did. The caller then names the first error
// in the words of the reducing path.
template <class Solve>
bool solve_until_refused(int64_t batch, const Solve& solve) {
  std::atomic<bool> refused{false};
  at::parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end && !refused.load(std::memory_order_relaxed); ++b) {
      try {
        solve(b);
      } catch (const std::invalid_argument&) {
        refused.store(true, std::memory_order_relaxed);
      }
    }
  });
  return refused.load();
}

// The pair form's call: symmetric int32 source, sink and edges read as they are (made
// contiguous and held here), and the outputs, a uint8 cut of `cut_shape` and a flow per
// graph, shared by the 2D and 3D paths below.
struct PairCall {
  at::Tensor src, snk, edg, cut, flows;
  PairCall(const at::Tensor& source, const at::Tensor& sink, const at::Tensor& edges, at::IntArrayRef cut_shape)
      : src(source.contiguous()),
        snk(sink.contiguous()),
        edg(edges.contiguous()),
        cut(at::empty(cut_shape, source.options().dtype(at::kByte))),
        flows(at::empty({cut_shape[0]}, source.options().dtype(at::kLong))) {}
  const int32_t* source() const { return src.data_ptr<int32_t>(); }
  const int32_t* sink() const { return snk.data_ptr<int32_t>(); }
  const int32_t* edges() const { return edg.data_ptr<int32_t>(); }
  std::tuple<at::Tensor, at::Tensor> result() const { return {cut.view(at::kBool), flows}; }
};

// Symmetric int32 input, the common case, needs no reduction: the solver reads the
// user's source, sink (its pair form) and edges as they are and checks the bounds as
// it fills its arrays, so the call reads the input once, where a checking pass that
// writes net terminals and a fill that reads them back read it twice. The solver
// returns the flow of the graph as given. If it finds a value out of range,
// find_first_error says which comes first in (graph, y, x) order, in the words of
// the other path.
std::tuple<at::Tensor, at::Tensor> mincut_grid_cpu_pair(const MincutShape& s, const at::Tensor& source,
                                                        const at::Tensor& sink, const at::Tensor& edges) {
  const PairCall call(source, sink, edges, {s.batch, s.height, s.width});
  int64_t* const flow = call.flows.data_ptr<int64_t>();
  uint8_t* const side = call.cut.data_ptr<uint8_t>();
  const int32_t* const sp = call.source();
  const int32_t* const tp = call.sink();
  const int32_t* const ep = call.edges();
  const int64_t hw = s.height * s.width, kk = s.neighbours;
  const bool refused = solve_until_refused(s.batch, [&](int64_t b) {
    grabcut::GridGraphView graph;
    graph.height = static_cast<int>(s.height);
    graph.width = static_cast<int>(s.width);
    graph.source = sp + b * hw;
    graph.sink = tp + b * hw;
    for (int k = 0; k < kk; ++k) graph.nlink[grabcut::mincut_solver_direction(k)] = ep + (b * kk + k) * hw;
    graph.four_connected = kk == 2;
    graph.max_node_sum = kMincutMaxNodeSum;
    flow[b] = thread_solver().solve(graph, side + b * hw);
  });
  if (refused) {
    const detail::MincutError first = detail::find_first_error<int32_t>(s, sp, tp, ep, nullptr);
    TORCH_INTERNAL_ASSERT(first.b != INT64_MAX, "mincut_grid: the solver's and the exact check disagree");
    detail::throw_mincut_error(first);
  }
  return call.result();
}

std::tuple<at::Tensor, at::Tensor> mincut_grid_cpu(const at::Tensor& source, const at::Tensor& sink,
                                                   const at::Tensor& edges,
                                                   const std::optional<at::Tensor>& reverse_edges) {
  const MincutShape s = check_mincut_args(source, sink, edges, reverse_edges);
  if (s.batch == 0 || s.height == 0 || s.width == 0) return mincut_empty_result(s, source);
  if (!s.asymmetric && source.scalar_type() == at::kInt) return mincut_grid_cpu_pair(s, source, sink, edges);
  const MincutGraph g = mincut_graph_cpu(s, source, sink, edges, reverse_edges);
  at::Tensor cut = at::empty({s.batch, s.height, s.width}, source.options().dtype(at::kByte));
  at::Tensor flows = at::empty({s.batch}, source.options().dtype(at::kLong));
  int64_t* flow = flows.data_ptr<int64_t>();
  const int64_t hw = s.height * s.width;
  // Graphs of a batch in parallel; one graph alone gets the solver's own threads.
  at::parallel_for(0, s.batch, 1, [&](int64_t begin, int64_t end) {
    grabcut::GridMaxflowSolver& solver = thread_solver();
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

grabcut::Grid3dMaxflowSolver& thread_solver3d() {
  thread_local grabcut::Grid3dMaxflowSolver solver;
  return solver;
}

// 3D symmetric int32 input, as in 2D: the solver reads source, sink and edges as they
// are (its pair form), checks them as it fills its arrays and returns the flow of the
// graph as given; find_first_error3d names the first error if it found one.
std::tuple<at::Tensor, at::Tensor> mincut_grid3d_cpu_pair(const Mincut3dShape& s, const at::Tensor& source,
                                                          const at::Tensor& sink, const at::Tensor& edges) {
  const PairCall call(source, sink, edges, {s.batch, s.depth, s.height, s.width});
  int64_t* const flow = call.flows.data_ptr<int64_t>();
  uint8_t* const side = call.cut.data_ptr<uint8_t>();
  const int32_t* const sp = call.source();
  const int32_t* const tp = call.sink();
  const int32_t* const ep = call.edges();
  const int64_t n = s.depth * s.height * s.width;
  const bool refused = solve_until_refused(s.batch, [&](int64_t b) {
    grabcut::Grid3dGraphView graph;
    graph.depth = static_cast<int>(s.depth);
    graph.height = static_cast<int>(s.height);
    graph.width = static_cast<int>(s.width);
    graph.source = sp + b * n;
    graph.sink = tp + b * n;
    for (int d = 0; d < grabcut::kNumForwardDirections3d; ++d) graph.nlink[d] = ep + (b * 3 + d) * n;
    graph.max_node_sum = kMincutMaxNodeSum;
    flow[b] = thread_solver3d().solve(graph, side + b * n);
  });
  if (refused) detail::throw_mincut_error(detail::find_first_error3d<int32_t>(s, sp, tp, ep, nullptr));
  return call.result();
}

// 3D, 6-connected, on the CPU: int64 or asymmetric input through the reduction
// (mincut3d_graph_cpu), then the 3D solver.
std::tuple<at::Tensor, at::Tensor> mincut_grid3d_cpu(const at::Tensor& source, const at::Tensor& sink,
                                                     const at::Tensor& edges,
                                                     const std::optional<at::Tensor>& reverse_edges) {
  const Mincut3dShape s = check_mincut3d_args(source, sink, edges, reverse_edges);
  if (s.batch == 0 || s.depth == 0 || s.height == 0 || s.width == 0) {
    return {at::empty({s.batch, s.depth, s.height, s.width}, source.options().dtype(at::kBool)),
            at::zeros({s.batch}, source.options().dtype(at::kLong))};
  }
  if (!s.asymmetric && source.scalar_type() == at::kInt) return mincut_grid3d_cpu_pair(s, source, sink, edges);
  const MincutGraph g = mincut3d_graph_cpu(s, source, sink, edges, reverse_edges);
  at::Tensor cut = at::empty({s.batch, s.depth, s.height, s.width}, source.options().dtype(at::kByte));
  at::Tensor flows = at::empty({s.batch}, source.options().dtype(at::kLong));
  int64_t* flow = flows.data_ptr<int64_t>();
  const int64_t n = s.depth * s.height * s.width;
  at::parallel_for(0, s.batch, 1, [&](int64_t begin, int64_t end) {
    grabcut::Grid3dMaxflowSolver& solver = thread_solver3d();
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
