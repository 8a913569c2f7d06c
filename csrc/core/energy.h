// GrabCut's energy as integer graph capacities (OpenCV's energy, DESIGN.md section 2):
// beta from the mean squared colour difference of the 4 forward neighbour pairs,
// n-links gamma * exp(-beta |dc|^2) (over sqrt 2 on diagonals), t-links from the
// two mixtures, hard pixels tied with lambda = 9 gamma. Every capacity is
// rint(kCapacityScale * energy); the per-pixel math is shared by both backends.
#pragma once

#include <cstdint>

#include "core/common.h"
#include "core/gmm.h"
#include "core/maxflow.h"
#include "core/portable_math.h"

namespace grabcut {

constexpr double kInvSqrt2 = 0.70710678118654752440;
// Largest squared distance between two uint8 colours.
constexpr int kMaxSquaredDistance = 3 * 255 * 255;

// Number of (left, up-left, up, up-right) neighbour pairs in an h x w image.
GRABCUT_HD std::int64_t neighbour_pair_count(std::int64_t h, std::int64_t w) {
  return 4 * w * h - 3 * w - 3 * h + 2;
}

// beta = 1 / (2 * mean squared difference); 0 for a flat image (all n-links gamma).
GRABCUT_HD double beta_from_sum(std::int64_t sum_sq_diff, std::int64_t h, std::int64_t w) {
  const std::int64_t pairs = neighbour_pair_count(h, w);
  if (sum_sq_diff <= 0 || pairs <= 0) return 0.0;
  return 1.0 / (2.0 * static_cast<double>(sum_sq_diff) / static_cast<double>(pairs));
}

GRABCUT_HD std::int32_t to_capacity(double energy) {
  return static_cast<std::int32_t>(rint(energy * kCapacityScale));
}

// Capacity of an n-link between colours at squared distance d2.
GRABCUT_HD std::int32_t nlink_capacity(double gamma, double beta, int d2, bool diagonal) {
  const double w = (diagonal ? gamma * kInvSqrt2 : gamma) * portable_exp(-beta * static_cast<double>(d2));
  return to_capacity(w);
}

GRABCUT_HD double lambda_of(double gamma) { return kLambdaPerGamma * gamma; }

// Net terminal capacity (source minus sink) of a pixel: for probable pixels
// -log p_bg(c) - (-log p_fg(c)) clamped to +-lambda; hard pixels get +-lambda.
GRABCUT_HD std::int32_t terminal_capacity(std::uint8_t label, double lambda, const ComponentEval* bg,
                                          const ComponentEval* fg, int k, double c0, double c1, double c2) {
  if (label == kBackground) return -to_capacity(lambda);
  if (label == kForeground) return to_capacity(lambda);
  double net = mixture_log_density(fg, k, c0, c1, c2) - mixture_log_density(bg, k, c0, c1, c2);
  if (net > lambda) net = lambda;
  if (net < -lambda) net = -lambda;
  return to_capacity(net);
}

// ---- CPU stages (planar images, n = h * w). ----

// Sum over the 4 forward neighbour pairs of the squared colour difference.
std::int64_t sum_squared_differences_cpu(const std::uint8_t* image, int h, int w);

// The 4 forward n-link arrays (NlinkDirection order), each h * w, 0 off the grid.
void nlinks_cpu(const std::uint8_t* image, int h, int w, double gamma, double beta,
                std::int32_t* const nlink[kNumForwardDirections]);

// Net terminal capacities from the mask and the model (2 * k rows).
void tlinks_cpu(const std::uint8_t* image, const std::uint8_t* mask, std::int64_t n, int k,
                const double* model, double gamma, std::int32_t* terminal);

}  // namespace grabcut
