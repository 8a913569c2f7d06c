// A model of the GPU max-flow's schedule (csrc/cuda/maxflow.cu), run on the CPU: the
// same tiles, the same per-tile steps (Jacobi BFS relaxation, synchronous push and
// relabel rounds), the same phases, and the work queue of its v0.9 to v0.13b versions
// (removed from the GPU solver since: it measured slower), with the GPU's blocks
// simulated as a discrete-event system. It counts what the GPU solver would do
// (global relabels, phases, tile visits, push rounds, grid barriers) and estimates
// its time from costs per step measured on the H200 (bench/RESULTS.md, v0.7), so that
// schedules can be compared on real GrabCut graphs where no GPU is at hand. Every cut
// is checked against the CPU solver (core/maxflow.cpp); a mismatch is an error (exit 1).
//
//   model_maxflow_tiles synthetic [SIDE [SEED]]      the GrabCut-like test graph of
//                        tests/cuda (the one whose GPU counts RESULTS.md records),
//                        cold and one warm solve
//   model_maxflow_tiles list FILE [COUNT]            images of a list written by
//                        bench/grabcut50_ppm.py: every iteration of a 5-iteration
//                        GrabCut from the box (the first cold, then warm)
//   model_maxflow_tiles batch FILE [COUNT]           the same images as one batch, the
//                        way the GPU solves a list call: one grid of all of them, each
//                        graph in its own tiles, finished graphs retired
//   model_maxflow_tiles crops [N]                    the first N (512) crop-sized graphs of
//                        bench_maxflow_cuda as one batch, one cold solve
//   options: --variants a,b,...  (default: all; see kVariants) --blocks B (264)
//            --trace: each global relabel's sweeps (queue 0), before its solve's row
//            --read-delay US (1): when a queued visit reads the state after its take
//            --scan-pass US (0.8): the cost of a line-scan BFS pass (variants q0s, q2s, q2sl)
//            --line-step US (0.06), --line-pass US (0.3): the costs of a line pass of
//              pushes (q2line, q2sl) per pixel step and per pass; a warp scan instead of
//              a thread walking its line is about --line-step 0 --line-pass 0.4
//
// What the model leaves out: memory traffic beyond the per-visit costs, the order in
// which concurrent visits' atomics land (a visit reads the state at its start and its
// writes land at its end), and within a grid-wide sweep every tile reads the state of
// the sweep's start. The counts of the GPU solver are the reference for it: on the
// 1024x1024 graph of `synthetic` the model's grid-wide sweeps (queue 0) match the H200's
// within 5% (relabels, BFS and push sweeps, tiles relaxed and visited); with the queue it
// relaxes more BFS tiles than the H200 did (1.3x with --read-delay 3, 1.9x with 1), a
// queue's counts depending on timing, and its times run ~25% above the H200's.
// bench/RESULTS.md (v0.9 model) has the numbers. It does not model contention: on the
// H200 the queued schedules ran 2.0-2.3x slower than queue 0 where it predicted 0.9x
// (a queued tile costs ~76 us of block time, a swept one ~5.6 us; RESULTS.md, v0.10),
// and its costs for line scans are guesses that the H200 did not bear out either.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <optional>
#include <queue>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/grabcut_graph.h"
#include "common/grabcut_iterations.h"
#include "common/grid_graph.h"
#include "common/ppm_image.h"
#include "core/common.h"
#include "core/driver.h"
#include "core/maxflow.h"

