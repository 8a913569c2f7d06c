// Exact s-t max-flow on a 6-connected voxel grid (see maxflow3d.h for the graph).
//
// An augmenting-path solver after Boykov and Kolmogorov (PAMI 2004), written for
// the 3D grid from the paper's description: two search trees, S from the source
// and T from the sink, grow breadth first from a FIFO of active voxels; where they
// meet, the path is augmented by its bottleneck and the voxels whose tree arc
// saturated become orphans; each orphan takes the neighbour of its own tree, joined
// by an unsaturated arc, whose chain of parents still reaches the terminal and is
// shortest (timestamps and distances cache that check within one adoption stage),
// or is freed and orphans its children. No active voxel left: the flow is maximum,
// and the canonical cut's sink side, the voxels that reach the sink over arcs with
// residual capacity, is the sink tree.
//
// Before the search, flow goes along the paths source -> p -> q -> sink of one
// n-link arc (short paths, as in the 2D solver): cheap, and on segmentation volumes
// it carries much of the maximum flow. The graph is read, the short paths pushed
// and the trees seeded in one pass over the slices, each step two slices behind
// the one before (a voxel's arcs reach the slices beside it), so the volume is read
// once while its slices are in cache.
//
// The grid is padded by one voxel on every side: padding voxels have no arcs, so a
// neighbour index needs no bounds check. The two arcs of an n-link lie together, at
// the voxel that owns the link: residual[6 * p + 2 * d] is p -> p + offset[d] and
// residual[6 * p + 2 * d + 1] the way back, d = 0, 1, 2 (arc(p, d) for any of the 6
// directions; an arc's reverse is its index ^ 1). The arcs of a voxel to and from
// x + 1, y + 1, z + 1 lie on its own cache line, those of x - 1, y - 1, z - 1 on its
// neighbours': either tree's growth reads two far lines, where arcs grouped by their
// tail would cost the sink tree's growth, which reads the arcs into a voxel, four.
// Ranges: the two arcs of an n-link of capacity c keep residuals adding up to 2c,
// so n-links up to 2^30 - 1 keep them in int32; terminal residuals only move toward
// zero, so they stay in int32 (compared in int64: -INT32_MIN is not an int32); the
// flow value is the sum of what was pushed, in int64.
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
constexpr std::int64_t kAhead = 16;  // prefetch distance in the FIFO (32 measured the same)

// One test for several values OR-ed together: a value is out of [0, 2^30 - 1] iff
// bit 30 or 31 is set.
bool out_of_range(std::uint32_t any_bits) { return any_bits > static_cast<std::uint32_t>(kMaxNlink); }

// The first voxel of row (z, y) with a value out of range (or, in the pair form, a
// node sum over the bound), reported; called once the fill found one in the row.
[[noreturn]] void throw_bad_row(const Grid3dGraphView& g, int z, int y) {
  const bool pair = g.terminal == nullptr;
  const std::int64_t stride[3] = {1, g.width, std::int64_t{g.width} * g.height};
  const int sizes[3] = {g.width, g.height, g.depth};
  for (int x = 0; x < g.width; ++x) {
    const std::int64_t i = (std::int64_t{z} * g.height + y) * g.width + x;
    const int coord[3] = {x, y, z};
    bool bad = pair && out_of_range(static_cast<std::uint32_t>(g.source[i]) | static_cast<std::uint32_t>(g.sink[i]));
    std::int64_t sum = pair ? std::int64_t{g.source[i]} + g.sink[i] : 0;
    std::int32_t bad_link = 0;
    for (int d = 0; d < 3; ++d) {
      if (coord[d] + 1 < sizes[d]) {
        const std::int32_t c = g.nlink[d][i];
        if (c < 0 || c > kMaxNlink) {
          bad = true;
          bad_link = c;
        }
        sum += c;
      }
      if (coord[d] >= 1) sum += g.nlink[d][i - stride[d]];
    }
    const std::string where =
        "voxel (z=" + std::to_string(z) + ", y=" + std::to_string(y) + ", x=" + std::to_string(x) + ")";
    if (pair && (bad || sum > g.max_node_sum)) {
      throw std::invalid_argument(
          "Grid3dMaxflowSolver: source, sink and n-link capacities must be in [0, 2^30 - 1] and add up to at most " +
          std::to_string(g.max_node_sum) + " at every voxel; not so at " + where);
    }
    if (bad) {
      throw std::invalid_argument("Grid3dMaxflowSolver: n-link capacities must be in [0, 2^30 - 1], got " +
                                  std::to_string(bad_link) + " at " + where);
    }
  }
  throw std::logic_error("Grid3dMaxflowSolver: row (z=" + std::to_string(z) + ", y=" + std::to_string(y) +
                         ") failed a check no voxel fails");
}

}  // namespace

