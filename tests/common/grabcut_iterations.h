// The graphs a real GrabCut run hands its max-flow, one per iteration, for the
// benchmarks and models of the solvers: the loop of grabcut_cpu (core/driver.cpp)
// from a box, stage for stage, except that every graph is the whole image's (the
// GPU solves the whole image; the CPU driver leaves settled hard background out).
//
// Header-only host code over the core library's stages; link grabcut_core.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/grid_graph.h"
#include "core/common.h"
#include "core/driver.h"
#include "core/energy.h"
#include "core/gmm.h"
#include "core/maxflow.h"

namespace grabcut::testing {

struct GrabCutIterations {
  int height = 0;
  int width = 0;
  std::array<std::vector<std::int32_t>, 4> nlink;      // the same in every iteration
  std::vector<std::vector<std::int32_t>> terminals;    // one per iteration run
  std::vector<std::uint8_t> mask;                      // the labels after the last one

  // The graph of iteration i (copies its arrays).
  HostGridGraph graph(std::size_t i) const {
    HostGridGraph g(height, width);
    g.terminal = terminals.at(i);
    g.nlink = nlink;
    return g;
  }
};

// The labels of a box start: PR_FGD in x0 <= x < x1, y0 <= y < y1, BGD elsewhere.
inline std::vector<std::uint8_t> box_labels(int height, int width, int x0, int y0, int x1, int y1) {
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(height) * static_cast<std::size_t>(width), kBackground);
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) mask[static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + x] = kProbForeground;
  }
  return mask;
}

// Runs GrabCut (default options, at most max_iter iterations, the driver's stopping
// rule) on an 8-bit planar 3-channel image (channel c of pixel p at c * h * w + p, as
// the core takes it) from the box x0 <= x < x1, y0 <= y < y1, and
// returns each iteration's graph. Throws std::invalid_argument as grabcut_cpu does
// (an empty class). The caller can check the loop against grabcut_cpu: the final
// masks must be equal.
inline GrabCutIterations grabcut_iterations(const std::uint8_t* image, int height, int width, int x0, int y0,
                                            int x1, int y1, int max_iter = 5) {
  GrabCutIterations out;
  out.height = height;
  out.width = width;
  const std::int64_t n = static_cast<std::int64_t>(height) * width;
  out.mask = box_labels(height, width, x0, y0, x1, y1);
  const GrabCutOptions options;
  const int k = options.components;
  std::vector<double> model(static_cast<std::size_t>(2 * k * kParamsPerComponent));
  std::vector<std::uint8_t> component(static_cast<std::size_t>(n), 0);
  kmeans_init_cpu(image, out.mask.data(), n, k, options.seed, component.data());
  learn_gmms_cpu(image, out.mask.data(), n, k, component.data(), model.data());
  std::vector<std::uint8_t> previous_component = component;
  IterationHistory history;
  history.has_previous = true;

  const double beta = beta_from_sum(sum_squared_differences_cpu(image, height, width), height, width);
  std::int32_t* nlink[kNumForwardDirections];
  for (int d = 0; d < kNumForwardDirections; ++d) {
    out.nlink[d].assign(static_cast<std::size_t>(n), 0);
    nlink[d] = out.nlink[d].data();
  }
  nlinks_cpu(image, height, width, options.gamma, beta, nlink);

  GridMaxflowSolver solver;
  std::vector<std::uint8_t> source_side(static_cast<std::size_t>(n));
  for (int iter = 0; iter < max_iter; ++iter) {
    assign_components_cpu(image, out.mask.data(), n, k, model.data(), component.data());
    learn_gmms_cpu(image, out.mask.data(), n, k, component.data(), model.data());
    std::vector<std::int32_t> terminal(static_cast<std::size_t>(n));
    tlinks_cpu(image, out.mask.data(), n, k, model.data(), options.gamma, terminal.data());
    GridGraphView view;
    view.height = height;
    view.width = width;
    view.terminal = terminal.data();
    for (int d = 0; d < kNumForwardDirections; ++d) view.nlink[d] = nlink[d];
    solver.solve_warm(view, source_side.data());
    out.terminals.push_back(std::move(terminal));
    bool mask_changed = false;
    for (std::int64_t p = 0; p < n; ++p) {
      if (relabel_from_cut(out.mask.data() + p, source_side.data() + p)) mask_changed = true;
    }
    const bool components_changed = component != previous_component;
    if (stop_after_iteration(history, options.freeze_model, mask_changed, components_changed)) break;
    previous_component = component;
  }
  return out;
}

}  // namespace grabcut::testing
