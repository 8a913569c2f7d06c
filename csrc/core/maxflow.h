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

// A read-only view of a grid graph; arrays are row-major, height * width each.
// nlink[d][p] is the capacity of the edge from p in direction d; it must be 0 where
// that neighbour is outside the grid. A 4-connected graph has zero diagonals.
// All capacities are non-negative except terminal, which is signed.
struct GridGraphView {
  int height = 0;
  int width = 0;
  const std::int32_t* terminal = nullptr;
  const std::int32_t* nlink[kNumForwardDirections] = {nullptr, nullptr, nullptr, nullptr};
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
  // Returns the value of the maximum flow (of the graph as given, net terminals).
  std::int64_t solve(const GridGraphView& graph, std::uint8_t* source_side);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Capacity of the cut described by source_side (1 = source side) in `graph`:
// terminal edges of pixels on the wrong side plus n-links from source side to
// sink side. Equals the max-flow value iff source_side is a minimum cut.
std::int64_t cut_capacity(const GridGraphView& graph, const std::uint8_t* source_side);

}  // namespace grabcut
