// The GPU max-flow's tile (csrc/cuda/maxflow.cu): its geometry, the directions of its
// arcs, and the line scans of MaxflowSchedule::line_bfs and line_push with the tile
// passes built on them. A host compiler reads this header too, so that tests/cuda_host
// runs them on the CPU (CI has no GPU): the block's operations (barriers, shared
// atomics, shuffles) are a template argument for that.
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

// ---------------------------------------------------------------- a tile relaxed by one warp
// A global relabel's tile relaxed by one warp instead of the whole block, so that a
// block relaxes kTileH tiles at once and no block barrier separates the steps. Lane
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

// ---------------------------------------------------------------- a tile's line passes
// What the kernel's block (csrc/cuda/maxflow.cu) or a host emulation of it provides:
//   ops.sync(), ops.sync_or(v)       __syncthreads, __syncthreads_or
//   ops.exchange(p, v), ops.add(p, v) atomic exchange and add on a shared int64
//   ops.template shuffle<N, Down>()   the Shuffle of scan_min_plus and scan_carry
// and the shared arrays of Shared (sh): h[2][kPad] labels of the padded tile, e[kPad]
// inboxes, ex[kThreads] excesses, res[8][kThreads] residuals, scan_mask[kThreads] the
// arcs a pixel relaxes along. Every thread of the block calls these together.

// One pass of line relaxation in orientation o over the labels in sh.h[0] (the halo
// fixed): each pixel takes the best label along its line in both directions. Returns
// whether this thread's pixel changed.
template <class Shared, class Ops>
GRABCUT_TILE_SCAN bool relax_lines(Shared& sh, int o, int tid, const Ops& ops) {
  const LineSlot s = line_slot(o, tid);
  const int pm = (s.ly + 1) * kPadW + s.lx + 1;
  const unsigned int m = sh.scan_mask[s.ly * kTileW + s.lx];
  const int k = line_dir(o);
  const int step = dir_dy(k) * kPadW + dir_dx(k);
  const bool to_prev = ((m >> (k ^ 4)) & 1U) != 0U;  // residual arc to the previous position
  const bool to_next = ((m >> k) & 1U) != 0U;
  const int d0 = sh.h[0][pm];
  int d = d0;
  // Halo slots are never written during the relaxation, so line ends read them directly.
  if (s.first && to_prev) d = min_i(d, sh.h[0][pm - step] + 1);
  if (s.last && to_next) d = min_i(d, sh.h[0][pm + step] + 1);
  int nd = 0;
  if (o == 0) {
    nd = min_i(scan_min_plus<kTileW, false>(d, to_prev && !s.first, s.pos, ops.template shuffle<kTileW, false>()),
               scan_min_plus<kTileW, true>(d, to_next && !s.last, s.pos, ops.template shuffle<kTileW, true>()));
  } else {
    nd = min_i(scan_min_plus<kTileH, false>(d, to_prev && !s.first, s.pos, ops.template shuffle<kTileH, false>()),
               scan_min_plus<kTileH, true>(d, to_next && !s.last, s.pos, ops.template shuffle<kTileH, true>()));
  }
  if (nd < d0) sh.h[0][pm] = nd;  // only this thread reads or writes pm in this pass
  return nd < d0;
}

// Relaxes the tile's labels in sh.h[0] (halo fixed, sh.scan_mask set) to local
// stability: passes over the rows, columns and both diagonals until one changes
// nothing. Every arc lies on a line of one orientation, so a pass that changes
// nothing means no arc can lower a label.
template <class Shared, class Ops>
GRABCUT_TILE_SCAN void relax_tile_lines(Shared& sh, int tid, const Ops& ops) {
  for (;;) {
    bool ch = false;
    for (int o = 0; o < 3; ++o) {
      ch = relax_lines(sh, o, tid, ops) || ch;
      ops.sync();  // the next orientation reads other threads' pixels
    }
    ch = relax_lines(sh, 3, tid, ops) || ch;
    if (!ops.sync_or(ch)) break;
  }
}

