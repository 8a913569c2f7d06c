// A model, run on the CPU, of a GPU max-flow whose grid-wide barriers are set by tiles
// (issue 33): tiles discharged against frozen boundary labels between barriers, in the
// manner of Shekhovtsov and Hlavac's region discharge (ARD) with JF-Cut's in-block
// push-relabel. It runs the per-tile algorithm the GPU would run, step for step
// (synchronous push and relabel rounds, Jacobi BFS relaxations), counts what the GPU
// would do (grid barriers, tile discharges, push rounds, BFS steps) and estimates the
// time from per-step costs. Every cut is checked against the CPU solver
// (core/maxflow.cpp); a mismatch is an error (exit 1).
//
// The schedule:
// - Every pixel p holds a region label D(p): a lower bound on the number of tile
//   boundaries that a residual path from p to a sink (a pixel with sink capacity left)
//   must cross; 0 where p may reach one inside its own tile, kDInf where it cannot
//   reach one at all. Valid labels: for every residual arc p -> q between two tiles,
//   D(p) <= D(q) + 1. All zero is valid, so a solve may start there.
// - A sweep runs the four colours of a 2 x 2 tile colouring one after the other, one
//   grid barrier each. Tiles of one colour touch no common pixel, not even at corners
//   of the 8-connected grid, so their discharges are independent: the sweep is exactly
//   a sequential region discharge, and a phase with no active tile costs no barrier (the
//   lists of active tiles are known at each barrier).
// - A discharge loads the tile, its residual arcs, and the labels of its halo (the
//   pixels of other tiles next to it), frozen. Heights inside the tile are
//   h = D * B + (steps inside the tile), B = 2 * pixels of a tile, with halo pixel w at
//   (D(w) + 1) * B and sinks at 0, so a push-relabel in the tile routes excess to its
//   own sinks first, then to the halo of the lowest label, and so on (the lexicographic
//   order of ARD, which push-relabel keeps because a height never falls). It starts with
//   exact heights (a BFS to convergence), runs synchronous push and relabel rounds (the
//   GPU solver's round: every active pixel pushes to its lower residual neighbours, then
//   relabels from the heights the push saw), and relaxes the heights exactly again
//   whenever a round pushed nothing, until no pixel of the tile with excess can reach a
//   sink or the halo (or --round-cap rounds). Excess pushed into the halo becomes its
//   pixel's excess; the tile writes D = h / B back.
// - The flow is maximal when no pixel with excess has a finite label (labels are lower
//   bounds). The canonical cut (source side: pixels that cannot reach a sink in the
//   residual graph) then takes a reachability pass over tiles, Jacobi at tile level,
//   one barrier per sweep; the model counts its sweeps.
// - Warm solves (the GrabCut iterations after the first) keep the n-link flows and add
//   the change of each pixel's terminal capacity to its excess. Labels may then be too
//   high where sinks appeared: they restart at zero (--warm-labels zero) or from an exact
//   tile-level relabel (--warm-labels bfs).
// - The options added for issue 33's next ideas (all off by default, so earlier command
//   lines give the same numbers; bench/RESULTS.md, "Region discharge, next ideas: v0.13c's
//   relabel, the cut from the labels, level passes"):
//   --relabel capped: every global relabel of the labels (a warm solve's start, the
//     confirmation of the end, --global-every, --stall-relabel) run the way v0.13c runs
//     its pixel-level global relabel, with the same costs (a tile visit: a load, 2.0, plus
//     its Jacobi steps; 1.7 for v0.13c's smaller tile): a first sweep over every
//     tile from the sinks, then sweeps over the tiles next to a tile whose labels moved,
//     each tile relaxing from its current heights (Jacobi steps over a frontier, as in
//     model_maxflow_tiles), one grid barrier a sweep; heights are the lexicographic
//     (tile boundaries crossed, steps inside the tile), so the labels it yields are the
//     exact D(p) = fewest tile boundaries on a residual path to a sink. Stopped at
//     --relabel-cap sweeps (12, v0.13c's cap), a pixel not reached takes the number of
//     sweeps run as its label, a valid lower bound (capped_labels says why); the cap
//     doubles after every stop within a solve, and the relabel that confirms the end of
//     a parallel solve always runs to the end.
//   --stall-relabel S: a global relabel whenever the number of active tiles has not
//     set a new low for S sweeps.
//   --cut labels (--parallel 1): the canonical cut read from the exact labels of the
//     relabel that confirmed the end (kDInf = reaches no sink), as v0.13c reads it from
//     its last global relabel, instead of a reachability pass of its own.
//   --inner levels: the in-tile step is a pass of levels instead of synchronous rounds.
//     From exact in-tile heights, every pixel at the highest occupied height holding
//     excess pushes to its lower residual neighbours, then the next occupied height
//     down, and so on, so excess can cross the whole tile in one pass; then exact
//     heights again (a Jacobi BFS, --level-relabel exact) or one local relabel step
//     (--level-relabel local; exact heights when a pass pushed nothing). --round-cap
//     caps the passes of a discharge; the last pass a cap allows ends without a relax
//     (pushes to lower neighbours keep the heights valid).
//   Cost assumptions (us, H200, the v0.7 profile the models share): a synchronous
//   push-relabel round of a tile 1.4 (a push step, a relabel step, their block
//   barriers); a Jacobi BFS step 0.3 (a masked min over 8 neighbours and a barrier); a
//   level step --cost-level 1.0 (the push step of a round: 8 residuals read, shared-
//   memory atomics to the neighbours' excess, a block barrier; the round less its
//   relabel step); a tile's load and write-back 2.0; a grid barrier 3.0; a global
//   relabel's tile visit costs a load plus its Jacobi steps, as in model_maxflow_tiles.
//   The summary line counts the critical path of rounds: over the phases of all
//   solves, the sum of the most rounds (or passes) any tile of the phase ran.
//
//   model_region_discharge synthetic [SIDE [SEED]]   the GrabCut-like test graph, cold and warm
//   model_region_discharge list FILE [COUNT]         images of a list written by
//                        bench/grabcut50_ppm.py, every iteration of a 5-iteration GrabCut
//   model_region_discharge graphs FILE...            graph files (tests/common/graph_file.h,
//                        bench/mincut_bench.py --dump), each solved cold
//   options: --tile WxH (32x32)  --round-cap N (0: none)  --sparse-round-cap N (--parallel 1:
//            the cap in phases of fewer tiles than --blocks; 0: --round-cap)  --stall-rounds P (a
//            discharge ends after P rounds in a row that moved no excess into a sink or the
//            halo; 0: never)  --init-labels zero|bfs (zero)
//            --relax-every R (16: exact heights every R rounds as well as when stalled)
//            --gap 0|1 (1: the gap heuristic on region labels after every phase)
//            --warm-labels zero|bfs (bfs)  --global-every S (0: never; an exact
//            tile-level relabel every S sweeps)  --cost-round US  --cost-step US
//            --cost-load US  --cost-barrier US  --blocks B
//            --parallel 0|1 (0: the 2 x 2 colouring above; 1: every active tile in one
//            phase, halo flows added after it, exact labels to confirm the end)
//            --colours 1|2 (with --parallel 1; 2: a sweep is two phases, a checkerboard
//            of tiles one colour at a time, so no two tiles that share an edge discharge
//            at once)
//            --inner jacobi|gs|levels (jacobi: synchronous rounds; gs: line passes;
//            levels: passes of levels)  --cost-pass US  --cost-level US
//            --level-relabel exact|local  --relabel exact|capped  --relabel-cap C (12)
//            --stall-relabel S (0)  --cut sweeps|labels  --relabel-group G (1)  --cost-cluster US (1)
//            --check-scratch 0|1 (1: every relabel tile visit checked against a relaxation from scratch)
//            --cost-relax US (0: a relaxation's fixed cost beside its --cost-step per step)
//            --dump DIR (list: the graphs written as graph files, nothing solved: see run())
//            --reverse-warm 0|1|2 (1, --parallel 1: a warm solve's sink capacity inside the last
//            source side moved backward to its excess first, see Options::reverse_warm; 2: that
//            phase ends on its first check that finds nothing to move, and its relabels skip
//            the tiles with no pixel of the source side, as the GPU's does)
//            --band B  --skip-settled 0|1  --capped-wait 0|1  --rim-requests 0|1
//            --sinkless-first 0|1  --cost-store US (see Options)
//   The summary's block work is the sum of every tile visit's cost over all phases: the
//   blocks' time a batch of such graphs pays where the model's ms is one graph's latency.
//
//   The GPU solver's schedule (bench/RESULTS.md, session 49: the reverse phase predicted
//   at -24% of the crops' work where the H100 measured -18%; older settings said -41%):
//     --tile 32x16 --parallel 1 --relabel capped --relabel-cap 12 --round-cap 16 --gap 0
//     --cut labels --capped-wait 1 --init-labels bfs --cost-round 0.76 --cost-load 5
//     --cost-step 0.3, and for the batches --colours 2 --global-every 8 --reverse-warm 2
//     (the GPU's 16 push sweeps between relabels are one colour each), for one large
//     graph --global-every 16.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/grabcut_graph.h"
#include "common/grabcut_iterations.h"
#include "common/graph_file.h"
#include "common/grid_graph.h"
#include "common/percentile.h"
#include "common/ppm_image.h"
#include "core/driver.h"
#include "core/maxflow.h"

