// GMM and energy stages of the core against direct double-precision formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
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

std::uint64_t bits_of(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

double from_bits(std::uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// portable_exp and portable_log with the C library's ldexp and frexp (their
// polynomials shared): the inline host scaling must give the same bits.
double reference_exp(double x) {
  if (x < -745.0) return 0.0;
  const double k = std::rint(x * kInvLn2);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  return std::ldexp(exp_series(r), static_cast<int>(k));
}

double reference_log(double x) {
  int e = 0;
  const double m = std::frexp(x, &e);
  return log_from_parts(m, e);
}

// f and reference agree in every bit on every input (the first few misses reported).
template <typename F, typename R>
void expect_same_bits(const std::vector<double>& xs, F f, R reference, const char* name) {
  int mismatches = 0;
  for (const double x : xs) {
    const bool same = bits_of(f(x)) == bits_of(reference(x));
    mismatches += !same;
    if (!same && mismatches < 5) ADD_FAILURE() << name << "(" << x << ")";
  }
  EXPECT_EQ(mismatches, 0) << name;
}

TEST(PortableMath, ExpBitIdenticalToLdexpReference) {
  std::mt19937_64 rng(11);
  std::vector<double> xs = {0.0, -0.0, -1e-300, -5e-324, -1.0, -40.0, -700.0, -708.39641853226408, -708.4,
                            -744.4400719213812, -744.44007192138122, -745.0, -745.1, -1000.0};
  // Where the result is a power of two or close to one, including the subnormal ones.
  for (int k = -1080; k <= 0; ++k) {
    const double x = k * 0.69314718055994530942;
    xs.insert(xs.end(), {x, std::nextafter(x, 0.0), std::nextafter(x, -1000.0)});
  }
  std::uniform_real_distribution<double> all(-745.0, 0.0);
  std::uniform_real_distribution<double> subnormal(-745.2, -707.0);  // results below 2^-1022
  std::uniform_real_distribution<double> small(-1.0, 0.0);
  for (int i = 0; i < 300000; ++i) xs.insert(xs.end(), {all(rng), subnormal(rng), small(rng)});
  expect_same_bits(xs, [](double x) { return portable_exp(x); }, reference_exp, "portable_exp");
  // The branch-free form for the mixtures' sums, over its documented range.
  std::vector<double> in_range;
  std::copy_if(xs.begin(), xs.end(), std::back_inserter(in_range), [](double x) { return x >= -700.0; });
  expect_same_bits(in_range, [](double x) { return portable_exp_in_range(x); }, reference_exp,
                   "portable_exp_in_range");
}

TEST(PortableMath, LogBitIdenticalToFrexpReference) {
  std::mt19937_64 rng(12);
  std::vector<double> xs = {1.0, 2.0, 0.5, 0.70710678118654752440, std::nextafter(0.70710678118654752440, 0.0),
                            1.4142135623730951, std::numeric_limits<double>::denorm_min(),
                            std::numeric_limits<double>::min(), std::nextafter(std::numeric_limits<double>::min(), 0.0),
                            1e300, std::numeric_limits<double>::max()};
  for (int e = -1074; e <= 1023; ++e) xs.push_back(std::ldexp(1.0, e));
  // Random bit patterns of positive finite doubles: every exponent, subnormals included.
  std::uniform_int_distribution<std::uint64_t> pattern(1, 0x7FEFFFFFFFFFFFFFULL);
  std::uniform_int_distribution<std::uint64_t> subnormal(1, 0x000FFFFFFFFFFFFFULL);
  std::uniform_real_distribution<double> sums(1.0, 16.0);  // the mixtures' sums
  for (int i = 0; i < 300000; ++i) {
    xs.insert(xs.end(), {from_bits(pattern(rng)), from_bits(subnormal(rng)), sums(rng)});
  }
  expect_same_bits(xs, [](double x) { return portable_log(x); }, reference_log, "portable_log");
}

TEST(PortableMath, HostScalingMatchesTheCLibrary) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> mantissa(0.5, 2.0);
  std::uniform_int_distribution<int> exponent(-1200, 1100);
  int mismatches = 0;
  for (int i = 0; i < 200000; ++i) {
    const double p = i % 2 == 0 ? mantissa(rng) : -mantissa(rng);
    const int k = exponent(rng);
    mismatches += bits_of(host_ldexp(p, k)) != bits_of(std::ldexp(p, k));
  }
  EXPECT_EQ(mismatches, 0);
  std::uniform_int_distribution<std::uint64_t> pattern(0, ~std::uint64_t{0});
  mismatches = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = from_bits(pattern(rng));  // any sign, subnormals, infinities, NaNs
    int e_host = 0;
    int e_lib = 0;
    const double m_host = host_frexp(x, &e_host);
    const double m_lib = std::frexp(x, &e_lib);
    if (std::isnan(x)) {
      mismatches += !std::isnan(m_host);
      continue;
    }
    mismatches += bits_of(m_host) != bits_of(m_lib) || (std::isfinite(x) && e_host != e_lib);
  }
  EXPECT_EQ(mismatches, 0);
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

// A random model row: weight (0 now and then: unusable), mean, and a covariance
// A A^T + d I, sometimes far from the colours (terms below e^-40), sometimes nearly
// flat (large inverse covariance), now and then not positive definite (unusable).
void random_component(std::mt19937& rng, double* params) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_real_distribution<double> colour(-50.0, 300.0);
  std::uniform_real_distribution<double> entry(-1.0, 1.0);
  params[0] = unit(rng) < 0.1 ? 0.0 : unit(rng);
  for (int c = 0; c < 3; ++c) params[1 + c] = colour(rng);
  const double scale = std::pow(10.0, 3.0 * unit(rng)) * (unit(rng) < 0.1 ? 0.001 : 1.0);
  double a[9];
  for (double& v : a) v = entry(rng) * scale;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) {
      double v = 0.0;
      for (int i = 0; i < 3; ++i) v += a[3 * r + i] * a[3 * c + i];
      params[4 + 3 * r + c] = v + (r == c ? 0.01 * scale : 0.0);
    }
  if (unit(rng) < 0.05) params[4] = -1.0;  // not positive definite
}

