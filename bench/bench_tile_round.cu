// What one synchronous push-relabel round of a 32x16 tile costs on the GPU (issue 33):
// the block-synchronous round of the max-flow (csrc/cuda/maxflow.cu, push_sync_rounds)
// against warp-synchronous rounds, on the same tile states, checked bit for bit
// against a host reference. Torch-free; CUDA events, warm-up, medians.
//
// Tile states: the cold-start state of a GrabCut-like 1024x1024 graph (the scene and
// seed of bench_maxflow_cuda's 1 MP graph) cut into 32x16 tiles with a 1-pixel halo.
// Per pixel: excess = the terminal (int64; negative = remaining sink capacity), 8
// residuals (uint32; load_residual's rule at flow 0: forward arcs k < 4 the pixel's
// n-link, reverse arcs the neighbour's, 0 off the grid), a height. Heights (--heights):
//   global (default)  the exact BFS distance to the sink over the whole graph's
//                     residual arcs (sink = excess < 0 at 0, kInf where unreachable),
//                     halo included: the state push_tile finds after an uncapped
//                     global relabel of a cold solve.
//   tile              a region discharge's start (bench/model_region_discharge.cpp with
//                     every region label 0): the exact in-tile distance to the tile's
//                     own sinks, or B + the in-tile steps to the halo where no in-tile
//                     path reaches a sink, with every in-grid halo pixel frozen
//                     at B = 2 x the tile's pixels (kInf off the grid). Excess drains to
//                     the tile's sinks first, then out across its boundary.
//
// The round (push_sync_rounds): every active pixel (excess > 0, height < kInf) pushes
// min(left, r) to each residual neighbour strictly lower, directions k = 0..7 in turn;
// then every pixel takes in what was pushed to it, and an active one with no residual
// neighbour strictly lower rises to 1 + its lowest residual neighbour (kInf if none).
// All decisions of a round read the heights at its start; halo heights are frozen, and
// what the rounds push into the halo adds up in a halo inbox. A tile with no active
// pixel runs no round (as push_tile); otherwise rounds run until no pixel is active
// after a round, or R rounds (the latency rows disable the early stop: exactly R).
//
// Kernels (one tile = 512 pixels):
//   A        a push visit of maxflow.cu (push_tile around the solver's own
//            push_sync_rounds<false>, csrc/cuda/maxflow_round.h), so its rows are the
//            solver's round: one block of 512 threads a tile, a pixel a
//            thread, each pixel's excess, height and 8 residuals in its thread's
//            registers. A round: the heights from one of two shared-memory buffers, the
//            pushes written to per-arc outboxes in shared memory (zeros where nothing
//            went; an idle pixel writes its zeros once), a barrier, each pixel takes in
//            what its in-tile neighbours sent (to its excess and to its own residual
//            back towards the sender), relabels into the other buffer, a second
//            barrier. No shared-memory atomics in a round: the halo's inflow is read off
//            the residuals at the visit's end (res0 - res; a frozen halo never pushes
//            back), and the inbox comparison checks that derivation. Region heights'
//            extras (a __syncthreads_or at the push barrier, an in-tile relaxation after
//            a round that moves nothing) are left out: the reference has no relaxation.
//            For scale, two rounds this bench no longer runs (the solver runs neither),
//            on an H100's latency rows (bench/RESULTS.md, issue 33): the residuals in
//            shared memory, a pusher raising the receiver's residual and its inbox by
//            64-bit shared-memory atomics (CAS loops), 1.5-2.1 us a round; outboxes with
//            the residuals still in shared memory, 1.75-2.2 us.
//   B.reg    one warp a tile (4 tiles a block): lane = column x, the column's 16 rows in
//            registers (height, excess, and the 8 x 16 residuals); neighbour columns'
//            heights and the amounts pushed across columns move by __shfl_sync; no block
//            barrier. A round is one pass down the rows: row y pushes, then row y - 1
//            (whose inflow is complete once rows y - 2..y pushed) takes in its inflow
//            and relabels, from the heights at the round's start.
//   B.smem   the same with the residuals in the warp's shared memory ([k][y][lane]:
//            each lane only ever touches its own column's, so no bank conflicts and no
//            synchronisation).
//   C128, C256  a block of 128 or 256 threads a tile, the tile's whole state in shared
//            memory, each round only over the pixels it concerns: the active ones push
//            from a list, the pixels they touched (a bitmap compacted by one warp) take in
//            and relabel. Less work than A where few pixels are active; on an H100 its
//            round is 2.5-4x slower than A's even then (bench/RESULTS.md, issue 33,
//            session 44): a round's latency is its chain of dependent shared-memory
//            steps, which C lengthens.
//
// Output: one table (median of --runs runs after warm-up): throughput rows run every
// tile of the graph with early stop at R = 12 and 32 (the solvers' caps), ns per
// tile-round = kernel time / rounds run over all tiles; latency rows run the N tiles
// that the reference needs most rounds for (N = one and two per SM) for exactly R rounds,
// us per round = kernel time / R (the critical path of a grid-wide step). Each
// kernel's registers and local (spill) bytes from cudaFuncGetAttributes.
//
//   bench_tile_round [--host-only] [--relax [--drop-arcs P] [--keep-sinks P]]
//                    [--heights global|tile] [--size N] [--seed S] [--runs N] [--emulate N]
//                    [--advance N]
// --advance N: the tiles as the reference leaves them after N rounds (the halo's heights
// frozen, what went into it gone): a visit's later, sparser state (2.5% of the pixels
// active after 16 rounds, against 41% at the cold start).
// --host-only needs no GPU: it builds the tiles, prints the reference's round statistics,
// checks that the reference's halo inbox equals res0 - res on the arcs leaving each tile
// (what kernel A's inbox rests on), and runs kernel B's own code on host fibers (a
// lockstep warp) for the N hardest tiles at R = 32 and N tiles spread over the graph
// (--emulate, default 8), checked like the GPU's results. Exit status 1 if any check or
// kernel's state differs from the reference.
//
// --relax: instead of the rounds, the exact in-tile BFS relaxation that a global
// relabel's tile visit (bfs_tile) and a region discharge's exact heights run, on the same
// tiles: labels start at 0 on the pixels with sink capacity left (excess < 0) and kInf
// elsewhere, with the halo frozen as the heights mode has it, and relax to the fixpoint
// label(p) = min over residual arcs p -> q of 1 + label(q). The host reference is a
// Dijkstra per tile; the fixpoint also equals the interior heights the tile set was
// built with. Kernels:
//   A        bfs_tile's relaxation: a block of 512 threads a tile, Jacobi steps over two
//            label buffers in shared memory, one __syncthreads_or a step.
//   B        a warp a tile (x4: four tiles a block; x1: one), lane = column, its 16 labels
//            and residual bits (a byte a pixel, four to a register) in registers; the
//            frozen halo's arcs taken once at the start; a step is a pass up and a pass
//            down the column (Gauss-Seidel over the vertical arcs), then the horizontal
//            and diagonal arcs from the neighbour columns' labels by shuffles; a warp vote
//            ends it at the first step that changes nothing.
// Each kernel's labels must equal the reference bit for bit, its step counts its schedule
// run on the host (jacobi_model, column_model). Rows: every tile (throughput, ns per
// tile), then the 1 x and 2 x SMs tiles with most steps under the kernel's own schedule
// (latency: each tile runs to its own fixpoint, so the kernel time is one relaxation's
// critical path; ns/step = time / the set's most steps). At a cold start nearly every
// arc has residual both ways and most pixels are sinks, so distances are short;
// --drop-arcs P clears P% of the arcs (each on its own) and --keep-sinks P keeps P% of
// the sinks, for the longer, winding residual paths of later relabels. With --host-only:
// the step statistics of both schedules, and kernel B's code on fibers (on the chosen
// state and, thinned 20/10, on the same tiles: the cold state's symmetric arcs hide a
// pass that reads the wrong arc's bit).
#ifdef __CUDACC__
#include <cuda_runtime.h>
#else
// Host-only compile (g++ -x c++, for sanitizers): the tile header's qualifiers vanish.
#define __host__
#define __device__
#define __forceinline__ inline
#endif
// Unrolled on the GPU (the column's arrays stay in registers only if every index is a
// constant); host compilers, nvcc's included, know no such pragma.
#ifdef __CUDA_ARCH__
#define GRABCUT_UNROLL _Pragma("unroll")
#else
#define GRABCUT_UNROLL
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ucontext.h>

#include "common/grabcut_graph.h"
#include "common/grid_graph.h"
#include "common/percentile.h"
#include "cuda/maxflow_tile.h"
#ifdef __CUDACC__
#include "cuda/check.h"
#include "cuda/maxflow_round.h"
#endif

namespace {

using grabcut::cuda::tile::dir_dx;
using grabcut::cuda::tile::dir_dy;
using grabcut::cuda::tile::kInf;
using grabcut::cuda::tile::kPad;
using grabcut::cuda::tile::kPadH;
using grabcut::cuda::tile::kPadW;
using grabcut::cuda::tile::kThreads;
using grabcut::cuda::tile::kTileH;
using grabcut::cuda::tile::kTileW;
using HostGraph = grabcut::testing::HostGridGraph;

constexpr int kPix = kThreads;  // pixels of a tile
// The halo's frozen height in --heights tile: above every in-tile distance.
constexpr int kRegionStep = 2 * kPix;
constexpr int kLongCap = 1000;  // host-only statistics: "to the end" where a tile ends at all

// N tiles' states, each in its own slice: excess [t][i], heights [t][padded slot]
// (halo included, frozen), residuals [t][k][i], i = y * kTileW + x.
struct TileSet {
  int count = 0;
  std::vector<long long> excess;
  std::vector<int> height;
  std::vector<unsigned> res;

  void resize(int n) {
    count = n;
    excess.assign(static_cast<std::size_t>(n) * kPix, 0);
    height.assign(static_cast<std::size_t>(n) * kPad, kInf);
    res.assign(static_cast<std::size_t>(n) * 8 * kPix, 0U);
  }
};

// What the rounds leave: excess, heights (interior), residuals, the halo inbox (padded
// slots, 0 in the interior) and the rounds run.
struct TileResult {
  std::vector<long long> excess;
  std::vector<int> height;
  std::vector<unsigned> res;
  std::vector<long long> inbox;
  std::vector<int> rounds;

  void resize(int n) {
    excess.assign(static_cast<std::size_t>(n) * kPix, 0);
    height.assign(static_cast<std::size_t>(n) * kPix, 0);
    res.assign(static_cast<std::size_t>(n) * 8 * kPix, 0U);
    inbox.assign(static_cast<std::size_t>(n) * kPad, 0);
    rounds.assign(static_cast<std::size_t>(n), 0);
  }
};

constexpr int pad_slot(int x, int y) { return (y + 1) * kPadW + x + 1; }
constexpr bool in_tile(int x, int y) { return x >= 0 && y >= 0 && x < kTileW && y < kTileH; }

// ---------------------------------------------------------------- tile states
// Residual of the arc from (x, y) in direction k at flow 0 (load_residual's rule).
unsigned residual0(const HostGraph& g, int x, int y, int k) {
  const int nx = x + dir_dx(k);
  const int ny = y + dir_dy(k);
  if (nx < 0 || ny < 0 || nx >= g.width || ny >= g.height) return 0U;
  const auto p = static_cast<std::size_t>(y) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(x);
  const auto q = static_cast<std::size_t>(ny) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(nx);
  return k < 4 ? static_cast<unsigned>(g.nlink[static_cast<std::size_t>(k)][p])
               : static_cast<unsigned>(g.nlink[static_cast<std::size_t>(k - 4)][q]);
}

// Exact BFS distance to the sink (excess = terminal < 0) over the graph's residual arcs.
std::vector<int> global_distances(const HostGraph& g) {
  const int w = g.width;
  std::vector<int> dist(g.size(), kInf);
  std::vector<int> queue;
  queue.reserve(g.size());
  for (std::size_t p = 0; p < g.size(); ++p) {
    if (g.terminal[p] < 0) {
      dist[p] = 0;
      queue.push_back(static_cast<int>(p));
    }
  }
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const int q = queue[head];
    const int qx = q % w;
    const int qy = q / w;
    for (int j = 0; j < 8; ++j) {
      const int px = qx + dir_dx(j);
      const int py = qy + dir_dy(j);
      if (px < 0 || py < 0 || px >= w || py >= g.height) continue;
      const int p = py * w + px;
      // The arc p -> q leaves p in the direction opposite to j.
      if (dist[static_cast<std::size_t>(p)] != kInf || residual0(g, px, py, j ^ 4) == 0U) continue;
      dist[static_cast<std::size_t>(p)] = dist[static_cast<std::size_t>(q)] + 1;
      queue.push_back(p);
    }
  }
  return dist;
}

