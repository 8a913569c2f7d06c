// A model of the GPU max-flow's schedule (csrc/cuda/maxflow.cu), run on the CPU: the
// same 32x16 tiles and per-tile steps (Jacobi BFS relaxation, synchronous push and
// relabel rounds) in the same phases (global relabels of grid-wide sweeps, capped at
// MaxflowSchedule::bfs_cap and doubling with grow_cap; a check; up to push_visits push
// sweeps), with finished graphs of a batch retired. It counts what the GPU solver
// would do (relabels, sweeps, tile visits, push rounds, grid barriers) and estimates
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
//   model_maxflow_tiles graphs FILE...               graph files (tests/common/graph_file.h,
//                        bench/mincut_bench.py --dump), each solved cold
//   options: --variants a,b,...  (default: all; see kVariants) --blocks B (264)
//            --push-round US (1.4): the cost of a push-relabel round, to compare
//            with model_region_discharge --cost-round
//            --trace: each global relabel's sweeps, before its solve's row
//
// What the model leaves out: memory traffic beyond the per-visit costs, and the order
// in which a sweep's atomics land (within a sweep every tile reads the state of the
// sweep's start, and their writes land at its end). On the 1024x1024 graph of
// `synthetic` its sweeps match the H200's counts within 5% (relabels, BFS and push
// sweeps, tiles relaxed and visited; bench/RESULTS.md, v0.9 model).
//
// The schedules of earlier designs that the solver no longer has (work queues, line
// passes and scans, partial relabels, in-tile region relabels, kept labels, per-graph
// caps: variants q2*, q0s, q0sl, q0p, *rr*, *dk, *f, *dl, *ds, *dg) and their options
// (--read-delay, --scan-pass, --line-step, --line-pass) are in git, where the commands
// of bench/RESULTS.md that name them still run: kEarlierModel below.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <queue>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/grabcut_graph.h"
#include "common/grabcut_iterations.h"
#include "common/graph_file.h"
#include "common/grid_graph.h"
#include "common/percentile.h"
#include "common/ppm_image.h"
#include "core/common.h"
#include "core/driver.h"
#include "core/maxflow.h"

namespace {

using grabcut::testing::HostGridGraph;
using grabcut::testing::percentile;

constexpr const char* kEarlierModel = "git show b16a252:bench/model_maxflow_tiles.cpp";

constexpr int kTileW = 32;
constexpr int kTileH = 16;
// Tiles of side `tile` that cover `pixels` pixels.
constexpr int tiles_across(int pixels, int tile) { return (pixels + tile - 1) / tile; }
constexpr int kPadW = kTileW + 2;
constexpr int kPadH = kTileH + 2;
constexpr int kPad = kPadW * kPadH;
constexpr int kThreads = kTileW * kTileH;
constexpr int kInf = 0x3fffffff;
constexpr int kMaxCap = 1 << 29;  // the GPU's cap stops doubling here

constexpr int dir_dy(int k) { return (k == 0 || k == 4) ? 0 : (k < 4 ? 1 : -1); }
constexpr int dir_dx(int k) { return (k == 0 || k == 1 || k == 7) ? 1 : ((k == 2 || k == 6) ? 0 : -1); }
// Pixel i of a tile (row-major, kTileW wide) in the padded tile, whose ring is the halo.
constexpr int padded(int i) { return (i / kTileW + 1) * kPadW + i % kTileW + 1; }
// The neighbour of pixel i in direction k inside the tile, or -1 where it is in the halo.
constexpr int inner_neighbour(int i, int k) {
  const int x = i % kTileW + dir_dx(k);
  const int y = i / kTileW + dir_dy(k);
  return (x >= 0 && x < kTileW && y >= 0 && y < kTileH) ? y * kTileW + x : -1;
}

// A schedule of the GPU solver: the fields of MaxflowSchedule, and whether later graphs
// of a sequence start from the last flow.
struct Variant {
  const char* name;
  int push_visits;   // push sweeps between global relabels
  int local_rounds;  // push-relabel rounds per visit
  int bfs_cap;       // a global relabel stops after this many BFS sweeps (0: never)
  bool grow_cap;     // the cap doubles for the rest of a solve where it proved too short
  bool warm;         // later graphs of a sequence start from the last flow (else cold)
};

// The names keep the keys of the earlier model's table (q0: grid-wide sweeps; cN: the
// cap; rN: rounds per visit, 24 where absent; vN: push sweeps, 8 where absent; d: the
// doubling cap), so that the commands of bench/RESULTS.md still run.
const Variant kVariants[] = {
    {"q0", 8, 24, 0, false, true},  // v0.7
    {"q0cold", 8, 24, 0, false, false},  // every iteration from zero flow
    {"q0c6", 8, 24, 6, false, true},
    {"q0c8", 8, 24, 8, false, true},
    {"q0c10", 8, 24, 10, false, true},
    {"q0c12", 8, 24, 12, false, true},
    {"q0c16", 8, 24, 16, false, true},
    {"q0c20", 8, 24, 20, false, true},
    {"q0c24", 8, 24, 24, false, true},
    // Capped relabels are cheaper: relabel more or less often, with shorter or longer visits.
    {"q0c8v4", 4, 24, 8, false, true},
    {"q0c12v4", 4, 24, 12, false, true},
    {"q0c12v6", 6, 24, 12, false, true},
    {"q0c12v12", 12, 24, 12, false, true},
    {"q0c12r12", 8, 12, 12, false, true},  // v0.13
    {"q0c12r48", 8, 48, 12, false, true},
    {"q0c12r8", 8, 8, 12, false, true},
    {"q0c12r6", 8, 6, 12, false, true},
    {"q0c8r12", 8, 12, 8, false, true},
    {"q0c16r12", 8, 12, 16, false, true},
    // A cap that doubles where it proved too short.
    {"q0c12r12d", 8, 12, 12, true, true},  // v0.13b, the library's default (MaxflowSchedule{})
    {"q0c8r12d", 8, 12, 8, true, true},
    {"q0c12r12dv4", 4, 12, 12, true, true},
    {"q0c12r12dv6", 6, 12, 12, true, true},
    {"q0c12r12dv12", 12, 12, 12, true, true},
    {"q0c12r12dv16", 16, 12, 12, true, true},
    {"q0c12r8d", 8, 8, 12, true, true},
    {"q0c12r16d", 8, 16, 12, true, true},
    {"q0c12r256d", 8, 256, 12, true, true},  // tiles discharged towards exhaustion
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
  double barrier = 3.0;
  bool trace = false;  // --trace: each relabel's sweeps, before its solve's row
};

struct Counts {
  long long relabels = 0, capped_relabels = 0, short_caps = 0;  // short: its check found nothing to push
  long long bfs_sweeps = 0, push_sweeps = 0, barriers = 0;
  long long bfs_visits = 0, push_visits = 0, push_rounds = 0, capped_visits = 0;
  double time_us = 0;
  double bfs_us = 0, check_us = 0, push_us = 0;  // time_us by phase

