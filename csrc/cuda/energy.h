// GrabCut's energy on the GPU: the batched twins of core/energy.h's CPU stages
// (beta's sum of squared differences, n-links, t-links), with bit-identical
// capacities. Each launcher runs over all images of the batch on the given stream
// (cuda/batch.h) and never synchronises with the host; outputs are packed per-pixel
// arrays.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/gmm.h"
#include "core/maxflow.h"
#include "cuda/batch.h"

namespace grabcut::cuda {

// ssd[b] = sum_squared_differences_cpu(image b).
void sum_squared_differences_cuda(const StageBatch& batch, const std::uint8_t* images, std::int64_t* ssd,
                                  cudaStream_t stream);

// nlink[d] (packed) = nlinks_cpu(image b, gamma, beta_from_sum(ssd[b], h, w)).
void nlinks_cuda(const StageBatch& batch, const std::uint8_t* images, double gamma, const std::int64_t* ssd,
                 std::int32_t* const nlink[kNumForwardDirections], cudaStream_t stream);

// terminal (packed) = tlinks_cpu(image b, mask b, model b, gamma), for active images
// (evals: batch x 2k scratch).
void tlinks_cuda(const StageBatch& batch, const std::uint8_t* images, const std::uint8_t* masks, int k,
                 const double* models, double gamma, ComponentEval* evals, std::int32_t* terminal,
                 cudaStream_t stream);

}  // namespace grabcut::cuda