// BFS inside one tile over its residual arcs, from the padded slots in `queue` (whose
// labels are set), labelling only interior pixels still at kInf.
void tile_bfs_wave(std::array<int, kPad>& dist, std::vector<int>& queue, const unsigned* res) {
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const int q = queue[head];
    const int qx = q % kPadW - 1;
    const int qy = q / kPadW - 1;
    for (int j = 0; j < 8; ++j) {
      const int px = qx + dir_dx(j);
      const int py = qy + dir_dy(j);
      if (!in_tile(px, py)) continue;
      const int ps = pad_slot(px, py);
      const int pi = py * kTileW + px;
      if (dist[static_cast<std::size_t>(ps)] != kInf || res[(j ^ 4) * kPix + pi] == 0U) continue;
      dist[static_cast<std::size_t>(ps)] = dist[static_cast<std::size_t>(q)] + 1;
      queue.push_back(ps);
    }
  }
}

TileSet make_tiles(const HostGraph& g, bool region_heights) {
  const int tiles_x = g.width / kTileW;
  const int tiles_y = g.height / kTileH;
  TileSet s;
  s.resize(tiles_x * tiles_y);
  const std::vector<int> dist = region_heights ? std::vector<int>() : global_distances(g);
  for (int ty = 0; ty < tiles_y; ++ty) {
    for (int tx = 0; tx < tiles_x; ++tx) {
      const auto t = static_cast<std::size_t>(ty * tiles_x + tx);
      long long* e = s.excess.data() + t * kPix;
      int* h = s.height.data() + t * kPad;
      unsigned* r = s.res.data() + t * 8 * kPix;
      for (int ly = -1; ly <= kTileH; ++ly) {
        for (int lx = -1; lx <= kTileW; ++lx) {
          const int x = tx * kTileW + lx;
          const int y = ty * kTileH + ly;
          const bool grid = x >= 0 && y >= 0 && x < g.width && y < g.height;
          const auto p = static_cast<std::size_t>(y) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(x);
          const int slot = pad_slot(lx, ly);
          if (!in_tile(lx, ly)) {
            h[slot] = !grid ? kInf : (region_heights ? kRegionStep : dist[p]);
            continue;
          }
          const int i = ly * kTileW + lx;
          e[i] = g.terminal[p];
          for (int k = 0; k < 8; ++k) r[k * kPix + i] = residual0(g, x, y, k);
          h[slot] = region_heights ? kInf : dist[p];
        }
      }
      if (!region_heights) continue;
      std::array<int, kPad> d{};
      std::copy(h, h + kPad, d.begin());
      std::vector<int> queue;
      for (int i = 0; i < kPix; ++i) {
        if (e[i] < 0) {
          const int slot = pad_slot(i % kTileW, i / kTileW);
          d[static_cast<std::size_t>(slot)] = 0;
          queue.push_back(slot);
        }
      }
      tile_bfs_wave(d, queue, r);
      queue.clear();
      for (int slot = 0; slot < kPad; ++slot) {
        const int x = slot % kPadW - 1;
        const int y = slot / kPadW - 1;
        if (!in_tile(x, y) && d[static_cast<std::size_t>(slot)] < kInf) queue.push_back(slot);
      }
      tile_bfs_wave(d, queue, r);
      std::copy(d.begin(), d.end(), h);
    }
  }
  return s;
}

TileSet subset(const TileSet& s, const std::vector<int>& which) {
  TileSet o;
  o.resize(static_cast<int>(which.size()));
  for (std::size_t j = 0; j < which.size(); ++j) {
    const auto t = static_cast<std::size_t>(which[j]);
    std::copy_n(s.excess.begin() + static_cast<std::ptrdiff_t>(t * kPix), kPix,
                o.excess.begin() + static_cast<std::ptrdiff_t>(j * kPix));
    std::copy_n(s.height.begin() + static_cast<std::ptrdiff_t>(t * kPad), kPad,
                o.height.begin() + static_cast<std::ptrdiff_t>(j * kPad));
    std::copy_n(s.res.begin() + static_cast<std::ptrdiff_t>(t * 8 * kPix), 8 * kPix,
                o.res.begin() + static_cast<std::ptrdiff_t>(j * 8 * kPix));
  }
  return o;
}

// ---------------------------------------------------------------- host reference
// push_sync_rounds on one tile, pixel by pixel. Sequential order gives the parallel
// round's result: a pixel reads its residual towards a strictly lower neighbour only,
// which that neighbour cannot be adding to in the same push phase.
void reference_tile(const TileSet& in, int t, int max_rounds, bool force, TileResult& out) {
  const auto tt = static_cast<std::size_t>(t);
  std::array<int, kPad> h{};
  std::copy_n(in.height.begin() + static_cast<std::ptrdiff_t>(tt * kPad), kPad, h.begin());
  std::array<long long, kPix> e{};
  std::copy_n(in.excess.begin() + static_cast<std::ptrdiff_t>(tt * kPix), kPix, e.begin());
  std::vector<unsigned> res(in.res.begin() + static_cast<std::ptrdiff_t>(tt * 8 * kPix),
                            in.res.begin() + static_cast<std::ptrdiff_t>((tt + 1) * 8 * kPix));
  std::array<long long, kPad> inbox{};
  bool any = false;
  for (int i = 0; i < kPix; ++i) any = any || (e[static_cast<std::size_t>(i)] > 0 && h[static_cast<std::size_t>(pad_slot(i % kTileW, i / kTileW))] < kInf);
  int rounds = 0;
  if (any) {
    int round = 0;
    for (; round < max_rounds; ++round) {
      const std::array<int, kPad> old = h;
      for (int i = 0; i < kPix; ++i) {
        const int x = i % kTileW;
        const int y = i / kTileW;
        const int hm = old[static_cast<std::size_t>(pad_slot(x, y))];
        long long left = e[static_cast<std::size_t>(i)];
        if (left <= 0 || hm >= kInf) continue;
        for (int k = 0; k < 8 && left > 0; ++k) {
          const int nx = x + dir_dx(k);
          const int ny = y + dir_dy(k);
          const auto nb = static_cast<std::size_t>(pad_slot(nx, ny));
          unsigned& r = res[static_cast<std::size_t>(k * kPix + i)];
          if (old[nb] >= hm || r == 0U) continue;
          const long long amount = std::min(left, static_cast<long long>(r));
          r -= static_cast<unsigned>(amount);
          if (in_tile(nx, ny)) res[static_cast<std::size_t>((k ^ 4) * kPix + ny * kTileW + nx)] += static_cast<unsigned>(amount);
          inbox[nb] += amount;
          left -= amount;
        }
        e[static_cast<std::size_t>(i)] = left;
      }
      bool still = false;
      for (int i = 0; i < kPix; ++i) {
        const int x = i % kTileW;
        const int y = i / kTileW;
        const auto me = static_cast<std::size_t>(pad_slot(x, y));
        long long& ex = e[static_cast<std::size_t>(i)];
        ex += inbox[me];
        inbox[me] = 0;
        int hm = old[me];
        if (ex > 0 && hm < kInf) {
          int m = kInf;
          for (int k = 0; k < 8; ++k) {
            if (res[static_cast<std::size_t>(k * kPix + i)] != 0U) {
              m = std::min(m, old[static_cast<std::size_t>(pad_slot(x + dir_dx(k), y + dir_dy(k)))]);
            }
          }
          if (m >= hm) hm = m >= kInf - 1 ? kInf : m + 1;
          still = still || hm < kInf;
        }
        h[me] = hm;
      }
      if (!force && !still) break;
    }
    rounds = round < max_rounds ? round + 1 : max_rounds;
  }
  for (int i = 0; i < kPix; ++i) {
    out.excess[tt * kPix + static_cast<std::size_t>(i)] = e[static_cast<std::size_t>(i)];
    out.height[tt * kPix + static_cast<std::size_t>(i)] = h[static_cast<std::size_t>(pad_slot(i % kTileW, i / kTileW))];
  }
  std::copy(res.begin(), res.end(), out.res.begin() + static_cast<std::ptrdiff_t>(tt * 8 * kPix));
  std::copy(inbox.begin(), inbox.end(), out.inbox.begin() + static_cast<std::ptrdiff_t>(tt * kPad));
  out.rounds[tt] = rounds;
}

TileResult reference(const TileSet& in, int max_rounds, bool force) {
  TileResult out;
  out.resize(in.count);
  for (int t = 0; t < in.count; ++t) reference_tile(in, t, max_rounds, force, out);
  return out;
}

long long total_rounds(const TileResult& r) {
  long long s = 0;
  for (int v : r.rounds) s += v;
  return s;
}

void print_round_stats(const char* what, const TileResult& r, int cap) {
  std::vector<double> worked;
  int capped = 0;
  for (int v : r.rounds) {
    if (v == 0) continue;
    worked.push_back(v);
    if (v >= cap) ++capped;
  }
  double mean = 0;
  for (double v : worked) mean += v;
  if (!worked.empty()) mean /= static_cast<double>(worked.size());
  using grabcut::testing::percentile;
  std::printf("%-12s tiles with work %4zu of %zu, rounds: total %7lld, mean %6.2f, median %4.0f, p90 %4.0f, max %5.0f, "
              "at the cap %d\n",
              what, worked.size(), r.rounds.size(), total_rounds(r), mean, percentile(worked, 0.5),
              percentile(worked, 0.9), percentile(worked, 1.0), capped);
}

