// Exact max-flow and canonical cut for a batch of grid graphs on the GPU: the CUDA
// twin of core/maxflow.h, with the same graph, the same cut and the same flow value.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/maxflow.h"
#include "cuda/batch.h"

namespace grabcut::cuda {

// Where graph b of a batch lives in the flat per-pixel arrays: pixels
// offset .. offset + height * width - 1, row-major (the stages' image descriptor).
using GridDesc = BatchImage;

// Device arrays of a batch of graphs, packed one after another (see GridDesc).
// terminal and nlink[d] are as in core/maxflow.h (net terminal capacities; forward
// n-links, 0 off the grid), total_pixels entries each.
struct BatchedGridGraph {
  std::vector<GridDesc> desc;  // host copy, one per graph
  std::int64_t total_pixels = 0;
  const std::int32_t* terminal = nullptr;
  const std::int32_t* nlink[kNumForwardDirections] = {nullptr, nullptr, nullptr, nullptr};
};

// How the solver schedules its work; every schedule gives the same cut and flow (the
// outputs are unique for a graph), only the time differs. The defaults are the
// measured best (bench/RESULTS.md); benchmarks and tests pass others.
struct MaxflowSchedule {
  int push_visits = 8;    // push-relabel visits of a tile between global relabels (>= 1)
  int local_rounds = 12;  // push-relabel rounds per visit (>= 1)
  // A global relabel stops after this many BFS sweeps (0: never). The
  // pixels its wave did not reach keep no finite label, so their excess waits for a
  // later relabel; when a check after a capped relabel finds nothing to push, the
  // next relabel runs to the end, and only an uncapped relabel ends a solve (its exact
  // labels give the cut). Capped at 12, most relabels stop where the wave has reached
  // the excess that can still move; a wave of hundreds of sweeps runs once, at the end.
  int bfs_cap = 12;
  // With bfs_cap: each time a capped relabel proves too short (the check after it
  // finds nothing to push, so a relabel to the end follows), the cap doubles for the
  // rest of the solve: the excess lies beyond it, and stopping short again wastes a
  // relabel. The cap starts again at bfs_cap in the next solve (a warm start's excess
  // lies elsewhere).
  bool grow_cap = true;
  // Region discharge (issue 33): heights are lexicographic, D * kRegionStep + the steps
  // inside the tile, where D counts the tile boundaries a residual path to the sink must
  // cross at least; a tile's halo stands at (D + 1) * kRegionStep. A push visit starts
  // from the exact heights inside its tile (a relaxation against the frozen halo, again
  // whenever a round pushes nothing) and so drains its excess to its own sinks first,
  // then out through its lowest boundary, up to local_rounds rounds; the global relabel
  // computes the same heights over the whole graph. Fewer grid-wide sweeps a solve,
  // longer visits. Off: v0.13c's pixel distances. A batch whose largest graph has more
  // than about 11,400 tiles (5.8 megapixels) runs pixel distances whatever this says:
  // beyond that, an exact region height could pass the solver's largest label.
  bool region = false;
  // With region heights: push sweeps alternate between the two colours of a
  // checkerboard of tiles, so no two tiles that share an edge are visited in one sweep
  // (a tile then takes what its neighbours sent in the sweep before instead of pushing
  // back at a stale label). Ignored without region heights.
  bool checkerboard = false;
  // With region heights: a push visit first checks, with one relaxation step, whether
  // its tile's stored heights are the exact ones already (the relaxation's fixpoint is
  // unique), and then starts from them instead of relaxing from scratch (~29% of a
  // latency-bound visit on GrabCut's graphs, bench/RESULTS.md). Costs one step a visit
  // where they are not. Off until measured.
  bool exact_start = false;
  // With region heights, on a warm start: before the usual solve, the sink capacity that
  // the new terminals opened inside the last cut's source side S is moved backward,
  // toward S's excess (the solver run on the reversed graph, S's pixels alone taking
  // part, the rest a wall), until a check finds none of it that can move (some may lie
  // beyond a capped relabel's reach: the usual solve takes it). After a
  // GrabCut iteration about half of S's pixels hold a little new sink capacity and S is
  // full of the excess the last solve left there: solved forward, each such sink sets
  // the whole pool moving until a relabel stops it; backward, each deficit meets excess
  // a few pixels away (bench/RESULTS.md, issue 33). A second launch, its own relabels:
  // GrabCut's batches take it (grabcut_schedule), one large graph loses by it.
  bool reverse_warm = false;
  // With region heights (not in reverse_warm's phase): a push sweep visits a listed tile
  // only if its lowest active region label is at most `band` above the lowest of its
  // graph's listed tiles; the others wait for a later sweep (0: every listed tile goes).
  // Excess near the sinks moves first; excess farther out is often found cut off by the
  // next relabel before it has moved. In the model (bench/model_region_discharge
  // --band 4, the GPU's schedule): -11% of the work on batches of 256x256 segmentation
  // graphs, a wash on GrabCut's crops, many more sweeps on one large graph. Off until
  // measured on the GPU.
  int band = 0;
  // With region heights: a global relabel's sweep lists for the next sweep only the
  // neighbours whose halo holds a region label of a tile that moved, not the tile
  // itself nor its other neighbours: the same labels, fewer tiles relaxed (the
  // model: the relabels' later sweeps -41%, all of GrabCut's batch work -12%). Off until
  // measured on the GPU.
  bool rim_lists = false;
  // With region heights: a push visit relaxes its heights to the exact ones again after
  // every relax_every rounds that still pushed, not only after a round that pushed
  // nothing (0: only then). With visits longer than it (local_rounds 24, relax_every
  // 16), the model's work on GrabCut's batches falls by about an eighth beside the rim
  // lists: after 16 rounds of one-step relabels the heights route excess poorly.
  // Off until measured on the GPU.
  int relax_every = 0;
};

// Region heights with 16 rounds a visit and 16 push sweeps between relabels, with or
// without the checkerboard: the schedules that beat the defaults where the flow
// travels far (large graphs, batches, segmentation graphs; bench/RESULTS.md, issue 33).
inline MaxflowSchedule region_schedule(bool checkerboard) {
  MaxflowSchedule s;
  s.push_visits = 16;
  s.local_rounds = 16;
  s.region = true;
  s.checkerboard = checkerboard;
  return s;
}

// Bytes of device scratch memory maxflow_cuda needs for this batch (the solver's
// state lives there between calls, which is what makes warm starts possible).
std::size_t maxflow_workspace_bytes(const std::vector<GridDesc>& desc);

// Solves every graph of the batch on `stream`. source_side (total_pixels bytes) gets
// the canonical cut (1 = source side: cannot reach the sink in the residual graph),
// flows (one int64 per graph, may be null) the max-flow value of each graph.
// warm_start: the workspace holds the state of a previous solve of a batch of the
// same layout and the same n-links, whose terminals alone changed; the solve
// starts from that flow instead of zero. All pointers are device pointers; nothing
// synchronises with the host except where the implementation documents it.
void maxflow_cuda(const BatchedGridGraph& graph, std::uint8_t* source_side, std::int64_t* flows, void* workspace,
                  std::size_t workspace_bytes, bool warm_start, cudaStream_t stream,
                  const MaxflowSchedule& schedule = {});

}  // namespace grabcut::cuda
