// Fuzz target of the colour models and the energy (core/gmm.h, core/energy.h):
// random images and masks from 0 x 0 up to kMaxPixels pixels, 1..kMaxComponents
// components, any seed and gamma, and models from the input bytes (any doubles:
// zero or negative weights, singular or indefinite covariances, huge values, NaN,
// infinities; the stages take a model as plain doubles, and only the Python layer
// rejects non-finite ones).
//
// Properties checked:
//   * k-means throws iff a class has no pixel, gives every pixel a component < k,
//     and does not depend on the thread count;
//   * the learnt model matches exact integer statistics computed here (weights
//     count / class count summing to 1, means, covariances up to the documented
//     regularisation), every non-empty component is usable, empty ones are zero;
//   * each pixel's assigned component has the highest weighted density of its
//     class (an independent long double evaluation), thread count irrelevant;
//   * beta and the n-links follow the formulas (independent sums and std::exp),
//     vanish off the grid and fit the max-flow's n-link range;
//   * t-links of hard pixels are +-lambda, of probable pixels within +-lambda and,
//     for learnt models, equal to an independent long double evaluation of
//     -log p_bg + log p_fg; for arbitrary models only the range is checked.
#include <omp.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/common.h"
#include "core/energy.h"
#include "core/gmm.h"
#include "core/maxflow.h"
#include "fuzz_common.h"

namespace {

using fuzz::read_model;
using fuzz::Reader;
using grabcut::kParamsPerComponent;

// ---- Independent evaluation of a mixture, in long double. ----

struct RefComponent {
  bool usable = false;
  // The leading minors are far from 0 relative to their rounding error in double
  // (about 1e-16 * max|c|^3 for the determinant): only then do double and long
  // double agree on usability and closely on the density. (A singular covariance
  // whose determinant rounds to a small positive value is used as it is, as in
  // OpenCV, with a huge inverse.)
  bool well_conditioned = false;
  long double log_coef = 0;
  long double mean[3] = {0, 0, 0};
  long double inv[9] = {};
};

// Usable: positive weight and a positive definite covariance (positive leading
// principal minors), as documented in gmm.h.
RefComponent ref_component(const double* params) {
  RefComponent r;
  long double c[9];
  for (int i = 0; i < 9; ++i) c[i] = params[4 + i];
  const long double m1 = c[0];
  const long double m2 = c[0] * c[4] - c[1] * c[3];
  const long double cof[9] = {c[4] * c[8] - c[5] * c[7], c[5] * c[6] - c[3] * c[8], c[3] * c[7] - c[4] * c[6],
                              c[2] * c[7] - c[1] * c[8], c[0] * c[8] - c[2] * c[6], c[1] * c[6] - c[0] * c[7],
                              c[1] * c[5] - c[2] * c[4], c[2] * c[3] - c[0] * c[5], c[0] * c[4] - c[1] * c[3]};
  const long double det = c[0] * cof[0] + c[1] * cof[1] + c[2] * cof[2];
  long double max_abs = 0;
  for (long double v : c) max_abs = std::fmax(max_abs, std::fabs(v));
  r.well_conditioned = std::fabs(det) > 1e-9L * max_abs * max_abs * max_abs &&
                       std::fabs(m2) > 1e-9L * max_abs * max_abs && std::fabs(m1) > 1e-9L * max_abs;
  if (!(params[0] > 0.0) || !(m1 > 0) || !(m2 > 0) || !(det > 0)) return r;
  r.usable = true;
  r.log_coef = std::log(static_cast<long double>(params[0])) - 0.5L * std::log(det);
  for (int i = 0; i < 3; ++i) r.mean[i] = params[1 + i];
  // inverse = adjugate / det; adjugate[r][c] = cofactor[c][r].
  for (int row = 0; row < 3; ++row)
    for (int col = 0; col < 3; ++col) r.inv[3 * row + col] = cof[3 * col + row] / det;
  return r;
}

long double ref_log_density(const RefComponent& e, const int* color) {
  long double d[3];
  for (int i = 0; i < 3; ++i) d[i] = color[i] - e.mean[i];
  long double maha = 0;
  for (int row = 0; row < 3; ++row)
    for (int col = 0; col < 3; ++col) maha += d[row] * e.inv[3 * row + col] * d[col];
  return e.log_coef - 0.5L * maha;
}

// log sum_i w_i N_i(c) (without the shared -1.5 log 2 pi); -inf if none is usable.
long double ref_mixture(const std::vector<RefComponent>& comps, int first, int k, const int* color) {
  long double top = -INFINITY;
  for (int i = first; i < first + k; ++i)
    if (comps[static_cast<std::size_t>(i)].usable)
      top = std::fmax(top, ref_log_density(comps[static_cast<std::size_t>(i)], color));
  if (std::isinf(top)) return top;
  long double sum = 0;
  for (int i = first; i < first + k; ++i)
    if (comps[static_cast<std::size_t>(i)].usable)
      sum += std::exp(ref_log_density(comps[static_cast<std::size_t>(i)], color) - top);
  return top + std::log(sum);
}

// ---- Inputs. ----

struct Scene {
  int h = 0;
  int w = 0;
  std::int64_t n = 0;
  std::vector<std::uint8_t> image;  // planar
  std::vector<std::uint8_t> mask;
  void color(std::int64_t p, int* c) const {
    for (int ch = 0; ch < 3; ++ch) c[ch] = image[static_cast<std::size_t>(ch * n + p)];
  }
};

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) return false;
  return true;
}