// The n tiles the reference runs most rounds on (ties: lower index first).
std::vector<int> hardest_tiles(const TileResult& r, int n) {
  std::vector<int> idx(r.rounds.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  std::stable_sort(idx.begin(), idx.end(), [&r](int a, int b) {
    return r.rounds[static_cast<std::size_t>(a)] > r.rounds[static_cast<std::size_t>(b)];
  });
  idx.resize(std::min(idx.size(), static_cast<std::size_t>(n)));
  return idx;
}

// Counts the differences between a kernel's result and the reference's; prints the first few.
long long compare(const char* what, const TileResult& ref, const TileResult& got) {
  long long bad = 0;
  auto report = [&](const char* field, std::size_t at, long long want, long long have) {
    if (bad++ < 5) std::printf("  MISMATCH %s: %s[%zu] = %lld, reference %lld\n", what, field, at, have, want);
  };
  for (std::size_t i = 0; i < ref.excess.size(); ++i) {
    if (ref.excess[i] != got.excess[i]) report("excess", i, ref.excess[i], got.excess[i]);
  }
  for (std::size_t i = 0; i < ref.height.size(); ++i) {
    if (ref.height[i] != got.height[i]) report("height", i, ref.height[i], got.height[i]);
  }
  for (std::size_t i = 0; i < ref.res.size(); ++i) {
    if (ref.res[i] != got.res[i]) report("res", i, ref.res[i], got.res[i]);
  }
  for (std::size_t i = 0; i < ref.inbox.size(); ++i) {
    if (ref.inbox[i] != got.inbox[i]) report("inbox", i, ref.inbox[i], got.inbox[i]);
  }
  for (std::size_t i = 0; i < ref.rounds.size(); ++i) {
    if (ref.rounds[i] != got.rounds[i]) report("rounds", i, ref.rounds[i], got.rounds[i]);
  }
  if (bad > 0) std::printf("  %s: %lld values differ from the reference\n", what, bad);
  return bad;
}

// The halo inbox as kernel A (and push_tile) derive it: what each arc leaving the tile
// lost over the rounds (res0 - res), added up at its halo pixel. Equal to what the
// rounds pushed there only because a frozen halo never pushes back: --host-only checks
// that on the reference.
std::vector<long long> halo_inflow_from_residuals(const TileSet& in, const TileResult& r) {
  std::vector<long long> inbox(static_cast<std::size_t>(in.count) * kPad, 0);
  for (int t = 0; t < in.count; ++t) {
    const auto tt = static_cast<std::size_t>(t);
    for (int i = 0; i < kPix; ++i) {
      const int x = i % kTileW;
      const int y = i / kTileW;
      for (int k = 0; k < 8; ++k) {
        const int nx = x + dir_dx(k);
        const int ny = y + dir_dy(k);
        if (in_tile(nx, ny)) continue;
        const std::size_t at = (tt * 8 + static_cast<std::size_t>(k)) * kPix + static_cast<std::size_t>(i);
        inbox[tt * kPad + static_cast<std::size_t>(pad_slot(nx, ny))] += static_cast<long long>(in.res[at] - r.res[at]);
      }
    }
  }
  return inbox;
}

// ---------------------------------------------------------------- the rounds on a warp
// Kernel B's tile, written once over a warp policy: DeviceWarp on the GPU
// (__shfl_sync, __any_sync), FiberWarp on the host (32 fibers in lockstep), so the
// host checks this very code against the reference without a GPU (--host-only).
struct TileArgs {
  const long long* excess;
  const int* height;  // padded
  const unsigned* res;
  long long* out_excess;
  int* out_height;  // interior
  unsigned* out_res;
  long long* out_inbox;  // padded
  int* out_rounds;
  int tiles;
  int max_rounds;
};

// Per warp in shared memory: the inbox of the halo's left and right columns (rows
// -1..16; only lane 0 pushes into the left one, only lane 31 into the right), and in
// B.smem the residuals.
struct WarpSide {
  long long in[2][kPadH];
};
struct WarpResiduals {
  unsigned r[8][kTileH][kTileW];
};

// A lane's residuals, 8 directions x 16 rows of its column.
template <bool kInRegisters>
struct ColumnResiduals;

template <>
struct ColumnResiduals<true> {
  unsigned v[8][kTileH];
  __host__ __device__ __forceinline__ explicit ColumnResiduals(WarpResiduals* /*unused*/, int /*lane*/) {}
  __host__ __device__ __forceinline__ unsigned get(int k, int y) const { return v[k][y]; }
  __host__ __device__ __forceinline__ void set(int k, int y, unsigned r) { v[k][y] = r; }
  __host__ __device__ __forceinline__ void add(int k, int y, unsigned d) { v[k][y] += d; }
  __host__ __device__ __forceinline__ void sub(int k, int y, unsigned d) { v[k][y] -= d; }
};

template <>
struct ColumnResiduals<false> {
  unsigned* base;  // &WarpResiduals::r[0][0][lane]: [k][y] is base[(k * kTileH + y) * kTileW]
  __host__ __device__ __forceinline__ explicit ColumnResiduals(WarpResiduals* w, int lane) : base(&w->r[0][0][lane]) {}
  __host__ __device__ __forceinline__ unsigned get(int k, int y) const { return base[(k * kTileH + y) * kTileW]; }
  __host__ __device__ __forceinline__ void set(int k, int y, unsigned r) { base[(k * kTileH + y) * kTileW] = r; }
  // Most amounts are 0: no shared-memory write for them.
  __host__ __device__ __forceinline__ void add(int k, int y, unsigned d) {
    if (d != 0U) base[(k * kTileH + y) * kTileW] += d;
  }
  __host__ __device__ __forceinline__ void sub(int k, int y, unsigned d) {
    if (d != 0U) base[(k * kTileH + y) * kTileW] -= d;
  }
};

__host__ __device__ __forceinline__ long long min_ll(long long a, long long b) { return a < b ? a : b; }
__host__ __device__ __forceinline__ int min_int(int a, int b) { return a < b ? a : b; }

// Tile t's rounds on one warp: lane = column x, rows 0..15 of the column in registers.
// A round is one pass down the rows: row y pushes (the amounts that cross columns go to
// the neighbour lanes by shuffles, whose receivers add them to their inflow and reverse
// residuals), then row y - 1, whose inflow is complete once rows y - 2..y have pushed,
// takes it in and relabels. Every decision reads the heights at the round's start.
// wres: the warp's residuals in shared memory (B.smem), unused in B.reg.
#ifdef __CUDACC__
#pragma nv_exec_check_disable
#endif
template <class Warp, bool kResInRegisters, bool kForce>
__host__ __device__ __forceinline__ void warp_tile(const Warp& w, const TileArgs& a, long long t, WarpSide& side,
                                                   WarpResiduals* wres) {
  const int lane = w.lane();
  ColumnResiduals<kResInRegisters> res(wres, lane);
  const int* hp = a.height + t * kPad;
  int h[kTileH];
  long long e[kTileH];
GRABCUT_UNROLL
  for (int y = 0; y < kTileH; ++y) {
    h[y] = hp[(y + 1) * kPadW + lane + 1];
    e[y] = a.excess[t * kPix + y * kTileW + lane];
  }
GRABCUT_UNROLL
  for (int k = 0; k < 8; ++k) {
GRABCUT_UNROLL
    for (int y = 0; y < kTileH; ++y) res.set(k, y, a.res[(t * 8 + k) * kPix + y * kTileW + lane]);
  }
  // Frozen halo heights: this column's rows -1 and 16, the left and right columns' too.
  const int top = hp[lane + 1];
  const int bottom = hp[(kPadH - 1) * kPadW + lane + 1];
  const int left_top = hp[lane];
  const int left_bottom = hp[(kPadH - 1) * kPadW + lane];
  const int right_top = hp[lane + 2];
  const int right_bottom = hp[(kPadH - 1) * kPadW + lane + 2];
  // Lane 0 holds the halo's left column (rows 0..15), lane 31 its right one: what lane
  // 0's shuffle from the left and lane 31's from the right take instead.
  int edge[kTileH];
GRABCUT_UNROLL
  for (int y = 0; y < kTileH; ++y) edge[y] = hp[(y + 1) * kPadW + (lane == 0 ? 0 : kPadW - 1)];
  if (lane < kPadH) {
    side.in[0][lane] = 0;
    side.in[1][lane] = 0;
  }
  w.sync();
  long long in_top = 0;  // what was pushed into this column's halo rows -1 and 16
  long long in_bottom = 0;
  bool any = false;
GRABCUT_UNROLL
  for (int y = 0; y < kTileH; ++y) any = any || (e[y] > 0 && h[y] < kInf);
  int rounds = 0;
  if (w.any(any)) {
    int round = 0;
    for (; round < a.max_rounds; ++round) {
      int old[kTileH];  // the heights every decision of the round reads
GRABCUT_UNROLL
      for (int y = 0; y < kTileH; ++y) old[y] = h[y];
      // The left and right columns' heights, rows -1..16 at index row + 1.
      int lh[kTileH + 2];
      int rh[kTileH + 2];
      lh[0] = left_top;
      lh[kTileH + 1] = left_bottom;
      rh[0] = right_top;
      rh[kTileH + 1] = right_bottom;
      // This round's inflow to this column's rows -1..16 (index row + 1).
      long long inflow[kTileH + 2];
GRABCUT_UNROLL
      for (int j = 0; j < kTileH + 2; ++j) inflow[j] = 0;
      bool still = false;
      // The heights around pixel (lane, y) at the round's start, by direction k.
      auto neighbour_heights = [&](int y, int(&hn)[8]) {
        hn[0] = rh[y + 1];
        hn[1] = rh[y + 2];
        hn[2] = y + 1 < kTileH ? old[y + 1 < kTileH ? y + 1 : 0] : bottom;
        hn[3] = lh[y + 2];
        hn[4] = lh[y + 1];
        hn[5] = lh[y];
        hn[6] = y >= 1 ? old[y >= 1 ? y - 1 : 0] : top;
        hn[7] = rh[y];
      };
GRABCUT_UNROLL
      for (int y = 0; y <= kTileH; ++y) {
        if (y < kTileH) {
          // Row y's push reads the neighbour columns' rows y - 1..y + 1.
GRABCUT_UNROLL
          for (int j = (y == 0 ? 0 : y + 1); j <= y + 1 && j < kTileH; ++j) {
            const int from_left = w.shfl_up(old[j]);
            const int from_right = w.shfl_down(old[j]);
            lh[j + 1] = lane == 0 ? edge[j] : from_left;
            rh[j + 1] = lane == kTileW - 1 ? edge[j] : from_right;
          }
          const int hm = old[y];
          const bool active = e[y] > 0 && hm < kInf;
          if (w.any(active)) {
            int hn[8];
            neighbour_heights(y, hn);
            unsigned amount[8];
            long long left = active ? e[y] : 0;
GRABCUT_UNROLL
            for (int k = 0; k < 8; ++k) {
              const unsigned r = hn[k] < hm ? res.get(k, y) : 0U;
              const unsigned m = left > 0 ? static_cast<unsigned>(min_ll(left, static_cast<long long>(r))) : 0U;
              amount[k] = m;
              left -= m;
            }
GRABCUT_UNROLL
            for (int k = 0; k < 8; ++k) res.sub(k, y, amount[k]);
            if (active) e[y] = left;
            // Pushes across the tile's left and right edges go to the halo inbox directly.
            if (lane == 0 && (amount[3] | amount[4] | amount[5]) != 0U) {
              side.in[0][y] += amount[5];
              side.in[0][y + 1] += amount[4];
              side.in[0][y + 2] += amount[3];
            }
            if (lane == kTileW - 1 && (amount[0] | amount[1] | amount[7]) != 0U) {
              side.in[1][y] += amount[7];
              side.in[1][y + 1] += amount[0];
              side.in[1][y + 2] += amount[1];
            }
            // What the left neighbour pushed rightwards (k = 0, 1, 7) and the right one
            // leftwards (k = 4, 3, 5), landing on rows y, y + 1, y - 1 of this column.
            const unsigned l0 = w.shfl_up(amount[0]);
            const unsigned l1 = w.shfl_up(amount[1]);
            const unsigned l7 = w.shfl_up(amount[7]);
            const unsigned r4 = w.shfl_down(amount[4]);
            const unsigned r3 = w.shfl_down(amount[3]);
            const unsigned r5 = w.shfl_down(amount[5]);
            const unsigned from_l0 = lane == 0 ? 0U : l0;
            const unsigned from_l1 = lane == 0 ? 0U : l1;
            const unsigned from_l7 = lane == 0 ? 0U : l7;
            const unsigned from_r4 = lane == kTileW - 1 ? 0U : r4;
            const unsigned from_r3 = lane == kTileW - 1 ? 0U : r3;
            const unsigned from_r5 = lane == kTileW - 1 ? 0U : r5;
            inflow[y] += static_cast<long long>(amount[6]) + from_l7 + from_r5;
            inflow[y + 1] += static_cast<long long>(from_l0) + from_r4;
            inflow[y + 2] += static_cast<long long>(amount[2]) + from_l1 + from_r3;
            // Each push opens the reverse arc at its head.
            if (y >= 1) {
              res.add(2, y - 1, amount[6]);
              res.add(3, y - 1, from_l7);
              res.add(1, y - 1, from_r5);
            }
            res.add(4, y, from_l0);
            res.add(0, y, from_r4);
            if (y + 1 < kTileH) {
              res.add(6, y + 1, amount[2]);
              res.add(5, y + 1, from_l1);
              res.add(7, y + 1, from_r3);
            }
          }
        }
        if (y >= 1) {
          // Row r = y - 1 has all its inflow (rows r - 1..r + 1 pushed): take it in, relabel.
          const int r = y - 1;
          const long long ex = e[r] + inflow[r + 1];
          int hm = old[r];
          const bool need = ex > 0 && hm < kInf;
          if (w.any(need) && need) {
            int hn[8];
            neighbour_heights(r, hn);
            int m = kInf;
GRABCUT_UNROLL
            for (int k = 0; k < 8; ++k) {
              if (res.get(k, r) != 0U) m = min_int(m, hn[k]);
            }
            if (m >= hm) hm = m >= kInf - 1 ? kInf : m + 1;
            still = still || hm < kInf;
          }
          e[r] = ex;
          h[r] = hm;
        }
      }
      in_top += inflow[0];
      in_bottom += inflow[kTileH + 1];
      if (!kForce && !w.any(still)) break;
    }
    rounds = round < a.max_rounds ? round + 1 : a.max_rounds;
  }
GRABCUT_UNROLL
  for (int y = 0; y < kTileH; ++y) {
    a.out_excess[t * kPix + y * kTileW + lane] = e[y];
    a.out_height[t * kPix + y * kTileW + lane] = h[y];
  }
GRABCUT_UNROLL
  for (int k = 0; k < 8; ++k) {
GRABCUT_UNROLL
    for (int y = 0; y < kTileH; ++y) a.out_res[(t * 8 + k) * kPix + y * kTileW + lane] = res.get(k, y);
  }
  long long* inbox = a.out_inbox + t * kPad;
  inbox[lane + 1] = in_top;
  inbox[(kPadH - 1) * kPadW + lane + 1] = in_bottom;
  w.sync();
  if (lane < kPadH) {
    inbox[lane * kPadW] = side.in[0][lane];
    inbox[lane * kPadW + kPadW - 1] = side.in[1][lane];
  }
  if (lane == 0) a.out_rounds[t] = rounds;
}

// ---------------------------------------------------------------- a warp on the host
// 32 fibers (ucontext) in lockstep: every shuffle or vote is a meeting point where each
// lane first posts its value, then all read. Lanes run one after another between
// meetings, so the emulation is deterministic.
class WarpEmulator {
 public:
  // Runs body(lane) for lanes 0..31 in lockstep until all return.
  void run(const std::function<void(int)>& body) {
    body_ = &body;
    for (std::size_t lane = 0; lane < kLanes; ++lane) {
      stacks_[lane].resize(kStackBytes);
      prepare(ctx_[lane], stacks_[lane].data());
      done_[lane] = false;
    }
    for (std::size_t left = kLanes; left > 0;) {
      left = 0;
      for (std::size_t lane = 0; lane < kLanes; ++lane) {
        if (done_[lane]) continue;
        current_ = this;
        current_lane_ = static_cast<int>(lane);
        swapcontext(&main_, &ctx_[lane]);
        if (!done_[lane]) ++left;
      }
    }
  }
  // Posts v, waits for every lane, returns lane src's value.
  long long exchange(int lane, long long v, int src) {
    slot_[static_cast<std::size_t>(lane)] = v;
    yield(lane);
    const long long r = slot_[static_cast<std::size_t>(src)];
    yield(lane);
    return r;
  }
  bool any(int lane, bool p) {
    slot_[static_cast<std::size_t>(lane)] = p ? 1 : 0;
    yield(lane);
    bool r = false;
    for (long long v : slot_) r = r || v != 0;
    yield(lane);
    return r;
  }
  void sync(int lane) { yield(lane); }

 private:
  static constexpr std::size_t kLanes = 32;
  static constexpr std::size_t kStackBytes = 1 << 18;
  void yield(int lane) { swapcontext(&ctx_[static_cast<std::size_t>(lane)], &main_); }
  // A fiber that starts in entry() on `stack` and returns to main_ (apart from run's
  // loop: getcontext returns twice, which its caller's locals must not see).
  void prepare(ucontext_t& c, char* stack) {
    getcontext(&c);
    c.uc_stack.ss_sp = stack;
    c.uc_stack.ss_size = kStackBytes;
    c.uc_link = &main_;
    makecontext(&c, &WarpEmulator::entry, 0);
  }
  static void entry() {
    WarpEmulator* self = current_;
    const int lane = current_lane_;
    (*self->body_)(lane);
    self->done_[static_cast<std::size_t>(lane)] = true;
  }
  static inline WarpEmulator* current_ = nullptr;
  static inline int current_lane_ = 0;
  const std::function<void(int)>* body_ = nullptr;
  ucontext_t main_{};
  std::array<ucontext_t, kLanes> ctx_{};
  std::array<std::vector<char>, kLanes> stacks_;
  std::array<long long, kLanes> slot_{};
  std::array<bool, kLanes> done_{};
};

struct FiberWarp {
  WarpEmulator* emu;
  int id;
  int lane() const { return id; }
  template <typename T>
  T shfl_up(T v) const {
    return static_cast<T>(emu->exchange(id, static_cast<long long>(v), id == 0 ? id : id - 1));
  }
  template <typename T>
  T shfl_down(T v) const {
    return static_cast<T>(emu->exchange(id, static_cast<long long>(v), id == 31 ? id : id + 1));
  }
  bool any(bool p) const { return emu->any(id, p); }
  void sync() const { emu->sync(id); }
};

// Kernel B's code on the host, tile by tile: what B.reg (or B.smem) leaves.
template <bool kResInRegisters>
TileResult emulate_warp_kernel(const TileSet& in, int max_rounds, bool force) {
  TileResult out;
  out.resize(in.count);
  TileArgs a{in.excess.data(),  in.height.data(),    in.res.data(), out.excess.data(), out.height.data(),
             out.res.data(),    out.inbox.data(),    out.rounds.data(), in.count,      max_rounds};
  WarpEmulator emu;
  WarpSide side{};
  WarpResiduals wres{};
  for (long long t = 0; t < in.count; ++t) {
    emu.run([&](int lane) {
      const FiberWarp w{&emu, lane};
      if (force) {
        warp_tile<FiberWarp, kResInRegisters, true>(w, a, t, side, &wres);
      } else {
        warp_tile<FiberWarp, kResInRegisters, false>(w, a, t, side, &wres);
      }
    });
  }
  return out;
}

// ---------------------------------------------------------------- in-tile relaxation (--relax)
// The exact in-tile labels that a global relabel's tile visit (bfs_tile) and a region
// discharge's exact heights need: 0 at a pixel with sink capacity left (excess < 0),
// else min over its residual arcs p -> q of 1 + label(q), q in the tile or in its frozen
// halo, kInf where nothing is reachable. The start: 0 at the sinks, kInf at every other
// interior pixel, the halo as the tile set has it (global: the global BFS; tile: B).
struct RelaxSet {
  int count = 0;
  std::vector<int> label;           // [t][padded slot]
  std::vector<unsigned char> mask;  // [t][i]: bit k set if the arc in direction k has residual
};

struct RelaxResult {
  std::vector<int> label;  // [t][i], interior only
  std::vector<int> steps;  // steps run, the last one changing nothing (0 for the reference)

  void resize(int n) {
    label.assign(static_cast<std::size_t>(n) * kPix, 0);
    steps.assign(static_cast<std::size_t>(n), 0);
  }
};

// A deterministic draw in 0..99 for (seed, tile, pixel, what).
int thin_draw(unsigned seed, int t, int i, int what) {
  std::uint64_t z = (static_cast<std::uint64_t>(seed) << 40) ^ (static_cast<std::uint64_t>(t) << 16) ^
                    (static_cast<std::uint64_t>(i) << 4) ^ static_cast<std::uint64_t>(what);
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<int>(z % 100U);
}

// The relax set of a tile set. At a cold start nearly every arc has residual and most
// pixels are sinks, so the in-tile distances are short; drop_arcs (percent of arcs
// cleared, each on its own) and keep_sinks (percent of sinks kept) thin the graph into
// the winding residual paths of a solve's later relabels, a stress test of both
// schedules and of their step counts. 0 and 100 leave the tile set's state as it is.
RelaxSet make_relax(const TileSet& s, int drop_arcs = 0, int keep_sinks = 100, unsigned seed = 1) {
  RelaxSet r;
  r.count = s.count;
  r.label.assign(static_cast<std::size_t>(s.count) * kPad, kInf);
  r.mask.assign(static_cast<std::size_t>(s.count) * kPix, 0);
  for (int t = 0; t < s.count; ++t) {
    const auto tt = static_cast<std::size_t>(t);
    for (int slot = 0; slot < kPad; ++slot) {
      const int x = slot % kPadW - 1;
      const int y = slot / kPadW - 1;
      int v = s.height[tt * kPad + static_cast<std::size_t>(slot)];
      if (in_tile(x, y)) {
        const int i = y * kTileW + x;
        const bool sink = s.excess[tt * kPix + static_cast<std::size_t>(i)] < 0 && thin_draw(seed, t, i, 8) < keep_sinks;
        v = sink ? 0 : kInf;
      }
      r.label[tt * kPad + static_cast<std::size_t>(slot)] = v;
    }
    for (int i = 0; i < kPix; ++i) {
      unsigned m = 0;
      for (int k = 0; k < 8; ++k) {
        if (s.res[(tt * 8 + static_cast<std::size_t>(k)) * kPix + static_cast<std::size_t>(i)] != 0U &&
            thin_draw(seed, t, i, k) >= drop_arcs) {
          m |= 1U << k;
        }
      }
      r.mask[tt * kPix + static_cast<std::size_t>(i)] = static_cast<unsigned char>(m);
    }
  }
  return r;
}

RelaxSet relax_subset(const RelaxSet& s, const std::vector<int>& which) {
  RelaxSet o;
  o.count = static_cast<int>(which.size());
  o.label.resize(which.size() * kPad);
  o.mask.resize(which.size() * kPix);
  for (std::size_t j = 0; j < which.size(); ++j) {
    const auto t = static_cast<std::size_t>(which[j]);
    std::copy_n(s.label.begin() + static_cast<std::ptrdiff_t>(t * kPad), kPad,
                o.label.begin() + static_cast<std::ptrdiff_t>(j * kPad));
    std::copy_n(s.mask.begin() + static_cast<std::ptrdiff_t>(t * kPix), kPix,
                o.mask.begin() + static_cast<std::ptrdiff_t>(j * kPix));
  }
  return o;
}

// The reference: Dijkstra per tile from the sinks and the finite halo labels (unit arcs
// walked backwards: q settled, then every in-tile p with a residual arc p -> q).
RelaxResult relax_reference(const RelaxSet& in) {
  RelaxResult out;
  out.resize(in.count);
  for (int t = 0; t < in.count; ++t) {
    const auto tt = static_cast<std::size_t>(t);
    std::array<int, kPad> dist{};
    std::copy_n(in.label.begin() + static_cast<std::ptrdiff_t>(tt * kPad), kPad, dist.begin());
    using Item = std::pair<int, int>;  // (label, slot)
    std::vector<Item> heap;
    for (int slot = 0; slot < kPad; ++slot) {
      if (dist[static_cast<std::size_t>(slot)] < kInf) heap.emplace_back(dist[static_cast<std::size_t>(slot)], slot);
    }
    std::make_heap(heap.begin(), heap.end(), std::greater<>());
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      const auto [dq, q] = heap.back();
      heap.pop_back();
      if (dq != dist[static_cast<std::size_t>(q)]) continue;
      const int qx = q % kPadW - 1;
      const int qy = q / kPadW - 1;
      for (int j = 0; j < 8; ++j) {
        const int px = qx + dir_dx(j);
        const int py = qy + dir_dy(j);
        if (!in_tile(px, py)) continue;
        // The arc p -> q leaves p in the direction opposite to j.
        if ((in.mask[tt * kPix + static_cast<std::size_t>(py * kTileW + px)] >> (j ^ 4) & 1U) == 0U) continue;
        const int ps = pad_slot(px, py);
        if (dq + 1 < dist[static_cast<std::size_t>(ps)]) {
          dist[static_cast<std::size_t>(ps)] = dq + 1;
          heap.emplace_back(dq + 1, ps);
          std::push_heap(heap.begin(), heap.end(), std::greater<>());
        }
      }
    }
    for (int i = 0; i < kPix; ++i) {
      out.label[tt * kPix + static_cast<std::size_t>(i)] = dist[static_cast<std::size_t>(pad_slot(i % kTileW, i / kTileW))];
    }
  }
  return out;
}

