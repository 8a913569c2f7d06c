// Exact max-flow and the canonical minimum cut of a batch of 6-connected voxel grids
// by synchronous push-relabel: the per-voxel steps, shared by the CUDA kernels
// (cuda/mincut3d.cu) and the host emulator that the CPU tests run
// (core/pushrelabel3d_emulator.h), and the schedule both follow.
//
// The graph is the one of core/maxflow3d.h: per voxel a net terminal capacity t
// (t > 0: source -> voxel, t < 0: voxel -> sink) and an undirected n-link of integer
// capacity to each face neighbour, the three forward ones stored at each voxel. A
// batch is `batch` graphs of one size, depth x height x width voxels each (n), laid
// out graph after graph: terminal[b * n + v], nlinks[(b * 3 + k) * n + v], v = (z *
// height + y) * width + x, k = 0, 1, 2 the n-link to x + 1, y + 1, z + 1. Links that
// leave the grid are never read. Preconditions (what the caller checks): n-links in
// [0, 2^30 - 1], |t| <= 2^31 - 2, n <= 2^28.
//
// The algorithm. Goldberg and Tarjan's push-relabel (a preflow: the source arcs start
// saturated), every voxel a step at a time in lock step, in phases that read and write
// disjoint state so that any order of the voxels within a phase (a CUDA grid, or a
// plain loop) gives the same result bit for bit.
//
// The state, which is what fixes the memory: the graph (t and the three forward
// n-links, read only), and per voxel the flow on each of its three forward edges
// (from the voxel to its neighbour, in [-c, c]: the arc there has residual c - f, the
// arc back c + f, so each edge's two residuals cost one number beside its capacity),
// the excess (int64: t + the flow into the voxel over its six edges), two label
// buffers, and two bytes: which neighbours are on the grid, and which arcs had
// residual when the last global relabel began. A negative excess is the unused capacity of the voxel's sink arc: flow that
// reaches a voxel with sink capacity left goes on to the sink at once (a push along its
// sink arc, admissible: such a voxel's label is 1, see below), and a voxel with excess
// never sends more than it holds, so once the excess is >= 0 it stays so and the sink
// arc's residual, max(0, -excess), only shrinks.
//   1. push_voxel: each active voxel (excess > 0, label < dead) sends its excess along
//      admissible arcs (residual > 0, the other end's label = its label - 1) in
//      directions 0..5, adding the amounts to the edges' flows. It reads the labels and
//      its own excess, which no one writes in this phase, and an edge's flow only where
//      the neighbour's label is one below its own; the flow of an edge is written only
//      by the end that pushes along it. Neighbours u, v never both push along their edge
//      in one phase (h(u) = h(v) + 1 and h(v) = h(u) + 1), and a voxel reads the flow
//      of an edge only towards a lower neighbour, which cannot be pushing along it: no
//      flow is read and written, or written twice, in one phase.
//   2. settle_voxel: each voxel's excess from scratch, t plus the flows into it over its
//      six edges. It writes only its own excess; no atomics.
//   3. relabel_voxel: each voxel still active without an admissible arc takes the label
//      1 + the lowest label among the ends of its residual arcs, capped at dead; it
//      reads the labels of this phase and writes the next phase's labels (two buffers),
//      so voxels that relabel side by side see each other's old labels. Labels stay
//      valid (h(u) <= h(v) + 1 for every residual arc u -> v, h(u) <= 1 where the sink
//      arc has residual) because labels only grow: a voxel that relabels has h(u) <=
//      h(v) for every residual arc, so its new label is above its old one; and a voxel
//      with sink capacity left is never active, so it keeps the label 1 of the global
//      relabel.
// A voxel that keeps excess after its pushes has saturated every admissible arc, and
// pushes only create arcs to higher labels, so in every phase each active voxel either
// sends all its excess downhill or relabels (Goldberg and Tarjan's pulse): the phases
// end. dead = n + 1: a valid label is at most the voxel's distance to the sink, which
// is at most n where it is finite, so a voxel labelled dead cannot reach the sink, and
// it never becomes active again.
//
// Global relabel: the exact distance of every voxel to the sink in the residual graph
// (dead where it cannot reach it), by synchronous Bellman-Ford sweeps from "1 where
// the sink arc has residual, else dead" (bfs_start_voxel, bfs_sweep_voxel: each sweep
// reads one label buffer and writes the other) until a sweep changes nothing. Exact
// distances are a valid labelling and the highest one there is.
//
// Termination: no voxel is active. The preflow is then maximum: the flow value is what
// reached the sink, the sum over voxels of max(-t, 0) - max(-excess, 0). A last global
// relabel gives the canonical cut: source side = the voxels that cannot reach the
// sink in the residual graph (label dead), the cut of core/maxflow3d.h. Returning the
// excess of the stranded voxels to the source would change residuals only among voxels
// that cannot reach the sink, so that set is the one of a maximum flow.
//
// Ranges: a flow is in [-c, c] and a residual in [0, 2c], both int32 (c <= 2^30 - 1);
// an amount pushed is at most a residual; the excess, t plus at most six residuals in,
// is held in int64; labels are at most n + 1 (int32).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/common.h"

