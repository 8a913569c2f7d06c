// Exact s-t max-flow on an 8-connected pixel grid, and the canonical minimum cut.
//
// The graph of a GrabCut iteration: one node per pixel, an undirected n-link of
// integer capacity between each pair of 8-neighbours (the same capacity in both
// directions), and one net terminal capacity per pixel: t > 0 is an edge
// source -> pixel of capacity t, t < 0 an edge pixel -> sink of capacity -t.
// (Folding the two terminal edges of a pixel into one changes the flow value by
// the constant sum of min(source, sink) and never changes the minimum cuts.)
//
// Every backend returns the same canonical cut: a pixel is on the source
// (foreground) side iff it cannot reach the sink in the residual graph of a
// maximum flow. That set is unique for a graph, whichever maximum flow was found.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace grabcut {

// The four forward n-links stored at each pixel p = y * width + x. The other four
// neighbours of p own the edge: p's left edge is (p - 1)'s kRight, and so on.
enum NlinkDirection : int {
  kRight = 0,      // (y, x) -- (y, x + 1), capacity gamma-based
  kDownRight = 1,  // (y, x) -- (y + 1, x + 1), diagonal
  kDown = 2,       // (y, x) -- (y + 1, x)
  kDownLeft = 3,   // (y, x) -- (y + 1, x - 1), diagonal
};
constexpr int kNumForwardDirections = 4;
// (dy, dx) from a pixel to its neighbour along each forward n-link.
constexpr int kForwardDy[kNumForwardDirections] = {0, 1, 1, 1};
constexpr int kForwardDx[kNumForwardDirections] = {1, 1, 0, -1};

// A read-only view of a grid graph; arrays are row-major, height * width each.
// nlink[d][p] is the capacity of the edge from p in direction d; it must be 0 where
// that neighbour is outside the grid. A 4-connected graph has zero diagonals.
// All capacities are non-negative except terminal, which is signed.
//
// The terminals come in one of two forms. The net form: `terminal`, as above. The
// pair form (terminal null): `source` and `sink`, the capacities of the edges
// source -> p and p -> sink, each in [0, 2^30 - 1], with every pixel's source + sink +
// its n-links on the grid at most `max_node_sum`; the solver checks both as it reads
// the graph, so that a caller needs no pass of its own, and throws
// std::invalid_argument on a value out of range. In the pair form a solve returns the
// flow of the graph with both terminal edges (the net form's value plus the sum of
// min(source, sink)), and keeps no flow for a warm start (solve_warm is then cold).
struct GridGraphView {
  int height = 0;
  int width = 0;
  const std::int32_t* terminal = nullptr;
  const std::int32_t* nlink[kNumForwardDirections] = {nullptr, nullptr, nullptr, nullptr};
  const std::int32_t* source = nullptr;
  const std::int32_t* sink = nullptr;
  std::int64_t max_node_sum = (std::int64_t{1} << 30) - 1;
  // The caller's word that the diagonals are zero: they are then never read and may
  // be null, and the graph takes the 4-neighbour path (see set_four_connected_path)
  // without a scan of them.
  bool four_connected = false;
};

// Reusable CPU solver: buffers are kept between calls so a GrabCut loop does not
// reallocate. Not thread-safe; use one solver per thread.
class GridMaxflowSolver {
 public:
  GridMaxflowSolver();
  ~GridMaxflowSolver();
  GridMaxflowSolver(const GridMaxflowSolver&) = delete;
  GridMaxflowSolver& operator=(const GridMaxflowSolver&) = delete;
  GridMaxflowSolver(GridMaxflowSolver&&) noexcept;
  GridMaxflowSolver& operator=(GridMaxflowSolver&&) noexcept;

  // Computes a maximum flow of `graph` and writes the canonical cut into
  // source_side (height * width bytes): 1 for the source side, 0 for the sink side.
  // Returns the value of the maximum flow (of the graph as given), read off the
  // flow found where its terminal residuals moved by augmentations only, else
  // computed as the capacity of that cut (equal by the max-flow min-cut theorem;
  // the solver's internal flow may then be one of a reparametrised graph, see
  // solve_warm). Starts from zero flow (a cold solve); see set_num_threads.
  std::int64_t solve(const GridGraphView& graph, std::uint8_t* source_side);

