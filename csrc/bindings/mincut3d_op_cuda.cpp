// torchgrabcut::mincut_grid3d on CUDA: the reduction of the user's graph and the
// simple exact push-relabel solver of cuda/mincut3d.h, on the current stream of the
// input's device, scratch memory from PyTorch's caching allocator. The host waits for
// the device once after the reduction (its verdict) and every few launches of the
// solver (its end); mincut3d_device_path.h holds the path, shared with its CPU replay.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <tuple>

#include "bindings/mincut3d_device_path.h"
#include "bindings/mincut_op.h"
#include "cuda/mincut3d.h"

namespace torchgrabcut {
namespace {

struct CudaBackend {
  cudaStream_t stream;
  at::Tensor flag;  // one int of device scratch for the reduction's verdict

  template <typename T>
  bool reduce(const grabcut::mincut3d::Input<T>& in, int64_t batch, int32_t* net, int32_t* nlinks,
              int64_t* offsets) {
    return grabcut::cuda::mincut3d_reduce_cuda<T>(in, batch, net, nlinks, offsets,
                                                  reinterpret_cast<unsigned int*>(flag.data_ptr<int32_t>()), stream);
  }

  void solve(const Mincut3dShape& s, const at::Tensor& net, const at::Tensor& nlinks, at::Tensor& cut,
             at::Tensor& flows, const std::function<bool()>& stop) {
    grabcut::cuda::Grid3dBatch graph;
    graph.batch = s.batch;
    graph.depth = static_cast<int32_t>(s.depth);
    graph.height = static_cast<int32_t>(s.height);
    graph.width = static_cast<int32_t>(s.width);
    graph.terminal = net.data_ptr<int32_t>();
    graph.nlinks = nlinks.data_ptr<int32_t>();
    const std::size_t bytes = grabcut::cuda::pushrelabel3d_workspace_bytes(graph);
    at::Tensor workspace = at::empty({static_cast<int64_t>(bytes)}, net.options().dtype(at::kByte));
    grabcut::cuda::pushrelabel3d_cuda(graph, cut.data_ptr<uint8_t>(), flows.data_ptr<int64_t>(), workspace.data_ptr(),
                                      bytes, stream, stop);
  }
};

std::tuple<at::Tensor, at::Tensor> mincut_grid3d_cuda(const at::Tensor& source, const at::Tensor& sink,
                                                      const at::Tensor& edges,
                                                      const std::optional<at::Tensor>& reverse_edges) {
  const Mincut3dShape s = check_mincut3d_args(source, sink, edges, reverse_edges);
  const c10::cuda::CUDAGuard guard(source.device());
  CudaBackend backend{at::cuda::getCurrentCUDAStream(), at::empty({1}, source.options().dtype(at::kInt))};
  return mincut3d_device_path(s, source, sink, edges, reverse_edges, backend);
}

}  // namespace

TORCH_LIBRARY_IMPL(torchgrabcut, CUDA, m) { m.impl("mincut_grid3d", &mincut_grid3d_cuda); }

}  // namespace torchgrabcut