  Counts& operator+=(const Counts& o) {
    relabels += o.relabels;
    capped_relabels += o.capped_relabels;
    short_caps += o.short_caps;
    bfs_sweeps += o.bfs_sweeps;
    push_sweeps += o.push_sweeps;
    barriers += o.barriers;
    bfs_visits += o.bfs_visits;
    push_visits += o.push_visits;
    push_rounds += o.push_rounds;
    capped_visits += o.capped_visits;
    time_us += o.time_us;
    bfs_us += o.bfs_us;
    check_us += o.check_us;
    push_us += o.push_us;
    return *this;
  }
};

// What one tile visit changes, applied when its sweep ends.
struct Writes {
  std::vector<std::pair<std::int64_t, long long>> excess;  // pixel, delta
  std::vector<std::pair<std::int64_t, int>> flow;          // 4 * pixel + d, delta
  std::vector<std::pair<std::int64_t, int>> height;        // pixel, new label
  std::vector<int> requests;                               // tiles for the next sweep
  bool again = false;                                      // lists itself for the next sweep
  double cost = 0;
};

// A push visit's tile in shared memory: its pixels' excess and residual arcs, the
// labels of the tile and its halo, and what its pushes sent (inbox); the *0 copies are
// the state loaded, for the write-back of deltas.
struct PushTile {
  std::array<bool, kThreads> valid{};
  std::array<long long, kThreads> ex{}, ex0{};
  std::array<std::array<unsigned, 8>, kThreads> res{}, res0{};
  std::array<int, kPad> lab{}, lab0{};
  std::array<long long, kPad> inbox{};
};

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
      const int me = padded(i);
      int d = lab[me];
      for (int k = 0; k < 8; ++k) {
        if (mask[i] & (1U << k)) d = std::min(d, lab[me + dir_dy(k) * kPadW + dir_dx(k)] + 1);
      }
      if (d < lab[me]) {
        next[me] = d;
        moved.push_back(i);
      }
    }
    for (const int i : moved) lab[padded(i)] = next[padded(i)];
    if (moved.empty()) break;
    changed = true;
    // The next step re-evaluates the relaxing pixels with a residual arc into a pixel that moved.
    frontier.clear();
    for (const int i : moved) {
      for (int k = 0; k < 8; ++k) {
        const int j = inner_neighbour(i, k);
        if (j < 0 || !relaxes[j] || !(mask[j] & (1U << (k ^ 4))) || stamp[j] == steps) continue;
        stamp[j] = steps;
        frontier.push_back(j);
      }
    }
  }
  return steps;
}

// One synchronous push step: every active pixel pushes to its strictly lower residual
// neighbours; what it sends waits in the inbox. Adds the pixels that received to touched.
void push_step(PushTile& s, const std::vector<int>& active, std::vector<int>& touched, std::array<int, kThreads>& seen,
               int stamp) {
  for (const int i : active) {
    const int me = padded(i);
    const int hm = s.lab[me];
    long long left = s.ex[i];
    for (int k = 0; k < 8 && left > 0; ++k) {
      const int nb = me + dir_dy(k) * kPadW + dir_dx(k);
      const unsigned r = s.res[i][k];
      if (s.lab[nb] >= hm || r == 0U) continue;
      const long long amount = std::min<long long>(left, r);
      s.res[i][k] = r - static_cast<unsigned>(amount);
      const int j = inner_neighbour(i, k);
      if (j >= 0) {
        s.res[j][k ^ 4] += static_cast<unsigned>(amount);
        if (seen[j] != stamp) {
          seen[j] = stamp;
          touched.push_back(j);
        }
      }
      s.inbox[nb] += amount;
      left -= amount;
    }
    s.ex[i] = left;
  }
}

