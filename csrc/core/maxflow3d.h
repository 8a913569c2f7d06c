// Exact s-t max-flow on a 6-connected voxel grid, and the canonical minimum cut
// (CPU). The graph as in maxflow.h, one dimension up: one node per voxel, an
// undirected n-link of integer capacity to each of the 6 face neighbours, and one
// net terminal capacity per voxel (t > 0: source -> voxel, t < 0: voxel -> sink).
//
// The cut is the canonical one of maxflow.h: a voxel is on the source side iff it
// cannot reach the sink in the residual graph of a maximum flow.
#pragma once

#include <cstdint>
#include <memory>

namespace grabcut {

// The three forward n-links stored at each voxel p = (z * height + y) * width + x:
// to (z, y, x + 1), (z, y + 1, x), (z + 1, y, x). The other three neighbours own
// the edges back. Links that leave the grid are never read.
constexpr int kNumForwardDirections3d = 3;

// A read-only view of a 3D grid graph; arrays are depth * height * width, x fastest.
// n-links must be in [0, 2^30 - 1].
//
// The terminals come in one of two forms, as in maxflow.h. The net form: `terminal`,
// any int32. The pair form (terminal null): `source` and `sink`, the capacities of the
// edges source -> p and p -> sink, each in [0, 2^30 - 1], with every voxel's source +
// sink + its n-links on the grid at most `max_node_sum`; the solver checks both as it
// reads the graph, so that a caller needs no pass of its own. A value out of range
// throws std::invalid_argument.
struct Grid3dGraphView {
  int depth = 0;
  int height = 0;
  int width = 0;
  const std::int32_t* terminal = nullptr;
  const std::int32_t* nlink[kNumForwardDirections3d] = {nullptr, nullptr, nullptr};
  const std::int32_t* source = nullptr;
  const std::int32_t* sink = nullptr;
  std::int64_t max_node_sum = (std::int64_t{1} << 30) - 1;
};

// Reusable solver (buffers kept between calls); not thread-safe, one per thread.
class Grid3dMaxflowSolver {
 public:
  Grid3dMaxflowSolver();
  ~Grid3dMaxflowSolver();
  Grid3dMaxflowSolver(const Grid3dMaxflowSolver&) = delete;
  Grid3dMaxflowSolver& operator=(const Grid3dMaxflowSolver&) = delete;

  // A maximum flow of `graph` from zero flow; writes the canonical cut into
  // source_side (1 = source side, one byte per voxel) and returns the flow value of
  // the graph as given (in the pair form: with both terminal edges of every voxel).
  std::int64_t solve(const Grid3dGraphView& graph, std::uint8_t* source_side);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grabcut