// Kernel A's schedule on the host (bfs_tile's Jacobi steps): every pixel takes the min
// over its residual arcs of 1 + the neighbour's label of the previous step, until a
// step changes nothing. Gives the labels and the steps kernel A must report.
RelaxResult jacobi_model(const RelaxSet& in) {
  RelaxResult out;
  out.resize(in.count);
  for (int t = 0; t < in.count; ++t) {
    const auto tt = static_cast<std::size_t>(t);
    std::array<int, kPad> cur{};
    std::copy_n(in.label.begin() + static_cast<std::ptrdiff_t>(tt * kPad), kPad, cur.begin());
    int steps = 0;
    for (bool ch = true; ch;) {
      ++steps;
      ch = false;
      std::array<int, kPad> next = cur;
      for (int i = 0; i < kPix; ++i) {
        const int x = i % kTileW;
        const int y = i / kTileW;
        const unsigned m = in.mask[tt * kPix + static_cast<std::size_t>(i)];
        const auto me = static_cast<std::size_t>(pad_slot(x, y));
        int nd = cur[me];
        for (int k = 0; k < 8; ++k) {
          if ((m >> k & 1U) != 0U) nd = std::min(nd, cur[static_cast<std::size_t>(pad_slot(x + dir_dx(k), y + dir_dy(k)))] + 1);
        }
        ch = ch || nd < cur[me];
        next[me] = nd;
      }
      cur = next;
    }
    for (int i = 0; i < kPix; ++i) {
      out.label[tt * kPix + static_cast<std::size_t>(i)] = cur[static_cast<std::size_t>(pad_slot(i % kTileW, i / kTileW))];
    }
    out.steps[tt] = steps;
  }
  return out;
}