struct Grid3dMaxflowSolver::Impl {
  int width = 0, height = 0, depth = 0;
  std::int64_t stride_y = 0, stride_z = 0, nodes = 0;
  std::int64_t offset[kDirections] = {};
  std::int64_t arc_base[kDirections] = {};  // arc(p, d) = 6 * p + arc_base[d]
  // Every voxel of the grid is written by each solve before it is read; the padding
  // keeps what allocate() gave it (no arcs, no terminal, free) as nothing writes it.
  std::vector<std::int32_t> residual;  // 6 per voxel: 3 n-links, both ways
  std::vector<std::int32_t> terminal;  // > 0: source residual, < 0: sink residual
  std::vector<std::uint8_t> tree, parent, active;
  // int32, half the bytes of int64 on every visit: a distance is at most the number
  // of voxels (< 2^28), and the clock restarts before it overflows (grow_and_augment).
  // The clock runs on across solves, so old stamps are merely stale.
  std::vector<std::int32_t> stamp, distance;
  // The active voxels, a FIFO in a ring of `nodes` slots (a voxel is in it at most
  // once: `active`).
  std::vector<std::int32_t> queue;
  std::vector<std::int64_t> orphans;
  std::vector<std::int32_t> zeros;  // n-links of a row whose neighbours leave the grid
  std::int64_t head = 0, tail = 0, queued = 0;
  std::int32_t time = 0;
  std::int64_t flow = 0;  // pushed so far (plus, in the pair form, the sum of min(source, sink))

  std::int64_t pad(int z, int y, int x) const { return (z + 1) * stride_z + (y + 1) * stride_y + (x + 1); }
  std::int64_t parent_of(std::int64_t p) const { return p + offset[parent[p]]; }
  // The index of the arc p -> p + offset[d] in residual.
  std::int64_t arc(std::int64_t p, int d) const { return 6 * p + arc_base[d]; }

  void activate(std::int64_t p) {
    if (!active[p]) {
      active[p] = 1;
      queue[static_cast<std::size_t>(tail)] = static_cast<std::int32_t>(p);
      if (++tail == nodes) tail = 0;
      ++queued;
    }
  }

  void allocate(const Grid3dGraphView& g);
  template <bool kPair>
  void fill_row(const Grid3dGraphView& g, int z, int y);
  void short_paths_slice(int z);
  void seed_slice(int z);
  template <bool kPair>
  void fill_and_start(const Grid3dGraphView& g);
  void grow_and_augment();
  void augment(std::int64_t s_end, std::int64_t t_end, int dir);
  void adopt();
};

void Grid3dMaxflowSolver::Impl::allocate(const Grid3dGraphView& g) {
  head = tail = queued = 0;
  orphans.clear();
  flow = 0;
  if (g.width == width && g.height == height && g.depth == depth) return;
  width = g.width;
  height = g.height;
  depth = g.depth;
  stride_y = std::int64_t{width} + 2;
  stride_z = stride_y * (std::int64_t{height} + 2);
  nodes = stride_z * (std::int64_t{depth} + 2);
  const std::int64_t off[kDirections] = {1, stride_y, stride_z, -1, -stride_y, -stride_z};
  std::copy(off, off + kDirections, offset);
  for (int d = 0; d < 3; ++d) {
    arc_base[d] = 2 * d;
    arc_base[d + 3] = 6 * off[d + 3] + 2 * d + 1;
  }
  residual.assign(static_cast<std::size_t>(kDirections * nodes), 0);
  terminal.assign(static_cast<std::size_t>(nodes), 0);
  tree.assign(static_cast<std::size_t>(nodes), kFree);
  parent.assign(static_cast<std::size_t>(nodes), kNone);
  active.assign(static_cast<std::size_t>(nodes), 0);
  stamp.assign(static_cast<std::size_t>(nodes), 0);
  distance.assign(static_cast<std::size_t>(nodes), 0);
  queue.resize(static_cast<std::size_t>(nodes));
  zeros.assign(static_cast<std::size_t>(width), 0);
  time = 0;
}

