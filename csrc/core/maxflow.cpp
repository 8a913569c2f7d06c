// Exact s-t max-flow on an 8-connected pixel grid (see maxflow.h for the graph).
//
// The solver is an augmenting-path algorithm after Boykov and Kolmogorov, "An
// Experimental Comparison of Min-Cut/Max-Flow Algorithms for Energy Minimization
// in Vision" (PAMI 2004), written for the grid from the paper's description:
//
//   * two search trees, S rooted at the source and T rooted at the sink, grown
//     breadth first from a FIFO of active nodes (growth);
//   * when a tree edge reaches the other tree, the path source -> ... -> sink is
//     augmented by its bottleneck, and the nodes whose tree edge saturated become
//     orphans (augmentation);
//   * each orphan looks among its neighbours for a new parent in its own tree whose
//     chain of parents still ends at the terminal, preferring the one closest to
//     the terminal; one without such a parent is freed and its children become
//     orphans (adoption). Each node carries a timestamp (the augmentation at which
//     its distance to the terminal was last known to be exact) and that distance,
//     so the walks of one adoption stage stop at nodes already checked in it, and
//     growth reattaches a node to a neighbour that is closer to the terminal.
//
// Before the trees are seeded, one raster pass sends flow along every path
// source -> p -> q -> sink made of a single n-link arc; in GrabCut graphs, where
// neighbouring pixels often have opposite terminals, that carries much of the
// flow at the cost of one sweep. The trees then start from whatever terminal
// residual is left.
//
// There is no adjacency list: a node's 8 neighbours are at fixed index offsets in a
// grid padded by one node on every side. The padding nodes have no arcs and are
// never in a tree, so no neighbour access needs a bounds check. The residual
// capacities of the 8 arcs leaving a node lie next to each other in one flat int32
// array (arc d of node p at residual[8 * p + d]), and direction d ^ 4 is the
// opposite of d, so the reverse of arc (p, d) is arc (p + offset[d], d ^ 4).
//
// Integer ranges: the two directed arcs of an n-link of capacity c always have
// residuals adding up to 2c, so n-links below 2^30 keep every residual in int32.
// A terminal residual only moves toward zero, and every augmenting path contains
// at least one n-link arc, so every bottleneck fits in int32; the flow value is
// summed in int64. Terminals may be any int32 value.
//
// Once no active node is left the flow is maximum, and the cut is then found
// independently of the trees: a breadth-first search backward from the sink over
// arcs with positive residual marks every pixel that can reach the sink; all other
// pixels form the canonical (largest minimum) source set.
#include "core/maxflow.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// The augmentation counter is renumbered when it reaches this value. Tests build
// the solver with a small limit to exercise the renumbering.
#ifndef GRABCUT_MAXFLOW_TIME_LIMIT
#define GRABCUT_MAXFLOW_TIME_LIMIT 0x7ffffff0
#endif

namespace grabcut {
namespace {

constexpr int kNumDirections = 8;
// Directions 0..3 are the forward n-links of maxflow.h (kRight, kDownRight, kDown,
// kDownLeft); 4..7 are their opposites (left, up-left, up, up-right).
constexpr int kDy[kNumDirections] = {0, 1, 1, 1, 0, -1, -1, -1};
constexpr int kDx[kNumDirections] = {1, 1, 0, -1, -1, -1, 0, 1};
constexpr int opposite(int d) { return d ^ 4; }
static_assert(kRight == 0 && kDownRight == 1 && kDown == 2 && kDownLeft == 3,
              "direction numbering must match maxflow.h");

// Node::tree
constexpr std::uint8_t kFree = 0;
constexpr std::uint8_t kSourceTree = 1;
constexpr std::uint8_t kSinkTree = 2;
// Node::parent: 0..7 is the direction from the node to its parent.
constexpr std::uint8_t kParentTerminal = 8;
constexpr std::uint8_t kParentOrphan = 9;
constexpr std::uint8_t kNoParent = 10;

// 2c must fit in int32. All valid values have bits 30 and 31 clear.
constexpr std::int32_t kMaxNlinkCapacity = (std::int32_t{1} << 30) - 1;
constexpr int kInfiniteDistance = std::numeric_limits<int>::max();
constexpr std::int32_t kTimeLimit = GRABCUT_MAXFLOW_TIME_LIMIT;

std::uint8_t as_parent(int d) { return static_cast<std::uint8_t>(d); }

// Per-node search state, 16 bytes, so one node's state is one access.
struct Node {
  // Residual terminal capacity: > 0 from the source to the node, < 0 from the
  // node to the sink (the magnitude is the capacity).
  std::int32_t terminal;
  std::int32_t timestamp;
  std::int32_t distance;  // to the tree's terminal, exact as of `timestamp`
  std::uint8_t tree;
  std::uint8_t parent;
  std::uint8_t active;  // in the active FIFO, or the node being grown
  std::uint8_t unused;
};
static_assert(sizeof(Node) == 16, "Node should stay 16 bytes");

}  // namespace

struct GridMaxflowSolver::Impl {
  int height = -1;
  int width = -1;
  int stride = 0;     // width + 2
  int num_nodes = 0;  // (height + 2) * (width + 2)
  int offset[kNumDirections] = {};

