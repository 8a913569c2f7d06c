// Exact max-flow and canonical minimum cut of a batch of 8-connected grid graphs on
// the GPU (the CUDA twin of core/maxflow.cpp; interface in cuda/maxflow.h).
//
// Algorithm: tiled push-relabel with global relabels, in ONE persistent cooperative
// kernel per call (grid-wide barriers between phases, so no host synchronisation:
// the host only enqueues two tiny set-up kernels and the solver on `stream`; the
// grid is sized to the blocks that fit on the device at once, as cooperative
// launches require, and every block loops over the tiles of all graphs).
//
// State per pixel p (in the workspace, kept between calls for warm starts):
//   excess[p]   int64  t(p) + net n-link inflow. A negative value is remaining sink
//                      capacity (the pixel behaves as an arc to the sink of capacity
//                      -excess); a positive value is excess to route.
//   height[p]   int32  push-relabel label; kInf = cannot reach the sink.
//   flow[d][p]  int32  flow on the forward n-link d of p (see core/maxflow.h), from p
//                      to its neighbour; residual p->q = c - f, q->p = c + f, both in
//                      [0, 2c], held as uint32 (c <= 2^31 - 1).
//   old_term[p] int32  the terminal of the last solve (for warm starts).
//   resmask[p]  uint8  which arcs of p have residual capacity (a global relabel's
//                      first sweep writes it, its later sweeps read it).
// That is 33 bytes per pixel, plus 32 bytes per 32x16 tile and 56 bytes per graph.
//
// Why this representation is a valid preflow of an equivalent graph: splitting the
// net terminal t into source capacity s + D and sink capacity k + D (s - k = t) with
// D large changes every cut by the same constant, so the minimum cuts are the same.
// In that graph, the state above is a preflow whose excess is max(0, excess) and
// whose residual sink arc is max(0, -excess); source arcs are saturated. A warm
// start only adds (t_new - t_old) to excess, which keeps it such a preflow.
//
// Phases (each ends with a grid-wide barrier):
//  * init: cold: flow = 0, excess = t; warm: excess += t - old_term. old_term = t.
//  * global relabel: exact BFS distance to the sink over residual arcs (pixels with
//    excess < 0 are at distance 0), computed as a Bellman-Ford fixpoint: each 32x16
//    tile relaxes in shared memory until it is locally stable, and a tile is swept
//    again only when a neighbouring tile changed; done when a sweep changes nothing.
//    The fixpoint is exact (every finite label is the length of a real path, and no
//    label exceeds 1 + a residual neighbour's label). With MaxflowSchedule::bfs_cap, a
//    relabel may stop after that many sweeps: the pixels it did not reach keep kInf and
//    their excess waits; the labels it set are still real path lengths. A check that
//    finds nothing to push after such a relabel is followed by one run to the end,
//    and only an uncapped relabel ends a solve.
//  * check: count tiles with a pixel of positive excess and finite distance. If none,
//    the preflow is maximum (no excess can reach the sink), the pixels of finite
//    distance are exactly those that reach the sink in the residual graph, and the
//    canonical cut is read off: source side iff distance == kInf. The test holds
//    per graph too (graphs share no arcs): a graph with no such pixel is finished
//    and its tiles are left out of every later relabel and check ("retired"), so a
//    batch's easy graphs stop costing sweeps while a hard one is still solving.
//  * push sweeps (up to push_visits between global relabels): each tile that has, or
//    just received, active pixels loads its heights and the halo heights into shared
//    memory (each pixel's own excess, height and 8 residuals into its thread's
//    registers) and runs up to local_rounds rounds of synchronous
//    push (to any residual neighbour strictly lower) and relabel (to 1 + the lowest
//    residual neighbour); a pixel sends through per-arc outboxes and takes in what its
//    neighbours sent, so no thread writes another's state. What went into the halo
//    goes to the neighbour tile's pixels by global integer atomics; flows and excesses
//    are written back as atomic deltas.
//    Two tiles never consume the same directed residual (only the tail of an arc
//    pushes along it), so capacities hold under any interleaving.
// MaxflowSchedule::region (issue 33's region discharge, after Shekhovtsov and Hlavac's
// ARD and JF-Cut's block discharge; bench/model_region_discharge.cpp models it): heights
// are D * kRegionStep + s, where D is a lower bound on the tile boundaries a residual
// path to the sink crosses and s the steps inside the last tile. A tile sees its halo
// at (D + 1) * kRegionStep (halo_height), so the global relabel computes exactly these
// lexicographic distances with the same sweeps, and a push visit first relaxes the
// tile's own heights to the exact distances against that frozen halo (relax_in_tile;
// with MaxflowSchedule::exact_start it keeps its stored heights where one relaxation
// step shows they are those distances already), then runs its rounds, relaxing again
// whenever a round moves nothing: excess drains to the tile's own sinks first, then
// out through its lowest boundary, and a visit may carry it across the whole tile.
// Exactness rests, as above, on the preflow and on the last relabel, which runs to the
// end: a lexicographic distance is infinite exactly where a pixel distance is, so the
// check and the cut are unchanged.
// MaxflowSchedule::reverse_warm (with region heights, warm starts): a first launch of
// the kernel (kMasked) solves the reversed graph on the last cut's source side S alone:
// its init adds the terminals' change, walls off the pixels outside S (height kWall: no
// label, never a sink, never pushed to, never active) and negates every excess and flow,
// which turns residual p -> q into residual q -> p and sink capacity into excess; the
// solve then carries S's new sink capacity back to S's excess (and ends on the first
// check that finds nothing to move, capped relabel or not), and its end negates them
// again. Every step moved flow along a residual arc, so the state stays one the usual
// solve, the second launch, may start from; exactness is that solve's, as above.
// MaxflowSchedule::band (with region heights; not in reverse_warm's phase): a push sweep
// visits a listed tile only if its lowest active region label (tile_low: as its last
// visit or check left it, lowered by what its neighbours pushed into it) is at most
// `band` above its graph's lowest (graph_low: the least tile_low offered for the sweep by
// the sweep before, band_key); the others wait on the next sweep's list. Excess near the sinks
// moves first, and excess farther out is often cut off by the next relabel before it
// moves. Only the order of visits depends on these values, never the result; the tile
// that offered its graph's lowest value always passes, so every sweep with listed tiles
// of a graph visits one of them or defers it by its colour only.
// MaxflowSchedule::rim_lists (region heights): a relabel sweep lists only the neighbours
// whose halo holds a region label of the tile that moved (bfs_tile's sides); the
// same fixpoint, fewer tiles relaxed. MaxflowSchedule::relax_every (region heights): a
// visit also relaxes to exact heights after every relax_every-th round that still pushed.
// MaxflowSchedule::checkerboard (with region heights) makes the solve's push sweep i
// visit only the tiles of colour i % 2 (the rest wait one sweep), so that tiles sharing
// an edge never push at each other's stale heights in one sweep.
// A relabel's first sweep and the check find their tiles kThreads at a time
// (sweep_tiles); every other sweep works on a list of the tiles that need it, built
// by the sweep before and shared out among the blocks (pull_tiles). Exactness does
// not depend on the heights being valid labels: it rests only on the preflow
// invariants and on the exact BFS of the final check. The outputs (cut and flow
// value) are unique for a graph, so they are deterministic although the order of
// the integer atomics (and so the internal flow) may vary.
//
// Flow value: the capacity of the canonical cut (net terminals of pixels on the
// wrong side plus n-links from source side to sink side), which equals the maximum
// flow because the cut is minimum. Summed per graph with int64 atomics.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "cuda/maxflow.h"
#include "cuda/maxflow_round.h"
#include "cuda/maxflow_stats.h"
#include "cuda/maxflow_tile.h"

