// One push visit's in-tile work for the GPU max-flow (csrc/cuda/maxflow.cu): the
// synchronous push-relabel rounds and the exact in-tile relaxation, on a tile loaded into
// shared memory. In a header so that bench/bench_tile_round.cu times the solver's own
// round. Device code: include it from .cu files only. `TileShared` is the caller's
// shared-memory block; what these functions use of it:
//   unsigned int out[8][kThreads]   what each pixel sent along each arc in a round
//   int h[2][kPad]                  two label buffers over the padded tile
#pragma once

#include "cuda/maxflow_tile.h"

namespace grabcut::cuda::tile {

// One relaxation step at the padded slot me: the least of d and one above the label,
// in `labels` (a padded label buffer), of each neighbour over the arcs in mask.
__device__ __forceinline__ int relaxed_label(const int* labels, int me, unsigned int mask, int d) {
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    if (mask & (1U << k)) d = min(d, labels[me + dir_dy(k) * kPadW + dir_dx(k)] + 1);
  }
  return d;
}

// Jacobi relaxation of the tile's labels to their fixpoint, label = min over the
// arcs in `mask` of 1 + the label at the other end, from sh.h[0] (this thread's pixel
// at slot `me` holds d, the halo its frozen labels, in both buffers): every thread
// reads its neighbours' labels from one buffer and writes its own to the other, so one
// barrier a step is enough (no thread reads a buffer while it is written); a thread's
// own label lives in a register (d, updated). `relaxes`: this pixel may move. On
// return both buffers hold the fixpoint (the last step changed nothing). Returns
// whether this pixel's label fell. Block-uniform: every thread of the block calls it.
// steps (may be null; for profiles) counts the steps.
template <class TileShared>
__device__ __forceinline__ bool relax_to_fixpoint(TileShared& sh, int me, bool relaxes, unsigned int mask, int& d,
                                                  int* steps = nullptr) {
  bool changed = false;
  for (int par = 0;; par ^= 1) {
    if (steps != nullptr) ++*steps;
    bool ch = false;
    if (relaxes) {
      const int nd = relaxed_label(sh.h[par], me, mask, d);
      ch = nd < d;
      d = nd;
    }
    sh.h[par ^ 1][me] = d;
    changed = changed || ch;
    if (!__syncthreads_or(ch)) break;
  }
  return changed;
}

// The arcs of this pixel with residual capacity left (bit k: direction k).
__device__ __forceinline__ unsigned int residual_mask(const unsigned int (&res)[8]) {
  unsigned int mask = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    if (res[k] != 0U) mask |= 1U << k;
  }
  return mask;
}

// Region heights: the exact distances from every pixel of the tile loaded into sh to
// a sink pixel of the tile (excess < 0) or out through its frozen halo, over the arcs
// in `mask` (this pixel's arcs with residual capacity; relax_to_fixpoint, bfs_tile's
// relaxation). ex is this thread's pixel's excess; returns its height. On return both
// buffers hold the same heights, so a round may read either. steps: as relax_to_fixpoint's.
template <class TileShared>
__device__ __forceinline__ int relax_in_tile(TileShared& sh, bool valid, int tid, long long ex, unsigned int mask,
                                             int* steps = nullptr) {
  const int me = (tid / kTileW + 1) * kPadW + tid % kTileW + 1;
  int d = valid && ex < 0 ? 0 : kInf;
  __syncthreads();  // every thread is done reading the heights of the round before
  sh.h[0][me] = d;
  sh.h[1][me] = d;
  __syncthreads();
  relax_to_fixpoint(sh, me, valid && d != 0 && mask != 0U, mask, d, steps);
  return d;
}