  std::vector<std::int32_t> residual;  // 8 per node, arc d of p at 8 * p + d
  std::vector<Node> nodes;
  // FIFO of node indices, a ring of num_nodes slots: the active nodes during the
  // flow, the frontier of the cut search afterwards. A node is never in it twice.
  std::vector<int> queue;
  int queue_head = 0;
  int queue_tail = 0;
  int queue_size = 0;
  std::vector<int> orphans;  // FIFO; also scratch space of renumber_timestamps()
  std::vector<std::uint8_t> reaches_sink;  // marks of the final cut search

  std::int32_t time = 0;
  std::int64_t flow = 0;

  void prepare(const GridGraphView& graph);
  void compute_max_flow();
  void push_short_paths();
  void seed_trees();
  void compute_cut(std::uint8_t* source_side);

  void push(int p) {
    queue[queue_tail] = p;
    if (++queue_tail == num_nodes) queue_tail = 0;
    ++queue_size;
  }
  int pop() {
    const int p = queue[queue_head];
    if (++queue_head == num_nodes) queue_head = 0;
    --queue_size;
    return p;
  }
  void clear_queue() { queue_head = queue_tail = queue_size = 0; }
  void activate(int p) {
    Node& n = nodes[p];
    if (n.active == 0) {
      n.active = 1;
      push(p);
    }
  }
  void make_orphan(int p) {
    nodes[p].parent = kParentOrphan;
    orphans.push_back(p);
  }