namespace {

using grabcut::testing::HostGridGraph;

constexpr int kTileW = 32;
constexpr int kTileH = 16;
// Tiles of side `tile` that cover `pixels` pixels.
constexpr int tiles_across(int pixels, int tile) { return (pixels + tile - 1) / tile; }
constexpr int kPadW = kTileW + 2;
constexpr int kPadH = kTileH + 2;
constexpr int kPad = kPadW * kPadH;
constexpr int kThreads = kTileW * kTileH;
constexpr int kInf = 0x3fffffff;

constexpr int dir_dy(int k) { return (k == 0 || k == 4) ? 0 : (k < 4 ? 1 : -1); }
constexpr int dir_dx(int k) { return (k == 0 || k == 1 || k == 7) ? 1 : ((k == 2 || k == 6) ? 0 : -1); }

// A schedule of the GPU solver, or a candidate for one.
struct Variant {
  const char* name;
  int queue;         // 0: grid-wide sweeps; 2: the relabel's later sweeps and the push phase from a queue
  int push_visits;   // visits of a tile per push phase (sweeps per phase with queue 0)
  int local_rounds;  // push-relabel rounds per visit
  // Region relabel inside a push visit: the tile's labels set to their exact
  // distances inside the tile (halo labels fixed) at the visit's start (bit 0) and
  // after a round that relabelled a pixel but pushed nothing (bit 1).
  int region_relabel;
  bool warm = true;  // later graphs of a sequence start from the last flow (else cold)
  // Partial relabels: after a push phase that sent excess into a sink, a relabel
  // starts over (from the sinks) only in the tiles the phase changed and relaxes the
  // others from their current labels; a full relabel after a phase that sent none,
  // and before the solve may end.
  bool partial = false;
  // A push visit that sent no excess into a sink pixel or out of its tile does not ask
  // for its tile again in the same push phase (its excess waits for the next relabel).
  bool stop_barren = false;
  // A push round as line passes instead of one synchronous step: one thread per row
  // (then per column) walks its line in each of the four directions, and excess pushed
  // along the line is pushed on by the next pixel in the same pass (pushes across
  // lines land after the pass); then the relabel step. Excess can cross a tile in
  // one pass instead of one pixel per round.
  bool line_passes = false;
  // A warm solve starts pushing with the last solve's final labels (exact for the old
  // residual graph; pixels that gained sink capacity get 0) instead of a relabel; the
  // solve still ends only after a full relabel finds nothing to push.
  bool keep_labels = false;
  // A BFS visit relaxes by line scans instead of Jacobi steps: a pass runs a
  // segmented min-plus scan along every row, column and both diagonals of the tile
  // (its halo ends included), in both directions; the visit ends after a pass that
  // changed nothing. A label crosses a tile along a straight or diagonal run of
  // residual arcs in one pass instead of one step per pixel.
  bool line_bfs = false;
  // Capped relabels (queue 0): a global relabel stops after this many BFS sweeps (0: no
  // cap). Pixels its wave has not reached keep the label kInf, so their excess waits;
  // labels it reached are real path lengths. When a check after a capped relabel finds
  // nothing to push, the next relabel runs to the end, and only such a relabel may end
  // the solve.
  int bfs_cap = 0;
  // How the cap follows a capped relabel that proved too short (the check after it found
  // nothing to push, so a whole relabel had to follow): 0, it stays; 1, it doubles for
  // the rest of the solve; 2, it doubles and the warm solves that follow keep it;
  // 3, it becomes the number of sweeps that whole relabel took, for the rest of the solve.
  int cap_adapt = 0;
  // A warm start first takes back the flow on every n-link whose two ends were on the
  // source side of the last cut (their excess returns to where the terminals put it;
  // any flow within the capacities is a valid preflow of this representation), so
  // that excess piled against the old cut does not have to travel back.
  bool warm_reset_source = false;
  // In a batch (`batch` mode), each graph has its own cap (queue 0): a graph's tiles
  // leave a relabel's sweeps once its cap is reached, and a graph whose check found
  // nothing to push after its relabel stopped short gets the next relabel uncapped
  // (and its cap doubled with cap_adapt 1), while the other graphs go on pushing. The
  // GPU's cap is the batch's: one graph stopped short waits until no graph has
  // anything to push. (Queue 0 with whole relabels only; otherwise ignored.)
  bool cap_per_graph = false;
};

const Variant kVariants[] = {
    {"q0", 0, 8, 24, 0, true},  // v0.7
    {"q2", 2, 8, 24, 0, true},  // v0.9 prototype
    {"q2rs", 2, 8, 24, 1, true},  // + region relabel at each visit's start
    {"q2rr", 2, 8, 24, 3, true},  // + region relabel at the start and when stalled
    {"q2rr64", 2, 8, 64, 3, true},  // the same with longer visits
    {"q2rr16v", 2, 16, 64, 3, true},
    {"q0cold", 0, 8, 24, 0, false},  // every iteration from zero flow
    {"q2cold", 2, 8, 24, 0, false},
    {"q2v32", 2, 32, 24, 0, true},  // more visits per push phase: fewer global relabels
    {"q2v4", 2, 4, 24, 0, true},
    {"q2p", 2, 8, 24, 0, true, true},
    {"q0p", 0, 8, 24, 0, true, true},
    {"q2b", 2, 8, 24, 0, true, false, true},
    {"q2line", 2, 8, 6, 0, true, false, false, true},
    {"q2line12", 2, 8, 12, 0, true, false, false, true},
    {"q2k", 2, 8, 24, 0, true, false, false, false, true},
    {"q0s", 0, 8, 24, 0, true, false, false, false, false, true},
    {"q2s", 2, 8, 24, 0, true, false, false, false, false, true},
    {"q2sl", 2, 8, 6, 0, true, false, false, true, false, true},  // line scans in both phases
    {"q2sl16", 2, 16, 6, 0, true, false, false, true, false, true},
    {"q2sl4", 2, 8, 4, 0, true, false, false, true, false, true},
    {"q0sl", 0, 8, 6, 0, true, false, false, true, false, true},
    {"q0c6", 0, 8, 24, 0, true, false, false, false, false, false, 6},
    {"q0c8", 0, 8, 24, 0, true, false, false, false, false, false, 8},
    {"q0c10", 0, 8, 24, 0, true, false, false, false, false, false, 10},
    {"q0c12", 0, 8, 24, 0, true, false, false, false, false, false, 12},
    {"q0c20", 0, 8, 24, 0, true, false, false, false, false, false, 20},
    {"q0c16", 0, 8, 24, 0, true, false, false, false, false, false, 16},
    {"q0c24", 0, 8, 24, 0, true, false, false, false, false, false, 24},
    // Capped relabels are cheaper: relabel more or less often, with shorter or longer visits.
    {"q0c8v4", 0, 4, 24, 0, true, false, false, false, false, false, 8},
    {"q0c12v4", 0, 4, 24, 0, true, false, false, false, false, false, 12},
    {"q0c12v6", 0, 6, 24, 0, true, false, false, false, false, false, 12},
    {"q0c12v12", 0, 12, 24, 0, true, false, false, false, false, false, 12},
    {"q0c12r12", 0, 8, 12, 0, true, false, false, false, false, false, 12},  // v0.13
    {"q0c12r48", 0, 8, 48, 0, true, false, false, false, false, false, 12},
    {"q0c12r8", 0, 8, 8, 0, true, false, false, false, false, false, 12},
    {"q0c12r6", 0, 8, 6, 0, true, false, false, false, false, false, 12},
    {"q0c8r12", 0, 8, 12, 0, true, false, false, false, false, false, 8},
    {"q0c16r12", 0, 8, 12, 0, true, false, false, false, false, false, 16},
    // A cap that grows where it proved too short (Variant::cap_adapt).
    {"q0c12r12d", 0, 8, 12, 0, true, false, false, false, false, false, 12, 1},  // v0.13b, the library's default
    {"q0c12r12dk", 0, 8, 12, 0, true, false, false, false, false, false, 12, 2},
    {"q0c12r12f", 0, 8, 12, 0, true, false, false, false, false, false, 12, 3},
    {"q0c8r12d", 0, 8, 12, 0, true, false, false, false, false, false, 8, 1},
    {"q0c12r12dl", 0, 8, 12, 0, true, false, false, false, true, false, 12, 1},  // + the last solve's labels kept
    {"q0c12r12ds", 0, 8, 12, 0, true, false, false, false, false, false, 12, 1, true},  // + source side's flow reset
    {"q0c12r12dg", 0, 8, 12, 0, true, false, false, false, false, false, 12, 1, false, true},  // + a cap per graph
    // The visits and rounds again, with the growing cap.
    {"q0c12r12dv4", 0, 4, 12, 0, true, false, false, false, false, false, 12, 1},
    {"q0c12r12dv6", 0, 6, 12, 0, true, false, false, false, false, false, 12, 1},
    {"q0c12r12dv12", 0, 12, 12, 0, true, false, false, false, false, false, 12, 1},
    {"q0c12r12dv16", 0, 16, 12, 0, true, false, false, false, false, false, 12, 1},
    {"q0c12r8d", 0, 8, 8, 0, true, false, false, false, false, false, 12, 1},
    {"q0c12r16d", 0, 8, 16, 0, true, false, false, false, false, false, 12, 1},
    // Tiles discharged towards exhaustion (the push-relabel form of a region discharge):
    // long visits, with exact labels inside the tile at the start and when stalled.
    {"q0c12r64rrd", 0, 8, 64, 3, true, false, false, false, false, false, 12, 1},
    {"q0c12r256rrd", 0, 8, 256, 3, true, false, false, false, false, false, 12, 1},
    {"q0c12r256d", 0, 8, 256, 0, true, false, false, false, false, false, 12, 1},
};

// Costs of the GPU solver's steps on the H200 (us), from the v0.7 profile: a push
// round ~1.4 us, a BFS tile relaxation ~4.7 us (a load and ~10 Jacobi steps).
struct Costs {
  int blocks = 264;  // 132 SMs x 2 blocks
  double bfs_visit = 1.7;
  double bfs_step = 0.3;
  double push_visit = 1.5;
  double push_round = 1.4;
  double idle_visit = 0.8;  // a push visit that finds nothing to do, a check of a tile
  // A line pass (Variant::line_passes): per pixel step of a line's thread (a few
  // dependent shared-memory operations), per pass (a barrier), and the relabel step.
  double line_step = 0.06;
  double line_pass = 0.3;
  double line_relabel = 0.7;
  // A scan pass of Variant::line_bfs: four orientations, each a shared-memory
  // round trip, two segmented warp scans and a barrier (--scan-pass).
  double bfs_pass = 0.8;
  double barrier = 3.0;
  bool trace = false;  // --trace: each relabel's sweeps, before its solve's row
  // A queued visit reads the state this long after its block took the tile (its loads
  // in flight; --read-delay). Requests that come meanwhile are already in what it reads.
  double read_delay = 1.0;
};

struct Counts {
  long long relabels = 0, bfs_phases = 0, push_phases = 0, barriers = 0;
  long long bfs_visits = 0, push_visits = 0, push_rounds = 0, capped_visits = 0;
  long long full_relabels = 0;
  long long short_caps = 0;  // capped relabels whose check found nothing to push
  long long barren_visits = 0, barren_rounds = 0;  // visits that sent nothing into a sink or out
  double time_us = 0;
  double bfs_us = 0, check_us = 0, push_us = 0;  // time_us by phase

  Counts& operator+=(const Counts& o) {
    relabels += o.relabels;
    bfs_phases += o.bfs_phases;
    push_phases += o.push_phases;
    barriers += o.barriers;
    bfs_visits += o.bfs_visits;
    push_visits += o.push_visits;
    push_rounds += o.push_rounds;
    capped_visits += o.capped_visits;
    full_relabels += o.full_relabels;
    short_caps += o.short_caps;
    barren_visits += o.barren_visits;
    barren_rounds += o.barren_rounds;
    time_us += o.time_us;
    bfs_us += o.bfs_us;
    check_us += o.check_us;
    push_us += o.push_us;
    return *this;
  }
};

// What one tile visit changes, applied when the visit ends.
struct Writes {
  std::vector<std::pair<std::int64_t, long long>> excess;      // pixel, delta
  std::vector<std::pair<std::int64_t, int>> flow;              // 4 * pixel + d, delta
  std::vector<std::pair<std::int64_t, int>> height;            // pixel, new label
  std::vector<int> requests;                                   // tiles asked for
  bool again = false;                                          // asks for itself
  double cost = 0;
  void clear() {
    excess.clear();
    flow.clear();
    height.clear();
    requests.clear();
    again = false;
    cost = 0;
  }
};

class TileModel {
 public:
  TileModel(const Variant& v, const Costs& costs) : v_(v), c_(costs) {}

  // The graphs of a batch laid out in one grid (`batch` mode): the graph of each tile
  // (-1: a tile of no graph, never visited). Without it, all tiles are one graph.
  void set_graphs(std::vector<int> tile_graph, int graphs) {
    tile_graph_ = std::move(tile_graph);
    graphs_ = graphs;
  }

