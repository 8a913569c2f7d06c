#include "core/gmm.h"

#include <omp.h>

#include <array>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

namespace grabcut {
namespace {

#ifdef GRABCUT_COUNT_STAGE_THREADS
std::atomic<int> max_stage_threads{0};
#endif

void note_stage_threads([[maybe_unused]] int threads) {
#ifdef GRABCUT_COUNT_STAGE_THREADS
  int seen = max_stage_threads.load(std::memory_order_relaxed);
  while (threads > seen && !max_stage_threads.compare_exchange_weak(seen, threads, std::memory_order_relaxed)) {
  }
#endif
}

const char* class_name(int cls) { return cls == 1 ? "foreground" : "background"; }

std::array<int, 3> color_at(const std::uint8_t* image, std::int64_t n, std::int64_t p) {
  return {image[p], image[n + p], image[2 * n + p]};
}

// Seeded k-means of one class's colours (in raster order); returns a cluster per colour.
std::vector<std::uint8_t> kmeans_one_class(const std::vector<std::array<int, 3>>& colors, int k,
                                           std::uint64_t seed, int cls) {
  const auto m = static_cast<std::int64_t>(colors.size());
  std::vector<std::array<int, 3>> seeds(static_cast<std::size_t>(k));
  seeds[0] = colors[static_cast<std::size_t>(kmeans_random(seed, cls, 0) % static_cast<std::uint64_t>(m))];
  // k-means++: each further centre is drawn with probability proportional to its
  // squared distance to the nearest centre so far (integers, so exact).
  std::vector<std::int64_t> dist(static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < m; ++i) dist[i] = squared_distance(colors[i].data(), seeds[0].data());
  for (int j = 1; j < k; ++j) {
    std::int64_t total = 0;
    for (std::int64_t i = 0; i < m; ++i) total += dist[i];
    if (total == 0) {  // every colour is a centre already: repeat one, it stays empty
      seeds[j] = seeds[0];
      continue;
    }
    const auto target = static_cast<std::int64_t>(kmeans_random(seed, cls, j) % static_cast<std::uint64_t>(total));
    std::int64_t running = 0;
    std::int64_t chosen = m - 1;
    for (std::int64_t i = 0; i < m; ++i) {
      running += dist[i];
      if (running > target) {
        chosen = i;
        break;
      }
    }
    seeds[j] = colors[chosen];
    for (std::int64_t i = 0; i < m; ++i) {
      const std::int64_t d = squared_distance(colors[i].data(), seeds[j].data());
      if (d < dist[i]) dist[i] = d;
    }
  }

  std::vector<double> centers(static_cast<std::size_t>(3 * k));
  for (int j = 0; j < k; ++j)
    for (int c = 0; c < 3; ++c) centers[3 * j + c] = seeds[j][c];
  std::vector<std::uint8_t> labels(static_cast<std::size_t>(m), 0);
  for (int iter = 0; iter < kKmeansIterations; ++iter) {
    std::vector<std::int64_t> count(static_cast<std::size_t>(k), 0);
    std::vector<std::int64_t> sum(static_cast<std::size_t>(3 * k), 0);
#pragma omp parallel
    {
      // Integer sums per thread, merged after: exact whatever the thread count.
      std::vector<std::int64_t> local_count(static_cast<std::size_t>(k), 0);
      std::vector<std::int64_t> local_sum(static_cast<std::size_t>(3 * k), 0);
#pragma omp for schedule(static)
      for (std::int64_t i = 0; i < m; ++i) {
        const int l = nearest_center(centers.data(), k, colors[i][0], colors[i][1], colors[i][2]);
        labels[i] = static_cast<std::uint8_t>(l);
        local_count[l] += 1;
        for (int c = 0; c < 3; ++c) local_sum[3 * l + c] += colors[i][c];
      }
#pragma omp critical
      for (int j = 0; j < 3 * k; ++j) {
        sum[j] += local_sum[j];
        if (j < k) count[j] += local_count[j];
      }
    }
    for (int j = 0; j < k; ++j) {
      if (count[j] == 0) continue;  // an empty cluster keeps its centre
      for (int c = 0; c < 3; ++c)
        centers[3 * j + c] = static_cast<double>(sum[3 * j + c]) / static_cast<double>(count[j]);
    }
  }
  return labels;
}

}  // namespace

UsableComponents::UsableComponents(const ComponentEval* all, int k) {
  for (int i = 0; i < k; ++i) {
    if (!all[i].usable) continue;
    comps[count] = all[i];
    ++count;
  }
}

void mixture_log_density_block(const UsableComponents& usable, const PixelBlock& block, double* out) {
  const int m = block.size;
  if (usable.count == 0) {
    for (int i = 0; i < m; ++i) out[i] = -1e300;
    return;
  }
  double v[kMaxComponents][kPixelBlock];
  double top[kPixelBlock];
  for (int i = 0; i < m; ++i) top[i] = -1e300;
  for (int j = 0; j < usable.count; ++j) {
    const ComponentEval e = usable.comps[j];
    double* vj = v[j];
    for (int i = 0; i < m; ++i) {
      vj[i] = component_log_density(e, block.c0[i], block.c1[i], block.c2[i]);
      top[i] = vj[i] > top[i] ? vj[i] : top[i];
    }
  }
  // A component that some pixel of the block uses has its exp computed for every
  // pixel (in a loop of its own: GCC keeps an exp under a select from vectorising),
  // and the pixels that skip it (terms below e^-40, see mixture_log_density) add +0,
  // which leaves a sum of positive terms unchanged.
  double total[kPixelBlock];
  double e[kPixelBlock];
  for (int i = 0; i < m; ++i) total[i] = 0.0;
  for (int j = 0; j < usable.count; ++j) {
    const double* vj = v[j];
    int used = 0;
    for (int i = 0; i < m; ++i) used += vj[i] - top[i] > -40.0;
    if (used == 0) continue;  // no pixel of the block uses this component
    for (int i = 0; i < m; ++i) e[i] = portable_exp_in_range(vj[i] - top[i]);
    for (int i = 0; i < m; ++i) total[i] += vj[i] - top[i] > -40.0 ? e[i] : 0.0;
  }
  for (int i = 0; i < m; ++i) out[i] = top[i] <= -1e299 ? -1e300 : top[i] + portable_log(total[i]);
}

std::vector<ComponentEval> prepare_model_cpu(const double* model, int k) {
  std::vector<ComponentEval> evals(static_cast<std::size_t>(2 * k));
  for (int i = 0; i < 2 * k; ++i) evals[i] = prepare_component(model + i * kParamsPerComponent);
  return evals;
}

void kmeans_init_cpu(const std::uint8_t* image, const std::uint8_t* mask, std::int64_t n, int k,
                     std::uint64_t seed, std::uint8_t* component) {
  for (int cls = 0; cls < 2; ++cls) {
    std::vector<std::int64_t> pixels;
    std::vector<std::array<int, 3>> colors;
    for (std::int64_t p = 0; p < n; ++p) {
      if (label_class(mask[p]) != cls) continue;
      pixels.push_back(p);
      colors.push_back(color_at(image, n, p));
    }
    if (pixels.empty()) {
      throw std::invalid_argument(std::string("mask: no ") + class_name(cls) + " pixel (label " +
                                  (cls == 1 ? "1 or 3" : "0 or 2") + ") to learn the " + class_name(cls) +
                                  " model from");
    }
    const std::vector<std::uint8_t> labels = kmeans_one_class(colors, k, seed, cls);
    for (std::size_t i = 0; i < pixels.size(); ++i) component[pixels[i]] = labels[i];
  }
}

void assign_components_cpu(const std::uint8_t* image, const std::uint8_t* mask, std::int64_t n, int k,
                           const double* model, std::uint8_t* component) {
  const std::vector<ComponentEval> evals = prepare_model_cpu(model, k);
#pragma omp parallel for schedule(static)
  for (std::int64_t p = 0; p < n; ++p) {
    const ComponentEval* cls_evals = evals.data() + label_class(mask[p]) * k;
    component[p] = static_cast<std::uint8_t>(
        best_component(cls_evals, k, image[p], image[n + p], image[2 * n + p]));
  }
}

void learn_gmms_cpu(const std::uint8_t* image, const std::uint8_t* mask, std::int64_t n, int k,
                    const std::uint8_t* component, double* model) {
  const int slots = 2 * k;
  std::vector<ColorSums> sums(static_cast<std::size_t>(slots));
#pragma omp parallel
  {
    // Per-thread integer sums, merged after: exact, so the thread count never matters.
    std::vector<ColorSums> local(static_cast<std::size_t>(slots));
#pragma omp for schedule(static)
    for (std::int64_t p = 0; p < n; ++p) {
      local[label_class(mask[p]) * k + component[p]].add(image[p], image[n + p], image[2 * n + p]);
    }
#pragma omp critical
    {
      for (int s = 0; s < slots; ++s) sums[s].merge(local[s]);
      note_stage_threads(omp_get_num_threads());
    }
  }
  for (int cls = 0; cls < 2; ++cls) {
    std::int64_t class_count = 0;
    for (int j = 0; j < k; ++j) class_count += sums[cls * k + j].count;
    for (int j = 0; j < k; ++j)
      component_from_sums(sums[cls * k + j], class_count, model + (cls * k + j) * kParamsPerComponent);
  }
}

#ifdef GRABCUT_COUNT_STAGE_THREADS
int take_max_stage_threads() { return max_stage_threads.exchange(0, std::memory_order_relaxed); }
#endif

}  // namespace grabcut