  void augment(int from, int dir);
  void adopt();
  void adopt_source_orphan(int p);
  void adopt_sink_orphan(int p);
  // Length of the chain of parents from q to the terminal (1 for a root), or
  // kInfiniteDistance if it ends at an orphan; the nodes checked are stamped.
  int distance_to_terminal(int q);
  void renumber_timestamps();
};

void GridMaxflowSolver::Impl::prepare(const GridGraphView& graph) {
  const int h = graph.height;
  const int w = graph.width;
  if (h != height || w != width) {
    const std::int64_t padded = (std::int64_t{h} + 2) * (std::int64_t{w} + 2);
    if (padded * kNumDirections > std::numeric_limits<int>::max()) {
      throw std::length_error("GridMaxflowSolver: a " + std::to_string(h) + " x " +
                              std::to_string(w) + " grid is too large");
    }
    // Mark the sizes unknown until the buffers fit them, in case allocation throws.
    height = width = -1;
    stride = w + 2;
    num_nodes = static_cast<int>(padded);
    for (int d = 0; d < kNumDirections; ++d) offset[d] = kDy[d] * stride + kDx[d];
    // The padding keeps these zero residuals for good: no arc leads to or from it.
    residual.assign(static_cast<std::size_t>(num_nodes) * kNumDirections, 0);
    nodes.resize(static_cast<std::size_t>(num_nodes));
    queue.resize(static_cast<std::size_t>(num_nodes));
    height = h;
    width = w;
  }

  const Node empty_node{0, 0, 0, kFree, kNoParent, 0, 0};
  for (Node& n : nodes) n = empty_node;
  clear_queue();
  orphans.clear();
  time = 0;
  flow = 0;

  const std::int32_t* const right = graph.nlink[kRight];
  const std::int32_t* const down_right = graph.nlink[kDownRight];
  const std::int32_t* const down = graph.nlink[kDown];
  const std::int32_t* const down_left = graph.nlink[kDownLeft];
  std::int32_t* const rc = residual.data();
  for (int y = 0; y < h; ++y) {
    const bool has_down = y + 1 < h;
    const bool has_up = y > 0;
    for (int x = 0; x < w; ++x) {
      const bool has_right = x + 1 < w;
      const bool has_left = x > 0;
      const int i = y * w + x;
      const int p = (y + 1) * stride + (x + 1);
      // Forward arcs come from this pixel's n-links, which are checked here; the
      // backward arcs read n-links of earlier pixels, checked already.
      const std::int32_t c0 = has_right ? right[i] : 0;
      const std::int32_t c1 = has_right && has_down ? down_right[i] : 0;
      const std::int32_t c2 = has_down ? down[i] : 0;
      const std::int32_t c3 = has_left && has_down ? down_left[i] : 0;
      // One test for all four: a value is out of range iff bit 30 or 31 is set.
      if ((static_cast<std::uint32_t>(c0) | static_cast<std::uint32_t>(c1) |
           static_cast<std::uint32_t>(c2) | static_cast<std::uint32_t>(c3)) >
          static_cast<std::uint32_t>(kMaxNlinkCapacity)) {
        throw std::invalid_argument(
            "GridMaxflowSolver: n-link capacities must be in [0, 2^30 - 1], got " +
            std::to_string(c0) + ", " + std::to_string(c1) + ", " + std::to_string(c2) +
            ", " + std::to_string(c3) + " at pixel (y=" + std::to_string(y) +
            ", x=" + std::to_string(x) + ")");
      }
      std::int32_t* const r = rc + kNumDirections * p;
      r[0] = c0;
      r[1] = c1;
      r[2] = c2;
      r[3] = c3;
      r[4] = has_left ? right[i - 1] : 0;
      r[5] = has_left && has_up ? down_right[i - w - 1] : 0;
      r[6] = has_up ? down[i - w] : 0;
      r[7] = has_right && has_up ? down_left[i - w + 1] : 0;

      const std::int32_t t = graph.terminal[i];
      nodes[p].terminal = t;
    }
  }
}

// Sends flow along the paths source -> p -> q -> sink of one n-link arc, pixel by
// pixel: cheap, and in GrabCut graphs it carries much of the maximum flow. The
// search trees are seeded afterwards from the terminal residuals that remain.
void GridMaxflowSolver::Impl::push_short_paths() {
  Node* const node = nodes.data();
  std::int32_t* const rc = residual.data();
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const int p = (y + 1) * stride + (x + 1);
      Node& np = node[p];
      if (np.terminal <= 0) continue;
      std::int32_t* const rp = rc + kNumDirections * p;
      for (int d = 0; d < kNumDirections && np.terminal > 0; ++d) {
        if (rp[d] == 0) continue;
        const int q = p + offset[d];
        Node& nq = node[q];
        if (nq.terminal >= 0) continue;
        std::int32_t f = rp[d];
        if (np.terminal < f) f = np.terminal;
        if (nq.terminal > -std::int64_t{f}) f = -nq.terminal;  // -terminal may be 2^31
        rp[d] -= f;
        rc[kNumDirections * q + opposite(d)] += f;
        np.terminal -= f;
        nq.terminal += f;
        flow += f;
      }
    }
  }
}

void GridMaxflowSolver::Impl::seed_trees() {
  Node* const node = nodes.data();
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const int p = (y + 1) * stride + (x + 1);
      Node& n = node[p];
      if (n.terminal != 0) {
        n.tree = n.terminal > 0 ? kSourceTree : kSinkTree;
        n.parent = kParentTerminal;
        n.distance = 1;
        n.active = 1;
        push(p);
      }
    }
  }
}