namespace grabcut::cuda {
namespace {

namespace cg = cooperative_groups;

using namespace tile;  // NOLINT(google-build-using-namespace): the tile's geometry
constexpr int kMinBlocksPerSm = 2;  // two blocks of kThreads per SM (64 registers)
// MaxflowSchedule::reverse_warm's wall: the height of a pixel outside the source side
// while the reverse phase runs. Above kInf, so nothing treats it as a label (a halo at
// kWall is never lower, a stored kWall is never active), and kWall + 1 still fits an int.
constexpr int kWall = 0x7ffffff0;

struct GraphDev {
  long long offset;
  int height;
  int width;
  int tiles_x;
  int tiles_y;
  int tile_start;
  int pad;
};
static_assert(sizeof(GraphDev) == 32, "GraphDev layout");

constexpr int kDescChunk = 64;
struct DescChunk {
  int first;
  int count;
  GraphDev g[kDescChunk];
};

// Workspace header: rotating phase counters and the sizes of the sweep lists (see
// list_for_next_sweep), then statistics (see StatSlot).
struct Header {
  unsigned int counter[4];
  unsigned int list_count[4];  // tiles on the list of a sweep (slot sweep % 3)
  unsigned int list_next[4];   // how many of them blocks have taken
  unsigned int pad[4];
  unsigned long long stats[24];
};
static_assert(sizeof(Header) <= 256, "header fits its slot");

struct Layout {
  std::size_t header = 0, graphs = 0, graph_active = 0, graph_low = 0, tile_graph = 0, pmark = 0, bmark = 0,
              lists = 0, tile_s = 0, tile_low = 0;
  std::size_t excess = 0, height = 0, flow = 0, old_term = 0, resmask = 0, total = 0;
  long long pixels = 0;  // extent of the per-pixel arrays (max offset + h * w)
  long long tiles = 0;
};

std::size_t align_up(std::size_t v) { return (v + 255) / 256 * 256; }

Layout make_layout(const std::vector<GridDesc>& desc) {
  Layout l;
  long long pixels = 0;
  long long tiles = 0;
  for (std::size_t b = 0; b < desc.size(); ++b) {
    const GridDesc& g = desc[b];
    if (g.height < 0 || g.width < 0 || g.offset < 0) {
      throw std::invalid_argument("maxflow_cuda: graph " + std::to_string(b) +
                                  " has a negative offset or size (offset " + std::to_string(g.offset) +
                                  ", " + std::to_string(g.height) + " x " + std::to_string(g.width) + ")");
    }
    const long long n = static_cast<long long>(g.height) * g.width;
    pixels = std::max(pixels, g.offset + n);
    if (n > 0) tiles += static_cast<long long>((g.height + kTileH - 1) / kTileH) * ((g.width + kTileW - 1) / kTileW);
  }
  if (tiles > 0x7fffffffLL / 2) throw std::invalid_argument("maxflow_cuda: batch too large (tile count)");
  l.pixels = pixels;
  l.tiles = tiles;
  std::size_t at = 0;
  auto take = [&at](std::size_t bytes) {
    const std::size_t here = at;
    at = align_up(at + bytes);
    return here;
  };
  const auto np = static_cast<std::size_t>(pixels);
  const auto nt = static_cast<std::size_t>(tiles);
  l.header = take(256);
  l.graphs = take(sizeof(GraphDev) * desc.size());
  l.graph_active = take(4 * 2 * desc.size());
  l.graph_low = take(8 * 2 * desc.size());
  l.tile_graph = take(4 * nt);
  l.pmark = take(4 * nt);
  l.bmark = take(4 * nt);
  l.lists = take(4 * 3 * nt);
  l.tile_s = take(4 * nt);
  l.tile_low = take(4 * nt);
  l.excess = take(8 * np);
  l.height = take(4 * np);
  l.flow = take(4 * 4 * np);
  l.old_term = take(4 * np);
  l.resmask = take(np);
  l.total = at;
  return l;
}

struct SolverArgs {
  const GraphDev* graphs;
  const int* tile_graph;
  int* graph_active;  // 2 x num_graphs: found active by the last check / by this one
  int num_graphs;
  int num_tiles;
  long long pixels;
  const std::int32_t* terminal;
  const std::int32_t* nlink[4];
  long long* excess;
  int* height;
  int* flow;  // 4 planes of `pixels` entries
  std::int32_t* old_term;
  std::uint8_t* resmask;  // bit k: residual arc in direction k, as of the relabel's first sweep
  int* pmark;   // last sweep + 1 the tile was put on a push list for
  int* bmark;   // last sweep + 1 the tile was put on a BFS list for
  int* lists;   // 3 x num_tiles: the tiles of sweep s are in row s % 3
  int* tile_s;  // reverse_warm's phase: the tile holds a pixel of the source side (not a wall)
  int* tile_low;   // MaxflowSchedule::band: the tile's lowest active region label, as last seen
  unsigned long long* graph_low;  // MaxflowSchedule::band: 2 x num_graphs, the lowest offered (band_key)
  Header* header;
  std::uint8_t* source_side;
  unsigned long long* flows;  // may be null
  int warm;
  int push_sweep_limit;  // MaxflowSchedule::push_visits: most push sweeps between global relabels
  int local_rounds;
  int bfs_cap;       // MaxflowSchedule::bfs_cap (0: none)
  int grow_cap;      // MaxflowSchedule::grow_cap
  int checkerboard;  // MaxflowSchedule::checkerboard
  int exact_start;   // MaxflowSchedule::exact_start
  int keep_stats;    // add to the statistics of the launch before (reverse_warm's phase)
  int band;          // MaxflowSchedule::band (0: every listed tile is visited)
  int rim_lists;     // MaxflowSchedule::rim_lists
  int relax_every;   // MaxflowSchedule::relax_every (region heights; 0: only after a round that pushed nothing)
};

struct TileCtx {
  long long offset;
  int H, W, tx, ty, tiles_x, tiles_y, tile_start, b;
  int x0, y0;
};

__device__ __forceinline__ TileCtx tile_ctx(const SolverArgs& a, int t) {
  TileCtx c;
  c.b = __ldg(a.tile_graph + t);
  const GraphDev* g = a.graphs + c.b;
  c.offset = __ldg(&g->offset);
  c.H = __ldg(&g->height);
  c.W = __ldg(&g->width);
  c.tiles_x = __ldg(&g->tiles_x);
  c.tiles_y = __ldg(&g->tiles_y);
  c.tile_start = __ldg(&g->tile_start);
  const int local = t - c.tile_start;
  c.ty = local / c.tiles_x;
  c.tx = local - c.ty * c.tiles_x;
  c.x0 = c.tx * kTileW;
  c.y0 = c.ty * kTileH;
  return c;
}

__device__ __forceinline__ bool in_grid(const TileCtx& c, int x, int y) {
  return x >= 0 && y >= 0 && x < c.W && y < c.H;
}

__device__ __forceinline__ long long pix(const TileCtx& c, int x, int y) {
  return c.offset + static_cast<long long>(y) * c.W + x;
}

// Calls f(i, gx, gy) for each slot i of the padded tile's halo (the ring of slots around
// the tile) with (gx, gy) the pixel it stands for, which may lie outside the grid. The
// block's threads share the slots.
template <typename F>
__device__ __forceinline__ void for_each_halo_slot(const TileCtx& c, F&& f) {
  for (int i = static_cast<int>(threadIdx.x); i < kPad; i += kThreads) {
    const int py = i / kPadW;
    const int px = i - py * kPadW;
    if (py >= 1 && py <= kTileH && px >= 1 && px <= kTileW) continue;
    f(i, c.x0 + px - 1, c.y0 + py - 1);
  }
}

// The height a tile gives a pixel of its halo whose own height is h: h itself, or with
// region heights (D * kRegionStep + steps in its tile), (D + 1) * kRegionStep: a path
// leaving the tile there crosses one boundary more than that pixel's, and the steps
// inside the tile it enters do not count.
template <bool kRegion>
__device__ __forceinline__ int halo_height(int h) {
  if (!kRegion || h >= kInf) return h;
  return (h / kRegionStep + 1) * kRegionStep;
}

// Residual capacity of the arc from pixel (x, y) (index p) in direction k.
__device__ __forceinline__ unsigned int load_residual(const SolverArgs& a, const TileCtx& c, int x, int y,
                                                      long long p, int k) {
  const int nx = x + dir_dx(k);
  const int ny = y + dir_dy(k);
  if (!in_grid(c, nx, ny)) return 0U;
  if (k < 4) {
    const auto cap = static_cast<unsigned int>(__ldg(a.nlink[k] + p));
    const auto fl = static_cast<unsigned int>(__ldcg(a.flow + static_cast<long long>(k) * a.pixels + p));
    return cap - fl;
  }
  const long long q = pix(c, nx, ny);
  const int d = k - 4;
  const auto cap = static_cast<unsigned int>(__ldg(a.nlink[d] + q));
  const auto fl = static_cast<unsigned int>(__ldcg(a.flow + static_cast<long long>(d) * a.pixels + q));
  return cap + fl;
}

struct __align__(16) Shared {
  unsigned int out[8][kThreads];   // what each pixel pushed along each arc in this round
  unsigned int res0[8][kThreads];  // the residuals when push_tile loaded the tile
  long long e[kPad];  // the halo's inflow at the end of a push visit
  int h[2][kPad];  // two label buffers (see bfs_tile and push_tile)
  long long red[kThreads / 32];
  int list[kThreads];  // tiles of this block that need work in the current sweep
  int warp_count[kThreads / 32];
  int pulled[2];  // the tile a block took from a sweep list (alternating, see pull_tiles)
  unsigned int sent;  // push_tile: bit (dy + 1) * 3 + dx + 1 for each neighbour tile the visit sent excess to
  int sent_low[9];    // MaxflowSchedule::band: per bit of `sent`, the lowest region label pushed into
  int warp_low[kThreads / 32];  // block_min's partial results
};

// ---------------------------------------------------------------- statistics
// Header::stats, read back by detail::maxflow_read_stats. The counts up to
// kCheckTiles and kCappedRelabels are kept by every build; the rest are profiling
// for benchmarks (bench_maxflow_cuda_phases; compiled out of the library): block 0's
// thread 0 adds the nanoseconds between grid barriers to the phase's slot (every block
// waits at each barrier, so that is the grid's time in the phase); each block's thread
// 0 adds the time it spent working in BFS and push sweeps (busy / (blocks x phase
// time) is how evenly the sweeps load the blocks); push_tile counts its rounds.
enum StatSlot {
  kRelabels = 0,
  kBfsSweeps = 1,
  kPushSweeps = 2,
  kBfsTiles = 3,
  kPushTiles = 4,
  kGridBlocks = 5,
  kCheckTiles = 6,
  kBfsNs = 7,
  kCheckNs = 8,
  kPushNs = 9,
  kBfsBusyNs = 10,
  kPushBusyNs = 11,
  kPushRounds = 12,
  kPushVisitsRun = 13,
  kPushVisitsCapped = 14,
  kCappedRelabels = 15,
  // The push visits of sweeps with fewer tiles than blocks (the latency-bound ones),
  // split by phase in SM cycles: loading the tile, the first in-tile relaxation, the
  // rounds (with the relaxations between them), the write-back (the pixels' deltas,
  // the halo's inflow and the sweep lists); their rounds, the steps of their first
  // relaxation, and how many started from heights that were exact already.
  kSparseVisits = 16,
  kSparseLoadCycles = 17,
  kSparseRelaxCycles = 18,
  kSparseRoundsCycles = 19,
  kSparseWriteCycles = 20,
  kSparseRounds = 21,
  kSparseRelaxSteps = 22,
  kSparseExactStarts = 23,
  kStatSlots = 24
};
#ifdef GRABCUT_MAXFLOW_PHASE_CLOCK
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void profile_add(Header* h, StatSlot slot, unsigned long long v) {
  if (threadIdx.x == 0) atomicAdd(&h->stats[slot], v);
}
// A push visit's phases in a sparse sweep (kSparse*): thread 0 reads the SM's clock
// after each phase's closing barrier.
struct VisitClock {
  bool on;
  long long last = 0;
  __device__ explicit VisitClock(bool sparse) : on(sparse) {
    if (on) last = clock64();
  }
  __device__ void lap(Header* h, StatSlot slot) {
    if (!on) return;
    const long long now = clock64();
    profile_add(h, slot, static_cast<unsigned long long>(now - last));
    last = now;
  }
  __device__ void count(Header* h, StatSlot slot, unsigned long long v) const {
    if (on) profile_add(h, slot, v);
  }
  __device__ void restart() {
    if (on) last = clock64();
  }
  __device__ bool active() const { return on; }
};
struct PhaseClock {
  unsigned long long last = 0;
  __device__ void start() { last = global_ns(); }
  // Thread 0 of each block: adds the time since the last start() or lap() to `slot`;
  // returns it.
  __device__ unsigned long long lap(Header* h, StatSlot slot) {
    const unsigned long long now = global_ns();
    const unsigned long long ns = now - last;
    profile_add(h, slot, ns);
    last = now;
    return ns;
  }
};
// The sweep trace of the last solve (detail::maxflow_read_sweeps): per grid-wide sweep,
// its kind, the grid's time from barrier to barrier and the tiles the blocks worked on,
// so a profile can tell sweeps that wait for one slow tile (few tiles) from sweeps that
// keep every block busy (many). Device globals, not workspace: only this build has them.
__device__ unsigned long long g_sweep_ns[detail::kTraceSweeps];
__device__ unsigned int g_sweep_tiles[detail::kTraceSweeps];
__device__ unsigned char g_sweep_kind[detail::kTraceSweeps];
__device__ unsigned int g_sweep_count;
__device__ __forceinline__ void trace_reset() {
  const int stride = static_cast<int>(gridDim.x * blockDim.x);
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < detail::kTraceSweeps; i += stride) {
    g_sweep_ns[i] = 0ULL;
    g_sweep_tiles[i] = 0U;
    g_sweep_kind[i] = 0U;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) g_sweep_count = 0U;
}
// Every block, after its work in sweep `sweep`: the tiles it worked on.
__device__ __forceinline__ void trace_tiles(int sweep, int tiles) {
  if (threadIdx.x == 0 && tiles > 0 && sweep < detail::kTraceSweeps) {
    atomicAdd(&g_sweep_tiles[sweep], static_cast<unsigned int>(tiles));
  }
}
// Block 0, after the barrier that ended sweep `sweep`: its kind and the grid's time.
__device__ __forceinline__ void trace_sweep(int sweep, detail::SweepKind kind, unsigned long long ns) {
  if (threadIdx.x == 0 && sweep < detail::kTraceSweeps) {
    g_sweep_ns[sweep] = ns;
    g_sweep_kind[sweep] = static_cast<unsigned char>(kind);
  }
  if (threadIdx.x == 0) g_sweep_count = static_cast<unsigned int>(sweep + 1);
}
#else
__device__ __forceinline__ void profile_add(Header* /*h*/, StatSlot /*slot*/, unsigned long long /*v*/) {}
struct VisitClock {
  __device__ explicit VisitClock(bool /*sparse*/) {}
  __device__ void lap(Header* /*h*/, StatSlot /*slot*/) {}
  __device__ void count(Header* /*h*/, StatSlot /*slot*/, unsigned long long /*v*/) const {}
  __device__ void restart() {}
  __device__ static constexpr bool active() { return false; }
};
struct PhaseClock {
  __device__ void start() {}
  __device__ unsigned long long lap(Header* /*h*/, StatSlot /*slot*/) { return 0ULL; }
};
__device__ __forceinline__ void trace_reset() {}
__device__ __forceinline__ void trace_tiles(int /*sweep*/, int /*tiles*/) {}
__device__ __forceinline__ void trace_sweep(int /*sweep*/, detail::SweepKind /*kind*/, unsigned long long /*ns*/) {}
#endif

// ---------------------------------------------------------------- init
// reverse_warm's phase starts and ends by negating pixel i's excess and flows (residual
// p -> q = c - f becomes c + f: the reversed graph, and back).
__device__ __forceinline__ void negate_pixel(const SolverArgs& a, long long i) {
  a.excess[i] = -a.excess[i];
  for (int d = 0; d < 4; ++d) {
    int* f = a.flow + static_cast<long long>(d) * a.pixels + i;
    *f = -*f;
  }
}

// Per tile, in-grid pixels only: a batch's layout may leave gaps between graphs
// whose inputs were never written, and the solver must not read them.
// kMasked (reverse_warm's phase, always a warm start): then the pixels outside the last
// cut's source side (height below kInf) become walls, excess and flows change sign, and
// tile_s says which tiles hold a pixel of the source side.
// Block-uniform (kMasked: it ends on a block barrier).
template <bool kMasked>
__device__ void init_tile(const SolverArgs& a, int t) {
  const TileCtx c = tile_ctx(a, t);
  const int tid = static_cast<int>(threadIdx.x);
  const int x = c.x0 + tid % kTileW;
  const int y = c.y0 + tid / kTileW;
  if (kMasked) {
    bool source = false;
    if (in_grid(c, x, y)) {
      const long long i = pix(c, x, y);
      const long long old = a.old_term[i];
      const std::int32_t term = __ldg(a.terminal + i);
      a.excess[i] += static_cast<long long>(term) - old;
      a.old_term[i] = term;
      negate_pixel(a, i);
      source = __ldcg(a.height + i) >= kInf;
      if (!source) a.height[i] = kWall;
    }
    const bool any = __syncthreads_or(source);
    if (tid == 0) a.tile_s[t] = any ? 1 : 0;
    return;
  }
  if (!in_grid(c, x, y)) return;
  const long long i = pix(c, x, y);
  const std::int32_t term = __ldg(a.terminal + i);
  if (a.warm) {
    const long long old = a.old_term[i];
    a.excess[i] += static_cast<long long>(term) - old;
  } else {
    a.excess[i] = term;
    for (int d = 0; d < 4; ++d) a.flow[static_cast<long long>(d) * a.pixels + i] = 0;
  }
  a.old_term[i] = term;
}

template <bool kBand, bool kMasked>
__device__ void init_phase(const SolverArgs& a) {
  for (int t = static_cast<int>(blockIdx.x); t < a.num_tiles; t += static_cast<int>(gridDim.x)) {
    init_tile<kMasked>(a, t);
  }
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; t < a.num_tiles; t += stride) {
    a.pmark[t] = 0;
    a.bmark[t] = 0;
    if (kBand && a.band != 0) a.tile_low[t] = kInf;
  }
  for (long long g = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; g < 2LL * a.num_graphs;
       g += stride) {
    a.graph_active[g] = 0;
    if (kBand && a.band != 0) a.graph_low[g] = ~0ULL;
  }
  if (blockIdx.x == 0 && threadIdx.x < 4) {
    a.header->counter[threadIdx.x] = 0U;
    a.header->list_count[threadIdx.x] = 0U;
    a.header->list_next[threadIdx.x] = 0U;
  }
  if (blockIdx.x == 0 && threadIdx.x < kStatSlots && a.keep_stats == 0) a.header->stats[threadIdx.x] = 0ULL;
  trace_reset();
}