// ---- Checks. ----

// The learnt model against exact integer statistics.
void check_learnt(const Scene& s, int k, const std::vector<std::uint8_t>& comp, const std::vector<double>& model) {
  std::vector<std::int64_t> count(static_cast<std::size_t>(2 * k), 0);
  std::vector<std::int64_t> sum(static_cast<std::size_t>(6 * k), 0);
  std::vector<std::int64_t> prod(static_cast<std::size_t>(18 * k), 0);  // full 3x3
  std::int64_t class_count[2] = {0, 0};
  for (std::int64_t p = 0; p < s.n; ++p) {
    const int cls = s.mask[static_cast<std::size_t>(p)] & 1;
    const int j = cls * k + comp[static_cast<std::size_t>(p)];
    int c[3];
    s.color(p, c);
    count[static_cast<std::size_t>(j)] += 1;
    class_count[cls] += 1;
    for (int a = 0; a < 3; ++a) {
      sum[static_cast<std::size_t>(3 * j + a)] += c[a];
      for (int b = 0; b < 3; ++b) prod[static_cast<std::size_t>(9 * j + 3 * a + b)] += c[a] * c[b];
    }
  }
  for (int cls = 0; cls < 2; ++cls) {
    long double weight_sum = 0;
    for (int jj = 0; jj < k; ++jj) {
      const int j = cls * k + jj;
      const double* p = model.data() + j * kParamsPerComponent;
      const std::int64_t m = count[static_cast<std::size_t>(j)];
      for (int i = 0; i < kParamsPerComponent; ++i) FUZZ_CHECK(std::isfinite(p[i]));
      if (m == 0) {
        for (int i = 0; i < kParamsPerComponent; ++i) FUZZ_CHECK(p[i] == 0.0);
        continue;
      }
      weight_sum += p[0];
      FUZZ_CHECK(std::fabs(p[0] - static_cast<double>(m) / static_cast<double>(class_count[cls])) <= 1e-15);
      for (int a = 0; a < 3; ++a)
        FUZZ_CHECK(std::fabs(p[1 + a] - static_cast<double>(sum[static_cast<std::size_t>(3 * j + a)]) /
                                            static_cast<double>(m)) <= 1e-12);
      // cov[a][b] = (m * prod - sum_a sum_b) / m^2, exact in integers up to the division.
      bool regularised = false;
      for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) {
          const std::int64_t num = m * prod[static_cast<std::size_t>(9 * j + 3 * a + b)] -
                                   sum[static_cast<std::size_t>(3 * j + a)] * sum[static_cast<std::size_t>(3 * j + b)];
          const long double exact = static_cast<long double>(num) / (static_cast<long double>(m) * m);
          const long double got = p[4 + 3 * a + b];
          FUZZ_CHECK(p[4 + 3 * a + b] == p[4 + 3 * b + a]);
          const long double tol = 1e-9L * (1 + std::fabs(exact));
          if (a == b && std::fabs(got - exact - static_cast<long double>(grabcut::kCovarianceRegularisation)) <= tol) {
            regularised = true;
          } else {
            FUZZ_CHECK(std::fabs(got - exact) <= tol);
          }
        }
      }
      static_cast<void>(regularised);
      // Every non-empty component can be evaluated.
      FUZZ_CHECK(grabcut::prepare_component(p).usable);
    }
    if (class_count[cls] > 0) FUZZ_CHECK(std::fabs(weight_sum - 1.0L) <= 1e-12L);
  }
}