  // Solves g (warm: from the flow of the last solve, whose graph had the same
  // n-links); returns the canonical cut (1 = source side).
  std::vector<std::uint8_t> solve(const HostGridGraph& g, bool warm, Counts& counts) {
    counts = Counts{};
    counts_ = &counts;
    truncated_ = false;
    uncapped_ = false;
    if (!warm || v_.cap_adapt != 2) cap_now_ = v_.bfs_cap;
    const bool kept = setup(g, warm) && v_.keep_labels;
    if (tile_graph_.size() != static_cast<std::size_t>(tiles_)) {
      tile_graph_.assign(static_cast<std::size_t>(tiles_), 0);
      graphs_ = 1;
    }
    live_.assign(static_cast<std::size_t>(graphs_), 1);
    graph_cap_.assign(static_cast<std::size_t>(graphs_), v_.bfs_cap);
    graph_uncapped_.assign(static_cast<std::size_t>(graphs_), 0);
    graph_truncated_.assign(static_cast<std::size_t>(graphs_), 0);
    bool full = !kept;
    long long waiting = positive_excess();
    for (bool first = true;; first = false) {
      double start = counts.time_us;
      if (first && kept) {
        for (std::int64_t p = 0; p < n_; ++p) {
          if (excess_[p] < 0) height_[p] = 0;
        }
      } else {
        ++counts.relabels;
        global_relabel(full);
      }
      counts.bfs_us += counts.time_us - start;
      start = counts.time_us;
      const bool active = check();
      counts.check_us += counts.time_us - start;
      if (v_.cap_per_graph && v_.queue == 0 && !v_.partial && !kept) {
        // Each graph decides alone: finished, relabel it to the end next, or push.
        bool any_live = false;
        for (int b = 0; b < graphs_; ++b) {
          if (live_[b] == 0 || graph_active_[b] != 0) {
            any_live = any_live || live_[b] != 0;
            continue;
          }
          if (graph_truncated_[b] != 0) {
            ++counts.short_caps;
            graph_uncapped_[b] = 1;
            if (v_.cap_adapt == 1) graph_cap_[b] *= 2;
            any_live = true;
          } else {
            live_[b] = 0;
          }
        }
        if (!any_live) break;
        if (!active) continue;
      } else {
        // A graph with nothing to push whose whole relabel reached all of it is finished
        // (a partial relabel's labels may call settled pixels unable to move).
        for (int b = 0; b < graphs_; ++b) {
          if (full && graph_active_[b] == 0 && graph_truncated_[b] == 0) live_[b] = 0;
        }
      }
      if (!active) {
        if (full && !truncated_) break;
        full = true;  // a partial relabel's labels may call settled pixels unable to move
        uncapped_ = truncated_;  // a capped relabel left pixels unlabelled: label them all
        if (truncated_) {
          ++counts.short_caps;
          if (v_.cap_adapt == 1 || v_.cap_adapt == 2) cap_now_ *= 2;
          fit_cap_ = v_.cap_adapt == 3;
        }
        continue;
      }
      start = counts.time_us;
      push_phase();
      counts.push_us += counts.time_us - start;
      // Excess only ever leaves a pixel with excess, so the excess waiting in the
      // graph falls exactly when some reached a sink.
      const long long now = positive_excess();
      full = !v_.partial || now >= waiting;
      waiting = now;
      if (counts.push_visits > 50'000'000) throw std::runtime_error("model: no progress");
    }
    std::vector<std::uint8_t> cut(n_);
    for (std::int64_t p = 0; p < n_; ++p) cut[p] = height_[p] >= kInf ? 1 : 0;
    return cut;
  }

 private:
  const Variant& v_;
  Costs c_;
  Counts* counts_ = nullptr;
  const HostGridGraph* g_ = nullptr;
  int H_ = 0, W_ = 0, tiles_x_ = 0, tiles_y_ = 0, tiles_ = 0;
  std::int64_t n_ = 0;
  std::vector<long long> excess_;
  std::vector<int> height_;
  std::vector<int> flow_;  // 4 per pixel
  std::vector<std::int32_t> old_term_;
  std::vector<std::uint8_t> resmask_;
  std::vector<int> tile_state_, visits_;
  std::vector<char> dirty_;  // changed by a push visit since the last relabel
  bool truncated_ = false;   // the last relabel stopped at Variant::bfs_cap
  bool uncapped_ = false;    // the next relabel runs to the end
  int cap_now_ = 0;          // the cap of the next capped relabel (Variant::cap_adapt)
  bool fit_cap_ = false;     // the next whole relabel's sweeps become the cap
  std::deque<int> queue_;
  long long outstanding_ = 0;
  // Graphs of a batch (set_graphs): each tile's graph, which are still solving, and
  // their caps (Variant::cap_per_graph) and states after the last relabel and check.
  std::vector<int> tile_graph_;
  int graphs_ = 1;
  std::vector<char> live_, graph_uncapped_, graph_truncated_, graph_active_;
  std::vector<int> graph_cap_;

  bool visited(int t) const {
    const int b = tile_graph_[static_cast<std::size_t>(t)];
    return b >= 0 && live_[static_cast<std::size_t>(b)] != 0;
  }

  static constexpr int kRunning = 1;
  static constexpr int kPending = 2;

  bool in_grid(int x, int y) const { return x >= 0 && y >= 0 && x < W_ && y < H_; }
  int tile_of(int x, int y) const { return (y / kTileH) * tiles_x_ + x / kTileW; }
  long long positive_excess() const {
    long long sum = 0;
    for (const long long e : excess_) sum += e > 0 ? e : 0;
    return sum;
  }
  std::int64_t pix(int x, int y) const { return static_cast<std::int64_t>(y) * W_ + x; }

  unsigned residual(int x, int y, int k) const {
    const int nx = x + dir_dx(k);
    const int ny = y + dir_dy(k);
    if (!in_grid(nx, ny)) return 0;
    if (k < 4) {
      const std::int64_t p = pix(x, y);
      return static_cast<unsigned>(g_->nlink[k][p]) - static_cast<unsigned>(flow_[4 * p + k]);
    }
    const std::int64_t q = pix(nx, ny);
    return static_cast<unsigned>(g_->nlink[k - 4][q]) + static_cast<unsigned>(flow_[4 * q + k - 4]);
  }

  // Returns whether the solve starts from the last one's flow (a warm start).
  bool setup(const HostGridGraph& g, bool warm) {
    const bool same = g_ != nullptr && warm && H_ == g.height && W_ == g.width;
    g_ = &g;
    H_ = g.height;
    W_ = g.width;
    n_ = static_cast<std::int64_t>(H_) * W_;
    tiles_x_ = tiles_across(W_, kTileW);
    tiles_y_ = tiles_across(H_, kTileH);
    tiles_ = tiles_x_ * tiles_y_;
    if (!same) {
      excess_.assign(n_, 0);
      flow_.assign(4 * n_, 0);
      old_term_.assign(n_, 0);
      for (std::int64_t p = 0; p < n_; ++p) excess_[p] = g.terminal[p];
    } else {
      if (v_.warm_reset_source) reset_source_side_flow();
      for (std::int64_t p = 0; p < n_; ++p) excess_[p] += static_cast<long long>(g.terminal[p]) - old_term_[p];
    }
    old_term_ = g.terminal;
    if (!same) height_.assign(n_, kInf);
    resmask_.assign(n_, 0);
    tile_state_.assign(tiles_, 0);
    visits_.assign(tiles_, 0);
    dirty_.assign(tiles_, 1);
    queue_.clear();
    outstanding_ = 0;
    return same;
  }

  // Variant::warm_reset_source, from the last solve's final labels (kInf: source side).
  void reset_source_side_flow() {
    for (int y = 0; y < H_; ++y) {
      for (int x = 0; x < W_; ++x) {
        const std::int64_t p = pix(x, y);
        if (height_[p] < kInf) continue;
        for (int k = 0; k < 4; ++k) {
          const int nx = x + dir_dx(k);
          const int ny = y + dir_dy(k);
          if (!in_grid(nx, ny) || height_[pix(nx, ny)] < kInf) continue;
          const int f = flow_[4 * p + k];
          flow_[4 * p + k] = 0;
          excess_[p] += f;
          excess_[pix(nx, ny)] -= f;
        }
      }
    }
  }

  void apply(const Writes& w) {
    for (const auto& [p, d] : w.excess) excess_[p] += d;
    for (const auto& [i, d] : w.flow) flow_[i] += d;
    for (const auto& [p, h] : w.height) height_[p] = h;
  }

  void neighbours_of_tile(int t, std::vector<int>& out) const {
    const int tx = t % tiles_x_;
    const int ty = t / tiles_x_;
    for (int dy = -1; dy <= 1; ++dy) {
      for (int dx = -1; dx <= 1; ++dx) {
        if (dx == 0 && dy == 0) continue;
        const int nx = tx + dx;
        const int ny = ty + dy;
        if (nx >= 0 && ny >= 0 && nx < tiles_x_ && ny < tiles_y_) out.push_back(ny * tiles_x_ + nx);
      }
    }
  }

