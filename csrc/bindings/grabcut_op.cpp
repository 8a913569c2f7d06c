// torchgrabcut::grabcut on CPU: checks the arguments, copies the outputs, and
// runs the core on each image of the batch (the schema: registration.cpp; the
// CUDA kernel: grabcut_op_cuda.cpp).
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bindings/interrupt.h"
#include "bindings/op_checks.h"
#include "core/driver.h"

namespace torchgrabcut {
namespace {

std::tuple<at::Tensor, at::Tensor> grabcut_cpu_kernel(const at::Tensor& image, const at::Tensor& mask,
                                                      const at::Tensor& model, at::IntArrayRef sizes,
                                                      int64_t max_iter, int64_t components, double gamma,
                                                      int64_t seed, bool init_model, bool freeze_model) {
  const GrabCutArgs args =
      check_grabcut_args(image, mask, model, sizes, max_iter, components, gamma, seed, init_model, freeze_model);
  const at::Tensor image_c = image.contiguous();
  at::Tensor mask_out;
  at::Tensor model_out;
  std::tie(mask_out, model_out) = grabcut_outputs(mask, model);
  const int64_t batch = image.size(0);
  const int64_t pitch_h = image.size(2);
  const int64_t pitch_w = image.size(3);
  std::vector<std::string> errors(static_cast<size_t>(batch));
  std::vector<char> out_of_memory(static_cast<size_t>(batch), 0);
  // Images in parallel when there are several (torch's intra-op threads, each image
  // on one: the core runs single-threaded inside a parallel region); a single image
  // gives the core's per-pixel stages torch's thread count for the calling thread
  // (torch.set_num_threads), explicitly rather than through OpenMP's defaults.
  // The threads take the next image from one shared counter rather than a fixed
  // share each: images of different sizes balance, and once Ctrl-C is seen every
  // thread stops after its current image, not after the rest of its share.
  grabcut::GrabCutOptions options = args.options;
  options.num_threads = at::get_num_threads();
  InterruptCheck interrupt;
  std::atomic<int64_t> next_image{0};
  const int64_t workers = std::min<int64_t>(batch, at::get_num_threads());
  at::parallel_for(0, workers, 1, [&](int64_t, int64_t) {
    for (;;) {
      const int64_t b = next_image.fetch_add(1);
      if (b >= batch) return;
      if (b > 0 && interrupt.stop_requested()) return;
      const int64_t h = args.heights[b];
      const int64_t w = args.widths[b];
      at::Tensor img = image_c[b].slice(1, 0, h).slice(2, 0, w).contiguous();
      at::Tensor msk = mask_out[b].slice(0, 0, h).slice(1, 0, w).contiguous();
      at::Tensor mdl = model_out[b];
      try {
        grabcut::grabcut_cpu(img.data_ptr<uint8_t>(), static_cast<int>(h), static_cast<int>(w),
                             msk.data_ptr<uint8_t>(), mdl.data_ptr<double>(), options);
      } catch (const std::bad_alloc&) {
        out_of_memory[static_cast<size_t>(b)] = 1;
        continue;
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(b)] = e.what();
        continue;
      }
      if (h != pitch_h || w != pitch_w) mask_out[b].slice(0, 0, h).slice(1, 0, w).copy_(msk);
    }
  });
  interrupt.rethrow_if_stopped();
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK_WITH(OutOfMemoryError, !out_of_memory[static_cast<size_t>(b)],
                     "torchgrabcut.grabcut: out of host memory for the scratch of image ", b, " (",
                     args.heights[b], "x", args.widths[b], ", ", args.heights[b] * args.widths[b],
                     " pixels); use smaller images or fewer at once");
  }
  for (int64_t b = 0; b < batch; ++b) {
    const std::string& err = errors[static_cast<size_t>(b)];
    TORCH_CHECK_VALUE(err.empty(), batch > 1 ? "image " + std::to_string(b) + " of the batch: " + err : err);
  }
  return {mask_out, model_out};
}

}  // namespace

TORCH_LIBRARY_IMPL(torchgrabcut, CPU, m) { m.impl("grabcut", &grabcut_cpu_kernel); }

}  // namespace torchgrabcut
