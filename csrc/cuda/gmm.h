// Colour GMMs on the GPU: the batched twins of core/gmm.h's CPU stages, with
// bit-identical results. Each launcher runs over all images of the batch on the
// given stream (cuda/batch.h) and never synchronises with the host; images whose
// `active` flag is 0 are left untouched. Models are batch x 2k x
// kParamsPerComponent doubles (background rows first, as in core/gmm.h); components
// are packed per-pixel arrays.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/gmm.h"
#include "cuda/batch.h"
#include "cuda/scratch.h"

namespace grabcut::cuda {

// Bytes of CUB temp storage of the k-means scan over 2 * total_pixels int64.
std::size_t kmeans_scan_temp_bytes(std::int64_t total_pixels);

// component (packed) = kmeans_init_cpu(image b, mask b, k, seed) for each active
// image. Uses scratch.scan/dist/seeds/centers/sums/cub_temp (carved with kmeans).
// An image with an empty class (which the CPU rejects) gets some components in
// range; nothing is read or written out of bounds.
void kmeans_init_cuda(const StageBatch& batch, const std::uint8_t* images, const std::uint8_t* masks, int k,
                      std::uint64_t seed, std::uint8_t* component, const StageScratch& scratch,
                      cudaStream_t stream);

// component (packed) = assign_components_cpu(image b, mask b, model b). If
// comp_changed is not null, comp_changed[b] is set to 1 when a component changed.
void assign_components_cuda(const StageBatch& batch, const std::uint8_t* images, const std::uint8_t* masks, int k,
                            const double* models, std::uint8_t* component, ComponentEval* evals,
                            std::int32_t* comp_changed, cudaStream_t stream);

// model b = learn_gmms_cpu(image b, mask b, components). sums must be zero on entry
// (batch x 2k x kSumFields int64) and is zero again on return.
void learn_gmms_cuda(const StageBatch& batch, const std::uint8_t* images, const std::uint8_t* masks, int k,
                     const std::uint8_t* component, double* models, std::int64_t* sums, cudaStream_t stream);

// Throws std::invalid_argument unless 1 <= k <= kMaxComponents (every stage taking a
// component count checks it the same way).
void check_components(int k);

// evals[b * 2k + i] = prepare_component(row i of model b), for active images.
void prepare_evals_cuda(const StageBatch& batch, int k, const double* models, ComponentEval* evals,
                        cudaStream_t stream);

namespace detail {
#if defined(__CUDACC__)
// Copies image b's 2k prepared components into shared memory (call from all threads,
// then __syncthreads). ComponentEval has default member initialisers, so shared
// arrays of it are declared as raw storage.
__device__ __forceinline__ void load_evals(const ComponentEval* evals, int b, int k, ComponentEval* shared) {
  for (int i = static_cast<int>(threadIdx.x); i < 2 * k; i += static_cast<int>(blockDim.x))
    shared[i] = evals[static_cast<std::int64_t>(b) * 2 * k + i];
}
#endif
}  // namespace detail

}  // namespace grabcut::cuda
