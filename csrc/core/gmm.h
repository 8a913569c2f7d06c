// Colour Gaussian mixture models of GrabCut: the per-pixel math shared by both
// backends (inline, __host__ __device__) and the CPU stages.
//
// A model row holds kParamsPerComponent doubles per component: weight, mean[3],
// covariance[9] (row-major). A class model is K rows; a GrabCut model is the
// background class followed by the foreground class (2 * K rows).
//
// Learning is exact: a component's statistics are integer sums of uint8 colours
// and their products (ColorSums), so the order of summation never matters and the
// CPU and the GPU learn bit-identical models.
#pragma once

#include <cstdint>
#include <vector>

#include "core/common.h"
#include "core/limits.h"
#include "core/portable_math.h"

namespace grabcut {

// Added to the diagonal of a covariance whose determinant is not positive enough
// (a flat-colour component), as OpenCV does.
constexpr double kCovarianceRegularisation = 0.01;
constexpr double kMinDeterminant = 2.220446049250313e-16;  // DBL_EPSILON
constexpr int kKmeansIterations = 10;

// Integer statistics of the colours assigned to one component.
struct ColorSums {
  std::int64_t count = 0;
  std::int64_t sum[3] = {0, 0, 0};
  std::int64_t prod[6] = {0, 0, 0, 0, 0, 0};  // c0c0, c0c1, c0c2, c1c1, c1c2, c2c2

  GRABCUT_HD void add(int c0, int c1, int c2) {
    count += 1;
    sum[0] += c0;
    sum[1] += c1;
    sum[2] += c2;
    prod[0] += c0 * c0;
    prod[1] += c0 * c1;
    prod[2] += c0 * c2;
    prod[3] += c1 * c1;
    prod[4] += c1 * c2;
    prod[5] += c2 * c2;
  }
  void merge(const ColorSums& o) {
    count += o.count;
    for (int i = 0; i < 3; ++i) sum[i] += o.sum[i];
    for (int i = 0; i < 6; ++i) prod[i] += o.prod[i];
  }
};

// Component parameters (weight, mean, covariance) from its sums; class_count is the
// number of pixels of the class. An empty component gets weight 0 and zeros.
GRABCUT_HD void component_from_sums(const ColorSums& s, std::int64_t class_count, double* params) {
  for (int i = 0; i < kParamsPerComponent; ++i) params[i] = 0.0;
  if (s.count == 0 || class_count == 0) return;
  const double n = static_cast<double>(s.count);
  params[0] = n / static_cast<double>(class_count);
  double mean[3];
  for (int i = 0; i < 3; ++i) mean[i] = static_cast<double>(s.sum[i]) / n;
  for (int i = 0; i < 3; ++i) params[1 + i] = mean[i];
  const int pair[3][3] = {{0, 1, 2}, {1, 3, 4}, {2, 4, 5}};
  double* cov = params + 4;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c)
      cov[3 * r + c] = static_cast<double>(s.prod[pair[r][c]]) / n - mean[r] * mean[c];
  const double det = cov[0] * (cov[4] * cov[8] - cov[5] * cov[7]) -
                     cov[1] * (cov[3] * cov[8] - cov[5] * cov[6]) +
                     cov[2] * (cov[3] * cov[7] - cov[4] * cov[6]);
  // Rounding can leave a singular covariance (colours on a line or a plane) with a
  // positive determinant but a leading minor <= 0; prepare_component would then
  // mark the component unusable and drop its pixels. Such a covariance is flat in
  // some direction too, so it is regularised like one whose determinant is small.
  const double minor2 = cov[0] * cov[4] - cov[1] * cov[3];
  if (det <= kMinDeterminant || !(cov[0] > 0.0) || !(minor2 > 0.0)) {
    cov[0] += kCovarianceRegularisation;
    cov[4] += kCovarianceRegularisation;
    cov[8] += kCovarianceRegularisation;
  }
}