// The residuals and terminal of the voxels of row (z, y), checking the n-links they
// own (in the pair form also the terminals and node sums). The backward arcs read
// n-links of earlier voxels, checked already. The checks OR into one word for the
// row, so the loop has no branch on them.
template <bool kPair>
void Grid3dMaxflowSolver::Impl::fill_row(const Grid3dGraphView& g, int z, int y) {
  const int w = width;
  const std::int64_t row = (std::int64_t{z} * height + y) * w;
  const std::int32_t* const ex = g.nlink[0] + row;
  const std::int32_t* const ey = y + 1 < height ? g.nlink[1] + row : zeros.data();
  const std::int32_t* const ez = z + 1 < depth ? g.nlink[2] + row : zeros.data();
  const std::int32_t* const by = y > 0 ? g.nlink[1] + row - w : zeros.data();
  const std::int32_t* const bz = z > 0 ? g.nlink[2] + row - std::int64_t{w} * height : zeros.data();
  const std::int64_t p0 = pad(z, y, 0);
  std::int32_t* const rc = residual.data() + kDirections * p0;
  std::int32_t* const term = terminal.data() + p0;
  std::uint32_t bits = 0;
  bool over = false;
  std::int64_t both = 0;
  // The x links of voxel x: fx to x + 1, bx to x - 1; the row's ends are apart, so
  // the loop between them has no test on x.
  const auto voxel = [&](int x, std::int32_t fx, std::int32_t bx) {
    const std::int32_t fy = ey[x], fz = ez[x];
    std::int32_t* const r = rc + kDirections * x;
    r[0] = fx;
    r[1] = fx;
    r[2] = fy;
    r[3] = fy;
    r[4] = fz;
    r[5] = fz;
    bits |= static_cast<std::uint32_t>(fx) | static_cast<std::uint32_t>(fy) | static_cast<std::uint32_t>(fz);
    if constexpr (kPair) {
      const std::int32_t s = g.source[row + x], t = g.sink[row + x];
      bits |= static_cast<std::uint32_t>(s) | static_cast<std::uint32_t>(t);
      // Every value is below 2^31 in magnitude: the int64 sum cannot overflow.
      const std::int64_t sum = std::int64_t{s} + t + fx + fy + fz + bx + by[x] + bz[x];
      over |= sum > g.max_node_sum;
      // Unsigned: values the row's check rejects may wrap, and are never used.
      term[x] = static_cast<std::int32_t>(static_cast<std::uint32_t>(s) - static_cast<std::uint32_t>(t));
      both += std::min(s, t);
    } else {
      term[x] = g.terminal[row + x];
    }
  };
  if (w == 1) {
    voxel(0, 0, 0);
  } else {
    voxel(0, ex[0], 0);
    for (int x = 1; x < w - 1; ++x) voxel(x, ex[x], ex[x - 1]);
    voxel(w - 1, 0, ex[w - 2]);
  }
  if (out_of_range(bits) || over) throw_bad_row(g, z, y);
  flow += both;
}