// Kernel B's schedule on the host, written plainly (no warp): the frozen halo's arcs
// taken once at the start, then steps of (every column: a pass up the rows over the
// arcs to y - 1, a pass down over the arcs to y + 1; then every pixel: the min over its
// arcs to the neighbour columns of 1 + their labels after their column passes) until a
// step changes nothing.
RelaxResult column_model(const RelaxSet& in) {
  RelaxResult out;
  out.resize(in.count);
  for (int t = 0; t < in.count; ++t) {
    const auto tt = static_cast<std::size_t>(t);
    const int* lp = in.label.data() + tt * kPad;
    const unsigned char* mp = in.mask.data() + tt * kPix;
    std::array<int, kPix> d{};
    for (int i = 0; i < kPix; ++i) {
      const int x = i % kTileW;
      const int y = i / kTileW;
      int v = lp[pad_slot(x, y)];
      for (int k = 0; k < 8; ++k) {
        const int nx = x + dir_dx(k);
        const int ny = y + dir_dy(k);
        if (!in_tile(nx, ny) && (mp[i] >> k & 1U) != 0U) v = std::min(v, lp[pad_slot(nx, ny)] + 1);
      }
      d[static_cast<std::size_t>(i)] = v;
    }
    auto at = [&d](int x, int y) -> int& { return d[static_cast<std::size_t>(y * kTileW + x)]; };
    auto arc = [mp](int x, int y, int k) { return (mp[y * kTileW + x] >> k & 1U) != 0U; };
    int steps = 0;
    for (bool ch = true; ch;) {
      ++steps;
      ch = false;
      for (int x = 0; x < kTileW; ++x) {
        for (int y = 1; y < kTileH; ++y) {
          if (arc(x, y, 6) && at(x, y - 1) + 1 < at(x, y)) at(x, y) = at(x, y - 1) + 1, ch = true;
        }
        for (int y = kTileH - 2; y >= 0; --y) {
          if (arc(x, y, 2) && at(x, y + 1) + 1 < at(x, y)) at(x, y) = at(x, y + 1) + 1, ch = true;
        }
      }
      const std::array<int, kPix> s = d;
      for (int i = 0; i < kPix; ++i) {
        const int x = i % kTileW;
        const int y = i / kTileW;
        int c = kInf;
        for (int k : {0, 1, 7, 3, 4, 5}) {
          const int nx = x + dir_dx(k);
          const int ny = y + dir_dy(k);
          if (in_tile(nx, ny) && arc(x, y, k)) c = std::min(c, s[static_cast<std::size_t>(ny * kTileW + nx)]);
        }
        if (c + 1 < d[static_cast<std::size_t>(i)]) d[static_cast<std::size_t>(i)] = c + 1, ch = true;
      }
    }
    std::copy(d.begin(), d.end(), out.label.begin() + static_cast<std::ptrdiff_t>(tt * kPix));
    out.steps[tt] = steps;
  }
  return out;
}

// Counts the labels that differ from the reference's and, where `steps` is given, the
// step counts that differ from it; prints the first few.
long long compare_relax(const char* what, const RelaxResult& ref, const RelaxResult* steps, const RelaxResult& got) {
  long long bad = 0;
  auto report = [&](const char* field, std::size_t at, long long want, long long have) {
    if (bad++ < 5) std::printf("  MISMATCH %s: %s[%zu] = %lld, reference %lld\n", what, field, at, have, want);
  };
  for (std::size_t i = 0; i < ref.label.size(); ++i) {
    if (ref.label[i] != got.label[i]) report("label", i, ref.label[i], got.label[i]);
  }
  if (steps != nullptr) {
    for (std::size_t i = 0; i < steps->steps.size(); ++i) {
      if (steps->steps[i] != got.steps[i]) report("steps", i, steps->steps[i], got.steps[i]);
    }
  }
  if (bad > 0) std::printf("  %s: %lld values differ from the reference\n", what, bad);
  return bad;
}

// The n tiles with most steps (ties: lower index first).
std::vector<int> most_steps(const RelaxResult& r, int n) {
  std::vector<int> idx(r.steps.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  std::stable_sort(idx.begin(), idx.end(), [&r](int a, int b) {
    return r.steps[static_cast<std::size_t>(a)] > r.steps[static_cast<std::size_t>(b)];
  });
  idx.resize(std::min(idx.size(), static_cast<std::size_t>(n)));
  return idx;
}

void print_step_stats(const char* what, const RelaxResult& r) {
  std::vector<double> v(r.steps.begin(), r.steps.end());
  double sum = 0;
  for (double s : v) sum += s;
  using grabcut::testing::percentile;
  std::printf("%-28s steps: total %7.0f, mean %6.2f, median %3.0f, p90 %3.0f, p99 %3.0f, max %3.0f\n", what, sum,
              v.empty() ? 0.0 : sum / static_cast<double>(v.size()), percentile(v, 0.5), percentile(v, 0.9),
              percentile(v, 0.99), percentile(v, 1.0));
}

struct RelaxArgs {
  const int* label;  // padded start labels, halo frozen
  const unsigned char* mask;
  int* out_label;  // interior
  int* out_steps;
  int tiles;
};

// Bit k of row y's residual arcs; m holds a byte a row, four rows a word.
__host__ __device__ __forceinline__ bool arc_bit(const unsigned (&m)[kTileH / 4], int y, int k) {
  return ((m[y >> 2] >> (8 * (y & 3) + k)) & 1U) != 0U;
}

// Kernel B's relaxation of tile t on one warp: lane = column x, the column's 16 labels
// and residual bits (a byte a row, four to a register) in registers. The frozen halo's
// arcs are taken once at the start (a min with constants, so once is enough). A step:
// a pass up the column over the arcs to row y - 1 and one down over the arcs to y + 1
// (Gauss-Seidel in the lane: after the two, the column is exact for its own arcs), then
// the neighbour columns' labels by shuffles for the horizontal and diagonal arcs. A warp
// vote ends the relaxation at the first step that changes no label.
#ifdef __CUDACC__
#pragma nv_exec_check_disable
#endif
template <class Warp>
__host__ __device__ __forceinline__ void warp_relax(const Warp& w, const RelaxArgs& a, long long t) {
  const int lane = w.lane();
  const int* lp = a.label + t * kPad;
  const unsigned char* mp = a.mask + t * kPix;
  int d[kTileH];
  unsigned m[kTileH / 4];
GRABCUT_UNROLL
  for (int j = 0; j < kTileH / 4; ++j) m[j] = 0U;
GRABCUT_UNROLL
  for (int y = 0; y < kTileH; ++y) {
    d[y] = lp[(y + 1) * kPadW + lane + 1];
    m[y >> 2] |= static_cast<unsigned>(mp[y * kTileW + lane]) << (8 * (y & 3));
  }
GRABCUT_UNROLL
  for (int y = 0; y < kTileH; ++y) {
    int c = kInf;
GRABCUT_UNROLL
    for (int k = 0; k < 8; ++k) {
      const int ny = y + dir_dy(k);
      const int nx = lane + dir_dx(k);
      const bool halo = ny < 0 || ny >= kTileH || nx < 0 || nx >= kTileW;
      if (halo && arc_bit(m, y, k)) c = min_int(c, lp[(ny + 1) * kPadW + nx + 1]);
    }
    d[y] = min_int(d[y], c + 1);
  }
  int steps = 0;
  for (;;) {
    ++steps;
    bool ch = false;
GRABCUT_UNROLL
    for (int y = 1; y < kTileH; ++y) {
      const int v = arc_bit(m, y, 6) ? d[y - 1] + 1 : kInf;
      ch = ch || v < d[y];
      d[y] = min_int(d[y], v);
    }
GRABCUT_UNROLL
    for (int y = kTileH - 2; y >= 0; --y) {
      const int v = arc_bit(m, y, 2) ? d[y + 1] + 1 : kInf;
      ch = ch || v < d[y];
      d[y] = min_int(d[y], v);
    }
    // The neighbour columns' labels after their passes; none beyond the tile's edges
    // (the halo's arcs were taken at the start).
    int l[kTileH];
    int r[kTileH];
GRABCUT_UNROLL
    for (int y = 0; y < kTileH; ++y) {
      const int from_left = w.shfl_up(d[y]);
      const int from_right = w.shfl_down(d[y]);
      l[y] = lane == 0 ? kInf : from_left;
      r[y] = lane == kTileW - 1 ? kInf : from_right;
    }
GRABCUT_UNROLL
    for (int y = 0; y < kTileH; ++y) {
      int c = kInf;
      if (arc_bit(m, y, 0)) c = min_int(c, r[y]);
      if (arc_bit(m, y, 4)) c = min_int(c, l[y]);
      if (y >= 1) {
        if (arc_bit(m, y, 7)) c = min_int(c, r[y >= 1 ? y - 1 : 0]);
        if (arc_bit(m, y, 5)) c = min_int(c, l[y >= 1 ? y - 1 : 0]);
      }
      if (y + 1 < kTileH) {
        if (arc_bit(m, y, 1)) c = min_int(c, r[y + 1 < kTileH ? y + 1 : 0]);
        if (arc_bit(m, y, 3)) c = min_int(c, l[y + 1 < kTileH ? y + 1 : 0]);
      }
      const int v = c + 1;
      ch = ch || v < d[y];
      d[y] = min_int(d[y], v);
    }
    if (!w.any(ch)) break;
  }
GRABCUT_UNROLL
  for (int y = 0; y < kTileH; ++y) a.out_label[t * kPix + y * kTileW + lane] = d[y];
  if (lane == 0) a.out_steps[t] = steps;
}

// Kernel B's relaxation on the host fibers, tile by tile.
RelaxResult emulate_warp_relax(const RelaxSet& in) {
  RelaxResult out;
  out.resize(in.count);
  const RelaxArgs a{in.label.data(), in.mask.data(), out.label.data(), out.steps.data(), in.count};
  WarpEmulator emu;
  for (long long t = 0; t < in.count; ++t) {
    emu.run([&](int lane) { warp_relax(FiberWarp{&emu, lane}, a, t); });
  }
  return out;
}

#ifdef __CUDACC__
// ---------------------------------------------------------------- device side
constexpr unsigned kFull = 0xffffffffU;

// Kernel A's shared memory: maxflow.cu's Shared less what only the sweeps use (the
// block's tile lists and reductions), which a round never touches.
struct SharedA {
  unsigned out[8][kThreads];   // what each pixel pushed along each arc in this round
  unsigned res0[8][kThreads];  // the residuals at the visit's start
  long long e[kPad];           // the halo's inflow at the end of the visit
  int h[2][kPad];              // heights: a round reads one buffer and writes the other
};

// Kernel A: one push visit of maxflow.cu's push_tile on the block's tile, a pixel a
// thread: the same activity check, loads into registers and shared memory, rounds and
// halo inflow (off the residuals at the end: a frozen halo never pushes back within a
// visit). Where push_tile writes its deltas to the graph (excess, flow, the halo's
// excess), this writes the tile's state and the halo's inflow for the comparison.
template <bool kForce>
__global__ void __launch_bounds__(kThreads, 2) block_round_kernel(TileArgs a) {
  __shared__ SharedA sh;
  const long long t = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x);
  const int lx = tid % kTileW;
  const int ly = tid / kTileW;
  const int me = (ly + 1) * kPadW + lx + 1;
  // Every tile here lies inside the grid; a runtime valid keeps the solver's checks in
  // the round's code.
  const bool valid = t < a.tiles;
  const int* hp = a.height + t * kPad;
  long long ex = 0;
  int hm = kInf;
  if (valid) {
    ex = a.excess[t * kPix + tid];
    hm = hp[me];
  }
  unsigned res[8];
  int rounds = 0;
  const bool work = __syncthreads_or(valid && ex > 0 && hm < kInf) != 0;
  if (work) {
    sh.h[0][me] = hm;
    for (int i = tid; i < kPad; i += kThreads) {
      const int py = i / kPadW;
      const int px = i - py * kPadW;
      if (py >= 1 && py <= kTileH && px >= 1 && px <= kTileW) continue;
      const int hv = hp[i];
      sh.h[0][i] = hv;
      sh.h[1][i] = hv;
      sh.e[i] = 0;
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      res[k] = valid ? a.res[(t * 8 + k) * kPix + tid] : 0U;
      sh.res0[k][tid] = res[k];  // in shared memory, as push_tile keeps them
    }
    __syncthreads();
    // The solver's own rounds (kForce: exactly max_rounds of them, for the latency rows).
    const int last = grabcut::cuda::tile::push_sync_rounds<false, kForce>(sh, a.max_rounds, valid, tid, ex, hm, res);
    rounds = last < a.max_rounds ? last + 1 : a.max_rounds;
    if (valid) {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const unsigned rf = res[k];
        const unsigned r0 = sh.res0[k][tid];
        if (rf == r0) continue;
        const int nlx = lx + dir_dx(k);
        const int nly = ly + dir_dy(k);
        // Into the halo: all of r0 - rf went to that pixel.
        if (!(nlx >= 0 && nlx < kTileW && nly >= 0 && nly < kTileH)) {
          atomicAdd(reinterpret_cast<unsigned long long*>(&sh.e[me + dir_dy(k) * kPadW + dir_dx(k)]),
                    static_cast<unsigned long long>(r0 - rf));
        }
      }
    }
    __syncthreads();  // the halo's inflow is complete
  } else {
#pragma unroll
    for (int k = 0; k < 8; ++k) res[k] = a.res[(t * 8 + k) * kPix + tid];
  }
  a.out_excess[t * kPix + tid] = ex;
  a.out_height[t * kPix + tid] = hm;
