// The torchgrabcut operators' schemas, and what holds for all of them. Each
// backend's kernels register themselves beside their code: grabcut_op.cpp and
// maxflow_grid_op.cpp (CPU); grabcut_op_cuda.cpp and maxflow_grid_op_cuda.cpp
// (CUDA, when the extension is built with it). The Python module itself is
// module.cpp.
#include <torch/library.h>

#include <cstdint>
#include <tuple>

#include "core/limits.h"

namespace torchgrabcut {
namespace {

// The argument limits of grabcut, (max_iter, components, gamma) at most, so that
// the Python checks read them from the core that enforces them.
std::tuple<int64_t, int64_t, double> limits() {
  return {grabcut::kMaxIterations, grabcut::kMaxComponents, grabcut::kMaxGamma};
}

}  // namespace

TORCH_LIBRARY(torchgrabcut, m) {
  // The batch as it comes: image b (uint8 (3, H_b, W_b)) with mask b (uint8 (H_b,
  // W_b)); the model (float64 (B, 2 * components, 13)) says the device it runs on,
  // where images and masks lie too (or, on a GPU, on the host: copied over in one
  // transfer). Mask b comes back on its image's side, contiguous.
  m.def(
      "grabcut(Tensor[] images, Tensor[] masks, Tensor model, int max_iter, int components, float gamma, int seed, "
      "bool init_model, bool freeze_model) -> (Tensor[], Tensor)");
  m.def("maxflow_grid(Tensor terminal, Tensor nlinks) -> (Tensor, Tensor)");
  m.def("limits() -> (int max_iter, int components, float gamma)", &limits);
}

// Not differentiable: the outputs are integer masks and a refitted model. Falling
// through the autograd key means no graph is recorded and no output requires grad.
TORCH_LIBRARY_IMPL(torchgrabcut, Autograd, m) {
  m.impl("grabcut", torch::CppFunction::makeFallthrough());
  m.impl("maxflow_grid", torch::CppFunction::makeFallthrough());
}

}  // namespace torchgrabcut