// ---------------------------------------------------------------- retired graphs
// A graph whose check found no pixel that can still send excess to the sink has its
// maximum preflow and exact labels (graphs share no arcs), so it takes no part in
// later relabels and checks: its tiles are "live" no longer. graph_active holds two
// rows, written by the checks of alternate relabels (see maxflow_kernel).
__device__ __forceinline__ bool graph_live(const SolverArgs& a, int b, int relabel) {
  return relabel == 0 || __ldcg(a.graph_active + ((relabel - 1) & 1) * a.num_graphs + b) != 0;
}

// ---------------------------------------------------------------- sweep lists
// After the first BFS sweep of a relabel and the check, a sweep works only on the tiles
// put on its list during the previous sweep, and blocks take them one at a time, so a
// block that drew cheap tiles takes more (static shares left blocks idle: a sweep
// lasts as long as its busiest block). Puts tile t on the list of sweep `sweep + 1`
// unless it is there already (`mark`: the last sweep + 1 it was listed for). A tile is
// listed at most once per sweep, so a row of num_tiles entries is enough.
__device__ __forceinline__ void list_for_next_sweep(const SolverArgs& a, int* mark, int t, int sweep) {
  if (atomicMax(mark + t, sweep + 1) < sweep + 1) {
    const int slot = (sweep + 1) % 3;
    const unsigned int i = atomicAdd(&a.header->list_count[slot], 1U);
    a.lists[static_cast<long long>(slot) * a.num_tiles + i] = t;
  }
}

