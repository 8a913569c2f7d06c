// Exact s-t max-flow on a 6-connected voxel grid (see maxflow3d.h for the graph).
//
// An augmenting-path solver after Boykov and Kolmogorov (PAMI 2004), written for
// the 3D grid from the paper's description, without the 2D solver's extra passes:
// two search trees, S from the source and T from the sink, grow breadth first from
// a FIFO of active voxels; where they meet, the path is augmented by its bottleneck
// and the voxels whose tree arc saturated become orphans; each orphan takes the
// neighbour of its own tree, joined by an unsaturated arc, whose chain of parents
// still reaches the terminal and is shortest (timestamps and distances cache that
// check within one adoption stage), or is freed and orphans its children. No
// active voxel left: the flow is maximum, and the canonical cut's sink side, the
// voxels that reach the sink over arcs with residual capacity, is the sink tree.
//
// The grid is padded by one voxel on every side: padding voxels have no arcs, so a
// neighbour index needs no bounds check. The 6 arcs leaving a voxel lie together
// (arc d of voxel p at residual[6 * p + d]); arc d + 3 (mod 6) is the reverse.
// Ranges: the two arcs of an n-link of capacity c keep residuals adding up to 2c,
// so n-links up to 2^30 - 1 keep them in int32; terminal residuals only move toward
// zero and are held in int64; the flow value is the cut's capacity summed in int64.
#include "core/maxflow3d.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace grabcut {
namespace {

constexpr int kDirections = 6;
constexpr int opposite(int d) { return d < 3 ? d + 3 : d - 3; }
constexpr std::uint8_t kFree = 0, kSource = 1, kSink = 2;
constexpr std::uint8_t kTerminal = 6, kNone = 7;  // parent values besides a direction 0..5
constexpr std::int32_t kMaxNlink = (std::int32_t{1} << 30) - 1;
constexpr std::int32_t kInfinite = std::numeric_limits<std::int32_t>::max();

}  // namespace

struct Grid3dMaxflowSolver::Impl {
  int width = 0, height = 0, depth = 0;
  std::int64_t stride_y = 0, stride_z = 0, nodes = 0;
  std::int64_t offset[kDirections] = {};
  std::vector<std::int32_t> residual;   // 6 per voxel
  std::vector<std::int64_t> terminal;   // > 0: source residual, < 0: sink residual
  std::vector<std::uint8_t> tree, parent, active;
  // int32, half the bytes of int64 on every visit: a distance is at most the number
  // of voxels (< 2^28), and the clock restarts before it overflows (grow_and_augment).
  std::vector<std::int32_t> stamp, distance;
  // The active voxels, a FIFO in a ring of `nodes` slots (a voxel is in it at most
  // once: `active`).
  std::vector<std::int32_t> queue;
  std::vector<std::int64_t> orphans;
  std::int64_t head = 0, tail = 0, queued = 0;
  std::int32_t time = 0;

  std::int64_t pad(int z, int y, int x) const { return (z + 1) * stride_z + (y + 1) * stride_y + (x + 1); }
  std::int64_t parent_of(std::int64_t p) const { return p + offset[parent[p]]; }

  void activate(std::int64_t p) {
    if (!active[p]) {
      active[p] = 1;
      queue[static_cast<std::size_t>(tail)] = static_cast<std::int32_t>(p);
      if (++tail == nodes) tail = 0;
      ++queued;
    }
  }

  void prepare(const Grid3dGraphView& g);
  void grow_and_augment();
  void augment(std::int64_t s_end, std::int64_t t_end, int dir);
  void adopt();
};

void Grid3dMaxflowSolver::Impl::prepare(const Grid3dGraphView& g) {
  width = g.width;
  height = g.height;
  depth = g.depth;
  stride_y = std::int64_t{width} + 2;
  stride_z = stride_y * (std::int64_t{height} + 2);
  nodes = stride_z * (std::int64_t{depth} + 2);
  const std::int64_t off[kDirections] = {1, stride_y, stride_z, -1, -stride_y, -stride_z};
  std::copy(off, off + kDirections, offset);
  residual.assign(static_cast<std::size_t>(kDirections * nodes), 0);
  terminal.assign(static_cast<std::size_t>(nodes), 0);
  tree.assign(static_cast<std::size_t>(nodes), kFree);
  parent.assign(static_cast<std::size_t>(nodes), kNone);
  active.assign(static_cast<std::size_t>(nodes), 0);
  stamp.assign(static_cast<std::size_t>(nodes), 0);
  distance.assign(static_cast<std::size_t>(nodes), 0);
  queue.resize(static_cast<std::size_t>(nodes));
  orphans.clear();
  head = tail = queued = 0;
  time = 0;
  const int sizes[3] = {width, height, depth};
  std::int64_t i = 0;
  for (int z = 0; z < depth; ++z) {
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x, ++i) {
        const std::int64_t p = pad(z, y, x);
        const int coord[3] = {x, y, z};
        for (int d = 0; d < 3; ++d) {
          if (coord[d] + 1 >= sizes[d]) continue;
          const std::int32_t c = g.nlink[d][i];
          if (c < 0 || c > kMaxNlink) {
            throw std::invalid_argument("Grid3dMaxflowSolver: n-link capacities must be in [0, 2^30 - 1], got " +
                                        std::to_string(c) + " at voxel (z=" + std::to_string(z) +
                                        ", y=" + std::to_string(y) + ", x=" + std::to_string(x) + ")");
          }
          residual[6 * p + d] = c;
          residual[6 * (p + offset[d]) + opposite(d)] = c;
        }
        const std::int64_t t = g.terminal[i];
        terminal[p] = t;
        if (t != 0) {
          tree[p] = t > 0 ? kSource : kSink;
          parent[p] = kTerminal;
          distance[p] = 1;
          activate(p);
        }
      }
    }
  }
}