// The relabel step that follows: the touched pixels take in their inbox, and those
// still active rise to 1 + their lowest residual neighbour (from the labels the push
// saw) where no neighbour is lower. Returns the pixels active for the next round.
std::vector<int> relabel_step(PushTile& s, const std::vector<int>& touched) {
  std::vector<std::pair<int, int>> relabelled;
  for (const int i : touched) {
    const int me = padded(i);
    s.ex[i] += s.inbox[me];
    s.inbox[me] = 0;
    const int hm = s.lab[me];
    if (s.ex[i] <= 0 || hm >= kInf) continue;
    int m = kInf;
    for (int k = 0; k < 8; ++k) {
      if (s.res[i][k] != 0U) m = std::min(m, s.lab[me + dir_dy(k) * kPadW + dir_dx(k)]);
    }
    if (m >= hm) relabelled.emplace_back(me, m >= kInf - 1 ? kInf : m + 1);
  }
  for (const auto& [me, h] : relabelled) s.lab[me] = h;
  std::vector<int> active;
  for (const int i : touched) {
    if (s.ex[i] > 0 && s.lab[padded(i)] < kInf) active.push_back(i);
  }
  std::sort(active.begin(), active.end());  // the order of the pixels' threads
  return active;
}

// Up to `rounds` push and relabel rounds on the tile; returns the rounds run, and in
// `capped` whether the tile still had active pixels after the last of them.
int push_rounds(PushTile& s, int rounds, bool& capped) {
  std::vector<int> active;
  for (int i = 0; i < kThreads; ++i) {
    if (s.valid[i] && s.ex[i] > 0 && s.lab[padded(i)] < kInf) active.push_back(i);
  }
  std::array<int, kThreads> seen{};
  int round = 0;
  for (; round < rounds; ++round) {
    const int stamp = round + 1;
    std::vector<int> touched = active;  // only these can change in the round
    for (const int i : active) seen[i] = stamp;
    push_step(s, active, touched, seen, stamp);
    active = relabel_step(s, touched);
    if (active.empty()) break;
  }
  capped = round == rounds;
  return std::min(round + 1, rounds);
}

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
    setup(g, warm);
    for (;;) {
      double start = counts.time_us;
      global_relabel();
      counts.bfs_us += counts.time_us - start;
      start = counts.time_us;
      const bool active = check();
      counts.check_us += counts.time_us - start;
      retire_finished_graphs();
      if (!active) {
        if (!truncated_) break;
        // The relabel stopped at its cap and left pixels unlabelled: a whole one decides.
        ++counts.short_caps;
        uncapped_ = true;
        if (v_.grow_cap && cap_ < kMaxCap) cap_ *= 2;
        continue;
      }
      start = counts.time_us;
      push_phase();
      counts.push_us += counts.time_us - start;
      if (counts.push_visits > 50'000'000) throw std::runtime_error("model: no progress");
    }
    std::vector<std::uint8_t> cut(static_cast<std::size_t>(n_));
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
  std::vector<std::uint8_t> resmask_;  // residual arcs, written by a relabel's first sweep
  int cap_ = 0;             // the cap of the next capped relabel
  bool truncated_ = false;  // the last relabel stopped at the cap
  bool uncapped_ = false;   // the next relabel runs to the end
  std::vector<int> active_;  // the tiles the last check found active
  // Graphs of a batch (set_graphs): each tile's graph, which graphs are still solving,
  // and, after the last relabel and check, which had pixels left unlabelled or active.
  std::vector<int> tile_graph_;
  int graphs_ = 1;
  std::vector<char> live_, graph_truncated_, graph_active_;

  int graph_of(int t) const { return tile_graph_[static_cast<std::size_t>(t)]; }
  bool visited(int t) const { return graph_of(t) >= 0 && live_[static_cast<std::size_t>(graph_of(t))] != 0; }
  bool in_grid(int x, int y) const { return x >= 0 && y >= 0 && x < W_ && y < H_; }
  std::int64_t pix(int x, int y) const { return static_cast<std::int64_t>(y) * W_ + x; }
  int tile_x0(int t) const { return (t % tiles_x_) * kTileW; }
  int tile_y0(int t) const { return (t / tiles_x_) * kTileH; }

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

  // The GPU's init phase (cold: flow 0, excess = terminals; warm: excess += the change
  // of the terminals), and a fresh cap and set of live graphs.
  void setup(const HostGridGraph& g, bool warm) {
    const bool same = g_ != nullptr && warm && H_ == g.height && W_ == g.width;
    g_ = &g;
    H_ = g.height;
    W_ = g.width;
    n_ = static_cast<std::int64_t>(H_) * W_;
    tiles_x_ = tiles_across(W_, kTileW);
    tiles_y_ = tiles_across(H_, kTileH);
    tiles_ = tiles_x_ * tiles_y_;
    if (!same) {
      excess_.assign(g.terminal.begin(), g.terminal.end());
      flow_.assign(static_cast<std::size_t>(4 * n_), 0);
      height_.assign(static_cast<std::size_t>(n_), kInf);
    } else {
      for (std::int64_t p = 0; p < n_; ++p) excess_[p] += static_cast<long long>(g.terminal[p]) - old_term_[p];
    }
    old_term_ = g.terminal;
    resmask_.assign(static_cast<std::size_t>(n_), 0);
    if (tile_graph_.size() != static_cast<std::size_t>(tiles_)) {
      tile_graph_.assign(static_cast<std::size_t>(tiles_), 0);
      graphs_ = 1;
    }
    live_.assign(static_cast<std::size_t>(graphs_), 1);
    graph_truncated_.assign(static_cast<std::size_t>(graphs_), 0);
    cap_ = v_.bfs_cap;  // each solve starts from the schedule's cap
    truncated_ = uncapped_ = false;
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
        const int nx = tx + dx;
        const int ny = ty + dy;
        if ((dx != 0 || dy != 0) && nx >= 0 && ny >= 0 && nx < tiles_x_ && ny < tiles_y_) {
          out.push_back(ny * tiles_x_ + nx);
        }
      }
    }
  }

  // ------------------------------------------------------------ tile visits
  // bfs_tile: relaxes tile t to local stability (first: from the sinks, writing the
  // residual masks; otherwise from the current labels). A tile that changed lists
  // itself and its neighbours for the next sweep.
  void bfs_visit(int t, bool first, Writes& w) {
    const int x0 = tile_x0(t);
    const int y0 = tile_y0(t);
    std::array<int, kPad> lab;
    for (int py = 0; py < kPadH; ++py) {
      for (int px = 0; px < kPadW; ++px) {
        const int gx = x0 + px - 1;
        const int gy = y0 + py - 1;
        int h = kInf;
        if (in_grid(gx, gy)) h = first ? (excess_[pix(gx, gy)] < 0 ? 0 : kInf) : height_[pix(gx, gy)];
        lab[py * kPadW + px] = h;
      }
    }
    std::array<std::uint8_t, kThreads> mask{};
    std::array<bool, kThreads> relaxes{};
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
      relaxes[i] = lab[padded(i)] != 0 && mask[i] != 0;
    }
    bool changed = false;
    const int steps = jacobi(lab, mask, relaxes, changed);
    for (int i = 0; i < kThreads; ++i) {
      const int x = x0 + i % kTileW;
      const int y = y0 + i / kTileW;
      if (in_grid(x, y) && (first || lab[padded(i)] != height_[pix(x, y)])) {
        w.height.emplace_back(pix(x, y), lab[padded(i)]);
      }
    }
    if (changed) {
      neighbours_of_tile(t, w.requests);
      w.requests.push_back(t);
    }
    w.cost = c_.bfs_visit + c_.bfs_step * steps;
  }

  // Loads tile t into s; returns whether it has a pixel to push from.
  bool load_push_tile(int t, PushTile& s) const {
    const int x0 = tile_x0(t);
    const int y0 = tile_y0(t);
    for (int py = 0; py < kPadH; ++py) {
      for (int px = 0; px < kPadW; ++px) {
        const int gx = x0 + px - 1;
        const int gy = y0 + py - 1;
        s.lab[py * kPadW + px] = in_grid(gx, gy) ? height_[pix(gx, gy)] : kInf;
      }
    }
    s.lab0 = s.lab;
    bool any = false;
    for (int i = 0; i < kThreads; ++i) {
      const int x = x0 + i % kTileW;
      const int y = y0 + i / kTileW;
      s.valid[i] = in_grid(x, y);
      if (!s.valid[i]) continue;
      s.ex[i] = s.ex0[i] = excess_[pix(x, y)];
      any = any || (s.ex[i] > 0 && s.lab[padded(i)] < kInf);
    }
    if (!any) return false;
    for (int i = 0; i < kThreads; ++i) {
      if (!s.valid[i]) continue;
      for (int k = 0; k < 8; ++k) s.res[i][k] = s.res0[i][k] = residual(x0 + i % kTileW, y0 + i / kTileW, k);
    }
    return true;
  }

  // The visit's deltas of the tile's own pixels (excess, labels, flows); returns
  // whether a pixel is still active.
  bool write_back_pixels(int t, const PushTile& s, Writes& w) const {
    bool remain = false;
    for (int i = 0; i < kThreads; ++i) {
      if (!s.valid[i]) continue;
      const int x = tile_x0(t) + i % kTileW;
      const int y = tile_y0(t) + i / kTileW;
      const std::int64_t p = pix(x, y);
      const int me = padded(i);
      if (s.ex[i] != s.ex0[i]) w.excess.emplace_back(p, s.ex[i] - s.ex0[i]);
      if (s.lab[me] != s.lab0[me]) w.height.emplace_back(p, s.lab[me]);
      for (int k = 0; k < 8; ++k) {
        if (s.res[i][k] == s.res0[i][k]) continue;
        if (k < 4) {
          w.flow.emplace_back(4 * p + k, static_cast<int>(s.res0[i][k] - s.res[i][k]));
        } else if (inner_neighbour(i, k) < 0) {  // inside the tile, the neighbour writes it as its forward arc
          w.flow.emplace_back(4 * pix(x + dir_dx(k), y + dir_dy(k)) + (k - 4), static_cast<int>(s.res[i][k] - s.res0[i][k]));
        }
      }
      remain = remain || (s.ex[i] > 0 && s.lab[me] < kInf);
    }
    return remain;
  }

  // What the visit pushed into the halo: the neighbouring tiles' excess, and those
  // tiles listed for the next sweep.
  void write_back_halo(int t, const PushTile& s, Writes& w) const {
    const int tx = t % tiles_x_;
    const int ty = t / tiles_x_;
    for (int py = 0; py < kPadH; ++py) {
      for (int px = 0; px < kPadW; ++px) {
        const bool interior = py >= 1 && py <= kTileH && px >= 1 && px <= kTileW;
        const long long v = s.inbox[py * kPadW + px];
        if (interior || v == 0) continue;
        w.excess.emplace_back(pix(tile_x0(t) + px - 1, tile_y0(t) + py - 1), v);
        const int ntx = tx + (px == 0 ? -1 : (px == kPadW - 1 ? 1 : 0));
        const int nty = ty + (py == 0 ? -1 : (py == kPadH - 1 ? 1 : 0));
        w.requests.push_back(nty * tiles_x_ + ntx);
      }
    }
    std::sort(w.requests.begin(), w.requests.end());
    w.requests.erase(std::unique(w.requests.begin(), w.requests.end()), w.requests.end());
  }

  // push_tile: up to local_rounds synchronous push and relabel rounds on tile t.
  void push_visit(int t, Writes& w) {
    PushTile s;
    if (!load_push_tile(t, s)) {
      w.cost = c_.idle_visit;
      return;
    }
    bool capped = false;
    const int rounds = push_rounds(s, v_.local_rounds, capped);
    counts_->push_rounds += rounds;
    if (capped) ++counts_->capped_visits;
    w.again = write_back_pixels(t, s, w);
    write_back_halo(t, s, w);
    w.cost = c_.push_visit + c_.push_round * rounds;
  }

  // ------------------------------------------------------------ phases
  // A grid-wide sweep over `tiles`: every tile reads the state of the sweep's start, and
  // blocks take tiles in list order as they free up (or statically: t % blocks). Returns
  // the tiles the visits listed for the next sweep.
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
        end = block[static_cast<std::size_t>(tiles[i] % c_.blocks)] += writes[i].cost;
      } else {
        const auto [at, b] = free_at.top();
        free_at.pop();
        end = at + writes[i].cost;
        free_at.emplace(end, b);
      }
      longest = std::max(longest, end);
    }
    std::vector<int> next;
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      apply(writes[i]);
      for (const int r : writes[i].requests) {
        if (visited(r)) next.push_back(r);
      }
      if (writes[i].again) next.push_back(tiles[i]);
    }
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    counts_->time_us += longest + c_.barrier;
    ++counts_->barriers;
    return next;
  }

  // Exact labels from the sinks over the live graphs' tiles, or their first cap_
  // sweeps: a first sweep over every tile (shared statically, as sweep_tiles does),
  // then sweeps over the tiles the last one listed.
  void global_relabel() {
    ++counts_->relabels;
    std::vector<int> all;
    for (int t = 0; t < tiles_; ++t) {
      if (visited(t)) all.push_back(t);
    }
    const auto relax = [&](bool first) {
      return [this, first](int t, Writes& w) {
        bfs_visit(t, first, w);
        ++counts_->bfs_visits;
      };
    };
    std::vector<int> next = sweep(all, true, relax(true));
    ++counts_->bfs_sweeps;
    const int cap = uncapped_ ? 0 : cap_;
    uncapped_ = truncated_ = false;
    std::fill(graph_truncated_.begin(), graph_truncated_.end(), 0);
    int sweeps = 1;
    for (; !next.empty(); ++sweeps) {
      if (cap > 0 && sweeps >= cap) {
        truncated_ = true;
        ++counts_->capped_relabels;
        for (const int t : next) graph_truncated_[static_cast<std::size_t>(graph_of(t))] = 1;
        break;
      }
      next = sweep(next, false, relax(false));
      ++counts_->bfs_sweeps;
    }
    if (c_.trace) std::printf("  relabel: %d sweeps%s\n", sweeps, truncated_ ? " (capped)" : "");
  }

  // Whether any pixel has excess and a finite label; lists those tiles, and marks their graphs.
  bool check() {
    active_.clear();
    graph_active_.assign(static_cast<std::size_t>(graphs_), 0);
    int checked = 0;
    for (int t = 0; t < tiles_; ++t) {
      if (!visited(t)) continue;
      ++checked;
      bool act = false;
      for (int y = tile_y0(t); y < std::min(H_, tile_y0(t) + kTileH) && !act; ++y) {
        for (int x = tile_x0(t); x < std::min(W_, tile_x0(t) + kTileW) && !act; ++x) {
          act = excess_[pix(x, y)] > 0 && height_[pix(x, y)] < kInf;
        }
      }
      if (act) {
        active_.push_back(t);
        graph_active_[static_cast<std::size_t>(graph_of(t))] = 1;
      }
    }
    const double per_block = c_.idle_visit * ((checked + c_.blocks - 1) / c_.blocks);
    counts_->time_us += per_block + c_.barrier;
    ++counts_->barriers;
    return !active_.empty();
  }

  // A graph with nothing to push whose relabel reached all of it is finished: its
  // tiles leave every later sweep and check.
  void retire_finished_graphs() {
    for (std::size_t b = 0; b < live_.size(); ++b) {
      if (graph_active_[b] == 0 && graph_truncated_[b] == 0) live_[b] = 0;
    }
  }

  // Up to push_visits push sweeps, from the checked tiles; a tile is listed again by
  // its own visit (pixels still active) or a neighbour's push into it.
  void push_phase() {
    std::vector<int> list = active_;
    for (int i = 0; i < v_.push_visits && !list.empty(); ++i) {
      list = sweep(list, false, [&](int t, Writes& w) {
        push_visit(t, w);
        ++counts_->push_visits;
      });
      ++counts_->push_sweeps;
    }
  }
};

