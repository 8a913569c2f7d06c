// torchgrabcut::mincut_grid on CUDA, on the current stream of the input's device:
// 1. the inputs made contiguous (a copy only where they are not);
// 2. one kernel (cuda/mincut_reduce.cu) reduces the whole batch to the solver's form,
//    every pixel through grabcut::mincut_reduce_pixel (core/mincut_pixel.h), the
//    function the CPU kernel runs: net terminals, the n-links already in the layout
//    the CUDA max-flow reads (one array per solver direction over the batch), each
//    graph's offset and one error flag for the batch;
// 3. one host synchronisation reads the flag; if it is set, the host check of the CPU
//    kernel runs on host copies (mincut_graph_cpu), so the message names the same
//    graph, pixel and value as on the CPU;
// 4. the CUDA grid max-flow (cuda/maxflow.h) solves the batch; the flow of each graph
//    is its flow plus the offset (halved for the asymmetric form), on the device.
// The solver is called directly, not through the maxflow_grid op: the kernel's
// n-links are within its bounds and 0 off the grid by construction, which that op
// would check again (two more host synchronisations) and copy.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>

#include "bindings/mincut_op.h"
#include "core/maxflow.h"
#include "cuda/maxflow.h"
#include "cuda/mincut_reduce.h"

namespace torchgrabcut {

namespace {

// The kernel found a capacity or a node sum out of bounds: the CPU kernel's checks on
// host copies raise the message they raise on the CPU.
[[noreturn]] void raise_host_error(const MincutShape& s, const at::Tensor& source, const at::Tensor& sink,
                                   const at::Tensor& edges, const std::optional<at::Tensor>& reverse) {
  std::optional<at::Tensor> reverse_host;
  if (reverse.has_value()) reverse_host = reverse->cpu();
  mincut_graph_cpu(s, source.cpu(), sink.cpu(), edges.cpu(), reverse_host);
  TORCH_INTERNAL_ASSERT(false, "mincut_grid: the device check and the host check disagree");
}

std::tuple<at::Tensor, at::Tensor> mincut_grid_cuda(const at::Tensor& source, const at::Tensor& sink,
                                                    const at::Tensor& edges,
                                                    const std::optional<at::Tensor>& reverse_edges) {
  const MincutShape s = check_mincut_args(source, sink, edges, reverse_edges);
  if (s.batch == 0 || s.height == 0 || s.width == 0) return mincut_empty_result(s, source);
  const c10::cuda::CUDAGuard guard(source.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const at::Tensor src = source.contiguous(), snk = sink.contiguous(), edg = edges.contiguous();
  const at::Tensor rev = reverse_edges.has_value() ? reverse_edges->contiguous() : at::Tensor();
  const int64_t pixels = s.height * s.width, total = s.batch * pixels;
  const auto int32 = source.options().dtype(at::kInt);
  at::Tensor terminal = at::empty({s.batch, s.height, s.width}, int32);
  at::Tensor nlinks = at::empty({grabcut::kNumForwardDirections, total}, int32);  // solver direction d, then pixel
  at::Tensor sums = at::empty({s.batch + 1}, source.options().dtype(at::kLong));  // offsets, then the error flag
  AT_DISPATCH_INDEX_TYPES(source.scalar_type(), "mincut_grid_cuda", [&] {
    grabcut::cuda::MincutInput<index_t> in;
    in.source = src.data_ptr<index_t>();
    in.sink = snk.data_ptr<index_t>();
    in.edges = edg.data_ptr<index_t>();
    in.reverse = rev.defined() ? rev.data_ptr<index_t>() : nullptr;
    in.batch = s.batch;
    in.height = static_cast<int32_t>(s.height);  // each below 2^28 (check_mincut_args)
    in.width = static_cast<int32_t>(s.width);
    in.neighbours = static_cast<int32_t>(s.neighbours);
    grabcut::cuda::mincut_reduce(in, terminal.data_ptr<int32_t>(), nlinks.data_ptr<int32_t>(),
                                 sums.data_ptr<int64_t>(), stream);
  });
  // The call's one synchronisation before the solve: a graph out of bounds must raise
  // here, before the solver sees it.
  if (sums[s.batch].item<int64_t>() != 0) raise_host_error(s, source, sink, edges, reverse_edges);

  grabcut::cuda::BatchedGridGraph graph;
  graph.desc.reserve(static_cast<size_t>(s.batch));
  for (int64_t b = 0; b < s.batch; ++b) {
    graph.desc.push_back({b * pixels, static_cast<int32_t>(s.height), static_cast<int32_t>(s.width)});
  }
  graph.total_pixels = total;
  graph.terminal = terminal.data_ptr<int32_t>();
  for (int d = 0; d < grabcut::kNumForwardDirections; ++d) graph.nlink[d] = nlinks[d].data_ptr<int32_t>();
  const std::size_t bytes = grabcut::cuda::maxflow_workspace_bytes(graph.desc);
  at::Tensor workspace = at::empty({static_cast<int64_t>(bytes)}, source.options().dtype(at::kByte));
  at::Tensor cut = at::empty({s.batch, s.height, s.width}, source.options().dtype(at::kByte));
  at::Tensor flows = at::empty({s.batch}, source.options().dtype(at::kLong));  // zeroed by maxflow_cuda
  // Region heights with the checkerboard: on segmentation graphs 1.2-1.5x the defaults
  // (bench/RESULTS.md, issue 33), and no slower on any batch measured.
  grabcut::cuda::maxflow_cuda(graph, cut.data_ptr<uint8_t>(), flows.data_ptr<int64_t>(), workspace.data_ptr(), bytes,
                              /*warm_start=*/false, stream, grabcut::cuda::region_schedule(/*checkerboard=*/true));
  MincutGraph g;
  g.offset = sums.narrow(0, 0, s.batch);
  g.divisor = s.asymmetric ? 2 : 1;
  return mincut_result(g, cut, flows);
}

}  // namespace

TORCH_LIBRARY_IMPL(torchgrabcut, CUDA, m) { m.impl("mincut_grid", &mincut_grid_cuda); }

}  // namespace torchgrabcut
