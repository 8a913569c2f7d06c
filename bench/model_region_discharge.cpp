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
//
//   model_region_discharge synthetic [SIDE [SEED]]   the GrabCut-like test graph, cold and warm
//   model_region_discharge list FILE [COUNT]         images of a list written by
//                        bench/grabcut50_ppm.py, every iteration of a 5-iteration GrabCut
//   options: --tile WxH (32x32)  --round-cap N (0: none)  --init-labels zero|bfs (zero)
//            --relax-every R (16: exact heights every R rounds as well as when stalled)
//            --gap 0|1 (1: the gap heuristic on region labels after every phase)
//            --warm-labels zero|bfs (bfs)  --global-every S (0: never; an exact
//            tile-level relabel every S sweeps)  --cost-round US  --cost-step US
//            --cost-load US  --cost-barrier US  --blocks B
//            --parallel 0|1 (0: the 2 x 2 colouring above; 1: every active tile in one
//            phase, halo flows added after it, exact labels to confirm the end)
//            --inner jacobi|gs (jacobi: synchronous rounds; gs: line passes)  --cost-pass US
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/grabcut_graph.h"
#include "common/grabcut_iterations.h"
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
  int relax_every = 16;  // exact heights again every so many rounds (0: only when stalled)
  bool init_bfs = false;
  bool warm_bfs = true;
  int global_every = 0;
  bool gap = true;  // --gap 0 turns the gap heuristic off
  // Per-step costs (us) for the time estimate: a push-relabel round of a tile, a
  // Jacobi BFS step, a tile's load and write-back, a grid barrier; blocks in the grid.
  double cost_round = 1.4, cost_step = 0.3, cost_load = 2.0, cost_barrier = 3.0;
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
};

struct Counts {
  long long sweeps = 0, barriers = 0, discharges = 0, rounds = 0, bfs_runs = 0, bfs_steps = 0;
  long long relabel_sweeps = 0, cut_sweeps = 0, capped = 0, label_drops = 0, gapped = 0;
  double time_us = 0;
  int max_rounds = 0;
  void operator+=(const Counts& o) {
    sweeps += o.sweeps;
    barriers += o.barriers;
    discharges += o.discharges;
    rounds += o.rounds;
    bfs_runs += o.bfs_runs;
    bfs_steps += o.bfs_steps;
    relabel_sweeps += o.relabel_sweeps;
    cut_sweeps += o.cut_sweeps;
    capped += o.capped;
    label_drops += o.label_drops;
    gapped += o.gapped;
    time_us += o.time_us;
    max_rounds = std::max(max_rounds, o.max_rounds);
  }
};

class RegionDischarge {
 public:
  explicit RegionDischarge(const Options& o) : o_(o) {}