// ---------------------------------------------------------------- graphs
struct Sequence {
  std::string name;
  std::vector<HostGridGraph> graphs;  // first solved cold, the others warm
  std::vector<int> tile_graph;        // a batch laid out in one grid: each tile's graph (-1: none)
  int batch = 1;
};

// Where batch_of puts a graph: its first tile and its extent, in tiles.
struct Place {
  int tx, ty, tiles_x, tiles_y;
};
constexpr int kShelfTiles = 4096 / kTileW;

// Graphs on shelves 4096 pixels wide, each at a tile corner with one empty tile
// between graphs, so that no tile holds two graphs and no arc joins them. Returns the
// places and sets the grid's height in tiles.
std::vector<Place> shelve(const std::vector<Sequence>& items, int& tiles_y) {
  std::vector<Place> at;
  int tx = 0, ty = 0, shelf_tiles = 0;
  for (const Sequence& s : items) {
    const int tiles_x = tiles_across(s.graphs[0].width, kTileW);
    const int tiles_high = tiles_across(s.graphs[0].height, kTileH);
    if (tx > 0 && tx + tiles_x > kShelfTiles) {
      ty += shelf_tiles + 1;
      tx = 0;
      shelf_tiles = 0;
    }
    at.push_back({tx, ty, tiles_x, tiles_high});
    tx += tiles_x + 1;
    shelf_tiles = std::max(shelf_tiles, tiles_high);
  }
  tiles_y = ty + shelf_tiles;
  return at;
}