// Each pixel's component: usable if its class has one, and of (near) highest density.
void check_assignment(const Scene& s, int k, const std::vector<double>& model, const std::vector<std::uint8_t>& comp,
                      bool exact_density) {
  const std::vector<grabcut::ComponentEval> evals = grabcut::prepare_model_cpu(model.data(), k);
  std::vector<RefComponent> ref(static_cast<std::size_t>(2 * k));
  for (int j = 0; j < 2 * k; ++j)
    ref[static_cast<std::size_t>(j)] = ref_component(model.data() + j * kParamsPerComponent);
  bool class_ok[2] = {true, true};  // every component clearly usable or clearly not
  for (int j = 0; j < 2 * k; ++j) {
    const RefComponent& r = ref[static_cast<std::size_t>(j)];
    const bool clear = !(model[static_cast<std::size_t>(j * kParamsPerComponent)] > 0.0) || r.well_conditioned;
    if (!clear) class_ok[j / k] = false;
    if (exact_density && clear) FUZZ_CHECK(evals[static_cast<std::size_t>(j)].usable == r.usable);
  }
  for (std::int64_t p = 0; p < s.n; ++p) {
    const int cls = s.mask[static_cast<std::size_t>(p)] & 1;
    const int c_idx = comp[static_cast<std::size_t>(p)];
    FUZZ_CHECK(c_idx >= 0 && c_idx < k);
    bool any = false;
    for (int j = 0; j < k; ++j) any = any || evals[static_cast<std::size_t>(cls * k + j)].usable;
    if (!any) {
      FUZZ_CHECK(c_idx == 0);
      continue;
    }
    FUZZ_CHECK(evals[static_cast<std::size_t>(cls * k + c_idx)].usable);
    if (!exact_density || !class_ok[cls]) continue;
    int c[3];
    s.color(p, c);
    long double best = -INFINITY;
    for (int j = 0; j < k; ++j) {
      const RefComponent& r = ref[static_cast<std::size_t>(cls * k + j)];
      if (r.usable) best = std::fmax(best, ref_log_density(r, c));
    }
    const long double chosen = ref_log_density(ref[static_cast<std::size_t>(cls * k + c_idx)], c);
    FUZZ_CHECK(chosen >= best - 1e-7L * (1 + std::fabs(best)));
  }
}