void GridMaxflowSolver::Impl::compute_max_flow() {
  push_short_paths();
  seed_trees();
  Node* const node = nodes.data();
  const std::int32_t* const rc = residual.data();
  int current = -1;  // the node being grown; it stays marked active meanwhile
  for (;;) {
    if (current < 0) {
      while (queue_size > 0) {
        const int p = pop();
        if (node[p].tree != kFree) {
          current = p;
          break;
        }
        node[p].active = 0;  // freed after it was queued
      }
      if (current < 0) return;
    }

    // Growth: extend the tree of `current` over its residual arcs until an arc
    // reaches the other tree; (from, dir) is then that arc, from S to T.
    const int p = current;
    Node& np = node[p];
    int from = -1;
    int dir = 0;
    if (np.tree == kSourceTree) {
      const std::int32_t* const rp = rc + kNumDirections * p;
      for (int d = 0; d < kNumDirections; ++d) {
        if (rp[d] == 0) continue;
        const int q = p + offset[d];
        Node& nq = node[q];
        if (nq.tree == kFree) {
          nq.tree = kSourceTree;
          nq.parent = as_parent(opposite(d));
          nq.timestamp = np.timestamp;
          nq.distance = np.distance + 1;
          activate(q);
        } else if (nq.tree == kSinkTree) {
          from = p;
          dir = d;
          break;
        } else if (nq.timestamp <= np.timestamp && nq.distance > np.distance) {
          nq.parent = as_parent(opposite(d));
          nq.timestamp = np.timestamp;
          nq.distance = np.distance + 1;
        }
      }
    } else {
      // The arcs into p belong to the neighbours: look at a neighbour's state
      // first, so that the common case (already in T, not closer) reads no arc.
      for (int d = 0; d < kNumDirections; ++d) {
        const int q = p + offset[d];
        Node& nq = node[q];
        if (nq.tree == kSinkTree &&
            (nq.timestamp > np.timestamp || nq.distance <= np.distance)) {
          continue;
        }
        if (rc[kNumDirections * q + opposite(d)] == 0) continue;
        if (nq.tree == kFree) {
          nq.tree = kSinkTree;
          nq.parent = as_parent(opposite(d));
          nq.timestamp = np.timestamp;
          nq.distance = np.distance + 1;
          activate(q);
        } else if (nq.tree == kSourceTree) {
          from = q;
          dir = opposite(d);
          break;
        } else {
          nq.parent = as_parent(opposite(d));
          nq.timestamp = np.timestamp;
          nq.distance = np.distance + 1;
        }
      }
    }
    if (from < 0) {  // every arc of `current` examined: it becomes passive
      np.active = 0;
      current = -1;
      continue;
    }

    if (time >= kTimeLimit) renumber_timestamps();
    ++time;
    augment(from, dir);
    adopt();
    // `current` may have more arcs to the other tree: grow it again, unless the
    // adoption freed it.
    if (np.tree == kFree) {
      np.active = 0;
      current = -1;
    }
  }
}

void GridMaxflowSolver::Impl::augment(int from, int dir) {
  Node* const node = nodes.data();
  std::int32_t* const rc = residual.data();
  const int to = from + offset[dir];

  // Bottleneck. The arc between the trees is an n-link arc, so it fits in int32.
  std::int64_t bottleneck = rc[kNumDirections * from + dir];
  for (int i = from;;) {  // S side: the arcs run from the parent j to i
    const int a = node[i].parent;
    if (a == kParentTerminal) {
      if (node[i].terminal < bottleneck) bottleneck = node[i].terminal;
      break;
    }
    const int j = i + offset[a];
    const std::int32_t r = rc[kNumDirections * j + opposite(a)];
    if (r < bottleneck) bottleneck = r;
    i = j;
  }
  for (int i = to;;) {  // T side: the arcs run from i to its parent
    const int a = node[i].parent;
    if (a == kParentTerminal) {
      const std::int64_t r = -std::int64_t{node[i].terminal};
      if (r < bottleneck) bottleneck = r;
      break;
    }
    const std::int32_t r = rc[kNumDirections * i + a];
    if (r < bottleneck) bottleneck = r;
    i += offset[a];
  }
  const auto f = static_cast<std::int32_t>(bottleneck);

  rc[kNumDirections * from + dir] -= f;
  rc[kNumDirections * to + opposite(dir)] += f;
  for (int i = from;;) {
    const int a = node[i].parent;
    if (a == kParentTerminal) {
      node[i].terminal -= f;
      if (node[i].terminal == 0) make_orphan(i);
      break;
    }
    const int j = i + offset[a];
    std::int32_t& down_arc = rc[kNumDirections * j + opposite(a)];
    down_arc -= f;
    rc[kNumDirections * i + a] += f;
    if (down_arc == 0) make_orphan(i);
    i = j;
  }
  for (int i = to;;) {
    const int a = node[i].parent;
    if (a == kParentTerminal) {
      node[i].terminal += f;
      if (node[i].terminal == 0) make_orphan(i);
      break;
    }
    const int j = i + offset[a];
    std::int32_t& up_arc = rc[kNumDirections * i + a];
    up_arc -= f;
    rc[kNumDirections * j + opposite(a)] += f;
    if (up_arc == 0) make_orphan(i);
    i = j;
  }
  flow += f;
}

