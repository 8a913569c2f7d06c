// torchgrabcut::mincut_grid3d's GPU path, written once for two backends: the CUDA
// kernel (mincut3d_op_cuda.cpp: the per-voxel steps as CUDA kernels, cuda/mincut3d.h)
// and its replay on the CPU, the development build's test hook _mincut_grid3d_emulated
// (mincut3d_emulated.cpp: the same steps in host loops, core/pushrelabel3d_emulator.h),
// so that the CPU tests run everything of the CUDA path but the launches.
//
// The path: the reduction of the user's graph to the solvers' form, voxel by voxel
// (core/mincut3d_voxel.h, the arithmetic of mincut3d_graph_cpu in mincut_op.h) with one
// verdict for the batch; a batch that fails it is reduced again on the host by
// mincut3d_graph_cpu, which raises the CPU kernel's message; then the push-relabel
// solver (core/pushrelabel3d.h), and the user's flow from the solver's (mincut_result).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <tuple>

#include "bindings/interrupt.h"
#include "bindings/mincut_op.h"
#include "core/mincut3d_voxel.h"

namespace torchgrabcut {

// Backend: reduce<T>(input, batch, net, nlinks, offsets) -> bool (every voxel passed;
// offsets zeroed, each graph's offset added), and solve(shape, net, nlinks, cut, flows,
// stop): the solvers' form in, the uint8 cut (B, D, H, W) and int64 flows (B) out, on
// the tensors' device, unless stop() (asked between the solver's steps) returned true.
// Ctrl-C: a long solve polls Python's signal handlers there (bindings/interrupt.h) and
// raises their exception; the caller's tensors are only read.
template <class Backend>
std::tuple<at::Tensor, at::Tensor> mincut3d_device_path(const Mincut3dShape& s, const at::Tensor& source,
                                                        const at::Tensor& sink, const at::Tensor& edges,
                                                        const std::optional<at::Tensor>& reverse, Backend& backend) {
  const at::TensorOptions options = source.options();
  if (s.batch == 0 || s.depth == 0 || s.height == 0 || s.width == 0) {
    return {at::empty({s.batch, s.depth, s.height, s.width}, options.dtype(at::kBool)),
            at::zeros({s.batch}, options.dtype(at::kLong))};
  }
  const at::Tensor src = source.contiguous(), snk = sink.contiguous(), edg = edges.contiguous();
  const at::Tensor rev = reverse.has_value() ? reverse->contiguous() : at::Tensor();
  MincutGraph g;
  g.net = at::empty({s.batch, s.depth, s.height, s.width}, options.dtype(at::kInt));
  g.nlinks = at::empty({s.batch, 3, s.depth, s.height, s.width}, options.dtype(at::kInt));
  g.offset = at::zeros({s.batch}, options.dtype(at::kLong));
  g.divisor = s.asymmetric ? 2 : 1;
  bool ok = true;
  AT_DISPATCH_INDEX_TYPES(source.scalar_type(), "mincut_grid3d", [&] {
    grabcut::mincut3d::Input<index_t> in;
    in.source = src.data_ptr<index_t>();
    in.sink = snk.data_ptr<index_t>();
    in.edges = edg.data_ptr<index_t>();
    in.reverse = rev.defined() ? rev.data_ptr<index_t>() : nullptr;
    in.voxels = s.depth * s.height * s.width;
    in.depth = static_cast<int32_t>(s.depth);
    in.height = static_cast<int32_t>(s.height);
    in.width = static_cast<int32_t>(s.width);
    ok = backend.template reduce<index_t>(in, s.batch, g.net.data_ptr<int32_t>(), g.nlinks.data_ptr<int32_t>(),
                                          g.offset.data_ptr<int64_t>());
  });
  if (!ok) {
    std::optional<at::Tensor> rev_host;
    if (reverse.has_value()) rev_host = reverse->cpu();
    mincut3d_graph_cpu(s, source.cpu(), sink.cpu(), edges.cpu(), rev_host);
    TORCH_INTERNAL_ASSERT(false, "mincut_grid3d: the device check and the host check disagree");
  }
  at::Tensor cut = at::empty({s.batch, s.depth, s.height, s.width}, options.dtype(at::kByte));
  at::Tensor flows = at::empty({s.batch}, options.dtype(at::kLong));
  InterruptCheck interrupt;
  backend.solve(s, g.net, g.nlinks, cut, flows, [&interrupt] { return interrupt.stop_requested(); });
  interrupt.rethrow_if_stopped();
  return mincut_result(g, cut, flows);
}

}  // namespace torchgrabcut