// Graph g copied into the grid at its place.
void place_graph(const HostGridGraph& g, const Place& at, HostGridGraph& grid) {
  for (int yy = 0; yy < g.height; ++yy) {
    for (int xx = 0; xx < g.width; ++xx) {
      const std::size_t p = static_cast<std::size_t>(yy) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(xx);
      const std::size_t q = static_cast<std::size_t>(at.ty * kTileH + yy) * static_cast<std::size_t>(grid.width) +
                            static_cast<std::size_t>(at.tx * kTileW + xx);
      grid.terminal[q] = g.terminal[p];
      for (int d = 0; d < 4; ++d) {
        if (g.has_neighbour(yy, xx, d)) grid.nlink[static_cast<std::size_t>(d)][q] = g.nlink[static_cast<std::size_t>(d)][p];
      }
    }
  }
}

// The sequences of a batch as one sequence of grids: graph k of each sequence (its last
// where it has fewer), shelved: the GPU's batch solve (one cap, one check, finished
// graphs retired), solved as one grid.
Sequence batch_of(const std::vector<Sequence>& items) {
  int tiles_y = 0;
  const std::vector<Place> at = shelve(items, tiles_y);
  std::size_t solves = 0;
  for (const Sequence& s : items) solves = std::max(solves, s.graphs.size());
  Sequence out;
  out.name = "batch of " + std::to_string(items.size());
  out.batch = static_cast<int>(items.size());
  out.tile_graph.assign(static_cast<std::size_t>(kShelfTiles) * static_cast<std::size_t>(tiles_y), -1);
  for (std::size_t i = 0; i < items.size(); ++i) {
    for (int y = 0; y < at[i].tiles_y; ++y) {
      for (int x = 0; x < at[i].tiles_x; ++x) {
        out.tile_graph[static_cast<std::size_t>((at[i].ty + y) * kShelfTiles + at[i].tx + x)] = static_cast<int>(i);
      }
    }
  }
  for (std::size_t k = 0; k < solves; ++k) {
    HostGridGraph grid(tiles_y * kTileH, kShelfTiles * kTileW);
    for (std::size_t i = 0; i < items.size(); ++i) {
      place_graph(items[i].graphs[std::min(k, items[i].graphs.size() - 1)], at[i], grid);
    }
    out.graphs.push_back(std::move(grid));
  }
  return out;
}