// Flow along source -> p -> q -> sink for the voxels p of slice z that have source
// residual; it changes the residuals and terminals of slices z - 1 .. z + 1 only.
void Grid3dMaxflowSolver::Impl::short_paths_slice(int z) {
  std::int32_t* const rc = residual.data();
  std::int32_t* const term = terminal.data();
  for (int y = 0; y < height; ++y) {
    const std::int64_t p0 = pad(z, y, 0);
    for (std::int64_t p = p0; p < p0 + width; ++p) {
      if (term[p] <= 0) continue;
      for (int d = 0; d < kDirections && term[p] > 0; ++d) {
        const std::int64_t q = p + offset[d];
        if (term[q] >= 0) continue;
        const std::int64_t a = arc(p, d);
        if (rc[a] == 0) continue;
        std::int32_t f = std::min(rc[a], term[p]);
        if (term[q] > -std::int64_t{f}) f = -term[q];
        rc[a] -= f;
        rc[a ^ 1] += f;
        term[p] -= f;
        term[q] += f;
        flow += f;
      }
    }
  }
}

// Every voxel of slice z with terminal residual roots a tree and is active; the
// others are free. Without branches: the FIFO (empty before the first slice) takes
// the voxel's index in any case and keeps it only if the voxel is active, and it
// cannot wrap, as it holds fewer entries than the padded grid has voxels.
void Grid3dMaxflowSolver::Impl::seed_slice(int z) {
  std::uint8_t* const tr = tree.data();
  std::uint8_t* const par = parent.data();
  std::uint8_t* const act = active.data();
  std::int32_t* const dist = distance.data();
  std::int32_t* const fifo = queue.data();
  std::int64_t end = tail;
  for (int y = 0; y < height; ++y) {
    const std::int64_t p0 = pad(z, y, 0);
    for (std::int64_t p = p0; p < p0 + width; ++p) {
      const std::int32_t t = terminal[p];
      const bool rooted = t != 0;
      tr[p] = static_cast<std::uint8_t>((t > 0 ? kSource : kFree) | (t < 0 ? kSink : kFree));
      par[p] = rooted ? kTerminal : kNone;
      act[p] = rooted ? 1 : 0;
      dist[p] = 1;  // read only under a stamp of the current clock, so harmless where free
      fifo[end] = static_cast<std::int32_t>(p);
      end += rooted ? 1 : 0;
    }
  }
  queued += end - tail;
  tail = end;
}

// Slice k is filled, then the short paths of slice k - 1 are pushed (their arcs
// reach slice k, now filled), then slice k - 2 is seeded (the short paths of slices
// up to k - 1 have changed its terminals for the last time). Each step sees what it
// would in separate passes over the volume, in the same order.
template <bool kPair>
void Grid3dMaxflowSolver::Impl::fill_and_start(const Grid3dGraphView& g) {
  allocate(g);
  for (int k = 0; k < depth + 2; ++k) {
    if (k < depth) {
      for (int y = 0; y < height; ++y) fill_row<kPair>(g, k, y);
    }
    if (k >= 1 && k - 1 < depth) short_paths_slice(k - 1);
    if (k >= 2) seed_slice(k - 2);
  }
}