// ---------------------------------------------------------------- band
// MaxflowSchedule::band's values (see the top of the file). The visits of sweep s offer
// to row (s + 1) % 2 of graph_low, which sweep s + 1 reads while the next offers go to
// the other row. An offer is a key (~(s + 1) << 32 | label): a later sweep's key is
// smaller, so atomicMin replaces what was left from two sweeps before without a pass
// to clear it, and a row whose key names another sweep got no offer for this one.
__device__ __forceinline__ unsigned long long band_key(int sweep, int low) {
  return (static_cast<unsigned long long>(~static_cast<unsigned int>(sweep)) << 32) | static_cast<unsigned int>(low);
}

// A tile of graph b listed for sweep + 1 whose lowest active region label is `low`.
__device__ __forceinline__ void offer_band(const SolverArgs& a, int b, int low, int sweep) {
  atomicMin(a.graph_low + static_cast<long long>((sweep + 1) & 1) * a.num_graphs + b, band_key(sweep + 1, low));
}

// Whether push sweep `sweep` leaves listed tile t for the next sweep.
__device__ __forceinline__ bool out_of_band(const SolverArgs& a, int t, int sweep) {
  const int b = __ldg(a.tile_graph + t);
  const unsigned long long key = __ldcg(a.graph_low + static_cast<long long>(sweep & 1) * a.num_graphs + b);
  if ((key >> 32) != (band_key(sweep, 0) >> 32)) return false;  // (never: t itself offered)
  return static_cast<long long>(__ldcg(a.tile_low + t)) > static_cast<long long>(key & 0xffffffffULL) + a.band;
}

// The least of v over the block, for every thread (block-uniform: it has a barrier).
__device__ __forceinline__ int block_min(Shared& sh, int v) {
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffU, v, o));
  if ((threadIdx.x & 31) == 0) sh.warp_low[threadIdx.x >> 5] = v;
  __syncthreads();
  int m = kInf;
  for (int w = 0; w < kThreads / 32; ++w) m = min(m, sh.warp_low[w]);
  return m;
}

// The region label of a pixel at height h (below kInf) under region heights.
__device__ __forceinline__ int region_label(int h) { return h / kRegionStep; }

// ---------------------------------------------------------------- BFS sweep
// Pixel p's label as a relabel's sweep finds it: in the first sweep 0 for a sink
// pixel (excess < 0) and kInf for every other, later the label the last sweeps left.
__device__ __forceinline__ int sweep_label(const SolverArgs& a, long long p, bool first) {
  return first ? (__ldcg(a.excess + p) < 0 ? 0 : kInf) : __ldcg(a.height + p);
}

// The same for the pixel at (x, y) of tile c's graph, kInf off the grid; kMasked: kWall
// at a wall (whose stored height stays kWall through the phase).
template <bool kMasked>
__device__ __forceinline__ int sweep_label(const SolverArgs& a, const TileCtx& c, int x, int y, bool first) {
  if (!in_grid(c, x, y)) return kInf;
  const long long p = pix(c, x, y);
  if (kMasked && first && __ldcg(a.height + p) == kWall) return kWall;
  return sweep_label(a, p, first);
}

// The residual arcs of pixel (x, y) (index p, in the grid), bit k for direction k:
// computed from the flows in a relabel's first sweep and kept in resmask (flows do
// not change until the relabel ends), so later sweeps read them back.
__device__ __forceinline__ unsigned int sweep_arcs(const SolverArgs& a, const TileCtx& c, int x, int y, long long p,
                                                   bool first) {
  if (!first) return __ldcg(a.resmask + p);
  unsigned int mask = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    if (load_residual(a, c, x, y, p, k) != 0U) mask |= 1U << k;
  }
  a.resmask[p] = static_cast<std::uint8_t>(mask);
  return mask;
}

// A sweep's visit of tile c changed a label seen by the tiles in `sides` (bit
// (dy + 1) * 3 + dx + 1 for the tile at (dx, dy) from it, the tile itself included): they
// go on the next sweep's list, and the sweep counts the tile if it listed one. i is the
// calling thread's index among those that visited the tile (threads 0..8 list, thread 0
// counts).
__device__ __forceinline__ void list_seen_neighbours(const SolverArgs& a, const TileCtx& c, int i, int sweep,
                                                     unsigned int sides) {
  if (i < 9 && (sides & (1U << i)) != 0U) {
    const int ntx = c.tx + i % 3 - 1;
    const int nty = c.ty + i / 3 - 1;
    if (ntx >= 0 && ntx < c.tiles_x && nty >= 0 && nty < c.tiles_y) {
      list_for_next_sweep(a, a.bmark, c.tile_start + nty * c.tiles_x + ntx, sweep);
    }
  }
  if (i == 0 && sides != 0U) atomicAdd(&a.header->counter[sweep % 3], 1U);
}

// Without MaxflowSchedule::rim_lists: the tile and all its neighbours. (With it the
// caller names only the neighbours whose halo holds a region label of the tile that
// moved: the tile itself is at its fixpoint against its halo, and only a neighbour's
// move can change it.)
constexpr unsigned int kTileAndNeighbours = 0x1ffU;

// The first sweep of a relabel visits every live tile; later ones the tiles next to
// (or equal to) a tile that changed a label in the previous sweep, which are never
// tiles of a retired graph.
// Relaxes tile t until it is locally stable. Returns true (block-uniform) if the tile
// changed a label.
template <bool kRegion, bool kMasked>
__device__ bool bfs_tile(const SolverArgs& a, int t, int sweep, bool first, Shared& sh) {
  const TileCtx c = tile_ctx(a, t);
  const int tid = static_cast<int>(threadIdx.x);
  const int lx = tid % kTileW;
  const int ly = tid / kTileW;
  const int x = c.x0 + lx;
  const int y = c.y0 + ly;
  const long long p = in_grid(c, x, y) ? pix(c, x, y) : 0;
  // A wall takes no part: it keeps kInf here and its stored kWall.
  const bool valid = in_grid(c, x, y) && !(kMasked && __ldcg(a.height + p) == kWall);
  const int me = (ly + 1) * kPadW + lx + 1;
  int d = kInf;
  unsigned int mask = 0;
  if (valid) {
    d = sweep_label(a, p, first);
    mask = sweep_arcs(a, c, x, y, p, first);
  }
  // The first sweep gives the sink pixels label 0, and every other label is >= 1.
  const bool sink = d == 0;
  for_each_halo_slot(c, [&](int i, int gx, int gy) {
    const int hv = halo_height<kRegion>(sweep_label<kMasked>(a, c, gx, gy, first));
    sh.h[0][i] = hv;
    sh.h[1][i] = hv;
  });
  sh.h[0][me] = d;
  __syncthreads();
  // MaxflowSchedule::rim_lists (region heights): which neighbours' halos see a region
  // label of this tile move (the last tile's readers of sh.sent finished before the
  // barrier above; every write below follows relax_to_fixpoint's barriers).
  const bool rim_lists = kRegion && a.rim_lists != 0;
  if (rim_lists && tid == 0) sh.sent = 0U;
  const int before = d;  // what the neighbours' halos held for this pixel
  const bool changed = relax_to_fixpoint(sh, me, valid && !sink && mask != 0U, mask, d);
  if (valid && (first || changed)) __stcg(a.height + p, d);
  if (rim_lists && changed && region_label(d) != region_label(before)) {
    const int xs = lx == 0 ? -1 : (lx == kTileW - 1 ? 1 : 0);
    const int ys = ly == 0 ? -1 : (ly == kTileH - 1 ? 1 : 0);
    // The neighbour beside the rim, above or below it, and at a corner the diagonal one.
    unsigned int sides = ys != 0 ? 1U << ((ys + 1) * 3 + 1) : 0U;
    if (xs != 0) sides |= (1U << (4 + xs)) | (ys != 0 ? 1U << ((ys + 1) * 3 + xs + 1) : 0U);
    if (sides != 0U) atomicOr(&sh.sent, sides);
  }
  const bool tile_changed = __syncthreads_or(changed);
  if (tile_changed) {
    list_seen_neighbours(a, c, tid, sweep, rim_lists ? sh.sent : kTileAndNeighbours);
  }
  return tile_changed;
}

