// Exact max-flow and the canonical minimum cut of a batch of 6-connected voxel grids
// by synchronous push-relabel: the per-voxel steps, shared by the CUDA kernels
// (cuda/pushrelabel3d.cu) and the host emulator that the CPU tests run
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
// saturated, so t > 0 is excess and t < 0 the sink arc's residual), every voxel a
// step at a time in lock step, in phases that read and write disjoint state so that
// any order of the voxels within a phase (a CUDA grid, or a plain loop) gives the same
// result bit for bit:
//   1. push_voxel: each active voxel (excess > 0, label < dead) sends its excess along
//      admissible arcs (residual > 0, label = the other end's label + 1; the sink's
//      label is 0), the sink first, then directions 0..5, and records the amount sent
//      along each arc. It writes only its own records and reads the labels, which no
//      one writes in this phase. Two neighbours never both push along one edge in one
//      phase: that would need h(u) = h(v) + 1 and h(v) = h(u) + 1.
//   2. apply_voxel: each voxel subtracts what it sent from its excess and its arcs'
//      residuals, and adds what its neighbours sent it (their records) to its excess
//      and to the residual of its arc back to them. It writes only its own state; no
//      atomics.
//   3. relabel_voxel: each voxel still active without an admissible arc takes the label
//      1 + the lowest label among the ends of its residual arcs (the sink's is 0),
//      capped at dead; it reads the labels of this phase and writes the next phase's
//      labels (two buffers), so voxels that relabel side by side see each other's old
//      labels. Labels stay valid (h(u) <= h(v) + 1 for every residual arc u -> v)
//      because labels only grow: a voxel that relabels has h(u) <= h(v) for every
//      residual arc, so its new label is above its old one.
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
// reached the sink, sum over voxels of max(-t, 0) - the sink arc's residual. A last
// global relabel gives the canonical cut: source side = the voxels that cannot reach
// the sink in the residual graph (label dead), the cut of core/maxflow3d.h. Returning
// the excess of the stranded voxels to the source would change residuals only among
// voxels that cannot reach the sink, so that set is the one of a maximum flow.
//
// Ranges: an n-link's two residuals add up to twice its capacity (int32, as in the CPU
// solver); an amount pushed is at most a residual (int32); the sink residual only
// shrinks (int32); excess is held in int64 (it can exceed int32: t plus the n-links);
// labels are at most n + 1 (int32).
#pragma once

#include <cstdint>

#include "core/common.h"

