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

// The max-flow schedule measured best on GrabCut's graphs for a batch of this layout
// (bench/RESULTS.md, issue 33; H100, GrabCut-50): one graph of at least 256 tiles
// (about 360x360 pixels) takes region heights (at 1024x1024, 5 iterations: median
// 20.6 -> 16.6 ms, slowest 59.4 -> 52.6); a batch of 8 graphs or more region heights
// with the checkerboard (490 crops as one batch 182 -> 172 ms, the 49 photos 118 -> 112);
// one small graph, a crop, the defaults (region heights lost there: median 3.4 -> 3.9
// ms). A batch of fewer graphs is treated as its largest graph alone (not measured).
MaxflowSchedule grabcut_schedule(const BatchLayout& layout);

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