  // ------------------------------------------------------------ tile work
  // Jacobi relaxation of labels in a padded tile: lab holds the halo (fixed) and the
  // interior's starting labels; relaxing pixels take min(own, 1 + residual neighbour)
  // until nothing changes. Returns the Jacobi steps (the GPU's barriers).
  int jacobi(std::array<int, kPad>& lab, const std::array<std::uint8_t, kThreads>& mask,
             const std::array<bool, kThreads>& relaxes, bool& changed) {
    std::array<int, kPad> next = lab;
    std::vector<int> frontier;
    for (int i = 0; i < kThreads; ++i) {
      if (relaxes[i]) frontier.push_back(i);
    }
    std::array<int, kThreads> stamp{};
    int steps = 0;
    changed = false;
    std::vector<int> moved;
    for (;;) {
      ++steps;
      moved.clear();
      for (const int i : frontier) {
        const int me = (i / kTileW + 1) * kPadW + i % kTileW + 1;
        int d = lab[me];
        for (int k = 0; k < 8; ++k) {
          if (mask[i] & (1U << k)) d = std::min(d, lab[me + dir_dy(k) * kPadW + dir_dx(k)] + 1);
        }
        if (d < lab[me]) {
          next[me] = d;
          moved.push_back(i);
        }
      }
      for (const int i : moved) {
        const int me = (i / kTileW + 1) * kPadW + i % kTileW + 1;
        lab[me] = next[me];
      }
      if (moved.empty()) break;
      changed = true;
      // The next step re-evaluates the relaxing pixels with a residual arc into a
      // pixel that moved.
      frontier.clear();
      for (const int i : moved) {
        const int lx = i % kTileW;
        const int ly = i / kTileW;
        for (int k = 0; k < 8; ++k) {
          const int nx = lx + dir_dx(k);
          const int ny = ly + dir_dy(k);
          if (nx < 0 || ny < 0 || nx >= kTileW || ny >= kTileH) continue;
          const int j = ny * kTileW + nx;
          if (!relaxes[j] || !(mask[j] & (1U << (k ^ 4))) || stamp[j] == steps) continue;
          stamp[j] = steps;
          frontier.push_back(j);
        }
      }
    }
    return steps;
  }

  // Variant::line_bfs: passes of segmented min-plus scans along the tile's rows,
  // columns and diagonals (each line from one halo end to the other, both ways) until
  // a pass changes nothing. Returns the passes. A scan along a line is the same as
  // relaxing its pixels one after the other in the scan's direction.
  int line_relax(std::array<int, kPad>& lab, const std::array<std::uint8_t, kThreads>& mask,
                 const std::array<bool, kThreads>& relaxes, bool& changed) {
    changed = false;
    int passes = 0;
    // A direction k moves (dx, dy); a pixel takes 1 + the label of its neighbour
    // against the scan's direction when its arc towards that neighbour is residual.
    const auto scan = [&](int sx, int sy, int dx, int dy) {
      // (sx, sy): a start in padded coordinates (halo); step (dx, dy) until leaving.
      int k = -1;
      for (int j = 0; j < 8; ++j) {
        if (dir_dx(j) == -dx && dir_dy(j) == -dy) k = j;
      }
      bool any = false;
      int px = sx + dx;
      int py = sy + dy;
      while (px >= 1 && py >= 1 && px <= kTileW && py <= kTileH) {
        const int i = (py - 1) * kTileW + (px - 1);
        const int me = py * kPadW + px;
        if (relaxes[i] && (mask[i] & (1U << k))) {
          const int d = lab[(py - dy) * kPadW + (px - dx)] + 1;
          if (d < lab[me]) {
            lab[me] = d;
            any = true;
          }
        }
        px += dx;
        py += dy;
      }
      return any;
    };
    for (;;) {
      ++passes;
      bool any = false;
      for (int y = 1; y <= kTileH; ++y) {  // rows
        any |= scan(0, y, 1, 0);
        any |= scan(kPadW - 1, y, -1, 0);
      }
      for (int x = 1; x <= kTileW; ++x) {  // columns
        any |= scan(x, 0, 0, 1);
        any |= scan(x, kPadH - 1, 0, -1);
      }
      // Diagonals: every start on the halo ring whose first step enters the tile.
      for (int dd = 0; dd < 4; ++dd) {
        const int dx = (dd & 1) ? 1 : -1;
        const int dy = (dd & 2) ? 1 : -1;
        for (int x = 0; x < kPadW; ++x) {
          for (int y = 0; y < kPadH; ++y) {
            if (x != 0 && y != 0 && x != kPadW - 1 && y != kPadH - 1) continue;
            const int nx = x + dx;
            const int ny = y + dy;
            if (nx < 1 || ny < 1 || nx > kTileW || ny > kTileH) continue;
            any |= scan(x, y, dx, dy);
          }
        }
      }
      if (!any) break;
      changed = true;
    }
    return passes;
  }

  // bfs_tile: relaxes tile t to local stability (first: from the sinks, writing the
  // residual masks; otherwise from the current labels).
  void bfs_visit(int t, bool first, Writes& w) {
    w.clear();
    const int x0 = (t % tiles_x_) * kTileW;
    const int y0 = (t / tiles_x_) * kTileH;
    std::array<int, kPad> lab;
    std::array<std::uint8_t, kThreads> mask{};
    std::array<bool, kThreads> relaxes{};
    for (int py = 0; py < kPadH; ++py) {
      for (int px = 0; px < kPadW; ++px) {
        const int gx = x0 + px - 1;
        const int gy = y0 + py - 1;
        int h = kInf;
        if (in_grid(gx, gy)) {
          // A relabel's first sweep starts over in the dirty tiles (all, in a full one).
          const bool reset = first && dirty_[static_cast<std::size_t>(tile_of(gx, gy))] != 0;
          h = reset ? (excess_[pix(gx, gy)] < 0 ? 0 : kInf) : height_[pix(gx, gy)];
        }
        lab[py * kPadW + px] = h;
      }
    }
    for (int i = 0; i < kThreads; ++i) {
      const int x = x0 + i % kTileW;
      const int y = y0 + i / kTileW;
      if (!in_grid(x, y)) continue;
      const std::int64_t p = pix(x, y);
      if (first) {
        unsigned m = 0;
        for (int k = 0; k < 8; ++k) {
          if (residual(x, y, k) != 0U) m |= 1U << k;
        }
        resmask_[p] = static_cast<std::uint8_t>(m);  // read only by this tile, later in this relabel
      }
      mask[i] = resmask_[p];
      const int me = (i / kTileW + 1) * kPadW + i % kTileW + 1;
      relaxes[i] = lab[me] != 0 && mask[i] != 0;
    }
    bool changed = false;
    const int steps = v_.line_bfs ? line_relax(lab, mask, relaxes, changed) : jacobi(lab, mask, relaxes, changed);
    for (int i = 0; i < kThreads; ++i) {
      const int x = x0 + i % kTileW;
      const int y = y0 + i / kTileW;
      if (!in_grid(x, y)) continue;
      const int me = (i / kTileW + 1) * kPadW + i % kTileW + 1;
      if (first || lab[me] != height_[pix(x, y)]) w.height.emplace_back(pix(x, y), lab[me]);
    }
    if (changed) {
      neighbours_of_tile(t, w.requests);
      // A sweep lists the tile itself again; the queue does not (it is locally stable).
      if (v_.queue == 0) w.requests.push_back(t);
    }
    w.cost = c_.bfs_visit + (v_.line_bfs ? c_.bfs_pass : c_.bfs_step) * steps;
  }

