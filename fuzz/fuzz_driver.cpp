// Fuzz target of the whole CPU GrabCut loop (core/driver.h): random images from
// 0 x 0 up to kMaxPixels pixels, masks from boxes, strokes, random or raw bytes
// (labels above 3 included), options in and out of range, and given models from
// the input bytes (any doubles, NaN and infinities included: the core takes them
// as they come; only the Python layer rejects non-finite ones).
//
// Properties checked:
//   * it throws std::invalid_argument exactly when an argument is invalid
//     (options, a label above 3, a class without pixels to learn from, a frozen
//     given model with a class without a usable component) and never anything else;
//   * the output labels are 0..3, hard labels (BGD, FGD) are kept, probable
//     pixels stay probable; max_iter = 0 changes no label; a frozen model is kept
//     bit for bit and runs at most one iteration; a learnt model is finite with
//     weights summing to 1 per class (0 for a class left without pixels);
//   * the final probable labels are the canonical minimum cut of the graph built
//     from the final model and mask (checked with an independent Dinic max-flow,
//     whose value must equal stats.last_flow);
//   * two runs give identical results, and so do 1 and 2 OpenMP threads;
//   * a run that stopped early (fixed point) gives the same result as a run with
//     a larger max_iter.
#include <omp.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/common.h"
#include "core/driver.h"
#include "core/limits.h"
#include "core/energy.h"
#include "core/gmm.h"
#include "core/maxflow.h"
#include "fuzz_common.h"

namespace {

using fuzz::Reader;
using grabcut::kParamsPerComponent;

// Pixels up to which the final cut is rebuilt and checked against Dinic.
constexpr std::int64_t kMaxReferencePixels = 1024;

struct Run {
  bool threw = false;
  std::vector<std::uint8_t> mask;
  std::vector<double> model;
  grabcut::GrabCutStats stats;