void check_energy(const Scene& s, Reader& in) {
  const double gamma_choices[] = {1e-300, 1e-6, 1.0, 50.0, 1e4, 0.5 + in.u16()};
  const double gamma = gamma_choices[in.u8() % 6];
  // beta against an independent count of pairs and sum of squared differences.
  std::int64_t sum = 0;
  std::int64_t pairs = 0;
  const int dy[4] = {0, 1, 1, 1};
  const int dx[4] = {1, 1, 0, -1};
  for (int y = 0; y < s.h; ++y)
    for (int x = 0; x < s.w; ++x)
      for (int d = 0; d < 4; ++d) {
        const int ny = y + dy[d];
        const int nx = x + dx[d];
        if (ny >= s.h || nx < 0 || nx >= s.w) continue;
        int a[3];
        int b[3];
        s.color(static_cast<std::int64_t>(y) * s.w + x, a);
        s.color(static_cast<std::int64_t>(ny) * s.w + nx, b);
        for (int ch = 0; ch < 3; ++ch) sum += (a[ch] - b[ch]) * (a[ch] - b[ch]);
        ++pairs;
      }
  FUZZ_CHECK(grabcut::sum_squared_differences_cpu(s.image.data(), s.h, s.w) == sum);
  const double beta = grabcut::beta_from_sum(sum, s.h, s.w);
  if (sum == 0) {
    FUZZ_CHECK(beta == 0.0);
  } else {
    FUZZ_CHECK(pairs > 0);
    const long double expect = static_cast<long double>(pairs) / (2.0L * sum);
    FUZZ_CHECK(std::fabs(beta - expect) <= 1e-12L * expect);
  }
  if (s.n == 0) return;
  std::vector<std::int32_t> storage(static_cast<std::size_t>(4 * s.n), -7);
  std::int32_t* nl[4];
  for (int d = 0; d < 4; ++d) nl[d] = storage.data() + d * s.n;
  grabcut::nlinks_cpu(s.image.data(), s.h, s.w, gamma, beta, nl);
  const long double cap_max = std::rint(256.0L * gamma);
  for (int y = 0; y < s.h; ++y)
    for (int x = 0; x < s.w; ++x)
      for (int d = 0; d < 4; ++d) {
        const std::int64_t p = static_cast<std::int64_t>(y) * s.w + x;
        const std::int32_t v = nl[d][p];
        const int ny = y + dy[d];
        const int nx = x + dx[d];
        if (ny >= s.h || nx < 0 || nx >= s.w) {
          FUZZ_CHECK(v == 0);
          continue;
        }
        FUZZ_CHECK(v >= 0 && v <= cap_max && v < (1 << 30));
        int a[3];
        int b[3];
        s.color(p, a);
        s.color(static_cast<std::int64_t>(ny) * s.w + nx, b);
        long double d2 = 0;
        for (int ch = 0; ch < 3; ++ch) d2 += (a[ch] - b[ch]) * (a[ch] - b[ch]);
        const long double diag = (d == 1 || d == 3) ? 1.0L / std::sqrt(2.0L) : 1.0L;
        const long double expect = 256.0L * gamma * diag * std::exp(-static_cast<long double>(beta) * d2);
        FUZZ_CHECK(std::fabs(v - expect) <= 0.5L + 1e-9L * (1 + expect));
      }
}