  // push_tile: up to local_rounds synchronous push and relabel rounds.
  void push_visit(int t, Writes& w) {
    w.clear();
    const int x0 = (t % tiles_x_) * kTileW;
    const int y0 = (t / tiles_x_) * kTileH;
    std::array<long long, kThreads> ex{};
    std::array<long long, kPad> inbox{};
    std::array<int, kPad> lab;
    std::array<std::array<unsigned, 8>, kThreads> res{};
    std::array<std::array<unsigned, 8>, kThreads> res0{};
    std::array<bool, kThreads> valid{};
    std::array<long long, kThreads> e0{};
    std::array<int, kPad> h0{};
    bool any = false;
    for (int py = 0; py < kPadH; ++py) {
      for (int px = 0; px < kPadW; ++px) {
        const int gx = x0 + px - 1;
        const int gy = y0 + py - 1;
        lab[py * kPadW + px] = in_grid(gx, gy) ? height_[pix(gx, gy)] : kInf;
      }
    }
    for (int i = 0; i < kThreads; ++i) {
      const int x = x0 + i % kTileW;
      const int y = y0 + i / kTileW;
      valid[i] = in_grid(x, y);
      if (!valid[i]) continue;
      const std::int64_t p = pix(x, y);
      ex[i] = e0[i] = excess_[p];
      const int me = (i / kTileW + 1) * kPadW + i % kTileW + 1;
      any = any || (ex[i] > 0 && lab[me] < kInf);
    }
    if (!any) {
      w.cost = c_.idle_visit;
      return;
    }
    for (int i = 0; i < kThreads; ++i) {
      if (!valid[i]) continue;
      const int x = x0 + i % kTileW;
      const int y = y0 + i / kTileW;
      for (int k = 0; k < 8; ++k) res[i][k] = res0[i][k] = residual(x, y, k);
    }
    h0 = lab;
    auto me_of = [](int i) { return (i / kTileW + 1) * kPadW + i % kTileW + 1; };
    double cost = c_.push_visit;
    if (v_.region_relabel & 1) cost += region_relabel(lab, res, ex, valid);
    int round = 0;
    std::vector<std::pair<int, int>> relabelled;
    // Only pixels active at a round's start or sent excess in it can change in it.
    std::vector<int> active;
    std::vector<int> touched;
    std::array<int, kThreads> seen{};
    auto collect_active = [&] {
      active.clear();
      for (int i = 0; i < kThreads; ++i) {
        if (valid[i] && ex[i] > 0 && lab[me_of(i)] < kInf) active.push_back(i);
      }
    };
    collect_active();
    for (; round < v_.local_rounds; ++round) {
      const int stamp = round + 1;
      touched = active;
      for (const int i : active) seen[i] = stamp;
      // Push: every active pixel to its strictly lower residual neighbours.
      bool pushed = false;
      if (v_.line_passes) {
        pushed = push_line_passes(lab, res, ex, valid, inbox);
        touched.clear();
        for (int i = 0; i < kThreads; ++i) {
          if (valid[i] && (ex[i] > 0 || seen[i] == stamp)) touched.push_back(i);
        }
        active.clear();  // the passes moved the excess already
      }
      for (const int i : active) {
        const int me = me_of(i);
        const int hm = lab[me];
        long long left = ex[i];
        for (int k = 0; k < 8 && left > 0; ++k) {
          const int nb = me + dir_dy(k) * kPadW + dir_dx(k);
          const unsigned r = res[i][k];
          if (lab[nb] >= hm || r == 0U) continue;
          const long long amount = std::min<long long>(left, r);
          res[i][k] = r - static_cast<unsigned>(amount);
          const int nlx = i % kTileW + dir_dx(k);
          const int nly = i / kTileW + dir_dy(k);
          if (nlx >= 0 && nlx < kTileW && nly >= 0 && nly < kTileH) {
            const int j = nly * kTileW + nlx;
            res[j][k ^ 4] += static_cast<unsigned>(amount);
            if (seen[j] != stamp) {
              seen[j] = stamp;
              touched.push_back(j);
            }
          }
          inbox[nb] += amount;
          left -= amount;
          pushed = true;
        }
        ex[i] = left;
      }
      // Relabel: from the labels the push saw.
      relabelled.clear();
      for (const int i : touched) {
        const int me = me_of(i);
        ex[i] += inbox[me];
        inbox[me] = 0;
        const int hm = lab[me];
        if (ex[i] > 0 && hm < kInf) {
          int m = kInf;
          for (int k = 0; k < 8; ++k) {
            if (res[i][k] != 0U) m = std::min(m, lab[me + dir_dy(k) * kPadW + dir_dx(k)]);
          }
          if (m >= hm) relabelled.emplace_back(me, m >= kInf - 1 ? kInf : m + 1);
        }
      }
      for (const auto& [me, h] : relabelled) lab[me] = h;
      if ((v_.region_relabel & 2) && !pushed && !relabelled.empty()) {
        cost += region_relabel(lab, res, ex, valid);
        collect_active();
      } else {
        active.clear();
        for (const int i : touched) {
          if (ex[i] > 0 && lab[me_of(i)] < kInf) active.push_back(i);
        }
        std::sort(active.begin(), active.end());  // the order of the pixels' threads
      }
      if (active.empty()) break;
    }
    const int rounds = std::min(round + 1, v_.local_rounds);
    counts_->push_rounds += rounds;
    if (round == v_.local_rounds) ++counts_->capped_visits;
    cost += (v_.line_passes ? 2 * (c_.line_step * (kTileW + kTileH) + 2 * c_.line_pass) + c_.line_relabel
                            : c_.push_round) *
            rounds;
    // Write-back.
    bool remain = false;
    for (int i = 0; i < kThreads; ++i) {
      if (!valid[i]) continue;
      const int x = x0 + i % kTileW;
      const int y = y0 + i / kTileW;
      const std::int64_t p = pix(x, y);
      const int me = me_of(i);
      if (ex[i] != e0[i]) w.excess.emplace_back(p, ex[i] - e0[i]);
      if (lab[me] != h0[me]) w.height.emplace_back(p, lab[me]);
      for (int k = 0; k < 8; ++k) {
        if (res[i][k] == res0[i][k]) continue;
        if (k < 4) {
          w.flow.emplace_back(4 * p + k, static_cast<int>(res0[i][k] - res[i][k]));
        } else {
          const int nlx = i % kTileW + dir_dx(k);
          const int nly = i / kTileW + dir_dy(k);
          if (nlx >= 0 && nlx < kTileW && nly >= 0 && nly < kTileH) continue;
          w.flow.emplace_back(4 * pix(x + dir_dx(k), y + dir_dy(k)) + (k - 4), static_cast<int>(res[i][k] - res0[i][k]));
        }
      }
      remain = remain || (ex[i] > 0 && lab[me] < kInf);
    }
    const int tx = t % tiles_x_;
    const int ty = t / tiles_x_;
    for (int py = 0; py < kPadH; ++py) {
      for (int px = 0; px < kPadW; ++px) {
        const bool interior = py >= 1 && py <= kTileH && px >= 1 && px <= kTileW;
        const long long v = inbox[py * kPadW + px];
        if (interior || v == 0) continue;
        const int gx = x0 + px - 1;
        const int gy = y0 + py - 1;
        w.excess.emplace_back(pix(gx, gy), v);
        const int ntx = tx + (px == 0 ? -1 : (px == kPadW - 1 ? 1 : 0));
        const int nty = ty + (py == 0 ? -1 : (py == kPadH - 1 ? 1 : 0));
        w.requests.push_back(nty * tiles_x_ + ntx);
      }
    }
    std::sort(w.requests.begin(), w.requests.end());
    w.requests.erase(std::unique(w.requests.begin(), w.requests.end()), w.requests.end());
    bool absorbed = !w.requests.empty();
    for (int i = 0; i < kThreads && !absorbed; ++i) absorbed = valid[i] && e0[i] < 0 && ex[i] > e0[i];
    if (!absorbed) {
      ++counts_->barren_visits;
      counts_->barren_rounds += rounds;
      if (v_.stop_barren) remain = false;
    }
    if (!w.excess.empty() || !w.flow.empty() || !w.height.empty()) dirty_[static_cast<std::size_t>(t)] = 1;
    for (const int r : w.requests) dirty_[static_cast<std::size_t>(r)] = 1;
    w.again = remain;
    w.cost = cost;
  }

