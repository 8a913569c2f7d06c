// One pixel of the public grid min-cut's reduction (torchgrabcut.mincut, 2D): the
// user's graph at that pixel checked against the bounds and turned into the solvers'
// form (core/maxflow.h). One inline function, __host__ __device__, run by the CPU
// pass (bindings/mincut_op.h) and by the CUDA kernel (cuda/mincut_reduce.cu), so both
// backends compute the same numbers and the same verdict, and the CPU tests exercise
// the code the GPU runs. What the forms, the reduction and the bounds are and why:
// bindings/mincut_op.h's file comment.
#pragma once

#include <cstdint>

#include "core/common.h"
#include "core/maxflow.h"

namespace grabcut {

// Every pixel's source + sink + the capacities of its edges on the grid (both
// directions in the asymmetric form) is at most this; so is every capacity.
constexpr std::int64_t kMincutMaxNodeSum = (std::int64_t{1} << 30) - 1;

// Public neighbour k of a 2D grid, (dy, dx): right (0, 1), down (1, 0), down-right
// (1, 1), down-left (1, -1); and the solvers' direction of it (core/maxflow.h).
GRABCUT_HD constexpr int mincut_dy(int k) { return k == 0 ? 0 : 1; }
GRABCUT_HD constexpr int mincut_dx(int k) { return k == 1 ? 0 : (k == 3 ? -1 : 1); }
GRABCUT_HD constexpr int mincut_solver_direction(int k) {
  return k == 0 ? kRight : (k == 1 ? kDown : (k == 2 ? kDownRight : kDownLeft));
}

GRABCUT_HD bool mincut_in_range(std::int64_t v) { return v >= 0 && v <= kMincutMaxNodeSum; }

// The capacity of a value read: an int64 one clamped to [-1, bound + 1], so that sums
// of garbage cannot overflow int64 (a value out of range is reported, never used).
template <typename T>
GRABCUT_HD std::int64_t mincut_capacity(T v) {
  if constexpr (sizeof(T) <= 4) {
    return v;
  } else {
    const std::int64_t c = static_cast<std::int64_t>(v);
    return c < -1 ? -1 : (c > kMincutMaxNodeSum + 1 ? kMincutMaxNodeSum + 1 : c);
  }
}

GRABCUT_HD std::int64_t mincut_min(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

// The sums of one node (a 2D pixel, a 3D voxel) of the reduction, gathered edge pair by
// edge pair: the range checks, the node sum, and for the asymmetric form the doubled
// terminals and the n-links' part of the offset. Branch-free; with `asym` a constant
// where finish() is inlined, the symmetric form's unused sums fold away.
struct MincutNodeSums {
  std::int64_t source, sink, sum, s2, t2, both = 0;
  bool ok;
  GRABCUT_HD MincutNodeSums(std::int64_t source_capacity, std::int64_t sink_capacity)
      : source(source_capacity),
        sink(sink_capacity),
        sum(source_capacity + sink_capacity),
        s2(2 * source_capacity),
        t2(2 * sink_capacity),
        ok(mincut_in_range(source_capacity) & mincut_in_range(sink_capacity)) {}
  // One neighbour's edges: a to it and r back (0 where it is off the grid, or r in the
  // symmetric form), ia from the opposite neighbour and ir back. Returns the n-link to
  // the neighbour, a + r.
  GRABCUT_HD std::int64_t add(std::int64_t a, std::int64_t r, std::int64_t ia, std::int64_t ir) {
    ok &= mincut_in_range(a) & mincut_in_range(r) & mincut_in_range(ia) & mincut_in_range(ir);
    sum += a + r + ia + ir;
    s2 += r + ia;  // the tail of an edge pair gains source b and sink a, the head source a and sink b
    t2 += a + ir;
    both += a + r;
    return a + r;
  }
  // Writes the node's net terminal capacity to *net and adds its share of the graph's
  // offset to `offset` (nothing if it failed a check: the offset stays bounded).
  // Returns whether every value read is in range and the node sum within the bound.
  GRABCUT_HD bool finish(bool asym, std::int32_t* net, std::int64_t& offset) {
    ok &= sum <= kMincutMaxNodeSum;
    *net = static_cast<std::int32_t>(asym ? s2 - t2 : source - sink);
    const std::int64_t share = asym ? mincut_min(s2, t2) - both : mincut_min(source, sink);
    offset += ok ? share : 0;
    return ok;
  }
};

// Pixel (y, x) of one graph of h x w pixels (I: the index type, int64 on the CPU,
// int on the GPU, where a graph has fewer than 2^28 pixels). src, snk: its planes
// (h * w values, row-major); edg[k], rev[k]: the planes of public neighbour k < K
// (rev only with kAsym). Writes the pixel's net terminal capacity to net[y * w + x],
// with kWriteNl its n-link to neighbour k (0 where the neighbour is off the grid) to
// nl[k][y * w + x], and adds its share of the graph's offset (the flow of the user's
// graph is (solver flow + offset) / (kAsym ? 2 : 1)) to `offset`. kChecked: the
// neighbours may be off the grid (border pixels; always on the GPU); without it every
// neighbour must be on the grid (interior pixels, the CPU's fast path).
//
// Returns false if a capacity this pixel reads (its own, and the edges into it, which
// belong to earlier pixels in raster order) is outside [0, kMincutMaxNodeSum] or its
// node sum is over kMincutMaxNodeSum; what it wrote is then meaningless. Branch-free,
// so that the CPU's loop over a row stays a straight pass; which value was wrong is
// found afterwards, on the host (find_first_error in bindings/mincut_op.h).
//
// Ranges. A pixel that passes: |net| <= 2 * bound (the asymmetric form's doubled
// terminals, below 2^31), an n-link <= bound, its offset share in [-bound, bound]. A
// pixel that fails adds 0 to the offset, and its sums (at most 18 values read, int32
// or int64 clamped) stay below 2^36 in magnitude. So the offset of a graph, summed
// over its fewer than 2^28 pixels in any order and grouping, stays below 2^58 in
// magnitude at every step: int64 cannot overflow, on either backend.
template <typename T, int K, bool kAsym, bool kWriteNl, bool kChecked, typename I>
GRABCUT_HD bool mincut_reduce_pixel(const T* src, const T* snk, const T* const* edg, const T* const* rev, I h, I w,
                                    I y, I x, std::int32_t* net, std::int32_t* const* nl, std::int64_t& offset) {
  const I i = y * w + x;
  MincutNodeSums node(mincut_capacity(src[i]), mincut_capacity(snk[i]));
#if defined(__CUDA_ARCH__)  // device code only: the host compilers know no such pragma
#pragma unroll
#endif
  for (int k = 0; k < K; ++k) {
    const I dy = mincut_dy(k), dx = mincut_dx(k);
    const bool out = !kChecked || (y + dy < h && x + dx >= 0 && x + dx < w);
    const bool in = !kChecked || (y - dy >= 0 && x - dx >= 0 && x - dx < w);
    const I j = i - dy * w - dx;
    const std::int64_t a = out ? mincut_capacity(edg[k][i]) : 0, ia = in ? mincut_capacity(edg[k][j]) : 0;
    std::int64_t r = 0, ir = 0;
    if constexpr (kAsym) {
      r = out ? mincut_capacity(rev[k][i]) : 0;
      ir = in ? mincut_capacity(rev[k][j]) : 0;
    }
    const std::int64_t nlink = node.add(a, r, ia, ir);
    if constexpr (kWriteNl) nl[k][i] = static_cast<std::int32_t>(nlink);
  }
  return node.finish(kAsym, net + i, offset);
}

}  // namespace grabcut