Sequence synthetic(int side, unsigned seed) {
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
  return s;
}

// bench_maxflow_cuda's crop-sized GrabCut-like graphs (the first n of its 512), one cold solve as one batch.
Sequence crops(int n) {
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
  return batch_of(parts);
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

// ---------------------------------------------------------------- command line
struct Options {
  std::vector<std::string> pos;  // the mode and its arguments
  std::vector<const Variant*> variants;
  Costs costs;
};

// The variants named in `names` (comma-separated; empty: all).
std::vector<const Variant*> select_variants(const std::string& names) {
  std::vector<const Variant*> out;
  if (names.empty()) {
    for (const Variant& v : kVariants) out.push_back(&v);
    return out;
  }
  for (std::size_t at = 0; at <= names.size();) {
    const std::size_t end = std::min(names.find(',', at), names.size());
    const std::string name = names.substr(at, end - at);
    const auto it = std::find_if(std::begin(kVariants), std::end(kVariants), [&](const Variant& v) { return name == v.name; });
    if (it == std::end(kVariants)) {
      throw std::invalid_argument("no variant " + name + " (a schedule of an earlier design is in " + kEarlierModel + ")");
    }
    out.push_back(&*it);
    at = end + 1;
  }
  return out;
}

Options parse_options(int argc, char** argv) {
  Options o;
  std::string variants;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--variants" && i + 1 < argc) {
      variants = argv[++i];
    } else if (a == "--blocks" && i + 1 < argc) {
      o.costs.blocks = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--push-round" && i + 1 < argc) {
      o.costs.push_round = std::stod(argv[++i]);
    } else if (a == "--trace") {
      o.costs.trace = true;
    } else if (a == "--read-delay" || a == "--scan-pass" || a == "--line-step" || a == "--line-pass") {
      throw std::invalid_argument(a + ": a cost of an earlier design's schedule (" + kEarlierModel + ")");
    } else if (a.rfind("--", 0) == 0) {
      throw std::invalid_argument("unknown option " + a);
    } else {
      o.pos.push_back(a);
    }
  }
  o.variants = select_variants(variants);
  return o;
}