  // The four line passes of a round (Variant::line_passes). Returns whether anything
  // was pushed. Pushes into the halo go to inbox, as in a synchronous round.
  bool push_line_passes(const std::array<int, kPad>& lab, std::array<std::array<unsigned, 8>, kThreads>& res,
                        std::array<long long, kThreads>& ex, const std::array<bool, kThreads>& valid,
                        std::array<long long, kPad>& inbox) {
    bool pushed = false;
    // (along the line, the two diagonals that leave it forward)
    constexpr int kPasses[4][3] = {{0, 1, 7}, {4, 3, 5}, {2, 1, 3}, {6, 5, 7}};
    for (const auto& pass : kPasses) {
      const int along = pass[0];
      const bool horizontal = dir_dy(along) == 0;
      const int lines = horizontal ? kTileH : kTileW;
      const int steps = horizontal ? kTileW : kTileH;
      std::array<long long, kThreads> across{};
      for (int l = 0; l < lines; ++l) {
        for (int st = 0; st < steps; ++st) {
          const int lx = horizontal ? (dir_dx(along) > 0 ? st : kTileW - 1 - st) : l;
          const int ly = horizontal ? l : (dir_dy(along) > 0 ? st : kTileH - 1 - st);
          const int i = ly * kTileW + lx;
          if (!valid[i] || ex[i] <= 0) continue;
          const int me = (ly + 1) * kPadW + lx + 1;
          const int hm = lab[me];
          if (hm >= kInf) continue;
          for (const int k : pass) {
            if (ex[i] <= 0) break;
            const int nb = me + dir_dy(k) * kPadW + dir_dx(k);
            const unsigned r = res[i][k];
            if (lab[nb] >= hm || r == 0U) continue;
            const long long amount = std::min<long long>(ex[i], r);
            res[i][k] = r - static_cast<unsigned>(amount);
            ex[i] -= amount;
            pushed = true;
            const int nlx = lx + dir_dx(k);
            const int nly = ly + dir_dy(k);
            if (nlx >= 0 && nlx < kTileW && nly >= 0 && nly < kTileH) {
              const int j = nly * kTileW + nlx;
              res[j][k ^ 4] += static_cast<unsigned>(amount);
              if (k == along) {
                ex[j] += amount;  // its thread reaches it next in this pass
              } else {
                across[j] += amount;
              }
            } else {
              inbox[nb] += amount;
            }
          }
        }
      }
      for (int j = 0; j < kThreads; ++j) ex[j] += across[j];
    }
    return pushed;
  }

  // Exact distances inside the tile to its sinks (pixels with sink capacity left)
  // or to the halo (labels fixed), over the current residual arcs. A label only
  // rises: labels across tile boundaries are not always valid (a visit pushes on
  // what it last saw of its halo), so a distance may be below the current label.
  // Returns its cost.
  double region_relabel(std::array<int, kPad>& lab, const std::array<std::array<unsigned, 8>, kThreads>& res,
                        const std::array<long long, kThreads>& ex, const std::array<bool, kThreads>& valid) {
    std::array<std::uint8_t, kThreads> mask{};
    std::array<bool, kThreads> relaxes{};
    std::array<int, kPad> d = lab;
    for (int i = 0; i < kThreads; ++i) {
      const int me = (i / kTileW + 1) * kPadW + i % kTileW + 1;
      if (!valid[i]) {
        d[me] = kInf;
        continue;
      }
      unsigned m = 0;
      for (int k = 0; k < 8; ++k) {
        if (res[i][k] != 0U) m |= 1U << k;
      }
      mask[i] = static_cast<std::uint8_t>(m);
      const bool sink = ex[i] < 0;
      d[me] = sink ? 0 : kInf;
      relaxes[i] = !sink && m != 0;
    }
    bool changed = false;
    const int steps = jacobi(d, mask, relaxes, changed);
    for (int i = 0; i < kThreads; ++i) {
      if (!valid[i]) continue;
      const int me = (i / kTileW + 1) * kPadW + i % kTileW + 1;
      lab[me] = std::max(lab[me], d[me]);
    }
    return c_.bfs_step * steps;
  }

  // ------------------------------------------------------------ phases
  // A grid-wide sweep over `tiles` (every block reads the state of the sweep's start;
  // blocks take tiles in list order as they free up, or statically: t % blocks).
  template <class Visit>
  std::vector<int> sweep(const std::vector<int>& tiles, bool static_shares, Visit visit) {
    std::vector<Writes> writes(tiles.size());
    for (std::size_t i = 0; i < tiles.size(); ++i) visit(tiles[i], writes[i]);
    std::vector<double> block(static_cast<std::size_t>(c_.blocks), 0.0);
    std::priority_queue<std::pair<double, int>, std::vector<std::pair<double, int>>, std::greater<>> free_at;
    for (int b = 0; b < c_.blocks; ++b) free_at.emplace(0.0, b);
    double longest = 0;
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      double end = 0;
      if (static_shares) {
        auto& b = block[static_cast<std::size_t>(tiles[i] % c_.blocks)];
        b += writes[i].cost;
        end = b;
      } else {
        auto [at, b] = free_at.top();
        free_at.pop();
        end = at + writes[i].cost;
        free_at.emplace(end, b);
      }
      longest = std::max(longest, end);
    }
    std::vector<int> next;
    for (const auto& w : writes) {
      apply(w);
      for (const int r : w.requests) {
        if (visited(r)) next.push_back(r);
      }
    }
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    counts_->time_us += longest + c_.barrier;
    ++counts_->barriers;
    return next;
  }

  void request(int t) {
    if (!visited(t)) return;
    if (tile_state_[t] == 0) {
      tile_state_[t] = kPending;
      ++outstanding_;
      queue_.push_back(t);
    } else {
      tile_state_[t] |= kPending;
    }
  }

  // run_queued_tiles: blocks take tiles from the queue as they free up; a visit reads
  // the state when it starts and its writes and requests land when it ends.
  template <class Visit>
  void queued_phase(int cap, Visit visit) {
    // Two events per visit: its reads (read_delay after the block took the tile: the
    // loads of the tile and its halo are in flight that long) and its end.
    struct Event {
      double at;
      int kind;  // 0: end (writes and requests land), 1: reads
      int tile;
      std::size_t slot;
      double taken;
      bool operator>(const Event& o) const {
        if (at != o.at) return at > o.at;
        if (kind != o.kind) return kind > o.kind;
        return tile > o.tile;
      }
    };
    std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
    std::vector<Writes> slots(static_cast<std::size_t>(c_.blocks));
    std::vector<std::size_t> free_slots;
    for (int b = c_.blocks - 1; b >= 0; --b) free_slots.push_back(static_cast<std::size_t>(b));
    double now = 0;
    for (;;) {
      while (!free_slots.empty() && !queue_.empty()) {
        const int t = queue_.front();
        queue_.pop_front();
        tile_state_[t] = kRunning;
        if (cap > 0 && visits_[t]++ >= cap) {
          tile_state_[t] = 0;
          --outstanding_;
          continue;
        }
        const std::size_t s = free_slots.back();
        free_slots.pop_back();
        events.push({now + c_.read_delay, 1, t, s, now});
      }
      if (events.empty()) break;
      const Event e = events.top();
      events.pop();
      now = e.at;
      Writes& w = slots[e.slot];
      if (e.kind == 1) {
        visit(e.tile, w);
        events.push({std::max(now, e.taken + w.cost), 0, e.tile, e.slot, e.taken});
        continue;
      }
      apply(w);
      for (const int q : w.requests) request(q);
      if (w.again) request(e.tile);
      const int old = tile_state_[e.tile];
      tile_state_[e.tile] = old & ~kRunning;
      if ((old & kPending) != 0 && (cap == 0 || visits_[e.tile] < cap)) {
        queue_.push_back(e.tile);
      } else {
        if ((old & kPending) != 0) tile_state_[e.tile] = 0;
        --outstanding_;
      }
      free_slots.push_back(e.slot);
    }
    if (outstanding_ != 0 || !queue_.empty()) throw std::runtime_error("model: queue not drained");
    counts_->time_us += now + c_.barrier;
    ++counts_->barriers;
  }

  std::vector<int> all_tiles() const {
    std::vector<int> t;
    for (int i = 0; i < tiles_; ++i) {
      if (visited(i)) t.push_back(i);
    }
    return t;
  }

  void global_relabel(bool full) {
    std::vector<int> first;
    if (full) {
      ++counts_->full_relabels;
      std::fill(dirty_.begin(), dirty_.end(), 1);
      first = all_tiles();
    } else {
      for (int t = 0; t < tiles_; ++t) {
        if (dirty_[static_cast<std::size_t>(t)] != 0) first.push_back(t);
      }
    }
    std::vector<int> next = sweep(first, full, [&](int t, Writes& w) {
      bfs_visit(t, true, w);
      ++counts_->bfs_visits;
    });
    std::fill(dirty_.begin(), dirty_.end(), 0);
    ++counts_->bfs_phases;
    if (v_.queue == 0) {
      const int cap = uncapped_ ? 0 : cap_now_;
      uncapped_ = false;
      truncated_ = false;
      std::fill(graph_truncated_.begin(), graph_truncated_.end(), 0);
      int sweeps = 1;
      for (; !next.empty(); ++sweeps) {
        if (v_.cap_per_graph) {
          // A graph's tiles leave the relabel at its own cap.
          std::vector<int> kept;
          for (const int t : next) {
            const auto b = static_cast<std::size_t>(tile_graph_[static_cast<std::size_t>(t)]);
            if (graph_uncapped_[b] == 0 && graph_cap_[b] > 0 && sweeps >= graph_cap_[b]) {
              graph_truncated_[b] = 1;
              truncated_ = true;
            } else {
              kept.push_back(t);
            }
          }
          next = std::move(kept);
          if (next.empty()) break;
        } else if (cap > 0 && sweeps >= cap) {
          truncated_ = true;
          for (const int t : next) graph_truncated_[static_cast<std::size_t>(tile_graph_[static_cast<std::size_t>(t)])] = 1;
          break;
        }
        next = sweep(next, false, [&](int t, Writes& w) {
          bfs_visit(t, false, w);
          ++counts_->bfs_visits;
        });
        ++counts_->bfs_phases;
      }
      if (cap == 0 && fit_cap_) {
        cap_now_ = std::max(cap_now_, sweeps);
        fit_cap_ = false;
      }
      std::fill(graph_uncapped_.begin(), graph_uncapped_.end(), 0);
      if (c_.trace) std::printf("  relabel: %d sweeps%s\n", sweeps, truncated_ ? " (capped)" : "");
      return;
    }
    for (const int t : next) request(t);
    if (outstanding_ == 0) return;
    queued_phase(0, [&](int t, Writes& w) {
      bfs_visit(t, false, w);
      ++counts_->bfs_visits;
    });
    ++counts_->bfs_phases;
  }

