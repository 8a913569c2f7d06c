// GrabCut-like grid graphs for the max-flow tests and benchmarks (CPU and CUDA): the
// graph one GrabCut iteration on a photo hands the solver. A colour field with an
// object in it; OpenCV's n-links gamma * exp(-beta * |dc|^2) (diagonals divided by
// sqrt 2, beta from the four forward pairs) scaled by 256; inside a region around the
// object noisy t-links (the object evidence plus Gaussian noise, clamped to +-lambda),
// outside it hard background (-lambda, lambda = 9 gamma).
//
// Header-only host code, also compiled by nvcc. A graph depends only on (h, w, seed,
// options) and on nothing a test or benchmark could share with the solver.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "common/grid_graph.h"

namespace grabcut::testing {

// The colour field and object under the graph. The users were written against these
// scenes with fixed seeds, so each keeps the exact graphs its tests and recorded
// benchmark numbers were made on.
enum class GrabCutScene {
  // Six random plane waves per channel over an ellipse with a wavy edge; t-links in a
  // box of margin 1/10, evidence +-1.5 (bench/bench_maxflow.cpp).
  kWaves,
  // A fixed ripple over a plain ellipse; t-links in a box of margin 1/8, evidence +-2
  // (tests/core).
  kRipples,
  // A bilinearly interpolated random grid of three colour channels and an object score;
  // t-links inside a border of 1/16 of the shorter side, evidence 8 (score - 0.45)
  // (tests/cuda).
  kSmoothScore,
  // kSmoothScore computed in float (bench/bench_maxflow_cuda.cu).
  kSmoothScoreFloat,
};

struct GrabCutGraphOptions {
  GrabCutScene scene = GrabCutScene::kSmoothScore;
  // Standard deviation of the t-link noise in energy units: larger, a harder cut.
  double noise = 4.0;
};

// The energy scale: capacities are round(256 * energy), gamma = 50, lambda = 9 gamma.
inline constexpr double kGrabCutGamma = 50.0;
inline constexpr double kGrabCutScale = 256.0;
inline constexpr std::int32_t kGrabCutHardBackground = -static_cast<std::int32_t>(9 * kGrabCutGamma * kGrabCutScale);

namespace detail {

inline std::size_t pixel_index(int y, int x, int w) {
  return static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x);
}

// What a scene hands the graph builder: three colours per pixel in Real (the precision
// |dc|^2 is computed in), each pixel's t-link before noise, and the margins outside
// which pixels are hard background.
template <typename Real>
struct GrabCutScenePixels {
  std::vector<Real> colour;
  std::vector<double> evidence;
  int margin_y = 0;
  int margin_x = 0;
};

// The n-links from the colours, the t-links from the evidence plus noise * normal(rng)
// in row-major order over the pixels inside the margins.
template <typename Real, typename Engine, typename Normal>
HostGridGraph grabcut_graph_from(int h, int w, const GrabCutScenePixels<Real>& s, double noise, Engine& rng,
                                 Normal& normal) {
  HostGridGraph g(h, w);
  auto index = [w](int y, int x) { return pixel_index(y, x, w); };
  auto dist2 = [&s](std::size_t i, std::size_t j) {
    Real sum = 0;
    for (std::size_t c = 0; c < 3; ++c) {
      const Real d = s.colour[3 * i + c] - s.colour[3 * j + c];
      sum += d * d;
    }
    return static_cast<double>(sum);
  };
  double sum = 0;
  std::int64_t count = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int d = 0; d < 4; ++d) {
        if (!g.has_neighbour(y, x, d)) continue;
        sum += dist2(index(y, x), index(y + kForwardDy[d], x + kForwardDx[d]));
        ++count;
      }
    }
  }
  const double beta = sum > 0 ? 1.0 / (2.0 * sum / static_cast<double>(count)) : 0.0;
  set_nlinks(g, true, [&](int y, int x, int d) {
    double v = kGrabCutScale * kGrabCutGamma *
               std::exp(-beta * dist2(index(y, x), index(y + kForwardDy[d], x + kForwardDx[d])));
    if (d == 1 || d == 3) v /= std::sqrt(2.0);
    return static_cast<std::int32_t>(std::lround(v));
  });
  const long hard = kGrabCutHardBackground;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::size_t i = index(y, x);
      if (y < s.margin_y || x < s.margin_x || y >= h - s.margin_y || x >= w - s.margin_x) {
        g.terminal[i] = kGrabCutHardBackground;
        continue;
      }
      const double t = s.evidence[i] + noise * static_cast<double>(normal(rng));
      g.terminal[i] = static_cast<std::int32_t>(std::clamp(std::lround(kGrabCutScale * t), hard, -hard));
    }
  }
  return g;
}