#pragma unroll
  for (int k = 0; k < 8; ++k) a.out_res[(t * 8 + k) * kPix + tid] = res[k];
  for (int i = tid; i < kPad; i += kThreads) {
    const int py = i / kPadW;
    const int px = i - py * kPadW;
    if (py >= 1 && py <= kTileH && px >= 1 && px <= kTileW) continue;
    a.out_inbox[t * kPad + i] = work ? sh.e[i] : 0;
  }
  if (tid == 0) a.out_rounds[t] = rounds;
}

// Kernel C (C128, C256): a block of kCThreads a tile, the tile's state in shared memory,
// and each round working only on the pixels it concerns: the active ones push (from a
// list), the pixels they touched (a bitmap, compacted into a list by one warp) take in
// their inflow and relabel. A round's work then follows the active pixels (about a tenth
// of a tile's in a solve, bench/RESULTS.md), not the tile's 512. Synchronous semantics
// as A's: pushes read the heights and excesses of the round's start (inflow collects in
// `in`, new heights are staged until every relabel has read the old ones); only the
// tail of an arc pushes along it, and an arc's reverse is written by that pusher alone
// (its head, lower, pushes nothing back in the same round), so residuals need no
// atomics; the inflow of a pixel with several pushers does (integer sums: any order
// gives the same state).
struct SharedC {
  unsigned res[8][kPix];
  long long ex[kPix];
  unsigned long long in[kPix];  // inflow of this round
  long long halo[kPad];         // what went into the halo (the inbox)
  int h[kPad];
  int hnew[kPix];               // staged heights, by position in the touched list
  unsigned short act[kPix];     // the active pixels of this round
  unsigned short touched[kPix];
  unsigned mark[kPix / 32];     // touched bitmap
  int n_act;
  int n_touched;
};

template <int kCThreads, bool kForce>
__global__ void __launch_bounds__(kCThreads) sparse_round_kernel(TileArgs a) {
  __shared__ SharedC sh;
  const long long t = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x);
  const int* hp = a.height + t * kPad;
  for (int i = tid; i < kPad; i += kCThreads) {
    sh.h[i] = hp[i];
    sh.halo[i] = 0;
  }
  for (int i = tid; i < kPix; i += kCThreads) {
    sh.ex[i] = a.excess[t * kPix + i];
    sh.in[i] = 0ULL;
#pragma unroll
    for (int k = 0; k < 8; ++k) sh.res[k][i] = a.res[(t * 8 + k) * kPix + i];
  }
  if (tid < kPix / 32) sh.mark[tid] = 0U;
  if (tid == 0) sh.n_act = 0;
  __syncthreads();
  for (int i = tid; i < kPix; i += kCThreads) {
    if (sh.ex[i] > 0 && sh.h[pad_slot(i % kTileW, i / kTileW)] < kInf) sh.act[atomicAdd(&sh.n_act, 1)] = static_cast<unsigned short>(i);
  }
  __syncthreads();
  int rounds = 0;
  if (sh.n_act > 0) {
    for (int round = 0; round < a.max_rounds; ++round) {
      const int na = sh.n_act;
      for (int j = tid; j < na; j += kCThreads) {
        const int i = sh.act[j];
        const int x = i % kTileW;
        const int y = i / kTileW;
        const int me = pad_slot(x, y);
        const int hm = sh.h[me];
        long long left = sh.ex[i];
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int nb = me + dir_dy(k) * kPadW + dir_dx(k);
          if (left == 0 || sh.h[nb] >= hm) continue;
          const unsigned r = sh.res[k][i];
          if (r == 0U) continue;
          const auto amount = static_cast<unsigned>(left < static_cast<long long>(r) ? left : static_cast<long long>(r));
          sh.res[k][i] = r - amount;
          left -= amount;
          const int nx = x + dir_dx(k);
          const int ny = y + dir_dy(k);
          if (in_tile(nx, ny)) {
            const int q = ny * kTileW + nx;
            sh.res[k ^ 4][q] += amount;
            atomicAdd(&sh.in[q], static_cast<unsigned long long>(amount));
            atomicOr(&sh.mark[q >> 5], 1U << (q & 31));
          } else {
            atomicAdd(reinterpret_cast<unsigned long long*>(&sh.halo[nb]), static_cast<unsigned long long>(amount));
          }
        }
        sh.ex[i] = left;
        atomicOr(&sh.mark[i >> 5], 1U << (i & 31));
      }
      __syncthreads();
      if (tid < 32) {  // the touched bitmap into a list, in pixel order
        const unsigned m = tid < kPix / 32 ? sh.mark[tid] : 0U;
        const int c = __popc(m);
        int pre = c;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          const int v = __shfl_up_sync(0xffffffffU, pre, o);
          if (tid >= o) pre += v;
        }
        int at = pre - c;
        for (unsigned mm = m; mm != 0U; mm &= mm - 1U) sh.touched[at++] = static_cast<unsigned short>(tid * 32 + __ffs(mm) - 1);
        if (tid < kPix / 32) sh.mark[tid] = 0U;
        if (tid == 31) sh.n_touched = pre;
        if (tid == 0) sh.n_act = 0;
      }
      __syncthreads();
      const int nt = sh.n_touched;
      for (int j = tid; j < nt; j += kCThreads) {
        const int i = sh.touched[j];
        const long long e = sh.ex[i] + static_cast<long long>(sh.in[i]);
        sh.in[i] = 0ULL;
        sh.ex[i] = e;
        const int me = pad_slot(i % kTileW, i / kTileW);
        int hm = sh.h[me];
        if (e > 0 && hm < kInf) {
          int m = kInf;
#pragma unroll
          for (int k = 0; k < 8; ++k) {
            if (sh.res[k][i] != 0U) m = min_int(m, sh.h[me + dir_dy(k) * kPadW + dir_dx(k)]);
          }
          if (m >= hm) hm = m >= kInf - 1 ? kInf : m + 1;
        }
        sh.hnew[j] = hm;
      }
      __syncthreads();
      for (int j = tid; j < nt; j += kCThreads) {
        const int i = sh.touched[j];
        const int hm = sh.hnew[j];
        sh.h[pad_slot(i % kTileW, i / kTileW)] = hm;
        if (sh.ex[i] > 0 && hm < kInf) sh.act[atomicAdd(&sh.n_act, 1)] = static_cast<unsigned short>(i);
      }
      __syncthreads();
      rounds = round + 1;
      if (!kForce && sh.n_act == 0) break;
    }
  }
  for (int i = tid; i < kPix; i += kCThreads) {
    a.out_excess[t * kPix + i] = sh.ex[i];
    a.out_height[t * kPix + i] = sh.h[pad_slot(i % kTileW, i / kTileW)];
#pragma unroll
    for (int k = 0; k < 8; ++k) a.out_res[(t * 8 + k) * kPix + i] = sh.res[k][i];
  }
  for (int i = tid; i < kPad; i += kCThreads) {
    if (!in_tile(i % kPadW - 1, i / kPadW - 1)) a.out_inbox[t * kPad + i] = sh.halo[i];
  }
  if (tid == 0) a.out_rounds[t] = rounds;
}

struct DeviceWarp {
  __device__ __forceinline__ int lane() const { return static_cast<int>(threadIdx.x) & 31; }
  template <typename T>
  __device__ __forceinline__ T shfl_up(T v) const {
    return __shfl_up_sync(kFull, v, 1);
  }
  template <typename T>
  __device__ __forceinline__ T shfl_down(T v) const {
    return __shfl_down_sync(kFull, v, 1);
  }
  __device__ __forceinline__ bool any(bool p) const { return __any_sync(kFull, p) != 0; }
  __device__ __forceinline__ void sync() const { __syncwarp(); }
};

// Kernel B: a warp a tile, kWarps tiles a block.
template <int kWarps, bool kResInRegisters>
constexpr std::size_t warp_kernel_smem() {
  return static_cast<std::size_t>(kWarps) * (sizeof(WarpSide) + (kResInRegisters ? 0 : sizeof(WarpResiduals)));
}

template <int kWarps, bool kResInRegisters, bool kForce>
__global__ void __launch_bounds__(32 * kWarps) warp_round_kernel(TileArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const long long t = static_cast<long long>(blockIdx.x) * kWarps + warp;
  if (t >= a.tiles) return;  // the whole warp
  WarpSide& side = reinterpret_cast<WarpSide*>(smem)[warp];
  WarpResiduals* wres = nullptr;
  if constexpr (!kResInRegisters) wres = reinterpret_cast<WarpResiduals*>(smem + kWarps * sizeof(WarpSide)) + warp;
  warp_tile<DeviceWarp, kResInRegisters, kForce>(DeviceWarp{}, a, t, side, wres);
}

// Kernel A of --relax: bfs_tile's relaxation (maxflow.cu), a block of kThreads a tile, a
// pixel a thread: Jacobi steps over two label buffers in shared memory, one
// __syncthreads_or a step, until a step changes no label. Also counts its steps.
__global__ void __launch_bounds__(kThreads, 2) block_relax_kernel(RelaxArgs a) {
  __shared__ int h[2][kPad];
  const long long t = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x);
  const int me = (tid / kTileW + 1) * kPadW + tid % kTileW + 1;
  const int* lp = a.label + t * kPad;
  int d = lp[me];
  const unsigned mask = a.mask[t * kPix + tid];
  const bool sink = d == 0;
  for (int i = tid; i < kPad; i += kThreads) {
    const int py = i / kPadW;
    const int px = i - py * kPadW;
    if (py >= 1 && py <= kTileH && px >= 1 && px <= kTileW) continue;
    const int hv = lp[i];
    h[0][i] = hv;
    h[1][i] = hv;
  }
  h[0][me] = d;
  __syncthreads();
  const bool relaxes = !sink && mask != 0U;
  int steps = 0;
  for (int par = 0;; par ^= 1) {
    ++steps;
    bool ch = false;
    if (relaxes) {
      const int nd = grabcut::cuda::tile::relaxed_label(h[par], me, mask, d);
      ch = nd < d;
      d = nd;
    }
    h[par ^ 1][me] = d;
    if (!__syncthreads_or(ch)) break;
  }
  a.out_label[t * kPix + tid] = d;
  if (tid == 0) a.out_steps[t] = steps;
}

// Kernel B of --relax: a warp a tile, kWarps tiles a block, no block barrier.
template <int kWarps>
__global__ void __launch_bounds__(32 * kWarps) warp_relax_kernel(RelaxArgs a) {
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const long long t = static_cast<long long>(blockIdx.x) * kWarps + warp;
  if (t >= a.tiles) return;  // the whole warp
  warp_relax(DeviceWarp{}, a, t);
}