  // Solves `g` (warm: from the last solve's flow, `g` differing only in terminals) and
  // returns the canonical cut (1 = source side).
  std::vector<std::uint8_t> solve(const HostGridGraph& g, bool warm, Counts& c) {
    if (!warm || g.height != h_ || g.width != w_) {
      start_cold(g);
    } else {
      for (std::size_t p = 0; p < g.size(); ++p) excess_[p] += std::int64_t{g.terminal[p]} - terminal_[p];
      terminal_ = g.terminal;
      if (o_.warm_bfs) {
        exact_labels(c);
      } else {
        std::fill(label_.begin(), label_.end(), 0);
      }
    }
    if (!warm && o_.init_bfs) exact_labels(c);
    if (o_.parallel) {
      parallel_sweeps(c);
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
        for (std::size_t i = 0; i < tiles.size(); ++i) cost[i] = discharge(tiles[i], c);
        c.time_us += phase_time(cost) + o_.cost_barrier;
        ++c.barriers;
        if (o_.gap) apply_gap(c);
      }
      if (!any) break;
      ++c.sweeps;
      if (o_.global_every > 0 && ++since_global == o_.global_every) {
        exact_labels(c);
        since_global = 0;
      }
    }
    return canonical_cut(c);
  }

 private:
  Options o_;
  int h_ = 0, w_ = 0, tiles_x_ = 0, tiles_y_ = 0;
  std::vector<std::int32_t> terminal_;
  std::vector<std::int64_t> excess_;    // > 0 excess, < 0 sink capacity left
  std::vector<std::int64_t> residual_;  // 8 per pixel
  std::vector<int> label_;

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

  bool tile_active(int t) const {
    const int x0 = (t % tiles_x_) * o_.tile_w;
    const int y0 = (t / tiles_x_) * o_.tile_h;
    for (int y = y0; y < std::min(h_, y0 + o_.tile_h); ++y) {
      for (int x = x0; x < std::min(w_, x0 + o_.tile_w); ++x) {
        const std::size_t p = pix(y, x);
        if (excess_[p] > 0 && label_[p] < kDInf) return true;
      }
    }
    return false;
  }

  // The time of one phase: its tiles handed to the blocks as they free up.
  double phase_time(std::vector<double> cost) const {
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

  void parallel_sweeps(Counts& c) {
    int since_global = 0;
    for (;;) {
      std::vector<int> tiles = active_tiles();
      if (tiles.empty()) {
        exact_labels(c);
        tiles = active_tiles();
        if (tiles.empty()) return;
      }
      std::vector<Tile> loaded;
      loaded.reserve(tiles.size());
      for (const int t : tiles) loaded.push_back(load(t));
      std::vector<double> cost;
      cost.reserve(tiles.size());
      for (Tile& s : loaded) cost.push_back(discharge_loaded(s, c));
      for (const Tile& s : loaded) store_own(s, c);
      for (const Tile& s : loaded) store_halo(s);
      c.time_us += phase_time(cost) + o_.cost_barrier;
      ++c.barriers;
      ++c.sweeps;
      if (o_.gap) apply_gap(c);
      if (o_.global_every > 0 && ++since_global == o_.global_every) {
        exact_labels(c);
        since_global = 0;
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

  bool active(const Tile& s, std::size_t i) const { return s.inside[i] != 0U && s.excess[i] > 0 && s.height[i] < kHInf; }

  // One synchronous round: pushes from the heights at its start, then relabels.
  // Returns whether anything was pushed.
  bool round(Tile& s) const {
    std::vector<std::int64_t> inbox(s.height.size(), 0);
    bool pushed = false;
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
    const double cost = discharge_loaded(s, c);
    store_own(s, c);
    store_halo(s);
    return cost;
  }

  // Discharges a loaded tile in its frame; returns its cost (us).
  double discharge_loaded(Tile& s, Counts& c) const {
    int steps = o_.inner_gs ? relax_lines(s) : relax(s);
    int runs = 1;
    int rounds = 0;
    for (;;) {
      bool any = false;
      for (std::size_t i = 0; i < s.height.size() && !any; ++i) any = active(s, i);
      if (!any) break;
      if (o_.round_cap > 0 && rounds == o_.round_cap) {
        ++c.capped;
        break;
      }
      ++rounds;
      const bool pushed = o_.inner_gs ? round_lines(s) : round(s);
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
    return o_.cost_load + o_.cost_round * rounds + o_.cost_step * steps;
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

  // ------------------------------------------------------------ tile-level passes
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
        cost.push_back(o_.cost_load + o_.cost_step * steps);
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
      c.time_us += phase_time(cost) + o_.cost_barrier;
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
  } else if (a == "--cost-load") {
    o.cost_load = std::stod(v);
  } else if (a == "--cost-barrier") {
    o.cost_barrier = std::stod(v);
  } else if (a == "--inner") {
    if (v != "gs" && v != "jacobi") throw std::invalid_argument("--inner: jacobi or gs");
    o.inner_gs = v == "gs";
  } else if (a == "--cost-pass") {
    o.cost_pass = std::stod(v);
  } else if (a == "--parallel") {
    o.parallel = v != "0";
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
  if (pos.empty()) throw std::invalid_argument("usage: model_region_discharge synthetic [SIDE [SEED]] | list FILE [COUNT] [options]");
  std::vector<grabcut::testing::ListedImage> items;
  std::size_t count = 1;
  if (pos[0] == "list") {
    if (pos.size() < 2) throw std::invalid_argument("list: expected FILE");
    items = grabcut::testing::read_image_list(pos[1]);
    count = pos.size() > 2 ? std::min<std::size_t>(items.size(), std::stoul(pos[2])) : items.size();
  } else if (pos[0] != "synthetic") {
    throw std::invalid_argument("unknown mode " + pos[0]);
  }
  std::printf("region discharge model: tiles %dx%d, round cap %d, relax every %d, labels init %s warm %s, global relabel every %d sweeps; "
              "us per round %.2f, BFS step %.2f, load %.2f, barrier %.2f, %d blocks\n",
              o.tile_w, o.tile_h, o.round_cap, o.relax_every, o.init_bfs ? "bfs" : "zero", o.warm_bfs ? "bfs" : "zero", o.global_every,
              o.cost_round, o.cost_step, o.cost_load, o.cost_barrier, o.blocks);
  std::printf("%-14s %-5s | %6s %8s %7s %7s %10s %9s %8s %8s %6s %6s | %8s\n", "graph", "solve", "sweeps", "barriers",
              "relabel", "cutswp", "discharges", "rounds", "maxround", "bfsrun", "capped", "drops", "model ms");
  std::vector<double> total_ms, cold_ms, cold_barriers, warm_ratio;
  Counts sum;
  int failures = 0;
  for (std::size_t img = 0; img < count; ++img) {
    std::optional<Sequence> seq;
    if (pos[0] == "list") {
      seq = from_image(items[img]);
      if (!seq) continue;
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
    double total = 0, warm = 0;
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
      if (i == 0) {
        cold_ms.push_back(c.time_us / 1000.0);
        cold_barriers.push_back(static_cast<double>(c.barriers));
      } else {
        warm += c.time_us;
      }
      sum += c;
    }
    total_ms.push_back(total / 1000.0);
    if (seq->graphs.size() > 1) warm_ratio.push_back(warm / static_cast<double>(seq->graphs.size() - 1) / (cold_ms.back() * 1000.0));
  }
  std::printf("\nover %zu sequences: model ms (all solves) median %.2f p90 %.2f max %.2f; cold median %.2f max %.2f; "
              "cold barriers median %.0f p90 %.0f max %.0f; warm/cold median %.2f max %.2f; label drops %lld\n",
              total_ms.size(), percentile(total_ms, 0.5), percentile(total_ms, 0.9), percentile(total_ms, 1.0),
              percentile(cold_ms, 0.5), percentile(cold_ms, 1.0), percentile(cold_barriers, 0.5),
              percentile(cold_barriers, 0.9), percentile(cold_barriers, 1.0), percentile(warm_ratio, 0.5),
              percentile(warm_ratio, 1.0), sum.label_drops);
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
