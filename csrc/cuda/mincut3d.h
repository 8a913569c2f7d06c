// The 3D grid min-cut on CUDA (torchgrabcut.mincut on 6-connected grids, op
// mincut_grid3d): the reduction of the user's graph to the solvers' form and an exact
// synchronous push-relabel solver, each a map of the per-voxel steps of
// core/mincut3d_voxel.h and core/pushrelabel3d.h over the voxels of a batch (one thread
// per voxel). The simple solver until the tiled GPU max-flow is built for 3D: every
// phase is a grid-wide launch, and the host synchronises with the stream to test for
// the end, every few launches (core/pushrelabel3d.h: kPhasesPerCheck, kSweepsPerCheck).
//
// Memory: everything is on the device; the caller gives the scratch
// (pushrelabel3d_workspace_bytes) and the library allocates nothing. All calls are
// asynchronous on `stream` unless they say they synchronise; every launch and runtime
// call is checked (a CUDA error is thrown as std::runtime_error).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/mincut3d_voxel.h"
#include "core/pushrelabel3d.h"

namespace grabcut::cuda {

// The reduction of `batch` graphs (core/mincut3d_voxel.h's Input, device pointers):
// writes net[batch * n] and nlinks[batch * 3 * n] (int32), adds each graph's offset
// to offsets[b] (int64, zeroed by the caller), and returns whether every voxel passed
// the checks: a synchronisation (the host must know before it solves). T: int32 or
// int64. `flag` is one device int of scratch.
template <typename T>
bool mincut3d_reduce_cuda(const mincut3d::Input<T>& input, std::int64_t batch, std::int32_t* net,
                          std::int32_t* nlinks, std::int64_t* offsets, unsigned int* flag, cudaStream_t stream);

// A batch of `batch` graphs of depth x height x width voxels in the solvers' form, on
// the device: terminal[b * n + v], nlinks[(b * 3 + k) * n + v] (core/pushrelabel3d.h;
// n-links in [0, 2^30 - 1], |terminal| <= 2^31 - 2, n < 2^28).
struct Grid3dBatch {
  std::int64_t batch = 0;
  std::int32_t depth = 0, height = 0, width = 0;
  const std::int32_t* terminal = nullptr;
  const std::int32_t* nlinks = nullptr;
};

// The scratch bytes pushrelabel3d_cuda needs for a batch: pr3d::state_bytes (30 a
// voxel) and a flag. Throws std::invalid_argument for a batch too large to launch.
std::size_t pushrelabel3d_workspace_bytes(const Grid3dBatch& graph);

// The maximum flow of every graph of the batch and its canonical cut (1 = source side:
// the voxel cannot reach the sink in the residual graph; core/maxflow3d.h's cut):
// source_side[b * n + v], flows[b] (device). Synchronises with `stream` to test for
// the end (every kPhasesPerCheck phases and kSweepsPerCheck global relabel sweeps);
// the last kernel, which writes the outputs, is left running on `stream`. Returns the
// schedule's counts.
// The workspace: device memory aligned to 16 bytes, at least
// pushrelabel3d_workspace_bytes. `stop`, when set, is asked at each of those
// synchronisations; once it returns true the solve ends there with Stats::stopped and
// writes no output.
pr3d::Stats pushrelabel3d_cuda(const Grid3dBatch& graph, std::uint8_t* source_side, std::int64_t* flows,
                               void* workspace, std::size_t workspace_bytes, cudaStream_t stream,
                               const std::function<bool()>& stop = {});

}  // namespace grabcut::cuda
