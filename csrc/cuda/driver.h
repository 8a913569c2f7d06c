// The GrabCut loop for a batch of images on the GPU: the CUDA twin of
// core/driver.h, stage for stage, with the same results.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/driver.h"
#include "cuda/batch.h"
#include "cuda/maxflow.h"

namespace grabcut::cuda {

// Device scratch bytes grabcut needs for this batch and these options.
std::size_t grabcut_workspace_bytes(const BatchLayout& layout, const GrabCutOptions& options);

// Runs GrabCut on every image of the batch on `stream`, like grabcut_cpu on each.
// images, masks (in/out) and models (in/out, batch x 2 * components x
// kParamsPerComponent doubles) are device pointers. The caller has validated the
// inputs (labels 0..3, both classes present when init_model, usable models);
// the kernels never read or write outside the buffers whatever the data. Both
// functions throw std::invalid_argument on bad options or a bad layout
// (BatchLayout::check). `schedule` is the max-flow's (the masks do not depend on it;
// benchmarks compare schedules through it).
void grabcut(const BatchLayout& layout, const std::uint8_t* images, std::uint8_t* masks, double* models,
             void* workspace, std::size_t workspace_bytes, const GrabCutOptions& options, cudaStream_t stream,
             const MaxflowSchedule& schedule = {});

}  // namespace grabcut::cuda