namespace grabcut::pr3d {

constexpr int kDirections = 6;  // 0..2: x + 1, y + 1, z + 1; 3..5: x - 1, y - 1, z - 1

// The state of a batch: arrays over all voxels of the batch (total = batch * voxels).
// Host pointers for the emulator, device pointers for the kernels.
struct Grid3dState {
  std::int64_t batch = 0;
  std::int64_t voxels = 0;  // per graph: depth * height * width
  std::int64_t total = 0;   // batch * voxels
  std::int32_t depth = 0, height = 0, width = 0;
  std::int32_t dead = 0;    // voxels + 1: the label of a voxel that cannot reach the sink
  const std::int32_t* terminal = nullptr;  // [total]
  const std::int32_t* nlinks = nullptr;    // [(b * 3 + k) * voxels + v]
  std::uint8_t* neighbours = nullptr;      // [total]: bit d set iff the neighbour in direction d is on the grid
  std::uint8_t* arcs = nullptr;            // [total]: bit d set iff the arc in direction d had residual when
                                           // the global relabel began (flows do not change during one)
  std::int32_t* flow = nullptr;            // [(b * 3 + k) * voxels + v]: on the n-link there, voxel -> neighbour
  std::int64_t* excess = nullptr;          // [total]: t + the flow in; < 0: the sink arc's residual, negated
};

// A state's geometry and graph: `batch` graphs of depth x height x width voxels, the
// terminals and n-links in the layout above; the scratch pointers are set by
// carve_state.
inline Grid3dState grid3d_state(std::int64_t batch, std::int32_t depth, std::int32_t height, std::int32_t width,
                                const std::int32_t* terminal, const std::int32_t* nlinks) {
  Grid3dState s;
  s.batch = batch;
  s.voxels = std::int64_t{depth} * height * width;
  s.total = batch * s.voxels;
  s.depth = depth;
  s.height = height;
  s.width = width;
  s.dead = static_cast<std::int32_t>(s.voxels + 1);
  s.terminal = terminal;
  s.nlinks = nlinks;
  return s;
}

// The solver's memory beside its graph, one layout for the CUDA workspace and the
// emulator's buffer: from `base` (null: only counted) the neighbour bits, the residual
// arc bits, the flows, the excess and the two label buffers, each at a multiple of 256
// bytes. Sets s's scratch pointers and label[0..1]; returns the bytes used. Per voxel:
// 1 + 1 + 3 * 4 + 8 + 2 * 4 = 30 bytes (kStateBytesPerVoxel).
constexpr std::size_t kStateAlignment = 256;
constexpr std::int64_t kStateBytesPerVoxel = 1 + 1 + 3 * 4 + 8 + 2 * 4;

inline std::size_t carve_state(Grid3dState& s, std::int32_t* label[2], unsigned char* base) {
  std::size_t used = 0;
  const auto take = [&](std::size_t bytes) -> unsigned char* {
    used = (used + kStateAlignment - 1) / kStateAlignment * kStateAlignment;
    unsigned char* at = base == nullptr ? nullptr : base + used;
    used += bytes;
    return at;
  };
  const auto n = static_cast<std::size_t>(s.total);
  s.neighbours = take(n);
  s.arcs = take(n);
  s.flow = reinterpret_cast<std::int32_t*>(take(3 * n * sizeof(std::int32_t)));
  s.excess = reinterpret_cast<std::int64_t*>(take(n * sizeof(std::int64_t)));
  label[0] = reinterpret_cast<std::int32_t*>(take(n * sizeof(std::int32_t)));
  label[1] = reinterpret_cast<std::int32_t*>(take(n * sizeof(std::int32_t)));
  return used;
}

// The bytes carve_state takes for `total` voxels.
inline std::size_t state_bytes(std::int64_t total) {
  Grid3dState s;
  s.total = total;
  std::int32_t* label[2] = {nullptr, nullptr};
  return carve_state(s, label, nullptr);
}

// What the GPU path of the 3D min-cut holds on the device for a batch of `total`
// voxels beside the caller's inputs (bindings/mincut3d_device_path.h): the graph in
// the solver's form (net terminal and three n-links, int32), the cut (uint8) and the
// solver's state; per graph a few int64 more (offsets, flows), not counted here.
inline std::size_t device_path_bytes(std::int64_t total) {
  return static_cast<std::size_t>(total) * (4 + 3 * 4 + 1) + state_bytes(total);
}

// The index step to the neighbour in direction d (within a graph; the neighbour bits
// keep every step on the grid).
GRABCUT_HD std::int64_t step(const Grid3dState& s, int d) {
  const std::int64_t plane = std::int64_t{s.width} * s.height;
  const std::int64_t forward = d % 3 == 0 ? 1 : (d % 3 == 1 ? std::int64_t{s.width} : plane);
  return d < 3 ? forward : -forward;
}

GRABCUT_HD bool has_neighbour(const Grid3dState& s, std::int64_t i, int d) { return ((s.neighbours[i] >> d) & 1U) != 0; }

// Where voxel i's edges live: the index of its edge 0 in the n-link layout,
// (b * 3 + 0) * voxels + v = i + 2 * b * voxels.
GRABCUT_HD std::int64_t edge_base(const Grid3dState& s, std::int64_t i) { return i + 2 * (i / s.voxels) * s.voxels; }

// The edge of voxel i's arc in direction d (base = edge_base(s, i)): its own forward
// edge for d < 3, the neighbour's forward edge towards i for d >= 3.
GRABCUT_HD std::int64_t arc_edge(const Grid3dState& s, std::int64_t base, int d) {
  return base + (d % 3) * s.voxels + (d < 3 ? 0 : step(s, d));
}

// The residual of the arc in direction d along edge e (the edge's flow runs from its
// voxel to the neighbour: forward arcs have c - f left, backward ones c + f).
GRABCUT_HD std::int32_t arc_residual(const Grid3dState& s, std::int64_t e, int d) {
  return d < 3 ? s.nlinks[e] - s.flow[e] : s.nlinks[e] + s.flow[e];
}

// Before everything: the neighbour bits, zero flow on the voxel's forward edges, and
// the excess t (the source arc saturated; t < 0 is the sink arc's capacity).
GRABCUT_HD void init_voxel(const Grid3dState& s, std::int64_t i) {
  const std::int64_t b = i / s.voxels, v = i - b * s.voxels;
  const std::int64_t x = v % s.width, y = (v / s.width) % s.height, z = v / (std::int64_t{s.width} * s.height);
  const unsigned bits = (x + 1 < s.width ? 1U : 0U) | (y + 1 < s.height ? 2U : 0U) | (z + 1 < s.depth ? 4U : 0U) |
                        (x > 0 ? 8U : 0U) | (y > 0 ? 16U : 0U) | (z > 0 ? 32U : 0U);
  s.neighbours[i] = static_cast<std::uint8_t>(bits);
  for (int k = 0; k < 3; ++k) s.flow[(b * 3 + k) * s.voxels + v] = 0;
  s.excess[i] = s.terminal[i];
}

// A global relabel's first labels: 1 where the sink arc has residual, else dead; and
// the voxel's arcs with residual, which its sweeps read (a byte instead of six
// capacities and six flows).
GRABCUT_HD void bfs_start_voxel(const Grid3dState& s, std::int64_t i, std::int32_t* out) {
  out[i] = s.excess[i] < 0 ? 1 : s.dead;
  const std::int64_t base = edge_base(s, i);
  unsigned bits = 0;
  for (int d = 0; d < kDirections; ++d) {
    if (has_neighbour(s, i, d) && arc_residual(s, arc_edge(s, base, d), d) > 0) bits |= 1U << d;
  }
  s.arcs[i] = static_cast<std::uint8_t>(bits);
}

// One sweep: out[i] = min(in[i], 1 + in[j] over the residual arcs i -> j). Returns
// whether the label changed.
GRABCUT_HD bool bfs_sweep_voxel(const Grid3dState& s, std::int64_t i, const std::int32_t* in, std::int32_t* out) {
  const std::int32_t old = in[i];
  std::int32_t best = old;
  const unsigned bits = s.arcs[i];
  for (int d = 0; d < kDirections; ++d) {
    if (((bits >> d) & 1U) == 0) continue;
    const std::int32_t via = in[i + step(s, d)] + 1;
    best = via < best ? via : best;
  }
  out[i] = best;
  return best != old;
}

GRABCUT_HD bool active_voxel(const Grid3dState& s, std::int64_t i, const std::int32_t* label) {
  return s.excess[i] > 0 && label[i] < s.dead;
}

// Phase 1: voxel i's pushes, added to the flows of the edges they go along.
GRABCUT_HD void push_voxel(const Grid3dState& s, std::int64_t i, const std::int32_t* label) {
  std::int64_t excess = s.excess[i];
  const std::int32_t h = label[i];
  if (excess <= 0 || h >= s.dead) return;
  const std::int64_t base = edge_base(s, i);
  for (int d = 0; d < kDirections && excess > 0; ++d) {
    // The label first: the flow of an edge to a neighbour that is not one below may be
    // the neighbour's to write in this phase.
    if (!has_neighbour(s, i, d) || label[i + step(s, d)] != h - 1) continue;
    const std::int64_t e = arc_edge(s, base, d);
    const std::int32_t r = arc_residual(s, e, d);
    if (r <= 0) continue;
    const std::int32_t amount = excess < r ? static_cast<std::int32_t>(excess) : r;
    s.flow[e] += d < 3 ? amount : -amount;
    excess -= amount;
  }
}

// Phase 2: voxel i's excess, t plus what its six edges bring in.
GRABCUT_HD void settle_voxel(const Grid3dState& s, std::int64_t i) {
  std::int64_t excess = s.terminal[i];
  const std::int64_t base = edge_base(s, i);
  for (int d = 0; d < kDirections; ++d) {
    if (!has_neighbour(s, i, d)) continue;
    const std::int32_t f = s.flow[arc_edge(s, base, d)];
    excess += d < 3 ? -std::int64_t{f} : std::int64_t{f};
  }
  s.excess[i] = excess;
}

// Phase 3: the next phase's label of voxel i (after settle_voxel on it).
GRABCUT_HD void relabel_voxel(const Grid3dState& s, std::int64_t i, const std::int32_t* in, std::int32_t* out) {
  const std::int32_t h = in[i];
  std::int32_t next = h;
  // An active voxel has no sink capacity left (its excess is positive).
  if (s.excess[i] > 0 && h < s.dead) {
    bool admissible = false;
    std::int32_t lowest = s.dead;
    const std::int64_t base = edge_base(s, i);
    for (int d = 0; d < kDirections; ++d) {
      if (!has_neighbour(s, i, d) || arc_residual(s, arc_edge(s, base, d), d) <= 0) continue;
      const std::int32_t l = in[i + step(s, d)];
      admissible = admissible || l == h - 1;
      lowest = l < lowest ? l : lowest;
    }
    if (!admissible) next = lowest < s.dead ? lowest + 1 : s.dead;
  }
  out[i] = next;
}

// After the last global relabel: whether voxel i is on the source side, and what it
// sent to the sink (its share of the flow value).
GRABCUT_HD bool source_side_voxel(const Grid3dState& s, std::int64_t i, const std::int32_t* label) {
  return label[i] >= s.dead;
}

GRABCUT_HD std::int64_t sink_flow_voxel(const Grid3dState& s, std::int64_t i) {
  const std::int64_t t = s.terminal[i], e = s.excess[i];
  return (t < 0 ? -t : 0) - (e < 0 ? -e : 0);
}

// The schedule, one for both backends. The host reads the device (a synchronisation)
// only to test for the end: of a global relabel every kSweepsPerCheck sweeps (did the
// last one change a label?), of the push-relabel phases every kPhasesPerCheck phases
// (is any voxel active?). A global relabel follows every max(kMinPhasesBetweenRelabels,
// sweeps of the last one) phases: its sweeps, about the longest distance to the sink,
// cost about as many launches as the phases between two of them.
constexpr int kSweepsPerCheck = 8;
constexpr int kPhasesPerCheck = 8;
constexpr int kMinPhasesBetweenRelabels = 16;

struct Stats {
  std::int64_t phases = 0;           // push-relabel phases (1-3 above)
  std::int64_t sweeps = 0;           // global relabel sweeps, the final one's included
  std::int64_t global_relabels = 0;  // the final one included
  std::int64_t checks = 0;           // host reads of the device
  bool stopped = false;              // `stop` asked to end early: no result
};

// The stop predicate of a schedule that always runs to the end.
struct RunToTheEnd {
  bool operator()() const { return false; }
};

// Backend: start() (init_voxel over the batch), bfs_start() (bfs_start_voxel into the
// current label buffer), bfs_sweeps(count) (count sweeps, each swapping the label
// buffers; returns whether the last one changed a label), phases(count) (count
// phases: push, settle, relabel into the other buffer, swap), any_active() (whether a
// voxel is active under the current labels). Afterwards the current labels are the
// final global relabel's: source_side_voxel and sink_flow_voxel give the result.
// stop() is asked at every check (where the host has just waited for the device): a
// long solve (a volume of long snakes takes thousands of phases) can then end at a
// user's Ctrl-C. Once it returns true the schedule returns at once with
// Stats::stopped set, and the state holds no result.
template <class Backend, class Stop = RunToTheEnd>
Stats solve_schedule(Backend& backend, Stop stop = {}) {
  Stats stats;
  const auto global_relabel = [&]() {
    backend.bfs_start();
    std::int64_t sweeps = 0;
    bool changed = true;
    while (changed && !stats.stopped) {
      changed = backend.bfs_sweeps(kSweepsPerCheck);
      sweeps += kSweepsPerCheck;
      ++stats.checks;
      stats.stopped = stop();
    }
    stats.sweeps += sweeps;
    ++stats.global_relabels;
    return sweeps;
  };
  backend.start();
  std::int64_t interval = global_relabel();
  std::int64_t since = 0;  // phases since the last global relabel
  while (!stats.stopped) {
    ++stats.checks;
    if (!backend.any_active()) break;
    stats.stopped = stop();
    if (stats.stopped) break;
    backend.phases(kPhasesPerCheck);
    stats.phases += kPhasesPerCheck;
    since += kPhasesPerCheck;
    if (since >= (interval > kMinPhasesBetweenRelabels ? interval : kMinPhasesBetweenRelabels)) {
      interval = global_relabel();
      since = 0;
    }
  }
  if (since > 0 && !stats.stopped) global_relabel();  // else the labels are a global relabel's already
  return stats;
}

}  // namespace grabcut::pr3d