// A component prepared for evaluation: log(weight / sqrt(det)) and the inverse
// covariance. Components with zero weight or a covariance that is not positive
// definite are marked unusable and never win.
struct ComponentEval {
  double log_coef = 0.0;
  double mean[3] = {0.0, 0.0, 0.0};
  double inv_cov[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  bool usable = false;
};

GRABCUT_HD ComponentEval prepare_component(const double* params) {
  ComponentEval e;
  const double w = params[0];
  const double* c = params + 4;
  const double det = c[0] * (c[4] * c[8] - c[5] * c[7]) - c[1] * (c[3] * c[8] - c[5] * c[6]) +
                     c[2] * (c[3] * c[7] - c[4] * c[6]);
  // Positive definite iff the leading principal minors are positive.
  const bool pd = c[0] > 0.0 && (c[0] * c[4] - c[1] * c[3]) > 0.0 && det > 0.0;
  if (!(w > 0.0) || !pd) return e;
  e.usable = true;
  e.log_coef = portable_log(w) - 0.5 * portable_log(det);
  for (int i = 0; i < 3; ++i) e.mean[i] = params[1 + i];
  e.inv_cov[0] = (c[4] * c[8] - c[5] * c[7]) / det;
  e.inv_cov[1] = (c[2] * c[7] - c[1] * c[8]) / det;
  e.inv_cov[2] = (c[1] * c[5] - c[2] * c[4]) / det;
  e.inv_cov[3] = (c[5] * c[6] - c[3] * c[8]) / det;
  e.inv_cov[4] = (c[0] * c[8] - c[2] * c[6]) / det;
  e.inv_cov[5] = (c[2] * c[3] - c[0] * c[5]) / det;
  e.inv_cov[6] = (c[3] * c[7] - c[4] * c[6]) / det;
  e.inv_cov[7] = (c[1] * c[6] - c[0] * c[7]) / det;
  e.inv_cov[8] = (c[0] * c[4] - c[1] * c[3]) / det;
  return e;
}

// log(weight * N(c; mean, cov)) up to the constant -1.5 log(2 pi) shared by all.
GRABCUT_HD double component_log_density(const ComponentEval& e, double c0, double c1, double c2) {
  const double d0 = c0 - e.mean[0];
  const double d1 = c1 - e.mean[1];
  const double d2 = c2 - e.mean[2];
  const double* ic = e.inv_cov;
  const double maha = d0 * (d0 * ic[0] + d1 * ic[3] + d2 * ic[6]) +
                      d1 * (d0 * ic[1] + d1 * ic[4] + d2 * ic[7]) +
                      d2 * (d0 * ic[2] + d1 * ic[5] + d2 * ic[8]);
  return e.log_coef - 0.5 * maha;
}

// The component a colour belongs to: the usable one of highest weighted density,
// the first on ties; 0 if none is usable.
GRABCUT_HD int best_component(const ComponentEval* comps, int k, double c0, double c1, double c2) {
  int best = 0;
  bool found = false;
  double best_value = 0.0;
  for (int i = 0; i < k; ++i) {
    if (!comps[i].usable) continue;
    const double v = component_log_density(comps[i], c0, c1, c2);
    if (!found || v > best_value) {
      best = i;
      best_value = v;
      found = true;
    }
  }
  return best;
}

// log of the mixture density (log-sum-exp over usable components), or a very
// negative number if no component is usable.
GRABCUT_HD double mixture_log_density(const ComponentEval* comps, int k, double c0, double c1, double c2) {
  double v[kMaxComponents];
  double top = -1e300;
  for (int i = 0; i < k; ++i) {
    v[i] = comps[i].usable ? component_log_density(comps[i], c0, c1, c2) : -1e300;
    if (v[i] > top) top = v[i];
  }
  if (top <= -1e299) return -1e300;
  // Terms below e^-40 cannot change a sum that reaches 1 (the top term) in double
  // precision, so skipping their exp leaves the result bit for bit the same.
  double total = 0.0;
  for (int i = 0; i < k; ++i) {
    const double d = v[i] - top;
    if (comps[i].usable && d > -40.0) total += portable_exp(d);
  }
  return top + portable_log(total);
}

// splitmix64: the seeded random stream of the k-means++ initialisation.
GRABCUT_HD std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31U);
}