// The synchronous push-relabel rounds of push_tile, up to local_rounds, on the tile
// loaded into sh; valid, ex, hm and res are this thread's pixel's (tid = ly * kTileW +
// lx: its excess, height and the residuals of its 8 arcs), updated on return.
// Returns the index of the last round run (local_rounds if every round ran).
// Every pixel's state lives in its own thread's registers and only that thread
// changes it: a round's push phase writes what the pixel sent along each arc to its
// outbox sh.out (zeros where it sent nothing), and after the barrier every pixel takes
// in what its in-tile neighbours sent it, which adds to its excess and to its residual
// back towards the sender. No shared-memory atomics and no thread writes another's
// state, so a round costs a few instructions an arc. What went into the halo needs no
// bookkeeping here: a halo pixel never pushes back within a visit, so push_tile reads
// it off the residuals at the end (res0 - res). The neighbours' heights come from label
// buffer `par` and a new height goes to the other buffer (so a round needs two
// barriers). kForce (for bench/bench_tile_round's latency rows) ends every round at a
// plain barrier, so that exactly local_rounds rounds run. relax_every (region heights,
// MaxflowSchedule::relax_every): exact heights again after every so many rounds that
// still pushed, as after one that pushed nothing (0: only then), unless no round follows.
template <bool kRegion, bool kForce = false, class TileShared>
__device__ __forceinline__ int push_sync_rounds(TileShared& sh, int local_rounds, bool valid, int tid, long long& ex,
                                                int& hm, unsigned int (&res)[8], int relax_every = 0) {
  const int lx = tid % kTileW;
  const int ly = tid / kTileW;
  const int me = (ly + 1) * kPadW + lx + 1;
  // The directions whose neighbour is a pixel of this tile (its outbox is read).
  const unsigned int inner = inner_directions(lx, ly);
  bool dirty = true;  // the outbox may hold something other than zeros
  int round = 0;
  for (int par = 0; round < local_rounds; ++round, par ^= 1) {
    int hn[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) hn[k] = sh.h[par][me + dir_dy(k) * kPadW + dir_dx(k)];
    // Push: to every residual neighbour strictly lower, directions 0..7 in turn.
    const bool active = valid && ex > 0 && hm < kInf;
    bool pushed = false;
    if (active || dirty) {
      long long left = active ? ex : 0;
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const unsigned int r = hn[k] < hm ? res[k] : 0U;
        const auto amount = static_cast<unsigned int>(min(left, static_cast<long long>(r)));
        res[k] -= amount;
        left -= amount;
        sh.out[k][tid] = amount;
        pushed = pushed || amount != 0U;
      }
      ex = active ? left : ex;
      dirty = active;
    }
    bool any_pushed = true;
    if constexpr (kRegion) {
      any_pushed = __syncthreads_or(pushed);
    } else {
      __syncthreads();
    }
    // Take in what the in-tile neighbours sent (neighbour k sent it along k ^ 4).
    if (valid) {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        if (inner & (1U << k)) {
          const unsigned int in = sh.out[k ^ 4][tid + dir_dy(k) * kTileW + dir_dx(k)];
          res[k] += in;
          ex += in;
        }
      }
    }
    // Relabel: an active pixel with no strictly lower residual neighbour rises to one
    // above its lowest residual neighbour (kInf if it has none). All pixels decide
    // from the heights the push phase saw.
    bool still = false;
    if (valid && ex > 0 && hm < kInf) {
      int m = kInf;
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        if (res[k] != 0U) m = min(m, hn[k]);
      }
      if (m >= hm) hm = m >= kInf - 1 ? kInf : m + 1;
      still = hm < kInf;
    }
    sh.h[par ^ 1][me] = hm;
    if constexpr (kForce) {
      __syncthreads();
    } else if (!__syncthreads_or(still)) {
      break;
    }
    // Region heights: a round that moved nothing ends on exact heights again (the
    // relabels of a stalled round only climb one step at a time towards them), and with
    // relax_every so does every relax_every-th round.
    if (kRegion && (!any_pushed || (relax_every > 0 && (round + 1) % relax_every == 0 && round + 1 < local_rounds))) {
      hm = relax_in_tile(sh, valid, tid, ex, residual_mask(res));
      if (!__syncthreads_or(valid && ex > 0 && hm < kInf)) break;
    }
  }
  return round;
}

}  // namespace grabcut::cuda::tile