inline HostGridGraph grabcut_graph_waves(int h, int w, std::uint64_t seed, double noise) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  constexpr double kPi = 3.14159265358979323846;
  struct Wave {
    double ky, kx, phase, amplitude;
  };
  std::array<std::array<Wave, 6>, 3> waves;
  for (auto& channel : waves) {
    for (auto& wave : channel) {
      const double angle = 2 * kPi * uniform(rng);
      const double freq = 2 * kPi * (1.0 + 15.0 * uniform(rng)) / w;
      wave = {freq * std::sin(angle), freq * std::cos(angle), 2 * kPi * uniform(rng), 10.0 + 30.0 * uniform(rng)};
    }
  }
  const std::size_t n = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  GrabCutScenePixels<double> s{std::vector<double>(3 * n), std::vector<double>(n), h / 10, w / 10};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::size_t i = pixel_index(y, x, w);
      const double ey = (y - 0.5 * h) / (0.32 * h);
      const double ex = (x - 0.5 * w) / (0.27 * w);
      const bool object = ey * ey + ex * ex < 1.0 + 0.1 * std::sin(8 * std::atan2(ey, ex));
      for (int k = 0; k < 3; ++k) {
        double c = object ? 170.0 - 35.0 * k : 70.0 + 25.0 * k;
        for (const Wave& wave : waves[static_cast<std::size_t>(k)]) {
          c += wave.amplitude * std::sin(wave.ky * y + wave.kx * x + wave.phase);
        }
        // Colours of a float image.
        s.colour[3 * i + static_cast<std::size_t>(k)] = static_cast<double>(static_cast<float>(c + 4.0 * normal(rng)));
      }
      s.evidence[i] = object ? 1.5 : -1.5;
    }
  }
  return grabcut_graph_from(h, w, s, noise, rng, normal);
}

inline HostGridGraph grabcut_graph_ripples(int h, int w, std::uint64_t seed, double noise) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  const std::size_t n = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  GrabCutScenePixels<double> s{std::vector<double>(3 * n), std::vector<double>(n), h / 8, w / 8};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::size_t i = pixel_index(y, x, w);
      const double ey = (y - 0.5 * h) / (0.3 * h);
      const double ex = (x - 0.5 * w) / (0.25 * w);
      const bool object = ey * ey + ex * ex < 1.0;
      for (int k = 0; k < 3; ++k) {
        const double base = object ? 180.0 - 40.0 * k : 60.0 + 30.0 * k;
        s.colour[3 * i + static_cast<std::size_t>(k)] =
            base + 25.0 * std::sin(0.05 * x + 0.9 * k) * std::cos(0.07 * y) + 6.0 * normal(rng);
      }
      s.evidence[i] = object ? 2.0 : -2.0;
    }
  }
  return grabcut_graph_from(h, w, s, noise, rng, normal);
}

template <typename Real>
HostGridGraph grabcut_graph_smooth_score(int h, int w, std::uint64_t seed, double noise) {
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  std::uniform_real_distribution<Real> uniform(0, 1);
  std::normal_distribution<Real> normal(0, 1);
  // Control points every ~24 pixels, four channels each: three colours and the score.
  const int gh = h / 24 + 2;
  const int gw = w / 24 + 2;
  std::vector<Real> ctrl(static_cast<std::size_t>(gh) * static_cast<std::size_t>(gw) * 4);
  for (auto& v : ctrl) v = uniform(rng);
  auto field = [&](int y, int x, int c) {
    const Real fy = static_cast<Real>(y) / static_cast<Real>(std::max(1, h - 1)) * static_cast<Real>(gh - 1);
    const Real fx = static_cast<Real>(x) / static_cast<Real>(std::max(1, w - 1)) * static_cast<Real>(gw - 1);
    const int y0 = std::min(static_cast<int>(fy), gh - 2);
    const int x0 = std::min(static_cast<int>(fx), gw - 2);
    const Real ty = fy - static_cast<Real>(y0);
    const Real tx = fx - static_cast<Real>(x0);
    auto at = [&](int yy, int xx) {
      return ctrl[(static_cast<std::size_t>(yy) * static_cast<std::size_t>(gw) + static_cast<std::size_t>(xx)) * 4 +
                  static_cast<std::size_t>(c)];
    };
    return (1 - ty) * ((1 - tx) * at(y0, x0) + tx * at(y0, x0 + 1)) +
           ty * ((1 - tx) * at(y0 + 1, x0) + tx * at(y0 + 1, x0 + 1));
  };
  const std::size_t n = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  const int margin = std::max(1, std::min(h, w) / 16);
  GrabCutScenePixels<Real> s{std::vector<Real>(3 * n), std::vector<double>(n), margin, margin};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::size_t i = pixel_index(y, x, w);
      for (int c = 0; c < 3; ++c) {
        s.colour[3 * i + static_cast<std::size_t>(c)] =
            static_cast<Real>(255) * field(y, x, c) + static_cast<Real>(6) * normal(rng);
      }
      s.evidence[i] = 8.0 * (static_cast<double>(field(y, x, 3)) - 0.45);
    }
  }
  return grabcut_graph_from(h, w, s, noise, rng, normal);
}

}  // namespace detail

// The GrabCut-like graph of an h x w image (h, w >= 0) for seed.
inline HostGridGraph grabcut_graph(int h, int w, std::uint64_t seed, const GrabCutGraphOptions& options = {}) {
  switch (options.scene) {
    case GrabCutScene::kWaves:
      return detail::grabcut_graph_waves(h, w, seed, options.noise);
    case GrabCutScene::kRipples:
      return detail::grabcut_graph_ripples(h, w, seed, options.noise);
    case GrabCutScene::kSmoothScore:
      return detail::grabcut_graph_smooth_score<double>(h, w, seed, options.noise);
    case GrabCutScene::kSmoothScoreFloat:
      return detail::grabcut_graph_smooth_score<float>(h, w, seed, options.noise);
  }
  return HostGridGraph(h, w);
}

}  // namespace grabcut::testing