  // Whether any pixel has excess and a finite label; queues (or lists) those tiles.
  std::vector<int> active_;
  bool check() {
    active_.clear();
    graph_active_.assign(static_cast<std::size_t>(graphs_), 0);
    int checked = 0;
    for (int t = 0; t < tiles_; ++t) {
      if (!visited(t)) continue;
      ++checked;
      const int x0 = (t % tiles_x_) * kTileW;
      const int y0 = (t / tiles_x_) * kTileH;
      bool act = false;
      for (int y = y0; y < std::min(H_, y0 + kTileH) && !act; ++y) {
        for (int x = x0; x < std::min(W_, x0 + kTileW); ++x) {
          const std::int64_t p = pix(x, y);
          if (excess_[p] > 0 && height_[p] < kInf) {
            act = true;
            break;
          }
        }
      }
      if (act) {
        active_.push_back(t);
        graph_active_[static_cast<std::size_t>(tile_graph_[static_cast<std::size_t>(t)])] = 1;
      }
    }
    const double per_block = c_.idle_visit * ((checked + c_.blocks - 1) / c_.blocks);
    counts_->time_us += per_block + c_.barrier;
    ++counts_->barriers;
    return !active_.empty();
  }

  void push_phase() {
    if (v_.queue == 0) {
      std::vector<int> list = active_;
      for (int i = 0; i < v_.push_visits && !list.empty(); ++i) {
        list = sweep_push(list);
        ++counts_->push_phases;
      }
      return;
    }
    std::fill(visits_.begin(), visits_.end(), 0);
    for (const int t : active_) request(t);
    queued_phase(v_.push_visits, [&](int t, Writes& w) {
      push_visit(t, w);
      ++counts_->push_visits;
    });
    ++counts_->push_phases;
  }

  std::vector<int> sweep_push(const std::vector<int>& list) {
    std::vector<int> again;
    std::vector<int> next = sweep(list, false, [&](int t, Writes& w) {
      push_visit(t, w);
      ++counts_->push_visits;
      if (w.again) again.push_back(t);
    });
    next.insert(next.end(), again.begin(), again.end());
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    return next;
  }
};

// ---------------------------------------------------------------- driver
struct Sequence {
  std::string name;
  std::vector<HostGridGraph> graphs;  // first solved cold, the others warm
  std::vector<int> tile_graph;        // a batch laid out in one grid: each tile's graph (-1: none)
  int batch = 1;
};

// The sequences of a batch as one sequence of grids: graph g of each sequence (its last
// where it has fewer) placed on shelves 4096 pixels wide, each graph at a tile corner
// and one empty tile between graphs, so that no tile holds two graphs and no arc joins
// them: the GPU's batch solve (one cap, one check, finished graphs retired), solved
// as one grid.
Sequence batch_of(const std::vector<Sequence>& items) {
  constexpr int kShelfTiles = 4096 / kTileW;
  struct Place {
    int tx, ty, tiles_x, tiles_y;  // first tile and extent, in tiles
  };
  std::vector<Place> at;
  int tx = 0, ty = 0, shelf_tiles = 0;
  for (const Sequence& s : items) {
    const int tiles_x = tiles_across(s.graphs[0].width, kTileW);
    const int tiles_y = tiles_across(s.graphs[0].height, kTileH);
    if (tx > 0 && tx + tiles_x > kShelfTiles) {
      ty += shelf_tiles + 1;
      tx = 0;
      shelf_tiles = 0;
    }
    at.push_back({tx, ty, tiles_x, tiles_y});
    tx += tiles_x + 1;
    shelf_tiles = std::max(shelf_tiles, tiles_y);
  }
  const int width = kShelfTiles * kTileW;
  const int height = (ty + shelf_tiles) * kTileH;
  std::size_t solves = 0;
  for (const Sequence& s : items) solves = std::max(solves, s.graphs.size());
  Sequence out;
  out.name = "batch of " + std::to_string(items.size());
  out.batch = static_cast<int>(items.size());
  out.tile_graph.assign(static_cast<std::size_t>(kShelfTiles) * static_cast<std::size_t>(ty + shelf_tiles), -1);
  for (std::size_t i = 0; i < items.size(); ++i) {
    for (int y = 0; y < at[i].tiles_y; ++y) {
      for (int x = 0; x < at[i].tiles_x; ++x) {
        out.tile_graph[static_cast<std::size_t>((at[i].ty + y) * kShelfTiles + at[i].tx + x)] = static_cast<int>(i);
      }
    }
  }
  for (std::size_t k = 0; k < solves; ++k) {
    HostGridGraph grid(height, width);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const HostGridGraph& g = items[i].graphs[std::min(k, items[i].graphs.size() - 1)];
      for (int yy = 0; yy < g.height; ++yy) {
        for (int xx = 0; xx < g.width; ++xx) {
          const std::size_t p = static_cast<std::size_t>(yy) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(xx);
          const std::size_t q = static_cast<std::size_t>(at[i].ty * kTileH + yy) * static_cast<std::size_t>(width) +
                                static_cast<std::size_t>(at[i].tx * kTileW + xx);
          grid.terminal[q] = g.terminal[p];
          for (int d = 0; d < 4; ++d) {
            if (g.has_neighbour(yy, xx, d)) grid.nlink[static_cast<std::size_t>(d)][q] = g.nlink[static_cast<std::size_t>(d)][p];
          }
        }
      }
    }
    out.graphs.push_back(std::move(grid));
  }
  return out;
}

std::vector<Sequence> synthetic(int side, unsigned seed) {
  Sequence s;
  s.name = "grabcut-like " + std::to_string(side);
  s.graphs.push_back(grabcut::testing::grabcut_graph(side, side, seed, {grabcut::testing::GrabCutScene::kSmoothScore}));
  HostGridGraph warm = s.graphs[0];
  std::mt19937 rng(seed + 1);
  std::normal_distribution<float> gauss(0.0f, 1500.0f);
  for (auto& t : warm.terminal) {
    if (t != -115200) t = static_cast<std::int32_t>(std::clamp(std::lround(static_cast<float>(t) + gauss(rng)), -115200L, 115200L));
  }
  s.graphs.push_back(std::move(warm));
  return {s};
}

Sequence from_image(const grabcut::testing::ListedImage& item) {
  const std::vector<std::uint8_t> planar = item.image.planar();
  const auto it = grabcut::testing::grabcut_iterations(planar.data(), item.image.height, item.image.width,
                                                       item.x0, item.y0, item.x1, item.y1);
  // The graphs are those of the library's loop only if it ends where grabcut_cpu does.
  std::vector<std::uint8_t> mask =
      grabcut::testing::box_labels(item.image.height, item.image.width, item.x0, item.y0, item.x1, item.y1);
  const grabcut::GrabCutOptions options;
  std::vector<double> model(static_cast<std::size_t>(2 * options.components * grabcut::kParamsPerComponent));
  grabcut::grabcut_cpu(planar.data(), item.image.height, item.image.width, mask.data(), model.data(), options);
  if (mask != it.mask) throw std::runtime_error(item.name + ": grabcut_iterations ends with another mask than grabcut_cpu");
  Sequence s;
  s.name = item.name;
  for (std::size_t i = 0; i < it.terminals.size(); ++i) s.graphs.push_back(it.graph(i));
  return s;
}

