// The per-image bookkeeping of the GrabCut loop on the GPU: the loop's flags, the
// mask update after each cut and the stopping rule, each the core's helper
// (core/driver.h: relabel_from_cut, stop_after_iteration) applied per pixel or per
// image, so that both backends stop every image after the same iteration.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/batch.h"
#include "cuda/scratch.h"

namespace grabcut::cuda {

// Sets active = (h * w > 0), has_previous = has_previous_value, the changed flags 0.
void init_flags_cuda(const StageBatch& batch, const BatchFlags& flags, int has_previous_value, cudaStream_t stream);

// relabel_from_cut on every pixel of the active images (source_side packed).
// mask_changed[b] (if not null) is set to 1 when a label of image b changed.
void update_masks_cuda(const StageBatch& batch, std::uint8_t* masks, const std::uint8_t* source_side,
                       std::int32_t* mask_changed, cudaStream_t stream);

// End of an iteration of every active image: stop_after_iteration on its flags
// (active = 0 where it stops), then the changed flags are cleared.
void end_iteration_cuda(const StageBatch& batch, const BatchFlags& flags, bool freeze_model, cudaStream_t stream);

}  // namespace grabcut::cuda