  // The same as solve(graph, source_side), with the same canonical cut and the
  // same return value (the maximum flow value of `graph` as given), but faster
  // when `graph` differs from the graph of the last successful call on this
  // solver only in its terminals, as between GrabCut iterations (warm start).
  //
  // The solver keeps the maximum flow it found last. If `graph` has the same size
  // and the same n-links (checked exactly: every n-link's two residuals must
  // still add up to twice its capacity), the n-link flows are kept and each
  // pixel's net terminal residual becomes old residual + (new terminal - old
  // terminal). That is the residual graph of a flow in a graph that differs from
  // `graph` only by adding the same capacity to both terminal edges of some
  // pixels, which adds a constant to every cut and changes no minimum cut; the
  // solver then augments from there to a maximum flow. The flow value it reaches
  // is that of the reparametrised graph, so the value returned is computed
  // instead as the capacity of the canonical cut in `graph`, which equals the
  // maximum flow value of `graph` (max-flow min-cut theorem).
  //
  // Otherwise (no earlier solve, another size, other n-links, a solve that threw,
  // or a new residual outside int32) it is a cold solve, exactly solve().
  std::int64_t solve_warm(const GridGraphView& graph, std::uint8_t* source_side);

  // Threads of a solve (cold or warm). On k >= 2 threads the grid is split into 2k
  // horizontal strips with one separator row between neighbouring strips (at most
  // one strip per 2 rows); each strip's residual graph, without the n-links to the
  // separators, is solved to a maximum flow on its own, in place, k at a time (a
  // cold solve's strips also fill their own rows). One thread then finishes the
  // whole grid: the separators join it and the search continues from their nodes
  // and the rows beside them (the only places where the strips' trees can be
  // incomplete). The cut and the returned value do not depend on the threads: the
  // canonical cut is unique and so is the maximum flow value.
  //   0 (the default): automatic: the OpenMP thread limit (omp_get_max_threads),
  //     at most 8, on grids of at least 256 x 256 pixels; 1 when called inside an
  //     OpenMP parallel region (no oversubscription).
  //   1: serial.  k >= 2: min(k, height / 2) threads (serial below 4 rows), even
  //     on small grids; their strips run on up to that many OpenMP threads,
  //     serially inside a parallel region. Negative values are taken as 0.
  void set_num_threads(int threads);

  // true: a serial cold solve of a large grid runs as the parallel one does, on one
  // thread: strips of a few MiB of the solver's arrays each (up to 6), each filled and
  // solved on its own, one after another, then the whole grid from the separators.
  // Where flow stays local, as in segmentation graphs, each strip's search then works
  // on rows still in cache from its fill, and its trees stay within the strip (1 MP
  // segmentation graphs, one thread: 1.02-1.09x the solve in one piece); where it
  // crosses the grid, as in GrabCut's first graphs, the search across the separators
  // can cost more than the strips save (0.91-1.58x per graph), so the default is
  // false (every serial solve in one piece). The cut and the value are the same.
  void set_serial_strips(bool enabled);

  // A graph whose diagonal n-links inside the grid are all zero (a 4-connected
  // graph) is solved, by default, with each pixel's 4 axis neighbours only: half the
  // arcs to store and scan. Every solve decides by reading the diagonals, up to the
  // first nonzero one. The flow it finds is the one the 8-neighbour solver finds on
  // the same graph (it visits the nonzero arcs in the same order), so the cut, the
  // value and a warm start's behaviour are the same either way. false: always the
  // 8-neighbour solver (for tests and measurements). A warm start reuses a flow only
  // from the same kind of solve.
  void set_four_connected_path(bool enabled);

  // true (the default): every solve keeps its flow and a copy of the terminals for a
  // later solve_warm. false: it keeps neither (a pass over the grid less, for callers
  // that never warm-start); solve_warm is then a cold solve.
  void set_keep_flow(bool enabled);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Capacity of the cut described by source_side (1 = source side) in `graph`:
// terminal edges of pixels on the wrong side plus n-links from source side to
// sink side. Equals the max-flow value iff source_side is a minimum cut.
std::int64_t cut_capacity(const GridGraphView& graph, const std::uint8_t* source_side);

}  // namespace grabcut