// ---------------------------------------------------------------- check
// Marks tile t, and its graph in graph_active's row `row`, if a pixel of it has excess
// and a finite label.
// kBand (MaxflowSchedule::band's kernel): its lowest active region label too.
template <bool kBand>
__device__ void check_tile(const SolverArgs& a, int t, int sweep, int row, Shared& sh) {
  const TileCtx c = tile_ctx(a, t);
  const int tid = static_cast<int>(threadIdx.x);
  const int x = c.x0 + tid % kTileW;
  const int y = c.y0 + tid / kTileW;
  bool act = false;
  int h = kInf;
  if (in_grid(c, x, y)) {
    const long long p = pix(c, x, y);
    h = __ldcg(a.height + p);
    act = __ldcg(a.excess + p) > 0 && h < kInf;
  }
  const bool tile_active = __syncthreads_or(act);
  const bool band = kBand && a.band != 0;
  if (!tile_active) {
    // (What a neighbour pushes into the tile later lowers this.)
    if (band && tid == 0) __stcg(a.tile_low + t, kInf);
    return;
  }
  const int low = band ? block_min(sh, act ? region_label(h) : kInf) : kInf;
  if (tid == 0) {
    list_for_next_sweep(a, a.pmark, t, sweep);
    atomicAdd(&a.header->counter[sweep % 3], 1U);
    atomicOr(a.graph_active + row * a.num_graphs + c.b, 1);
    if (band) {
      __stcg(a.tile_low + t, low);
      offer_band(a, c.b, low, sweep);
    }
  }
}

// A relabel stopped at its cap after sweep `sweep`: the graphs whose labels were still
// changing (those of the tiles listed for the next sweep) stay live whatever their
// check finds, since pixels their wave did not reach may hold excess. A graph whose
// wave had stopped has exact labels and may retire as usual.
__device__ void keep_unfinished_graphs_live(const SolverArgs& a, int sweep, int row) {
  const int slot = (sweep + 1) % 3;
  const auto count = static_cast<long long>(__ldcg(&a.header->list_count[slot]));
  const int* list = a.lists + static_cast<long long>(slot) * a.num_tiles;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    atomicOr(a.graph_active + row * a.num_graphs + __ldg(a.tile_graph + __ldcg(list + i)), 1);
  }
}

// Runs push-relabel on tile t, which is on this sweep's list. sparse: the sweep's list
// holds fewer tiles than the grid has blocks (profiled by phase in a profiling build).
// kBand: MaxflowSchedule::band's kernel (its offers).
template <bool kRegion, bool kMasked, bool kBand>
__device__ void push_tile(const SolverArgs& a, int t, int sweep, int rounds, bool sparse, Shared& sh) {
  const int tid = static_cast<int>(threadIdx.x);
  VisitClock clock(sparse);
  const TileCtx c = tile_ctx(a, t);
  const int lx = tid % kTileW;
  const int ly = tid / kTileW;
  const int x = c.x0 + lx;
  const int y = c.y0 + ly;
  bool valid = in_grid(c, x, y);
  const long long p = valid ? pix(c, x, y) : 0;
  const int me = (ly + 1) * kPadW + lx + 1;
  // Every load of the visit is issued before the first barrier, so the visit waits for
  // memory once (a listed tile is almost always active; an idle one wastes its loads).
  // The previous visit's last reads of sh ended at its last barrier.
  long long e0 = 0;
  int h0 = kInf;
  unsigned int res[8];
  if (valid) {
    e0 = __ldcg(a.excess + p);
    h0 = __ldcg(a.height + p);
  }
#pragma unroll
  for (int k = 0; k < 8; ++k) res[k] = valid ? load_residual(a, c, x, y, p, k) : 0U;
  if (kMasked && h0 == kWall) {  // a wall: as if off the grid (its halo height stays kWall)
    valid = false;
    e0 = 0;
    h0 = kInf;
#pragma unroll
    for (int k = 0; k < 8; ++k) res[k] = 0U;
  }
  for_each_halo_slot(c, [&](int i, int gx, int gy) {
    const int hv = in_grid(c, gx, gy) ? halo_height<kRegion>(__ldcg(a.height + pix(c, gx, gy))) : kInf;
    sh.h[0][i] = hv;
    sh.h[1][i] = hv;
    sh.e[i] = 0;
  });
  if (tid == 0) sh.sent = 0U;
  if (tid < 9) sh.sent_low[tid] = kInf;
  if (!__syncthreads_or(valid && e0 > 0 && h0 < kInf)) return;
  sh.h[0][me] = h0;
#pragma unroll
  for (int k = 0; k < 8; ++k) sh.res0[k][tid] = res[k];  // in shared memory: the registers are the rounds' (res)
  __syncthreads();
  clock.lap(a.header, kSparseLoadCycles);
  long long ex = e0;
  // Region heights: the visit starts from the exact heights inside the tile.
  int relax_steps = 0;
  int hm = h0;
  if (kRegion) {
    const unsigned int mask = residual_mask(res);
    // Would one of relax_in_tile's steps (0 at a sink) from the stored heights change any
    // of them? If not, they are the exact in-tile heights already
    // (MaxflowSchedule::exact_start; the profiling build counts such visits either way).
    bool exact = false;
    if (a.exact_start != 0 || clock.active()) {
      const int relaxed = e0 < 0 ? 0 : relaxed_label(sh.h[0], me, mask, kInf);
      exact = !__syncthreads_or(valid && relaxed != h0);
      clock.count(a.header, kSparseExactStarts, exact ? 1ULL : 0ULL);
      if (a.exact_start == 0) clock.restart();  // (a check the solve does not use counts in no phase)
    }
    if (a.exact_start == 0 || !exact) hm = relax_in_tile(sh, valid, tid, ex, mask, &relax_steps);
  }
  clock.lap(a.header, kSparseRelaxCycles);
  const int round = push_sync_rounds<kRegion>(sh, rounds, valid, tid, ex, hm, res, a.relax_every);
  clock.lap(a.header, kSparseRoundsCycles);
  clock.count(a.header, kSparseVisits, 1ULL);
  clock.count(a.header, kSparseRounds, static_cast<unsigned long long>(min(round + 1, rounds)));
  clock.count(a.header, kSparseRelaxSteps, static_cast<unsigned long long>(relax_steps));
  profile_add(a.header, kPushRounds, static_cast<unsigned long long>(min(round + 1, rounds)));
  profile_add(a.header, kPushVisitsRun, 1ULL);
  profile_add(a.header, kPushVisitsCapped, round == rounds ? 1ULL : 0ULL);
  // Write back as atomic deltas (other tiles update halo pixels and shared edges).
  bool remain = false;
  if (valid) {
    if (ex != e0) atomicAdd(reinterpret_cast<unsigned long long*>(a.excess + p), static_cast<unsigned long long>(ex - e0));
    if (hm != h0) __stcg(a.height + p, hm);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const unsigned int rf = res[k];
      const unsigned int r0 = sh.res0[k][tid];
      if (rf == r0) continue;
      const int nlx = lx + dir_dx(k);
      const int nly = ly + dir_dy(k);
      const bool inner = nlx >= 0 && nlx < kTileW && nly >= 0 && nly < kTileH;
      // Into the halo: all of r0 - rf went to that pixel (it never pushed back).
      if (!inner) {
        atomicAdd(reinterpret_cast<unsigned long long*>(&sh.e[me + dir_dy(k) * kPadW + dir_dx(k)]),
                  static_cast<unsigned long long>(r0 - rf));
      }
      if (k < 4) {
        atomicAdd(a.flow + static_cast<long long>(k) * a.pixels + p, static_cast<int>(r0 - rf));
      } else if (!inner) {  // (an in-tile arc's owner writes its flow)
        const long long q = pix(c, x + dir_dx(k), y + dir_dy(k));
        atomicAdd(a.flow + static_cast<long long>(k - 4) * a.pixels + q, static_cast<int>(rf - r0));
      }
    }
    remain = ex > 0 && hm < kInf;
    // MaxflowSchedule::band: the lowest region label the tile keeps active (slot 4 of
    // sent_low, the tile itself, which no halo slot names).
    if (kBand && a.band != 0 && remain) atomicMin(&sh.sent_low[4], region_label(hm));
  }
  const bool again = __syncthreads_or(remain);  // (and the halo's inflow is complete)
  const bool band = kBand && a.band != 0;  // MaxflowSchedule::band's offers
  for_each_halo_slot(c, [&](int i, int gx, int gy) {
    const long long v = sh.e[i];
    if (v == 0) return;
    atomicAdd(reinterpret_cast<unsigned long long*>(a.excess + pix(c, gx, gy)), static_cast<unsigned long long>(v));
    const int dx = gx < c.x0 ? -1 : (gx >= c.x0 + kTileW ? 1 : 0);
    const int dy = gy < c.y0 ? -1 : (gy >= c.y0 + kTileH ? 1 : 0);
    atomicOr(&sh.sent, 1U << ((dy + 1) * 3 + dx + 1));
    // (The halo's height, frozen through the visit, is (D + 1) * kRegionStep: finite,
    // since excess went there.)
    if (band) atomicMin(&sh.sent_low[(dy + 1) * 3 + dx + 1], region_label(sh.h[0][i]) - 1);
  });
  __syncthreads();
  // The tiles that take part in the next sweep: the neighbours the visit sent excess to
  // and this tile if it kept some, listed side by side by threads 0..8 (each list_for_next_sweep
  // waits for two atomics), counted once. With MaxflowSchedule::band each offers its
  // lowest active label: this tile the one it kept (stored: a diagonal neighbour's push
  // in this sweep may be overwritten, which only delays this tile), a neighbour the
  // lowest it was sent.
  const unsigned int next = sh.sent | (again ? 1U << 4 : 0U);
  if (tid < 9 && (next & (1U << tid)) != 0U) {
    const int listed = c.tile_start + (c.ty + tid / 3 - 1) * c.tiles_x + c.tx + tid % 3 - 1;
    list_for_next_sweep(a, a.pmark, listed, sweep);
    if (band) {
      const int low = sh.sent_low[tid];
      if (tid == 4) {
        __stcg(a.tile_low + listed, low);
      } else {
        atomicMin(a.tile_low + listed, low);
      }
      offer_band(a, c.b, low, sweep);
    }
  }
  if (tid == 0 && next != 0U) atomicAdd(&a.header->counter[sweep % 3], 1U);
  clock.lap(a.header, kSparseWriteCycles);
}

