// The loop's bookkeeping of cuda/iteration.h: one thread per image for the
// flags, one per pixel for the mask update.
#include "core/driver.h"
#include "cuda/check.h"
#include "cuda/iteration.h"

namespace grabcut::cuda {
namespace {

constexpr int kFlagThreads = 128;

__global__ void init_flags_kernel(StageBatch batch, BatchFlags flags, int has_previous_value) {
  const int b = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (b >= batch.batch) return;
  flags.active[b] = batch.images[b].pixels() > 0 ? 1 : 0;
  flags.has_previous[b] = has_previous_value;
  flags.mask_changed[b] = 0;
  flags.comp_changed[b] = 0;
  flags.prev_mask_changed[b] = 0;
}

__global__ void __launch_bounds__(detail::kThreads) update_masks_kernel(StageBatch batch, std::uint8_t* masks,
                                                                        const std::uint8_t* source_side,
                                                                        std::int32_t* mask_changed) {
  detail::for_each_thread_pixel(batch, [&](int b, const BatchImage& im, std::int64_t p, detail::PixelPos pos) {
    if (!detail::is_active(batch, b)) return;
    if (relabel_from_cut(masks + detail::mask_index(batch, b, pos.y, pos.x), source_side + im.offset + p) &&
        mask_changed != nullptr) {
      mask_changed[b] = 1;
    }
  });
}

__global__ void end_iteration_kernel(StageBatch batch, BatchFlags flags, bool freeze_model) {
  const int b = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (b >= batch.batch || flags.active[b] == 0) return;
  IterationHistory history;
  history.has_previous = flags.has_previous[b] != 0;
  history.previous_mask_changed = flags.prev_mask_changed[b] != 0;
  if (stop_after_iteration(history, freeze_model, flags.mask_changed[b] != 0, flags.comp_changed[b] != 0)) {
    flags.active[b] = 0;
  }
  flags.has_previous[b] = history.has_previous ? 1 : 0;
  flags.prev_mask_changed[b] = history.previous_mask_changed ? 1 : 0;
  flags.mask_changed[b] = 0;
  flags.comp_changed[b] = 0;
}

}  // namespace

void init_flags_cuda(const StageBatch& batch, const BatchFlags& flags, int has_previous_value, cudaStream_t stream) {
  if (batch.batch <= 0) return;
  init_flags_kernel<<<detail::blocks_for(batch.batch, kFlagThreads), kFlagThreads, 0, stream>>>(batch, flags,
                                                                                              has_previous_value);
  GRABCUT_CUDA_CHECK_LAUNCH("init_flags_kernel");
}

void update_masks_cuda(const StageBatch& batch, std::uint8_t* masks, const std::uint8_t* source_side,
                       std::int32_t* mask_changed, cudaStream_t stream) {
  if (!detail::has_work(batch)) return;
  update_masks_kernel<<<detail::image_grid(batch, detail::kThreads), detail::kThreads, 0, stream>>>(
      batch, masks, source_side, mask_changed);
  GRABCUT_CUDA_CHECK_LAUNCH("update_masks_kernel");
}

void end_iteration_cuda(const StageBatch& batch, const BatchFlags& flags, bool freeze_model, cudaStream_t stream) {
  if (batch.batch <= 0) return;
  end_iteration_kernel<<<detail::blocks_for(batch.batch, kFlagThreads), kFlagThreads, 0, stream>>>(batch, flags,
                                                                                                 freeze_model);
  GRABCUT_CUDA_CHECK_LAUNCH("end_iteration_kernel");
}

}  // namespace grabcut::cuda