// Images with few colours (the t-links' colour cache hits) and with random ones
// (it misses), every label, any size (not a multiple of the pixel block).
std::vector<std::uint8_t> random_image(std::mt19937& rng, std::int64_t n, bool few_colours) {
  auto img = random_planar(rng, n);
  if (few_colours) {
    const auto palette = random_planar(rng, 40);
    std::uniform_int_distribution<int> pick(0, 39);
    for (std::int64_t p = 0; p < n; ++p) {
      const int i = pick(rng);
      for (int c = 0; c < 3; ++c) img[c * n + p] = palette[c * 40 + i];
    }
  }
  return img;
}

TEST(Gmm, BlockedMixtureMatchesPerPixel) {
  std::mt19937 rng(14);
  for (int trial = 0; trial < 200; ++trial) {
    const int k = 1 + trial % kMaxComponents;
    std::vector<double> params(static_cast<std::size_t>(k * kParamsPerComponent));
    for (int j = 0; j < k; ++j) random_component(rng, params.data() + j * kParamsPerComponent);
    std::vector<ComponentEval> evals(static_cast<std::size_t>(k));
    for (int j = 0; j < k; ++j) evals[j] = prepare_component(params.data() + j * kParamsPerComponent);
    const UsableComponents usable(evals.data(), k);
    const auto img = random_planar(rng, kPixelBlock);
    PixelBlock block;
    const int size = 1 + trial % kPixelBlock;
    for (int i = 0; i < size; ++i) block.add(i, img[i], img[kPixelBlock + i], img[2 * kPixelBlock + i]);
    double out[kPixelBlock];
    mixture_log_density_block(usable, block, out);
    for (int i = 0; i < size; ++i) {
      const double expect = mixture_log_density(evals.data(), k, img[i], img[kPixelBlock + i], img[2 * kPixelBlock + i]);
      ASSERT_EQ(bits_of(out[i]), bits_of(expect)) << "trial " << trial << " pixel " << i;
    }
  }
}

TEST(Energy, TlinksMatchPerPixelTerminalCapacity) {
  std::mt19937 rng(15);
  std::uniform_int_distribution<int> label(0, 3);
  for (int trial = 0; trial < 24; ++trial) {
    const std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 30000);
    const int k = trial % 3 == 0 ? 5 : 1 + trial % kMaxComponents;
    const auto img = random_image(rng, n, trial % 2 == 0);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(n));
    for (auto& m : mask) m = static_cast<std::uint8_t>(label(rng));
    std::vector<double> model(static_cast<std::size_t>(2 * k * kParamsPerComponent));
    if (trial % 4 == 1) {
      // A model learnt from the image, as GrabCut's iterations have.
      std::vector<std::uint8_t> component(static_cast<std::size_t>(n));
      mask[0] = kBackground;
      mask[n - 1] = kForeground;
      kmeans_init_cpu(img.data(), mask.data(), n, k, 7, component.data());
      learn_gmms_cpu(img.data(), mask.data(), n, k, component.data(), model.data());
    } else {
      for (int j = 0; j < 2 * k; ++j) random_component(rng, model.data() + j * kParamsPerComponent);
    }
    if (trial == 5) {  // a class without a usable component
      for (int j = 0; j < k; ++j) model[j * kParamsPerComponent] = 0.0;
    }
    const double gamma = trial % 5 == 0 ? 0.5 : 50.0;  // small gamma: most pixels clamped
    std::vector<std::int32_t> terminal(static_cast<std::size_t>(n), 12345);
    tlinks_cpu(img.data(), mask.data(), n, k, model.data(), gamma, terminal.data());
    const std::vector<ComponentEval> evals = prepare_model_cpu(model.data(), k);
    std::int64_t mismatches = 0;
    for (std::int64_t p = 0; p < n; ++p) {
      const std::int32_t expect = terminal_capacity(mask[p], lambda_of(gamma), evals.data(), evals.data() + k, k,
                                                    img[p], img[n + p], img[2 * n + p]);
      mismatches += terminal[p] != expect;
    }
    EXPECT_EQ(mismatches, 0) << "trial " << trial << " n " << n << " k " << k;
  }
}

}  // namespace
}  // namespace grabcut
