// The GPU max-flow's tile (csrc/cuda/maxflow.cu): its geometry, the directions of its
// arcs, and the line scans of MaxflowSchedule::line_scans. A host compiler reads this
// header too, so that tests/cuda_host checks the scans' arithmetic and their lane
// mappings on the CPU (CI has no GPU); the shuffles are a template argument for that.
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

GRABCUT_TILE_FN constexpr long long min_ll(long long a, long long b) { return a < b ? a : b; }
GRABCUT_TILE_FN constexpr long long max_ll(long long a, long long b) { return a > b ? a : b; }
GRABCUT_TILE_FN constexpr int min_i(int a, int b) { return a < b ? a : b; }

// ---------------------------------------------------------------- line scans
// A row of the tile is a warp (32 lanes); a column or a diagonal is a group of 16
// lanes of one. Diagonals wrap around the tile's width: group g holds the pixels
// ((g + r) mod 32, r) (down-right) or ((g - r) mod 32, r) (down-left) of rows
// r = 0..15, which are pieces of two diagonals, each piece with both ends next to the
// halo.
static_assert(kTileW == 32 && kTileH == 16, "line scans: a row is a warp, a column half of one");

// The direction from position i of a line to i + 1, for the orientations 0 rows,
// 1 columns, 2 down-right and 3 down-left diagonals.
GRABCUT_TILE_FN constexpr int line_dir(int o) { return o == 0 ? 0 : (o == 1 ? 2 : (o == 2 ? 1 : 3)); }

// The lanes of a line: kTileW for a row, kTileH otherwise.
GRABCUT_TILE_FN constexpr int line_lanes(int o) { return o == 0 ? kTileW : kTileH; }

// The pixel that thread tid holds in orientation o.
struct LineSlot {
  int lx, ly;  // the pixel in the tile
  int pos;     // its lane in the line's lane group: its position along the line
  bool first;  // the previous position of the line is a halo slot
  bool last;   // the next one is
};

GRABCUT_TILE_FN LineSlot line_slot(int o, int tid) {
  LineSlot s{};
  if (o == 0) {
    s.lx = tid % kTileW;
    s.ly = tid / kTileW;
    s.pos = s.lx;
    s.first = s.lx == 0;
    s.last = s.lx == kTileW - 1;
    return s;
  }
  const int g = tid / kTileH;
  const int r = tid % kTileH;
  s.ly = r;
  s.pos = r;
  if (o == 1) {
    s.lx = g;
    s.first = r == 0;
    s.last = r == kTileH - 1;
  } else if (o == 2) {
    s.lx = (g + r) % kTileW;
    s.first = r == 0 || s.lx == 0;
    s.last = r == kTileH - 1 || s.lx == kTileW - 1;
  } else {
    s.lx = (g - r + kTileW) % kTileW;
    s.first = r == 0 || s.lx == kTileW - 1;
    s.last = r == kTileH - 1 || s.lx == 0;
  }
  return s;
}

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

// Excess carried along a line: pixel i passes on f_i(c) = clamp(c + excess_i, 0, cap_i)
// of the c it receives, with cap_i the residual to the next pixel if that one is
// strictly lower (0 otherwise). Such clamped shifts compose into clamped shifts, so a
// scan gives every pixel what it passes on: F_i(0) for F_i = f_i o ... o f_0.
struct ClampedShift {
  long long b;          // c + b,
  unsigned int lo, hi;  // clamped to [lo, hi] (lo <= hi)
};

GRABCUT_TILE_FN long long apply(const ClampedShift& f, long long c) {
  return min_ll(static_cast<long long>(f.hi), max_ll(static_cast<long long>(f.lo), c + f.b));
}

// g o f (f first).
GRABCUT_TILE_FN ClampedShift compose(const ClampedShift& g, const ClampedShift& f) {
  return {f.b + g.b, static_cast<unsigned int>(apply(g, f.lo)), static_cast<unsigned int>(apply(g, f.hi))};
}

// Returns what this lane passes on (F_pos(0)) and sets carried_in to what it received
// (F_{pos-1}(0), or 0 at the line's start); the line runs towards higher lanes (Down
// false) or lower ones. shfl as for scan_min_plus.
template <int N, bool Down, class Shuffle>
GRABCUT_TILE_SCAN long long scan_carry(ClampedShift f, int pos, const Shuffle& shfl, long long& carried_in) {
  const int q = Down ? N - 1 - pos : pos;
  ClampedShift acc = f;
GRABCUT_TILE_UNROLL
  for (int off = 1; off < N; off *= 2) {
    ClampedShift o{};
    o.b = shfl(acc.b, off);
    o.lo = shfl(acc.lo, off);
    o.hi = shfl(acc.hi, off);
    if (q >= off) acc = compose(acc, o);
  }
  const long long out = apply(acc, 0);
  const long long before = shfl(out, 1);
  carried_in = q >= 1 ? before : 0;
  return out;
}

}  // namespace grabcut::cuda::tile