// Sends the bottleneck along source -> ... -> s_end -> t_end -> ... -> sink, where
// dir is the direction of the arc s_end -> t_end; saturated tree arcs make orphans.
// A voxel v of S gets its flow over the arc parent -> v, the reverse of arc(v, parent
// direction); one of T sends it over arc(v, parent direction).
void Grid3dMaxflowSolver::Impl::augment(std::int64_t s_end, std::int64_t t_end, int dir) {
  std::int32_t* const rc = residual.data();
  const std::int64_t bridge = arc(s_end, dir);
  std::int64_t bottleneck = rc[bridge];
  std::int64_t v = s_end;
  while (parent[v] != kTerminal) {
    bottleneck = std::min<std::int64_t>(bottleneck, rc[arc(v, parent[v]) ^ 1]);
    v = parent_of(v);
  }
  bottleneck = std::min<std::int64_t>(bottleneck, terminal[v]);
  v = t_end;
  while (parent[v] != kTerminal) {
    bottleneck = std::min<std::int64_t>(bottleneck, rc[arc(v, parent[v])]);
    v = parent_of(v);
  }
  bottleneck = std::min(bottleneck, -std::int64_t{terminal[v]});
  const auto f32 = static_cast<std::int32_t>(bottleneck);  // at most an n-link's residual: int32
  flow += bottleneck;

  rc[bridge] -= f32;
  rc[bridge ^ 1] += f32;
  v = s_end;
  while (parent[v] != kTerminal) {
    const std::int64_t a = arc(v, parent[v]) ^ 1;
    rc[a] -= f32;
    rc[a ^ 1] += f32;
    const std::int64_t u = parent_of(v);
    if (rc[a] == 0) {
      parent[v] = kNone;
      orphans.push_back(v);
    }
    v = u;
  }
  terminal[v] -= f32;
  if (terminal[v] == 0) {
    parent[v] = kNone;
    orphans.push_back(v);
  }
  v = t_end;
  while (parent[v] != kTerminal) {
    const std::int64_t a = arc(v, parent[v]);
    rc[a] -= f32;
    rc[a ^ 1] += f32;
    const std::int64_t u = parent_of(v);
    if (rc[a] == 0) {
      parent[v] = kNone;
      orphans.push_back(v);
    }
    v = u;
  }
  terminal[v] += f32;
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
      if (residual[t == kSource ? arc(v, d) ^ 1 : arc(v, d)] <= 0) continue;
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
      if (residual[t == kSource ? arc(v, d) ^ 1 : arc(v, d)] > 0) activate(q);
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
    // The residuals are far larger than the cache and a voxel's arcs are read at its
    // turn in the FIFO: fetch the lines of the voxel kAhead turns on (its own, and
    // those of its y - 1 and z - 1 neighbours; x - 1's lies beside its own) now.
    if (queued > kAhead) {
      std::int64_t next = head + kAhead;
      if (next >= nodes) next -= nodes;
      const std::int32_t* const r = residual.data() + 6 * std::int64_t{queue[static_cast<std::size_t>(next)]};
      __builtin_prefetch(r);
      __builtin_prefetch(r + arc_base[4]);
      __builtin_prefetch(r + arc_base[5]);
    }
    if (tree[p] == kFree) {
      active[p] = 0;
      pop();
      continue;
    }
    std::int64_t s_end = -1, t_end = -1;
    int dir = 0;
    if (tree[p] == kSource) {
      for (int d = 0; d < kDirections; ++d) {
        const std::int64_t q = p + offset[d];
        const std::uint8_t tq = tree[q];
        if (tq == kSource || residual[arc(p, d)] <= 0) continue;
        if (tq == kFree) {
          tree[q] = kSource;
          parent[q] = static_cast<std::uint8_t>(opposite(d));
          stamp[q] = stamp[p];
          distance[q] = distance[p] + 1;
          activate(q);
        } else {
          s_end = p;
          t_end = q;
          dir = d;
          break;
        }
      }
    } else {
      for (int d = 0; d < kDirections; ++d) {
        const std::int64_t q = p + offset[d];
        const std::uint8_t tq = tree[q];
        if (tq == kSink || residual[arc(p, d) ^ 1] <= 0) continue;
        if (tq == kFree) {
          tree[q] = kSink;
          parent[q] = static_cast<std::uint8_t>(opposite(d));
          stamp[q] = stamp[p];
          distance[q] = distance[p] + 1;
          activate(q);
        } else {
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
  if (g.terminal == nullptr) {
    s.fill_and_start<true>(g);
  } else {
    s.fill_and_start<false>(g);
  }
  s.grow_and_augment();

  // Canonical cut: the voxels that reach the sink over residual arcs, which, once no
  // voxel is active, are exactly those of the sink tree. Each reaches the sink along
  // its chain of parents; and no voxel outside T has a residual arc into T: a voxel
  // of T stays active until it has taken in every neighbour with such an arc, one
  // that leaves a tree reactivates its neighbours of T with an arc from it (adopt),
  // and an augmentation opens residual only inside a tree or from T to S.
  const std::uint8_t* const tree = s.tree.data();
  std::int64_t i = 0;
  for (int z = 0; z < g.depth; ++z) {
    for (int y = 0; y < g.height; ++y) {
      const std::uint8_t* const row = tree + s.pad(z, y, 0);
      for (int x = 0; x < g.width; ++x, ++i) source_side[i] = row[x] != kSink ? 1 : 0;
    }
  }
  // The flow pushed is a maximum flow, so its value is that of the minimum cut.
  return s.flow;
}

}  // namespace grabcut