// Sends the bottleneck along source -> ... -> s_end -> t_end -> ... -> sink, where
// dir is the direction of the arc s_end -> t_end; saturated tree arcs make orphans.
void Grid3dMaxflowSolver::Impl::augment(std::int64_t s_end, std::int64_t t_end, int dir) {
  std::int64_t flow = residual[6 * s_end + dir];
  std::int64_t v = s_end;
  while (parent[v] != kTerminal) {
    const std::int64_t u = parent_of(v);
    flow = std::min<std::int64_t>(flow, residual[6 * u + opposite(parent[v])]);
    v = u;
  }
  flow = std::min(flow, terminal[v]);
  v = t_end;
  while (parent[v] != kTerminal) {
    flow = std::min<std::int64_t>(flow, residual[6 * v + parent[v]]);
    v = parent_of(v);
  }
  flow = std::min(flow, -terminal[v]);
  const auto f32 = static_cast<std::int32_t>(flow);  // at most an n-link's residual: int32

  residual[6 * s_end + dir] -= f32;
  residual[6 * t_end + opposite(dir)] += f32;
  v = s_end;
  while (parent[v] != kTerminal) {
    const int pd = parent[v];
    const std::int64_t u = v + offset[pd];
    residual[6 * u + opposite(pd)] -= f32;
    residual[6 * v + pd] += f32;
    if (residual[6 * u + opposite(pd)] == 0) {
      parent[v] = kNone;
      orphans.push_back(v);
    }
    v = u;
  }
  terminal[v] -= flow;
  if (terminal[v] == 0) {
    parent[v] = kNone;
    orphans.push_back(v);
  }
  v = t_end;
  while (parent[v] != kTerminal) {
    const int pd = parent[v];
    const std::int64_t u = v + offset[pd];
    residual[6 * v + pd] -= f32;
    residual[6 * u + opposite(pd)] += f32;
    if (residual[6 * v + pd] == 0) {
      parent[v] = kNone;
      orphans.push_back(v);
    }
    v = u;
  }
  terminal[v] += flow;
  if (terminal[v] == 0) {
    parent[v] = kNone;
    orphans.push_back(v);
  }
}

// Each orphan finds the closest valid parent of its tree, or is freed.
void Grid3dMaxflowSolver::Impl::adopt() {
  for (std::size_t o = 0; o < orphans.size(); ++o) {
    const std::int64_t v = orphans[o];
    const std::uint8_t t = tree[v];
    int best = -1;
    std::int32_t best_distance = kInfinite;
    for (int d = 0; d < kDirections; ++d) {
      const std::int64_t q = v + offset[d];
      if (tree[q] != t) continue;
      // S: the arc q -> v must have residual; T: the arc v -> q.
      if (!(t == kSource ? residual[6 * q + opposite(d)] > 0 : residual[6 * v + d] > 0)) continue;
      std::int32_t k = 0;
      std::int64_t u = q;
      for (;;) {
        if (stamp[u] == time) {
          k += distance[u];
          break;
        }
        if (parent[u] == kTerminal) {
          stamp[u] = time;
          distance[u] = 1;
          k += 1;
          break;
        }
        if (parent[u] == kNone) {
          k = kInfinite;
          break;
        }
        ++k;
        u = parent_of(u);
      }
      if (k == kInfinite) continue;
      if (k < best_distance) {
        best = d;
        best_distance = k;
      }
      for (u = q; stamp[u] != time; u = parent_of(u)) {
        stamp[u] = time;
        distance[u] = k--;
      }
    }
    if (best >= 0) {
      parent[v] = static_cast<std::uint8_t>(best);
      stamp[v] = time;
      distance[v] = best_distance + 1;
      continue;
    }
    for (int d = 0; d < kDirections; ++d) {
      const std::int64_t q = v + offset[d];
      if (tree[q] != t) continue;
      if (t == kSource ? residual[6 * q + opposite(d)] > 0 : residual[6 * v + d] > 0) activate(q);
      if (parent[q] < kTerminal && q + offset[parent[q]] == v) {
        parent[q] = kNone;
        orphans.push_back(q);
      }
    }
    tree[v] = kFree;
    parent[v] = kNone;
  }
  orphans.clear();
}