void GridMaxflowSolver::Impl::adopt() {
  for (std::size_t k = 0; k < orphans.size(); ++k) {
    const int p = orphans[k];
    if (nodes[p].tree == kSourceTree) {
      adopt_source_orphan(p);
    } else {
      adopt_sink_orphan(p);
    }
  }
  orphans.clear();
}

int GridMaxflowSolver::Impl::distance_to_terminal(int q) {
  Node* const node = nodes.data();
  int length = 0;
  int j = q;
  for (;;) {
    if (node[j].timestamp == time) {
      length += node[j].distance;
      break;
    }
    const int a = node[j].parent;
    ++length;
    if (a == kParentTerminal) {
      node[j].timestamp = time;
      node[j].distance = 1;
      break;
    }
    if (a == kParentOrphan) return kInfiniteDistance;
    j += offset[a];
  }
  // Stamp the chain so later walks of this adoption stage stop early.
  int d = length;
  for (j = q; node[j].timestamp != time; j += offset[node[j].parent]) {
    node[j].timestamp = time;
    node[j].distance = d--;
  }
  return length;
}

void GridMaxflowSolver::Impl::adopt_source_orphan(int p) {
  Node* const node = nodes.data();
  const std::int32_t* const rc = residual.data();
  int best = -1;
  int best_distance = kInfiniteDistance;
  for (int d = 0; d < kNumDirections; ++d) {
    const int q = p + offset[d];
    if (node[q].tree != kSourceTree || rc[kNumDirections * q + opposite(d)] == 0) continue;
    const int dist = distance_to_terminal(q);
    if (dist < best_distance) {
      best_distance = dist;
      best = d;
    }
  }
  Node& np = node[p];
  if (best >= 0) {
    np.parent = as_parent(best);
    np.timestamp = time;
    np.distance = best_distance + 1;
    return;
  }
  np.tree = kFree;
  np.parent = kNoParent;
  for (int d = 0; d < kNumDirections; ++d) {
    const int q = p + offset[d];
    Node& nq = node[q];
    if (nq.tree != kSourceTree) continue;
    if (rc[kNumDirections * q + opposite(d)] != 0) activate(q);
    if (nq.parent == opposite(d)) make_orphan(q);
  }
}

void GridMaxflowSolver::Impl::adopt_sink_orphan(int p) {
  Node* const node = nodes.data();
  const std::int32_t* const rc = residual.data();
  const std::int32_t* const rp = rc + kNumDirections * p;
  int best = -1;
  int best_distance = kInfiniteDistance;
  for (int d = 0; d < kNumDirections; ++d) {
    if (rp[d] == 0) continue;
    const int q = p + offset[d];
    if (node[q].tree != kSinkTree) continue;
    const int dist = distance_to_terminal(q);
    if (dist < best_distance) {
      best_distance = dist;
      best = d;
    }
  }
  Node& np = node[p];
  if (best >= 0) {
    np.parent = as_parent(best);
    np.timestamp = time;
    np.distance = best_distance + 1;
    return;
  }
  np.tree = kFree;
  np.parent = kNoParent;
  for (int d = 0; d < kNumDirections; ++d) {
    const int q = p + offset[d];
    Node& nq = node[q];
    if (nq.tree != kSinkTree) continue;
    if (rp[d] != 0) activate(q);
    if (nq.parent == opposite(d)) make_orphan(q);
  }
}

