// The GPU max-flow's tile (csrc/cuda/maxflow.cu): its geometry, the directions of its
// arcs, and the relaxation of a global relabel's labels in a tile by one warp
// (MaxflowSchedule::warp_bfs) with the scans it is built on. A host compiler reads
// this header too, so that tests/cuda_host runs them on the CPU (CI has no GPU): the
// warp's operations (shuffles, vote) are a template argument for that.
#pragma once

#if defined(__CUDACC__)
#define GRABCUT_TILE_FN __host__ __device__ __forceinline__
// The scans call the device's shuffles (through their Shuffle argument).
#define GRABCUT_TILE_SCAN __device__ __forceinline__
#define GRABCUT_TILE_UNROLL _Pragma("unroll")
#else
#define GRABCUT_TILE_FN inline
#define GRABCUT_TILE_SCAN inline
#define GRABCUT_TILE_UNROLL
#endif
#if defined(__CUDA_ARCH__)
// v counts as changed here, so the compiler cannot hoist what is computed from it
// above this point (on the host, a no-op).
#define GRABCUT_TILE_OPAQUE(v) asm volatile("" : "+r"(v))
#else
#define GRABCUT_TILE_OPAQUE(v) static_cast<void>(v)
#endif

namespace grabcut::cuda::tile {

constexpr int kTileW = 32;
// 32x16 tiles, two blocks per SM (64 registers). A global relabel by sweeps needs
// about one sweep per tile its wave crosses, so taller tiles mean fewer grid-wide
// sweeps; 32x32 tiles halve the blocks per SM and lose more than that gains.
constexpr int kTileH = 16;
constexpr int kThreads = kTileW * kTileH;
constexpr int kPadW = kTileW + 2;
constexpr int kPadH = kTileH + 2;
constexpr int kPad = kPadW * kPadH;
constexpr int kInf = 0x3fffffff;

// Directions 0..3 are the forward n-links of core/maxflow.h, 4..7 their opposites.
GRABCUT_TILE_FN constexpr int dir_dy(int k) { return (k == 0 || k == 4) ? 0 : (k < 4 ? 1 : -1); }
GRABCUT_TILE_FN constexpr int dir_dx(int k) { return (k == 0 || k == 1 || k == 7) ? 1 : ((k == 2 || k == 6) ? 0 : -1); }

GRABCUT_TILE_FN constexpr int min_i(int a, int b) { return a < b ? a : b; }

// ---------------------------------------------------------------- scans along a row
// Segmented min-plus scan over groups of N lanes: returns min(d_j + |pos - j|) over
// pos itself and the positions j that pos reaches by consecutive open links, towards
// lower positions (Down false: a lane's link leads to pos - 1) or higher ones (Down
// true: to pos + 1). A label crosses the whole line in log2(N) shuffle steps.
// shfl(v, off) returns v of lane pos - off (Down false) or pos + off in the group
// (any value where that lane is outside it).
template <int N, bool Down, class Shuffle>
GRABCUT_TILE_SCAN int scan_min_plus(int d, bool open, int pos, const Shuffle& shfl) {
  const int q = Down ? N - 1 - pos : pos;  // distance from the scan's start
  int e = d - q;
  bool reach = open;  // the links from pos back over the span covered so far are open
GRABCUT_TILE_UNROLL
  for (int off = 1; off < N; off *= 2) {
    const int eo = shfl(e, off);
    const int ro = shfl(static_cast<int>(reach), off);
    const bool inside = q >= off;
    if (inside && reach) e = min_i(e, eo);
    reach = reach && inside && ro != 0;
  }
  return min_i(kInf, e + q);
}

// ---------------------------------------------------------------- a tile relaxed by one warp
// A global relabel's tile relaxed by one warp instead of the whole block, so that a
// block relaxes as many tiles at once as it has warps and no block barrier separates
// the steps. Lane
// x holds column x of the tile: labels d[r] of rows r = 0..15 and their arcs, bit k of
// byte r & 3 of m[r / 4] for the residual arc in direction k; `top` and `bottom` are
// the halo labels above and below the column, side[0][r + 1] and side[1][r + 1] those
// left and right of row r (r = -1..16; read by lanes 0 and 31 only).
constexpr int kWarpTileWords = kTileH / 4;

GRABCUT_TILE_FN bool warp_arc(const unsigned int (&m)[kWarpTileWords], int r, int k) {
  return ((m[r / 4] >> (8 * (r % 4) + k)) & 1U) != 0U;
}

// Relaxes the column's labels to the tile's local fixpoint (halo fixed). A round takes
// every row's horizontal arcs by scans (all rows at once), then the rows top to bottom
// with their arcs to the row above, then bottom to top with those to the row below;
// a row sees its neighbour row as already relaxed in this round, so a label runs down
// (or up) a column or diagonal in one round. Rounds until one changes nothing: every
// arc was then checked against the final labels. Returns the rows whose label changed
// (bit r). warp.template shuffle<32, Down>() as for scan_min_plus, warp.any(v) the
// warp's vote.
template <class Warp>
GRABCUT_TILE_SCAN unsigned int relax_tile_warp(int (&d)[kTileH], const unsigned int (&m)[kWarpTileWords], int top,
                                               int bottom, const int (&side)[2][kPadH], int lane, const Warp& warp) {
  const auto left = warp.template shuffle<kTileW, false>();  // the value of lane - 1
  const auto right = warp.template shuffle<kTileW, true>();  // of lane + 1
  const bool first = lane == 0;
  const bool last = lane == kTileW - 1;
  unsigned int changed = 0;
  // A copy of the arcs made opaque at each round: hoisted out of the rounds, each row's
  // arc bits would hold 128 predicates in registers (64 is all a thread of the kernel has).
  unsigned int arcs[kWarpTileWords] = {m[0], m[1], m[2], m[3]};
  for (;;) {
    unsigned int round = 0;
GRABCUT_TILE_UNROLL
    for (int j = 0; j < kWarpTileWords; ++j) GRABCUT_TILE_OPAQUE(arcs[j]);
GRABCUT_TILE_UNROLL
    for (int r = 0; r < kTileH; ++r) {
      int v = d[r];
      if (first && warp_arc(arcs, r, 4)) v = min_i(v, side[0][r + 1] + 1);
      if (last && warp_arc(arcs, r, 0)) v = min_i(v, side[1][r + 1] + 1);
      v = min_i(scan_min_plus<kTileW, false>(v, warp_arc(arcs, r, 4) && !first, lane, left),
                scan_min_plus<kTileW, true>(v, warp_arc(arcs, r, 0) && !last, lane, right));
      if (v < d[r]) round |= 1U << r;
      d[r] = min_i(d[r], v);
    }
GRABCUT_TILE_UNROLL
    for (int r = 0; r < kTileH; ++r) {
      const int up = r == 0 ? top : d[r - 1];
      const int up_left = left(up, 1);
      const int up_right = right(up, 1);
      int v = d[r];
      if (warp_arc(arcs, r, 6)) v = min_i(v, up + 1);
      if (warp_arc(arcs, r, 5)) v = min_i(v, (first ? side[0][r] : up_left) + 1);
      if (warp_arc(arcs, r, 7)) v = min_i(v, (last ? side[1][r] : up_right) + 1);
      if (v < d[r]) round |= 1U << r;
      d[r] = v;
    }
GRABCUT_TILE_UNROLL
    for (int r = kTileH - 1; r >= 0; --r) {
      const int down = r == kTileH - 1 ? bottom : d[r + 1];
      const int down_left = left(down, 1);
      const int down_right = right(down, 1);
      int v = d[r];
      if (warp_arc(arcs, r, 2)) v = min_i(v, down + 1);
      if (warp_arc(arcs, r, 3)) v = min_i(v, (first ? side[0][r + 2] : down_left) + 1);
      if (warp_arc(arcs, r, 1)) v = min_i(v, (last ? side[1][r + 2] : down_right) + 1);
      if (v < d[r]) round |= 1U << r;
      d[r] = v;
    }
    changed |= round;
    if (!warp.any(round != 0U)) break;
  }
  return changed;
}

}  // namespace grabcut::cuda::tile