namespace {

using grabcut::testing::HostGridGraph;
using grabcut::testing::percentile;

constexpr int kHInf = 0x3fffffff;  // height of a pixel that reaches no sink
constexpr int kDInf = 0x3fffffff;  // its region label

// The 8 directions: 0 right, 1 down-right, 2 down, 3 down-left, 4 left, 5 up-left,
// 6 up, 7 up-right; k ^ 4 is the reverse of k, and k < 4 are core/maxflow.h's forward links.
constexpr int kDy[8] = {0, 1, 1, 1, 0, -1, -1, -1};
constexpr int kDx[8] = {1, 1, 0, -1, -1, -1, 0, 1};

struct Options {
  int tile_w = 32, tile_h = 32;
  int round_cap = 0;
  int sparse_round_cap = 0;  // --parallel 1: the round cap in phases of fewer tiles than blocks (0: round_cap)
  int stall_rounds = 0;  // a discharge ends after this many rounds in a row that delivered nothing (0: never)
  int relax_every = 16;  // exact heights again every so many rounds (0: only when stalled)
  bool init_bfs = false;
  bool warm_bfs = true;
  int global_every = 0;
  bool gap = true;  // --gap 0 turns the gap heuristic off
  // Per-step costs (us) for the time estimate: a push-relabel round of a tile, a
  // Jacobi BFS step, a tile's load and write-back, a grid barrier; blocks in the grid.
  double cost_round = 1.4, cost_step = 0.3, cost_load = 2.0, cost_barrier = 3.0;
  // A relaxation's fixed cost (us) beside its steps': the block's barriers, the halo's
  // loads and the labels' write-back, which a step count does not see (session 47: a
  // search of a third of the steps measured slower than the Jacobi steps it replaced).
  double cost_relax = 0.0;
  int blocks = 264;
  // The tile's inner steps: synchronous Jacobi rounds (every pixel at once, one pixel
  // of progress per round), or Gauss-Seidel line passes (--inner gs): a warp's lanes
  // each walk one line of the tile (a row, column or diagonal) in one of the 8
  // directions, carrying excess (push) or distances (relabel) along the whole line in
  // one pass; a round is 8 passes then a synchronous relabel. --cost-pass is the time
  // of one pass (a lane's chain of dependent shared-memory steps along a line).
  bool inner_gs = false;
  double cost_pass = 0.6;
  // --parallel 1: every active tile discharges in one phase per sweep (Shekhovtsov and
  // Hlavac's P-ARD) against the labels and flows of the sweep's start; tiles write
  // their own pixels, then add what they pushed into their halos. A tile's label may
  // then rest on a neighbour's stale label, so when no tile is active the labels are
  // recomputed exactly and the sweeps go on if any excess can still reach a sink.
  bool parallel = false;
  // --colours 2 (with --parallel 1): each sweep in two phases, the tiles of a checkerboard
  // one colour at a time (1: every active tile in one phase).
  int colours = 1;
  // --inner levels: the in-tile step is a pass of levels (see the header): every pixel
  // of the deepest occupied height pushes to its lower residual neighbours, then the
  // next height down, and so on, one block-synchronous step per occupied level, so that
  // excess crosses a whole tile in one pass; exact heights again (Jacobi BFS) after every
  // pass. --round-cap then caps the passes of a discharge. --cost-level: one level step.
  bool inner_levels = false;
  double cost_level = 1.0;
  // --level-relabel local: between passes, one local relabel step of the pixels left
  // with excess (exact heights only when a pass pushed nothing); exact: a BFS each time.
  bool level_local = false;
  // --relabel capped: every global relabel of the labels (a warm solve's start, the
  // confirmation of the end, --global-every, --stall-relabel) is run as v0.13c runs its
  // global relabel: a first sweep over every tile, then sweeps over the tiles next to a
  // tile that changed (a worklist), each tile relaxing from its current heights, stopped
  // after --relabel-cap sweeps; pixels not reached by then take the number of sweeps as
  // their label (a valid lower bound; see the header). --relabel exact: the old one.
  bool relabel_capped = false;
  int relabel_cap = 12;
  // --relabel-group G (with --relabel capped): a relabel sweep relaxes groups of G x G
  // tiles, each group iterated to its own fixpoint between two grid barriers (the tiles
  // of a group as the blocks of a thread-block cluster, exchanging their rims through
  // distributed shared memory at a cluster barrier, --cost-cluster us each), so a wave
  // crosses G tiles a sweep. 1: one tile a visit (the solver).
  int relabel_group = 1;
  double cost_cluster = 1.0;
  // --cut labels (with --parallel 1): the cut read from the labels of the relabel that
  // confirmed the end (exact, so kDInf marks the pixels that reach no sink), with no
  // pass of its own; --cut sweeps: a reachability pass over tiles, counted as before.
  bool cut_from_labels = false;
  // --check-scratch: every relabel tile visit's heights, relaxed down from the stored ones,
  // are checked against a relaxation from scratch (sinks and halo only) against the same
  // halo, the claim a relabel that relaxes tiles from scratch would rest on (throws if
  // they differ; session 46's bit_bfs did, bench/RESULTS.md).
  bool check_scratch = false;
  // --stall-relabel S: a global relabel whenever the count of active tiles has not set
  // a new low for S sweeps (0: never).
  int stall_relabel = 0;
  // --reverse-warm 1 (--parallel 1): a warm solve first moves the sink capacity that
  // appeared inside the last cut's source side S backward to S's excess (the solver run
  // on the reversed graph, S's pixels alone active, arcs between S and the rest walled
  // off), then solves forward as before. After a GrabCut iteration half of S's pixels
  // hold a little new sink capacity and S is full of the excess the last solve left
  // there: forward, every such sink sets the whole pool moving until a relabel stops
  // it; backward, each deficit meets excess a few pixels away.
  bool reverse_warm = false;
  // --reverse-warm 2: the phase ends without a relabel to the end, and its relabels skip
  // the tiles with no pixel of S.
  bool reverse_short = false;
  std::string dump_dir;  // --dump DIR: see run()
  // --rim-requests 1 (--relabel capped): a relabel sweep's tile whose labels moved asks
  // the next sweep to relax only the neighbours next to a rim pixel that moved (those
  // whose halo changed), not itself (it is at its fixpoint against its halo) nor the rest.
  bool rim_requests = false;
  // --sinkless-first 1 (--relabel capped): a relabel's first sweep only stores infinite
  // labels in a tile with no sink pixel in it or its halo (--cost-store us) instead of
  // loading and relaxing it.
  bool sinkless_first = false;
  double cost_store = 1.0;
  // --band B (--parallel 1): a sweep of a forward solve (not a reverse phase) discharges
  // only the tiles with an active pixel whose label is at most B above the lowest active
  // label (0: every active tile), so excess near the sink goes first and excess farther
  // out may be cut off before it moves.
  int band = 0;
  // --capped-wait 1 (with --relabel capped), as the GPU solver: a relabel stopped at its
  // cap leaves the pixels it did not reach unlabelled (their excess waits), and the cap
  // doubles only when the relabel proved too short (nothing left to push after it: then
  // a relabel to the end follows). Without it the unreached pixels take the cap as their
  // label (active) and the cap doubles after every stop.
  bool capped_wait = false;
  // --skip-settled 1: a global relabel leaves out the tiles that an earlier complete
  // relabel of the same solve found cut off from every sink (all labels infinite): the
  // pixels that reach no sink only grow in number during a solve, so they stay so.
  bool skip_settled = false;
};

struct Counts {
  long long sweeps = 0, barriers = 0, discharges = 0, rounds = 0, bfs_runs = 0, bfs_steps = 0;
  long long relabel_sweeps = 0, cut_sweeps = 0, capped = 0, label_drops = 0, gapped = 0;
  long long stalled = 0;  // discharges ended by --stall-rounds
  long long level_steps = 0, relabels = 0, truncated = 0;
  long long critical_rounds = 0;  // over the phases, the most rounds (passes) of a tile
  long long reverse_barriers = 0;  // --reverse-warm: those of the reverse phases
  double time_us = 0;
  double work_us = 0;  // the sum over tiles of what they cost (the blocks' work: batches)
  double relabel_work_us = 0;  // the part of work_us in global relabels' sweeps
  double relabel_first_work_us = 0;  // the part of that in their first sweeps (every live tile)
  double cold_work_us = 0;     // the part of work_us in cold solves
  long long settled_skips = 0;  // --skip-settled: relabel tile visits left out
  long long sinkless_skips = 0;  // --sinkless-first: first-sweep visits that only stored
  double relabel_us = 0, cut_us = 0;  // parts of time_us: global relabels, the cut's pass
  int max_rounds = 0;
  void operator+=(const Counts& o) {
    level_steps += o.level_steps;
    critical_rounds += o.critical_rounds;
    reverse_barriers += o.reverse_barriers;
    relabels += o.relabels;
    truncated += o.truncated;
    relabel_us += o.relabel_us;
    cut_us += o.cut_us;
    sweeps += o.sweeps;
    barriers += o.barriers;
    discharges += o.discharges;
    rounds += o.rounds;
    bfs_runs += o.bfs_runs;
    bfs_steps += o.bfs_steps;
    relabel_sweeps += o.relabel_sweeps;
    cut_sweeps += o.cut_sweeps;
    capped += o.capped;
    stalled += o.stalled;
    label_drops += o.label_drops;
    gapped += o.gapped;
    time_us += o.time_us;
    work_us += o.work_us;
    relabel_work_us += o.relabel_work_us;
    relabel_first_work_us += o.relabel_first_work_us;
    cold_work_us += o.cold_work_us;
    settled_skips += o.settled_skips;
    sinkless_skips += o.sinkless_skips;
    max_rounds = std::max(max_rounds, o.max_rounds);
  }
};

class RegionDischarge {
 public:
  explicit RegionDischarge(const Options& o) : o_(o) {}

  // How sparse the in-tile rounds are (a GPU round costs a thread per pixel whatever
  // its state): over every round of every discharge so far, tile rows, rows with an
  // active pixel, rows with none in themselves or the rows above and below (no pushes
  // reach them), and active pixels.
  struct Activity {
    long long rows = 0, rows_active = 0, rows_quiet = 0, pixels_active = 0;
  };
  const Activity& activity() const { return activity_; }

  // Solves `g` (warm: from the last solve's flow, `g` differing only in terminals) and
  // returns the canonical cut (1 = source side).
  std::vector<std::uint8_t> solve(const HostGridGraph& g, bool warm, Counts& c) {
    cap_ = o_.relabel_cap;  // each solve starts from the option's cap
    settled_.clear();
    if (!warm || g.height != h_ || g.width != w_) {
      start_cold(g);
    } else {
      for (std::size_t p = 0; p < g.size(); ++p) excess_[p] += std::int64_t{g.terminal[p]} - terminal_[p];
      terminal_ = g.terminal;
      if (o_.reverse_warm && o_.parallel) reverse_phase(c);
      if (o_.warm_bfs) {
        global_relabel(c);
      } else {
        std::fill(label_.begin(), label_.end(), 0);
      }
    }
    if (!warm && o_.init_bfs) global_relabel(c);
    if (o_.parallel) {
      parallel_sweeps(c);
      if (o_.cut_from_labels) {
        // parallel_sweeps ends on a whole relabel that found no active tile: its labels
        // are exact, kDInf exactly where no residual path reaches a sink.
        std::vector<std::uint8_t> cut(label_.size());
        for (std::size_t p = 0; p < cut.size(); ++p) cut[p] = label_[p] >= kDInf ? 1 : 0;
        return cut;
      }
      return canonical_cut(c);
    }
    int since_global = 0;
    for (;;) {
      bool any = false;
      for (int colour = 0; colour < 4; ++colour) {
        std::vector<int> tiles;
        for (int t = 0; t < tiles_x_ * tiles_y_; ++t) {
          if (((t % tiles_x_) & 1) + 2 * ((t / tiles_x_) & 1) == colour && tile_active(t)) tiles.push_back(t);
        }
        if (tiles.empty()) continue;
        any = true;
        std::vector<double> cost(tiles.size());
        long long deepest = 0;
        for (std::size_t i = 0; i < tiles.size(); ++i) {
          const long long before = c.rounds;
          cost[i] = discharge(tiles[i], c);
          deepest = std::max(deepest, c.rounds - before);
        }
        c.critical_rounds += deepest;
        c.time_us += phase_time(cost, c) + o_.cost_barrier;
        ++c.barriers;
        if (o_.gap) apply_gap(c);
      }
      if (!any) break;
      ++c.sweeps;
      if (o_.global_every > 0 && ++since_global == o_.global_every) {
        global_relabel(c);
        since_global = 0;
      }
    }
    return canonical_cut(c);
  }