// Before the counter overflows: give every tree node timestamp 0 and its exact
// distance to the terminal, then restart the counter. Called between
// augmentations, when there are no orphans.
void GridMaxflowSolver::Impl::renumber_timestamps() {
  constexpr std::int32_t kUnknown = -1;
  for (Node& n : nodes) {
    if (n.tree != kFree) n.timestamp = kUnknown;
  }
  std::vector<int>& chain = orphans;
  for (int p = 0; p < num_nodes; ++p) {
    if (nodes[p].timestamp != kUnknown) continue;
    chain.clear();
    int j = p;
    while (nodes[j].timestamp == kUnknown && nodes[j].parent != kParentTerminal) {
      chain.push_back(j);
      j += offset[nodes[j].parent];
    }
    if (nodes[j].timestamp == kUnknown) {  // a root
      nodes[j].timestamp = 0;
      nodes[j].distance = 1;
    }
    int d = nodes[j].distance;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      nodes[*it].timestamp = 0;
      nodes[*it].distance = ++d;
    }
  }
  chain.clear();
  time = 0;
}

void GridMaxflowSolver::Impl::compute_cut(std::uint8_t* source_side) {
  const Node* const node = nodes.data();
  const std::int32_t* const rc = residual.data();
  // One byte per node keeps the marks of a whole neighbourhood in cache.
  reaches_sink.assign(static_cast<std::size_t>(num_nodes), 0);
  std::uint8_t* const reach = reaches_sink.data();
  clear_queue();
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const int p = (y + 1) * stride + (x + 1);
      if (node[p].terminal < 0) {
        reach[p] = 1;
        push(p);
      }
    }
  }
  while (queue_size > 0) {
    const int q = pop();
    for (int d = 0; d < kNumDirections; ++d) {
      const int p = q + offset[d];  // arc p -> q is arc opposite(d) of p
      if (reach[p] == 0 && rc[kNumDirections * p + opposite(d)] != 0) {
        reach[p] = 1;
        push(p);
      }
    }
  }
  for (int y = 0; y < height; ++y) {
    const std::uint8_t* const row = reach + (y + 1) * stride + 1;
    std::uint8_t* const out = source_side + static_cast<std::size_t>(y) * width;
    for (int x = 0; x < width; ++x) out[x] = static_cast<std::uint8_t>(row[x] ^ 1);
  }
}

GridMaxflowSolver::GridMaxflowSolver() : impl_(std::make_unique<Impl>()) {}
GridMaxflowSolver::~GridMaxflowSolver() = default;
GridMaxflowSolver::GridMaxflowSolver(GridMaxflowSolver&&) noexcept = default;
GridMaxflowSolver& GridMaxflowSolver::operator=(GridMaxflowSolver&&) noexcept = default;

std::int64_t GridMaxflowSolver::solve(const GridGraphView& graph, std::uint8_t* source_side) {
  if (graph.height < 0 || graph.width < 0) {
    throw std::invalid_argument("GridMaxflowSolver::solve: height and width must be >= 0, got " +
                                std::to_string(graph.height) + " x " +
                                std::to_string(graph.width));
  }
  if (graph.height == 0 || graph.width == 0) return 0;
  if (graph.terminal == nullptr || graph.nlink[0] == nullptr || graph.nlink[1] == nullptr ||
      graph.nlink[2] == nullptr || graph.nlink[3] == nullptr || source_side == nullptr) {
    throw std::invalid_argument("GridMaxflowSolver::solve: null array for a non-empty graph");
  }
  if (!impl_) impl_ = std::make_unique<Impl>();  // a moved-from solver is usable again
  impl_->prepare(graph);
  impl_->compute_max_flow();
  impl_->compute_cut(source_side);
  return impl_->flow;
}

std::int64_t cut_capacity(const GridGraphView& graph, const std::uint8_t* source_side) {
  const int h = graph.height;
  const int w = graph.width;
  if (h <= 0 || w <= 0) return 0;
  std::int64_t total = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::size_t i = static_cast<std::size_t>(y) * w + x;
      const std::int64_t t = graph.terminal[i];
      const bool s = source_side[i] != 0;
      if (s && t < 0) total -= t;
      if (!s && t > 0) total += t;
      for (int d = 0; d < kNumForwardDirections; ++d) {
        const int ny = y + kDy[d];
        const int nx = x + kDx[d];
        if (ny >= h || nx < 0 || nx >= w) continue;
        const std::size_t j = static_cast<std::size_t>(ny) * w + nx;
        if (s != (source_side[j] != 0)) total += graph.nlink[d][i];
      }
    }
  }
  return total;
}

}  // namespace grabcut
