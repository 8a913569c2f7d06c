// GMM and energy stages of the core against direct double-precision formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/energy.h"
#include "core/gmm.h"
#include "core/portable_math.h"

namespace grabcut {
namespace {

TEST(PortableMath, ExpMatchesLibm) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> dist(-740.0, 0.0);
  for (int i = 0; i < 200000; ++i) {
    const double x = i < 100 ? -static_cast<double>(i) * 0.01 : dist(rng);
    const double ref = std::exp(x);
    EXPECT_NEAR(portable_exp(x), ref, std::max(4e-16 * ref, 1e-323)) << x;  // subnormals: 2 units
  }
  EXPECT_EQ(portable_exp(0.0), 1.0);
  EXPECT_EQ(portable_exp(-1000.0), 0.0);
}

TEST(PortableMath, LogMatchesLibm) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> expo(-300.0, 300.0);
  for (int i = 0; i < 200000; ++i) {
    const double x = std::pow(10.0, expo(rng));
    const double ref = std::log(x);
    EXPECT_NEAR(portable_log(x), ref, 4e-16 * std::max(1.0, std::fabs(ref))) << x;
  }
  EXPECT_EQ(portable_log(1.0), 0.0);
}

std::vector<std::uint8_t> random_planar(std::mt19937& rng, std::int64_t n) {
  std::uniform_int_distribution<int> dist(0, 255);
  std::vector<std::uint8_t> img(static_cast<std::size_t>(3 * n));
  for (auto& v : img) v = static_cast<std::uint8_t>(dist(rng));
  return img;
}

TEST(Gmm, ComponentFromSumsMatchesDirectFormulas) {
  std::mt19937 rng(3);
  const std::int64_t n = 500;
  const auto img = random_planar(rng, n);
  ColorSums s;
  for (std::int64_t p = 0; p < n; ++p) s.add(img[p], img[n + p], img[2 * n + p]);
  double params[kParamsPerComponent];
  component_from_sums(s, 2 * n, params);
  EXPECT_DOUBLE_EQ(params[0], 0.5);
  double mean[3] = {0, 0, 0};
  for (std::int64_t p = 0; p < n; ++p)
    for (int c = 0; c < 3; ++c) mean[c] += img[c * n + p] / static_cast<double>(n);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(params[1 + c], mean[c], 1e-9);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) {
      double cov = 0;
      for (std::int64_t p = 0; p < n; ++p)
        cov += (img[r * n + p] - mean[r]) * (img[c * n + p] - mean[c]) / static_cast<double>(n);
      EXPECT_NEAR(params[4 + 3 * r + c], cov, 1e-7);
    }
  }
}

TEST(Gmm, FlatColourIsRegularisedAndUsable) {
  ColorSums s;
  for (int i = 0; i < 10; ++i) s.add(7, 8, 9);
  double params[kParamsPerComponent];
  component_from_sums(s, 10, params);
  EXPECT_DOUBLE_EQ(params[4], kCovarianceRegularisation);
  EXPECT_DOUBLE_EQ(params[8], kCovarianceRegularisation);
  EXPECT_DOUBLE_EQ(params[12], kCovarianceRegularisation);
  const ComponentEval e = prepare_component(params);
  EXPECT_TRUE(e.usable);
  EXPECT_TRUE(std::isfinite(component_log_density(e, 7, 8, 9)));
  ColorSums empty;
  component_from_sums(empty, 10, params);
  EXPECT_FALSE(prepare_component(params).usable);
}

TEST(Gmm, InverseCovarianceAndMixtureDensity) {
  const double params[2][kParamsPerComponent] = {
      {0.3, 10, 20, 30, 40, 5, 2, 5, 30, 1, 2, 1, 20},
      {0.7, 100, 90, 80, 25, -3, 0, -3, 16, 2, 0, 2, 9},
  };
  ComponentEval e[2] = {prepare_component(params[0]), prepare_component(params[1])};
  for (int k = 0; k < 2; ++k) {
    ASSERT_TRUE(e[k].usable);
    const double* c = params[k] + 4;
    for (int r = 0; r < 3; ++r)
      for (int col = 0; col < 3; ++col) {
        double v = 0;
        for (int i = 0; i < 3; ++i) v += c[3 * r + i] * e[k].inv_cov[3 * i + col];
        EXPECT_NEAR(v, r == col ? 1.0 : 0.0, 1e-12);
      }
  }
  const double x[3] = {60, 50, 40};
  double total = 0;
  for (int k = 0; k < 2; ++k) total += std::exp(component_log_density(e[k], x[0], x[1], x[2]));
  EXPECT_NEAR(mixture_log_density(e, 2, x[0], x[1], x[2]), std::log(total), 1e-12);
  // The winner is the component of larger weighted density.
  const int best = best_component(e, 2, x[0], x[1], x[2]);
  EXPECT_GE(component_log_density(e[best], x[0], x[1], x[2]), component_log_density(e[1 - best], x[0], x[1], x[2]));
}

