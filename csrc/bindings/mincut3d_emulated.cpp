// The test hook _mincut_grid3d_emulated, registered only in the development build
// (TORCHGRABCUT_TEST_HOOKS=1, set by make build; never in a wheel): the CUDA kernel of
// mincut_grid3d (mincut3d_op_cuda.cpp) replayed on the CPU, the same path
// (mincut3d_device_path.h) with each kernel's per-voxel step run in a host loop
// (core/mincut3d_voxel.h, core/pushrelabel3d_emulator.h), so that the Python tests
// check the GPU path against the CPU kernel where no GPU is.
#include <torch/library.h>
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <tuple>

#include "bindings/mincut3d_device_path.h"
#include "bindings/mincut_op.h"
#include "core/mincut3d_voxel.h"
#include "core/pushrelabel3d_emulator.h"

#ifdef TORCHGRABCUT_TEST_HOOKS

namespace torchgrabcut {
namespace {

struct EmulatedBackend {
  template <typename T>
  bool reduce(const grabcut::mincut3d::Input<T>& in, int64_t batch, int32_t* net, int32_t* nlinks,
              int64_t* offsets) {
    bool ok = true;
    for (int64_t b = 0; b < batch; ++b) {
      int64_t offset = 0;
      for (int64_t v = 0; v < in.voxels; ++v) {
        ok = grabcut::mincut3d::reduce_voxel(in, b * in.voxels + v, net, nlinks, offset) && ok;
      }
      offsets[b] += offset;
    }
    return ok;
  }

  void solve(const Mincut3dShape& s, const at::Tensor& net, const at::Tensor& nlinks, at::Tensor& cut,
             at::Tensor& flows, const std::function<bool()>& stop) {
    grabcut::Grid3dPushRelabelEmulator emulator;
    emulator.solve(s.batch, static_cast<int>(s.depth), static_cast<int>(s.height), static_cast<int>(s.width),
                   net.data_ptr<int32_t>(), nlinks.data_ptr<int32_t>(), cut.data_ptr<uint8_t>(),
                   flows.data_ptr<int64_t>(), stop);
  }
};

std::tuple<at::Tensor, at::Tensor> mincut_grid3d_emulated(const at::Tensor& source, const at::Tensor& sink,
                                                          const at::Tensor& edges,
                                                          const std::optional<at::Tensor>& reverse_edges) {
  const Mincut3dShape s = check_mincut3d_args(source, sink, edges, reverse_edges);
  EmulatedBackend backend;
  return mincut3d_device_path(s, source, sink, edges, reverse_edges, backend);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(torchgrabcut, m) {
  m.def("_mincut_grid3d_emulated(Tensor source, Tensor sink, Tensor edges, Tensor? reverse_edges=None) -> "
        "(Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(torchgrabcut, CPU, m) { m.impl("_mincut_grid3d_emulated", &mincut_grid3d_emulated); }

// Not differentiable, as mincut_grid3d.
TORCH_LIBRARY_IMPL(torchgrabcut, Autograd, m) {
  m.impl("_mincut_grid3d_emulated", torch::CppFunction::makeFallthrough());
}

}  // namespace torchgrabcut

#endif  // TORCHGRABCUT_TEST_HOOKS
