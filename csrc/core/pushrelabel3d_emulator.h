// The GPU 3D push-relabel (cuda/mincut3d.cu) run on the host: the same per-voxel
// steps (core/pushrelabel3d.h) and the same schedule, each phase a plain loop over the
// voxels where the GPU launches a kernel. The steps of one phase read and write
// disjoint state, so a loop gives what a grid of threads gives, bit for bit; the CPU
// tests check this solver against the CPU's (core/maxflow3d.h) on graphs of every kind,
// which tests the algorithm where no GPU is, and a test hook of the extension runs it
// behind the CUDA kernel's reduction (bindings/mincut3d_device_path.h). Its state lies in
// one buffer in the GPU's layout (pr3d::carve_state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/pushrelabel3d.h"

namespace grabcut {

class Grid3dPushRelabelEmulator {
 public:
  Grid3dPushRelabelEmulator() = default;
  // The state's pointers point into state_.
  Grid3dPushRelabelEmulator(const Grid3dPushRelabelEmulator&) = delete;
  Grid3dPushRelabelEmulator& operator=(const Grid3dPushRelabelEmulator&) = delete;

  // `batch` graphs of depth x height x width voxels, in the layout of
  // core/pushrelabel3d.h (terminal[b * n + v], nlinks[(b * 3 + k) * n + v]): writes the
  // canonical cut (1 = source side) into source_side[b * n + v] and each graph's flow
  // value into flows[b]. Returns the schedule's counts; when `stop` ended it early
  // (pr3d::solve_schedule), Stats::stopped and nothing written.
  template <class Stop = pr3d::RunToTheEnd>
  pr3d::Stats solve(std::int64_t batch, int depth, int height, int width, const std::int32_t* terminal,
                    const std::int32_t* nlinks, std::uint8_t* source_side, std::int64_t* flows, Stop stop = {}) {
    if (batch <= 0 || depth <= 0 || height <= 0 || width <= 0) return {};
    const std::int64_t n = std::int64_t{depth} * height * width;
    if (n > (std::int64_t{1} << 28)) throw std::length_error("Grid3dPushRelabelEmulator: a graph of over 2^28 voxels");
    s_ = pr3d::grid3d_state(batch, depth, height, width, terminal, nlinks);
    state_.assign(pr3d::state_bytes(s_.total), 0);
    pr3d::carve_state(s_, label_, state_.data());
    cur_ = 0;
    const pr3d::Stats stats = pr3d::solve_schedule(*this, stop);
    if (stats.stopped) return stats;
    const std::int32_t* label = label_[cur_];
    for (std::int64_t b = 0; b < batch; ++b) {
      std::int64_t flow = 0;
      for (std::int64_t i = b * n; i < (b + 1) * n; ++i) {
        source_side[i] = pr3d::source_side_voxel(s_, i, label) ? 1 : 0;
        flow += pr3d::sink_flow_voxel(s_, i);
      }
      flows[b] = flow;
    }
    return stats;
  }

  // The schedule's backend (pr3d::solve_schedule).
  void start() {
    for (std::int64_t i = 0; i < s_.total; ++i) pr3d::init_voxel(s_, i);
  }
  void bfs_start() {
    for (std::int64_t i = 0; i < s_.total; ++i) pr3d::bfs_start_voxel(s_, i, label_[cur_]);
  }
  bool bfs_sweeps(int count) {
    bool changed = false;
    for (int k = 0; k < count; ++k) {
      changed = false;
      const std::int32_t* in = label_[cur_];
      std::int32_t* out = label_[1 - cur_];
      for (std::int64_t i = 0; i < s_.total; ++i) changed = pr3d::bfs_sweep_voxel(s_, i, in, out) || changed;
      cur_ = 1 - cur_;
    }
    return changed;
  }
  void phases(int count) {
    for (int k = 0; k < count; ++k) {
      const std::int32_t* in = label_[cur_];
      std::int32_t* out = label_[1 - cur_];
      for (std::int64_t i = 0; i < s_.total; ++i) pr3d::push_voxel(s_, i, in);
      // The kernel settles and relabels a voxel in one thread: relabel_voxel reads of
      // settle_voxel's writes only the voxel's own excess, and flows and labels no one
      // writes in this phase.
      for (std::int64_t i = 0; i < s_.total; ++i) {
        pr3d::settle_voxel(s_, i);
        pr3d::relabel_voxel(s_, i, in, out);
      }
      cur_ = 1 - cur_;
    }
  }
  bool any_active() const {
    for (std::int64_t i = 0; i < s_.total; ++i) {
      if (pr3d::active_voxel(s_, i, label_[cur_])) return true;
    }
    return false;
  }

 private:
  pr3d::Grid3dState s_;
  std::vector<unsigned char> state_;  // the arrays of s_ and label_, as carve_state lays them out
  std::int32_t* label_[2] = {nullptr, nullptr};
  int cur_ = 0;
};

}  // namespace grabcut