// MaxflowSchedule::checkerboard: a tile's colour (its graph's tiles in a checkerboard);
// the solve's push sweep i visits the tiles of colour i % 2 and passes the others it
// was given on to the next sweep.
__device__ __forceinline__ int tile_colour(const SolverArgs& a, int t) {
  const TileCtx c = tile_ctx(a, t);
  return (c.tx + c.ty) & 1;
}

// A listed tile that this sweep passes on to the next (its colour, or MaxflowSchedule::band).
template <bool kBand>
__device__ __forceinline__ void defer_tile(const SolverArgs& a, int t, int sweep) {
  if (threadIdx.x == 0) {
    list_for_next_sweep(a, a.pmark, t, sweep);
    atomicAdd(&a.header->counter[sweep % 3], 1U);
    if (kBand && a.band != 0) offer_band(a, __ldg(a.tile_graph + t), __ldcg(a.tile_low + t), sweep);
  }
}

// ---------------------------------------------------------------- final cut
__device__ void cut_tile(const SolverArgs& a, int t, Shared& sh) {
  const TileCtx c = tile_ctx(a, t);
  const int tid = static_cast<int>(threadIdx.x);
  const int x = c.x0 + tid % kTileW;
  const int y = c.y0 + tid / kTileW;
  long long cap = 0;
  if (in_grid(c, x, y)) {
    const long long p = pix(c, x, y);
    const bool src = __ldcg(a.height + p) >= kInf;
    a.source_side[p] = src ? 1 : 0;
    const long long term = __ldg(a.terminal + p);
    if (src && term < 0) cap -= term;
    if (!src && term > 0) cap += term;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int nx = x + dir_dx(k);
      const int ny = y + dir_dy(k);
      if (!in_grid(c, nx, ny)) continue;
      const bool nsrc = __ldcg(a.height + pix(c, nx, ny)) >= kInf;
      if (nsrc != src) cap += __ldg(a.nlink[k] + p);
    }
  }
  if (a.flows == nullptr) return;
  for (int o = 16; o > 0; o >>= 1) cap += __shfl_down_sync(0xffffffffU, cap, o);
  if ((tid & 31) == 0) sh.red[tid >> 5] = cap;
  __syncthreads();
  if (tid == 0) {
    long long s = 0;
    for (int w = 0; w < kThreads / 32; ++w) s += sh.red[w];
    if (s != 0) atomicAdd(a.flows + c.b, static_cast<unsigned long long>(s));
  }
  __syncthreads();
}

// The end of reverse_warm's phase: excess and flows back to their signs (the walls keep
// kWall until the next launch's first relabel sweep labels every pixel).
__device__ void unmask_tile(const SolverArgs& a, int t) {
  const TileCtx c = tile_ctx(a, t);
  const int tid = static_cast<int>(threadIdx.x);
  const int x = c.x0 + tid % kTileW;
  const int y = c.y0 + tid / kTileW;
  if (in_grid(c, x, y)) negate_pixel(a, pix(c, x, y));
}

__device__ __forceinline__ unsigned int read_counter(const SolverArgs& a, int sweep) {
  return __ldcg(&a.header->counter[sweep % 3]);
}

// Runs `work(t)` on this block's tiles (t = blockIdx.x + i * gridDim.x) for which
// `need(t)` holds, in increasing order, and returns how many there were. The block
// decides kThreads tiles at once, one per thread, and compacts those that need work
// into a list: a sweep over a batch of mostly settled tiles then costs one round of
// loads per kThreads tiles instead of a chain of dependent loads per tile. A tile
// marked while the sweep runs is found by the next sweep (marks are >= sweep + 1).
template <class Need, class Work>
__device__ int sweep_tiles(const SolverArgs& a, Shared& sh, Need need, Work work) {
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int stride = static_cast<int>(gridDim.x);
  int worked = 0;
  // int is enough: the host checks num_tiles + kThreads * gridDim.x < 2^31.
  for (int base = static_cast<int>(blockIdx.x); base < a.num_tiles; base += kThreads * stride) {
    const int t = base + tid * stride;
    const bool want = t < a.num_tiles && need(t);
    const unsigned int ballot = __ballot_sync(0xffffffffU, want);
    if (lane == 0) sh.warp_count[warp] = __popc(ballot);
    __syncthreads();
    int before = 0;
    int total = 0;
    for (int w = 0; w < kThreads / 32; ++w) {
      const int n = sh.warp_count[w];
      before += w < warp ? n : 0;
      total += n;
    }
    if (want) sh.list[before + __popc(ballot & ((1U << lane) - 1U))] = t;
    __syncthreads();
    for (int i = 0; i < total; ++i) work(sh.list[i]);
    worked += total;
    __syncthreads();  // the next chunk rewrites the list
  }
  return worked;
}

// The number of tiles on sweep `sweep`'s list (complete since the last grid barrier;
// every block reads the same).
__device__ __forceinline__ unsigned int list_size(const SolverArgs& a, int sweep) {
  return __ldcg(&a.header->list_count[sweep % 3]);
}

// Runs `work(t)` on tiles of this sweep's list (count tiles, list_size), taken one at a
// time by the block's thread 0, until the list is exhausted; returns how many this block
// ran. The taken tile goes through shared memory in alternating slots, so thread 0 can
// take the next one while others still read the last (work has a barrier in between).
// A list no longer than the grid is emptied by the blocks' first takes (each block takes
// once before it can take again), so then a block takes once: a visit's block does not
// wait for a second take that must come back empty.
template <class Work>
__device__ int pull_tiles(const SolverArgs& a, Shared& sh, int sweep, unsigned int count, Work work) {
  const int slot = sweep % 3;
  const int* list = a.lists + static_cast<long long>(slot) * a.num_tiles;
  const bool once = count <= gridDim.x;
  int worked = 0;
  for (int parity = 0;; parity ^= 1) {
    if (threadIdx.x == 0) {
      const unsigned int i = atomicAdd(&a.header->list_next[slot], 1U);
      sh.pulled[parity] = i < count ? __ldcg(list + i) : -1;
    }
    __syncthreads();
    const int t = sh.pulled[parity];
    if (t < 0) break;
    work(t);
    ++worked;
    if (once) break;
  }
  return worked;
}

// The list slot that sweep `sweep` empties for sweep + 2: last used by sweep - 1, whose
// blocks all finished with it before the barrier that ended that sweep.
__device__ __forceinline__ void clear_list_slot(const SolverArgs& a, int sweep) {
  a.header->list_count[(sweep + 2) % 3] = 0U;
  a.header->list_next[(sweep + 2) % 3] = 0U;
}

// Whether tile t takes part in this launch's relabels and checks: every tile, except in
// reverse_warm's phase a tile of walls only (nothing in it can move).
template <bool kMasked>
__device__ __forceinline__ bool takes_part(const SolverArgs& a, int t) {
  return !kMasked || __ldcg(a.tile_s + t) != 0;
}

