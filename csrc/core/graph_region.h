// The part of a GrabCut graph the CPU max-flow has to solve.
//
// A hard background pixel (label GC_BGD, net terminal -c with c = rint(256 lambda))
// whose n-links add up to less than c is on the sink side of every minimum cut: all
// the flow it can ever receive is less than its sink capacity, so its sink edge is
// never saturated and it reaches the sink in the residual graph of any maximum flow.
// Such pixels can be merged into the sink: the link from a kept pixel q to one of
// them becomes sink capacity of q. The canonical cut of the kept pixels is then the
// same, and the flow value differs by a constant that is added back (see solve).
// With a box (GC_INIT_WITH_RECT) every pixel outside it is one of these, so the
// solver works on the box alone, which is often half the image or less.
//
// The region is the bounding box of the pixels that cannot be merged; the merged
// set does not change between iterations (hard labels and n-links stay), so the
// solver's warm starts carry over.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/maxflow.h"

namespace grabcut {

class GraphRegion {
 public:
  // `mask` and the n-links of the whole image (height x width, as nlinks_cpu gives),
  // and the terminal capacity of a hard background pixel. The n-link arrays must
  // outlive the region (it solves on them when the region is the whole image).
  GraphRegion(const std::uint8_t* mask, int height, int width, const std::int32_t* const nlink[kNumForwardDirections],
              std::int32_t hard_background_capacity);

  bool whole_image() const { return whole_; }
  int y0() const { return y0_; }
  int x0() const { return x0_; }
  int height() const { return h_; }
  int width() const { return w_; }

  // Solves the graph of the whole image with these terminals (height * width) on the
  // region and writes the canonical cut of the whole image (merged pixels: sink
  // side, 0). Returns the maximum flow value of the whole image's graph. `warm`:
  // start from the solver's last flow (GridMaxflowSolver::solve_warm).
  std::int64_t solve(GridMaxflowSolver& solver, const std::int32_t* terminal, bool warm, std::uint8_t* source_side);

 private:
  int image_h_ = 0;
  int image_w_ = 0;
  int y0_ = 0;
  int x0_ = 0;
  int h_ = 0;
  int w_ = 0;
  bool whole_ = true;
  std::array<const std::int32_t*, kNumForwardDirections> image_nlink_{};  // the whole image's (not owned)
  std::vector<std::int32_t> nlink_storage_;  // the region's n-links, kNumForwardDirections planes
  std::vector<std::int32_t> outside_;        // per region pixel: capacity of its links to merged pixels
  std::vector<std::int32_t> terminal_;       // the region's terminals for the solver
  std::vector<std::uint8_t> cut_;            // the region's cut
};

}  // namespace grabcut
