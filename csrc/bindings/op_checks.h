// Argument handling shared by the CPU and the CUDA kernels of the operators: the
// checks, and the inputs and outputs in the form both backends use. The Python
// layer checks first with friendlier names; these guard direct calls of
// torch.ops.torchgrabcut.* so that no input can reach the core malformed.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "core/driver.h"
#include "core/gmm.h"
#include "core/limits.h"

namespace torchgrabcut {

struct GrabCutArgs {
  std::vector<int64_t> heights;
  std::vector<int64_t> widths;
  grabcut::GrabCutOptions options;
};

// Where a kernel takes its images and masks: on the model's device only (the CPU
// kernel), or there and on the host (the CUDA kernel, which copies host ones over).
enum class InputsOn { kModelDevice, kModelDeviceOrHost };

inline void check_input_device(const at::Tensor& t, const char* what, size_t b, const at::Device& device,
                               InputsOn inputs_on) {
  const bool ok = t.device() == device || (inputs_on == InputsOn::kModelDeviceOrHost && t.device().is_cpu());
  TORCH_CHECK_VALUE(ok, what, "[", b, "]: expected a tensor on ", device,
                    inputs_on == InputsOn::kModelDeviceOrHost ? " (the model's device) or the CPU" : " (the model's device)",
                    ", got ", t.device());
}

// images[b]: uint8 (3, H, W); masks[b]: uint8 (H, W) of its image's size; model:
// float64 (B, 2 * components, kParamsPerComponent) on the device the kernel runs on.
inline GrabCutArgs check_grabcut_args(at::TensorList images, at::TensorList masks, const at::Tensor& model,
                                      int64_t max_iter, int64_t components, double gamma, int64_t seed,
                                      bool init_model, bool freeze_model, InputsOn inputs_on) {
  const auto batch = static_cast<int64_t>(images.size());
  TORCH_CHECK_VALUE(masks.size() == images.size(), "masks: expected one mask per image (", batch, "), got ",
                    masks.size());
  TORCH_CHECK_VALUE(components >= 1 && components <= grabcut::kMaxComponents, "components: expected 1..",
                    grabcut::kMaxComponents, ", got ", components);
  TORCH_CHECK_TYPE(model.scalar_type() == at::kDouble, "model: expected dtype float64, got ", model.scalar_type());
  TORCH_CHECK_VALUE(model.dim() == 3 && model.size(0) == batch && model.size(1) == 2 * components &&
                        model.size(2) == grabcut::kParamsPerComponent,
                    "model: expected shape (B, 2 * components, ", grabcut::kParamsPerComponent, ") = (", batch,
                    ", ", 2 * components, ", ", grabcut::kParamsPerComponent, "), got ", model.sizes());
  GrabCutArgs args;
  for (size_t b = 0; b < images.size(); ++b) {
    const at::Tensor& image = images[b];
    const at::Tensor& mask = masks[b];
    TORCH_CHECK_TYPE(image.scalar_type() == at::kByte, "images[", b, "]: expected dtype uint8, got ",
                     image.scalar_type());
    TORCH_CHECK_VALUE(image.dim() == 3 && image.size(0) == 3, "images[", b, "]: expected shape (3, H, W), got ",
                      image.sizes());
    TORCH_CHECK_VALUE(image.size(1) <= INT32_MAX && image.size(2) <= INT32_MAX, "images[", b,
                      "]: too large, got ", image.sizes());
    TORCH_CHECK_TYPE(mask.scalar_type() == at::kByte, "masks[", b, "]: expected dtype uint8, got ",
                     mask.scalar_type());
    TORCH_CHECK_VALUE(mask.dim() == 2 && mask.size(0) == image.size(1) && mask.size(1) == image.size(2), "masks[",
                      b, "]: expected its image's shape (", image.size(1), ", ", image.size(2), "), got ",
                      mask.sizes());
    check_input_device(image, "images", b, model.device(), inputs_on);
    check_input_device(mask, "masks", b, model.device(), inputs_on);
    args.heights.push_back(image.size(1));
    args.widths.push_back(image.size(2));
  }
  TORCH_CHECK_VALUE(max_iter >= 0 && max_iter <= grabcut::kMaxIterations, "max_iter: expected 0..",
                    grabcut::kMaxIterations, ", got ", max_iter);
  // A given model is read: NaN or inf would turn into meaningless capacities.
  if (!init_model && model.numel() > 0) {
    TORCH_CHECK_VALUE(at::isfinite(model).all().item<bool>(), "model: expected finite parameters, got NaN or inf");
  }
  args.options.max_iter = static_cast<int>(max_iter);
  args.options.components = static_cast<int>(components);
  args.options.gamma = gamma;
  args.options.seed = static_cast<std::uint64_t>(seed);
  args.options.init_model = init_model;
  args.options.freeze_model = freeze_model;
  try {
    grabcut::validate_options(args.options);
  } catch (const std::exception& e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
  return args;
}

inline void check_maxflow_args(const at::Tensor& terminal, const at::Tensor& nlinks) {
  TORCH_CHECK_TYPE(terminal.scalar_type() == at::kInt, "terminal: expected dtype int32, got ",
                   terminal.scalar_type());
  TORCH_CHECK_TYPE(nlinks.scalar_type() == at::kInt, "nlinks: expected dtype int32, got ", nlinks.scalar_type());
  TORCH_CHECK_VALUE(terminal.dim() == 3, "terminal: expected shape (B, H, W), got ", terminal.sizes());
  TORCH_CHECK_VALUE(nlinks.dim() == 4 && nlinks.size(0) == terminal.size(0) && nlinks.size(1) == 4 &&
                        nlinks.size(2) == terminal.size(1) && nlinks.size(3) == terminal.size(2),
                    "nlinks: expected shape (B, 4, H, W) matching terminal, got ", nlinks.sizes());
  TORCH_CHECK_VALUE(terminal.device() == nlinks.device(), "terminal and nlinks: expected one device");
  TORCH_CHECK_VALUE(terminal.size(1) <= INT32_MAX && terminal.size(2) <= INT32_MAX, "terminal: too large");
  if (nlinks.numel() > 0) {
    // Each graph's least capacity (one host sync), so that the error names the graph.
    const at::Tensor least = nlinks.amin({1, 2, 3}).cpu();
    const int32_t* low = least.data_ptr<int32_t>();
    for (int64_t b = 0; b < least.size(0); ++b) {
      TORCH_CHECK_VALUE(low[b] >= 0, "nlinks: expected non-negative capacities, got ", low[b], " in graph ", b,
                        " of the batch");
    }
  }
}

// A contiguous copy of nlinks with the links that leave the grid set to 0, as the
// solvers expect (direction order: right, down-right, down, down-left).
inline at::Tensor grid_nlinks(const at::Tensor& nlinks) {
  at::Tensor out = nlinks.contiguous().clone();
  if (out.numel() == 0) return out;
  const int64_t last_x = out.size(3) - 1;
  const int64_t last_y = out.size(2) - 1;
  out.select(1, 0).select(2, last_x).zero_();
  out.select(1, 1).select(2, last_x).zero_();
  out.select(1, 1).select(1, last_y).zero_();
  out.select(1, 2).select(1, last_y).zero_();
  out.select(1, 3).select(1, last_y).zero_();
  out.select(1, 3).select(2, 0).zero_();
  return out;
}

// The n-links on the grid (grid_nlinks) within both solvers' bound, 2^30 - 1: the CPU
// solver keeps the two residuals of an n-link, which add up to twice its capacity, in
// int32. Checked here for both backends (one host sync on CUDA), so that a capacity
// the CPU refuses is never solved on the GPU; the message names the graph, the pixel
// and the direction of the first one in raster order.
inline void check_maxflow_upper_bound(const at::Tensor& nlinks) {
  constexpr int32_t kMaxNlink = (int32_t{1} << 30) - 1;
  if (nlinks.numel() == 0) return;
  const at::Tensor most = nlinks.amax({1, 2, 3}).cpu();
  const int32_t* high = most.data_ptr<int32_t>();
  for (int64_t b = 0; b < most.size(0); ++b) {
    if (high[b] <= kMaxNlink) continue;
    const at::Tensor graph = nlinks[b].cpu().permute({1, 2, 0}).contiguous();  // (H, W, 4)
    const int32_t* c = graph.data_ptr<int32_t>();
    const int64_t h = graph.size(0), w = graph.size(1);
    for (int64_t i = 0; i < h * w * 4; ++i) {
      TORCH_CHECK_VALUE(c[i] <= kMaxNlink, "graph ", b, " of the batch: nlinks: expected capacities in [0, 2^30 - 1], got ",
                        c[i], " at pixel (y=", i / 4 / w, ", x=", i / 4 % w, ") in direction ", i % 4);
    }
  }
}

// maxflow_grid's arguments, checked, in the solvers' form, with its outputs.
struct MaxflowGridArgs {
  at::Tensor terminal;  // (B, H, W) int32, contiguous
  at::Tensor nlinks;    // (B, 4, H, W) int32, grid_nlinks
  at::Tensor cut;       // (B, H, W) uint8, to be written
  at::Tensor flows;     // (B,) int64, zeros until written
  int64_t batch = 0;
  int64_t height = 0;
  int64_t width = 0;
};

inline MaxflowGridArgs maxflow_grid_args(const at::Tensor& terminal, const at::Tensor& nlinks) {
  check_maxflow_args(terminal, nlinks);
  MaxflowGridArgs args;
  args.batch = terminal.size(0);
  args.height = terminal.size(1);
  args.width = terminal.size(2);
  args.terminal = terminal.contiguous();
  args.nlinks = grid_nlinks(nlinks);
  check_maxflow_upper_bound(args.nlinks);
  args.cut = at::empty({args.batch, args.height, args.width}, terminal.options().dtype(at::kByte));
  args.flows = at::zeros({args.batch}, terminal.options().dtype(at::kLong));
  return args;
}

}  // namespace torchgrabcut