// kMasked: MaxflowSchedule::reverse_warm's phase (with kRegion): the reversed graph on
// the last source side, then excess and flows back to their signs, and no cut.
// kBand: MaxflowSchedule::band (with kRegion, without kMasked), its own instantiation so
// that the other kernels keep their registers.
template <bool kRegion, bool kMasked, bool kBand = false>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) maxflow_kernel(SolverArgs a) {
  __shared__ Shared sh;
  cg::grid_group grid = cg::this_grid();
  const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
  init_phase<kBand, kMasked>(a);
  grid.sync();
  PhaseClock phase_clock;  // block 0: the grid's time per phase
  PhaseClock busy_clock;   // every block: its time working in sweeps
  phase_clock.start();
  // Per-block counters, 32-bit to spare registers (a block relaxes far fewer than
  // 2^32 tiles in one solve).
  unsigned int bfs_tiles = 0;
  unsigned int push_tiles = 0;
  unsigned int check_tiles = 0;
  unsigned int relabels = 0;
  unsigned int bfs_sweeps = 0;
  unsigned int push_sweeps = 0;
  int sweep = 0;
  bool uncapped = false;  // the next relabel runs to the end (see MaxflowSchedule::bfs_cap)
  int cap = a.bfs_cap;    // doubles where it proved too short with MaxflowSchedule::grow_cap
  for (int relabel = 0;; ++relabel) {
    ++relabels;
    // This relabel's check writes row `row` of graph_active; the previous relabel was
    // the last to read it (through graph_live), before the barrier that ended its check.
    const int row = relabel & 1;
    if (relabel > 0) {
      const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
      for (long long g = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; g < a.num_graphs;
           g += stride) {
        a.graph_active[row * a.num_graphs + g] = 0;
      }
    }
    // The tiles of this relabel's first sweep and of its check.
    const auto live = [&](int t) {
      return graph_live(a, __ldg(a.tile_graph + t), relabel) && takes_part<kMasked>(a, t);
    };
    // Global relabel: exact BFS from the sink over the live graphs, or its first
    // bfs_cap sweeps (every block takes the same decisions: they read the same counters
    // after the same barriers).
    bool first = true;
    bool capped = false;
    for (int relabel_sweeps = 1;; ++relabel_sweeps) {
      ++sweep;
      ++bfs_sweeps;
      if (leader) {
        a.header->counter[(sweep + 1) % 3] = 0U;
        clear_list_slot(a, sweep);
      }
      busy_clock.start();
      const auto relax = [&](int t) {
        if (takes_part<kMasked>(a, t)) bfs_tile<kRegion, kMasked>(a, t, sweep, first, sh);
      };
      const int relaxed =
          first ? sweep_tiles(a, sh, live, relax) : pull_tiles(a, sh, sweep, list_size(a, sweep), relax);
      bfs_tiles += static_cast<unsigned int>(relaxed);
      busy_clock.lap(a.header, kBfsBusyNs);
      trace_tiles(sweep, relaxed);
      grid.sync();
      if (blockIdx.x == 0) trace_sweep(sweep, detail::SweepKind::kBfs, phase_clock.lap(a.header, kBfsNs));
      first = false;
      if (read_counter(a, sweep) == 0U) break;
      if (cap > 0 && !uncapped && relabel_sweeps >= cap) {
        capped = true;
        if (leader) ++a.header->stats[kCappedRelabels];  // counted in memory: no register for it
        break;
      }
    }
    uncapped = false;
    // The check (next sweep) does not empty the list slot read here.
    if (capped) keep_unfinished_graphs_live(a, sweep, row);
    // Is any excess still able to reach the sink?
    ++sweep;
    if (leader) {
      a.header->counter[(sweep + 1) % 3] = 0U;
      clear_list_slot(a, sweep);
    }
    const int checked = sweep_tiles(a, sh, live, [&](int t) { check_tile<kBand>(a, t, sweep, row, sh); });
    check_tiles += static_cast<unsigned int>(checked);
    trace_tiles(sweep, checked);
    grid.sync();
    if (blockIdx.x == 0) trace_sweep(sweep, detail::SweepKind::kCheck, phase_clock.lap(a.header, kCheckNs));
    if (read_counter(a, sweep) == 0U) {
      // Nothing to push: the solve is done, unless the relabel stopped at its cap and
      // left pixels unlabelled (their excess waited): then a whole relabel decides.
      // (reverse_warm's phase need not end exact: the forward solve does.)
      if (!capped || kMasked) break;
      uncapped = true;
      // The excess of some graph lies beyond the cap: stopping short of it again would
      // waste the next relabel too.
      if (a.grow_cap != 0 && cap < (1 << 29)) cap *= 2;
      continue;
    }
    for (int i = 0; i < a.push_sweep_limit; ++i) {
      ++sweep;
      ++push_sweeps;
      if (leader) {
        a.header->counter[(sweep + 1) % 3] = 0U;
        clear_list_slot(a, sweep);
      }
      // A tile is listed by its own last visit or a neighbour's push, or by the check.
      busy_clock.start();
      // The colour alternates over all push sweeps of the solve, not within a relabel's
      // cycle: with one push sweep a cycle, the second colour would never be visited.
      // (Region heights only: the checkerboard slowed v0.13c's schedule, 0.86x at 1 MP,
      // and its branch cost the default kernel spill loads.)
      const int colour = static_cast<int>(push_sweeps & 1U);
      // (Every block reads the same count: the list was complete at the last barrier.)
      const unsigned int listed = list_size(a, sweep);
      const bool sparse = listed < gridDim.x;
      const int pushed = pull_tiles(a, sh, sweep, listed, [&](int t) {
        if ((kRegion && a.checkerboard != 0 && tile_colour(a, t) != colour) ||
            (kBand && a.band != 0 && out_of_band(a, t, sweep))) {
          defer_tile<kBand>(a, t, sweep);
        } else {
          push_tile<kRegion, kMasked, kBand>(a, t, sweep, a.local_rounds, sparse, sh);
        }
      });
      push_tiles += static_cast<unsigned int>(pushed);
      busy_clock.lap(a.header, kPushBusyNs);
      trace_tiles(sweep, pushed);
      grid.sync();
      if (blockIdx.x == 0) trace_sweep(sweep, detail::SweepKind::kPush, phase_clock.lap(a.header, kPushNs));
      if (read_counter(a, sweep) == 0U) break;
    }
  }
  for (int t = static_cast<int>(blockIdx.x); t < a.num_tiles; t += static_cast<int>(gridDim.x)) {
    if (kMasked) {
      unmask_tile(a, t);
    } else {
      cut_tile(a, t, sh);
    }
  }
  if (threadIdx.x == 0) {
    atomicAdd(&a.header->stats[kBfsTiles], static_cast<unsigned long long>(bfs_tiles));
    atomicAdd(&a.header->stats[kPushTiles], static_cast<unsigned long long>(push_tiles));
    atomicAdd(&a.header->stats[kCheckTiles], static_cast<unsigned long long>(check_tiles));
  }
  if (leader) {
    a.header->stats[kRelabels] += relabels;
    a.header->stats[kBfsSweeps] += bfs_sweeps;
    a.header->stats[kPushSweeps] += push_sweeps;
    a.header->stats[kGridBlocks] = gridDim.x;
  }
}

__global__ void write_graphs_kernel(GraphDev* graphs, DescChunk chunk) {
  const int i = static_cast<int>(threadIdx.x);
  if (i < chunk.count) graphs[chunk.first + i] = chunk.g[i];
}

__global__ void tile_graph_kernel(const GraphDev* graphs, int num_graphs, int* tile_graph, int num_tiles) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= num_tiles) return;
  // Last graph whose tile_start <= t among graphs with tiles (tile_start is
  // non-decreasing; graphs without pixels own no tiles).
  int lo = 0;
  int hi = num_graphs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (graphs[mid].tile_start <= t) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  // Skip back over empty graphs that share the same tile_start.
  while (graphs[lo].tiles_x * graphs[lo].tiles_y == 0 ||
         t >= graphs[lo].tile_start + graphs[lo].tiles_x * graphs[lo].tiles_y) {
    --lo;
  }
  tile_graph[t] = lo;
}

}  // namespace

std::size_t maxflow_workspace_bytes(const std::vector<GridDesc>& desc) { return make_layout(desc).total; }

