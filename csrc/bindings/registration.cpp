// The torchgrabcut operators' schemas, and what holds for all of them. Each
// backend's kernels register themselves beside their code: grabcut_op.cpp and
// maxflow_grid_op.cpp (CPU); grabcut_op_cuda.cpp, maxflow_grid_op_cuda.cpp and
// batch_transfer_cuda.cpp (CUDA, when the extension is built with it). The Python
// module itself is module.cpp.
#include <torch/library.h>

#include <cstdint>
#include <tuple>

#include "core/gmm.h"
#include "core/limits.h"

namespace torchgrabcut {
namespace {

// Test hook: the largest team of OpenMP threads the CPU stages ran with since the
// last call (then reset), so tests can check the thread count without timing.
int64_t max_stage_threads() { return grabcut::take_max_stage_threads(); }

// The argument limits of grabcut, (max_iter, components, gamma) at most, so that
// the Python checks read them from the core that enforces them.
std::tuple<int64_t, int64_t, double> limits() {
  return {grabcut::kMaxIterations, grabcut::kMaxComponents, grabcut::kMaxGamma};
}

}  // namespace

TORCH_LIBRARY(torchgrabcut, m) {
  m.def(
      "grabcut(Tensor image, Tensor mask, Tensor model, int[] sizes, int max_iter, int components, "
      "float gamma, int seed, bool init_model, bool freeze_model) -> (Tensor, Tensor)");
  m.def("maxflow_grid(Tensor terminal, Tensor nlinks) -> (Tensor, Tensor)");
  // Host images into a padded GPU batch and masks back, one transfer each (CUDA
  // only: batch_transfer_cuda.cpp).
  m.def("upload_images_(Tensor(a!) batch, Tensor[] images) -> ()");
  m.def("download_masks(Tensor masks, int[] sizes) -> Tensor");
  m.def("limits() -> (int max_iter, int components, float gamma)", &limits);
  m.def("_max_stage_threads() -> int", &max_stage_threads);
}

// Not differentiable: the outputs are integer masks and a refitted model. Falling
// through the autograd key means no graph is recorded and no output requires grad.
TORCH_LIBRARY_IMPL(torchgrabcut, Autograd, m) {
  m.impl("grabcut", torch::CppFunction::makeFallthrough());
  m.impl("maxflow_grid", torch::CppFunction::makeFallthrough());
  m.impl("upload_images_", torch::CppFunction::makeFallthrough());
  m.impl("download_masks", torch::CppFunction::makeFallthrough());
}

}  // namespace torchgrabcut