 private:
  Options o_;
  mutable Activity activity_;  // counted by the const round()
  int h_ = 0, w_ = 0, tiles_x_ = 0, tiles_y_ = 0;
  std::vector<std::int32_t> terminal_;
  std::vector<std::int64_t> excess_;    // > 0 excess, < 0 sink capacity left
  std::vector<std::int64_t> residual_;  // 8 per pixel
  std::vector<int> label_;
  // --reverse-warm: while the reverse phase runs, the pixels that may take part (the last
  // cut's source side); empty otherwise.
  std::vector<std::uint8_t> mask_;
  int cap_ = 0;  // --relabel capped: the cap of the next global relabel
  bool last_capped_ = false;  // the last global relabel stopped at its cap
  // --skip-settled: the tiles a complete relabel of this solve found cut off (empty: none)
  std::vector<std::uint8_t> settled_;

  std::size_t pix(int y, int x) const { return static_cast<std::size_t>(y) * static_cast<std::size_t>(w_) + static_cast<std::size_t>(x); }
  bool in_grid(int y, int x) const { return y >= 0 && y < h_ && x >= 0 && x < w_; }
  int tile_of(int y, int x) const { return (y / o_.tile_h) * tiles_x_ + x / o_.tile_w; }

  void start_cold(const HostGridGraph& g) {
    h_ = g.height;
    w_ = g.width;
    tiles_x_ = (w_ + o_.tile_w - 1) / o_.tile_w;
    tiles_y_ = (h_ + o_.tile_h - 1) / o_.tile_h;
    terminal_ = g.terminal;
    excess_.assign(g.size(), 0);
    residual_.assign(g.size() * 8, 0);
    label_.assign(g.size(), 0);
    for (int y = 0; y < h_; ++y) {
      for (int x = 0; x < w_; ++x) {
        const std::size_t p = pix(y, x);
        excess_[p] = g.terminal[p];
        for (int k = 0; k < 4; ++k) {
          if (!g.has_neighbour(y, x, k)) continue;
          const std::int64_t cap = g.nlink[static_cast<std::size_t>(k)][p];
          residual_[p * 8 + static_cast<std::size_t>(k)] = cap;
          residual_[pix(y + kDy[k], x + kDx[k]) * 8 + static_cast<std::size_t>(k ^ 4)] = cap;
        }
      }
    }
  }

  // The reversed graph: excess and sink capacity swap, and each arc's residual with its
  // reverse's. The solver's steps on it move sink capacity toward excess.
  void transpose() {
    for (auto& e : excess_) e = -e;
    for (int y = 0; y < h_; ++y) {
      for (int x = 0; x < w_; ++x) {
        for (int k = 0; k < 4; ++k) {
          if (!in_grid(y + kDy[k], x + kDx[k])) continue;
          std::swap(residual_[pix(y, x) * 8 + static_cast<std::size_t>(k)],
                    residual_[pix(y + kDy[k], x + kDx[k]) * 8 + static_cast<std::size_t>(k ^ 4)]);
        }
      }
    }
  }

  // --reverse-warm: S = the pixels the last solve's exact labels put on the source side.
  // On the reversed graph with the arcs between S and the rest set to zero (restored
  // after), S's pixels alone active, the parallel solve runs to its end: then no sink
  // capacity in S can reach S's excess within S. Every step moved flow along a residual
  // arc, so the forward solve that follows starts from a valid state and ends exact.
  void reverse_phase(Counts& c) {
    mask_.assign(label_.size(), 0);
    for (std::size_t p = 0; p < label_.size(); ++p) mask_[p] = label_[p] >= kDInf ? 1 : 0;
    std::vector<std::pair<std::size_t, std::int64_t>> walls;
    for (int y = 0; y < h_; ++y) {
      for (int x = 0; x < w_; ++x) {
        const std::size_t p = pix(y, x);
        for (int k = 0; k < 8; ++k) {
          if (!in_grid(y + kDy[k], x + kDx[k]) || mask_[p] == mask_[pix(y + kDy[k], x + kDx[k])]) continue;
          const std::size_t i = p * 8 + static_cast<std::size_t>(k);
          walls.emplace_back(i, residual_[i]);
          residual_[i] = 0;
        }
      }
    }
    transpose();
    const long long barriers = c.barriers;
    global_relabel(c);
    parallel_sweeps(c);
    transpose();
    for (const auto& [i, r] : walls) residual_[i] = r;
    mask_.clear();
    cap_ = o_.relabel_cap;
    c.reverse_barriers += c.barriers - barriers;
  }

  // Whether f(p) holds for a pixel p of tile t, or with margin 1 of it and its halo
  // (stops at the first).
  template <class F>
  bool any_tile_pixel(int t, F&& f, int margin = 0) const {
    const int x0 = (t % tiles_x_) * o_.tile_w;
    const int y0 = (t / tiles_x_) * o_.tile_h;
    for (int y = std::max(0, y0 - margin); y < std::min(h_, y0 + o_.tile_h + margin); ++y) {
      for (int x = std::max(0, x0 - margin); x < std::min(w_, x0 + o_.tile_w + margin); ++x) {
        if (f(pix(y, x))) return true;
      }
    }
    return false;
  }

  // Pixel p has excess to move (in the reverse phase, only a pixel of S).
  bool active_pixel(std::size_t p) const {
    return excess_[p] > 0 && label_[p] < kDInf && (mask_.empty() || mask_[p] != 0U);
  }

  bool tile_has_mask(int t) const {
    return any_tile_pixel(t, [&](std::size_t p) { return mask_[p] != 0U; });
  }

  bool tile_active(int t) const {
    return any_tile_pixel(t, [&](std::size_t p) { return active_pixel(p); });
  }

  // The time of one phase: its tiles handed to the blocks as they free up.
  double phase_time(std::vector<double> cost, Counts& c) const {
    for (const double x : cost) c.work_us += x;
    std::sort(cost.begin(), cost.end(), std::greater<>());
    std::vector<double> block(static_cast<std::size_t>(o_.blocks), 0.0);
    for (const double x : cost) *std::min_element(block.begin(), block.end()) += x;
    return *std::max_element(block.begin(), block.end());
  }

  std::vector<int> active_tiles() const {
    std::vector<int> tiles;
    for (int t = 0; t < tiles_x_ * tiles_y_; ++t) {
      if (tile_active(t)) tiles.push_back(t);
    }
    return tiles;
  }

