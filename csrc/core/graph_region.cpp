#include "core/graph_region.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "core/common.h"

namespace grabcut {

GraphRegion::GraphRegion(const std::uint8_t* mask, int height, int width,
                         const std::int32_t* const nlink[kNumForwardDirections],
                         std::int32_t hard_background_capacity)
    : image_h_(height), image_w_(width), h_(height), w_(width) {
  for (int d = 0; d < kNumForwardDirections; ++d) image_nlink_[static_cast<std::size_t>(d)] = nlink[d];
  const auto at = [width](int y, int x) { return static_cast<std::size_t>(y) * width + x; };
  // Bounding box of the pixels that stay in the graph.
  int top = height;
  int bottom = -1;
  int left = width;
  int right = -1;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      bool merged = false;
      if (mask[at(y, x)] == kBackground) {
        std::int64_t links = 0;
        for (int d = 0; d < kNumForwardDirections; ++d) {
          links += nlink[d][at(y, x)];  // 0 where the neighbour is off the grid
          const int py = y - kForwardDy[d];
          const int px = x - kForwardDx[d];
          if (py >= 0 && px >= 0 && px < width) links += nlink[d][at(py, px)];
        }
        merged = links < hard_background_capacity;
      }
      if (merged) continue;
      top = std::min(top, y);
      bottom = std::max(bottom, y);
      left = std::min(left, x);
      right = std::max(right, x);
    }
  }
  // Nothing to merge, or nothing left (then the whole graph is solved as it is).
  if (bottom < 0 || (top == 0 && left == 0 && bottom == height - 1 && right == width - 1)) return;
  whole_ = false;
  y0_ = top;
  x0_ = left;
  h_ = bottom - top + 1;
  w_ = right - left + 1;
  const std::size_t n = static_cast<std::size_t>(h_) * w_;
  const auto inside = [this](int y, int x) { return y >= y0_ && y < y0_ + h_ && x >= x0_ && x < x0_ + w_; };
  nlink_storage_.assign(kNumForwardDirections * n, 0);
  outside_.assign(n, 0);
  terminal_.assign(n, 0);
  cut_.assign(n, 0);
  for (int ry = 0; ry < h_; ++ry) {
    for (int rx = 0; rx < w_; ++rx) {
      const int y = y0_ + ry;
      const int x = x0_ + rx;
      const std::size_t r = static_cast<std::size_t>(ry) * w_ + rx;
      for (int d = 0; d < kNumForwardDirections; ++d) {
        const std::int32_t forward = nlink[d][at(y, x)];
        if (inside(y + kForwardDy[d], x + kForwardDx[d])) {
          nlink_storage_[d * n + r] = forward;
        } else {
          outside_[r] += forward;  // to a merged pixel (or 0: off the grid)
        }
        const int py = y - kForwardDy[d];
        const int px = x - kForwardDx[d];
        if (py >= 0 && px >= 0 && px < width && !inside(py, px)) outside_[r] += nlink[d][at(py, px)];
      }
    }
  }
}

std::int64_t GraphRegion::solve(GridMaxflowSolver& solver, const std::int32_t* terminal, bool warm,
                                std::uint8_t* source_side) {
  GridGraphView graph;
  if (whole_) {
    graph.height = image_h_;
    graph.width = image_w_;
    graph.terminal = terminal;
    for (int d = 0; d < kNumForwardDirections; ++d) graph.nlink[d] = image_nlink_[static_cast<std::size_t>(d)];
    return warm ? solver.solve_warm(graph, source_side) : solver.solve(graph, source_side);
  }
  const std::size_t n = static_cast<std::size_t>(h_) * w_;
  // The links to merged pixels become sink capacity. Cut capacities in the region's
  // graph then differ from the whole graph's by the sum over its pixels of
  // min(max(t, 0), outside) whichever side each pixel is on, so the maximum flow
  // values differ by that constant.
  std::int64_t constant = 0;
  for (int ry = 0; ry < h_; ++ry) {
    const std::int32_t* row = terminal + static_cast<std::size_t>(y0_ + ry) * image_w_ + x0_;
    for (int rx = 0; rx < w_; ++rx) {
      const std::size_t r = static_cast<std::size_t>(ry) * w_ + rx;
      const std::int32_t t = row[rx];
      const std::int32_t o = outside_[r];
      terminal_[r] = t - o;  // |t| <= 9 gamma * 256 and o <= 6.9 gamma * 256: no overflow
      constant += std::min<std::int64_t>(std::max<std::int32_t>(t, 0), o);
    }
  }
  graph.height = h_;
  graph.width = w_;
  graph.terminal = terminal_.data();
  for (int d = 0; d < kNumForwardDirections; ++d) graph.nlink[d] = nlink_storage_.data() + d * n;
  const std::int64_t flow = warm ? solver.solve_warm(graph, cut_.data()) : solver.solve(graph, cut_.data());
  std::memset(source_side, 0, static_cast<std::size_t>(image_h_) * image_w_);
  for (int ry = 0; ry < h_; ++ry) {
    std::memcpy(source_side + static_cast<std::size_t>(y0_ + ry) * image_w_ + x0_,
                cut_.data() + static_cast<std::size_t>(ry) * w_, static_cast<std::size_t>(w_));
  }
  return flow + constant;
}

}  // namespace grabcut