void check_tlinks(const Scene& s, int k, const std::vector<double>& model, double gamma, bool compare) {
  std::vector<std::int32_t> t(static_cast<std::size_t>(s.n), 12345);
  grabcut::tlinks_cpu(s.image.data(), s.mask.data(), s.n, k, model.data(), gamma, t.data());
  const double lambda = grabcut::kLambdaPerGamma * gamma;
  const auto cap = static_cast<std::int64_t>(std::rint(lambda * grabcut::kCapacityScale));
  std::vector<RefComponent> ref(static_cast<std::size_t>(2 * k));
  bool all_clear = true;
  for (int j = 0; j < 2 * k; ++j) {
    ref[static_cast<std::size_t>(j)] = ref_component(model.data() + j * kParamsPerComponent);
    const RefComponent& r = ref[static_cast<std::size_t>(j)];
    all_clear = all_clear && (!(model[static_cast<std::size_t>(j * kParamsPerComponent)] > 0.0) || r.well_conditioned);
  }
  for (std::int64_t p = 0; p < s.n; ++p) {
    const std::uint8_t label = s.mask[static_cast<std::size_t>(p)];
    const std::int32_t v = t[static_cast<std::size_t>(p)];
    if (label == grabcut::kBackground) {
      FUZZ_CHECK(v == -cap);
      continue;
    }
    if (label == grabcut::kForeground) {
      FUZZ_CHECK(v == cap);
      continue;
    }
    FUZZ_CHECK(v >= -cap && v <= cap);
    if (!compare || !all_clear) continue;
    int c[3];
    s.color(p, c);
    const long double fg = ref_mixture(ref, k, k, c);
    const long double bg = ref_mixture(ref, 0, k, c);
    long double net = fg - bg;
    if (net > lambda) net = lambda;
    if (net < -lambda) net = -lambda;
    const long double tol = 0.5L + 256.0L * 1e-10L * (1 + std::fabs(fg) + std::fabs(bg));
    FUZZ_CHECK(std::fabs(v - 256.0L * net) <= tol);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader in(data, size);
  const int k = 1 + in.u8() % grabcut::kMaxComponents;
  const std::uint64_t seed = in.u64();
  const fuzz::Size sz = fuzz::read_size(in, fuzz::kMaxPixels);
  Scene s;
  s.h = sz.h;
  s.w = sz.w;
  s.n = sz.n();
  s.image = fuzz::read_image(in, s.n);
  s.mask = fuzz::read_mask(in, s.h, s.w, false);
  const double gamma_choices[] = {1e-300, 1e-3, 50.0, 1e4};
  const double gamma = gamma_choices[in.u8() % 4];

  check_energy(s, in);

  // Fit: k-means, then learning, on 2 threads and on 1.
  bool has[2] = {false, false};
  for (std::uint8_t l : s.mask) has[l & 1] = true;
  std::vector<std::uint8_t> comp(static_cast<std::size_t>(s.n), 0xEE);
  bool fitted = true;
  omp_set_num_threads(2);
  try {
    grabcut::kmeans_init_cpu(s.image.data(), s.mask.data(), s.n, k, seed, comp.data());
  } catch (const std::invalid_argument&) {
    fitted = false;
  }
  FUZZ_CHECK(fitted == (has[0] && has[1]));
  if (fitted) {
    for (std::uint8_t c : comp) FUZZ_CHECK(c < k);
    std::vector<std::uint8_t> comp1(static_cast<std::size_t>(s.n), 0xEE);
    omp_set_num_threads(1);
    grabcut::kmeans_init_cpu(s.image.data(), s.mask.data(), s.n, k, seed, comp1.data());
    FUZZ_CHECK(comp1 == comp);

    std::vector<double> model(static_cast<std::size_t>(2 * k * kParamsPerComponent), -1.0);
    std::vector<double> model1 = model;
    grabcut::learn_gmms_cpu(s.image.data(), s.mask.data(), s.n, k, comp.data(), model1.data());
    omp_set_num_threads(2);
    grabcut::learn_gmms_cpu(s.image.data(), s.mask.data(), s.n, k, comp.data(), model.data());
    FUZZ_CHECK(same_bits(model, model1));
    check_learnt(s, k, comp, model);

    std::vector<std::uint8_t> assigned(static_cast<std::size_t>(s.n), 0xEE);
    std::vector<std::uint8_t> assigned1 = assigned;
    grabcut::assign_components_cpu(s.image.data(), s.mask.data(), s.n, k, model.data(), assigned.data());
    omp_set_num_threads(1);
    grabcut::assign_components_cpu(s.image.data(), s.mask.data(), s.n, k, model.data(), assigned1.data());
    omp_set_num_threads(2);
    FUZZ_CHECK(assigned == assigned1);
    check_assignment(s, k, model, assigned, true);
    check_tlinks(s, k, model, gamma, true);
  }

  // Any model: no undefined behaviour, components in range, t-links in range.
  const std::vector<double> model = read_model(in, k);
  std::vector<std::uint8_t> assigned(static_cast<std::size_t>(s.n), 0xEE);
  grabcut::assign_components_cpu(s.image.data(), s.mask.data(), s.n, k, model.data(), assigned.data());
  check_assignment(s, k, model, assigned, false);
  check_tlinks(s, k, model, gamma, false);
  return 0;
}