TEST(Gmm, TiesGoToTheFirstComponent) {
  const double params[kParamsPerComponent] = {0.5, 1, 2, 3, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  const ComponentEval e[2] = {prepare_component(params), prepare_component(params)};
  EXPECT_EQ(best_component(e, 2, 5, 5, 5), 0);
}

TEST(Gmm, KmeansIsSeededAndCoversBothClasses) {
  std::mt19937 rng(4);
  const std::int64_t n = 40 * 30;
  const auto img = random_planar(rng, n);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(n), kBackground);
  for (std::int64_t p = n / 3; p < n; ++p) mask[p] = kProbForeground;
  std::vector<std::uint8_t> a(static_cast<std::size_t>(n)), b(a.size()), c(a.size());
  kmeans_init_cpu(img.data(), mask.data(), n, 5, 42, a.data());
  kmeans_init_cpu(img.data(), mask.data(), n, 5, 42, b.data());
  kmeans_init_cpu(img.data(), mask.data(), n, 5, 43, c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (auto v : a) EXPECT_LT(v, 5);
  std::vector<double> model(2 * 5 * kParamsPerComponent);
  learn_gmms_cpu(img.data(), mask.data(), n, 5, a.data(), model.data());
  for (int cls = 0; cls < 2; ++cls) {
    double w = 0;
    for (int j = 0; j < 5; ++j) w += model[(cls * 5 + j) * kParamsPerComponent];
    EXPECT_NEAR(w, 1.0, 1e-12);
  }
  std::vector<std::uint8_t> all_bg(static_cast<std::size_t>(n), kProbBackground);
  EXPECT_THROW(kmeans_init_cpu(img.data(), all_bg.data(), n, 5, 0, a.data()), std::invalid_argument);
}

TEST(Energy, BetaUsesTheFourForwardPairs) {
  std::mt19937 rng(5);
  const int h = 7;
  const int w = 9;
  const std::int64_t n = h * w;
  const auto img = random_planar(rng, n);
  std::int64_t sum = 0;
  std::int64_t pairs = 0;
  const int dy[4] = {0, -1, -1, -1};
  const int dx[4] = {-1, -1, 0, 1};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int d = 0; d < 4; ++d) {
        const int qy = y + dy[d];
        const int qx = x + dx[d];
        if (qy < 0 || qx < 0 || qx >= w) continue;
        ++pairs;
        for (int c = 0; c < 3; ++c) {
          const int diff = img[c * n + y * w + x] - img[c * n + qy * w + qx];
          sum += diff * diff;
        }
      }
  EXPECT_EQ(pairs, neighbour_pair_count(h, w));
  EXPECT_EQ(sum_squared_differences_cpu(img.data(), h, w), sum);
  EXPECT_DOUBLE_EQ(beta_from_sum(sum, h, w), 1.0 / (2.0 * static_cast<double>(sum) / static_cast<double>(pairs)));
  EXPECT_EQ(beta_from_sum(0, h, w), 0.0);
}

// Both ways nlinks_cpu computes capacities: directly on a small image, through its
// lookup tables on one with more links than the tables have entries (300 x 400).
TEST(Energy, NlinksMatchTheFormulaAndVanishOffTheGrid) {
  std::mt19937 rng(6);
  for (const auto& [h, w] : {std::pair{6, 5}, std::pair{300, 400}}) {
    const std::int64_t n = static_cast<std::int64_t>(h) * w;
    const auto img = random_planar(rng, n);
    std::vector<std::int32_t> store(static_cast<std::size_t>(4 * n), -1);
    std::int32_t* nl[4] = {store.data(), store.data() + n, store.data() + 2 * n, store.data() + 3 * n};
    const double beta = 0.001;
    nlinks_cpu(img.data(), h, w, 50.0, beta, nl);
    const int dy[4] = {0, 1, 1, 1};
    const int dx[4] = {1, 1, 0, -1};
    int mismatches = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        for (int d = 0; d < 4; ++d) {
          const int qy = y + dy[d];
          const int qx = x + dx[d];
          const std::int32_t got = nl[d][y * w + x];
          if (qy >= h || qx < 0 || qx >= w) {
            mismatches += got != 0;
            continue;
          }
          int d2 = 0;
          for (int c = 0; c < 3; ++c) {
            const int diff = img[c * n + y * w + x] - img[c * n + qy * w + qx];
            d2 += diff * diff;
          }
          const double weight = (d % 2 == 1 ? 50.0 / std::sqrt(2.0) : 50.0) * std::exp(-beta * d2);
          mismatches += std::abs(got - weight * kCapacityScale) > 0.5 + 1e-9;
        }
    EXPECT_EQ(mismatches, 0) << h << "x" << w;
  }
}

TEST(Energy, TlinksAreClampedAndHardPixelsTied) {
  const double bg[kParamsPerComponent] = {1.0, 20, 20, 20, 30, 0, 0, 0, 30, 0, 0, 0, 30};
  const double fg[kParamsPerComponent] = {1.0, 200, 200, 200, 30, 0, 0, 0, 30, 0, 0, 0, 30};
  const ComponentEval eb = prepare_component(bg);
  const ComponentEval ef = prepare_component(fg);
  const double lambda = lambda_of(50.0);
  const std::int32_t lam = to_capacity(lambda);
  EXPECT_EQ(terminal_capacity(kBackground, lambda, &eb, &ef, 1, 200, 200, 200), -lam);
  EXPECT_EQ(terminal_capacity(kForeground, lambda, &eb, &ef, 1, 20, 20, 20), lam);
  EXPECT_EQ(terminal_capacity(kProbBackground, lambda, &eb, &ef, 1, 200, 200, 200), lam);  // clamped
  EXPECT_EQ(terminal_capacity(kProbForeground, lambda, &eb, &ef, 1, 20, 20, 20), -lam);
  const std::int32_t mid = terminal_capacity(kProbForeground, lambda, &eb, &ef, 1, 110, 110, 110);
  EXPECT_EQ(mid, 0);  // equidistant: equal densities
  const double expect = (-0.5 * 3 * 80.0 * 80.0 / 30.0) - (-0.5 * 3 * 100.0 * 100.0 / 30.0);
  EXPECT_NEAR(terminal_capacity(kProbForeground, lambda, &eb, &ef, 1, 120, 120, 120), expect * kCapacityScale, 0.5);
}

}  // namespace
}  // namespace grabcut