// The random number behind the choice of centre `pick` of class `cls` (0 bg, 1 fg).
GRABCUT_HD std::uint64_t kmeans_random(std::uint64_t seed, int cls, int pick) {
  return mix64(mix64(seed) ^ (static_cast<std::uint64_t>(cls) << 32U) ^ static_cast<std::uint64_t>(pick));
}

GRABCUT_HD int squared_distance(const int* a, const int* b) {
  const int d0 = a[0] - b[0];
  const int d1 = a[1] - b[1];
  const int d2 = a[2] - b[2];
  return d0 * d0 + d1 * d1 + d2 * d2;
}

// Index of the centre nearest to colour c (first on ties); centres are doubles.
GRABCUT_HD int nearest_center(const double* centers, int k, double c0, double c1, double c2) {
  int best = 0;
  double best_d = 0.0;
  for (int i = 0; i < k; ++i) {
    const double d0 = c0 - centers[3 * i];
    const double d1 = c1 - centers[3 * i + 1];
    const double d2 = c2 - centers[3 * i + 2];
    const double d = d0 * d0 + d1 * d1 + d2 * d2;
    if (i == 0 || d < best_d) {
      best = i;
      best_d = d;
    }
  }
  return best;
}

// ---- CPU stages. Images are planar: channel c of pixel p at image[c * n + p]. ----

// Which class a pixel's colours train: 0 background (labels 0, 2), 1 foreground (1, 3).
GRABCUT_HD int label_class(std::uint8_t label) { return is_foreground_label(label) ? 1 : 0; }

// Seeded k-means (k-means++ seeding, kKmeansIterations Lloyd steps) per class;
// writes each pixel's cluster into component. Throws std::invalid_argument if a
// class has no pixel.
void kmeans_init_cpu(const std::uint8_t* image, const std::uint8_t* mask, std::int64_t n, int k,
                     std::uint64_t seed, std::uint8_t* component);

// Both classes' components prepared for evaluation (2 * k, background first).
std::vector<ComponentEval> prepare_model_cpu(const double* model, int k);

// ---- Blocked CPU evaluation: the per-pixel functions above over a block of pixels,
// one component at a time, so that the compiler vectorises across pixels. Every
// pixel's result is bit for bit that of the per-pixel function. ----

constexpr int kPixelBlock = 64;

// Up to kPixelBlock pixels (their indices) and their colours.
struct PixelBlock {
  int size = 0;
  std::int64_t pixel[kPixelBlock];
  double c0[kPixelBlock];
  double c1[kPixelBlock];
  double c2[kPixelBlock];

  void add(std::int64_t p, int v0, int v1, int v2) {
    pixel[size] = p;
    c0[size] = v0;
    c1[size] = v1;
    c2[size] = v2;
    ++size;
  }
};

// The usable components of one class, in order (unusable ones never win and never
// add to a mixture).
struct UsableComponents {
  int count = 0;
  ComponentEval comps[kMaxComponents];

  UsableComponents(const ComponentEval* all, int k);
};

// out[i] = mixture_log_density(all, k, colour i) for the block's pixels.
void mixture_log_density_block(const UsableComponents& usable, const PixelBlock& block, double* out);

// Each pixel's best component in its own class's model (2 * k rows of params).
void assign_components_cpu(const std::uint8_t* image, const std::uint8_t* mask, std::int64_t n, int k,
                           const double* model, std::uint8_t* component);

// Learns the model (2 * k rows) from the pixels' classes and components.
void learn_gmms_cpu(const std::uint8_t* image, const std::uint8_t* mask, std::int64_t n, int k,
                    const std::uint8_t* component, double* model);

#ifdef GRABCUT_COUNT_STAGE_THREADS
// The largest OpenMP team learn_gmms_cpu ran with (in any thread) since the last
// call, then reset to 0: lets the C++ tests check how many threads the CPU stages
// get without timing anything. Only the CMake build with GRABCUT_TESTS counts; the
// extension is built without it.
int take_max_stage_threads();
#endif

}  // namespace grabcut