void Grid3dMaxflowSolver::Impl::grow_and_augment() {
  const auto pop = [this] {
    if (++head == nodes) head = 0;
    --queued;
  };
  while (queued > 0) {
    const std::int64_t p = queue[static_cast<std::size_t>(head)];
    if (tree[p] == kFree) {
      active[p] = 0;
      pop();
      continue;
    }
    std::int64_t s_end = -1, t_end = -1;
    int dir = 0;
    for (int d = 0; d < kDirections; ++d) {
      const std::int64_t q = p + offset[d];
      if (tree[p] == kSource) {
        if (residual[6 * p + d] <= 0) continue;
        if (tree[q] == kFree) {
          tree[q] = kSource;
          parent[q] = static_cast<std::uint8_t>(opposite(d));
          stamp[q] = stamp[p];
          distance[q] = distance[p] + 1;
          activate(q);
        } else if (tree[q] == kSink) {
          s_end = p;
          t_end = q;
          dir = d;
          break;
        }
      } else {
        if (residual[6 * q + opposite(d)] <= 0) continue;
        if (tree[q] == kFree) {
          tree[q] = kSink;
          parent[q] = static_cast<std::uint8_t>(opposite(d));
          stamp[q] = stamp[p];
          distance[q] = distance[p] + 1;
          activate(q);
        } else if (tree[q] == kSource) {
          s_end = q;
          t_end = p;
          dir = opposite(d);
          break;
        }
      }
    }
    if (s_end < 0) {
      active[p] = 0;
      pop();
      continue;
    }
    // A stamp means only "checked in the adoption stage of this clock value", so
    // clearing them all lets the clock start again.
    if (time == std::numeric_limits<std::int32_t>::max()) {
      std::fill(stamp.begin(), stamp.end(), 0);
      time = 0;
    }
    ++time;
    augment(s_end, t_end, dir);
    adopt();
  }
}

Grid3dMaxflowSolver::Grid3dMaxflowSolver() : impl_(std::make_unique<Impl>()) {}
Grid3dMaxflowSolver::~Grid3dMaxflowSolver() = default;

std::int64_t Grid3dMaxflowSolver::solve(const Grid3dGraphView& g, std::uint8_t* source_side) {
  if (g.depth <= 0 || g.height <= 0 || g.width <= 0) return 0;
  const std::int64_t padded = (std::int64_t{g.depth} + 2) * (std::int64_t{g.height} + 2) * (std::int64_t{g.width} + 2);
  if (padded > (std::int64_t{1} << 28) - 1) {
    throw std::length_error("Grid3dMaxflowSolver: a " + std::to_string(g.depth) + " x " + std::to_string(g.height) +
                            " x " + std::to_string(g.width) + " grid is too large");
  }
  Impl& s = *impl_;
  s.prepare(g);
  s.grow_and_augment();

  // Canonical cut: the voxels that reach the sink over residual arcs, which, once no
  // voxel is active, are exactly those of the sink tree. Each reaches the sink along
  // its chain of parents; and no voxel outside T has a residual arc into T: a voxel
  // of T stays active until it has taken in every neighbour with such an arc, one
  // that leaves a tree reactivates its neighbours of T with an arc from it (adopt),
  // and an augmentation opens residual only inside a tree or from T to S.
  const std::vector<std::uint8_t>& tree = s.tree;
  const auto reach = [&tree](std::int64_t p) { return tree[static_cast<std::size_t>(p)] == kSink; };
  // The flow value: the capacity of that cut in the graph as given.
  std::int64_t capacity = 0;
  std::int64_t i = 0;
  const int sizes[3] = {g.width, g.height, g.depth};
  for (int z = 0; z < g.depth; ++z) {
    for (int y = 0; y < g.height; ++y) {
      for (int x = 0; x < g.width; ++x, ++i) {
        const std::int64_t p = s.pad(z, y, x);
        const bool src = !reach(p);
        source_side[i] = src ? 1 : 0;
        const std::int64_t t = g.terminal[i];
        if (src && t < 0) capacity -= t;
        if (!src && t > 0) capacity += t;
        const int coord[3] = {x, y, z};
        for (int d = 0; d < 3; ++d) {
          if (coord[d] + 1 >= sizes[d]) continue;
          if (src != !reach(p + s.offset[d])) capacity += g.nlink[d][i];
        }
      }
    }
  }
  return capacity;
}

}  // namespace grabcut