  bool operator==(const Run& o) const {
    return threw == o.threw && mask == o.mask && model.size() == o.model.size() &&
           std::memcmp(model.data(), o.model.data(), model.size() * sizeof(double)) == 0 &&
           stats.iterations == o.stats.iterations && stats.last_flow == o.stats.last_flow;
  }
};

Run run(const std::vector<std::uint8_t>& image, int h, int w, const std::vector<std::uint8_t>& mask,
        const std::vector<double>& model, const grabcut::GrabCutOptions& opt, int threads) {
  Run r;
  r.mask = mask;
  r.model = model;
  omp_set_num_threads(threads);
  try {
    r.stats = grabcut::grabcut_cpu(image.data(), h, w, r.mask.data(), r.model.data(), opt);
  } catch (const std::invalid_argument&) {
    r.threw = true;
  }
  return r;
}

// The documented usability rule: a positive weight and a positive definite
// covariance (positive leading principal minors).
bool usable(const double* p) {
  const double* c = p + 4;
  const double m2 = c[0] * c[4] - c[1] * c[3];
  const double det =
      c[0] * (c[4] * c[8] - c[5] * c[7]) - c[1] * (c[3] * c[8] - c[5] * c[6]) + c[2] * (c[3] * c[7] - c[4] * c[6]);
  return p[0] > 0.0 && c[0] > 0.0 && m2 > 0.0 && det > 0.0;
}

bool expect_throw(const std::vector<std::uint8_t>& mask, std::int64_t n, const std::vector<double>& model,
                  const grabcut::GrabCutOptions& opt) {
  if (opt.max_iter < 0 || opt.components < 1 || opt.components > grabcut::kMaxComponents) return true;
  if (!(opt.gamma > 0.0 && opt.gamma <= grabcut::kMaxGamma)) return true;
  if (n == 0) return false;
  bool has[2] = {false, false};
  for (std::uint8_t l : mask) {
    if (l > 3) return true;
    has[l & 1U] = true;
  }
  if (opt.init_model) return !(has[0] && has[1]);
  if (!opt.freeze_model) return false;  // a class without a usable component is learnt from the mask
  const int k = opt.components;
  for (int cls = 0; cls < 2; ++cls) {
    bool any = false;
    for (int j = 0; j < k; ++j) any = any || usable(model.data() + (cls * k + j) * kParamsPerComponent);
    if (!any) return true;
  }
  return false;
}

void check_run(const std::vector<std::uint8_t>& image, int h, int w, const std::vector<std::uint8_t>& mask0,
               const std::vector<double>& model0, const grabcut::GrabCutOptions& opt, const Run& r) {
  const std::int64_t n = static_cast<std::int64_t>(h) * w;
  FUZZ_CHECK(r.threw == expect_throw(mask0, n, model0, opt));
  if (r.threw) return;
  FUZZ_CHECK(r.stats.iterations >= 0 && r.stats.iterations <= opt.max_iter);
  FUZZ_CHECK(r.stats.last_flow >= 0);
  for (std::int64_t p = 0; p < n; ++p) {
    const std::uint8_t before = mask0[static_cast<std::size_t>(p)];
    const std::uint8_t after = r.mask[static_cast<std::size_t>(p)];
    FUZZ_CHECK(after <= 3);
    if (before < 2 || opt.max_iter == 0) {
      FUZZ_CHECK(after == before);
    } else {
      FUZZ_CHECK(after == 2 || after == 3);
    }
  }
  if (n == 0) {
    FUZZ_CHECK(r.stats.iterations == 0 && r.mask == mask0);
    return;
  }
  if (opt.max_iter > 0) FUZZ_CHECK(r.stats.iterations >= 1);
  const int k = opt.components;
  if (opt.freeze_model) FUZZ_CHECK(r.stats.iterations <= 1);
  if (opt.freeze_model && !opt.init_model)
    FUZZ_CHECK(std::memcmp(r.model.data(), model0.data(), model0.size() * sizeof(double)) == 0);
  const bool learnt = opt.init_model || (!opt.freeze_model && opt.max_iter > 0);
  if (learnt) {
    for (int cls = 0; cls < 2; ++cls) {
      double weights = 0;
      for (int j = 0; j < k; ++j) {
        const double* p = r.model.data() + (cls * k + j) * kParamsPerComponent;
        for (int i = 0; i < kParamsPerComponent; ++i) FUZZ_CHECK(std::isfinite(p[i]));
        FUZZ_CHECK(p[0] >= 0.0 && p[0] <= 1.0);
        weights += p[0];
      }
      // 0 for a class that had no pixel at the last learning (possible with a given
      // model, whose first cut may empty a class), else 1.
      FUZZ_CHECK(weights == 0.0 || std::fabs(weights - 1.0) <= 1e-9);
    }
  }

  // The final labels are the canonical cut of the last graph, which is built from
  // the final model and the final mask (probable labels, 2 or 3, give the same
  // t-link), and the flow reported is that graph's maximum flow.
  if (r.stats.iterations >= 1 && n <= kMaxReferencePixels) {
    const double beta = grabcut::beta_from_sum(grabcut::sum_squared_differences_cpu(image.data(), h, w), h, w);
    std::vector<std::int32_t> storage(static_cast<std::size_t>(4 * n));
    std::int32_t* nl[4];
    for (int d = 0; d < 4; ++d) nl[d] = storage.data() + d * n;
    grabcut::nlinks_cpu(image.data(), h, w, opt.gamma, beta, nl);
    std::vector<std::int32_t> terminal(static_cast<std::size_t>(n));
    grabcut::tlinks_cpu(image.data(), r.mask.data(), n, k, r.model.data(), opt.gamma, terminal.data());
    const std::int32_t* cnl[4] = {nl[0], nl[1], nl[2], nl[3]};
    const fuzz::ReferenceCut ref = fuzz::reference_cut(h, w, terminal.data(), cnl);
    FUZZ_CHECK(ref.flow == r.stats.last_flow);
    for (std::int64_t p = 0; p < n; ++p) {
      const std::uint8_t label = r.mask[static_cast<std::size_t>(p)];
      if (label < 2) continue;
      FUZZ_CHECK((label == 3) == (ref.source_side[static_cast<std::size_t>(p)] != 0));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader in(data, size);
  grabcut::GrabCutOptions opt;
  const std::uint8_t flags = in.u8();
  opt.init_model = (flags & 1U) == 0;
  opt.freeze_model = (flags & 2U) != 0;
  const bool bad_options = (flags & 0xF0U) == 0xF0U;  // 1 in 16: out-of-range options
  opt.max_iter = in.u8() % 5;
  opt.components = 1 + in.u8() % grabcut::kMaxComponents;
  const double gammas[] = {50.0, 1e-300, 1e-3, 1.0, grabcut::kMaxGamma, 0.25 + in.u16()};
  opt.gamma = gammas[in.u8() % 6];
  opt.seed = in.u64();
  if (bad_options) {
    switch (in.u8() % 7) {
      case 0:
        opt.max_iter = -1 - in.u8();
        break;
      case 1:
        opt.components = 0;
        break;
      case 2:
        opt.components = grabcut::kMaxComponents + 1 + in.u8();
        break;
      case 3:
        opt.gamma = 0.0;
        break;
      case 4:
        opt.gamma = std::numeric_limits<double>::quiet_NaN();
        break;
      case 5:
        opt.gamma = std::numeric_limits<double>::infinity();
        break;
      default:
        opt.gamma = grabcut::kMaxGamma * (1 + 1e-15) + in.u8();
        break;
    }
  }
  const fuzz::Size sz = fuzz::read_size(in, fuzz::kMaxPixels);
  const int h = sz.h;
  const int w = sz.w;
  const std::int64_t n = sz.n();
  const std::vector<std::uint8_t> image = fuzz::read_image(in, n);
  const std::vector<std::uint8_t> mask = fuzz::read_mask(in, h, w, true);
  const int k_model = opt.components >= 1 && opt.components <= grabcut::kMaxComponents ? opt.components : 1;
  std::vector<double> model;
  if (opt.init_model) {
    model.assign(static_cast<std::size_t>(2 * k_model * kParamsPerComponent), -3.5);  // overwritten
  } else {
    model = fuzz::read_model(in, k_model);
  }

  const Run a = run(image, h, w, mask, model, opt, 2);
  check_run(image, h, w, mask, model, opt, a);
  // Deterministic, and the same on one thread.
  const Run b = run(image, h, w, mask, model, opt, 2);
  FUZZ_CHECK(a == b);
  const Run c = run(image, h, w, mask, model, opt, 1);
  FUZZ_CHECK(a == c);
  omp_set_num_threads(2);
  // Stopped early at a fixed point: more iterations change nothing.
  if (!a.threw && a.stats.iterations < opt.max_iter && !opt.freeze_model && n > 0) {
    grabcut::GrabCutOptions more = opt;
    more.max_iter = opt.max_iter + 2;
    const Run d = run(image, h, w, mask, model, more, 2);
    FUZZ_CHECK(d.mask == a.mask && d.stats.iterations == a.stats.iterations && d.stats.last_flow == a.stats.last_flow);
    FUZZ_CHECK(std::memcmp(d.model.data(), a.model.data(), a.model.size() * sizeof(double)) == 0);
  }
  return 0;
}