// One push pass of a line round (see push_line_rounds): orientation o (0 rows, 1
// columns), towards higher positions (reverse false) or lower ones; pushes along the
// line, then to the two diagonal neighbours ahead. inside(lx, ly): the tile's pixel
// lies in the grid.
template <class Shared, class Inside, class Ops>
GRABCUT_TILE_SCAN void push_line_pass(Shared& sh, int par, int o, bool reverse, int tid, const Inside& inside,
                                      const Ops& ops) {
  const LineSlot s = line_slot(o, tid);
  const int pi = s.ly * kTileW + s.lx;
  const int pm = (s.ly + 1) * kPadW + s.lx + 1;
  const bool valid = inside(s.lx, s.ly);
  const int k = reverse ? line_dir(o) ^ 4 : line_dir(o);
  const int step = dir_dy(k) * kPadW + dir_dx(k);
  // Pushes of this pass by other lines may land in the inbox meanwhile: those that
  // come after the exchange wait there for the next pass.
  long long x = sh.ex[pi] + ops.exchange(&sh.e[pm], 0);
  const int hm = sh.h[par][pm];
  const unsigned int r = sh.res[k][pi];
  const bool can = valid && hm < kInf && r != 0U && sh.h[par][pm + step] < hm;
  const ClampedShift f{x, 0U, can ? r : 0U};
  long long in = 0;
  long long out = 0;
  if (o == 0) {
    out = reverse ? scan_carry<kTileW, true>(f, s.pos, ops.template shuffle<kTileW, true>(), in)
                  : scan_carry<kTileW, false>(f, s.pos, ops.template shuffle<kTileW, false>(), in);
  } else {
    out = reverse ? scan_carry<kTileH, true>(f, s.pos, ops.template shuffle<kTileH, true>(), in)
                  : scan_carry<kTileH, false>(f, s.pos, ops.template shuffle<kTileH, false>(), in);
  }
  x += in - out;
  if (out != 0) {
    sh.res[k][pi] = r - static_cast<unsigned int>(out);
    // The next pixel of the line counts it as its carried_in; past the line's end it
    // goes to the halo slot's inbox.
    if (reverse ? s.first : s.last) ops.add(&sh.e[pm + step], out);
  }
  if (in != 0) sh.res[k ^ 4][pi] += static_cast<unsigned int>(in);
  // The diagonals ahead: the two directions next to k, the lower-numbered first.
  if (valid && x > 0 && hm < kInf) {
    const int a = (k + 1) & 7;
    const int b = (k + 7) & 7;
    const int diag[2] = {a < b ? a : b, a < b ? b : a};
    GRABCUT_TILE_UNROLL
    for (int j = 0; j < 2; ++j) {
      const int kd = diag[j];
      const int sd = dir_dy(kd) * kPadW + dir_dx(kd);
      const unsigned int rd = sh.res[kd][pi];
      if (x > 0 && rd != 0U && sh.h[par][pm + sd] < hm) {
        const long long amount = min_ll(x, static_cast<long long>(rd));
        sh.res[kd][pi] = rd - static_cast<unsigned int>(amount);
        const int nlx = s.lx + dir_dx(kd);
        const int nly = s.ly + dir_dy(kd);
        if (nlx >= 0 && nlx < kTileW && nly >= 0 && nly < kTileH) {
          sh.res[kd ^ 4][nly * kTileW + nlx] += static_cast<unsigned int>(amount);
        }
        ops.add(&sh.e[pm + sd], amount);
        x -= amount;
      }
    }
  }
  sh.ex[pi] = x;
}

// The rounds of a push visit with line passes, up to local_rounds: four passes (rows
// right and left, columns down and up), then the relabel step of a synchronous round
// (an active pixel with no strictly lower residual neighbour rises to one above its
// lowest, kInf if it has none). The excess is in sh.ex and the inboxes, the heights
// in sh.h[par] (read by every pass of a round); valid, ex and hm are this thread's
// pixel's (tid = ly * kTileW + lx), ex and hm updated on return. Returns the index of
// the last round run (local_rounds if every round ran).
template <class Shared, class Inside, class Ops>
GRABCUT_TILE_SCAN int push_line_rounds(Shared& sh, int local_rounds, bool valid, const Inside& inside, int tid,
                                       const Ops& ops, long long& ex, int& hm) {
  const int me = (tid / kTileW + 1) * kPadW + tid % kTileW + 1;
  int round = 0;
  for (int par = 0; round < local_rounds; ++round, par ^= 1) {
    GRABCUT_TILE_UNROLL
    for (int pass = 0; pass < 4; ++pass) {
      push_line_pass(sh, par, pass / 2, (pass & 1) != 0, tid, inside, ops);
      ops.sync();
    }
    ex = sh.ex[tid] + sh.e[me];
    sh.e[me] = 0;
    bool still = false;
    if (valid && ex > 0 && hm < kInf) {
      int m = kInf;
      GRABCUT_TILE_UNROLL
      for (int k = 0; k < 8; ++k) {
        if (sh.res[k][tid] != 0U) m = min_i(m, sh.h[par][me + dir_dy(k) * kPadW + dir_dx(k)]);
      }
      if (m >= hm) hm = m >= kInf - 1 ? kInf : m + 1;
      still = hm < kInf;
    }
    sh.ex[tid] = ex;
    sh.h[par ^ 1][me] = hm;
    if (!ops.sync_or(still)) break;
  }
  return round;
}

}  // namespace grabcut::cuda::tile
