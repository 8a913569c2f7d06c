// Owning 6-connected voxel graphs for the 3D max-flow tests (CPU and CUDA), in the
// layout of core/pushrelabel3d.h (terminal[v], nlinks[k * n + v]), of every kind the
// tests need: random, tiny, huge, zero, sparse, all-source, all-sink, checkerboards,
// ties and snakes; and the CPU references: the Boykov-Kolmogorov solver's flow and
// cut (core/maxflow3d.h), and the capacity of a cut.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/maxflow3d.h"

namespace grabcut::testing {

constexpr std::int32_t kMaxNlink3d = (std::int32_t{1} << 30) - 1;
// 2^31 - 2: the largest net terminal the reduction of the public op gives.
constexpr std::int32_t kMaxTerminal3d = std::numeric_limits<std::int32_t>::max() - 1;

struct Graph3d {
  int depth = 0, height = 0, width = 0;
  std::vector<std::int32_t> terminal;  // n
  std::vector<std::int32_t> nlinks;    // 3 * n: x + 1, y + 1, z + 1
  std::string kind;
  std::int64_t voxels() const { return std::int64_t{depth} * height * width; }
};

inline std::int32_t draw3d(std::mt19937& rng, std::int32_t low, std::int32_t high) {
  return std::uniform_int_distribution<std::int32_t>(low, high)(rng);
}

inline const std::vector<std::string>& graph3d_kinds() {
  static const std::vector<std::string> kinds = {"random",     "tiny",     "huge",         "zero", "sparse",
                                                 "all_source", "all_sink", "checkerboard", "ties", "snake"};
  return kinds;
}

// The voxels in serpentine order (x back and forth, rows back and forth, slices in
// order): consecutive ones are face neighbours.
inline std::vector<std::int64_t> serpentine(int d, int h, int w) {
  std::vector<std::int64_t> order;
  for (int z = 0; z < d; ++z) {
    for (int yy = 0; yy < h; ++yy) {
      const int y = z % 2 == 0 ? yy : h - 1 - yy;
      const int row = z * h + yy;
      for (int xx = 0; xx < w; ++xx) {
        const int x = row % 2 == 0 ? xx : w - 1 - xx;
        order.push_back((std::int64_t{z} * h + y) * w + x);
      }
    }
  }
  return order;
}

inline Graph3d make_graph3d(std::mt19937& rng, int d, int h, int w, const std::string& kind) {
  Graph3d g;
  g.depth = d;
  g.height = h;
  g.width = w;
  g.kind = kind;
  const std::int64_t n = g.voxels();
  g.terminal.assign(static_cast<std::size_t>(n), 0);
  g.nlinks.assign(static_cast<std::size_t>(3 * n), 0);
  const auto fill = [&](std::int32_t t_lo, std::int32_t t_hi, std::int32_t e_lo, std::int32_t e_hi) {
    for (auto& t : g.terminal) t = draw3d(rng, t_lo, t_hi);
    for (auto& e : g.nlinks) e = draw3d(rng, e_lo, e_hi);
  };
  if (kind == "random") {
    const std::int32_t cap = draw3d(rng, 1, 1000);
    fill(-cap, cap, 0, std::max(1, cap / 3));
  } else if (kind == "tiny") {
    fill(-2, 2, 0, 2);
  } else if (kind == "huge") {
    fill(-kMaxTerminal3d, kMaxTerminal3d, kMaxNlink3d / 2, kMaxNlink3d);
  } else if (kind == "zero") {
    // all zero
  } else if (kind == "sparse") {
    for (auto& t : g.terminal) t = draw3d(rng, 0, 9) == 0 ? draw3d(rng, -100, 100) : 0;
    for (auto& e : g.nlinks) e = draw3d(rng, 0, 3) == 0 ? draw3d(rng, 0, 60) : 0;
  } else if (kind == "all_source") {
    fill(1, 200, 0, 50);
  } else if (kind == "all_sink") {
    fill(-200, -1, 0, 50);
  } else if (kind == "checkerboard") {
    fill(0, 0, 20, 60);
    for (std::int64_t v = 0; v < n; ++v) {
      const std::int64_t x = v % w, y = (v / w) % h, z = v / (std::int64_t{w} * h);
      g.terminal[static_cast<std::size_t>(v)] = (x + y + z) % 2 == 0 ? 90 : -90;
    }
  } else if (kind == "ties") {
    // Every cut between the halves costs the same: many minimum cuts.
    fill(0, 0, 2, 2);
    for (std::int64_t v = 0; v < n; ++v) {
      g.terminal[static_cast<std::size_t>(v)] = 2 * (v % w) < w ? 4 : -4;
    }
  } else if (kind == "snake") {
    // A corridor of strong links through every voxel, weak links elsewhere; the source
    // at its head, the sink at its tail: the flow runs a path as long as the volume.
    fill(0, 0, 1, 1);
    const std::vector<std::int64_t> order = serpentine(d, h, w);
    const std::int64_t step[3] = {1, w, std::int64_t{w} * h};
    for (std::size_t k = 0; k + 1 < order.size(); ++k) {
      const std::int64_t p = std::min(order[k], order[k + 1]), q = std::max(order[k], order[k + 1]);
      for (int dir = 0; dir < 3; ++dir) {
        if (q - p == step[dir]) g.nlinks[static_cast<std::size_t>(dir * n + p)] = 1000;
      }
    }
    g.terminal[static_cast<std::size_t>(order.front())] = 5000;
    g.terminal[static_cast<std::size_t>(order.back())] += -5000;
  } else {
    throw std::invalid_argument("make_graph3d: unknown kind " + kind);
  }
  return g;
}

struct Result3d {
  std::int64_t flow = 0;
  std::vector<std::uint8_t> cut;  // 1 = source side
};

// The CPU solver's flow value and canonical cut.
inline Result3d solve_cpu3d(const Graph3d& g) {
  Grid3dGraphView view;
  view.depth = g.depth;
  view.height = g.height;
  view.width = g.width;
  view.terminal = g.terminal.data();
  for (int k = 0; k < 3; ++k) view.nlink[k] = g.nlinks.data() + k * g.voxels();
  Result3d r;
  r.cut.assign(static_cast<std::size_t>(g.voxels()), 0);
  Grid3dMaxflowSolver solver;
  r.flow = solver.solve(view, r.cut.data());
  return r;
}

// The capacity of a cut (1 = source side), an independent check of a flow value.
inline std::int64_t cut_capacity3d(const Graph3d& g, const std::uint8_t* cut) {
  const std::int64_t n = g.voxels();
  const std::int64_t step[3] = {1, g.width, std::int64_t{g.width} * g.height};
  const std::int64_t size[3] = {g.width, g.height, g.depth};
  std::int64_t capacity = 0;
  for (std::int64_t v = 0; v < n; ++v) {
    const std::int64_t t = g.terminal[static_cast<std::size_t>(v)];
    if (cut[v] != 0 && t < 0) capacity -= t;
    if (cut[v] == 0 && t > 0) capacity += t;
    const std::int64_t coord[3] = {v % g.width, (v / g.width) % g.height, v / step[2]};
    for (int k = 0; k < 3; ++k) {
      if (coord[k] + 1 < size[k] && cut[v] != cut[v + step[k]]) {
        capacity += g.nlinks[static_cast<std::size_t>(k * n + v)];
      }
    }
  }
  return capacity;
}

// Graphs of one size end to end: the batch layout of core/pushrelabel3d.h.
struct Batch3d {
  int depth = 0, height = 0, width = 0;
  std::int64_t batch = 0;
  std::vector<std::int32_t> terminal, nlinks;
};

inline Batch3d pack3d(const std::vector<Graph3d>& graphs) {
  Batch3d b;
  if (graphs.empty()) return b;
  b.depth = graphs[0].depth;
  b.height = graphs[0].height;
  b.width = graphs[0].width;
  b.batch = static_cast<std::int64_t>(graphs.size());
  for (const Graph3d& g : graphs) {
    if (g.voxels() != graphs[0].voxels()) throw std::invalid_argument("pack3d: graphs of different sizes");
    b.terminal.insert(b.terminal.end(), g.terminal.begin(), g.terminal.end());
    b.nlinks.insert(b.nlinks.end(), g.nlinks.begin(), g.nlinks.end());
  }
  return b;
}

}  // namespace grabcut::testing