// ---------------------------------------------------------------- host side of the GPU runs
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) : n_(n) {
    if (n > 0) GRABCUT_CUDA_CHECK(cudaMalloc(&p_, n * sizeof(T)));
  }
  ~DeviceArray() {
    if (p_ != nullptr) cudaFree(p_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  void upload(const std::vector<T>& v) {
    GRABCUT_CUDA_CHECK(cudaMemcpy(p_, v.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  void download(std::vector<T>& v) const {
    v.resize(n_);
    GRABCUT_CUDA_CHECK(cudaMemcpy(v.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
  }
  // A byte pattern no kernel writes, so a value a kernel forgot shows in the check.
  void poison() { GRABCUT_CUDA_CHECK(cudaMemset(p_, 0xA5, n_ * sizeof(T))); }

 private:
  T* p_ = nullptr;
  std::size_t n_;
};

class CudaEvent {
 public:
  CudaEvent() { GRABCUT_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~CudaEvent() { cudaEventDestroy(e_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// A tile set on the device, with room for the rounds' results.
struct DeviceTiles {
  int count;
  DeviceArray<long long> excess, out_excess, out_inbox;
  DeviceArray<int> height, out_height, out_rounds;
  DeviceArray<unsigned> res, out_res;

  explicit DeviceTiles(const TileSet& s)
      : count(s.count),
        excess(s.excess.size()),
        out_excess(s.excess.size()),
        out_inbox(static_cast<std::size_t>(s.count) * kPad),
        height(s.height.size()),
        out_height(static_cast<std::size_t>(s.count) * kPix),
        out_rounds(static_cast<std::size_t>(s.count)),
        res(s.res.size()),
        out_res(s.res.size()) {
    excess.upload(s.excess);
    height.upload(s.height);
    res.upload(s.res);
  }
  TileArgs args(int max_rounds) const {
    return {excess.get(),  height.get(),    res.get(),        out_excess.get(), out_height.get(),
            out_res.get(), out_inbox.get(), out_rounds.get(), count,            max_rounds};
  }
  void poison() {
    out_excess.poison();
    out_height.poison();
    out_res.poison();
    out_rounds.poison();
    // The interior of the inbox is never written: 0, as the reference has it.
    GRABCUT_CUDA_CHECK(cudaMemset(out_inbox.get(), 0, static_cast<std::size_t>(count) * kPad * sizeof(long long)));
    std::vector<long long> halo(static_cast<std::size_t>(count) * kPad, 0);
    for (std::size_t i = 0; i < halo.size(); ++i) {
      const int slot = static_cast<int>(i % kPad);
      if (!in_tile(slot % kPadW - 1, slot / kPadW - 1)) halo[i] = 0x5a5a5a5a5a5aLL;
    }
    out_inbox.upload(halo);
  }
  TileResult download() const {
    TileResult r;
    out_excess.download(r.excess);
    out_height.download(r.height);
    out_res.download(r.res);
    out_inbox.download(r.inbox);
    out_rounds.download(r.rounds);
    return r;
  }
};

using KernelFn = void (*)(TileArgs);

struct KernelVariant {
  const char* name;
  KernelFn early_stop;
  KernelFn forced;
  int threads;
  int tiles_per_block;
  std::size_t dynamic_smem;
};

template <int kWarps, bool kResInRegisters>
KernelVariant warp_variant(const char* name) {
  constexpr std::size_t smem = warp_kernel_smem<kWarps, kResInRegisters>();
  KernelVariant v{name, warp_round_kernel<kWarps, kResInRegisters, false>,
                  warp_round_kernel<kWarps, kResInRegisters, true>, 32 * kWarps, kWarps, smem};
  for (KernelFn f : {v.early_stop, v.forced}) {
    GRABCUT_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(f),
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  }
  return v;
}

void launch(const KernelVariant& v, bool force, const DeviceTiles& d, int max_rounds) {
  const int blocks = (d.count + v.tiles_per_block - 1) / v.tiles_per_block;
  (force ? v.forced : v.early_stop)<<<blocks, v.threads, v.dynamic_smem>>>(d.args(max_rounds));
  GRABCUT_CUDA_CHECK_LAUNCH(v.name);
}

float median_ms(int runs, const std::function<void()>& timed) {
  CudaEvent start;
  CudaEvent stop;
  for (int i = 0; i < 3; ++i) timed();
  GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    GRABCUT_CUDA_CHECK(cudaEventRecord(start.get(), nullptr));
    timed();
    GRABCUT_CUDA_CHECK(cudaEventRecord(stop.get(), nullptr));
    GRABCUT_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float v = 0;
    GRABCUT_CUDA_CHECK(cudaEventElapsedTime(&v, start.get(), stop.get()));
    ms.push_back(v);
  }
  return static_cast<float>(grabcut::testing::percentile(ms, 0.5));
}

// One measured configuration: a tile set with its reference, early stop or forced rounds.
struct Case {
  const char* kind;  // "throughput" or "latency"
  DeviceTiles* tiles;
  const TileResult* ref;
  int max_rounds;
  bool force;
};

// --relax on the device: a relax set with room for the results.
struct DeviceRelax {
  int count;
  DeviceArray<int> label, out_label, out_steps;
  DeviceArray<unsigned char> mask;

  explicit DeviceRelax(const RelaxSet& s)
      : count(s.count),
        label(s.label.size()),
        out_label(static_cast<std::size_t>(s.count) * kPix),
        out_steps(static_cast<std::size_t>(s.count)),
        mask(s.mask.size()) {
    label.upload(s.label);
    mask.upload(s.mask);
  }
  RelaxArgs args() const { return {label.get(), mask.get(), out_label.get(), out_steps.get(), count}; }
  void poison() {
    out_label.poison();
    out_steps.poison();
  }
  RelaxResult download() const {
    RelaxResult r;
    out_label.download(r.label);
    out_steps.download(r.steps);
    return r;
  }
};

using RelaxFn = void (*)(RelaxArgs);

struct RelaxVariant {
  const char* name;
  RelaxFn fn;
  int threads;
  int tiles_per_block;
  RelaxResult (*model)(const RelaxSet&);  // its schedule on the host: the steps it must report
};

void launch_relax(const RelaxVariant& v, const DeviceRelax& d) {
  const int blocks = (d.count + v.tiles_per_block - 1) / v.tiles_per_block;
  v.fn<<<blocks, v.threads>>>(d.args());
  GRABCUT_CUDA_CHECK_LAUNCH(v.name);
}

// The --relax table: every tile (throughput), then each kernel's own sms and 2 x sms
// tiles with most steps (latency: each tile runs to its own fixpoint, so the kernel's
// time is one relaxation's critical path).
int relax_gpu(const RelaxSet& all_set, int runs) {
  int device = 0;
  GRABCUT_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  GRABCUT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const int sms = prop.multiProcessorCount;
  std::printf("device: %s, %d SMs\n", prop.name, sms);
  const std::vector<RelaxVariant> kernels = {
      {"A block", block_relax_kernel, kThreads, 1, jacobi_model},
      {"B warp x4", warp_relax_kernel<4>, 128, 4, column_model},
      {"B warp x1", warp_relax_kernel<1>, 32, 1, column_model},
  };
  long long mismatches = 0;
  std::printf("\n%-10s %-10s %5s %6s %4s %10s %9s %8s %8s %5s %6s %8s\n", "kernel", "rows", "tiles", "steps", "max",
              "median ms", "us/relax", "ns/tile", "ns/step", "regs", "local", "blocks/SM");
  for (const RelaxVariant& v : kernels) {
    cudaFuncAttributes attr{};
    GRABCUT_CUDA_CHECK(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(v.fn)));
    int per_sm = 0;
    GRABCUT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, v.fn, v.threads, 0));
    const RelaxResult all_model = v.model(all_set);
    std::vector<RelaxSet> sets;
    sets.push_back(all_set);
    for (int n : {sms, 2 * sms}) sets.push_back(relax_subset(all_set, most_steps(all_model, n)));
    for (std::size_t c = 0; c < sets.size(); ++c) {
      const bool latency = c > 0;
      const RelaxResult ref = relax_reference(sets[c]);
      const RelaxResult model = latency ? v.model(sets[c]) : all_model;
      DeviceRelax dev(sets[c]);
      dev.poison();
      launch_relax(v, dev);
      GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());
      const std::string what = std::string(v.name) + (latency ? " latency " : " throughput ") + std::to_string(dev.count);
      mismatches += compare_relax(what.c_str(), ref, &model, dev.download());
      const float ms = median_ms(runs, [&] { launch_relax(v, dev); });
      double mean = 0;
      int most = 0;
      for (int s : model.steps) {
        mean += s;
        most = std::max(most, s);
      }
      mean /= static_cast<double>(model.steps.size());
      char lat[32] = "-";
      char per_step[32] = "-";
      char per_tile[32] = "-";
      if (latency) {
        std::snprintf(lat, sizeof lat, "%.2f", 1000.0 * static_cast<double>(ms));
        std::snprintf(per_step, sizeof per_step, "%.1f", 1e6 * static_cast<double>(ms) / most);
      } else {
        std::snprintf(per_tile, sizeof per_tile, "%.2f", 1e6 * static_cast<double>(ms) / dev.count);
      }
      std::printf("%-10s %-10s %5d %6.2f %4d %10.4f %9s %8s %8s %5d %6zu %8d\n", v.name,
                  latency ? "latency" : "throughput", dev.count, mean, most, static_cast<double>(ms), lat, per_tile,
                  per_step, attr.numRegs, attr.localSizeBytes, per_sm);
    }
  }
  std::printf("(steps: mean and max over the row's tiles, each kernel's own schedule; latency rows: each kernel's "
              "own tiles with most steps, us/relax = kernel time, ns/step = time / max steps; throughput: every "
              "tile, ns/tile = time / tiles.)\n");
  if (mismatches != 0) {
    std::printf("FAILED: %lld values differ from the host reference\n", mismatches);
    return 1;
  }
  std::printf("all kernels' labels equal the host reference bit for bit, steps equal their host schedules\n");
  return 0;
}
#endif  // __CUDACC__

struct Options {
  bool host_only = false;
  bool region_heights = false;
  int size = 1024;
  unsigned seed = 1;
  int runs = 15;
  int emulate = 8;
  bool relax = false;
  int drop_arcs = 0;
  int keep_sinks = 100;
  int advance = 0;  // rounds the reference runs on every tile before the measured ones
};

int usage() {
  std::fprintf(stderr, "usage: bench_tile_round [--host-only] [--relax [--drop-arcs P] [--keep-sinks P]]\n"
               "                        [--heights global|tile] [--size N] [--seed S] [--runs N] [--emulate N] [--advance N]\n");
  return 2;
}

// --relax: the in-tile relaxation's table (or, with --host-only, its host checks).
int run_relax(const Options& o, const TileSet& tiles) {
  const RelaxSet set = make_relax(tiles, o.drop_arcs, o.keep_sinks, o.seed);
  const RelaxResult ref = relax_reference(set);
  const bool thinned = o.drop_arcs != 0 || o.keep_sinks != 100;
  // The fixpoint is what make_tiles put in the interior: the global BFS distances
  // (global heights) or the in-tile distances with the halo at B (tile heights).
  RelaxResult built;
  built.resize(tiles.count);
  for (int t = 0; t < tiles.count; ++t) {
    for (int i = 0; i < kPix; ++i) {
      built.label[static_cast<std::size_t>(t) * kPix + static_cast<std::size_t>(i)] =
          tiles.height[static_cast<std::size_t>(t) * kPad + static_cast<std::size_t>(pad_slot(i % kTileW, i / kTileW))];
    }
  }
  long long bad = thinned ? 0 : compare_relax("reference against the tile set's heights", built, nullptr, ref);
  const RelaxResult jacobi = jacobi_model(set);
  const RelaxResult column = column_model(set);
  bad += compare_relax("A's Jacobi schedule (host)", ref, nullptr, jacobi);
  bad += compare_relax("B's column schedule (host)", ref, nullptr, column);
  if (bad != 0) return 1;
  long long sinks = 0;
  long long reached = 0;
  for (std::size_t i = 0; i < ref.label.size(); ++i) {
    sinks += ref.label[i] == 0 ? 1 : 0;
    reached += ref.label[i] < kInf ? 1 : 0;
  }
  if (thinned) std::printf("thinned: %d%% of the arcs dropped, %d%% of the sinks kept\n", o.drop_arcs, o.keep_sinks);
  std::printf("in-tile relaxation: sinks %lld, pixels with a finite label %lld of %zu; host schedules equal the "
              "reference (Dijkstra)\n",
              sinks, reached, ref.label.size());
  print_step_stats("A Jacobi (bfs_tile)", jacobi);
  print_step_stats("B column passes + shuffles", column);
  if (o.host_only) {
    for (int n : {132, 264}) {
      for (const RelaxResult* r : {&jacobi, &column}) {
        const std::vector<int> hard = most_steps(*r, n);
        int lo = kInf;
        int hi = 0;
        for (int t : hard) {
          lo = std::min(lo, r->steps[static_cast<std::size_t>(t)]);
          hi = std::max(hi, r->steps[static_cast<std::size_t>(t)]);
        }
        std::printf("latency set: the %d tiles with most %s steps need %d..%d\n", n, r == &jacobi ? "A" : "B", lo, hi);
      }
    }
    // Kernel B's own code on host fibers, on the --emulate tiles with most B steps and as
    // many spread over the graph: labels against the reference, steps against B's
    // schedule. The cold-start state's arcs are nearly all there in both directions, so a
    // pass that reads the wrong arc's bit still finds the right labels there: the same
    // tiles thinned (20% of the arcs dropped, 10% of the sinks kept) are emulated too.
    if (o.emulate > 0) {
      const RelaxSet stress = thinned ? RelaxSet() : make_relax(tiles, 20, 10, o.seed);
      for (const RelaxSet* from : {&set, &stress}) {
        if (from->count == 0) continue;
        const RelaxResult steps = column_model(*from);
        std::vector<int> pick = most_steps(steps, o.emulate);
        for (int i = 0; i < o.emulate; ++i) pick.push_back(static_cast<int>(static_cast<long long>(i) * tiles.count / o.emulate));
        const RelaxSet sub = relax_subset(*from, pick);
        const RelaxResult sub_steps = column_model(sub);
        const char* what = from == &set ? "B relax emulated" : "B relax emulated, thinned 20/10";
        const long long diff = compare_relax(what, relax_reference(sub), &sub_steps, emulate_warp_relax(sub));
        std::printf("%s (%d tiles): %s\n", what, sub.count,
                    diff == 0 ? "labels equal the reference, steps equal B's schedule" : "DIFFERENT");
        if (diff != 0) return 1;
      }
    }
    return 0;
  }
#ifdef __CUDACC__
  return relax_gpu(set, o.runs);
#else
  std::fprintf(stderr, "bench_tile_round: built without CUDA, only --host-only runs\n");
  return 2;
#endif
}

int run(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--host-only") {
      o.host_only = true;
    } else if (arg == "--relax") {
      o.relax = true;
    } else if (arg == "--drop-arcs" && has_value) {
      o.drop_arcs = std::clamp(std::atoi(argv[++i]), 0, 100);
    } else if (arg == "--keep-sinks" && has_value) {
      o.keep_sinks = std::clamp(std::atoi(argv[++i]), 0, 100);
    } else if (arg == "--heights" && has_value) {
      const std::string v = argv[++i];
      if (v != "global" && v != "tile") return usage();
      o.region_heights = v == "tile";
    } else if (arg == "--size" && has_value) {
      o.size = std::atoi(argv[++i]);
    } else if (arg == "--seed" && has_value) {
      o.seed = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else if (arg == "--emulate" && has_value) {
      o.emulate = std::max(0, std::atoi(argv[++i]));
    } else if (arg == "--advance" && has_value) {
      o.advance = std::max(0, std::atoi(argv[++i]));
    } else if (arg == "--runs" && has_value) {
      o.runs = std::max(1, std::atoi(argv[++i]));
    } else {
      return usage();
    }
  }
  if (o.size <= 0 || o.size % kTileW != 0 || o.size % kTileH != 0) {
    std::fprintf(stderr, "bench_tile_round: --size must be a positive multiple of %d\n", kTileW);
    return 2;
  }
  const HostGraph g =
      grabcut::testing::grabcut_graph(o.size, o.size, o.seed, {grabcut::testing::GrabCutScene::kSmoothScoreFloat});
  TileSet tiles = make_tiles(g, o.region_heights);
  if (o.advance > 0) {
    // A visit's later state: the tiles after --advance rounds of the reference (what
    // went into the halo is gone; the halo's heights stay frozen), where fewer pixels
    // are active than at a cold start.
    const TileResult later = reference(tiles, o.advance, false);
    tiles.excess = later.excess;
    tiles.res = later.res;
    for (int t = 0; t < tiles.count; ++t) {
      for (int i = 0; i < kPix; ++i) {
        tiles.height[static_cast<std::size_t>(t) * kPad + static_cast<std::size_t>(pad_slot(i % kTileW, i / kTileW))] =
            later.height[static_cast<std::size_t>(t) * kPix + static_cast<std::size_t>(i)];
      }
    }
    std::printf("tiles advanced by %d reference rounds\n", o.advance);
  }
  long long active = 0;
  long long finite = 0;
  for (int t = 0; t < tiles.count; ++t) {
    for (int i = 0; i < kPix; ++i) {
      const int hv = tiles.height[static_cast<std::size_t>(t) * kPad + static_cast<std::size_t>(pad_slot(i % kTileW, i / kTileW))];
      const long long ev = tiles.excess[static_cast<std::size_t>(t) * kPix + static_cast<std::size_t>(i)];
      finite += hv < kInf ? 1 : 0;
      active += ev > 0 && hv < kInf ? 1 : 0;
    }
  }
  std::printf("bench_tile_round: GrabCut-like graph %dx%d (seed %u), %d tiles of %dx%d, heights: %s\n", o.size, o.size,
              o.seed, tiles.count, kTileW, kTileH,
              o.region_heights ? "tile (in-tile BFS, halo frozen at B = 1024)" : "global (exact BFS, halo included)");
  std::printf("pixels with a finite height %lld, active %lld of %lld\n", finite, active,
              static_cast<long long>(tiles.count) * kPix);
  if (o.relax) return run_relax(o, tiles);
  const TileResult ref12 = reference(tiles, 12, false);
  const TileResult ref32 = reference(tiles, 32, false);
  print_round_stats("R = 12", ref12, 12);
  print_round_stats("R = 32", ref32, 32);
  if (o.host_only) {
    const TileResult long_run = reference(tiles, kLongCap, false);
    print_round_stats("R = 1000", long_run, kLongCap);
    // The forced mode's end state is the capped one (a round with no active pixel
    // changes nothing): a check of the reference itself.
    const TileResult forced = reference(tiles, 12, true);
    TileResult same = forced;
    same.rounds = ref12.rounds;
    if (compare("forced R = 12 against early stop", ref12, same) != 0) return 1;
    // Kernel A's halo inbox comes off the residuals: the reference's must equal that.
    for (const TileResult* r : {&ref12, &ref32, &long_run}) {
      TileResult derived = *r;
      derived.inbox = halo_inflow_from_residuals(tiles, *r);
      if (compare("halo inbox from res0 - res", *r, derived) != 0) return 1;
    }
    std::printf("reference: the halo inbox equals res0 - res on the arcs leaving each tile (R = 12, 32, 1000)\n");
    // Kernel B's code on host fibers, on the --emulate hardest tiles at R = 32 and as many
    // spread over the graph, with early stop and forced rounds.
    if (o.emulate > 0) {
      std::vector<int> pick = hardest_tiles(ref32, o.emulate);
      for (int i = 0; i < o.emulate; ++i) pick.push_back(static_cast<int>(static_cast<long long>(i) * tiles.count / o.emulate));
      const TileSet set = subset(tiles, pick);
      long long bad = 0;
      for (int cap : {12, 32}) {
        for (bool force : {false, true}) {
          const TileResult want = reference(set, cap, force);
          const std::string what = "R = " + std::to_string(cap) + (force ? " forced" : "");
          bad += compare(("B.reg emulated " + what).c_str(), want, emulate_warp_kernel<true>(set, cap, force));
          bad += compare(("B.smem emulated " + what).c_str(), want, emulate_warp_kernel<false>(set, cap, force));
        }
      }
      std::printf("kernel B emulated on the host (%d tiles, R = 12 and 32, early stop and forced): %s\n", set.count,
                  bad == 0 ? "equal to the reference" : "DIFFERENT");
      if (bad != 0) return 1;
    }
    // The latency rows' tiles (on an H100, 132 SMs: 132 and 264 tiles).
    for (int n : {132, 264}) {
      for (const TileResult* r : {&ref12, &ref32}) {
        const std::vector<int> hard = hardest_tiles(*r, n);
        const TileSet set = subset(tiles, hard);
        const int cap = r == &ref12 ? 12 : 32;
        const TileResult sub = reference(set, cap, false);
        std::printf("latency set: the %d tiles with most rounds at R = %d run %lld rounds, fewest %d\n", n, cap,
                    total_rounds(sub), *std::min_element(sub.rounds.begin(), sub.rounds.end()));
      }
    }
    return 0;
  }
#ifdef __CUDACC__
  int device = 0;
  GRABCUT_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  GRABCUT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const int sms = prop.multiProcessorCount;
  std::printf("device: %s, %d SMs\n", prop.name, sms);

  std::vector<KernelVariant> kernels;
  kernels.push_back({"A block", block_round_kernel<false>, block_round_kernel<true>, kThreads, 1, 0});
  kernels.push_back(warp_variant<4, true>("B.reg warp"));
  kernels.push_back(warp_variant<4, false>("B.smem warp"));
  kernels.push_back({"C128 sparse", sparse_round_kernel<128, false>, sparse_round_kernel<128, true>, 128, 1, 0});
  kernels.push_back({"C256 sparse", sparse_round_kernel<256, false>, sparse_round_kernel<256, true>, 256, 1, 0});

  DeviceTiles all(tiles);
  std::vector<std::unique_ptr<DeviceTiles>> sets;
  std::vector<std::unique_ptr<TileResult>> refs;
  std::vector<Case> cases;
  cases.push_back({"throughput", &all, &ref12, 12, false});
  cases.push_back({"throughput", &all, &ref32, 32, false});
  for (int n : {sms, 2 * sms}) {
    for (int r : {12, 32}) {
      const TileSet hard = subset(tiles, hardest_tiles(r == 12 ? ref12 : ref32, n));
      refs.push_back(std::make_unique<TileResult>(reference(hard, r, true)));
      sets.push_back(std::make_unique<DeviceTiles>(hard));
      cases.push_back({"latency", sets.back().get(), refs.back().get(), r, true});
    }
  }

  long long mismatches = 0;
  std::printf("\n%-12s %-10s %6s %3s %10s %11s %14s %10s %5s %6s\n", "kernel", "rows", "tiles", "R", "median ms",
              "us/round", "ns/tile-round", "rounds", "regs", "local");
  for (const KernelVariant& v : kernels) {
    cudaFuncAttributes attr{};
    GRABCUT_CUDA_CHECK(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(v.early_stop)));
    for (const Case& c : cases) {
      c.tiles->poison();
      launch(v, c.force, *c.tiles, c.max_rounds);
      GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());
      const std::string what = std::string(v.name) + " " + c.kind + " R=" + std::to_string(c.max_rounds);
      mismatches += compare(what.c_str(), *c.ref, c.tiles->download());
      const float ms = median_ms(o.runs, [&] { launch(v, c.force, *c.tiles, c.max_rounds); });
      const long long rounds = total_rounds(*c.ref);
      const double us_per_round = c.force ? 1000.0 * ms / c.max_rounds : 0.0;
      const double ns_per_tile_round = rounds > 0 ? 1e6 * ms / static_cast<double>(rounds) : 0.0;
      char lat[32] = "-";
      if (c.force) std::snprintf(lat, sizeof lat, "%.3f", us_per_round);
      std::printf("%-12s %-10s %6d %3d %10.4f %11s %14.2f %10lld %5d %6zu\n", v.name, c.kind, c.tiles->count,
                  c.max_rounds, static_cast<double>(ms), lat, ns_per_tile_round, rounds, attr.numRegs,
                  attr.localSizeBytes);
    }
  }
  std::printf("(latency rows: the tiles the reference needs most rounds for, exactly R rounds each; us/round = "
              "time / R. throughput rows: every tile, early stop; ns/tile-round = time / rounds run.)\n");
  if (mismatches != 0) {
    std::printf("FAILED: %lld values differ from the host reference\n", mismatches);
    return 1;
  }
  std::printf("all kernels equal the host reference bit for bit\n");
  return 0;
#else
  std::fprintf(stderr, "bench_tile_round: built without CUDA, only --host-only runs\n");
  return 2;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_tile_round: %s\n", e.what());
    return 1;
  }
}
