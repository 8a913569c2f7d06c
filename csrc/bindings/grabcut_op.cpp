// torchgrabcut::grabcut on CPU: checks the arguments, makes each image planar and
// each mask an output of its own, and hands the batch to the core's scheduler
// (core/batch.h), which runs the images where they lie (the schema:
// registration.cpp; the CUDA kernel: grabcut_op_cuda.cpp).
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <string>
#include <tuple>
#include <vector>

#include "bindings/interrupt.h"
#include "bindings/op_checks.h"
#include "core/batch.h"

namespace torchgrabcut {
namespace {

std::tuple<std::vector<at::Tensor>, at::Tensor> grabcut_cpu_kernel(at::TensorList images, at::TensorList masks,
                                                                   const at::Tensor& model, int64_t max_iter,
                                                                   int64_t components, double gamma, int64_t seed,
                                                                   bool init_model, bool freeze_model) {
  const GrabCutArgs args = check_grabcut_args(images, masks, model, max_iter, components, gamma, seed, init_model,
                                              freeze_model, InputsOn::kModelDevice);
  const size_t batch = images.size();
  at::Tensor model_out = model.detach().contiguous().clone();
  // The core reads planar images (a (3, H, W) view of numpy's (H, W, 3) is copied
  // here, a contiguous one is read in place) and writes each mask in place: the
  // outputs, copies of the caller's masks.
  std::vector<at::Tensor> planar(batch);
  std::vector<at::Tensor> mask_out(batch);
  std::vector<grabcut::CpuImage> items(batch);
  for (size_t b = 0; b < batch; ++b) {
    planar[b] = images[b].contiguous();
    mask_out[b] = at::empty(masks[b].sizes(), masks[b].options().memory_format(at::MemoryFormat::Contiguous));
    mask_out[b].copy_(masks[b]);
    items[b].image = planar[b].data_ptr<uint8_t>();
    items[b].height = static_cast<int>(args.heights[b]);
    items[b].width = static_cast<int>(args.widths[b]);
    items[b].mask = mask_out[b].data_ptr<uint8_t>();
    items[b].model = model_out.data_ptr<double>() + static_cast<int64_t>(b) * model_out.stride(0);
  }
  // torch's thread count for the calling thread (torch.set_num_threads), given to
  // the core explicitly rather than left to OpenMP's defaults.
  grabcut::GrabCutOptions options = args.options;
  options.num_threads = at::get_num_threads();
  InterruptCheck interrupt;
  const grabcut::BatchOutcome outcome =
      grabcut::grabcut_cpu_batch(items, options, [&interrupt] { return interrupt.stop_requested(); });
  interrupt.rethrow_if_stopped();
  for (size_t b = 0; b < batch; ++b) {
    TORCH_CHECK_WITH(OutOfMemoryError, !outcome.out_of_memory[b],
                     "torchgrabcut.grabcut: out of host memory for the scratch of image ", b, " (", args.heights[b],
                     "x", args.widths[b], ", ", args.heights[b] * args.widths[b],
                     " pixels); use smaller images or fewer at once");
  }
  for (size_t b = 0; b < batch; ++b) {
    const std::string& err = outcome.errors[b];
    TORCH_CHECK_VALUE(err.empty(), batch > 1 ? "image " + std::to_string(b) + " of the batch: " + err : err);
  }
  return {mask_out, model_out};
}

}  // namespace

TORCH_LIBRARY_IMPL(torchgrabcut, CPU, m) { m.impl("grabcut", &grabcut_cpu_kernel); }

}  // namespace torchgrabcut