  // --band: the active tiles with an active pixel within the band above the lowest
  // active label.
  std::vector<int> lowest_band(const std::vector<int>& tiles) const {
    int lowest = kDInf;
    std::vector<int> tile_low(tiles.size(), kDInf);
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      any_tile_pixel(tiles[i], [&](std::size_t p) {
        if (active_pixel(p)) tile_low[i] = std::min(tile_low[i], label_[p]);
        return false;
      });
      lowest = std::min(lowest, tile_low[i]);
    }
    std::vector<int> kept;
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      if (tile_low[i] <= lowest + o_.band) kept.push_back(tiles[i]);
    }
    return kept;
  }

  void parallel_sweeps(Counts& c) {
    int since_global = 0;
    bool just_relabelled = true;  // (--capped-wait: a solve starts after a relabel)
    std::size_t fewest = SIZE_MAX;  // the fewest active tiles since the last global relabel
    int since_fewer = 0;            // sweeps since that low was set
    for (;;) {
      std::vector<int> tiles = active_tiles();
      if (o_.stall_relabel > 0 && !tiles.empty()) {
        if (tiles.size() < fewest) {
          fewest = tiles.size();
          since_fewer = 0;
        } else if (++since_fewer >= o_.stall_relabel) {
          global_relabel(c);
          tiles = active_tiles();
          fewest = tiles.size();
          since_fewer = 0;
        }
      }
      const bool banded = o_.band > 0 && mask_.empty();  // not in the reverse phase
      if (banded && !tiles.empty()) tiles = lowest_band(tiles);
      if (tiles.empty() && o_.capped_wait) {
        // As the GPU: a relabel (capped) unless one just ran, its check; when that finds
        // nothing, the end if it ran to its end, else a relabel to the end (the cap
        // doubled) and its check.
        if (!just_relabelled) {
          global_relabel(c);
          tiles = active_tiles();
        }
        while (tiles.empty()) {
          if (!last_capped_ || (!mask_.empty() && o_.reverse_short)) return;
          cap_ *= 2;
          global_relabel(c, true);
          tiles = active_tiles();
        }
        if (banded) tiles = lowest_band(tiles);
      }
      just_relabelled = false;
      if (tiles.empty()) {
        // The reverse phase need not be exact (--reverse-warm 2: it ends here).
        if (!mask_.empty() && o_.reverse_short) return;
        global_relabel(c, true);  // the confirmation of the end runs to the end
        tiles = active_tiles();
        if (tiles.empty()) return;
      }
      // --colours 2: the sweep's tiles in two phases, a checkerboard of tiles, so that no
      // two tiles sharing an edge discharge at once; a tile of the second phase starts
      // from what the first pushed into it.
      for (int colour = 0; colour < o_.colours; ++colour) {
        std::vector<int> phase_tiles;
        std::vector<int> candidates = colour == 0 ? tiles : active_tiles();
        if (colour > 0 && banded && !candidates.empty()) candidates = lowest_band(candidates);
        for (const int t : candidates) {
          if (o_.colours == 1 || ((t % tiles_x_) + (t / tiles_x_)) % 2 == colour) phase_tiles.push_back(t);
        }
        if (phase_tiles.empty()) continue;
        // --sparse-round-cap: a phase of fewer tiles than blocks waits for its slowest
        // discharge, which that cap bounds.
        const bool sparse_phase =
            o_.sparse_round_cap > 0 && phase_tiles.size() < static_cast<std::size_t>(o_.blocks);
        std::vector<Tile> loaded;
        loaded.reserve(phase_tiles.size());
        for (const int t : phase_tiles) loaded.push_back(load(t));
        std::vector<double> cost;
        cost.reserve(phase_tiles.size());
        long long deepest = 0;
        for (Tile& s : loaded) {
          const long long before = c.rounds;
          cost.push_back(discharge_loaded(s, c, sparse_phase ? o_.sparse_round_cap : o_.round_cap));
          deepest = std::max(deepest, c.rounds - before);
        }
        c.critical_rounds += deepest;
        for (const Tile& s : loaded) store_own(s, c);
        for (const Tile& s : loaded) store_halo(s);
        c.time_us += phase_time(cost, c) + o_.cost_barrier;
        ++c.barriers;
        if (o_.gap) apply_gap(c);
      }
      ++c.sweeps;
      if (o_.global_every > 0 && ++since_global == o_.global_every) {
        global_relabel(c);
        since_global = 0;
        just_relabelled = true;
      }
    }
  }

  // ---------------------------------------------------------------- one tile
  // The tile's local state: pixels of the tile and a one-pixel halo in a padded frame.
  struct Tile {
    int x0 = 0, y0 = 0, pw = 0, ph = 0, b = 0;
    std::vector<int> height;                 // padded frame
    std::vector<std::int64_t> excess;        // padded frame (halo: what it received)
    std::vector<std::int64_t> residual;      // 8 per padded cell (tile pixels only)
    std::vector<std::uint8_t> inside;        // a pixel of the tile in the grid
    std::vector<std::uint8_t> live;          // --reverse-warm's phase: may be active (empty: all)
    int at(int ly, int lx) const { return (ly + 1) * pw + lx + 1; }
  };

  int halo_height(int label, int b) const { return label >= kDInf ? kHInf : (label + 1) * b; }

  Tile load(int t) const {
    Tile s;
    s.x0 = (t % tiles_x_) * o_.tile_w;
    s.y0 = (t / tiles_x_) * o_.tile_h;
    s.pw = o_.tile_w + 2;
    s.ph = o_.tile_h + 2;
    s.b = 2 * o_.tile_w * o_.tile_h;
    const auto cells = static_cast<std::size_t>(s.pw * s.ph);
    s.height.assign(cells, kHInf);
    s.excess.assign(cells, 0);
    s.residual.assign(cells * 8, 0);
    s.inside.assign(cells, 0);
    for (int ly = -1; ly <= o_.tile_h; ++ly) {
      for (int lx = -1; lx <= o_.tile_w; ++lx) {
        const int y = s.y0 + ly;
        const int x = s.x0 + lx;
        if (!in_grid(y, x)) continue;
        const auto i = static_cast<std::size_t>(s.at(ly, lx));
        const std::size_t p = pix(y, x);
        const bool mine = ly >= 0 && ly < o_.tile_h && lx >= 0 && lx < o_.tile_w;
        if (!mine) {
          s.height[i] = halo_height(label_[p], s.b);
          continue;
        }
        s.inside[i] = 1;
        if (!mask_.empty()) {
          if (s.live.empty()) s.live.assign(cells, 0);
          s.live[i] = mask_[p];
        }
        s.excess[i] = excess_[p];
        for (int k = 0; k < 8; ++k) s.residual[i * 8 + static_cast<std::size_t>(k)] = residual_[p * 8 + static_cast<std::size_t>(k)];
      }
    }
    return s;
  }

  // Exact heights inside the tile by Jacobi steps (the halo fixed). Returns the steps.
  int relax(Tile& s) const {
    for (std::size_t i = 0; i < s.height.size(); ++i) {
      if (s.inside[i] != 0U) s.height[i] = s.excess[i] < 0 ? 0 : kHInf;
    }
    std::vector<int> next = s.height;
    int steps = 0;
    for (bool changed = true; changed; ++steps) {
      changed = false;
      for (std::size_t i = 0; i < s.height.size(); ++i) {
        if (s.inside[i] == 0U || s.height[i] == 0) continue;
        int m = s.height[i];
        for (int k = 0; k < 8; ++k) {
          if (s.residual[i * 8 + static_cast<std::size_t>(k)] == 0) continue;
          const int nb = s.height[static_cast<std::size_t>(static_cast<int>(i) + kDy[k] * s.pw + kDx[k])];
          if (nb < kHInf) m = std::min(m, nb + 1);
        }
        if (m != s.height[i]) changed = true;
        next[i] = m;
      }
      for (std::size_t i = 0; i < s.height.size(); ++i) {
        if (s.inside[i] != 0U) s.height[i] = next[i];
      }
    }
    return steps;
  }

  bool active(const Tile& s, std::size_t i) const {
    return s.inside[i] != 0U && s.excess[i] > 0 && s.height[i] < kHInf && (s.live.empty() || s.live[i] != 0U);
  }

  void count_activity(const Tile& s) const {
    std::vector<int> row(static_cast<std::size_t>(s.ph), 0);
    for (int y = 1; y + 1 < s.ph; ++y) {
      for (int x = 1; x + 1 < s.pw; ++x) {
        if (!active(s, static_cast<std::size_t>(y * s.pw + x))) continue;
        row[static_cast<std::size_t>(y)] = 1;
        ++activity_.pixels_active;
      }
    }
    for (int y = 1; y + 1 < s.ph; ++y) {
      const auto u = static_cast<std::size_t>(y);
      ++activity_.rows;
      activity_.rows_active += row[u];
      activity_.rows_quiet += (row[u - 1] | row[u] | row[u + 1]) == 0 ? 1 : 0;
    }
  }

  // One synchronous round: pushes from the heights at its start, then relabels.
  // Returns whether anything was pushed.
  bool round(Tile& s) const {
    std::vector<std::int64_t> inbox(s.height.size(), 0);
    bool pushed = false;
    count_activity(s);
    for (std::size_t i = 0; i < s.height.size(); ++i) {
      if (!active(s, i)) continue;
      for (int k = 0; k < 8 && s.excess[i] > 0; ++k) {
        std::int64_t& r = s.residual[i * 8 + static_cast<std::size_t>(k)];
        const auto j = static_cast<std::size_t>(static_cast<int>(i) + kDy[k] * s.pw + kDx[k]);
        if (r == 0 || s.height[j] >= s.height[i]) continue;
        const std::int64_t amount = std::min(r, s.excess[i]);
        r -= amount;
        s.residual[j * 8 + static_cast<std::size_t>(k ^ 4)] += amount;
        s.excess[i] -= amount;
        inbox[j] += amount;
        pushed = true;
      }
    }
    std::vector<int> relabelled = s.height;
    for (std::size_t i = 0; i < s.height.size(); ++i) {
      s.excess[i] += inbox[i];
      if (!active(s, i)) continue;
      int m = kHInf;
      for (int k = 0; k < 8; ++k) {
        if (s.residual[i * 8 + static_cast<std::size_t>(k)] == 0) continue;
        m = std::min(m, s.height[static_cast<std::size_t>(static_cast<int>(i) + kDy[k] * s.pw + kDx[k])]);
      }
      if (m >= s.height[i]) relabelled[i] = m >= kHInf ? kHInf : m + 1;
    }
    s.height = std::move(relabelled);
    return pushed;
  }

  // Discharges tile t and writes it back; returns its cost (us).
  double discharge(int t, Counts& c) {
    Tile s = load(t);
    const double cost = discharge_loaded(s, c, o_.round_cap);
    store_own(s, c);
    store_halo(s);
    return cost;
  }

  // Discharges a loaded tile in its frame, at most round_cap rounds (0: no cap); returns
  // its cost (us).
  double discharge_loaded(Tile& s, Counts& c, int round_cap) const {
    if (o_.inner_levels) return discharge_levels(s, c);
    int steps = o_.inner_gs ? relax_lines(s) : relax(s);
    int runs = 1;
    int rounds = 0;
    int idle = 0;  // rounds in a row in which no excess reached a sink or the halo
    for (;;) {
      bool any = false;
      for (std::size_t i = 0; i < s.height.size() && !any; ++i) any = active(s, i);
      if (!any) break;
      if (round_cap > 0 && rounds == round_cap) {
        ++c.capped;
        break;
      }
      if (o_.stall_rounds > 0 && idle == o_.stall_rounds) {
        ++c.stalled;
        break;
      }
      ++rounds;
      // (--stall-rounds only: what the round delivered, two scans of the tile a round.)
      const std::int64_t out_before = o_.stall_rounds > 0 ? delivered(s) : 0;
      const bool pushed = o_.inner_gs ? round_lines(s) : round(s);
      if (o_.stall_rounds > 0) idle = delivered(s) > out_before ? 0 : idle + 1;
      if (!pushed || (o_.relax_every > 0 && rounds % o_.relax_every == 0)) {
        steps += o_.inner_gs ? relax_lines(s) : relax(s);
        ++runs;
      }
    }
    ++c.discharges;
    c.rounds += rounds;
    c.bfs_runs += runs;
    c.bfs_steps += steps;
    c.max_rounds = std::max(c.max_rounds, rounds);
    if (o_.inner_gs) return o_.cost_load + o_.cost_pass * (8.0 * rounds + steps) + o_.cost_step * rounds;
    return o_.cost_load + o_.cost_round * rounds + o_.cost_step * steps + o_.cost_relax * runs;
  }

  // What the tile's excess has delivered so far: the inflow its halo holds plus the sink
  // capacity its own pixels have used (a sink's excess is negative and rises as it
  // absorbs). It grows exactly when a round moves excess into the halo or into a sink.
  static std::int64_t delivered(const Tile& s) {
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < s.height.size(); ++i) {
      if (s.inside[i] == 0U) {
        sum += s.excess[i];
      } else if (s.excess[i] < 0) {
        sum += s.excess[i];
      }
    }
    return sum;
  }

  // --inner levels: passes of levels, exact heights before each. Returns the cost (us).
  double discharge_levels(Tile& s, Counts& c) const {
    int steps = relax(s);
    int runs = 1;
    int passes = 0;
    long long levels = 0;
    for (;;) {
      bool any = false;
      for (std::size_t i = 0; i < s.height.size() && !any; ++i) any = active(s, i);
      if (!any) break;
      ++passes;
      bool pushed = false;
      levels += level_pass(s, pushed);
      // The last pass a cap allows ends the discharge without a relax: its pushes went
      // to lower neighbours only, so the heights stay valid (a residual arc u -> v has
      // h(u) <= h(v) + 1) and so do the labels the tile writes back.
      if (o_.round_cap > 0 && passes == o_.round_cap) {
        for (std::size_t i = 0; i < s.height.size(); ++i) {
          if (active(s, i) && s.height[i] > 0) {
            ++c.capped;
            break;
          }
        }
        break;
      }
      if (o_.level_local && pushed) {
        steps += relabel_step(s);  // counted as one BFS step
      } else {
        steps += relax(s);
        ++runs;
      }
    }
    ++c.discharges;
    c.rounds += passes;
    c.level_steps += levels;
    c.bfs_runs += runs;
    c.bfs_steps += steps;
    c.max_rounds = std::max(c.max_rounds, passes);
    return o_.cost_load + o_.cost_level * static_cast<double>(levels) + o_.cost_step * steps;
  }

  // One pass of levels: the occupied heights of the tile from the highest active pixel
  // down; at each, every pixel of that height with excess pushes to its lower residual
  // neighbours (in-tile: the neighbour's excess, seen at the next level down; halo: what
  // the tile sends out). One block-synchronous step per level, and the pass stops at the
  // first level at or below which no pixel (other than a sink) holds excess: the block
  // knows that from a count it keeps (__syncthreads_count). Returns the steps.
  int level_pass(Tile& s, bool& pushed) const {
    std::vector<std::pair<int, std::size_t>> by_height;  // (height, pixel), highest first
    int top = -1;
    int pending = 0;  // pixels with excess above height 0 and at most the current level
    for (std::size_t i = 0; i < s.height.size(); ++i) {
      if (s.inside[i] == 0U || s.height[i] >= kHInf) continue;
      by_height.emplace_back(s.height[i], i);
      if (active(s, i) && s.height[i] > 0) {
        top = std::max(top, s.height[i]);
        ++pending;
      }
    }
    std::sort(by_height.begin(), by_height.end(), std::greater<>());
    int steps = 0;
    std::size_t at = 0;
    while (at < by_height.size() && by_height[at].first > top) ++at;
    while (at < by_height.size() && pending > 0) {
      const int level = by_height[at].first;
      if (level == 0) break;
      ++steps;
      for (; at < by_height.size() && by_height[at].first == level; ++at) {
        const std::size_t i = by_height[at].second;
        if (s.excess[i] <= 0) continue;
        --pending;  // it empties now, or keeps what it cannot place until the next pass
        for (int k = 0; k < 8 && s.excess[i] > 0; ++k) {
          std::int64_t& r = s.residual[i * 8 + static_cast<std::size_t>(k)];
          const std::size_t j = neighbour(s, i, k);
          if (r == 0 || s.height[j] >= level) continue;
          const std::int64_t amount = std::min(r, s.excess[i]);
          r -= amount;
          s.residual[j * 8 + static_cast<std::size_t>(k ^ 4)] += amount;
          s.excess[i] -= amount;
          pushed = true;
          const bool was_idle = s.excess[j] <= 0;
          s.excess[j] += amount;
          if (s.inside[j] != 0U && was_idle && s.excess[j] > 0 && s.height[j] > 0) ++pending;
        }
      }
    }
    return steps;
  }

  // One synchronous relabel step: every pixel left with excess and no lower residual
  // neighbour rises to one above its lowest residual neighbour. Ends each round of line
  // passes, and with --level-relabel local follows each level pass instead of exact
  // heights. Returns 1 (the step).
  int relabel_step(Tile& s) const {
    std::vector<int> relabelled = s.height;
    for (std::size_t i = 0; i < s.height.size(); ++i) {
      if (!active(s, i)) continue;
      int m = kHInf;
      for (int k = 0; k < 8; ++k) {
        if (s.residual[i * 8 + static_cast<std::size_t>(k)] == 0) continue;
        m = std::min(m, s.height[neighbour(s, i, k)]);
      }
      if (m >= s.height[i]) relabelled[i] = m >= kHInf ? kHInf : m + 1;
    }
    s.height = std::move(relabelled);
    return 1;
  }

  // The tile's pixels in the order of a line pass in direction k: a pixel comes before
  // its neighbour in direction k (forward) or after it (backward).
  std::vector<std::size_t> line_order(const Tile& s, int k, bool forward) const {
    const bool y_up = (kDy[k] >= 0) == forward;
    const bool x_up = (kDx[k] >= 0) == forward;
    std::vector<std::size_t> order;
    order.reserve(static_cast<std::size_t>(o_.tile_w * o_.tile_h));
    for (int a = 0; a < o_.tile_h; ++a) {
      const int ly = y_up ? a : o_.tile_h - 1 - a;
      for (int b = 0; b < o_.tile_w; ++b) {
        const int lx = x_up ? b : o_.tile_w - 1 - b;
        const auto i = static_cast<std::size_t>(s.at(ly, lx));
        if (s.inside[i] != 0U) order.push_back(i);
      }
    }
    return order;
  }

  std::size_t neighbour(const Tile& s, std::size_t i, int k) const {
    return static_cast<std::size_t>(static_cast<int>(i) + kDy[k] * s.pw + kDx[k]);
  }

  // Exact heights by line passes: each pass takes, along direction k, the distance of
  // the neighbour that the pass has already updated. Returns the passes (8 per sweep,
  // until a sweep changes nothing).
  int relax_lines(Tile& s) const {
    for (std::size_t i = 0; i < s.height.size(); ++i) {
      if (s.inside[i] != 0U) s.height[i] = s.excess[i] < 0 ? 0 : kHInf;
    }
    int passes = 0;
    for (bool changed = true; changed;) {
      changed = false;
      for (int k = 0; k < 8; ++k) {
        ++passes;
        for (const std::size_t i : line_order(s, k, false)) {
          const std::size_t j = neighbour(s, i, k);
          if (s.residual[i * 8 + static_cast<std::size_t>(k)] == 0 || s.height[j] >= kHInf) continue;
          if (s.height[j] + 1 < s.height[i]) {
            s.height[i] = s.height[j] + 1;
            changed = true;
          }
        }
      }
    }
    return passes;
  }

  // One round of line passes: in each of the 8 directions, every pixel in order pushes
  // its excess (including what the pass brought it) to its lower neighbour that way;
  // then the pixels with excess and no lower residual neighbour relabel.
  bool round_lines(Tile& s) const {
    bool pushed = false;
    for (int k = 0; k < 8; ++k) {
      for (const std::size_t i : line_order(s, k, true)) {
        if (!active(s, i)) continue;
        std::int64_t& r = s.residual[i * 8 + static_cast<std::size_t>(k)];
        const std::size_t j = neighbour(s, i, k);
        if (r == 0 || s.height[j] >= s.height[i]) continue;
        const std::int64_t amount = std::min(r, s.excess[i]);
        r -= amount;
        s.residual[j * 8 + static_cast<std::size_t>(k ^ 4)] += amount;
        s.excess[i] -= amount;
        s.excess[j] += amount;
        pushed = true;
      }
    }
    relabel_step(s);
    return pushed;
  }

  // Writes the tile's own pixels back (excess, labels, residuals).
  void store_own(const Tile& s, Counts& c) {
    for (int ly = 0; ly < o_.tile_h; ++ly) {
      for (int lx = 0; lx < o_.tile_w; ++lx) {
        const int y = s.y0 + ly;
        const int x = s.x0 + lx;
        if (!in_grid(y, x)) continue;
        const auto i = static_cast<std::size_t>(s.at(ly, lx));
        const std::size_t p = pix(y, x);
        excess_[p] = s.excess[i];
        const int label = s.height[i] >= kHInf ? kDInf : s.height[i] / s.b;
        if (label < label_[p]) ++c.label_drops;
        label_[p] = label;
        for (int k = 0; k < 8; ++k) residual_[p * 8 + static_cast<std::size_t>(k)] = s.residual[i * 8 + static_cast<std::size_t>(k)];
      }
    }
  }

  // Adds what the tile pushed into its halo: the excess, and the reverse residual of
  // each arc it pushed along (which lives at the halo pixel). Only additions, so the
  // halos of tiles discharged side by side (--parallel) can be added in any order
  // after every tile has written its own pixels.
  void store_halo(const Tile& s) {
    for (int ly = -1; ly <= o_.tile_h; ++ly) {
      for (int lx = -1; lx <= o_.tile_w; ++lx) {
        const int y = s.y0 + ly;
        const int x = s.x0 + lx;
        const auto i = static_cast<std::size_t>(s.at(ly, lx));
        if (!in_grid(y, x) || s.inside[i] != 0U) continue;
        const std::size_t q = pix(y, x);
        excess_[q] += s.excess[i];
        for (int k = 0; k < 8; ++k) residual_[q * 8 + static_cast<std::size_t>(k)] += s.residual[i * 8 + static_cast<std::size_t>(k)];
      }
    }
  }

  // The gap heuristic on region labels: along a residual path a label falls by at most
  // one per arc, so where no pixel holds label k, no pixel above k reaches a sink. The
  // GPU would count labels as tiles write them back and apply the gap at the next load.
  void apply_gap(Counts& c) {
    std::vector<std::uint8_t> present;
    for (const int d : label_) {
      if (d >= kDInf) continue;
      if (static_cast<std::size_t>(d) >= present.size()) present.resize(static_cast<std::size_t>(d) + 1, 0);
      present[static_cast<std::size_t>(d)] = 1;
    }
    const auto gap = static_cast<int>(std::find(present.begin(), present.end(), 0) - present.begin());
    if (gap == static_cast<int>(present.size())) return;
    for (int& d : label_) {
      if (d > gap && d < kDInf) {
        d = kDInf;
        ++c.gapped;
      }
    }
  }

  // --sinkless-first: whether tile t or its halo holds a sink pixel (excess < 0).
  bool sink_near(int t) const {
    return any_tile_pixel(t, [&](std::size_t p) { return excess_[p] < 0; }, 1);
  }

  // --skip-settled: after a complete relabel, the tiles whose pixels all reach no sink.
  void mark_settled() {
    settled_.assign(static_cast<std::size_t>(tiles_x_ * tiles_y_), 0);
    for (int t = 0; t < tiles_x_ * tiles_y_; ++t) {
      const bool reaches = any_tile_pixel(t, [&](std::size_t p) { return label_[p] < kDInf; });
      settled_[static_cast<std::size_t>(t)] = reaches ? 0 : 1;
    }
  }

  // ------------------------------------------------------------ tile-level passes
  // A global relabel of the region labels, exact or capped (--relabel).
  void global_relabel(Counts& c, bool whole = false) {
    const double start = c.time_us;
    ++c.relabels;
    if (o_.relabel_capped) {
      // A relabel stopped at its cap resets the labels it did not reach to the cap; the
      // cap doubles after each such stop (v0.13c's grow_cap), so that excess which
      // reaches no sink cannot climb, be reset and climb again for ever.
      last_capped_ = capped_labels(c, whole ? 0 : cap_);
      if (last_capped_) {
        if (!o_.capped_wait) cap_ *= 2;
      } else if (o_.skip_settled) {
        mark_settled();
      }
    } else {
      exact_labels(c);
    }
    c.relabel_us += c.time_us - start;
  }

  // Heights inside the tile relaxed from their current values (upper bounds of the
  // exact ones: the halo's only fell since they were computed) with the halo fixed, by
  // Jacobi steps over the pixels whose neighbour moved (v0.13c's frontier). Returns the
  // steps, and in `changed` whether a height moved.
  int relax_from(Tile& s, bool& changed) const {
    std::vector<std::size_t> frontier;
    for (std::size_t i = 0; i < s.height.size(); ++i) {
      if (s.inside[i] != 0U && s.height[i] != 0) frontier.push_back(i);
    }
    std::vector<int> stamp(s.height.size(), 0);
    std::vector<std::pair<std::size_t, int>> moved;
    int steps = 0;
    changed = false;
    for (;;) {
      ++steps;
      moved.clear();
      for (const std::size_t i : frontier) {
        int m = s.height[i];
        for (int k = 0; k < 8; ++k) {
          if (s.residual[i * 8 + static_cast<std::size_t>(k)] == 0) continue;
          const int nb = s.height[neighbour(s, i, k)];
          if (nb < kHInf) m = std::min(m, nb + 1);
        }
        if (m < s.height[i]) moved.emplace_back(i, m);
      }
      for (const auto& [i, m] : moved) s.height[i] = m;
      if (moved.empty()) break;
      changed = true;
      frontier.clear();
      for (const auto& [i, m] : moved) {
        for (int k = 0; k < 8; ++k) {
          const std::size_t j = neighbour(s, i, k);
          // j depends on i where j's arc k ^ 4 (towards i) is residual.
          if (s.inside[j] == 0U || s.height[j] == 0 || stamp[j] == steps) continue;
          if (s.residual[j * 8 + static_cast<std::size_t>(k ^ 4)] == 0) continue;
          stamp[j] = steps;
          frontier.push_back(j);
        }
      }
    }
    return steps;
  }

  // --check-scratch: s (a relabel's tile, relaxed down from its stored heights) against
  // the same tile relaxed from scratch.
  void check_against_scratch(const Tile& s) const {
    if (!o_.check_scratch) return;
    Tile fresh = s;
    relax(fresh);
    for (std::size_t i = 0; i < s.height.size(); ++i) {
      if (s.inside[i] != 0U && s.height[i] != fresh.height[i]) {
        throw std::logic_error("--check-scratch: a relabel tile's heights differ from a relaxation from scratch");
      }
    }
  }

  // A relabel stopped at its cap after `sweeps` sweeps: the labels it did not reach take
  // the number of sweeps (see capped_labels).
  void stop_at_cap(Counts& c, int sweeps) {
    ++c.truncated;
    if (o_.capped_wait) return;
    for (int& d : label_) {
      if (d >= kDInf) d = sweeps;
    }
  }

  // The tile's interior heights from the relabel's array (their values of the sweep before).
  Tile& with_heights(Tile& s, const std::vector<int>& height) const {
    for (int ly = 0; ly < o_.tile_h; ++ly) {
      for (int lx = 0; lx < o_.tile_w; ++lx) {
        const auto i = static_cast<std::size_t>(s.at(ly, lx));
        if (s.inside[i] != 0U) s.height[i] = height[pix(s.y0 + ly, s.x0 + lx)];
      }
    }
    return s;
  }

  // Block b of a blocks_x x blocks_y grid (tiles or groups) and its 8 neighbours go on the
  // next sweep's list.
  static void request_block_and_neighbours(std::vector<std::uint8_t>& request, int b, int blocks_x, int blocks_y) {
    for (int dy = -1; dy <= 1; ++dy) {
      for (int dx = -1; dx <= 1; ++dx) {
        const int nx = b % blocks_x + dx;
        const int ny = b / blocks_x + dy;
        if (nx >= 0 && ny >= 0 && nx < blocks_x && ny < blocks_y) request[static_cast<std::size_t>(ny * blocks_x + nx)] = 1;
      }
    }
  }

  // A relabel sweep ends: its labels become current, it costs its slowest block and a
  // grid barrier, and the requested blocks make the next sweep's list.
  void end_relabel_sweep(Counts& c, const std::vector<double>& cost, std::vector<int>& next,
                         const std::vector<std::uint8_t>& request, std::vector<int>& list) {
    label_ = std::move(next);
    ++c.relabel_sweeps;
    ++c.barriers;
    const double work_before = c.work_us;
    c.time_us += phase_time(cost, c) + o_.cost_barrier;
    c.relabel_work_us += c.work_us - work_before;
    list.clear();
    for (std::size_t i = 0; i < request.size(); ++i) {
      if (request[i] != 0U) list.push_back(static_cast<int>(i));
    }
  }

  // capped_labels with --relabel-group G > 1: the list holds groups of G x G tiles. A
  // group's tiles read the labels of the sweep before outside the group and their
  // group's latest inside it (label_ is written in place while the group iterates and
  // restored after it, so later groups of the sweep see only the sweep before); a group
  // iterates until no label inside it moved. Its cost: one load, then per iteration its
  // slowest tile's steps and a cluster barrier.
  bool capped_labels_grouped(Counts& c, int cap, std::vector<int>& height) {
    const int g = o_.relabel_group;
    const int groups_x = (tiles_x_ + g - 1) / g;
    const int groups_y = (tiles_y_ + g - 1) / g;
    const int b = 2 * o_.tile_w * o_.tile_h;
    std::vector<int> list(static_cast<std::size_t>(groups_x * groups_y));
    for (std::size_t i = 0; i < list.size(); ++i) list[i] = static_cast<int>(i);
    std::vector<int> saved;
    int sweeps = 0;
    while (!list.empty()) {
      if (cap > 0 && sweeps == cap) {
        stop_at_cap(c, sweeps);
        return true;
      }
      std::vector<int> next = label_;
      std::vector<std::uint8_t> request(static_cast<std::size_t>(groups_x * groups_y), 0);
      std::vector<double> cost;
      for (const int grp : list) {
        std::vector<int> members;
        for (int ty = (grp / groups_x) * g; ty < std::min(tiles_y_, (grp / groups_x + 1) * g); ++ty) {
          for (int tx = (grp % groups_x) * g; tx < std::min(tiles_x_, (grp % groups_x + 1) * g); ++tx) {
            members.push_back(ty * tiles_x_ + tx);
          }
        }
        std::vector<std::size_t> pixels;
        for (const int t : members) {
          const int x0 = (t % tiles_x_) * o_.tile_w;
          const int y0 = (t / tiles_x_) * o_.tile_h;
          for (int y = y0; y < std::min(h_, y0 + o_.tile_h); ++y) {
            for (int x = x0; x < std::min(w_, x0 + o_.tile_w); ++x) pixels.push_back(pix(y, x));
          }
        }
        saved.resize(pixels.size());
        for (std::size_t i = 0; i < pixels.size(); ++i) saved[i] = label_[pixels[i]];
        double group_cost = o_.cost_load;
        for (bool first_iteration = true;; first_iteration = false) {
          bool label_moved = false;
          double slowest = 0;
          for (std::size_t m = 0; m < members.size(); ++m) {
            Tile s = load(members[m]);
            bool changed = false;
            int steps = 0;
            if (sweeps == 0 && first_iteration) {
              steps = relax(s);
              changed = true;
            } else {
              steps = relax_from(with_heights(s, height), changed);
              check_against_scratch(s);
            }
            slowest = std::max(slowest, o_.cost_relax + o_.cost_step * steps);
            if (!changed) continue;
            for (int ly = 0; ly < o_.tile_h; ++ly) {
              for (int lx = 0; lx < o_.tile_w; ++lx) {
                const auto i = static_cast<std::size_t>(s.at(ly, lx));
                if (s.inside[i] == 0U) continue;
                const std::size_t p = pix(s.y0 + ly, s.x0 + lx);
                height[p] = s.height[i];
                const int d = s.height[i] >= kHInf ? kDInf : s.height[i] / b;
                if (d != label_[p]) label_moved = true;
                label_[p] = d;  // seen by the group's other tiles in its next iteration
                next[p] = d;
              }
            }
          }
          group_cost += slowest + o_.cost_cluster;
          if (!label_moved) break;
        }
        bool moved = false;
        for (std::size_t i = 0; i < pixels.size(); ++i) {
          if (label_[pixels[i]] != saved[i]) moved = true;
          label_[pixels[i]] = saved[i];
        }
        cost.push_back(group_cost);
        if (!moved) continue;
        request_block_and_neighbours(request, grp, groups_x, groups_y);
      }
      end_relabel_sweep(c, cost, next, request, list);
      ++sweeps;
    }
    return false;
  }

  // --relabel capped: the region labels by v0.13c's global relabel. The first sweep
  // relaxes every tile from its own sinks; each later sweep relaxes, from their current
  // heights, the tiles next to (or equal to) a tile whose heights moved in the sweep
  // before. After sweep j every label below j is exact (a path crossing d < j tile
  // boundaries is found by sweep d + 1) and every finite label is below j; a pixel not
  // reached needs at least j crossings. Stopped at the cap after j sweeps, the pixels not
  // reached take label j: valid, since a boundary arc p -> q with p unreached and q at
  // label d gives j <= d + 1, and q unreached gives j <= j + 1.
  bool capped_labels(Counts& c, int cap) {
    const int tiles = tiles_x_ * tiles_y_;
    std::vector<int> height(label_.size(), kHInf);  // the relabel's heights, D * B + steps
    const int b = 2 * o_.tile_w * o_.tile_h;
    for (std::size_t p = 0; p < label_.size(); ++p) {
      if (excess_[p] < 0) height[p] = 0;
    }
    std::fill(label_.begin(), label_.end(), kDInf);
    for (std::size_t p = 0; p < label_.size(); ++p) {
      if (excess_[p] < 0) label_[p] = 0;
    }
    if (o_.relabel_group > 1) return capped_labels_grouped(c, cap, height);
    std::vector<int> list(static_cast<std::size_t>(tiles));
    for (int t = 0; t < tiles; ++t) list[static_cast<std::size_t>(t)] = t;
    int sweeps = 0;
    while (!list.empty()) {
      if (cap > 0 && sweeps == cap) {
        stop_at_cap(c, sweeps);
        return true;
      }
      std::vector<int> next = label_;
      std::vector<std::uint8_t> request(static_cast<std::size_t>(tiles), 0);
      std::vector<double> cost;
      for (const int t : list) {
        // --reverse-warm 2, as the GPU: a tile with no pixel of S takes no part in the
        // reverse phase's relabels (nothing in it can move).
        if (!mask_.empty() && o_.reverse_short && !tile_has_mask(t)) continue;
        if (!settled_.empty() && mask_.empty() && settled_[static_cast<std::size_t>(t)] != 0U) {
          ++c.settled_skips;
          continue;
        }
        if (sweeps == 0 && o_.sinkless_first && !sink_near(t)) {
          // --sinkless-first: no sink in the tile or its halo, so every label stays
          // infinite; the visit only stores that (no load).
          cost.push_back(o_.cost_store);
          c.relabel_first_work_us += cost.back();
          ++c.sinkless_skips;
          continue;
        }
        Tile s = load(t);  // halo heights (D + 1) * B from the labels of the sweep before
        bool changed = false;
        int steps = 0;
        if (sweeps == 0) {
          steps = relax(s);
          changed = true;
        } else {
          steps = relax_from(with_heights(s, height), changed);
          check_against_scratch(s);
        }
        cost.push_back(o_.cost_load + o_.cost_relax + o_.cost_step * steps);
        if (sweeps == 0) c.relabel_first_work_us += cost.back();
        if (!changed) continue;
        bool moved = false;
        unsigned sides = 0;  // --rim-requests: bit (dy + 1) * 3 + dx + 1 for each neighbour that sees a moved label
        for (int ly = 0; ly < o_.tile_h; ++ly) {
          for (int lx = 0; lx < o_.tile_w; ++lx) {
            const auto i = static_cast<std::size_t>(s.at(ly, lx));
            if (s.inside[i] == 0U) continue;
            const std::size_t p = pix(s.y0 + ly, s.x0 + lx);
            height[p] = s.height[i];
            next[p] = s.height[i] >= kHInf ? kDInf : s.height[i] / b;
            if (next[p] == label_[p]) continue;
            moved = true;
            const int ys = ly == 0 ? -1 : (ly == o_.tile_h - 1 ? 1 : 0);
            const int xs = lx == 0 ? -1 : (lx == o_.tile_w - 1 ? 1 : 0);
            for (int dy = std::min(ys, 0); dy <= std::max(ys, 0); ++dy) {
              for (int dx = std::min(xs, 0); dx <= std::max(xs, 0); ++dx) {
                if (dy != 0 || dx != 0) sides |= 1U << ((dy + 1) * 3 + dx + 1);
              }
            }
          }
        }
        // Only a label that moved changes what the neighbours see in their halo.
        if (!moved) continue;
        if (o_.rim_requests) {
          for (int k = 0; k < 9; ++k) {
            const int nx = t % tiles_x_ + k % 3 - 1;
            const int ny = t / tiles_x_ + k / 3 - 1;
            if ((sides >> k & 1U) != 0U && nx >= 0 && ny >= 0 && nx < tiles_x_ && ny < tiles_y_) {
              request[static_cast<std::size_t>(ny * tiles_x_ + nx)] = 1;
            }
          }
          continue;
        }
        request_block_and_neighbours(request, t, tiles_x_, tiles_y_);
      }
      end_relabel_sweep(c, cost, next, request, list);
      ++sweeps;
    }
    return false;
  }

  // Exact region labels: tile-level Jacobi sweeps, each tile relaxing inside from the
  // halo labels of the previous sweep, until none changes. One barrier a sweep.
  void exact_labels(Counts& c) {
    std::fill(label_.begin(), label_.end(), kDInf);
    for (std::size_t p = 0; p < label_.size(); ++p) {
      if (excess_[p] < 0) label_[p] = 0;
    }
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<int> next = label_;
      std::vector<double> cost;
      for (int t = 0; t < tiles_x_ * tiles_y_; ++t) {
        Tile s = load(t);
        const int steps = relax(s);
        cost.push_back(o_.cost_load + o_.cost_relax + o_.cost_step * steps);
        for (int ly = 0; ly < o_.tile_h; ++ly) {
          for (int lx = 0; lx < o_.tile_w; ++lx) {
            const auto i = static_cast<std::size_t>(s.at(ly, lx));
            if (s.inside[i] == 0U) continue;
            const std::size_t p = pix(s.y0 + ly, s.x0 + lx);
            next[p] = s.height[i] >= kHInf ? kDInf : s.height[i] / s.b;
            if (next[p] != label_[p]) changed = true;
          }
        }
      }
      label_ = std::move(next);
      ++c.relabel_sweeps;
      ++c.barriers;
      c.time_us += phase_time(cost, c) + o_.cost_barrier;
    }
  }

  // The canonical cut, computed on the host by one reverse BFS from the sinks; the GPU's
  // tile-level pass is counted: the sweeps a Jacobi reachability over tiles needs.
  std::vector<std::uint8_t> canonical_cut(Counts& c) {
    const std::size_t n = excess_.size();
    std::vector<int> hop(n, kDInf);  // tile boundaries crossed on the way to a sink
    std::deque<std::size_t> queue;
    for (std::size_t p = 0; p < n; ++p) {
      if (excess_[p] < 0) {
        hop[p] = 0;
        queue.push_back(p);
      }
    }
    // 0-1 BFS: an arc inside a tile costs 0 sweeps, one between tiles 1.
    while (!queue.empty()) {
      const std::size_t q = queue.front();
      queue.pop_front();
      const int qy = static_cast<int>(q / static_cast<std::size_t>(w_));
      const int qx = static_cast<int>(q % static_cast<std::size_t>(w_));
      for (int k = 0; k < 8; ++k) {
        const int y = qy + kDy[k];
        const int x = qx + kDx[k];
        if (!in_grid(y, x)) continue;
        const std::size_t p = pix(y, x);
        if (residual_[p * 8 + static_cast<std::size_t>(k ^ 4)] == 0) continue;  // arc p -> q
        const int cross = tile_of(y, x) != tile_of(qy, qx) ? 1 : 0;
        if (hop[q] + cross >= hop[p]) continue;
        hop[p] = hop[q] + cross;
        if (cross != 0) queue.push_back(p);
        else queue.push_front(p);
      }
    }
    std::vector<std::uint8_t> cut(n);
    int deepest = 0;
    for (std::size_t p = 0; p < n; ++p) {
      cut[p] = hop[p] == kDInf ? 1 : 0;
      if (hop[p] < kDInf) deepest = std::max(deepest, hop[p]);
    }
    // Sweeps: one per tile boundary on the longest chain, and one that changes nothing.
    c.cut_sweeps += deepest + 2;
    c.barriers += deepest + 2;
    const double per_sweep = o_.cost_load + o_.cost_step * 2.0 * (o_.tile_w + o_.tile_h);
    c.cut_us += (deepest + 2) * (per_sweep * std::ceil(tiles_x_ * tiles_y_ / static_cast<double>(o_.blocks)) + o_.cost_barrier);
    c.time_us += (deepest + 2) * (per_sweep * std::ceil(tiles_x_ * tiles_y_ / static_cast<double>(o_.blocks)) + o_.cost_barrier);
    return cut;
  }
};