// What a mode solves: the sequences, each read only when its turn comes for a list.
struct Workload {
  std::vector<grabcut::testing::ListedImage> items;  // list mode: one sequence per image
  std::vector<Sequence> sequences;                   // the other modes
  std::size_t count() const { return items.empty() ? sequences.size() : items.size(); }
};

Workload load_workload(const std::vector<std::string>& pos) {
  Workload w;
  const std::string& mode = pos[0];
  if (mode == "list" || mode == "batch") {
    if (pos.size() < 2) throw std::invalid_argument(mode + ": expected FILE");
    std::vector<grabcut::testing::ListedImage> items = grabcut::testing::read_image_list(pos[1]);
    if (pos.size() > 2) items.resize(std::min<std::size_t>(items.size(), std::stoul(pos[2])));
    if (mode == "list") {
      w.items = std::move(items);
      return w;
    }
    std::vector<Sequence> parts;
    for (const auto& item : items) {
      if (auto s = sequence_of(item)) parts.push_back(std::move(*s));
    }
    w.sequences.push_back(batch_of(parts));
  } else if (mode == "crops") {
    w.sequences.push_back(crops(pos.size() > 1 ? std::stoi(pos[1]) : 512));
  } else if (mode == "graphs") {
    // Each file one graph, solved cold (bench/mincut_bench.py --dump writes them).
    for (std::size_t i = 1; i < pos.size(); ++i) {
      Sequence seq;
      seq.name = pos[i].substr(pos[i].find_last_of('/') + 1);
      seq.graphs.push_back(grabcut::testing::read_graph_file(pos[i]));
      w.sequences.push_back(std::move(seq));
    }
  } else if (mode == "synthetic") {
    const int side = pos.size() > 1 ? std::stoi(pos[1]) : 1024;
    w.sequences.push_back(synthetic(side, pos.size() > 2 ? static_cast<unsigned>(std::stoul(pos[2])) : 34U));
  } else {
    throw std::invalid_argument("unknown mode " + mode);
  }
  return w;
}

// ---------------------------------------------------------------- report
// Per variant: each sequence's model time (all its solves), its cold solve, and its
// mean warm solve over the cold one; the counts summed over all.
struct Tally {
  std::vector<double> totals, colds, warm_ratio;
  Counts sums;
};

void print_header(const Costs& costs) {
  std::printf("model of the GPU max-flow: %d blocks; us per BFS visit %.1f + %.2f/step, push visit %.1f + %.1f/round, "
              "barrier %.1f\n",
              costs.blocks, costs.bfs_visit, costs.bfs_step, costs.push_visit, costs.push_round, costs.barrier);
  std::printf("%-14s %-8s %5s | %11s %6s %6s %7s %9s %9s %9s %7s | %9s %7s %7s %7s\n", "graph", "variant", "solve",
              "rel/cap/sh", "bfssw", "pushsw", "barrier", "bfsvisit", "pushvisit", "rounds", "capped", "model ms", "bfs",
              "check", "push");
}