// from_image, or nothing (with a line saying why) where the box leaves a class empty.
std::optional<Sequence> sequence_of(const grabcut::testing::ListedImage& item) {
  try {
    return from_image(item);
  } catch (const std::invalid_argument& e) {
    std::printf("%-14s skipped: %s\n", item.name.c_str(), e.what());
    return std::nullopt;
  }
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: model_maxflow_tiles synthetic [SIDE [SEED]] | crops [N] | list FILE [COUNT] | batch FILE [COUNT] "
                 "[--variants a,b] [--trace] [--blocks B] [--read-delay US] [--scan-pass US] [--line-step US] "
                 "[--line-pass US]\n");
    return 2;
  }
  std::vector<std::string> pos;
  std::string variants_arg;
  Costs costs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--variants" && i + 1 < argc) {
      variants_arg = argv[++i];
    } else if (a == "--blocks" && i + 1 < argc) {
      costs.blocks = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--line-step" && i + 1 < argc) {
      costs.line_step = std::max(0.0, std::atof(argv[++i]));
    } else if (a == "--line-pass" && i + 1 < argc) {
      costs.line_pass = std::max(0.0, std::atof(argv[++i]));
    } else if (a == "--scan-pass" && i + 1 < argc) {
      costs.bfs_pass = std::max(0.0, std::atof(argv[++i]));
    } else if (a == "--trace") {
      costs.trace = true;
    } else if (a == "--read-delay" && i + 1 < argc) {
      costs.read_delay = std::max(0.0, std::atof(argv[++i]));
    } else {
      pos.push_back(a);
    }
  }
  std::vector<const Variant*> variants;
  for (const Variant& v : kVariants) {
    if (variants_arg.empty() || ("," + variants_arg + ",").find("," + std::string(v.name) + ",") != std::string::npos) {
      variants.push_back(&v);
    }
  }
  if (variants.empty()) throw std::invalid_argument("no such variant: " + variants_arg);

  const bool is_batch = pos[0] == "batch";
  const bool is_list = pos[0] == "list" || is_batch;
  std::vector<grabcut::testing::ListedImage> items;
  std::vector<Sequence> synth;
  std::size_t count = 1;
  if (is_list) {
    if (pos.size() < 2) throw std::invalid_argument("list: expected FILE");
    items = grabcut::testing::read_image_list(pos[1]);
    count = pos.size() > 2 ? std::min<std::size_t>(items.size(), std::stoul(pos[2])) : items.size();
    if (is_batch) {
      std::vector<Sequence> parts;
      for (std::size_t i = 0; i < count; ++i) {
        if (auto s = sequence_of(items[i])) parts.push_back(std::move(*s));
      }
      synth.push_back(batch_of(parts));
      count = 1;
    }
  } else if (pos[0] == "crops") {
    // bench_maxflow_cuda's crop-sized GrabCut-like graphs (the first N of its 512), one cold solve as one batch.
    const int n = pos.size() > 1 ? std::stoi(pos[1]) : 512;
    std::vector<Sequence> parts;
    std::mt19937 size_rng(5);
    std::uniform_int_distribution<int> side(60, 450);
    for (int i = 0; i < n; ++i) {
      const int h = side(size_rng);
      Sequence s;
      s.name = "crop " + std::to_string(i);
      s.graphs.push_back(grabcut::testing::grabcut_graph(h, side(size_rng), 1000U + static_cast<unsigned>(i)));
      parts.push_back(std::move(s));
    }
    synth.push_back(batch_of(parts));
  } else if (pos[0] == "synthetic") {
    synth = synthetic(pos.size() > 1 ? std::stoi(pos[1]) : 1024, pos.size() > 2 ? static_cast<unsigned>(std::stoul(pos[2])) : 34U);
  } else {
    throw std::invalid_argument("unknown mode " + pos[0]);
  }

  std::printf("model of the GPU max-flow: %d blocks; us per BFS visit %.1f + %.2f/step, push visit %.1f + %.1f/round, "
              "barrier %.1f, queued reads %.1f after the take; scan pass %.2f, line pass %.2f + %.2f/pixel\n",
              costs.blocks, costs.bfs_visit, costs.bfs_step, costs.push_visit, costs.push_round, costs.barrier,
              costs.read_delay, costs.bfs_pass, costs.line_pass, costs.line_step);
  std::printf("%-14s %-8s %5s | %8s %6s %6s %7s %9s %9s %9s %7s | %9s %7s %7s %7s\n", "graph", "variant", "solve",
              "rel/full", "bfsph", "pushph", "barrier", "bfsvisit", "pushvisit", "rounds", "capped", "model ms", "bfs",
              "check", "push");
  std::vector<std::vector<double>> totals(variants.size());
  std::vector<std::vector<double>> colds(variants.size());
  std::vector<std::vector<double>> warm_ratio(variants.size());
  std::vector<Counts> sums(variants.size());
  int failures = 0;
  for (std::size_t img = 0; img < count; ++img) {
    std::optional<Sequence> listed;
    if (is_list && !is_batch) {
      listed = sequence_of(items[img]);
      if (!listed) continue;
    }
    const Sequence& seq = listed ? *listed : synth[img];
    grabcut::GridMaxflowSolver reference;
    std::vector<std::vector<std::uint8_t>> expected;
    for (const auto& g : seq.graphs) {
      std::vector<std::uint8_t> cut(g.size());
      reference.solve(g.view(), cut.data());
      expected.push_back(std::move(cut));
    }
    for (std::size_t vi = 0; vi < variants.size(); ++vi) {
      TileModel model(*variants[vi], costs);
      if (!seq.tile_graph.empty()) model.set_graphs(seq.tile_graph, seq.batch);
      double total = 0;
      double cold = 0;
      double warm_sum = 0;
      for (std::size_t i = 0; i < seq.graphs.size(); ++i) {
        Counts c;
        const auto cut = model.solve(seq.graphs[i], i > 0 && variants[vi]->warm, c);
        if (cut != expected[i]) {
          std::printf("CUT MISMATCH: %s, variant %s, solve %zu\n", seq.name.c_str(), variants[vi]->name, i);
          ++failures;
        }
        const std::string relabels = std::to_string(c.relabels) + "/" + std::to_string(c.full_relabels) + "/" +
                                     std::to_string(c.short_caps);
        std::printf("%-14s %-8s %5s | %8s %6lld %6lld %7lld %9lld %9lld %9lld %7lld | %9.2f %7.2f %7.2f %7.2f\n",
                    seq.name.c_str(), variants[vi]->name, i == 0 ? "cold" : ("warm" + std::to_string(i)).c_str(),
                    relabels.c_str(), c.bfs_phases, c.push_phases, c.barriers, c.bfs_visits, c.push_visits, c.push_rounds,
                    c.capped_visits, c.time_us / 1000.0, c.bfs_us / 1000.0, c.check_us / 1000.0, c.push_us / 1000.0);
        std::fflush(stdout);
        total += c.time_us;
        if (i == 0) cold = c.time_us;
        else warm_sum += c.time_us;
        sums[vi] += c;
      }
      totals[vi].push_back(total / 1000.0);
      colds[vi].push_back(cold / 1000.0);
      if (seq.graphs.size() > 1) {
        warm_ratio[vi].push_back(warm_sum / static_cast<double>(seq.graphs.size() - 1) / cold);
      }
    }
  }
  std::printf("\nover %zu graph sequences (model ms: all solves of a sequence; cold: its first solve; warm/cold: mean warm solve over cold)\n",
              count);
  std::printf("%-8s | %8s %8s %8s | %8s %8s | %9s %9s | %9s %9s %9s %8s\n", "variant", "median", "p90", "max", "cold med",
              "cold max", "warm/cold", "wc max", "barriers", "bfsvisits", "pushvis", "barren%");
  for (std::size_t vi = 0; vi < variants.size(); ++vi) {
    const double barren = 100.0 * static_cast<double>(sums[vi].barren_rounds) /
                          static_cast<double>(std::max(1LL, sums[vi].push_rounds));
    std::printf("%-8s | %8.2f %8.2f %8.2f | %8.2f %8.2f | %9.2f %9.2f | %9lld %9lld %9lld %8.1f\n", variants[vi]->name,
                percentile(totals[vi], 0.5), percentile(totals[vi], 0.9), percentile(totals[vi], 1.0),
                percentile(colds[vi], 0.5), percentile(colds[vi], 1.0), percentile(warm_ratio[vi], 0.5),
                percentile(warm_ratio[vi], 1.0), sums[vi].barriers, sums[vi].bfs_visits, sums[vi].push_visits, barren);
  }
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
    std::fprintf(stderr, "model_maxflow_tiles: %s\n", e.what());
    return 2;
  }
}