// ------------------------------------------------------------------ inputs
struct Sequence {
  std::string name;
  std::vector<HostGridGraph> graphs;
};

std::optional<Sequence> from_image(const grabcut::testing::ListedImage& item) {
  const std::vector<std::uint8_t> planar = item.image.planar();
  try {
    const auto it = grabcut::testing::grabcut_iterations(planar.data(), item.image.height, item.image.width, item.x0,
                                                         item.y0, item.x1, item.y1);
    Sequence s;
    s.name = item.name;
    for (std::size_t i = 0; i < it.terminals.size(); ++i) s.graphs.push_back(it.graph(i));
    return s;
  } catch (const std::invalid_argument& e) {
    std::printf("%-14s skipped: %s\n", item.name.c_str(), e.what());
    return std::nullopt;
  }
}

bool parse_option(const std::string& a, const char* value, Options& o) {
  const std::string v = value;
  if (a == "--tile") {
    const std::size_t x = v.find('x');
    if (x == std::string::npos) throw std::invalid_argument("--tile: expected WxH");
    o.tile_w = std::stoi(v.substr(0, x));
    o.tile_h = std::stoi(v.substr(x + 1));
    if (o.tile_w < 2 || o.tile_h < 2) throw std::invalid_argument("--tile: sides of at least 2");
  } else if (a == "--relax-every") {
    o.relax_every = std::stoi(v);
  } else if (a == "--stall-rounds") {
    o.stall_rounds = std::stoi(v);
  } else if (a == "--sparse-round-cap") {
    o.sparse_round_cap = std::stoi(v);
  } else if (a == "--round-cap") {
    o.round_cap = std::stoi(v);
  } else if (a == "--init-labels") {
    o.init_bfs = v == "bfs";
  } else if (a == "--warm-labels") {
    o.warm_bfs = v == "bfs";
  } else if (a == "--gap") {
    o.gap = v != "0";
  } else if (a == "--global-every") {
    o.global_every = std::stoi(v);
  } else if (a == "--cost-round") {
    o.cost_round = std::stod(v);
  } else if (a == "--cost-step") {
    o.cost_step = std::stod(v);
  } else if (a == "--cost-relax") {
    o.cost_relax = std::stod(v);
  } else if (a == "--cost-load") {
    o.cost_load = std::stod(v);
  } else if (a == "--cost-barrier") {
    o.cost_barrier = std::stod(v);
  } else if (a == "--inner") {
    if (v != "gs" && v != "jacobi" && v != "levels") throw std::invalid_argument("--inner: jacobi, gs or levels");
    o.inner_gs = v == "gs";
    o.inner_levels = v == "levels";
  } else if (a == "--cost-pass") {
    o.cost_pass = std::stod(v);
  } else if (a == "--parallel") {
    o.parallel = v != "0";
  } else if (a == "--colours") {
    o.colours = std::stoi(v);
    if (o.colours != 1 && o.colours != 2) throw std::invalid_argument("--colours: 1 or 2");
  } else if (a == "--level-relabel") {
    if (v != "exact" && v != "local") throw std::invalid_argument("--level-relabel: exact or local");
    o.level_local = v == "local";
  } else if (a == "--cost-level") {
    o.cost_level = std::stod(v);
  } else if (a == "--relabel") {
    if (v != "exact" && v != "capped") throw std::invalid_argument("--relabel: exact or capped");
    o.relabel_capped = v == "capped";
  } else if (a == "--relabel-cap") {
    o.relabel_cap = std::stoi(v);
  } else if (a == "--relabel-group") {
    o.relabel_group = std::stoi(v);
    if (o.relabel_group < 1) throw std::invalid_argument("--relabel-group: >= 1");
  } else if (a == "--cost-cluster") {
    o.cost_cluster = std::stod(v);
  } else if (a == "--check-scratch") {
    o.check_scratch = std::stoi(v) != 0;
  } else if (a == "--cut") {
    if (v != "sweeps" && v != "labels") throw std::invalid_argument("--cut: sweeps or labels");
    o.cut_from_labels = v == "labels";
  } else if (a == "--stall-relabel") {
    o.stall_relabel = std::stoi(v);
  } else if (a == "--reverse-warm") {
    o.reverse_warm = std::stoi(v) != 0;
    o.reverse_short = std::stoi(v) == 2;
  } else if (a == "--skip-settled") {
    o.skip_settled = std::stoi(v) != 0;
  } else if (a == "--capped-wait") {
    o.capped_wait = std::stoi(v) != 0;
  } else if (a == "--dump") {
    o.dump_dir = v;
  } else if (a == "--sinkless-first") {
    o.sinkless_first = std::stoi(v) != 0;
  } else if (a == "--cost-store") {
    o.cost_store = std::stod(v);
  } else if (a == "--rim-requests") {
    o.rim_requests = std::stoi(v) != 0;
  } else if (a == "--band") {
    o.band = std::stoi(v);
  } else if (a == "--blocks") {
    o.blocks = std::stoi(v);
  } else {
    return false;
  }
  return true;
}