namespace grabcut::pr3d {

constexpr int kDirections = 6;  // 0..2: x + 1, y + 1, z + 1; 3..5: x - 1, y - 1, z - 1
constexpr int kRecords = 7;     // an amount per arc, and the sink's (kToSink)
constexpr int kToSink = 6;

GRABCUT_HD int opposite(int d) { return d < 3 ? d + 3 : d - 3; }

// The state of a batch: arrays over all voxels of the batch (total = batch * voxels),
// structure of arrays (entry d of voxel i at [d * total + i]). Host pointers for the
// emulator, device pointers for the kernels.
struct Grid3dState {
  std::int64_t batch = 0;
  std::int64_t voxels = 0;  // per graph: depth * height * width
  std::int64_t total = 0;   // batch * voxels
  std::int32_t depth = 0, height = 0, width = 0;
  std::int32_t dead = 0;    // voxels + 1: the label of a voxel that cannot reach the sink
  const std::int32_t* terminal = nullptr;  // [total]
  const std::int32_t* nlinks = nullptr;    // [(b * 3 + k) * voxels + v]
  std::uint8_t* neighbours = nullptr;      // [total]: bit d set iff the neighbour in direction d is on the grid
  std::int32_t* residual = nullptr;        // [6 * total]: the residual of the arc to the neighbour in direction d
  std::int64_t* excess = nullptr;          // [total]
  std::int32_t* sink = nullptr;            // [total]: the residual of the arc to the sink
  std::int32_t* pushed = nullptr;          // [7 * total]: this phase's amount along arc d, or to the sink (6)
};

// A state's geometry and graph: `batch` graphs of depth x height x width voxels, the
// terminals and n-links in the layout above; the scratch pointers are the caller's to set.
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

// The index step to the neighbour in direction d (within a graph; the neighbour bits
// keep every step on the grid).
GRABCUT_HD std::int64_t step(const Grid3dState& s, int d) {
  const std::int64_t plane = std::int64_t{s.width} * s.height;
  const std::int64_t forward = d % 3 == 0 ? 1 : (d % 3 == 1 ? std::int64_t{s.width} : plane);
  return d < 3 ? forward : -forward;
}

GRABCUT_HD bool has_neighbour(const Grid3dState& s, std::int64_t i, int d) { return ((s.neighbours[i] >> d) & 1U) != 0; }

// Before everything: the neighbour bits, the residuals (each n-link's capacity both
// ways), the excess (t > 0) and the sink residual (t < 0) of voxel i.
GRABCUT_HD void init_voxel(const Grid3dState& s, std::int64_t i) {
  const std::int64_t b = i / s.voxels, v = i - b * s.voxels;
  const std::int64_t x = v % s.width, y = (v / s.width) % s.height, z = v / (std::int64_t{s.width} * s.height);
  const unsigned bits = (x + 1 < s.width ? 1U : 0U) | (y + 1 < s.height ? 2U : 0U) | (z + 1 < s.depth ? 4U : 0U) |
                        (x > 0 ? 8U : 0U) | (y > 0 ? 16U : 0U) | (z > 0 ? 32U : 0U);
  s.neighbours[i] = static_cast<std::uint8_t>(bits);
  for (int k = 0; k < 3; ++k) {
    const std::int32_t* link = s.nlinks + (b * 3 + k) * s.voxels;
    s.residual[k * s.total + i] = ((bits >> k) & 1U) != 0 ? link[v] : 0;
    s.residual[(k + 3) * s.total + i] = ((bits >> (k + 3)) & 1U) != 0 ? link[v + step(s, k + 3)] : 0;
  }
  const std::int64_t t = s.terminal[i];
  s.excess[i] = t > 0 ? t : 0;
  s.sink[i] = static_cast<std::int32_t>(t < 0 ? -t : 0);
}

// A global relabel's first labels: 1 where the sink arc has residual, else dead.
GRABCUT_HD void bfs_start_voxel(const Grid3dState& s, std::int64_t i, std::int32_t* out) {
  out[i] = s.sink[i] > 0 ? 1 : s.dead;
}

// One sweep: out[i] = min(in[i], 1 + in[j] over the residual arcs i -> j). Returns
// whether the label changed.
GRABCUT_HD bool bfs_sweep_voxel(const Grid3dState& s, std::int64_t i, const std::int32_t* in, std::int32_t* out) {
  const std::int32_t old = in[i];
  std::int32_t best = old;
  for (int d = 0; d < kDirections; ++d) {
    if (!has_neighbour(s, i, d) || s.residual[d * s.total + i] <= 0) continue;
    const std::int32_t via = in[i + step(s, d)] + 1;
    best = via < best ? via : best;
  }
  out[i] = best;
  return best != old;
}

GRABCUT_HD bool active_voxel(const Grid3dState& s, std::int64_t i, const std::int32_t* label) {
  return s.excess[i] > 0 && label[i] < s.dead;
}

// Phase 1: the amounts voxel i sends this phase, recorded in s.pushed (0 where none).
GRABCUT_HD void push_voxel(const Grid3dState& s, std::int64_t i, const std::int32_t* label) {
  std::int32_t amount[kRecords] = {0, 0, 0, 0, 0, 0, 0};
  std::int64_t excess = s.excess[i];
  const std::int32_t h = label[i];
  if (excess > 0 && h < s.dead) {
    const std::int32_t to_sink = s.sink[i];
    if (h == 1 && to_sink > 0) {
      amount[kToSink] = excess < to_sink ? static_cast<std::int32_t>(excess) : to_sink;
      excess -= amount[kToSink];
    }
    for (int d = 0; d < kDirections && excess > 0; ++d) {
      if (!has_neighbour(s, i, d)) continue;
      const std::int32_t r = s.residual[d * s.total + i];
      if (r <= 0 || label[i + step(s, d)] != h - 1) continue;
      amount[d] = excess < r ? static_cast<std::int32_t>(excess) : r;
      excess -= amount[d];
    }
  }
  for (int d = 0; d < kRecords; ++d) s.pushed[d * s.total + i] = amount[d];
}

// Phase 2: voxel i's own pushes out, and its neighbours' pushes in.
GRABCUT_HD void apply_voxel(const Grid3dState& s, std::int64_t i) {
  std::int64_t excess = s.excess[i];
  const std::int32_t to_sink = s.pushed[kToSink * s.total + i];
  excess -= to_sink;
  s.sink[i] -= to_sink;
  for (int d = 0; d < kDirections; ++d) {
    const std::int32_t out = s.pushed[d * s.total + i];
    std::int32_t r = s.residual[d * s.total + i] - out;
    excess -= out;
    if (has_neighbour(s, i, d)) {
      const std::int32_t in = s.pushed[opposite(d) * s.total + i + step(s, d)];
      r += in;
      excess += in;
    }
    s.residual[d * s.total + i] = r;
  }
  s.excess[i] = excess;
}

// Phase 3: the next phase's label of voxel i (after apply_voxel on it).
GRABCUT_HD void relabel_voxel(const Grid3dState& s, std::int64_t i, const std::int32_t* in, std::int32_t* out) {
  const std::int32_t h = in[i];
  std::int32_t next = h;
  if (s.excess[i] > 0 && h < s.dead) {
    const bool to_sink = s.sink[i] > 0;
    bool admissible = to_sink && h == 1;
    std::int32_t lowest = to_sink ? 0 : s.dead;
    for (int d = 0; d < kDirections; ++d) {
      if (!has_neighbour(s, i, d) || s.residual[d * s.total + i] <= 0) continue;
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
  const std::int64_t t = s.terminal[i];
  return (t < 0 ? -t : 0) - s.sink[i];
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
};

// Backend: start() (init_voxel over the batch), bfs_start() (bfs_start_voxel into the
// current label buffer), bfs_sweeps(count) (count sweeps, each swapping the label
// buffers; returns whether the last one changed a label), phases(count) (count
// phases: push, apply, relabel into the other buffer, swap), any_active() (whether a
// voxel is active under the current labels). Afterwards the current labels are the
// final global relabel's: source_side_voxel and sink_flow_voxel give the result.
template <class Backend>
Stats solve_schedule(Backend& backend) {
  Stats stats;
  const auto global_relabel = [&]() {
    backend.bfs_start();
    std::int64_t sweeps = 0;
    bool changed = true;
    while (changed) {
      changed = backend.bfs_sweeps(kSweepsPerCheck);
      sweeps += kSweepsPerCheck;
      ++stats.checks;
    }
    stats.sweeps += sweeps;
    ++stats.global_relabels;
    return sweeps;
  };
  backend.start();
  std::int64_t interval = global_relabel();
  std::int64_t since = 0;  // phases since the last global relabel
  for (;;) {
    ++stats.checks;
    if (!backend.any_active()) break;
    backend.phases(kPhasesPerCheck);
    stats.phases += kPhasesPerCheck;
    since += kPhasesPerCheck;
    if (since >= (interval > kMinPhasesBetweenRelabels ? interval : kMinPhasesBetweenRelabels)) {
      interval = global_relabel();
      since = 0;
    }
  }
  if (since > 0) global_relabel();  // else the labels are a global relabel's already
  return stats;
}

}  // namespace grabcut::pr3d
