#include "core/driver.h"

#include <omp.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/energy.h"
#include "core/gmm.h"
#include "core/graph_region.h"
#include "core/limits.h"
#include "core/maxflow.h"

namespace grabcut {
namespace {

void check_labels(const std::uint8_t* mask, int height, int width) {
  const std::int64_t n = static_cast<std::int64_t>(height) * width;
  for (std::int64_t p = 0; p < n; ++p) {
    if (mask[p] > kProbForeground) {
      throw std::invalid_argument("mask: expected labels 0..3 (GC_BGD, GC_FGD, GC_PR_BGD, GC_PR_FGD), got " +
                                  std::to_string(mask[p]) + " at (y=" + std::to_string(p / width) +
                                  ", x=" + std::to_string(p % width) + ")");
    }
  }
}

void check_model_usable(const double* model, int k) {
  const std::vector<ComponentEval> evals = prepare_model_cpu(model, k);
  for (int cls = 0; cls < 2; ++cls) {
    bool any = false;
    for (int j = 0; j < k; ++j) any = any || evals[cls * k + j].usable;
    if (!any) {
      throw std::invalid_argument(std::string("model: the ") + (cls == 1 ? "foreground" : "background") +
                                  " mixture has no usable component (expected a positive weight and a "
                                  "positive definite covariance in at least one)");
    }
  }
}

// The calling thread's OpenMP thread limit for one call: every parallel region of
// the core (stages, and GridMaxflowSolver's automatic strip count) reads it.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int requested) : saved_(omp_get_max_threads()) {
    const int threads = omp_in_parallel() != 0 ? 1 : (requested > 0 ? requested : saved_);
    if (threads != saved_) {
      omp_set_num_threads(threads);
      changed_ = true;
    }
  }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;
  ~ScopedOmpThreads() {
    if (changed_) omp_set_num_threads(saved_);
  }

 private:
  int saved_;
  bool changed_ = false;
};

}  // namespace

void validate_options(const GrabCutOptions& options) {
  if (options.max_iter < 0 || options.max_iter > kMaxIterations)
    throw std::invalid_argument("max_iter: expected 0.." + std::to_string(kMaxIterations) + ", got " +
                                std::to_string(options.max_iter));
  if (options.components < 1 || options.components > kMaxComponents)
    throw std::invalid_argument("components: expected 1.." + std::to_string(kMaxComponents) + ", got " +
                                std::to_string(options.components));
  if (!(options.gamma > 0.0) || !(options.gamma <= kMaxGamma) || !std::isfinite(options.gamma))
    throw std::invalid_argument("gamma: expected a finite value in (0, " +
                                std::to_string(static_cast<long long>(kMaxGamma)) + "], got " +
                                std::to_string(options.gamma));
  if (options.num_threads < 0)
    throw std::invalid_argument("num_threads: expected >= 0, got " + std::to_string(options.num_threads));
}

GrabCutStats grabcut_cpu(const std::uint8_t* image, int height, int width, std::uint8_t* mask, double* model,
                         const GrabCutOptions& options) {
  validate_options(options);
  if (height < 0 || width < 0) throw std::invalid_argument("image: negative size");
  check_labels(mask, height, width);
  GrabCutStats stats;
  const std::int64_t n = static_cast<std::int64_t>(height) * width;
  if (n == 0) return stats;
  const int k = options.components;
  const ScopedOmpThreads threads(options.num_threads);

  std::vector<std::uint8_t> component(static_cast<std::size_t>(n), 0);
  std::vector<std::uint8_t> previous_component;
  IterationHistory history;  // previous_mask_changed false: the model in hand was learnt on the current mask
  if (options.init_model) {
    kmeans_init_cpu(image, mask, n, k, options.seed, component.data());
    learn_gmms_cpu(image, mask, n, k, component.data(), model);
    previous_component = component;  // the model is exactly learn(component, mask)
    history.has_previous = true;
  } else if (options.freeze_model) {
    check_model_usable(model, k);
  }
  // A model that is not frozen may lack a class (a result without foreground
  // learns an all-zero foreground mixture): every pixel of that class is then
  // assigned component 0 (best_component) and the first iteration learns the
  // class from the mask, as cv2.grabCut's GC_EVAL does.
  if (options.max_iter == 0) return stats;

  // n-links depend on the image alone: built once for all iterations.
  const double beta = beta_from_sum(sum_squared_differences_cpu(image, height, width), height, width);
  std::vector<std::int32_t> nlink_storage(static_cast<std::size_t>(kNumForwardDirections * n));
  std::int32_t* nlink[kNumForwardDirections];
  for (int d = 0; d < kNumForwardDirections; ++d) nlink[d] = nlink_storage.data() + d * n;
  nlinks_cpu(image, height, width, options.gamma, beta, nlink);

  std::vector<std::int32_t> terminal(static_cast<std::size_t>(n));
  std::vector<std::uint8_t> source_side(static_cast<std::size_t>(n));
  // Hard background that no cut can move is left out of the max-flow (with a box,
  // everything outside it); hard labels and n-links stay, so the region does too.
  GraphRegion region(mask, height, width, nlink, to_capacity(lambda_of(options.gamma)));
  GridMaxflowSolver solver;

  for (int iter = 0; iter < options.max_iter; ++iter) {
    if (!options.freeze_model) {
      assign_components_cpu(image, mask, n, k, model, component.data());
      learn_gmms_cpu(image, mask, n, k, component.data(), model);
    }
    tlinks_cpu(image, mask, n, k, model, options.gamma, terminal.data());
    // Only the terminals change between iterations: later solves start from the
    // last maximum flow (same canonical cut and flow value as a cold solve).
    stats.last_flow = region.solve(solver, terminal.data(), /*warm=*/iter > 0, source_side.data());
    bool mask_changed = false;
    for (std::int64_t p = 0; p < n; ++p) {
      if (relabel_from_cut(mask + p, source_side.data() + p)) mask_changed = true;
    }
    stats.iterations = iter + 1;
    // Components are compared only where the rule reads them (a previous
    // assignment exists): the comparison is n bytes.
    const bool components_changed = history.has_previous && component != previous_component;
    if (stop_after_iteration(history, options.freeze_model, mask_changed, components_changed)) break;
    previous_component = component;
  }
  return stats;
}

}  // namespace grabcut