void print_solve(const Sequence& seq, const Variant& v, std::size_t i, const Counts& c) {
  const std::string relabels =
      std::to_string(c.relabels) + "/" + std::to_string(c.capped_relabels) + "/" + std::to_string(c.short_caps);
  std::printf("%-14s %-8s %5s | %11s %6lld %6lld %7lld %9lld %9lld %9lld %7lld | %9.2f %7.2f %7.2f %7.2f\n",
              seq.name.c_str(), v.name, i == 0 ? "cold" : ("warm" + std::to_string(i)).c_str(), relabels.c_str(),
              c.bfs_sweeps, c.push_sweeps, c.barriers, c.bfs_visits, c.push_visits, c.push_rounds, c.capped_visits,
              c.time_us / 1000.0, c.bfs_us / 1000.0, c.check_us / 1000.0, c.push_us / 1000.0);
  std::fflush(stdout);
}

void print_summary(const std::vector<const Variant*>& variants, const std::vector<Tally>& tallies, std::size_t count) {
  std::printf("\nover %zu graph sequences (model ms: all solves of a sequence; cold: its first solve; warm/cold: mean "
              "warm solve over cold)\n",
              count);
  std::printf("%-8s | %8s %8s %8s | %8s %8s | %9s %9s | %9s %9s %9s\n", "variant", "median", "p90", "max", "cold med",
              "cold max", "warm/cold", "wc max", "barriers", "bfsvisits", "pushvis");
  for (std::size_t vi = 0; vi < variants.size(); ++vi) {
    const Tally& t = tallies[vi];
    std::printf("%-8s | %8.2f %8.2f %8.2f | %8.2f %8.2f | %9.2f %9.2f | %9lld %9lld %9lld\n", variants[vi]->name,
                percentile(t.totals, 0.5), percentile(t.totals, 0.9), percentile(t.totals, 1.0),
                percentile(t.colds, 0.5), percentile(t.colds, 1.0), percentile(t.warm_ratio, 0.5),
                percentile(t.warm_ratio, 1.0), t.sums.barriers, t.sums.bfs_visits, t.sums.push_visits);
  }
}

// ---------------------------------------------------------------- driver
// Every solve of seq under variant v, each cut checked against `expected`; returns the mismatches.
int model_sequence(const Sequence& seq, const Variant& v, const Costs& costs,
                   const std::vector<std::vector<std::uint8_t>>& expected, Tally& tally) {
  TileModel model(v, costs);
  if (!seq.tile_graph.empty()) model.set_graphs(seq.tile_graph, seq.batch);
  int failures = 0;
  double total = 0, cold = 0, warm_sum = 0;
  for (std::size_t i = 0; i < seq.graphs.size(); ++i) {
    Counts c;
    if (model.solve(seq.graphs[i], i > 0 && v.warm, c) != expected[i]) {
      std::printf("CUT MISMATCH: %s, variant %s, solve %zu\n", seq.name.c_str(), v.name, i);
      ++failures;
    }
    print_solve(seq, v, i, c);
    total += c.time_us;
    (i == 0 ? cold : warm_sum) += c.time_us;
    tally.sums += c;
  }
  tally.totals.push_back(total / 1000.0);
  tally.colds.push_back(cold / 1000.0);
  if (seq.graphs.size() > 1) tally.warm_ratio.push_back(warm_sum / static_cast<double>(seq.graphs.size() - 1) / cold);
  return failures;
}

// The CPU solver's cuts of seq's graphs, solved in order (warm where it keeps state).
std::vector<std::vector<std::uint8_t>> reference_cuts(const Sequence& seq) {
  grabcut::GridMaxflowSolver reference;
  std::vector<std::vector<std::uint8_t>> cuts;
  for (const auto& g : seq.graphs) {
    std::vector<std::uint8_t> cut(g.size());
    reference.solve(g.view(), cut.data());
    cuts.push_back(std::move(cut));
  }
  return cuts;
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: model_maxflow_tiles synthetic [SIDE [SEED]] | crops [N] | list FILE [COUNT] | batch FILE [COUNT] | graphs FILE... "
                 "[--variants a,b] [--trace] [--blocks B]\n");
    return 2;
  }
  const Options o = parse_options(argc, argv);
  if (o.pos.empty()) throw std::invalid_argument("expected a mode: synthetic, crops, list, batch or graphs");
  const Workload work = load_workload(o.pos);
  print_header(o.costs);
  std::vector<Tally> tallies(o.variants.size());
  int failures = 0;
  for (std::size_t s = 0; s < work.count(); ++s) {
    const std::optional<Sequence> listed = work.items.empty() ? std::optional<Sequence>{} : sequence_of(work.items[s]);
    if (!work.items.empty() && !listed) continue;
    const Sequence& seq = listed ? *listed : work.sequences[s];
    const auto expected = reference_cuts(seq);
    for (std::size_t vi = 0; vi < o.variants.size(); ++vi) {
      failures += model_sequence(seq, *o.variants[vi], o.costs, expected, tallies[vi]);
    }
  }
  print_summary(o.variants, tallies, work.count());
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
