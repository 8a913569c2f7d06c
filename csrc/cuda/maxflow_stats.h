// The GPU max-flow's counters, for tests and benchmarks only (not
// part of the library's interface; see cuda/maxflow.cu for what the counters count).
#pragma once

#include <cuda_runtime.h>

#include <vector>

namespace grabcut::cuda::detail {

// Counters the solver leaves in the workspace header.
struct MaxflowStats {
  unsigned long long global_relabels = 0;  // BFS runs (outer iterations)
  unsigned long long bfs_sweeps = 0;       // grid-wide BFS sweeps
  unsigned long long push_sweeps = 0;      // grid-wide push-relabel sweeps
  unsigned long long bfs_tiles = 0;        // tiles relaxed in BFS sweeps
  unsigned long long push_tiles = 0;       // marked tiles visited in push sweeps
  unsigned long long grid_blocks = 0;      // blocks of the persistent kernel
  unsigned long long check_tiles = 0;      // tiles of live graphs checked (after each relabel)
  unsigned long long capped_relabels = 0;  // relabels stopped at MaxflowSchedule::bfs_cap
  // Profile, only from a build with GRABCUT_MAXFLOW_PHASE_CLOCK (bench_maxflow_cuda_phases),
  // else 0: the grid's nanoseconds in each phase, the blocks' summed working time in BFS
  // and push sweeps, and the push visits' rounds.
  unsigned long long bfs_ns = 0;
  unsigned long long check_ns = 0;
  unsigned long long push_ns = 0;
  unsigned long long bfs_busy_ns = 0;
  unsigned long long push_busy_ns = 0;
  unsigned long long push_rounds = 0;        // push-relabel rounds, summed over visits that ran
  unsigned long long push_visits_run = 0;    // visits that found an active pixel
  unsigned long long push_visits_capped = 0;  // visits that stopped at the round limit
  // The push visits of sweeps with fewer tiles than blocks (profiling build): how many,
  // their SM cycles by phase (load, first in-tile relaxation, rounds with the
  // relaxations between them, write-back: the pixels' deltas, halo inflow and sweep
  // lists), their rounds, the steps of their first relaxation, and how many started
  // from heights that one relaxation step leaves unchanged (exact already; region
  // heights).
  unsigned long long sparse_visits = 0;
  unsigned long long sparse_load_cycles = 0;
  unsigned long long sparse_relax_cycles = 0;
  unsigned long long sparse_rounds_cycles = 0;
  unsigned long long sparse_write_cycles = 0;
  unsigned long long sparse_rounds = 0;
  unsigned long long sparse_relax_steps = 0;
  unsigned long long sparse_exact_starts = 0;
};

// Copies the counters of the last solve on `stream` (synchronises that stream).
MaxflowStats maxflow_read_stats(const void* workspace, cudaStream_t stream);

// One grid-wide sweep of the last solve, from a GRABCUT_MAXFLOW_PHASE_CLOCK build:
// its kind, the tiles the blocks worked on in it and the grid's time from the barrier
// before it to the barrier that ended it.
enum class SweepKind : unsigned char { kNone = 0, kBfs = 1, kCheck = 2, kPush = 3 };
struct SweepRecord {
  SweepKind kind = SweepKind::kNone;
  unsigned int tiles = 0;
  unsigned long long ns = 0;
};
constexpr int kTraceSweeps = 16384;  // sweeps traced; a solve's later sweeps are left out

// The sweeps of the last solve of a profiling build, in order (synchronises `stream`;
// any other build returns none). The trace is the process's, not a workspace's: it
// holds the last solve of any batch.
std::vector<SweepRecord> maxflow_read_sweeps(cudaStream_t stream);

}  // namespace grabcut::cuda::detail