void maxflow_cuda(const BatchedGridGraph& graph, std::uint8_t* source_side, std::int64_t* flows, void* workspace,
                  std::size_t workspace_bytes, bool warm_start, cudaStream_t stream,
                  const MaxflowSchedule& schedule) {
  if (schedule.push_visits < 1 || schedule.local_rounds < 1 || schedule.bfs_cap < 0 || schedule.band < 0 ||
      schedule.relax_every < 0) {
    throw std::invalid_argument("maxflow_cuda: bad schedule (push_visits " + std::to_string(schedule.push_visits) +
                                ", local_rounds " + std::to_string(schedule.local_rounds) + ", bfs_cap " +
                                std::to_string(schedule.bfs_cap) + ", band " + std::to_string(schedule.band) +
                                ", relax_every " + std::to_string(schedule.relax_every) + ")");
  }
  const Layout l = make_layout(graph.desc);
  if (graph.desc.empty()) return;
  if (graph.total_pixels < l.pixels) {
    throw std::invalid_argument("maxflow_cuda: total_pixels " + std::to_string(graph.total_pixels) +
                                " is smaller than the extent of the graphs, " + std::to_string(l.pixels));
  }
  if (workspace_bytes < l.total || (workspace == nullptr && l.total > 0)) {
    throw std::invalid_argument("maxflow_cuda: workspace of " + std::to_string(workspace_bytes) +
                                " bytes, expected at least " + std::to_string(l.total));
  }
  if (reinterpret_cast<std::uintptr_t>(workspace) % 16 != 0) {
    throw std::invalid_argument("maxflow_cuda: workspace must be 16-byte aligned");
  }
  const auto num_graphs = static_cast<int>(graph.desc.size());
  if (flows != nullptr) {
    GRABCUT_CUDA_CHECK(cudaMemsetAsync(flows, 0, sizeof(std::int64_t) * graph.desc.size(), stream));
  }
  if (l.tiles == 0) return;
  if (graph.terminal == nullptr || graph.nlink[0] == nullptr || graph.nlink[1] == nullptr ||
      graph.nlink[2] == nullptr || graph.nlink[3] == nullptr || source_side == nullptr) {
    throw std::invalid_argument("maxflow_cuda: null device array for a non-empty batch");
  }
  auto* base = static_cast<unsigned char*>(workspace);
  auto* graphs = reinterpret_cast<GraphDev*>(base + l.graphs);

  // Graph descriptors travel as kernel parameters (no host buffer, no host sync).
  int tile_start = 0;
  long long most_tiles = 0;
  for (int first = 0; first < num_graphs; first += kDescChunk) {
    DescChunk chunk{};
    chunk.first = first;
    chunk.count = std::min(kDescChunk, num_graphs - first);
    for (int i = 0; i < chunk.count; ++i) {
      const GridDesc& d = graph.desc[static_cast<std::size_t>(first + i)];
      GraphDev& g = chunk.g[i];
      g.offset = d.offset;
      g.height = d.height;
      g.width = d.width;
      const bool empty = d.height == 0 || d.width == 0;
      g.tiles_x = empty ? 0 : (d.width + kTileW - 1) / kTileW;
      g.tiles_y = empty ? 0 : (d.height + kTileH - 1) / kTileH;
      g.tile_start = tile_start;
      g.pad = 0;
      tile_start += g.tiles_x * g.tiles_y;
      most_tiles = std::max<long long>(most_tiles, static_cast<long long>(g.tiles_x) * g.tiles_y);
    }
    write_graphs_kernel<<<1, kDescChunk, 0, stream>>>(graphs, chunk);
    GRABCUT_CUDA_CHECK_LAUNCH("write_graphs_kernel");
  }
  const auto num_tiles = static_cast<int>(l.tiles);
  auto* tile_graph = reinterpret_cast<int*>(base + l.tile_graph);
  tile_graph_kernel<<<(num_tiles + 255) / 256, 256, 0, stream>>>(graphs, num_graphs, tile_graph, num_tiles);
  GRABCUT_CUDA_CHECK_LAUNCH("tile_graph_kernel");

  SolverArgs a{};
  a.graphs = graphs;
  a.tile_graph = tile_graph;
  a.graph_active = reinterpret_cast<int*>(base + l.graph_active);
  a.num_graphs = num_graphs;
  a.num_tiles = num_tiles;
  a.pixels = l.pixels;
  a.terminal = graph.terminal;
  for (int d = 0; d < 4; ++d) a.nlink[d] = graph.nlink[d];
  a.excess = reinterpret_cast<long long*>(base + l.excess);
  a.height = reinterpret_cast<int*>(base + l.height);
  a.flow = reinterpret_cast<int*>(base + l.flow);
  a.old_term = reinterpret_cast<std::int32_t*>(base + l.old_term);
  a.resmask = reinterpret_cast<std::uint8_t*>(base + l.resmask);
  a.pmark = reinterpret_cast<int*>(base + l.pmark);
  a.bmark = reinterpret_cast<int*>(base + l.bmark);
  a.lists = reinterpret_cast<int*>(base + l.lists);
  a.tile_s = reinterpret_cast<int*>(base + l.tile_s);
  a.tile_low = reinterpret_cast<int*>(base + l.tile_low);
  a.graph_low = reinterpret_cast<unsigned long long*>(base + l.graph_low);
  a.header = reinterpret_cast<Header*>(base + l.header);
  a.source_side = source_side;
  a.flows = reinterpret_cast<unsigned long long*>(flows);
  a.warm = warm_start ? 1 : 0;
  a.push_sweep_limit = schedule.push_visits;
  a.local_rounds = schedule.local_rounds;
  a.bfs_cap = schedule.bfs_cap;
  a.grow_cap = schedule.grow_cap ? 1 : 0;
  // Region heights are exact while every exact height, D * kRegionStep + the steps in
  // the last tile, stays below kInf. D counts the tile boundaries a shortest residual path
  // crosses: each crossing enters a pixel on the rim of a tile, and a shortest path
  // enters a pixel once, so D is below the graph's rim pixels (kRimPixels a tile). A graph
  // with more tiles than that allows (about 5.8 megapixels) runs pixel heights: the same
  // cut and flow, only the time differs.
  constexpr long long kRimPixels = 2 * kTileW + 2 * (kTileH - 2);
  const bool region = schedule.region && (most_tiles * kRimPixels + 2) * kRegionStep < kInf;
  a.checkerboard = region && schedule.checkerboard ? 1 : 0;
  a.exact_start = region && schedule.exact_start ? 1 : 0;
  a.keep_stats = 0;
  a.band = 0;  // never in reverse_warm's phase
  a.rim_lists = schedule.rim_lists ? 1 : 0;
  a.relax_every = region ? schedule.relax_every : 0;

  int device = 0;
  GRABCUT_CUDA_CHECK(cudaGetDevice(&device));
  int coop = 0;
  GRABCUT_CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device));
  if (coop == 0) throw std::runtime_error("maxflow_cuda: the device does not support cooperative launches");
  int sms = 0;
  GRABCUT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // The region schedule is its own instantiation, so the default's registers stay as they
  // were; so is reverse_warm's phase.
  const auto launch = [&](const void* kernel) {
    int per_sm = 0;
    GRABCUT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
    if (per_sm < 1) throw std::runtime_error("maxflow_cuda: the solver kernel cannot be resident");
    const int blocks = static_cast<int>(std::min<long long>(num_tiles, static_cast<long long>(per_sm) * sms));
    if (num_tiles + static_cast<long long>(kThreads) * blocks > 0x7fffffffLL) {
      throw std::invalid_argument("maxflow_cuda: batch too large (tile count)");
    }
    void* args[] = {&a};
    GRABCUT_CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3(kThreads), args, 0, stream));
  };
  if (region && warm_start && schedule.reverse_warm) {
    launch(reinterpret_cast<const void*>(maxflow_kernel<true, true>));
    a.keep_stats = 1;  // the solve's statistics count both launches
  }
  a.band = region ? schedule.band : 0;
  if (a.band != 0) {
    launch(reinterpret_cast<const void*>(maxflow_kernel<true, false, true>));
  } else {
    launch(region ? reinterpret_cast<const void*>(maxflow_kernel<true, false>)
                  : reinterpret_cast<const void*>(maxflow_kernel<false, false>));
  }
}

namespace detail {

MaxflowStats maxflow_read_stats(const void* workspace, cudaStream_t stream) {
  Header h{};
  // Only the statistics: the rest of the header is never read back (its padding is
  // never written).
  GRABCUT_CUDA_CHECK(cudaMemcpyAsync(h.stats, static_cast<const unsigned char*>(workspace) + offsetof(Header, stats),
                                     sizeof(h.stats), cudaMemcpyDeviceToHost, stream));
  GRABCUT_CUDA_CHECK(cudaStreamSynchronize(stream));
  MaxflowStats s;
  s.global_relabels = h.stats[kRelabels];
  s.bfs_sweeps = h.stats[kBfsSweeps];
  s.push_sweeps = h.stats[kPushSweeps];
  s.bfs_tiles = h.stats[kBfsTiles];
  s.push_tiles = h.stats[kPushTiles];
  s.grid_blocks = h.stats[kGridBlocks];
  s.check_tiles = h.stats[kCheckTiles];
  s.bfs_ns = h.stats[kBfsNs];
  s.check_ns = h.stats[kCheckNs];
  s.push_ns = h.stats[kPushNs];
  s.bfs_busy_ns = h.stats[kBfsBusyNs];
  s.push_busy_ns = h.stats[kPushBusyNs];
  s.push_rounds = h.stats[kPushRounds];
  s.push_visits_run = h.stats[kPushVisitsRun];
  s.push_visits_capped = h.stats[kPushVisitsCapped];
  s.capped_relabels = h.stats[kCappedRelabels];
  s.sparse_visits = h.stats[kSparseVisits];
  s.sparse_load_cycles = h.stats[kSparseLoadCycles];
  s.sparse_relax_cycles = h.stats[kSparseRelaxCycles];
  s.sparse_rounds_cycles = h.stats[kSparseRoundsCycles];
  s.sparse_write_cycles = h.stats[kSparseWriteCycles];
  s.sparse_rounds = h.stats[kSparseRounds];
  s.sparse_relax_steps = h.stats[kSparseRelaxSteps];
  s.sparse_exact_starts = h.stats[kSparseExactStarts];
  return s;
}

std::vector<SweepRecord> maxflow_read_sweeps(cudaStream_t stream) {
  std::vector<SweepRecord> sweeps;
#ifdef GRABCUT_MAXFLOW_PHASE_CLOCK
  unsigned int count = 0;
  GRABCUT_CUDA_CHECK(cudaMemcpyFromSymbolAsync(&count, g_sweep_count, sizeof(count), 0, cudaMemcpyDeviceToHost, stream));
  GRABCUT_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto n = static_cast<std::size_t>(std::min<unsigned int>(count, kTraceSweeps));
  std::vector<unsigned long long> ns(n);
  std::vector<unsigned int> tiles(n);
  std::vector<unsigned char> kind(n);
  if (n > 0) {
    GRABCUT_CUDA_CHECK(cudaMemcpyFromSymbolAsync(ns.data(), g_sweep_ns, n * sizeof(ns[0]), 0, cudaMemcpyDeviceToHost,
                                                 stream));
    GRABCUT_CUDA_CHECK(cudaMemcpyFromSymbolAsync(tiles.data(), g_sweep_tiles, n * sizeof(tiles[0]), 0,
                                                 cudaMemcpyDeviceToHost, stream));
    GRABCUT_CUDA_CHECK(cudaMemcpyFromSymbolAsync(kind.data(), g_sweep_kind, n * sizeof(kind[0]), 0,
                                                 cudaMemcpyDeviceToHost, stream));
    GRABCUT_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  // Sweep 0 is the init phase, never traced.
  for (std::size_t i = 1; i < n; ++i) sweeps.push_back({static_cast<SweepKind>(kind[i]), tiles[i], ns[i]});
#else
  (void)stream;
#endif
  return sweeps;
}

}  // namespace detail
}  // namespace grabcut::cuda
