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

// A measure of each image's work for the scheduling of a batch: its probable pixels
// (labels 2 and 3, which the max-flow solves: most of a call, and on GrabCut-50 a
// better predictor of an image's time than its size, correlation 0.77 against 0.39)
// plus a sixteenth of its pixels (the per-pixel stages).
std::vector<int64_t> work_estimates(const at::Tensor& masks, const std::vector<int64_t>& heights,
                                    const std::vector<int64_t>& widths) {
  const at::Tensor m = masks.contiguous();
  const uint8_t* data = m.data_ptr<uint8_t>();
  const int64_t pitch_h = m.size(1);
  const int64_t pitch_w = m.size(2);
  std::vector<int64_t> work(heights.size());
  for (size_t b = 0; b < heights.size(); ++b) {
    int64_t probable = 0;
    for (int64_t y = 0; y < heights[b]; ++y) {
      const uint8_t* row = data + (static_cast<int64_t>(b) * pitch_h + y) * pitch_w;
      for (int64_t x = 0; x < widths[b]; ++x) probable += (row[x] >> 1) & 1;
    }
    work[b] = probable + heights[b] * widths[b] / 16;
  }
  return work;
}

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
  const int64_t threads = at::get_num_threads();
  grabcut::GrabCutOptions options = args.options;
  options.num_threads = static_cast<int>(threads);
  InterruptCheck interrupt;
  // One image: the core runs on torch's thread count for the calling thread
  // (torch.set_num_threads), explicitly rather than through OpenMP's defaults.
  const auto run_image = [&](int64_t b) {
    const int64_t h = args.heights[b];
    const int64_t w = args.widths[b];
    at::Tensor img = image_c[b].slice(1, 0, h).slice(2, 0, w).contiguous();
    at::Tensor msk = mask_out[b].slice(0, 0, h).slice(1, 0, w).contiguous();
    at::Tensor mdl = model_out[b];
    try {
      grabcut::grabcut_cpu(img.data_ptr<uint8_t>(), static_cast<int>(h), static_cast<int>(w), msk.data_ptr<uint8_t>(),
                           mdl.data_ptr<double>(), options);
    } catch (const std::bad_alloc&) {
      out_of_memory[static_cast<size_t>(b)] = 1;
      return;
    } catch (const std::exception& e) {
      errors[static_cast<size_t>(b)] = e.what();
      return;
    }
    if (h != pitch_h || w != pitch_w) mask_out[b].slice(0, 0, h).slice(1, 0, w).copy_(msk);
  };
  // Images in parallel, each on one thread (the core runs single-threaded inside a
  // parallel region), the most work first, except those with more than one thread's
  // share of the batch's work: given one thread, such an image would finish long after
  // the others while the other threads idle, so these run first, one after another,
  // each on every thread. The threads take the next image from one shared counter
  // rather than a fixed share each: images of different sizes balance, and once Ctrl-C
  // is seen every thread stops after its current image, not after the rest of its
  // share. The results do not depend on the order (each image is solved alone,
  // deterministically).
  std::vector<int64_t> work(static_cast<size_t>(batch), 0);
  if (batch > 1 && threads > 1) work = work_estimates(mask_out, args.heights, args.widths);
  std::vector<int64_t> order(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) order[static_cast<size_t>(b)] = b;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return work[static_cast<size_t>(a)] > work[static_cast<size_t>(b)];
  });
  int64_t total = 0;
  for (const int64_t w : work) total += w;
  size_t wide = 0;  // order[0, wide) run one at a time on every thread
  while (wide < order.size() && threads > 1 && work[static_cast<size_t>(order[wide])] * threads > total) ++wide;
  for (size_t i = 0; i < wide; ++i) {
    if (i > 0 && interrupt.stop_requested()) break;
    run_image(order[i]);
  }
  std::atomic<size_t> next{wide};
  const int64_t workers = std::min<int64_t>(batch - static_cast<int64_t>(wide), threads);
  if (workers > 0 && !(wide > 0 && interrupt.stop_requested())) {
    at::parallel_for(0, workers, 1, [&](int64_t, int64_t) {
      for (;;) {
        const size_t i = next.fetch_add(1);
        if (i >= order.size()) return;
        if (i > 0 && interrupt.stop_requested()) return;
        run_image(order[i]);
      }
    });
  }
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