int run(int argc, char** argv) {
  Options o;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) == 0) {
      if (i + 1 >= argc || !parse_option(a, argv[i + 1], o)) throw std::invalid_argument("bad option " + a);
      ++i;
    } else {
      pos.push_back(a);
    }
  }
  if (pos.empty()) throw std::invalid_argument("usage: model_region_discharge synthetic [SIDE [SEED]] | list FILE [COUNT] | graphs FILE... [options]");
  // --dump DIR (list): each image's first graph (GrabCut's cold solve) written to
  // DIR/NAME.tgcg for the GPU benchmarks (bench_maxflow_cuda batch), and its later
  // iterations' graphs (the same n-links, new terminals: the warm solves) to
  // DIR/iK/NAME.tgcg (bench_maxflow_cuda sequence); nothing solved.
  if (!o.dump_dir.empty()) {
    if (pos[0] != "list" || pos.size() < 2) throw std::invalid_argument("--dump: with list FILE only");
    int written = 0;
    for (const auto& item : grabcut::testing::read_image_list(pos[1])) {
      const std::optional<Sequence> seq = from_image(item);
      if (!seq) continue;
      const std::string stem = item.name.substr(0, item.name.find_last_of('.'));
      grabcut::testing::write_graph_file(o.dump_dir + "/" + stem + ".tgcg", seq->graphs.front());
      for (std::size_t k = 1; k < seq->graphs.size(); ++k) {
        const std::string sub = o.dump_dir + "/i" + std::to_string(k);
        std::filesystem::create_directories(sub);
        grabcut::testing::write_graph_file(sub + "/" + stem + ".tgcg", seq->graphs[k]);
      }
      ++written;
    }
    std::printf("%d graphs written to %s\n", written, o.dump_dir.c_str());
    return 0;
  }
  std::vector<grabcut::testing::ListedImage> items;
  std::size_t count = 1;
  if (pos[0] == "list") {
    if (pos.size() < 2) throw std::invalid_argument("list: expected FILE");
    items = grabcut::testing::read_image_list(pos[1]);
    count = pos.size() > 2 ? std::min<std::size_t>(items.size(), std::stoul(pos[2])) : items.size();
  } else if (pos[0] == "graphs") {
    count = pos.size() - 1;
  } else if (pos[0] != "synthetic") {
    throw std::invalid_argument("unknown mode " + pos[0]);
  }
  std::printf("region discharge model: tiles %dx%d, round cap %d, relax every %d, labels init %s warm %s, global relabel every %d sweeps; "
              "us per round %.2f, BFS step %.2f, relaxation %.2f, load %.2f, barrier %.2f, %d blocks\n",
              o.tile_w, o.tile_h, o.round_cap, o.relax_every, o.init_bfs ? "bfs" : "zero", o.warm_bfs ? "bfs" : "zero", o.global_every,
              o.cost_round, o.cost_step, o.cost_relax, o.cost_load, o.cost_barrier, o.blocks);
  if (o.inner_levels || o.relabel_capped || o.stall_relabel > 0 || o.cut_from_labels) {
    std::printf("inner %s (us per level step %.2f, level relabel %s), parallel %d, global relabel %s (cap %d sweeps), "
                "relabel on a stall of %d sweeps, cut from %s, reverse warm phase %d\n",
                o.inner_levels ? "levels" : (o.inner_gs ? "gs" : "jacobi"), o.cost_level, o.level_local ? "local" : "exact",
                o.parallel ? 1 : 0, o.relabel_capped ? "capped" : "exact", o.relabel_cap, o.stall_relabel,
                o.cut_from_labels ? "labels" : "sweeps", o.reverse_short ? 2 : (o.reverse_warm ? 1 : 0));
  }
  std::printf("%-14s %-5s | %6s %8s %7s %7s %10s %9s %8s %8s %6s %6s | %8s\n", "graph", "solve", "sweeps", "barriers",
              "relabel", "cutswp", "discharges", "rounds", "maxround", "bfsrun", "capped", "drops", "model ms");
  std::vector<double> work_ms, total_ms, cold_ms, cold_barriers, warm_ratio;
  Counts sum;
  int failures = 0;
  for (std::size_t img = 0; img < count; ++img) {
    std::optional<Sequence> seq;
    if (pos[0] == "list") {
      seq = from_image(items[img]);
      if (!seq) continue;
    } else if (pos[0] == "graphs") {
      const std::string& path = pos[img + 1];
      seq = Sequence{path.substr(path.find_last_of('/') + 1), {grabcut::testing::read_graph_file(path)}};
    } else {
      const int side = pos.size() > 1 ? std::stoi(pos[1]) : 1024;
      const auto seed = pos.size() > 2 ? static_cast<std::uint64_t>(std::stoull(pos[2])) : 34U;
      seq = Sequence{"synthetic", {}};
      HostGridGraph g = grabcut::testing::grabcut_graph(side, side, seed);
      seq->graphs.push_back(g);
      // A warm solve: the same n-links, terminals moved a little (as between iterations).
      for (std::size_t p = 0; p < g.size(); p += 7) g.terminal[p] = -g.terminal[p] / 2;
      seq->graphs.push_back(g);
    }
    RegionDischarge model(o);
    grabcut::GridMaxflowSolver reference;
    double total = 0, warm = 0, work = 0;
    for (std::size_t i = 0; i < seq->graphs.size(); ++i) {
      const HostGridGraph& g = seq->graphs[i];
      std::vector<std::uint8_t> expected(g.size());
      reference.solve(g.view(), expected.data());
      Counts c;
      const auto cut = model.solve(g, i > 0, c);
      if (cut != expected) {
        std::printf("CUT MISMATCH: %s solve %zu\n", seq->name.c_str(), i);
        ++failures;
      }
      {
        std::printf("%-14s %-5s | %6lld %8lld %7lld %7lld %10lld %9lld %8d %8lld %6lld %6lld | %8.2f\n", seq->name.c_str(),
                    i == 0 ? "cold" : ("warm" + std::to_string(i)).c_str(), c.sweeps, c.barriers, c.relabel_sweeps,
                    c.cut_sweeps, c.discharges, c.rounds, c.max_rounds, c.bfs_runs, c.capped, c.label_drops,
                    c.time_us / 1000.0);
        std::fflush(stdout);
      }
      total += c.time_us;
      work += c.work_us;
      if (i == 0) c.cold_work_us = c.work_us;
      if (i == 0) {
        cold_ms.push_back(c.time_us / 1000.0);
        cold_barriers.push_back(static_cast<double>(c.barriers));
      } else {
        warm += c.time_us;
      }
      sum += c;
    }
    total_ms.push_back(total / 1000.0);
    work_ms.push_back(work / 1000.0);
    const auto& act = model.activity();
    const double rows = static_cast<double>(std::max(1LL, act.rows));
    std::printf("%-14s rounds' tile rows %lld: with an active pixel %.3f, quiet (none within a row) %.3f; active pixels "
                "a row %.2f\n",
                seq->name.c_str(), act.rows, static_cast<double>(act.rows_active) / rows,
                static_cast<double>(act.rows_quiet) / rows, static_cast<double>(act.pixels_active) / rows);
    if (seq->graphs.size() > 1) warm_ratio.push_back(warm / static_cast<double>(seq->graphs.size() - 1) / (cold_ms.back() * 1000.0));
  }
  {
    std::printf("\nall solves: %lld discharges (%lld at the round cap, %lld stalled), %lld passes or rounds (%lld on the "
                "critical path: the sum over phases of "
                "a phase's most), %lld level steps, %lld in-tile BFS steps, %lld global relabels (%lld truncated), "
                "%lld relabel sweeps; model time %.1f ms: global relabels %.1f, cut %.1f, discharges and barriers %.1f\n",
                sum.discharges, sum.capped, sum.stalled, sum.rounds, sum.critical_rounds, sum.level_steps, sum.bfs_steps,
                sum.relabels, sum.truncated, sum.relabel_sweeps,
                sum.time_us / 1000.0, sum.relabel_us / 1000.0, sum.cut_us / 1000.0,
                (sum.time_us - sum.relabel_us - sum.cut_us) / 1000.0);
  }
  std::printf("\nover %zu sequences: model ms (all solves) median %.2f p90 %.2f max %.2f; cold median %.2f max %.2f; "
              "cold barriers median %.0f p90 %.0f max %.0f; warm/cold median %.2f max %.2f; label drops %lld\n",
              total_ms.size(), percentile(total_ms, 0.5), percentile(total_ms, 0.9), percentile(total_ms, 1.0),
              percentile(cold_ms, 0.5), percentile(cold_ms, 1.0), percentile(cold_barriers, 0.5),
              percentile(cold_barriers, 0.9), percentile(cold_barriers, 1.0), percentile(warm_ratio, 0.5),
              percentile(warm_ratio, 1.0), sum.label_drops);
  std::printf("block work ms (all solves, the sum of the tiles' costs: what a batch pays) median %.2f p90 %.2f max "
              "%.2f, all sequences %.1f; barriers of reverse phases %lld\n",
              percentile(work_ms, 0.5), percentile(work_ms, 0.9), percentile(work_ms, 1.0), sum.work_us / 1000.0,
              sum.reverse_barriers);
  std::printf("block work ms of all sequences by kind: cold solves %.1f, warm %.1f; global relabels' sweeps %.1f, "
              "of which their first sweeps %.1f; the rest (push visits, checks) %.1f; settled tiles left out of "
              "relabels %lld; first-sweep visits that only stored %lld\n",
              sum.cold_work_us / 1000.0, (sum.work_us - sum.cold_work_us) / 1000.0, sum.relabel_work_us / 1000.0,
              sum.relabel_first_work_us / 1000.0,
              (sum.work_us - sum.relabel_work_us) / 1000.0, sum.settled_skips, sum.sinkless_skips);
  if (failures > 0) {
    std::printf("%d cut mismatches\n", failures);
    return 1;
  }
  std::printf("every cut equals the CPU solver's\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "model_region_discharge: %s\n", e.what());
    return 2;
  }
}
