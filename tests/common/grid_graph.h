// An owning 8-connected grid graph for the max-flow tests and benchmarks (CPU and
// CUDA): terminal capacities and the four forward n-link arrays of core/maxflow.h,
// with a GridGraphView onto them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/maxflow.h"

namespace grabcut::testing {

// (dy, dx) of the forward n-links kRight, kDownRight, kDown, kDownLeft (core/maxflow.h).
using grabcut::kForwardDx;
using grabcut::kForwardDy;

struct HostGridGraph {
  int height = 0;
  int width = 0;
  std::vector<std::int32_t> terminal;
  std::array<std::vector<std::int32_t>, 4> nlink;

  HostGridGraph() = default;
  HostGridGraph(int h, int w) : height(h), width(w) {
    const std::size_t n = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
    terminal.assign(n, 0);
    for (auto& v : nlink) v.assign(n, 0);
  }
  std::size_t size() const { return terminal.size(); }
  // Whether the forward n-link d of pixel (y, x) stays inside the grid.
  bool has_neighbour(int y, int x, int d) const {
    const int ny = y + kForwardDy[d];
    const int nx = x + kForwardDx[d];
    return ny < height && nx >= 0 && nx < width;
  }
  GridGraphView view() const {
    GridGraphView v;
    v.height = height;
    v.width = width;
    v.terminal = terminal.data();
    for (int d = 0; d < 4; ++d) v.nlink[d] = nlink[d].data();
    return v;
  }
};

// Sets every in-grid n-link to f(y, x, d) (the diagonals only if eight_connected).
template <typename F>
void set_nlinks(HostGridGraph& g, bool eight_connected, F&& f) {
  for (int y = 0; y < g.height; ++y) {
    for (int x = 0; x < g.width; ++x) {
      const std::size_t i = static_cast<std::size_t>(y) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(x);
      for (int d = 0; d < 4; ++d) {
        const bool diagonal = d == 1 || d == 3;
        if (g.has_neighbour(y, x, d) && (eight_connected || !diagonal)) g.nlink[d][i] = f(y, x, d);
      }
    }
  }
}

}  // namespace grabcut::testing
