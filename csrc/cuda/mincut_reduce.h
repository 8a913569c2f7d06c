// The public grid min-cut's reduction on the GPU (torchgrabcut.mincut, 2D): a batch of
// user graphs checked against the bounds and turned into the CUDA max-flow's form
// (cuda/maxflow.h's BatchedGridGraph) in one kernel. Each pixel is
// grabcut::mincut_reduce_pixel (core/mincut_pixel.h), the function the CPU pass runs;
// the forms, the reduction and the bounds: bindings/mincut_op.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace grabcut::cuda {

// The user's graphs, device arrays, contiguous: source and sink (batch, height,
// width); edges (batch, neighbours, height, width), neighbours = 2 (4-connected) or 4
// (8-connected), in the public order (right, down, down-right, down-left); reverse:
// the same shape for the asymmetric form, or null (symmetric). height * width must be
// below 2^28 (the public op's bound), both positive, batch >= 1.
template <typename T>
struct MincutInput {
  const T* source = nullptr;
  const T* sink = nullptr;
  const T* edges = nullptr;
  const T* reverse = nullptr;
  std::int64_t batch = 0;
  std::int32_t height = 0;
  std::int32_t width = 0;
  std::int32_t neighbours = 0;
};

// Writes the solvers' graph of the whole batch, packed graph after graph (graph b's
// pixels at b * height * width): terminal[p] the net terminal capacity; nlinks[d *
// total + p] (total = batch * height * width) the n-link of pixel p in the solvers'
// direction d (core/maxflow.h), 0 where it leaves the grid and for the diagonals of a
// 4-connected grid, so nlinks + d * total is BatchedGridGraph::nlink[d]. sums (batch +
// 1 entries, zeroed here first): sums[b] = graph b's offset (its flow is solver flow +
// offset, halved for the asymmetric form), sums[batch] = nonzero iff some capacity is
// outside [0, 2^30 - 1] or some pixel's sum is over 2^30 - 1 (then everything else
// written is meaningless; the host finds the first error and says which). Every value
// the pixels of a checked graph write is in the solvers' bounds. Asynchronous on
// `stream`; throws std::runtime_error on a launch error. Defined for T = std::int32_t
// and std::int64_t.
template <typename T>
void mincut_reduce(const MincutInput<T>& in, std::int32_t* terminal, std::int32_t* nlinks, std::int64_t* sums,
                   cudaStream_t stream);

}  // namespace grabcut::cuda
