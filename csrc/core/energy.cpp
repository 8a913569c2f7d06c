#include "core/energy.h"

#include <vector>

namespace grabcut {
namespace {

int pixel_distance(const std::uint8_t* image, std::int64_t n, std::int64_t p, std::int64_t q) {
  const int d0 = image[p] - image[q];
  const int d1 = image[n + p] - image[n + q];
  const int d2 = image[2 * n + p] - image[2 * n + q];
  return d0 * d0 + d1 * d1 + d2 * d2;
}

}  // namespace

std::int64_t sum_squared_differences_cpu(const std::uint8_t* image, int h, int w) {
  const std::int64_t n = static_cast<std::int64_t>(h) * w;
  std::int64_t total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::int64_t p = static_cast<std::int64_t>(y) * w + x;
      if (x > 0) total += pixel_distance(image, n, p, p - 1);
      if (x > 0 && y > 0) total += pixel_distance(image, n, p, p - w - 1);
      if (y > 0) total += pixel_distance(image, n, p, p - w);
      if (x + 1 < w && y > 0) total += pixel_distance(image, n, p, p - w + 1);
    }
  }
  return total;
}

void nlinks_cpu(const std::uint8_t* image, int h, int w, double gamma, double beta,
                std::int32_t* const nlink[kNumForwardDirections]) {
  const std::int64_t n = static_cast<std::int64_t>(h) * w;
  // Squared colour distances are integers in 0..kMaxSquaredDistance. When the image
  // has more links (4 per pixel) than the two tables have entries, tabulating the
  // capacity once replaces an exp per link by a lookup; on smaller images (a dataset's
  // crops) the tables would cost more than they save. Same values either way.
  const bool tabulate = 4 * n > 2 * (static_cast<std::int64_t>(kMaxSquaredDistance) + 1);
  std::vector<std::int32_t> straight;
  std::vector<std::int32_t> diagonal;
  if (tabulate) {
    straight.resize(kMaxSquaredDistance + 1);
    diagonal.resize(kMaxSquaredDistance + 1);
#pragma omp parallel for schedule(static)
    for (int d2 = 0; d2 <= kMaxSquaredDistance; ++d2) {
      straight[d2] = nlink_capacity(gamma, beta, d2, false);
      diagonal[d2] = nlink_capacity(gamma, beta, d2, true);
    }
  }
  const auto capacity = [&](int d2, bool diag) {
    if (tabulate) return diag ? diagonal[d2] : straight[d2];
    return nlink_capacity(gamma, beta, d2, diag);
  };
#pragma omp parallel for schedule(static) if (tabulate)
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::int64_t p = static_cast<std::int64_t>(y) * w + x;
      const bool right = x + 1 < w;
      const bool down = y + 1 < h;
      const bool left = x > 0;
      nlink[kRight][p] = right ? capacity(pixel_distance(image, n, p, p + 1), false) : 0;
      nlink[kDownRight][p] = (down && right) ? capacity(pixel_distance(image, n, p, p + w + 1), true) : 0;
      nlink[kDown][p] = down ? capacity(pixel_distance(image, n, p, p + w), false) : 0;
      nlink[kDownLeft][p] = (down && left) ? capacity(pixel_distance(image, n, p, p + w - 1), true) : 0;
    }
  }
}

void tlinks_cpu(const std::uint8_t* image, const std::uint8_t* mask, std::int64_t n, int k,
                const double* model, double gamma, std::int32_t* terminal) {
  const std::vector<ComponentEval> evals = prepare_model_cpu(model, k);
  const ComponentEval* bg = evals.data();
  const ComponentEval* fg = evals.data() + k;
  const double lambda = lambda_of(gamma);
#pragma omp parallel for schedule(static)
  for (std::int64_t p = 0; p < n; ++p) {
    terminal[p] = terminal_capacity(mask[p], lambda, bg, fg, k, image[p], image[n + p], image[2 * n + p]);
  }
}

}  // namespace grabcut
