// One voxel of the public 3D grid min-cut's reduction (torchgrabcut.mincut on a 6-
// connected grid, op mincut_grid3d) for the GPU path: the user's graph at that voxel
// checked against the bounds and turned into the solvers' form (core/maxflow3d.h,
// core/pushrelabel3d.h). One inline function, __host__ __device__, run by the CUDA
// kernel (cuda/mincut3d.cu) and, on the host, by the extension's test hook that
// replays the CUDA path (bindings/mincut3d_emulated.cpp), so the CPU tests run the
// code the GPU runs. The CPU kernel's reduction (mincut3d_graph_cpu in
// bindings/mincut_op.h) computes the same numbers and the same verdict, and on a
// verdict of "out of range" it is what names the first bad value, for both backends.
// The forms, the reduction and the bounds: bindings/mincut_op.h's file comment.
#pragma once

#include <cstdint>

#include "core/common.h"
#include "core/mincut_pixel.h"

namespace grabcut::mincut3d {

// The user's batch: `batch` graphs of depth x height x width voxels (n), contiguous:
// source[b * n + v], sink[b * n + v], edges[(b * 3 + k) * n + v] (k = 0, 1, 2: to
// x + 1, y + 1, z + 1), reverse the same or null (the symmetric form).
template <typename T>
struct Input {
  const T* source = nullptr;
  const T* sink = nullptr;
  const T* edges = nullptr;
  const T* reverse = nullptr;
  std::int64_t voxels = 0;
  std::int32_t depth = 0, height = 0, width = 0;
};

// Voxel i of the batch (i = b * n + v): writes its net terminal capacity to net[i] and
// its three forward n-links (0 where the neighbour is off the grid) to
// nlinks[(b * 3 + k) * n + v], and adds its share of its graph's offset to `offset`
// (the user's flow is (solver flow + offset) / (reverse ? 2 : 1)). Returns false if
// a capacity it reads (its own, and the edges into it) is outside [0,
// kMincutMaxNodeSum] or its node sum is over kMincutMaxNodeSum; what it wrote is then
// meaningless, and it adds nothing to the offset. The bound, the clamping of int64
// values read (mincut_capacity) and the ranges are those of the 2D pixel
// (core/mincut_pixel.h): a voxel that passes has n-links <= kMincutMaxNodeSum and |net|
// <= 2 * kMincutMaxNodeSum (the asymmetric form's doubled capacities), both in int32,
// and a graph's offset, summed in any order, stays far inside int64.
template <typename T>
GRABCUT_HD bool reduce_voxel(const Input<T>& in, std::int64_t i, std::int32_t* net, std::int32_t* nlinks,
                             std::int64_t& offset) {
  const std::int64_t n = in.voxels, b = i / n, v = i - b * n;
  const std::int64_t plane = std::int64_t{in.width} * in.height;
  const std::int64_t coord[3] = {v % in.width, (v / in.width) % in.height, v / plane};
  const std::int64_t size[3] = {in.width, in.height, in.depth};
  const std::int64_t stride[3] = {1, in.width, plane};
  MincutNodeSums node(mincut_capacity(in.source[i]), mincut_capacity(in.sink[i]));
  for (int k = 0; k < 3; ++k) {
    const std::int64_t base = (b * 3 + k) * n;
    const bool out = coord[k] + 1 < size[k], into = coord[k] >= 1;
    const std::int64_t a = out ? mincut_capacity(in.edges[base + v]) : 0;
    const std::int64_t ra = out && in.reverse != nullptr ? mincut_capacity(in.reverse[base + v]) : 0;
    const std::int64_t ia = into ? mincut_capacity(in.edges[base + v - stride[k]]) : 0;
    const std::int64_t ir = into && in.reverse != nullptr ? mincut_capacity(in.reverse[base + v - stride[k]]) : 0;
    nlinks[base + v] = static_cast<std::int32_t>(node.add(a, ra, ia, ir));
  }
  return node.finish(in.reverse != nullptr, net + i, offset);
}

}  // namespace grabcut::mincut3d
